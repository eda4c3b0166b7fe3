// sim/net/net_config.h
//
// Every number the interconnect model uses, in one struct. sim/net does not
// read the chip presets (it must not depend on sim/chip); the caller fills
// this from them (sim/net_preset.h does it for the CLI and the pod) or by hand
// in tests.
//
//   NetConfig c;
//   c.link_bytes_per_second = 45e9;                       // B, achieved
//   c.hop_latency = Picoseconds::FromMicroseconds(1);
//   c.vector_reduce_bytes_per_second = 4.3e12;
//   TPUSIM_RETURN_IF_ERROR(ValidateNetConfig(c, /*devices_per_chip=*/1));

#ifndef TPUSIM_SIM_NET_NET_CONFIG_H_
#define TPUSIM_SIM_NET_NET_CONFIG_H_

#include <cstdint>

#include "absl/status/status.h"
#include "common/units.h"

namespace tpusim::sim::net {

struct NetConfig {
  // B: the effective (achieved) bandwidth of one direction of one ICI link,
  // bytes per second. Every collective formula uses this B.
  double link_bytes_per_second = 0;
  // Latency of one link hop (> 0): the minimum latency of every message
  // between chips, and so the lookahead of a partitioned run.
  common::Picoseconds hop_latency;
  // The on-chip path between the two TensorCores of a v2/v3 chip, one
  // direction. Used only when a chip has 2 devices.
  double on_chip_bytes_per_second = 0;
  common::Picoseconds on_chip_latency;
  // Rate at which a device's vector unit reduces incoming data into its
  // buffer, bytes of incoming data per second (the default data path charges
  // reductions at this rate).
  double vector_reduce_bytes_per_second = 0;
  // Packet size of the links' round-robin arbitration, bytes. 0 (the default)
  // sends each message as one unit (coarse, fast); a positive value splits
  // messages into packets of this size (fine, slower). tpusim choice.
  int64_t packet_bytes = 0;
  // Granule of the DMA pipeline that reduces and forwards a chunk while it
  // arrives: a forwarded chunk can start leaving once its first granule has
  // arrived and been reduced. tpusim choice: 64 KiB.
  int64_t pipeline_chunk_bytes = 64 << 10;
};

// InvalidArgument naming the field, its value and what is allowed: rates must
// be finite and > 0 (the on-chip ones only when devices_per_chip == 2),
// latencies > 0, packet_bytes >= 0, pipeline_chunk_bytes > 0.
absl::Status ValidateNetConfig(const NetConfig& config, int devices_per_chip);

}  // namespace tpusim::sim::net

#endif  // TPUSIM_SIM_NET_NET_CONFIG_H_
