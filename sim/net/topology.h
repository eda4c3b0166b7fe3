// sim/net/topology.h
//
// The ICI torus or mesh of a slice: which chip has a link to which, in which
// direction, where the wraparound links are, and the dimension-order route
// between two chips. Chip and device numbering come from the slice layout
// (strategy/runtime/slice.h: SliceLayout::ChipId, DeviceDescription::chip and
// id); this file adds no numbering of its own.
//
//   TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
//                           runtime::ParseSlice("v4-128"));   // 4x4x4
//   TPUSIM_ASSIGN_OR_RETURN(Topology t,
//                           Topology::Create(layout, WrapMode::kGeneration));
//   t.wraps(0);                          // true: a whole 4x4x4 cube
//   int dir = t.NextDirection(a, b);     // first hop of the route a -> b
//
// Wraparound (WrapMode::kGeneration), per sheet C.3:
// * v5e, v6e: an axis wraps when its length is 16, the pod's full axis
//   (C.3 [V]: "v5e/v6e axes wrap only at length 16").
// * v4, v5p: every axis wraps when the slice is whole 4x4x4 cubes (all three
//   lengths multiples of 4); sub-cube slices are meshes (C.3 [V]).
// * v2, v3: the sheet has no rule. tpusim choice: the same rule as the other
//   2-D generations, an axis wraps when its length is the pod's full axis
//   (16 on v2, 32 on v3; max_slice in tpu_generation.h), so a v3-2048 (32x32)
//   is a torus and smaller slices are meshes.
// WrapMode::kOn / kOff force every axis on or off (custom scale studies).
// On every generation (tpusim choice) an axis of length 2 has exactly one link
// per direction between its two chips and never counts as wrapped, and an
// axis of length 1 has no links.
//
// Routing: dimension order x, then y, then z. On a wrapped axis the shorter
// way round; a tie (the two ways are equally long) takes the + direction.

#ifndef TPUSIM_SIM_NET_TOPOLOGY_H_
#define TPUSIM_SIM_NET_TOPOLOGY_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/runtime/slice.h"

namespace tpusim::sim::net {

enum class WrapMode { kGeneration, kOn, kOff };

// "generation", "on", "off". InvalidArgument names the value otherwise.
absl::StatusOr<WrapMode> ParseWrapMode(absl::string_view text);

// Link directions: +x, -x, +y, -y, +z, -z.
inline constexpr int kNumDirections = 6;
inline int DirectionDim(int dir) { return dir / 2; }
inline bool DirectionIsPositive(int dir) { return dir % 2 == 0; }
// "+x", "-y", ...
const char* DirectionName(int dir);

class Topology {
 public:
  // InvalidArgument when the layout has no generation (a plain layout).
  static absl::StatusOr<Topology> Create(const runtime::SliceLayout& layout,
                                         WrapMode wrap);

  const std::string& name() const { return name_; }
  const runtime::TpuGeneration& generation() const { return *generation_; }
  // Chips per dimension (x, y, z).
  const std::array<int, 3>& dims() const { return dims_; }
  bool wraps(int dim) const { return wraps_[dim]; }
  int num_chips() const { return num_chips_; }
  int num_devices() const { return static_cast<int>(device_chip_.size()); }
  int devices_per_chip() const { return devices_per_chip_; }
  // Link directions that exist (a neighbour in that direction), plus the
  // two on-chip paths of each 2-core chip.
  int64_t num_links() const;

  int chip_of_device(int device) const { return device_chip_[device]; }
  int core_of_device(int device) const { return device_core_[device]; }
  int device_at(int chip, int core) const {
    return chip_devices_[chip * devices_per_chip_ + core];
  }
  // SliceLayout::ChipCoords / ChipId.
  std::array<int, 3> coords(int chip) const {
    return {chip % dims_[0], (chip / dims_[0]) % dims_[1],
            chip / (dims_[0] * dims_[1])};
  }
  int chip_at(const std::array<int, 3>& xyz) const {
    return xyz[0] + dims_[0] * (xyz[1] + dims_[1] * xyz[2]);
  }

  // The chip that the link leaving `chip` in direction `dir` reaches, or -1
  // when there is no such link.
  int Neighbor(int chip, int dir) const;
  // Links leaving `chip` (0..6).
  int NumLinks(int chip) const;
  // The direction of the first hop of the route from chip `from` to chip
  // `to`; -1 when they are the same chip.
  int NextDirection(int from, int to) const;
  // Link hops of that route.
  int Hops(int from, int to) const;
  // Hops along one axis from coordinate a to b (shorter way when wrapped).
  int AxisDistance(int dim, int a, int b) const;

  // Device axes: 0, 1, 2 = the chip's x, y, z; kCoreAxis = the TensorCore
  // within a v2/v3 chip. A device's coordinate on an axis, and the axis'
  // length.
  static constexpr int kCoreAxis = 3;
  int DeviceCoord(int device, int axis) const {
    return axis == kCoreAxis ? device_core_[device]
                             : coords(device_chip_[device])[axis];
  }
  int AxisLength(int axis) const {
    return axis == kCoreAxis ? devices_per_chip_ : dims_[axis];
  }

 private:
  Topology() = default;

  std::string name_;
  const runtime::TpuGeneration* generation_ = nullptr;
  std::array<int, 3> dims_ = {1, 1, 1};
  std::array<bool, 3> wraps_ = {false, false, false};
  int num_chips_ = 0;
  int devices_per_chip_ = 1;
  std::vector<int> device_chip_;
  std::vector<int> device_core_;
  std::vector<int> chip_devices_;
};

}  // namespace tpusim::sim::net

#endif  // TPUSIM_SIM_NET_TOPOLOGY_H_
