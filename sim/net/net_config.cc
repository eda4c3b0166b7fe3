#include "sim/net/net_config.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace tpusim::sim::net {
namespace {

absl::Status PositiveRate(const char* field, double value) {
  if (!std::isfinite(value) || value <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "net config ", field, "=", value, ": must be a finite rate > 0"));
  }
  return absl::OkStatus();
}

absl::Status PositiveLatency(const char* field, common::Picoseconds value) {
  if (value.count() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("net config ", field, "=", value.count(),
                     " ps: must be > 0 (links need a minimum latency)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateNetConfig(const NetConfig& c, int devices_per_chip) {
  absl::Status s =
      PositiveRate("link_bytes_per_second", c.link_bytes_per_second);
  if (s.ok()) s = PositiveLatency("hop_latency", c.hop_latency);
  if (s.ok()) {
    s = PositiveRate("vector_reduce_bytes_per_second",
                     c.vector_reduce_bytes_per_second);
  }
  if (s.ok() && devices_per_chip == 2) {
    s = PositiveRate("on_chip_bytes_per_second", c.on_chip_bytes_per_second);
    if (s.ok()) s = PositiveLatency("on_chip_latency", c.on_chip_latency);
  }
  if (s.ok() && c.packet_bytes < 0) {
    s = absl::InvalidArgumentError(
        absl::StrCat("net config packet_bytes=", c.packet_bytes,
                     ": must be >= 0 (0 = one packet per message)"));
  }
  if (s.ok() && c.pipeline_chunk_bytes <= 0) {
    s = absl::InvalidArgumentError(
        absl::StrCat("net config pipeline_chunk_bytes=", c.pipeline_chunk_bytes,
                     ": must be > 0"));
  }
  return s;
}

}  // namespace tpusim::sim::net
