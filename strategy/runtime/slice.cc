#include "strategy/runtime/slice.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/did_you_mean.h"
#include "common/status_macros.h"

namespace tpusim::runtime {
namespace {

// Largest plain layout, so a typo cannot allocate millions of device
// descriptions.
constexpr long long kMaxPlainDevices = 1 << 20;

bool FitsMaxSlice(const TpuGeneration& g, const std::array<int, 3>& mesh) {
  return mesh[0] <= g.max_slice[0] && mesh[1] <= g.max_slice[1] &&
         mesh[2] <= g.max_slice[2];
}

int MinChips(const TpuGeneration& g) {
  // One full host for generations whose names count cores (v2-8, v3-8, v4-8,
  // v5p-8); a single chip for v5e / v6e (v5litepod-1, v6e-1).
  return g.slice_name_counts_cores ? g.chips_per_host : 1;
}

// Every chip mesh tpusim accepts for `g`, smallest first (see the file comment
// of slice.h).
std::vector<std::array<int, 3>> AllowedChipMeshes(const TpuGeneration& g) {
  std::vector<std::array<int, 3>> meshes;
  if (g.torus_rank == 2) {
    for (int k = 0; k < 30; ++k) {
      const int chips = 1 << k;
      if (chips < MinChips(g)) continue;
      const int y = 1 << (k / 2);
      const std::array<int, 3> mesh = {chips / y, y, 1};
      if (!FitsMaxSlice(g, mesh)) break;
      meshes.push_back(mesh);
    }
    return meshes;
  }
  // 3-D: 2x2x1, then double z, z, y, x, and from there z, y, x in turn.
  std::array<int, 3> mesh = {2, 2, 1};
  const int first_steps[] = {2, 2, 1, 0};
  int step = 0;
  while (FitsMaxSlice(g, mesh)) {
    meshes.push_back(mesh);
    const int dim = step < 4 ? first_steps[step] : 2 - (step - 4) % 3;
    mesh[dim] *= 2;
    ++step;
  }
  return meshes;
}

std::string SliceName(const TpuGeneration& g, const std::array<int, 3>& mesh) {
  const int chips = mesh[0] * mesh[1] * mesh[2];
  return absl::StrCat(
      g.slice_prefix, "-",
      g.slice_name_counts_cores ? chips * g.cores_per_chip : chips);
}

std::string SlicePrefixes() {
  std::vector<std::string> prefixes;
  for (const TpuGeneration& g : TpuGenerations())
    prefixes.push_back(g.slice_prefix);
  return absl::StrJoin(prefixes, ", ");
}

struct ParsedName {
  const TpuGeneration* generation;
  std::array<int, 3> chip_mesh;
};

absl::StatusOr<ParsedName> ParseName(absl::string_view name) {
  const size_t dash = name.rfind('-');
  int count = 0;
  if (dash == absl::string_view::npos || dash + 1 == name.size() ||
      !absl::SimpleAtoi(name.substr(dash + 1), &count) ||
      name.substr(dash + 1).find_first_not_of("0123456789") !=
          absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slice name \"", name,
        "\" must be <generation>-<count>, e.g. \"v3-32\"; generations: ",
        SlicePrefixes()));
  }
  const absl::string_view prefix = name.substr(0, dash);
  const TpuGeneration* generation = nullptr;
  // A slice is named by Cloud's prefix ("v5litepod-16") or by the
  // generation's preset name ("v5e-16"): both name the same chips.
  std::vector<std::string> known;
  for (const TpuGeneration& g : TpuGenerations()) {
    if (prefix == g.slice_prefix || prefix == g.name) generation = &g;
    known.push_back(g.slice_prefix);
    if (std::string(g.name) != g.slice_prefix) known.push_back(g.name);
  }
  if (generation == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slice name \"", name, "\" has an unknown generation \"", prefix, "\"",
        common::DidYouMean(prefix, known), "; valid: ", SlicePrefixes(),
        " (v5e is accepted for v5litepod)"));
  }
  const TpuGeneration& g = *generation;
  for (const std::array<int, 3>& mesh : AllowedChipMeshes(g)) {
    if (SliceName(g, mesh) == absl::StrCat(g.slice_prefix, "-", count)) {
      return ParsedName{generation, mesh};
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("slice name \"", name, "\": ", count,
                   g.slice_name_counts_cores ? " TensorCores" : " chips",
                   " has no tpusim chip mesh for ", g.name,
                   "; allowed: ", AllowedSliceNames(g)));
}

