# Program, ops, host kernels, Backend interface, HostBackend, Profile.
tpusim_cc_library(NAME ops SRCS ops.cc HDRS ops.h
                  DEPS tpusim::strategy::runtime::tensor absl::status absl::statusor
                       absl::strings absl::span)
tpusim_cc_library(NAME program SRCS program.cc HDRS program.h
                  DEPS tpusim::strategy::runtime::ops tpusim::strategy::runtime::tensor
                       tpusim::proto absl::status absl::statusor absl::strings absl::span)
tpusim_cc_library(NAME kernels SRCS kernels.cc HDRS kernels.h
                  DEPS tpusim::strategy::runtime::ops tpusim::strategy::runtime::tensor
                       absl::status absl::statusor absl::strings absl::span)
tpusim_cc_library(NAME profile HDRS profile.h DEPS tpusim::proto)
tpusim_cc_library(NAME backend SRCS backend.cc HDRS backend.h
                  DEPS tpusim::strategy::runtime::program tpusim::strategy::runtime::profile
                       tpusim::strategy::runtime::device_description absl::status
                       absl::statusor absl::strings absl::span)
tpusim_cc_library(NAME host_backend SRCS host_backend.cc HDRS host_backend.h
                  DEPS tpusim::strategy::runtime::backend tpusim::strategy::runtime::kernels
                       tpusim::strategy::runtime::program absl::flat_hash_map Threads::Threads)
