// sim/sim_backend.h
//
// SimBackend: the Backend that runs TPUStrategy programs on a simulated TPU
// slice. Values are computed by the host kernels (an internal HostBackend), so
// they are bit-identical to HostBackend's; abstract tensors are timed and
// never computed. Time comes from the pod model: kernels on each device
// (sim/chip/kernel_timing.h), collectives as real algorithms on the ICI
// network (sim/net, a SystemC model), PCIe infeed per host and a host-loop
// overhead per device call. The simulated clock runs on across calls.
//
//   TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<SimBackend> sim,
//                           SimBackend::Create("v4-32"));
//   TPUSIM_ASSIGN_OR_RETURN(TPUClusterResolver resolver,
//                           TPUClusterResolver::Create(*sim, "v4-32"));
//   ... run a TPUStrategy on *sim exactly as on HostBackend ...
//   absl::StatusOr<Profile> p = sim->CollectProfile();  // spans, links, steps
//
// One SimBackend per process (SystemC elaborates once): a second Create is
// FailedPrecondition.
//
// The step model (tpusim's):
// * A call starts on the host at the current simulated time and pays the
//   host-loop overhead H once; each device then runs its ops in program order
//   as kernels, starting no earlier than its arguments' infeed arrival.
// * Ops run as the kernels sim/compile makes of them (fusions): max(MXU,
//   vector, HBM) time plus the issue overhead; parameter, constant,
//   replica_id, reshape and variable_read take no time.
// * A collective starts (on sim/net) as soon as its operand is ready on each
//   member and the device goes on with independent ops; the first op that
//   uses the result waits for it (the wait is exposed collective time).
//   A value used on another logical core is copied over the network: a
//   point-to-point transfer (sim/net's permute, one pair per replica,
//   matched by a channel) from the value's device, started on both
//   devices when the copy is ready on the receiving core; it shares the
//   links (or the on-chip path between the two cores of a v2/v3 chip) with
//   everything else, appears in the link counters, and reads and writes
//   HBM as a collective's chunks do. The receiving core waits for its
//   arrival (a "collective" span named after the copy).
// * The walk: each (replica, core) runs its kernels in program order until
//   it blocks on another core's kernel or on a collective's end; the
//   network runs only when every one is finished or blocked, and only to
//   the first end one waits for, so every collective start reaches the
//   network at or after its clock (a late start cannot happen; one would
//   be an error naming the collective, the device and both times).
// * Arguments are a device's infeed: per call iteration, the arguments a
//   device reads form one batch whose host work (TransferOptions::host_cost,
//   the input pipeline's declared costs) the device's host pipeline does
//   first, with its threads and prefetch depth; the batch then crosses the
//   chip's PCIe link at the preset's rate (sim/host/host_model.h). The host
//   pipeline runs free from simulated time 0, limited only by the prefetch
//   depth (tpusim's choice: TF's iterator prefetches from its creation). The
//   first kernel that reads an argument waits for its batch: "input" while
//   the pipeline had not produced it, "infeed" while it was queued for or
//   crossing PCIe.
// * HBM holds the variables, the arguments and the peak live set of the
//   program; a call that does not fit is ResourceExhausted naming the device,
//   the bytes, the capacity and the five largest live values.
// * HBM bandwidth is conserved: each device's HBM is one timeline of
//   reservations (sim/chip/chip.h HbmArbiter), first reserved, first served,
//   never more than its rate at any instant. The infeed keeps the PCIe rate
//   of the device's HBM (a batch is written at that rate at most, so it
//   never waits); the kernels and the collectives share the rest: the
//   kernels reserve their bytes as the walk times them (at the pace of
//   their compute), a collective's chunks what they read and write as the
//   network moves them (the chips' data path), and a chunk the HBM slows
//   leaves (or is ready) that much later: the network waits for the DMA.
//
// Timing is settled lazily (values are not: they are computed when the call
// is made): a call is timed once every device fed so far has prefetch_depth
// more batches queued behind it, or when something observes the timeline:
// Now(), Stats(), CollectProfile(), ResetProfile() (or 16 calls wait: a bound
// on memory, tpusim's choice). When a call is timed does not change its
// times (nothing a later call adds reaches back into its timeline), so
// observing the timeline does not change it. An error of the timing walk (a
// simulated clock past int64 picoseconds, a collective that would start
// before the network's clock, a pod invariant that does not hold) is
// returned by the next Execute or CollectProfile, naming the call it came
// from, and every later one.

