# Values, ReplicaContext, TPUStrategy, reduce, variables.
tpusim_cc_library(NAME values HDRS values.h
                  DEPS tpusim::common::check tpusim::strategy::runtime::tensor
                       tpusim::strategy::runtime::nest absl::strings)
tpusim_cc_library(NAME reduce SRCS reduce.cc HDRS reduce.h
                  DEPS tpusim::strategy::values tpusim::strategy::runtime::tensor
                       tpusim::common::status_macros absl::status absl::statusor absl::strings
                       absl::span)
