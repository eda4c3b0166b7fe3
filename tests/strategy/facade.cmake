# Tests of values, ReplicaContext, TPUStrategy, reduce, variables.
tpusim_cc_test(NAME reduce_test SRCS reduce_test.cc DEPS tpusim::strategy::reduce)
