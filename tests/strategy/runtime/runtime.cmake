# Tests of Program, ops, kernels, Backend, HostBackend.
tpusim_cc_test(NAME ops_test SRCS ops_test.cc DEPS tpusim::strategy::runtime::ops)
tpusim_cc_test(NAME kernels_test SRCS kernels_test.cc DEPS tpusim::strategy::runtime::kernels)
tpusim_cc_test(NAME program_test SRCS program_test.cc DEPS tpusim::strategy::runtime::program)
tpusim_cc_test(NAME host_backend_test SRCS host_backend_test.cc
               DEPS tpusim::strategy::runtime::host_backend)
tpusim_cc_benchmark(NAME host_backend_benchmark SRCS host_backend_benchmark.cc
                    DEPS tpusim::strategy::runtime::host_backend)
tpusim_cc_test(NAME grad_ops_test SRCS grad_ops_test.cc
               DEPS tpusim::strategy::runtime::kernels tpusim::strategy::runtime::program)
