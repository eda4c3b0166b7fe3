# Tests of Topology, DeviceAssignment, TPUClusterResolver, ConfigProto.
tpusim_cc_test(NAME topology_test SRCS topology_test.cc DEPS tpusim::strategy::topology
                                                              tpusim::proto)
tpusim_cc_test(NAME device_assignment_test SRCS device_assignment_test.cc
               DEPS tpusim::strategy::device_assignment tpusim::strategy::runtime::slice)
tpusim_cc_test(NAME cluster_resolver_test SRCS cluster_resolver_test.cc
               DEPS tpusim::strategy::cluster_resolver tpusim::strategy::runtime::host_backend)
tpusim_cc_test(NAME config_proto_test SRCS config_proto_test.cc
               DEPS tpusim::strategy::config_proto)