#ifndef TPUSIM_SIM_SIM_BACKEND_H_
#define TPUSIM_SIM_SIM_BACKEND_H_

#include <deque>
#include <map>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/units.h"
#include "sim/chip/chip.h"
#include "sim/chip/chip_preset.h"
#include "sim/chip/kernel_timing.h"
#include "sim/chip/model_constants.h"
#include "sim/compile/compile.h"
#include "sim/critical_path.h"
#include "sim/host/host_model.h"
#include "sim/memory_estimate.h"
#include "sim/net/topology.h"
#include "strategy/runtime/backend.h"
#include "strategy/runtime/host_backend.h"
#include "strategy/runtime/slice.h"

namespace tpusim::proto {
class PodSpec;
}  // namespace tpusim::proto

namespace tpusim::sim {

class SimExecutable;
struct SimSchedule;
class HbmDataPath;
class SimPod;

struct SimBackendOptions {
  // Wraparound of the torus (sheet C.3 rules by default).
  net::WrapMode wrap = net::WrapMode::kGeneration;
  // Paid once per device call: model_constants.h host_loop_overhead (chosen,
  // 100 us; the sheet has no figure).
  common::Picoseconds host_loop_overhead =
      ModelConstantTime("host_loop_overhead");
  // Record spans (a span per kernel, wait and host-loop overhead) for the
  // traced devices; off: none at all. Counters, steps and each device's time
  // per span category are always kept, for every device.
  bool record_spans = true;
  // Which devices keep their spans (the rest are aggregated into their
  // counters and per-category time): every device with `trace_all_devices`;
  // else the devices of `trace_devices` (ids 0..N-1, no repeats), device 0,
  // and, after each step (an iteration of a device call), the step's
  // critical-path device (the one whose clock ended the step last; the
  // lowest id among equals), then its slowest and fastest devices by the
  // kernel time of the step (the lowest id among equals), each added while
  // fewer than `max_auto_traced_devices` devices are traced. A device added
  // after the first step has its spans from that step on. A pod of at most
  // max_auto_traced_devices devices keeps them all.
  bool trace_all_devices = false;
  std::vector<int> trace_devices;
  int max_auto_traced_devices = 16;
  // Spans are kept for the first this many steps (iterations of device
  // calls) since construction or ResetProfile, so a long run's memory does
  // not grow with its steps; tpusim's choice.
  int64_t max_traced_steps = 1000;
  // A limit on the memory of this process the run may need, checked on the
  // first call of each program before its values are computed and timed
  // (sim/memory_estimate.h; ResourceExhausted above it); 0: none.
  // `expected_steps` (0: unknown, taken as max_traced_steps) sizes the
  // spans the estimate counts.
  int64_t memory_limit_bytes = 0;
  int64_t expected_steps = 0;
  // Worker threads of the internal host backend (wall-clock speed only).
  int host_threads = 2;
  // The simulated hosts' input pipelines (sim/host/host_model.h): CPU threads
  // sharing each batch's declared host work, and the batches per device in
  // flight ahead of it (>= 1 each; InvalidArgument otherwise).
  int input_threads = 1;
  int prefetch_depth = 2;
  // Host threads that run the ICI network model (sim/net
  // NetworkOptions::threads): 0 = one per hardware thread. Wall-clock speed
  // only; the results are identical for every value.
  int sim_threads = 0;
  // Check the pod's physical invariants after every timed call (CheckInvariants
  // below); a violation is the call's timing error. On in debug builds.
#ifdef NDEBUG
  bool check_invariants = false;
#else
  bool check_invariants = true;
#endif
};

// A program compiled by another compiler than sim/compile (the XLA:TPU
// compiler, sim/xla/hlo_import.h): its kernels, one logical core, and per
// kernel the program parameters it reads (its infeed). Kernels of such a
// program have no op_ids: collectives carry their op, groups and bytes.
struct ExternalCompiledProgram {
  CompiledProgram compiled;
  std::vector<std::vector<int>> kernel_parameters;
  // C > 1: the program has C logical cores per replica and `compiled` is one
  // module that every device runs (XLA replica r * C + c on the device of
  // replica r's core c; pjrt/stablehlo_emitter.h): the walk times it as
  // R * C replicas of one core, whose collectives' groups and permute pairs
  // are those XLA replica ids. `compiled.memory` then has C entries.
  int xla_replicas_per_replica = 1;
};
using ExternalCompiler =
    std::function<absl::StatusOr<ExternalCompiledProgram>(
        const runtime::Program& program, const runtime::SliceLayout& layout)>;

class SimBackend final : public runtime::Backend {
 public:
  // `slice`: a slice name ("v4-32", "v5litepod-16"; runtime::ParseSlice).
  // Errors: the slice's (InvalidArgument naming it and the allowed names);
  // FailedPrecondition for a second SimBackend in this process.
  static absl::StatusOr<std::unique_ptr<SimBackend>> Create(
      absl::string_view slice, SimBackendOptions options = {});
  // From a laid-out slice (e.g. runtime::LayoutChipMesh for a custom shape).
  static absl::StatusOr<std::unique_ptr<SimBackend>> Create(
      runtime::SliceLayout layout, SimBackendOptions options = {});
  // From a PodSpec (sim/pod.proto): a slice name, or a generation and shape,
  // custom numbers replacing the preset's, and the model options.
  // InvalidArgument naming the field and value: both or neither of slice and
  // generation + shape, a shape the generation does not allow, a custom
  // number <= 0, a bad wrap mode, a negative host-loop overhead.
  static absl::StatusOr<std::unique_ptr<SimBackend>> Create(
      const proto::PodSpec& spec);
  ~SimBackend() override;

