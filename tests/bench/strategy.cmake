# Strategy facade benchmarks (include from tests/bench/CMakeLists.txt).
tpusim_cc_benchmark(NAME strategy_benchmark SRCS strategy_benchmark.cc
                    DEPS tpusim::strategy::tpu_strategy tpusim::strategy::runtime::host_backend
                         tpusim::strategy::cluster_resolver)
