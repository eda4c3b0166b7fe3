// strategy/runtime/tpu_generation.h
//
// The topology facts of each TPU generation that every backend and the
// TF-facing layer share: how many TensorCores and devices a chip has, how many
// chips a host owns and in what block, the torus rank, the largest slice, and
// how slice names count ("v3-32" counts TensorCores, "v5litepod-16" counts
// chips). Performance numbers (clock, MXUs, HBM, links) live with the chip
// presets in sim/chip; this file holds only what decides device and host
// layout.
//
//   const TpuGeneration* v3 = *FindTpuGeneration("v3");
//   int hosts = chips / v3->chips_per_host;
//
// Every number cites its entry in shared/spec/tpu-hardware-reference.md (the
// "sheet").

#ifndef TPUSIM_STRATEGY_RUNTIME_TPU_GENERATION_H_
#define TPUSIM_STRATEGY_RUNTIME_TPU_GENERATION_H_

#include <array>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace tpusim::runtime {

struct TpuGeneration {
  // Preset name: "v2", "v3", "v4", "v5e", "v5p", "v6e".
  const char* name;
  // Prefix of slice names: "v3" in "v3-32", "v5litepod" in "v5litepod-16".
  const char* slice_prefix;
  // TensorCores per chip.
  int cores_per_chip;
  // Devices per chip as TensorFlow sees them: 2 on v2/v3 (each core is a
  // device), 1 on v4/v5p (megacore: both cores are one device) and on v5e/v6e
  // (one core).
  int devices_per_chip;
  // Chips attached to one host.
  int chips_per_host;
  // The block of chips (x by y) one host owns (spec (j), tpusim convention).
  int host_block_x;
  int host_block_y;
  // 2 for a 2-D torus, 3 for a 3-D torus.
  int torus_rank;
  // Largest single slice in chips per dimension (z = 1 for 2-D).
  std::array<int, 3> max_slice;
  // True when the number in a slice name counts TensorCores (v2, v3, v4, v5p);
  // false when it counts chips (v5e, v6e). Spec "tpusim conventions", slice
  // names.
  bool slice_name_counts_cores;
};

// All generations, oldest first.
absl::Span<const TpuGeneration> TpuGenerations();

// The generation named `name` ("v3"). NotFound lists the valid names.
absl::StatusOr<const TpuGeneration*> FindTpuGeneration(absl::string_view name);

// "v2, v3, v4, v5e, v5p, v6e".
std::string TpuGenerationNames();

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_TPU_GENERATION_H_
