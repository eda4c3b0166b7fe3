# Topology, DeviceAssignment, TPUClusterResolver, ConfigProto.
