# Program, ops, host kernels, Backend interface, HostBackend, Profile.