absl::StatusOr<int> ResolveRank(const TpuGeneration& g, int rank) {
  if (rank == kDefaultRank) return g.torus_rank == 3 ? 4 : 3;
  if (rank != 3 && rank != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("topology rank ", rank,
                     " is not supported; allowed: 3, 4 (or 0 = default)"));
  }
  if (rank == 3 && g.torus_rank == 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("topology rank 3 is not available for the 3-D generation ",
                     g.name, "; use rank 4 (x, y, z, core)"));
  }
  return rank;
}

constexpr const char* kDims[] = {"x", "y", "z"};

absl::StatusOr<SliceLayout> LayoutMesh(const TpuGeneration& g,
                                       const std::array<int, 3>& chip_mesh,
                                       int rank, absl::string_view name);

}  // namespace

std::string AllowedSliceNames(const TpuGeneration& generation) {
  std::vector<std::string> names;
  for (const std::array<int, 3>& mesh : AllowedChipMeshes(generation)) {
    names.push_back(SliceName(generation, mesh));
  }
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<std::array<int, 3>> SliceChipMesh(absl::string_view name) {
  TPUSIM_ASSIGN_OR_RETURN(ParsedName parsed, ParseName(name));
  return parsed.chip_mesh;
}

absl::StatusOr<SliceLayout> ParseSlice(absl::string_view name, int rank) {
  TPUSIM_ASSIGN_OR_RETURN(ParsedName parsed, ParseName(name));
  // The layout carries the canonical name ("v5e-8" is printed v5litepod-8).
  return LayoutChipMesh(*parsed.generation, parsed.chip_mesh, rank,
                        SliceName(*parsed.generation, parsed.chip_mesh));
}

absl::StatusOr<SliceLayout> LayoutChipMesh(const TpuGeneration& g,
                                           const std::array<int, 3>& chip_mesh,
                                           int rank, absl::string_view name) {
  for (int d = 0; d < 3; ++d) {
    if (chip_mesh[d] < 1 || chip_mesh[d] > g.max_slice[d]) {
      return absl::InvalidArgumentError(
          absl::StrCat("chip mesh ", chip_mesh[0], "x", chip_mesh[1], "x",
                       chip_mesh[2], " of ", g.name, ": ", kDims[d], "=",
                       chip_mesh[d], " must be in [1, ", g.max_slice[d],
                       "] (a larger custom shape needs the explicit "
                       "override)"));
    }
  }
  return LayoutMesh(g, chip_mesh, rank, name);
}

absl::StatusOr<SliceLayout> LayoutCustomChipMesh(
    const TpuGeneration& g, const std::array<int, 3>& chip_mesh, int rank,
    absl::string_view name) {
  long long chips = 1;
  for (int d = 0; d < 3; ++d) {
    if (chip_mesh[d] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("custom chip mesh ", chip_mesh[0], "x", chip_mesh[1],
                       "x", chip_mesh[2], " of ", g.name, ": ", kDims[d], "=",
                       chip_mesh[d], " must be >= 1"));
    }
    chips *= chip_mesh[d];
  }
  if (g.torus_rank == 2 && chip_mesh[2] != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("custom chip mesh ", chip_mesh[0], "x", chip_mesh[1], "x",
                     chip_mesh[2], " of ", g.name, ": z=", chip_mesh[2],
                     " must be 1 on a 2-D generation"));
  }
  if (chips > kMaxCustomChips) {
    return absl::InvalidArgumentError(
        absl::StrCat("custom chip mesh ", chip_mesh[0], "x", chip_mesh[1], "x",
                     chip_mesh[2], " of ", g.name, " has ", chips,
                     " chips; at most ", kMaxCustomChips, " are allowed"));
  }
  return LayoutMesh(g, chip_mesh, rank, name);
}

