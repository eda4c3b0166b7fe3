// strategy/runtime/device_description.h
//
// What a backend device is, independent of any backend: its id, the host (task)
// it hangs off, its ordinal on that host, and its physical coordinates. Slice
// layouts produce these; backends create their devices from them; the TF-facing
// layer (Topology, DeviceAssignment) reads them.

#ifndef TPUSIM_STRATEGY_RUNTIME_DEVICE_DESCRIPTION_H_
#define TPUSIM_STRATEGY_RUNTIME_DEVICE_DESCRIPTION_H_

#include <string>
#include <vector>

namespace tpusim::runtime {

struct DeviceDescription {
  // Global device id, 0..num_devices-1, in (task, ordinal) order.
  int id = 0;
  // Host / TF task index.
  int task = 0;
  // Device ordinal on its host (TF's TPU:D).
  int ordinal = 0;
  // Physical coordinates in the topology's order: (x, y, core) at rank 3, (x,
  // y, z, core) at rank 4.
  std::vector<int> coords;
  // "TPU v3 core", "TPU v4 (megacore)", "host CPU" ...
  std::string kind;
  // The chip the device sits on: SliceLayout::ChipId of its (x, y, z); for a
  // plain layout, the index of its (ordinal, task) cell in that mesh. Last, so
  // that aggregate initialisers of the fields above keep working.
  int chip = 0;
};

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_DEVICE_DESCRIPTION_H_
