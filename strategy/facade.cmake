# Values, ReplicaContext, TPUStrategy, reduce, variables.
tpusim_cc_library(NAME values HDRS values.h DEPS tpusim::common::check)
