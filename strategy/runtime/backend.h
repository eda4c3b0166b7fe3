// strategy/runtime/backend.h
//
// The Backend interface, in PJRT's vocabulary: devices, buffers, compile, SPMD
// execution over a device assignment, variable storage, and a Profile.
// Implementations: HostBackend (functional, strategy/runtime/host_backend.h),
// SimBackend (sim/, functional + timing), later a PJRT adapter.
//
//   HostBackend backend(devices);  // std::vector<DeviceDescription>
//   auto exe = backend.Compile(program, {/*num_replicas=*/2,
//                                        /*num_cores_per_replica=*/1});
//   auto a0 = backend.TransferToDevice(/*device_id=*/0, x0);
//   auto a1 = backend.TransferToDevice(/*device_id=*/1, x1);
//   std::vector<std::vector<Buffer*>> args = {{a0->get()}, {a1->get()}};
//   auto outs = backend.ExecuteSpmd(**exe, SpmdAssignment{{{0}, {1}}}, args);
//   absl::StatusOr<Tensor> r0 = backend.TransferFromDevice(*(*outs)[0][0]);
//
// Capabilities a backend lacks return kUnimplemented rather than being silently
// ignored.

#ifndef TPUSIM_STRATEGY_RUNTIME_BACKEND_H_
#define TPUSIM_STRATEGY_RUNTIME_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/units.h"
#include "strategy/runtime/device_description.h"
#include "strategy/runtime/ops.h"
#include "strategy/runtime/profile.h"
#include "strategy/runtime/program.h"
#include "strategy/runtime/tensor.h"

namespace tpusim::runtime {

// One device (a TensorCore, or a megacore chip). Owned by its Backend; pointers
// stay valid for the backend's lifetime. Immutable, thread-safe.
class Device {
 public:
  explicit Device(DeviceDescription description)
      : description_(std::move(description)) {}
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Global id 0..N-1, in (task, ordinal) order.
  int id() const { return description_.id; }
  // The host (TF task) the device hangs off.
  int task() const { return description_.task; }
  // Ordinal on its host (TF's /task:T/device:TPU:ordinal).
  int ordinal() const { return description_.ordinal; }
  // Physical coordinates: (x, y, core) or (x, y, z, core).
  const std::vector<int>& coords() const { return description_.coords; }
  const std::string& kind() const { return description_.kind; }
  const DeviceDescription& description() const { return description_; }
  // "device 3 (task 0, TPU:3, coords (1,1,0), TPU v3 core)".
  std::string DebugString() const;

 private:
  DeviceDescription description_;
};

// A value resident on one device. Owned by the caller (unique_ptr); must not
// outlive the backend that made it. Thread-compatible.
class Buffer {
 public:
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  virtual const Device& device() const = 0;
  // The TRUE dtype and shape of the value (for a dynamic output: its actual
  // size).
  virtual const TensorSpec& spec() const = 0;
  // False for an abstract value (shape and cost, no data).
  virtual bool has_data() const = 0;

 protected:
  Buffer() = default;
};

struct CompileOptions {
  int num_replicas = 1;
  int num_cores_per_replica = 1;
};

// A compiled Program. Owned by the caller; must not outlive its backend.
class Executable {
 public:
  virtual ~Executable() = default;
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  virtual const Program& program() const = 0;
  virtual const CompileOptions& options() const = 0;
  // Per-replica cost of one execution (sum of the op cost rules on bound
  // shapes).
  virtual OpCost cost() const = 0;

 protected:
  Executable() = default;
};

// Which devices run an SPMD step: replica_devices[r][c] is the device id of
// logical core c of replica r (TF's DeviceAssignment.lookup_replicas /
// tpu_device_ordinal, flattened to ids).
struct SpmdAssignment {
  std::vector<std::vector<int>> replica_devices;
  int num_replicas() const { return static_cast<int>(replica_devices.size()); }
};

// Per replica, one buffer per program output (in Program::outputs() order);
// output buffers live on the device of the logical core of the op that produced
// them.
using SpmdOutputs = std::vector<std::vector<std::unique_ptr<Buffer>>>;

// What comes with a value sent to a device.
struct TransferOptions {
  // The host CPU time that produced the value (an input pipeline's declared
  // per-element costs for this batch; >= 0).
  common::Picoseconds host_cost;
};
// InvalidArgument naming a negative host cost; OK otherwise.
absl::Status ValidateTransferOptions(const TransferOptions& options);

class Backend;

// The checks of ExecuteSpmd's contract (Backend::ExecuteSpmd) that every
// backend makes alike, named "ExecuteSpmd <program>": the assignment has
// `replicas` replicas of `cores` devices each, every device one of
// `backend`'s and none twice; every replica passes one argument per
// parameter, not null, owned by the backend (`owned(buffer)`: OK, or the
// backend's error naming the buffer), of the parameter's dtype and rank with
// its static dims and at most its dynamic bounds, on the device of the
// parameter's logical core. The first failing check's InvalidArgument.
absl::Status CheckSpmdCall(
    const Backend& backend, const Program& program, int replicas, int cores,
    const SpmdAssignment& assignment,
    absl::Span<const std::vector<Buffer*>> per_replica_args,
    const std::function<absl::Status(const Buffer&)>& owned);

// A swappable provider of TPU devices.
//
// Thread-compatible: callers serialize calls (an implementation may use threads
// inside). Methods never throw; failures are reported through absl::Status.
class Backend {
 public:
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // Short stable name, e.g. "host". Lifetime: the backend's.
  virtual absl::string_view name() const = 0;

