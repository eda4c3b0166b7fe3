# Tests of values, ReplicaContext, TPUStrategy, reduce, variables.
tpusim_cc_test(NAME reduce_test SRCS reduce_test.cc DEPS tpusim::strategy::reduce)
tpusim_cc_test(NAME distribute_lib_test SRCS distribute_lib_test.cc
               DEPS tpusim::strategy::tpu_strategy tpusim::strategy::runtime::host_backend
                    tpusim::strategy::runtime::slice)
tpusim_cc_test(NAME tpu_strategy_test SRCS tpu_strategy_test.cc
               DEPS tpusim::strategy::tpu_strategy tpusim::strategy::runtime::host_backend
                    tpusim::strategy::runtime::slice)
tpusim_cc_test(NAME variables_test SRCS variables_test.cc
               DEPS tpusim::strategy::tpu_strategy tpusim::strategy::runtime::host_backend
                    tpusim::strategy::runtime::slice)
tpusim_cc_test(NAME step_runner_test SRCS step_runner_test.cc
               DEPS tpusim::strategy::tpu_strategy tpusim::strategy::runtime::host_backend
                    tpusim::strategy::runtime::slice)
tpusim_cc_test(NAME tpu_strategy_input_test SRCS tpu_strategy_input_test.cc
               DEPS tpusim::strategy::tpu_strategy tpusim::strategy::runtime::host_backend
                    tpusim::strategy::runtime::slice)