  // Programs compiled from now on are compiled by `compiler` (named `name` in
  // errors) instead of sim/compile; values still come from the host backend.
  void SetCompiler(ExternalCompiler compiler, std::string name) {
    compiler_ = std::move(compiler);
    compiler_name_ = std::move(name);
  }

  absl::string_view name() const override { return "sim"; }
  absl::Span<runtime::Device* const> devices() const override {
    return host_->devices();
  }
  using runtime::Backend::TransferToDevice;
  // The value's host cost (options.host_cost) is charged to the input
  // pipeline of the device's host (sim/host/host_model.h) when a call uses
  // the buffer.
  absl::StatusOr<std::unique_ptr<runtime::Buffer>> TransferToDevice(
      int device_id, const runtime::Tensor& value,
      const runtime::TransferOptions& options) override;
  absl::StatusOr<runtime::Tensor> TransferFromDevice(
      const runtime::Buffer& buffer) override;
  absl::StatusOr<std::unique_ptr<runtime::Executable>> Compile(
      const runtime::Program& program,
      const runtime::CompileOptions& options) override;
  absl::StatusOr<runtime::SpmdOutputs> ExecuteSpmd(
      const runtime::Executable& executable,
      const runtime::SpmdAssignment& assignment,
      absl::Span<const std::vector<runtime::Buffer*>> per_replica_args)
      override;
  // K iterations of the body in one call: the host-loop overhead once, each
  // iteration's arguments usable when their infeed has arrived.
  absl::StatusOr<runtime::SpmdOutputs> ExecuteSpmdLoop(
      const runtime::Executable& executable,
      const runtime::SpmdAssignment& assignment,
      absl::Span<const std::vector<std::vector<runtime::Buffer*>>>
          per_iteration_args) override;
  absl::Status WriteVariable(int device_id, int slot,
                             const runtime::Tensor& value) override;
  absl::StatusOr<runtime::Tensor> ReadVariable(int device_id,
                                               int slot) const override;
  absl::StatusOr<runtime::Profile> CollectProfile() const override;
  void ResetProfile() override;

  // What a run of `executable` (compiled here, for its replicas) will need
  // of this process's memory; `real_values`: its arguments have data.
  // InvalidArgument for a foreign executable.
  absl::StatusOr<MemoryEstimate> EstimateMemory(
      const runtime::Executable& executable, bool real_values) const;
  // The largest estimate of the programs called so far (checked against
  // memory_limit_bytes when one is set).
  int64_t memory_estimate_bytes() const { return memory_estimate_bytes_; }
  // Sets SimBackendOptions::memory_limit_bytes and expected_steps.
  void SetMemoryLimit(int64_t limit_bytes, int64_t expected_steps) {
    options_.memory_limit_bytes = limit_bytes;
    options_.expected_steps = expected_steps;
  }

  const runtime::SliceLayout& layout() const { return layout_; }
  const ChipPreset& preset() const { return preset_; }
  const DeviceRates& rates() const { return rates_; }
  // Simulated time now (the end of the last call; settles the timeline).
  common::Picoseconds Now() const;

