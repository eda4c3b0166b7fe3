#include "sim/net_preset.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sim/chip/model_constants.h"

namespace tpusim::sim {

absl::StatusOr<net::NetConfig> NetConfigFromPreset(const ChipPreset& p) {
  if (!p.ici_link_achieved_gbps.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("chip preset ", p.name(),
                     " has no achieved ICI link rate; the network needs it"));
  }
  net::NetConfig c;
  // Every collective formula uses the achieved rate B (issue: "~90% of raw").
  c.link_bytes_per_second = *p.ici_link_achieved_gbps * 1e9;
  c.hop_latency = p.ici_hop_latency;
  if (p.generation->devices_per_chip == 2) {
    if (!p.on_chip_core_gbps.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "chip preset ", p.name(),
          " has two devices per chip but no on-chip core path rate"));
    }
    c.on_chip_bytes_per_second = *p.on_chip_core_gbps * 1e9;
    c.on_chip_latency = p.on_chip_core_latency;
  }
  // A device's vector unit reduces collective_reduce_bytes_per_alu_cycle
  // bytes of incoming data (chosen: one f32 element) per ALU per cycle on
  // each of its cores: 8 sublanes x 128 lanes x vpu_alus_per_lane (sheet
  // A.4/A.6 for v4 and v5p).
  const int cores_per_device =
      p.generation->cores_per_chip / p.generation->devices_per_chip;
  c.vector_reduce_bytes_per_second =
      ModelConstantValue("collective_reduce_bytes_per_alu_cycle") *
      p.vpu_lanes * p.vpu_sublanes * p.vpu_alus_per_lane * cores_per_device *
      p.clock_ghz * 1e9;
  // The forwarding granule of pipelined ring steps (chosen).
  c.pipeline_chunk_bytes = static_cast<int64_t>(
      ModelConstantValue("collective_forwarding_granule") * 1024);
  return c;
}

}  // namespace tpusim::sim
