// sim/memory_estimate.h
//
// What a simulated run will need of the host machine's memory, estimated
// before the work, so that a run too big for its limit fails with a clear
// error naming its largest parts instead of an allocation failure half-way.
//
//   RunShape shape;  // devices, chips, the step's ops and kernels, steps ...
//   MemoryEstimate e = EstimateRunMemory(shape);
//   TPUSIM_RETURN_IF_ERROR(CheckMemoryLimit(e, limit_bytes));
//   // RESOURCE_EXHAUSTED: this run needs ~5.2 GiB (real values of 4096
//   // replicas 4.1 GiB, per-device state 0.7 GiB, ...); the limit is 4 GiB
//   // (--memory-limit)
//
// The figures per unit are measured on tpusim's own structures (Release
// build, x86-64; tests/tools pins the estimate within 2x of the peak RSS of
// every shipped run scenario). They are an estimate of tpusim's memory, not
// of anything on a TPU.

#ifndef TPUSIM_SIM_MEMORY_ESTIMATE_H_
#define TPUSIM_SIM_MEMORY_ESTIMATE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace tpusim::sim {

struct RunShape {
  int64_t devices = 0;
  int64_t chips = 0;
  int64_t replicas = 0;
  // The step program (0 before it is traced): its ops, the kernels of its
  // schedule (all cores), its variable slots.
  int64_t ops = 0;
  int64_t kernels = 0;
  int64_t variable_slots = 0;
  // Real values (the run computes them): per replica the live bytes at the
  // schedule's peak plus its arguments, and per device the variables' bytes.
  bool real_values = false;
  int64_t replica_value_bytes = 0;
  int64_t device_variable_bytes = 0;
  // Values the same on every replica (constants and what is made of them),
  // computed once whether or not the run has real values.
  int64_t invariant_value_bytes = 0;
  // Spans: recorded at all, the devices that keep them, the steps they are
  // kept for.
  bool record_spans = true;
  int64_t traced_devices = 0;
  int64_t traced_steps = 0;
  // Steps the run makes (0: unknown); each keeps a summary (its start, end
  // and breakdown) for the profile.
  int64_t steps = 0;
};

struct MemoryEstimate {
  int64_t total_bytes = 0;
  // (what, bytes), largest first.
  std::vector<std::pair<std::string, int64_t>> parts;
  // "~5.2 GiB (real values 4.1 GiB, per-device state 0.7 GiB, ...)".
  std::string Describe() const;
};

MemoryEstimate EstimateRunMemory(const RunShape& shape);

// A `tpusim collective` request: the network and the largest per-device
// message size it sends.
struct CollectiveShape {
  int64_t devices = 0;
  int64_t links = 0;  // every link direction, on-chip paths included
  int64_t packet_bytes = 0;  // 0 = whole messages
  int64_t hop_latency_ps = 0;
  double link_bytes_per_second = 0;
  int64_t max_bytes = 0;  // per device
};

// The network's state plus the packets in flight: a link holds at most a
// hop latency's worth of packets on the wire (bandwidth x latency / packet
// size), and never more than a message has. A message's packets waiting at
// its sender take one entry (sim/net/network.cc), so --bytes alone does not
// grow it; packets queued behind others where flows contend are not
// counted.
MemoryEstimate EstimateCollectiveMemory(const CollectiveShape& shape);

// ResourceExhausted "this run needs ~N GiB (largest parts); the limit is M
// GiB (--memory-limit)" when the estimate is above `limit_bytes` (> 0; 0 is
// no limit); OK otherwise.
absl::Status CheckMemoryLimit(const MemoryEstimate& estimate,
                              int64_t limit_bytes);

// --memory-limit's default: 16 GiB (tpusim's choice, a fixed number never read
// from the machine: two thirds of the 24 GiB machines tpusim is developed and
// tested on).
inline constexpr int64_t kDefaultMemoryLimitBytes = int64_t{16} << 30;

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_MEMORY_ESTIMATE_H_
