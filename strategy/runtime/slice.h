// strategy/runtime/slice.h
//
// Slice layouts: which devices a TPU slice has, which host (task) owns each
// one, and where each sits in the chip mesh. Backends build their devices from
// a layout; the TF-facing layer (Topology, TPUClusterResolver) reads the same
// layout, so both agree on every coordinate.
//
//   absl::StatusOr<SliceLayout> v3 = ParseSlice("v3-32");  // 4x4 chips
//   for (const DeviceDescription& d : v3->devices) {
//     ... d.task, d.ordinal, d.coords ...
//   }
//   absl::StatusOr<SliceLayout> laptop =
//       PlainSliceLayout(/*num_workers=*/2, /*devices_per_worker=*/4);
//
// Slice names (spec "tpusim conventions"): "<prefix>-<N>", the prefix being a
// generation's slice prefix ("v2", "v3", "v4", "v5litepod", "v5p", "v6e").
// N counts TensorCores for v2, v3, v4 and v5p (v3-32 = 16 chips, v4-32 = 16
// chips) and chips for v5e and v6e (v6e-16 = 16 chips).
//
// tpusim choice, chip mesh shapes (real slice shapes come from the TPU
// runtime; spec (j) "Typical mesh shapes" lists the 2-D ones):
//   * 2-D generations (v2, v3, v5e, v6e): the chip count is a power of two.
//     An even power is a square (v3-8 -> 2x2, v3-32 -> 4x4, v3-128 -> 8x8,
//     v3-2048 -> 32x32); an odd power is x = 2y (v3-16 -> 4x2, v3-64 -> 8x4,
//     v5litepod-8 -> 4x2, so one 4x2 host block holds it). Smallest slice:
//     one full host for v2/v3 (v2-8, v3-8), one chip for v5e/v6e
//     (v5litepod-1 -> 1x1; v5litepod-4 -> 2x2 on one host).
//   * 3-D generations (v4, v5p): the v4 sequence 2x2x1 (v4-8), 2x2x2 (v4-16),
//     2x2x4 (v4-32), 2x4x4 (v4-64), 4x4x4 (v4-128), then doubling z, y, x in
//     turn (4x4x8, 4x8x8, 8x8x8, 8x8x16, 8x16x16, 16x16x16); v5p follows the
//     same sequence within its 16x16x24 maximum. Smallest slice: one host.
//   * Every shape must fit the generation's max_slice (tpu_generation.h).
//   Any other name is InvalidArgument naming the value and listing the
//   allowed names (AllowedSliceNames).
//
// Device layout (spec (j), tpusim host-block convention): each host owns a
// block of host_block_x by host_block_y chips (2x2 on v2/v3/v4/v5p, 4x2 on
// v5e/v6e) in one z plane; the block is 1 wide in a dimension whose mesh
// size is 1 or odd, and clipped to the mesh where the slice is smaller.
// Blocks are numbered x-block fastest, then y, then z; host t owns block t.
// On a host, device D -> chip c = D div devices_per_chip, core
// D mod devices_per_chip; chip c -> (x0 + c mod bx, y0 + c div bx, z0).
// Device coordinates are (x, y, core) at rank 3 and (x, y, z, core) at
// rank 4. 3-D generations always use rank 4 (core dimension 1: a megacore
// chip is one device); 2-D generations default to rank 3 and may ask for
// rank 4 (z = 0).

#ifndef TPUSIM_STRATEGY_RUNTIME_SLICE_H_
#define TPUSIM_STRATEGY_RUNTIME_SLICE_H_

#include <array>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/runtime/device_description.h"
#include "strategy/runtime/tpu_generation.h"

namespace tpusim::runtime {

struct SliceLayout {
  // "v3-32" for a named slice; "2x4" (workers x devices per worker) for a plain
  // layout.
  std::string name;
  // The generation; nullptr for a plain layout.
  const TpuGeneration* generation = nullptr;
  // Chips per dimension (x, y, z); z = 1 for 2-D generations.
  std::array<int, 3> chip_mesh = {1, 1, 1};
  // Chips per dimension of one host's block (x, y, z); z is always 1.
  std::array<int, 3> host_block = {1, 1, 1};
  int num_chips = 0;
  int num_hosts = 0;
  int devices_per_chip = 1;
  int devices_per_host = 0;
  // 3 = (x, y, core), 4 = (x, y, z, core).
  int rank = 3;
  // The Topology mesh shape: (x, y, devices_per_chip) or (x, y, z,
  // devices_per_chip).
  std::vector<int> mesh_shape;
  // All devices, id = task * devices_per_host + ordinal, in id order.
  std::vector<DeviceDescription> devices;

