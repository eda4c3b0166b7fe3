// strategy/runtime/host_backend.h
//
// HostBackend: the functional backend. Computes real values in-process
// (abstract tensors flow through without arithmetic), keeps per-(device, slot)
// variables, and counts FLOPs and bytes per device and op in its Profile. No
// timing: Profile::spans stays empty.
//
//   HostBackend backend(devices);  // a slice layout (strategy/runtime/slice.h)
//   HostBackend small(8);          // 8 plain devices on task 0 (tests)
//
// Execution model: the step runs op by op in lockstep across replicas (every
// replica finishes op i before any starts op i+1). A collective therefore sees
// every replica's operand at once and reduces in replica-group order, so
// results are exact and bit-identical whatever the thread timing. Large ops are
// spread over a persistent worker pool (created once, in the constructor); tiny
// ops run inline on the calling thread, so a step of a small program costs no
// thread hand-off at all.
//
// Placement: each op runs on the device of its logical core; an operand
// produced on another core is (notionally) transferred and its bytes are
// counted as cross_core_bytes of the receiving device.

#ifndef TPUSIM_STRATEGY_RUNTIME_HOST_BACKEND_H_
#define TPUSIM_STRATEGY_RUNTIME_HOST_BACKEND_H_

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "strategy/runtime/backend.h"
#include "strategy/runtime/device_description.h"

namespace tpusim::runtime {

class WorkerPool;

// Counters of a set of op executions (internal to HostBackend; the Profile
// carries them as OpCountersProto).
struct OpTally {
  int64_t count = 0;
  int64_t flops = 0;
  int64_t transcendentals = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
};

struct HostBackendOptions {
  // Worker threads for large ops (0 = everything inline on the calling thread).
  int num_threads = 2;
  // Ops whose per-replica cost (flops + bytes) is below this run inline.
  int64_t parallel_threshold = 1 << 16;
};

class HostBackend final : public Backend {
 public:
  // Devices from a slice layout. Preconditions (CHECKed): ids are 0..N-1 in
  // order.
  explicit HostBackend(std::vector<DeviceDescription> devices,
                       HostBackendOptions options = {});
  // `num_devices` devices on task 0 with ordinals 0..N-1, coords (i, 0, 0),
  // kind "host".
  explicit HostBackend(int num_devices, HostBackendOptions options = {});
  ~HostBackend() override;

  absl::string_view name() const override { return "host"; }
  absl::Span<Device* const> devices() const override { return device_ptrs_; }
  using Backend::TransferToDevice;
  absl::StatusOr<std::unique_ptr<Buffer>> TransferToDevice(
      int device_id, const Tensor& value,
      const TransferOptions& options) override;
  absl::StatusOr<Tensor> TransferFromDevice(const Buffer& buffer) override;
  absl::StatusOr<std::unique_ptr<Executable>> Compile(
      const Program& program, const CompileOptions& options) override;
  absl::StatusOr<SpmdOutputs> ExecuteSpmd(
      const Executable& executable, const SpmdAssignment& assignment,
      absl::Span<const std::vector<Buffer*>> per_replica_args) override;
  // K iterations (Backend's default), one execution counted per device.
  absl::StatusOr<SpmdOutputs> ExecuteSpmdLoop(
      const Executable& executable, const SpmdAssignment& assignment,
      absl::Span<const std::vector<std::vector<Buffer*>>> per_iteration_args)
      override;
  absl::Status WriteVariable(int device_id, int slot,
                             const Tensor& value) override;
  absl::StatusOr<Tensor> ReadVariable(int device_id, int slot) const override;
  absl::StatusOr<Profile> CollectProfile() const override;
  void ResetProfile() override;

  // Convenience for tests and the strategy: wraps a host tensor as a buffer on
  // `device_id` without counting a transfer. InvalidArgument for an unknown
  // device.
  absl::StatusOr<std::unique_ptr<Buffer>> WrapTensor(int device_id,
                                                     Tensor value);
  // The tensor inside a buffer made by this backend (no copy, no transfer
  // counted). InvalidArgument for a foreign buffer.
  absl::StatusOr<Tensor> BufferTensor(const Buffer& buffer) const;

 private:
  absl::Status CheckDevice(int device_id, absl::string_view what) const;

  HostBackendOptions options_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<Device*> device_ptrs_;
  // variables_[slot][device], slot-major: the lockstep loop reads one slot
  // for every replica in turn, so those reads are adjacent (pod-scale runs);
  // never iterated. A value is shared, read-only, between the devices that
  // hold the same abstract value (16 bytes per device and slot; a replaced
  // value is a new one), so abstract variables cost no Tensor per device.
  using HeldVariable = std::shared_ptr<const Tensor>;
  absl::flat_hash_map<int, std::vector<HeldVariable>> variables_;
  // Counters since the last ResetProfile; CollectProfile builds the Profile.
  struct DeviceTally {
    int64_t executions = 0;
    int64_t host_to_device_bytes = 0;
    int64_t device_to_host_bytes = 0;
    int64_t cross_core_bytes = 0;
    int64_t collective_bytes = 0;
  };
  std::vector<DeviceTally> profile_;              // per device
  std::vector<std::vector<OpTally>> per_op_;      // [device][op code]
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_HOST_BACKEND_H_
