// strategy/runtime/pjrt/pjrt_backend.h
//
// PjrtBackend: the Backend over a real PJRT C API plugin (XLA's CPU plugin in
// CI, libtpu on a TPU VM). Programs are emitted as StableHLO
// (stablehlo_emitter.h) and compiled by the plugin; values and measured wall
// time come from the plugin's devices.
//
//   PjrtBackendOptions o;
//   o.plugin_path = DefaultPjrtPluginPath();
//   o.devices = layout.devices;           // the scenario's slice
//   o.cpu_device_count = o.devices.size();  // the CPU plugin only
//   TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<PjrtBackend> b, PjrtBackend::Create(o));
//
// Devices: the plugin must show exactly as many addressable devices as the
// slice has (FailedPrecondition naming both counts otherwise); slice device i
// runs on plugin device i. The slice layout gives ids, tasks and coordinates
// (the CPU plugin gives no coordinates).
//
// Execution: ExecuteSpmd is ONE PJRT execute over all replicas (collectives run
// inside the plugin). Model parallelism: replica r's core c is XLA replica
// r*C + c on device assignment.replica_devices[r][c] (the emitter's mapping). ExecuteSpmdLoop runs K executes (not a device loop) and
// counts one execution per device per call, as HostBackend does. An
// executable is compiled for a device assignment the first time it runs on it
// (Compile compiles for replica r -> device r, so compile errors surface at
// Compile). Variables: one plugin buffer per (device, slot), passed to every
// execute and replaced by its result. Dynamic dims: padded to the bound on the
// host, true sizes passed as i32 arguments (see the emitter).
//
// Profile: executions, transfer bytes, cross-core and collective bytes and
// the program's op counters (cost rules, per execution) per device, and one StepProfileProto per device call
// whose start_ps/end_ps are MEASURED wall time since the backend was created.
// Spans, MXU/HBM figures and collective breakdowns are not measured (absent).
//
// Errors carry the plugin's code and message. Abstract tensors and string
// tensors are InvalidArgument. Every plugin object is destroyed on every path;
// live_objects() lets tests check it.

#ifndef TPUSIM_STRATEGY_RUNTIME_PJRT_PJRT_BACKEND_H_
#define TPUSIM_STRATEGY_RUNTIME_PJRT_PJRT_BACKEND_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "strategy/runtime/backend.h"
#include "strategy/runtime/device_description.h"

struct PJRT_Client;
struct PJRT_Device;
struct PJRT_Buffer;

namespace tpusim::runtime::pjrt {

class PjrtPlugin;
class PjrtBuffer;

// The plugin path: $TPUSIM_PJRT_PLUGIN when set and non-empty, else the plugin
// found at configure time (compiled in; "" when none was found).
std::string DefaultPjrtPluginPath();

struct PjrtBackendOptions {
  std::string plugin_path;
  // The slice's devices (ids 0..N-1 in order).
  std::vector<DeviceDescription> devices;
  // XLA CPU plugin create option "cpu_device_count"; unset for other plugins.
  std::optional<int64_t> cpu_device_count;
  // A TPU plugin (libtpu): Create first looks for a TPU among the PCI devices
  // (vendor 0x1ae0, Google, under `pci_devices_dir`) and fails fast with
  // FailedPrecondition when there is none, instead of letting libtpu wait for
  // a cloud metadata server.
  bool requires_tpu = false;
  std::string pci_devices_dir = "/sys/bus/pci/devices";
};

// What the plugin reports about one of its devices.
struct PluginDeviceInfo {
  int64_t id = 0;
  std::string kind;
  std::string debug_string;
  // TPU plugins (libtpu): the chip's coordinates and the core on the chip
  // (device attributes "coords" and "core_on_chip"); empty / -1 otherwise.
  std::vector<int64_t> coords;
  int64_t core_on_chip = -1;
};

class PjrtBackend final : public Backend {
 public:
  static absl::StatusOr<std::unique_ptr<PjrtBackend>> Create(
      PjrtBackendOptions options);
  ~PjrtBackend() override;

  absl::string_view name() const override { return "pjrt"; }
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
  absl::StatusOr<SpmdOutputs> ExecuteSpmdLoop(
      const Executable& executable, const SpmdAssignment& assignment,
      absl::Span<const std::vector<std::vector<Buffer*>>> per_iteration_args)
      override;
  absl::Status WriteVariable(int device_id, int slot,
                             const Tensor& value) override;
  absl::StatusOr<Tensor> ReadVariable(int device_id, int slot) const override;
  absl::StatusOr<Profile> CollectProfile() const override;
  void ResetProfile() override;

  // Compiles StableHLO text for replicas 0..num_replicas-1 on devices
  // 0..num_replicas-1 and discards the result: the plugin's verdict on `text`.
  // A compile error names the emitted line the plugin points at.
  absl::Status CheckStableHlo(const std::string& text, int num_replicas);

  const PjrtPlugin& plugin() const { return *plugin_; }
  const std::vector<PluginDeviceInfo>& plugin_devices() const {
    return plugin_devices_;
  }
  // Plugin objects (buffers, executables, events, clients) made through this
  // process's PjrtBackends and not yet destroyed.
  int64_t live_objects() const;

  // Internal (PjrtBuffer, PjrtExecutable).
  void DestroyBuffer(PJRT_Buffer* buffer) const;
  void DestroyLoadedExecutable(void* executable) const;

 private:
  PjrtBackend() = default;
  absl::Status CheckDevice(int device_id, absl::string_view what) const;
  absl::StatusOr<PJRT_Buffer*> Upload(int device_id, const Tensor& value) const;
  absl::StatusOr<Tensor> Download(PJRT_Buffer* buffer, DType dtype,
                                  const Shape& device_shape) const;
  absl::StatusOr<void*> CompileFor(const std::string& text,
                                   const std::vector<int>& replica_devices,
                                   const std::string& program_name);
  int64_t NowPs() const;

  PjrtPlugin* plugin_ = nullptr;
  PJRT_Client* client_ = nullptr;
  std::vector<PJRT_Device*> pjrt_devices_;  // slice device i -> plugin device
  std::vector<PluginDeviceInfo> plugin_devices_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<Device*> device_ptrs_;
  std::map<std::pair<int, int>, std::unique_ptr<PjrtBuffer>> variables_;
  std::chrono::steady_clock::time_point epoch_;
  struct DeviceTally {
    int64_t executions = 0;
    int64_t host_to_device_bytes = 0;
    int64_t device_to_host_bytes = 0;
    int64_t cross_core_bytes = 0;
    int64_t collective_bytes = 0;
    std::map<std::string, OpCounters> per_op;
    OpCounters total;
  };
  mutable std::vector<DeviceTally> tally_;
  std::vector<StepProfile> steps_;
};

}  // namespace tpusim::runtime::pjrt

#endif  // TPUSIM_STRATEGY_RUNTIME_PJRT_PJRT_BACKEND_H_
