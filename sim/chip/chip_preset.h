// sim/chip/chip_preset.h
//
// The performance numbers of each TPU generation that the pod model is built
// from: MXUs, clock, peak FLOPs, HBM, ICI links, host PCIe and DCN. Topology
// facts (cores and devices per chip, chips per host, torus rank) come from
// strategy/runtime/tpu_generation.h, which this preset points to, so the two
// never disagree.
//
//   const ChipPreset* v4 = *FindChipPreset("v4");
//   double flops = v4->PeakBf16FlopsPerSecond();  // from the MXU identity, not
//   the datasheet
//
// Every number cites its entry in shared/spec/tpu-hardware-reference.md (the
// "sheet"). Where the sheet lists a conflict ([C]) or no value, the comment
// says which value was chosen and why. Numbers that are unknown stay unset
// (std::nullopt) rather than guessed.

#ifndef TPUSIM_SIM_CHIP_CHIP_PRESET_H_
#define TPUSIM_SIM_CHIP_CHIP_PRESET_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/units.h"
#include "strategy/runtime/tpu_generation.h"

namespace tpusim::sim {

struct ChipPreset {
  const runtime::TpuGeneration* generation;  // topology facts
  int mxus_per_core;
  int mxu_dim;  // 128 for a 128x128 systolic array
  double clock_ghz;
  double datasheet_bf16_tflops;  // per chip, as published
  std::optional<double>
      int8_tops;  // per chip; nullopt: no faster int8 path / unknown
  common::Bytes hbm_capacity;  // per chip
  double hbm_gbps;             // GB/s per chip
  int ici_ports;
  double ici_link_gbps;  // GB/s, one direction of one link (raw)
  std::optional<double>
      ici_link_achieved_gbps;       // measured/achievable, where published
  std::optional<double> pcie_gbps;  // GB/s per chip, host link
  std::optional<double> dcn_gbps;   // GB/s per chip
  // Vector unit: lanes x sublanes per core.
  int vpu_lanes;
  int vpu_sublanes;
  // Empirical per-hop ICI latency.
  common::Picoseconds ici_hop_latency;
  // The on-chip path between the two TensorCores of a v2/v3 chip (one
  // direction); nullopt / zero for chips with one device.
  std::optional<double> on_chip_core_gbps = std::nullopt;
  common::Picoseconds on_chip_core_latency = common::Picoseconds(0);
  // FP ALUs per lane/sublane pair of the vector unit (model_constants.h:
  // sheet A.4 for v4, A.6 for v5p; chosen elsewhere).
  double vpu_alus_per_lane = 1;

  absl::string_view name() const { return generation->name; }
  // cores x MXUs x 2·dim² x clock: the MXU throughput identity (sheet A, "MXU
  // throughput rule"), the rate the timing model uses.
  double PeakBf16FlopsPerSecond() const;
};

// All presets in generation order (v2, v3, v4, v5e, v5p, v6e).
absl::Span<const ChipPreset> ChipPresets();

// NotFound naming `name` and listing the valid presets.
absl::StatusOr<const ChipPreset*> FindChipPreset(absl::string_view name);

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_CHIP_CHIP_PRESET_H_