  int num_devices() const { return static_cast<int>(devices.size()); }
  // The chip id of chip coordinates (x, y, z): x + X * (y + Y * z) with
  // (X, Y, Z) = chip_mesh, i.e. x fastest. This is tpusim's one chip numbering
  // (DeviceDescription::chip holds it for every device); the network model
  // (sim/net) numbers its chips the same way.
  int ChipId(const std::array<int, 3>& xyz) const {
    return xyz[0] + chip_mesh[0] * (xyz[1] + chip_mesh[1] * xyz[2]);
  }
  // The inverse of ChipId.
  std::array<int, 3> ChipCoords(int chip) const {
    return {chip % chip_mesh[0], (chip / chip_mesh[0]) % chip_mesh[1],
            chip / (chip_mesh[0] * chip_mesh[1])};
  }
};

// Rank to use: kDefaultRank picks 3 for 2-D generations and 4 for 3-D ones.
inline constexpr int kDefaultRank = 0;

// Parses a slice name ("v3-32", "v4-32", "v5litepod-16", "v6e-16") and lays out
// its devices. `rank` is kDefaultRank, 3 or 4. Errors (InvalidArgument, the
// message names the value and lists what is allowed): no "-<number>" suffix,
// unknown prefix, a number that is not a multiple of cores per chip
// (core-counting generations), a chip count without a shape (see the file
// comment), rank not 0/3/4, rank 3 for a 3-D generation.
absl::StatusOr<SliceLayout> ParseSlice(absl::string_view name,
                                       int rank = kDefaultRank);

// The chip mesh (x, y, z) a slice name maps to, without laying out devices.
// Same errors as ParseSlice.
absl::StatusOr<std::array<int, 3>> SliceChipMesh(absl::string_view name);

// Every slice name tpusim accepts for `generation`, smallest first ("v3-8,
// v3-16, ...").
std::string AllowedSliceNames(const TpuGeneration& generation);

// Lays out an explicit chip mesh (x, y, z) of `generation` with the host-block
// convention. InvalidArgument when a dimension is < 1 or above the generation's
// max_slice, when z > 1 on a 2-D generation, when a mesh dimension is not a
// multiple of the host block width, or for a bad rank (as ParseSlice). `name`
// is copied into the layout.
absl::StatusOr<SliceLayout> LayoutChipMesh(const TpuGeneration& generation,
                                           const std::array<int, 3>& chip_mesh,
                                           int rank = kDefaultRank,
                                           absl::string_view name = "");

// Largest custom chip mesh LayoutCustomChipMesh accepts, in chips.
inline constexpr int kMaxCustomChips = 1 << 16;

// The explicit override for scale studies: lays out any chip mesh of
// `generation`'s chips, also beyond its largest slice (a 64x64 v5e torus, a
// 1024x1 ring). The other rules of LayoutChipMesh still hold (dimensions >= 1,
// z = 1 on a 2-D generation, host-block multiples, rank); in addition the
// chip count must be <= kMaxCustomChips. Named slices never use this path.
absl::StatusOr<SliceLayout> LayoutCustomChipMesh(
    const TpuGeneration& generation, const std::array<int, 3>& chip_mesh,
    int rank = kDefaultRank, absl::string_view name = "");

// A plain layout for laptop scenarios: `num_workers` hosts with
// `devices_per_worker` devices each, no generation. tpusim choice: the mesh is
// rank 3 (devices_per_worker, num_workers, 1); device D of worker t sits at (D,
// t, 0), kind "virtual TPU device". InvalidArgument when either count is < 1.
absl::StatusOr<SliceLayout> PlainSliceLayout(int num_workers,
                                             int devices_per_worker);

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_SLICE_H_
