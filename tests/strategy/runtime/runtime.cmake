# Tests of Program, ops, kernels, Backend, HostBackend.
