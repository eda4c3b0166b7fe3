#include "sim/chip/chip_preset.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/check.h"
#include "sim/chip/model_constants.h"

namespace tpusim::sim {
namespace {

using common::Bytes;
using common::Picoseconds;

const runtime::TpuGeneration* Generation(absl::string_view name) {
  absl::StatusOr<const runtime::TpuGeneration*> g =
      runtime::FindTpuGeneration(name);
  TPUSIM_CHECK(g.ok()) << g.status().ToString();
  return *g;
}

// VPU: 8 sublanes x 128 lanes (sheet A.4 [V] for v4, A.6 [V] for v5p, A.7 [V]
// for v6e). The sheet gives no VPU shape for v2, v3 and v5e; tpusim choice: the
// same 8x128 for them.
constexpr int kVpuLanes = 128;
constexpr int kVpuSublanes = 8;

std::vector<ChipPreset> MakePresets() {
  // Per-hop ICI latency (model_constants.h, ici_hop_latency: sheet A.5 and A.9
  // item 6 [C], ~1 us, every generation).
  const Picoseconds kHopLatency = ModelConstantTime("ici_hop_latency");
  // Achieved ICI rate of v2/v3 links as a fraction of raw (model_constants.h,
  // ici_achieved_fraction_v2_v3: chosen, not published).
  const double kAchievedV2V3 = ModelConstantValue("ici_achieved_fraction_v2_v3");
  std::vector<ChipPreset> p;
  // ---- v2 (sheet A.2, A.8) ----
  p.push_back(ChipPreset{
      Generation("v2"),
      /*mxus_per_core=*/1,  // A.2 [V]/[M]: 1 x 128x128
      /*mxu_dim=*/128,      // A.2
      /*clock_ghz=*/0.70,   // A.2 [M]+[D]: ~700 MHz (45e12/(2x1x32768) = 687
                            // MHz)
      /*datasheet_bf16_tflops=*/45,     // A.2 [M]: 45 TFLOPS (CACM20 table says
                                        // 46)
      /*int8_tops=*/std::nullopt,       // A.8: "—"
      /*hbm_capacity=*/Bytes::GiB(16),  // A.2 [M]
      /*hbm_gbps=*/700,  // A.2 [C]: 700 (CACM20/MICRO21 papers) preferred over
                         // 600 (wiki)
      /*ici_ports=*/4,   // A.2 [M]: 4 external links
      /*ici_link_gbps=*/62,  // A.2 [M]: 496 Gbit/s = 62 GB/s per direction
      // Not published: model_constants.h ici_achieved_fraction_v2_v3.
      /*ici_link_achieved_gbps=*/kAchievedV2V3 * 62,
      /*pcie_gbps=*/16,           // A.2 [M]: ~16 GB/s per chip
      /*dcn_gbps=*/std::nullopt,  // A.8: "?"
      kVpuLanes, kVpuSublanes, kHopLatency});
  // ---- v3 (sheet A.3, A.8) ----
  p.push_back(ChipPreset{
      Generation("v3"),
      2,             // A.3 [V]: 2 x 128x128 per core
      128,           // A.3
      0.94,          // A.3 [M]+[D]: 940 MHz (123e12/(2x2x32768) = 938 MHz)
      123,           // A.3 [C]: 123 (Cloud, consistent with 940 MHz) preferred
                     // over 1.4e14 (rounded)
      std::nullopt,  // A.3 [V]: no faster int8 path (int8 = bf16 rate)
      Bytes::GiB(32),  // A.3 [V]: 32 GiB
      900,             // A.3 [V]: 900 GB/s per chip
      4,               // A.3 [V]
      82,  // A.3 [C]: 82 GB/s (CACM20 656 Gbit/s and Cloud's 340 TB/s agree)
           // over 100
      kAchievedV2V3 * 82,  // not published: as for v2
      std::nullopt,  // A.8: PCIe "?"
      std::nullopt,  // A.8: DCN "?"
      kVpuLanes, kVpuSublanes, kHopLatency});
  // The on-chip path between the two TensorCores of a v2/v3 chip: no source
  // gives it (model_constants.h: on_chip_core_rate x the raw link rate,
  // on_chip_core_latency; both chosen).
  for (ChipPreset& preset : p) {
    preset.on_chip_core_gbps =
        ModelConstantValue("on_chip_core_rate") * preset.ici_link_gbps;
    preset.on_chip_core_latency = ModelConstantTime("on_chip_core_latency");
  }
  // ---- v4 (sheet A.4, A.8) ----
  p.push_back(
      ChipPreset{Generation("v4"),
                 4,  // A.4 [V]: 4 x 128x128 per core
                 128,
                 1.05,  // A.4 [M]+[D]: 1050 MHz (275e12/(2x4x32768) = 1049 MHz)
                 275,   // A.4 [V]
                 275,   // A.4 [V]: int8 at the bf16 rate
                 Bytes::GiB(32),  // A.4 [V]
                 1200,            // A.4 [V]
                 6,               // A.4 [V]: 3-D torus
                 50,  // A.4/A.8: 45–50; tpusim choice: 50 GB/s raw link rate
                      // (A.9 item 1: raw rate as the hardware link, protocol
                      // overhead modelled on top), 45 as achieved
                 45,  // A.4 [V]+[D]: ~45 GB/s achieved
                 16,  // A.4 [V]/[M]: 16 GB/s each way per chip
                 std::nullopt,  // A.8: DCN "?"
                 kVpuLanes, kVpuSublanes, kHopLatency});
  // ---- v5e (sheet A.5, A.8) ----
  p.push_back(
      ChipPreset{Generation("v5e"),
                 4,  // A.5 [V]
                 128,
                 1.5,  // A.5 [V]: ~1.5 GHz (197e12/(4x32768) = 1.503 GHz)
                 197,  // A.5 [V]
                 394,  // A.5 [V]
                 Bytes::GiB(16),  // A.5 [V]: 16 GB HBM2 (binary per A.8 note)
                 819,             // A.5 [V]
                 4,               // A.5 [V]
                 50,              // A.5 [V]: 4 x 50 GB/s per direction (raw)
                 45,   // A.5 [C]: 45 achievable (scaling book newer table)
                 16,   // A.8: 15–16 GB/s; tpusim choice: 16 (upper value,
                       // SB-tpus ~1.5–1.6e10)
                 3.1,  // A.8 [V]: ~3.1 GB/s per chip
                 kVpuLanes, kVpuSublanes, kHopLatency});
  // ---- v5p (sheet A.6, A.8) ----
  p.push_back(
      ChipPreset{Generation("v5p"),
                 4,  // A.6 [V]
                 128,
                 1.75,  // A.6 [V]: ~1.75 GHz (459e12/(8x32768) = 1.751 GHz)
                 459,   // A.6 [V]
                 918,   // A.6 [V]
                 Bytes::GiB(95),  // A.6 [V]: 95 GiB
                 2765,            // A.6 [V]: 2765 GB/s preferred (A.9 item 7)
                 6,               // A.6 [V]
                 100,             // A.6 [V]: 100 GB/s per link per direction
                 90,              // A.6 [V]: 9e10 achieved (scaling book)
                 16,              // A.6 [V]: ~1.6e10 B/s
                 6.25,            // A.6 [V]: 50 Gbit/s per chip
                 kVpuLanes, kVpuSublanes, kHopLatency});
  // ---- v6e (sheet A.7, A.8) ----
  p.push_back(
      ChipPreset{Generation("v6e"),
                 2,    // A.7 [V]: 2 x 256x256 per the Cloud doc
                 256,  // A.7 [V]
                 // A.7 [C] unresolved: the clock is not published. tpusim
                 // choice: keep the documented 2 MXUs and derive the effective
                 // clock that gives the published 918 TFLOPS: 918e12 / (1 core
                 // x 2 MXUs x 2 x 256^2) = 3.502 GHz.
                 3.502,
                 918,             // A.7 [V]
                 1836,            // A.7 [V]
                 Bytes::GiB(32),  // A.7 [V]
                 1638,            // A.7 [V]
                 4,               // A.7 [V]
                 100,             // A.7 [V]: 100 GB/s per link per direction
                 90,              // A.7 [V]: 9e10 (scaling book)
                 32,              // A.7 [V]: ~3.2e10 B/s (PCIe Gen5)
                 12.5,            // A.7 [V]: ~1.25e10 B/s per chip
                 kVpuLanes, kVpuSublanes, kHopLatency});
  // VPU ALUs per lane/sublane pair (model_constants.h): the sheet's 2 for v4
  // (A.4) and 4 for v5p (A.6); the others are not published (chosen).
  for (ChipPreset& preset : p) {
    const std::string name(preset.name());
    preset.vpu_alus_per_lane = ModelConstantValue(
        name == "v4"    ? "vpu_alus_per_lane_v4"
        : name == "v5p" ? "vpu_alus_per_lane_v5p"
                        : "vpu_alus_per_lane_unpublished");
    TPUSIM_CHECK(preset.vpu_alus_per_lane > 0) << name;
  }
  return p;
}

const std::vector<ChipPreset>& Presets() {
  static const std::vector<ChipPreset>* presets =
      new std::vector<ChipPreset>(MakePresets());
  return *presets;
}

}  // namespace

double ChipPreset::PeakBf16FlopsPerSecond() const {
  // Sheet A, "MXU throughput rule": one dim x dim MXU does dim^2 MAC = 2 dim^2
  // FLOP per cycle.
  return static_cast<double>(generation->cores_per_chip) * mxus_per_core * 2.0 *
         mxu_dim * mxu_dim * clock_ghz * 1e9;
}

absl::Span<const ChipPreset> ChipPresets() { return Presets(); }

absl::StatusOr<const ChipPreset*> FindChipPreset(absl::string_view name) {
  // The generation's names ("v5e" or "v5litepod") resolve to its preset.
  absl::StatusOr<const runtime::TpuGeneration*> g =
      runtime::FindTpuGeneration(name);
  if (!g.ok()) {
    // "TPU generation "x" is not known; …" as "chip preset "x" is not known; …"
    absl::string_view message = g.status().message();
    absl::ConsumePrefix(&message, "TPU generation ");
    return absl::NotFoundError(absl::StrCat("chip preset ", message));
  }
  for (const ChipPreset& p : Presets()) {
    if (p.name() == (*g)->name) return &p;
  }
  return absl::NotFoundError(
      absl::StrCat("chip preset \"", name, "\" has no preset"));
}

}  // namespace tpusim::sim