  // Work simulated since construction (speed figures for benchmarks).
  struct SimStats {
    int64_t kernels = 0;          // device kernels timed
    int64_t collectives = 0;      // collective member starts
    int64_t network_events = 0;   // sim/net chip event-queue events
    int64_t network_messages = 0;
    int network_threads = 1;               // threads the network runs on
    int64_t network_parallel_batches = 0;  // times run on more than one
    // Collective member starts that the timing walk placed before the
    // network's clock: impossible by design (the walk runs the network only
    // when every device is finished or blocked, and only to the first end
    // one waits for); one would be the call's timing error, naming the
    // collective, the device and both times. Asserted zero by the data- and
    // model-parallel tests.
    int64_t late_starts = 0;
  };
  SimStats Stats() const;

 private:
  struct Infeed;
  ExternalCompiler compiler_;
  std::string compiler_name_;
  // A call whose values were computed and whose timing waits (Settle).
  struct PendingCall {
    int64_t number = 0;  // 1, 2, ... in call order
    std::shared_ptr<const SimSchedule> exe;
    runtime::SpmdAssignment assignment;
    // Per iteration: device -> the number of its batch in the host model.
    std::vector<std::map<int, int64_t>> batches;
    // Per device: the batches queued in the host model up to this call.
    std::vector<int64_t> added;
  };
  SimBackend(runtime::SliceLayout layout, const ChipPreset& preset,
             SimBackendOptions options);
  static absl::StatusOr<std::unique_ptr<SimBackend>> CreateWithPreset(
      runtime::SliceLayout layout, const ChipPreset& preset,
      SimBackendOptions options);
  absl::StatusOr<runtime::SpmdOutputs> Execute(
      const runtime::Executable& executable,
      const runtime::SpmdAssignment& assignment,
      absl::Span<const std::vector<std::vector<runtime::Buffer*>>> iterations,
      bool loop);
  // Times the waiting calls that are ready (all of them with `all`), oldest
  // first. The first error is kept and returned from then on.
  absl::Status Settle(bool all) const;
  // The timing walk of one call (K iterations).
  absl::Status Simulate(const PendingCall& call) const;
  // The pod's invariants at the end of the timed calls, with `elapsed` the
  // simulated time so far: every link's busy time <= elapsed; every chip's
  // bytes sent over its ICI links <= its links x B x elapsed; every device's
  // HBM bytes <= its rate x elapsed, its HBM use at no instant above its rate
  // and no reservation before its forgotten horizon; every kernel >= its
  // roofline. (Each collective >= its lower bound is checked as it ends, and
  // a start before its cause is always an error.) FailedPrecondition naming
  // the device or link, the bound and the excess.
  absl::Status CheckInvariants() const;

