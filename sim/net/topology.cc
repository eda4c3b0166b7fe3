#include "sim/net/topology.h"

#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tpusim::sim::net {
namespace {

bool GenerationWraps(const runtime::TpuGeneration& g,
                     const std::array<int, 3>& dims, int dim) {
  if (g.torus_rank == 3) {
    // C.3 [V]: v4/v5p wrap only when the slice is whole 4x4x4 cubes.
    return dims[0] % 4 == 0 && dims[1] % 4 == 0 && dims[2] % 4 == 0;
  }
  // C.3 [V] for v5e/v6e (length 16 = the pod's axis); tpusim choice for v2/v3
  // (the pod's full axis), see topology.h.
  return dims[dim] == g.max_slice[dim];
}

}  // namespace

absl::StatusOr<WrapMode> ParseWrapMode(absl::string_view text) {
  if (text == "generation") return WrapMode::kGeneration;
  if (text == "on") return WrapMode::kOn;
  if (text == "off") return WrapMode::kOff;
  return absl::InvalidArgumentError(
      absl::StrCat("wraparound \"", text,
                   "\" is not allowed; expected generation, on or off"));
}

const char* DirectionName(int dir) {
  static constexpr const char* kNames[] = {"+x", "-x", "+y", "-y", "+z", "-z"};
  return kNames[dir];
}

absl::StatusOr<Topology> Topology::Create(const runtime::SliceLayout& layout,
                                          WrapMode wrap) {
  if (layout.generation == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("slice layout \"", layout.name,
                     "\" has no TPU generation; the ICI network needs a "
                     "generation's slice"));
  }
  Topology t;
  t.name_ =
      layout.name.empty()
          ? absl::StrCat(layout.generation->name, " ", layout.chip_mesh[0], "x",
                         layout.chip_mesh[1], "x", layout.chip_mesh[2])
          : layout.name;
  t.generation_ = layout.generation;
  t.dims_ = layout.chip_mesh;
  t.num_chips_ = layout.num_chips;
  t.devices_per_chip_ = layout.devices_per_chip;
  for (int d = 0; d < 3; ++d) {
    bool w = false;
    switch (wrap) {
      case WrapMode::kGeneration:
        w = GenerationWraps(*layout.generation, t.dims_, d);
        break;
      case WrapMode::kOn:
        w = true;
        break;
      case WrapMode::kOff:
        w = false;
        break;
    }
    // Length 1: no links; length 2: one link per direction (topology.h).
    t.wraps_[d] = w && t.dims_[d] > 2;
  }
  const int n = layout.num_devices();
  t.device_chip_.assign(n, 0);
  t.device_core_.assign(n, 0);
  t.chip_devices_.assign(
      static_cast<size_t>(t.num_chips_) * t.devices_per_chip_, -1);
  for (const runtime::DeviceDescription& d : layout.devices) {
    const int core = d.coords.back();
    t.device_chip_[d.id] = d.chip;
    t.device_core_[d.id] = core;
    t.chip_devices_[d.chip * t.devices_per_chip_ + core] = d.id;
  }
  return t;
}

int64_t Topology::num_links() const {
  int64_t links = 0;
  for (int chip = 0; chip < num_chips_; ++chip) {
    for (int dir = 0; dir < kNumDirections; ++dir) {
      if (Neighbor(chip, dir) >= 0) ++links;
    }
    if (devices_per_chip_ == 2) links += 2;
  }
  return links;
}

int Topology::Neighbor(int chip, int dir) const {
  const int dim = DirectionDim(dir);
  const int n = dims_[dim];
  if (n == 1) return -1;
  std::array<int, 3> c = coords(chip);
  int next = c[dim] + (DirectionIsPositive(dir) ? 1 : -1);
  if (next < 0 || next >= n) {
    if (!wraps_[dim]) return -1;
    next = (next + n) % n;
  }
  c[dim] = next;
  return chip_at(c);
}

int Topology::NumLinks(int chip) const {
  int links = 0;
  for (int dir = 0; dir < kNumDirections; ++dir) {
    if (Neighbor(chip, dir) >= 0) ++links;
  }
  return links;
}

int Topology::AxisDistance(int dim, int a, int b) const {
  if (!wraps_[dim]) return std::abs(b - a);
  const int n = dims_[dim];
  const int fwd = ((b - a) % n + n) % n;
  return fwd <= n - fwd ? fwd : n - fwd;
}

int Topology::NextDirection(int from, int to) const {
  if (from == to) return -1;
  const std::array<int, 3> a = coords(from);
  const std::array<int, 3> b = coords(to);
  for (int dim = 0; dim < 3; ++dim) {
    if (a[dim] == b[dim]) continue;
    bool positive = b[dim] > a[dim];
    if (wraps_[dim]) {
      const int n = dims_[dim];
      const int fwd = ((b[dim] - a[dim]) % n + n) % n;
      positive = fwd <= n - fwd;  // tie: + direction
    }
    return 2 * dim + (positive ? 0 : 1);
  }
  return -1;
}

int Topology::Hops(int from, int to) const {
  const std::array<int, 3> a = coords(from);
  const std::array<int, 3> b = coords(to);
  int hops = 0;
  for (int dim = 0; dim < 3; ++dim) hops += AxisDistance(dim, a[dim], b[dim]);
  return hops;
}

}  // namespace tpusim::sim::net