namespace {

absl::StatusOr<SliceLayout> LayoutMesh(const TpuGeneration& g,
                                       const std::array<int, 3>& chip_mesh,
                                       int rank, absl::string_view name) {
  TPUSIM_ASSIGN_OR_RETURN(const int resolved_rank, ResolveRank(g, rank));

  SliceLayout layout;
  layout.name = std::string(name);
  layout.generation = &g;
  layout.chip_mesh = chip_mesh;
  layout.rank = resolved_rank;
  layout.devices_per_chip = g.devices_per_chip;
  const int host_block[2] = {g.host_block_x, g.host_block_y};
  for (int d = 0; d < 2; ++d) {
    const int size = chip_mesh[d];
    const int block =
        (size == 1 || size % 2 != 0) ? 1 : std::min(host_block[d], size);
    if (size % block != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("chip mesh ", chip_mesh[0], "x", chip_mesh[1], "x",
                       chip_mesh[2], " of ", g.name, ": ", kDims[d], "=", size,
                       " is not a multiple of the host block width ", block));
    }
    layout.host_block[d] = block;
  }
  layout.host_block[2] = 1;
  const int bx = layout.host_block[0];
  const int by = layout.host_block[1];
  const int blocks_x = chip_mesh[0] / bx;
  const int blocks_y = chip_mesh[1] / by;
  layout.num_chips = chip_mesh[0] * chip_mesh[1] * chip_mesh[2];
  layout.num_hosts = blocks_x * blocks_y * chip_mesh[2];
  layout.devices_per_host = bx * by * g.devices_per_chip;
  layout.mesh_shape = {chip_mesh[0], chip_mesh[1]};
  if (resolved_rank == 4) layout.mesh_shape.push_back(chip_mesh[2]);
  layout.mesh_shape.push_back(g.devices_per_chip);

  const std::string kind = g.devices_per_chip == g.cores_per_chip
                               ? absl::StrCat("TPU ", g.name, " core")
                               : absl::StrCat("TPU ", g.name, " (megacore)");
  layout.devices.reserve(static_cast<size_t>(layout.num_hosts) *
                         layout.devices_per_host);
  for (int task = 0; task < layout.num_hosts; ++task) {
    const int x0 = (task % blocks_x) * bx;
    const int y0 = ((task / blocks_x) % blocks_y) * by;
    const int z0 = task / (blocks_x * blocks_y);
    for (int ordinal = 0; ordinal < layout.devices_per_host; ++ordinal) {
      const int chip = ordinal / g.devices_per_chip;
      const int core = ordinal % g.devices_per_chip;
      DeviceDescription device;
      device.id = task * layout.devices_per_host + ordinal;
      device.task = task;
      device.ordinal = ordinal;
      device.coords = {x0 + chip % bx, y0 + chip / bx};
      if (resolved_rank == 4) device.coords.push_back(z0);
      device.coords.push_back(core);
      device.chip = layout.ChipId({x0 + chip % bx, y0 + chip / bx, z0});
      device.kind = kind;
      layout.devices.push_back(std::move(device));
    }
  }
  return layout;
}

}  // namespace

absl::StatusOr<SliceLayout> PlainSliceLayout(int num_workers,
                                             int devices_per_worker) {
  if (num_workers < 1 || devices_per_worker < 1 ||
      static_cast<long long>(num_workers) * devices_per_worker >
          kMaxPlainDevices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plain layout num_workers=", num_workers,
        ", devices_per_worker=", devices_per_worker,
        ": both must be >= 1 and their product <= ", kMaxPlainDevices));
  }
  SliceLayout layout;
  layout.name = absl::StrCat(num_workers, "x", devices_per_worker);
  layout.generation = nullptr;
  layout.chip_mesh = {devices_per_worker, num_workers, 1};
  layout.host_block = {devices_per_worker, 1, 1};
  layout.num_chips = num_workers * devices_per_worker;
  layout.num_hosts = num_workers;
  layout.devices_per_chip = 1;
  layout.devices_per_host = devices_per_worker;
  layout.rank = 3;
  layout.mesh_shape = {devices_per_worker, num_workers, 1};
  layout.devices.reserve(static_cast<size_t>(layout.num_chips));
  for (int task = 0; task < num_workers; ++task) {
    for (int ordinal = 0; ordinal < devices_per_worker; ++ordinal) {
      DeviceDescription device;
      device.id = task * devices_per_worker + ordinal;
      device.task = task;
      device.ordinal = ordinal;
      device.coords = {ordinal, task, 0};
      device.chip = layout.ChipId({ordinal, task, 0});
      device.kind = "virtual TPU device";
      layout.devices.push_back(std::move(device));
    }
  }
  return layout;
}

}  // namespace tpusim::runtime
