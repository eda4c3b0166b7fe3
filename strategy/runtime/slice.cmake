# Slice layout: slice names -> chips, hosts, devices, coordinates.
tpusim_cc_library(NAME slice SRCS slice.cc HDRS slice.h
                  DEPS tpusim::strategy::runtime::tpu_generation
                       tpusim::strategy::runtime::device_description
                       tpusim::common::status_macros absl::status absl::statusor absl::strings)
