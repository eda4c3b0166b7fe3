#include "strategy/runtime/tpu_generation.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/did_you_mean.h"

namespace tpusim::runtime {
namespace {

constexpr TpuGeneration kGenerations[] = {
    // v2: 2 cores/chip (sheet A.2 [V]); 4 chips/host, v2-8 = 8 cores (A.2 [V]);
    // 2-D torus,
    // 16x16 pod (A.2 [V]).
    {"v2",
     "v2",
     /*cores_per_chip=*/2,
     /*devices_per_chip=*/2,
     /*chips_per_host=*/4,
     /*host_block_x=*/2,
     /*host_block_y=*/2,
     /*torus_rank=*/2,
     {16, 16, 1},
     /*slice_name_counts_cores=*/true},
    // v3: 2 cores/chip (A.3 [V]); 4 chips/host (A.3 [V]); 2-D torus 32x32 (A.3
    // [V]).
    {"v3", "v3", 2, 2, 4, 2, 2, 2, {32, 32, 1}, true},
    // v4: 2 cores as one megacore device (A.4 [V], sheet notes); 4 chips/host
    // as a 2x2x1 tray
    // (A.4 [V]); 3-D torus, 16x16x16 pod (A.4 [V]).
    {"v4", "v4", 2, 1, 4, 2, 2, 3, {16, 16, 16}, true},
    // v5e: 1 core/chip (A.5 [V]); 8 chips/host, 4x2 (A.5 [V]); 2-D torus 16x16
    // (A.5 [V]).
    {"v5e", "v5litepod", 1, 1, 8, 4, 2, 2, {16, 16, 1}, false},
    // v5p: 2 cores, megacore (A.6 [V]); 4 chips/host, 2x2x1 (A.6 [V]); 3-D
    // torus; largest
    // single slice 16x16x24 (A.6 [V]).
    {"v5p", "v5p", 2, 1, 4, 2, 2, 3, {16, 16, 24}, true},
    // v6e: 1 core/chip (A.7 [V]); 8 chips/host (A.7 [V]; block 4x2 as v5e, spec
    // (j) convention);
    // 2-D torus 16x16 (A.7 [V]).
    {"v6e", "v6e", 1, 1, 8, 4, 2, 2, {16, 16, 1}, false},
};

}  // namespace

absl::Span<const TpuGeneration> TpuGenerations() { return kGenerations; }

std::string TpuGenerationNames() {
  std::vector<std::string> names;
  for (const TpuGeneration& g : kGenerations) names.push_back(g.name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<const TpuGeneration*> FindTpuGeneration(absl::string_view name) {
  // Cloud's slice prefix names the generation too ("v5litepod" is v5e).
  std::vector<std::string> known;
  for (const TpuGeneration& g : kGenerations) {
    if (name == g.name || name == g.slice_prefix) return &g;
    known.push_back(g.name);
    if (std::string(g.name) != g.slice_prefix) known.push_back(g.slice_prefix);
  }
  return absl::NotFoundError(absl::StrCat(
      "TPU generation \"", name, "\" is not known",
      common::DidYouMean(name, known), "; valid: ", TpuGenerationNames(),
      " (v5litepod is accepted for v5e)"));
}

}  // namespace tpusim::runtime
