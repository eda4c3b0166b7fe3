#include "sim/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/int_math.h"

namespace tpusim::sim {
namespace {

// Bytes per unit, measured on tpusim's structures (Release, x86-64; peak
// RSS differences between runs that differ in that unit only).
// The process: the binary, its libraries, SystemC's kernel and the
// allocator's arenas (a 4-device run of a tiny program: 15-18 MB).
constexpr int64_t kProcessBytes = int64_t{16} << 20;
// Per traced op: the Program, the host executable's plans and the strategy's
// trace (BERT-large's 5200-op step: ~5 MB).
constexpr int64_t kBytesPerOp = 1024;
// Per kernel of the schedule: its record and its dependency lists.
constexpr int64_t kBytesPerKernel = 512;
// Per device: its chip's network node and endpoint, the host model's queues,
// the profile counters (24.5 KB per chip on v4-8192 against v4-2048).
constexpr int64_t kBytesPerDevice = 24 << 10;
// Per (device, variable slot): the abstract tensor and its bookkeeping
// (BERT-large's 391 slots: ~190 B).
constexpr int64_t kBytesPerVariableSlot = 192;
// Per span of the step being timed (SimBackend::StepSpan, and the vector's
// growth room).
constexpr int64_t kBytesPerStepSpan = 64;
// Per kept span: its record, its proto and its trace text.
constexpr int64_t kBytesPerTracedSpan = 400;
// Per step: its summary (SimBackend's Step, 64 B, and the vector's growth
// room; deep_mlp_v3_8: 145 B per step from 2000 to 20000 steps).
constexpr int64_t kBytesPerStepSummary = 128;
// Per packet on a wire: its arrival event in the receiving chip's queue
// (sim/net/network.cc's Event, one cache line).
constexpr int64_t kBytesPerPacketInFlight = 64;

int64_t Mul(int64_t a, int64_t b) {
  return common::CheckedMul(a, b).value_or(std::numeric_limits<int64_t>::max());
}

std::string Human(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30)) {
    return absl::StrFormat("%.1f GiB", bytes / double(int64_t{1} << 30));
  }
  if (bytes >= (1 << 20)) {
    return absl::StrFormat("%.0f MiB", bytes / double(1 << 20));
  }
  return absl::StrFormat("%.0f KiB", bytes / 1024.0);
}

// Sorts the parts largest first and sums them.
MemoryEstimate Totalled(MemoryEstimate e) {
  std::stable_sort(e.parts.begin(), e.parts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [what, bytes] : e.parts) {
    e.total_bytes = common::CheckedAdd(e.total_bytes, bytes)
                        .value_or(std::numeric_limits<int64_t>::max());
  }
  return e;
}

}  // namespace

std::string MemoryEstimate::Describe() const {
  std::vector<std::string> shown;
  for (const auto& [what, bytes] : parts) {
    if (shown.size() == 4) break;
    shown.push_back(absl::StrCat(what, " ", Human(bytes)));
  }
  return absl::StrCat("~", Human(total_bytes), " (", absl::StrJoin(shown, ", "),
                      ")");
}

MemoryEstimate EstimateRunMemory(const RunShape& s) {
  MemoryEstimate e;
  auto add = [&](std::string what, int64_t bytes) {
    if (bytes <= 0) return;
    e.parts.push_back({std::move(what), bytes});
  };
  add("the process", kProcessBytes);
  add("the step program",
      common::CheckedAdd(Mul(s.ops, kBytesPerOp), Mul(s.kernels, kBytesPerKernel))
          .value_or(std::numeric_limits<int64_t>::max()));
  add(absl::StrCat("per-device state of ", s.devices, " devices"),
      Mul(s.devices,
          kBytesPerDevice + Mul(s.variable_slots, kBytesPerVariableSlot)));
  if (s.real_values) {
    add(absl::StrCat("real values of ", s.replicas, " replicas"),
        Mul(s.replicas, s.replica_value_bytes));
    add(absl::StrCat("variables on ", s.devices, " devices"),
        Mul(s.devices, s.device_variable_bytes));
  }
  add("values the same on every replica", s.invariant_value_bytes);
  add(absl::StrCat("the summaries of ", s.steps, " steps"),
      Mul(s.steps, kBytesPerStepSummary));
  if (s.record_spans) {
    const int64_t spans_per_step = s.kernels + 2;
    add("the spans of a step", Mul(Mul(s.devices, spans_per_step), kBytesPerStepSpan));
    add(absl::StrCat("the spans of ", s.traced_devices, " traced devices"),
        Mul(Mul(Mul(s.traced_devices, s.traced_steps), spans_per_step),
            kBytesPerTracedSpan));
    // Every link's busy time at the end of the first 64 calls (at most 8
    // links a chip), in the backend and in the profile.
    add("link samples",
        Mul(Mul(s.chips, 8), Mul(std::min<int64_t>(s.traced_steps, 64), 16)));
  }
  return Totalled(std::move(e));
}

MemoryEstimate EstimateCollectiveMemory(const CollectiveShape& s) {
  MemoryEstimate e;
  e.parts.push_back({"the process", kProcessBytes});
  e.parts.push_back({absl::StrCat("the network state of ", s.devices,
                                  " devices"),
                     Mul(s.devices, kBytesPerDevice)});
  if (s.packet_bytes > 0 && s.links > 0) {
    // Packets a link's wire holds at once (+1: one being sent).
    const double on_wire = std::ceil(static_cast<double>(s.hop_latency_ps) *
                                     1e-12 * s.link_bytes_per_second /
                                     static_cast<double>(s.packet_bytes));
    const int64_t per_message =
        s.max_bytes / s.packet_bytes + (s.max_bytes % s.packet_bytes != 0);
    const int64_t per_link = std::min<int64_t>(
        per_message, on_wire >= 9e18 ? std::numeric_limits<int64_t>::max()
                                     : static_cast<int64_t>(on_wire) + 1);
    e.parts.push_back(
        {absl::StrCat("packets in flight on ", s.links, " links"),
         Mul(Mul(s.links, per_link), kBytesPerPacketInFlight)});
  }
  return Totalled(std::move(e));
}

absl::Status CheckMemoryLimit(const MemoryEstimate& estimate,
                              int64_t limit_bytes) {
  if (limit_bytes <= 0 || estimate.total_bytes <= limit_bytes) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("this run needs ", estimate.Describe(), "; the limit is ",
                   Human(limit_bytes), " (--memory-limit=SIZE)"));
}

}  // namespace tpusim::sim
