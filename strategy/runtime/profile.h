// strategy/runtime/profile.h
//
// Profile: what a backend ran, as counters per device and per op name, plus
// (for timing backends) timeline spans. The host backend fills counters and
// leaves `spans` empty.
//
//   absl::StatusOr<Profile> p = backend.CollectProfile();
//   int64_t flops = p->devices[0].total.flops;
//   int64_t dots = p->devices[0].per_op.at("dot").count;

#ifndef TPUSIM_STRATEGY_RUNTIME_PROFILE_H_
#define TPUSIM_STRATEGY_RUNTIME_PROFILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tpusim::proto {
class ProfileProto;
}  // namespace tpusim::proto

namespace tpusim::runtime {

// Counters of a set of op executions (cost rules on bound shapes).
struct OpCounters {
  int64_t count = 0;
  int64_t flops = 0;
  int64_t transcendentals = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
};

struct DeviceProfile {
  int device_id = 0;
  // Programs executed on this device (one per ExecuteSpmd in which it took
  // part).
  int64_t executions = 0;
  OpCounters total;
  // Keyed by op name ("dot", "all_reduce", ...); std::map so iteration order is
  // stable.
  std::map<std::string, OpCounters> per_op;
  int64_t host_to_device_bytes = 0;  // TransferToDevice
  int64_t device_to_host_bytes = 0;  // TransferFromDevice
  int64_t cross_core_bytes =
      0;  // operands received from another logical core's device
  int64_t collective_bytes =
      0;  // operand bytes this device fed into collectives
  // Timing backends only (0 elsewhere):
  int64_t mxu_busy_ps = 0;      // time the MXUs were busy (tile cycles)
  int64_t busy_ps = 0;          // time in kernels (any category)
  int64_t hbm_bytes = 0;        // HBM bytes moved by kernels
  int64_t peak_hbm_bytes = 0;   // largest footprint of a program it ran
  int64_t hbm_capacity_bytes = 0;
};

// A timed interval (timing backends only). Device spans carry one of the
// categories "mxu" (MXU-bound compute), "vector" (vector-unit-bound),
// "memory" (HBM-bound), "collective" (exposed collective wait), "infeed"
// (PCIe transfer the step waits for), "input" (the host pipeline was not
// ready), "host" (host-loop overhead), "idle". Host spans have device_id -1,
// `host` set, and category "host_pipeline" or "pcie".
struct TimelineSpan {
  int device_id = 0;
  std::string name;
  int64_t start_ps = 0;
  int64_t end_ps = 0;
  std::string category;
  int host = -1;
};

// One ICI link (timing backends only): from chip `chip` at `coords` along
// dimension `dim` (0, 1, 2 = x, y, z; 3 = the on-chip path between the two
// cores of a v2/v3 chip) in direction +1 or -1.
struct LinkProfile {
  int chip = 0;
  std::vector<int> coords;
  int dim = 0;
  int direction = 1;
  int64_t bytes = 0;
  int64_t busy_ps = 0;
};

// One device call (ExecuteSpmd) of a timing backend, as seen by the device
// that finished last: the exposed collective time (it waited for a collective
// to end) and the hidden part (collective time overlapped by its compute).
struct StepProfile {
  int64_t start_ps = 0;
  int64_t end_ps = 0;
  int64_t steps = 1;  // iterations in the call (steps_per_run)
  int64_t exposed_collective_ps = 0;
  int64_t hidden_collective_ps = 0;
  int64_t infeed_wait_ps = 0;
  int64_t host_overhead_ps = 0;
};

struct Profile {
  std::string backend;
  // Every device of the backend, ascending by id.
  std::vector<DeviceProfile> devices;
  // Empty for backends without timing.
  std::vector<TimelineSpan> spans;
  std::vector<LinkProfile> links;
  std::vector<StepProfile> steps;
  // Simulated time at the end of the last call (timing backends).
  int64_t end_ps = 0;
};

// The proto form (strategy/runtime/profile.proto), for report writers.
void ProfileToProto(const Profile& profile, proto::ProfileProto* out);

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_PROFILE_H_
