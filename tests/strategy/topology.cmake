# Tests of Topology, DeviceAssignment, TPUClusterResolver, ConfigProto.