  runtime::SliceLayout layout_;
  ChipPreset preset_;  // the generation's, with any custom numbers
  DeviceRates rates_;
  SimBackendOptions options_;
  std::unique_ptr<runtime::HostBackend> host_;
  // The chips' side of the collectives (their HBM traffic); it outlives the
  // network, which calls it.
  std::unique_ptr<HbmDataPath> data_path_;
  std::unique_ptr<SimPod> pod_;
  // The hosts' input pipelines and PCIe links.
  std::unique_ptr<SliceHosts> hosts_;
  // Transferred arguments not yet used by a call: their device, bytes and
  // host work.
  struct Infeed {
    int device;
    int64_t bytes;
    common::Picoseconds host_cost;
  };
  absl::flat_hash_map<const runtime::Buffer*, Infeed> infeed_;
  // Variable bytes per (device, slot).
  std::vector<std::map<int, int64_t>> variable_bytes_;
  // The timeline, settled lazily by const observers (Settle): mutable.
  // Timing counters, spans and steps since the last ResetProfile (the
  // Profile proto is built from them by CollectProfile).
  struct Span {
    int device_id;  // -1 for a host span
    std::string name;
    int64_t start_ps;
    int64_t end_ps;
    const char* category;
    int host = -1;
    // A kernel's span (trace args): its cost-rule FLOPs, HBM bytes (a
    // collective's: its bytes per device) and the program ops fused in it.
    int64_t flops = 0;
    int64_t bytes = 0;
    int32_t fused_ops = 0;
  };
  // A collective of a traced device from its start to its done (the exposed
  // part is the wait at the done), for the trace and the report.
  struct Flight {
    int device_id;
    std::string name;       // the start/done pair's op ("all_reduce.7")
    std::string op;         // "all_reduce", ...
    std::string algorithm;  // "ring", ... ("none" for a group of one)
    int64_t bytes;
    int64_t start_ps;
    int64_t end_ps;
    int64_t exposed_ps;
  };
  // A collective of the step being timed (kept by EndStep for the traced
  // devices): `kernel` is its done kernel's index.
  struct StepFlight {
    int32_t device;
    int32_t kernel;
    int64_t start_ps;
    int64_t end_ps;
    int64_t exposed_ps;
    const char* algorithm;
  };
  // A device span of the step being timed, before the step's traced devices
  // are known: `name` is a kernel index of the call's schedule, or one of
  // the kName* values below.
  // 24 bytes: every device's spans are kept while the traced devices are
  // chosen (at 4096 devices, thousands of spans each).
  struct StepSpan {
    int64_t start_ps;
    int64_t end_ps;
    int32_t device;
    int32_t name : 29;
    uint32_t category : 3;  // index into kSpanCategories
  };
  static_assert(sizeof(StepSpan) == 24, "a step span is 24 bytes");
  static constexpr int32_t kNameHostLoop = -1;
  static constexpr int32_t kNameInputPipeline = -2;
  static constexpr int32_t kNameInfeed = -3;
  // Records a device span of the step being timed: its time goes to the
  // device's per-category total, the span to step_spans_ (record_spans).
  void AddStepSpan(int device, int32_t name, common::Picoseconds start,
                   common::Picoseconds end, const char* category) const;
  // Ends a step: picks the devices to trace (see trace_all_devices) from the
  // step's spans and device clocks, and keeps those devices' spans.
  void EndStep(const SimSchedule& schedule,
               absl::Span<const common::Picoseconds> clock,
               absl::Span<const int> device_of_slot) const;
  struct Step {
    int64_t start_ps = 0;
    int64_t end_ps = 0;
    int64_t steps = 1;
    int64_t exposed_collective_ps = 0;
    int64_t hidden_collective_ps = 0;
    int64_t infeed_wait_ps = 0;
    int64_t input_wait_ps = 0;
    int64_t host_overhead_ps = 0;
    // The call's critical path (sim/critical_path.h) by category.
    CriticalPathTime critical_path_ps = {};
  };
  // The chips (sim/chip/chip.h): per device its HBM arbitration and
  // counters; the chip and core of each device.
  mutable std::vector<ChipModel> chips_;
  std::vector<std::pair<int, int>> chip_core_;
  DeviceCounters& counters(int device) const {
    return chips_[chip_core_[device].first].counters(chip_core_[device].second);
  }
  HbmArbiter& hbm(int device) const {
    return chips_[chip_core_[device].first].hbm(chip_core_[device].second);
  }
  mutable std::vector<Span> spans_;  // of the traced devices and their hosts
  // Of the step being timed (a deque: no copy and no doubling as it grows).
  mutable std::deque<StepSpan> step_spans_;
  mutable std::vector<Flight> flights_;          // of the traced devices
  mutable std::vector<StepFlight> step_flights_;  // of the step being timed
  // Per call (the first kMaxLinkSamples): every link's busy ps so far.
  static constexpr int kMaxLinkSamples = 64;  // chosen
  mutable std::vector<std::vector<int64_t>> link_samples_;
  // Per device: its spans are kept; how many are.
  mutable std::vector<char> traced_;
  mutable int num_traced_ = 0;
  mutable int64_t traced_steps_ = 0;    // steps whose spans were kept
  mutable int64_t untraced_steps_ = 0;  // later steps (max_traced_steps)
  mutable std::vector<Step> steps_;
  mutable SimStats stats_;
  mutable common::Picoseconds now_;
  // Calls made but not yet timed, oldest first; calls made so far.
  mutable std::deque<PendingCall> pending_;
  int64_t calls_ = 0;
  // The first error of the timing walk (sticky).
  mutable absl::Status settle_error_;
  // Per device: the infeed bytes written into its HBM.
  mutable std::vector<double> infeed_bytes_;

  // The schedules whose memory was checked (memory_limit_bytes).
  std::vector<const SimSchedule*> memory_checked_;
  int64_t memory_estimate_bytes_ = 0;
  // Link counters at the last ResetProfile (the network's run on).
  std::vector<std::pair<int64_t, int64_t>> link_base_;
};

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_SIM_BACKEND_H_
