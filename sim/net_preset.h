// sim/net_preset.h
//
// Fills the interconnect's NetConfig (sim/net, which does not read presets)
// from a chip preset (sim/chip). The CLI and the pod both use this, so the
// network always runs on the preset's numbers.
//
//   TPUSIM_ASSIGN_OR_RETURN(net::NetConfig c, NetConfigFromPreset(*v4));

#ifndef TPUSIM_SIM_NET_PRESET_H_
#define TPUSIM_SIM_NET_PRESET_H_

#include "absl/status/statusor.h"
#include "sim/chip/chip_preset.h"
#include "sim/net/net_config.h"

namespace tpusim::sim {

// B = the preset's achieved link rate; the hop latency; the on-chip core path
// (v2/v3); the vector reduce rate of one device. FailedPrecondition when the
// preset lacks a number the network needs.
absl::StatusOr<net::NetConfig> NetConfigFromPreset(const ChipPreset& preset);

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_NET_PRESET_H_
