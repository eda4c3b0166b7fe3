# Topology, DeviceAssignment, TPUClusterResolver, ConfigProto.
tpusim_cc_library(NAME topology SRCS topology.cc HDRS topology.h
                  DEPS tpusim::strategy::runtime::device_description tpusim::proto
                       tpusim::common::status_macros absl::status absl::statusor absl::strings
                       absl::span)
tpusim_cc_library(NAME device_assignment SRCS device_assignment.cc HDRS device_assignment.h
                  DEPS tpusim::strategy::topology tpusim::common::check
                       tpusim::common::status_macros absl::status absl::statusor absl::strings
                       absl::span)
tpusim_cc_library(NAME cluster_resolver SRCS cluster_resolver.cc HDRS cluster_resolver.h
                  DEPS tpusim::strategy::device_assignment tpusim::strategy::topology
                       tpusim::strategy::runtime::slice tpusim::strategy::runtime::backend
                       tpusim::common::status_macros
                       absl::status absl::statusor absl::strings)
tpusim_cc_library(NAME config_proto SRCS config_proto.cc HDRS config_proto.h
                  DEPS tpusim::strategy::cluster_resolver tpusim::proto)
