# Slice layout: slice names -> chips, hosts, devices, coordinates.