  // All devices, in device-id order. Pointers stay valid for the lifetime of
  // the backend.
  virtual absl::Span<Device* const> devices() const = 0;

  // Copies `value` (possibly abstract) to device `device_id`.
  // Contract:
  //  * InvalidArgument if `device_id` is not a device of this backend, or
  //    options.host_cost is negative (naming it).
  //  * The buffer does not alias `value`'s storage in a way the caller can
  //    observe (Tensor storage is immutable and shared copy-on-write).
  //  * Counts the bytes as host_to_device_bytes of the device's profile.
  //  * A timing backend charges options.host_cost to the host that feeds the
  //    device before the value can cross PCIe; others ignore it.
  virtual absl::StatusOr<std::unique_ptr<Buffer>> TransferToDevice(
      int device_id, const Tensor& value, const TransferOptions& options) = 0;
  // The same with default options (no host cost).
  absl::StatusOr<std::unique_ptr<Buffer>> TransferToDevice(int device_id,
                                                           const Tensor& value) {
    return TransferToDevice(device_id, value, TransferOptions{});
  }

  // Copies a buffer back to the host. An abstract buffer gives an abstract
  // tensor. InvalidArgument if the buffer was made by another backend.
  virtual absl::StatusOr<Tensor> TransferFromDevice(const Buffer& buffer) = 0;

  // Checks and prepares `program` for `options`.
  // Contract:
  //  * InvalidArgument if options.num_replicas / num_cores_per_replica differ
  //    from the program's, are < 1, or need more devices than the backend
  //    has; or if a collective's replica groups do not partition the replicas.
  //  * The executable keeps its own copy of the program.
  virtual absl::StatusOr<std::unique_ptr<Executable>> Compile(
      const Program& program, const CompileOptions& options) = 0;

  // Runs one SPMD step: every replica r runs the program on devices
  // assignment.replica_devices[r], with per_replica_args[r] as its parameters.
  // Contract:
  //  * InvalidArgument if the assignment has the wrong number of replicas or
  //    cores, names an unknown device or a device twice; if the argument
  //    count differs from the parameter count; if an argument's dtype or rank
  //    differs from the parameter's, a static dim differs, a dynamic dim
  //    exceeds its bound, or the buffer does not live on the device of the
  //    parameter's logical core.
  //  * Errors of the computation (integer division by zero, a gather index
  //    out of range, collective operands of different shapes: InvalidArgument;
  //    reading an unset variable: FailedPrecondition) name the program, the
  //    replica and the op. The error of the earliest failing op wins (among
  //    replicas failing at it, the lowest replica); variables may then be
  //    partially updated.
  //  * Blocks until the step is complete. Outputs are in Program::outputs()
  //    order.
  virtual absl::StatusOr<SpmdOutputs> ExecuteSpmd(
      const Executable& executable, const SpmdAssignment& assignment,
      absl::Span<const std::vector<Buffer*>> per_replica_args) = 0;

  // Runs `executable` once per entry of `per_iteration_args` in ONE device
  // call, as TF's TPU training loop runs steps_per_run iterations of the
  // traced body, each reading its inputs from per-device infeed queues.
  // per_iteration_args[k] is iteration k's per_replica_args (as ExecuteSpmd);
  // every iteration has the same signature (static shapes). Returns the
  // outputs of the last iteration.
  // Contract:
  //  * InvalidArgument when there is no iteration; otherwise ExecuteSpmd's
  //    contract holds for every iteration (the first failing one's error,
  //    with "iteration k: " in front; earlier iterations' variable updates
  //    stay).
  //  * Values are exactly those of K ExecuteSpmd calls; the profile counts
  //    one execution per device.
  // The default runs ExecuteSpmd K times (and so counts K executions).
  virtual absl::StatusOr<SpmdOutputs> ExecuteSpmdLoop(
      const Executable& executable, const SpmdAssignment& assignment,
      absl::Span<const std::vector<std::vector<Buffer*>>> per_iteration_args);

  // Variable storage: one buffer per (device, slot). Programs read and write it
  // through variable_read / variable_assign / variable_assign_add; the strategy
  // initializes it here. InvalidArgument for an unknown device. Writing
  // replaces any previous value (any spec).
  virtual absl::Status WriteVariable(int device_id, int slot,
                                     const Tensor& value) {
    return absl::UnimplementedError(absl::StrCat(name(), ": WriteVariable"));
  }
  // NotFound if the slot was never written on that device.
  virtual absl::StatusOr<Tensor> ReadVariable(int device_id, int slot) const {
    return absl::UnimplementedError(absl::StrCat(name(), ": ReadVariable"));
  }

  // Counters (and, for timing backends, spans) of everything run since
  // construction or the last ResetProfile(). Unimplemented for backends without
  // counters.
  virtual absl::StatusOr<Profile> CollectProfile() const {
    return absl::UnimplementedError(absl::StrCat(name(), ": CollectProfile"));
  }
  virtual void ResetProfile() {}

 protected:
  Backend() = default;
};

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_BACKEND_H_
