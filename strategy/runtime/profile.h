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
};

// A timed interval (timing backends only).
struct TimelineSpan {
  int device_id = 0;
  std::string name;
  int64_t start_ps = 0;
  int64_t end_ps = 0;
};

struct Profile {
  std::string backend;
  // Every device of the backend, ascending by id.
  std::vector<DeviceProfile> devices;
  // Empty for backends without timing.
  std::vector<TimelineSpan> spans;
};

// The proto form (strategy/runtime/profile.proto), for report writers.
void ProfileToProto(const Profile& profile, proto::ProfileProto* out);

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_PROFILE_H_
