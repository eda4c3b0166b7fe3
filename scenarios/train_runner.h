// scenarios/train_runner.h
//
// `tpusim run`: trains a scenario's workload with a real TPUStrategy on the
// scenario's backend ("sim" by default) and returns the backend's Profile.
//
//   TPUSIM_ASSIGN_OR_RETURN(LoadedScenario s, LoadScenarioFile(path));
//   TPUSIM_ASSIGN_OR_RETURN(TrainResult r, RunTraining(s, {}));
//   r.profile.steps(0) ...
//
// Without a `pipeline` the input is synthetic: every step each replica gets a
// batch of global_batch_size / num_replicas examples of the workload's input
// types. With one, the pipeline is built and distributed through the
// TPUStrategy exactly as inspect-input does (api, shard policy, semantics;
// DistributeScenarioPipeline) and each step's per-replica elements are the
// step's inputs: the element (flattened: dict keys sorted) must match the
// workload's inputs (mlp: features float32[b, in], labels float32[b, out];
// deep_mlp: features [b, width]) with b at most global_batch_size / replicas,
// else InvalidArgument naming the component and the expected type. The run
// stops after run.steps steps or at the end of the data (partial and empty
// per-replica batches included). Abstract runs replace the elements' values by
// their shapes; with real_values the mlp returns per-example losses and the
// reported loss is strategy.reduce(MEAN, losses, axis=0): the real number of
// examples, whatever the batches held.
// By default inputs and variables are abstract (timed, never computed: pod
// scale); `run.real_values` gives deterministic real values from `run.seed`
// (small configs), and the report shows the loss. Workloads (WorkloadNames()):
//   mlp, resnet50, bert, transformer_lm  models/ (models/workload.h): forward,
//        hand-written backward, gradients all-reduced in buckets as backward
//        produces them, SGD; parameters as the models registry defines them.
//   deep_mlp  layers (int, default 4), width (int, default 1024), dtype
//        ("bfloat16" default, or "float32"): tanh layers of width x width
//        weights, each layer's gradient all-reduced (SUM) as backward
//        produces it; a simple timing study. model_parallel ("none"
//        default, or "layers"): with several cores per replica (a device
//        assignment), layer l runs on logical core l mod cores.
// Each parameter is checked: an unknown name or a value of the wrong type is
// InvalidArgument naming it and what is allowed.

#ifndef TPUSIM_SCENARIOS_TRAIN_RUNNER_H_
#define TPUSIM_SCENARIOS_TRAIN_RUNNER_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scenarios/scenario_loader.h"
#include "sim/sim_backend.h"
#include "strategy/runtime/backend.h"
#include "strategy/runtime/profile.h"
#include "strategy/runtime/program.h"

namespace tpusim::scenarios {

// A user's module (run.program) compiled for the run's slice by another
// compiler and imported (TrainOptions::compile_module).
struct ModuleProgram {
  sim::ExternalCompiledProgram imported;
  // Model FLOPs of one step on one device (the compiler's cost analysis).
  double flops_per_device = 0;
};

struct TrainOptions {
  // Overrides run.backend when not empty.
  std::string backend;
  // The "pjrt" backend's plugin ("" = the default: $TPUSIM_PJRT_PLUGIN or the
  // plugin found at configure time).
  std::string pjrt_plugin;
  // Where the scenario's synthetic file sets are written (default:
  // DefaultDataDir()).
  std::string data_dir;
  // Called after every device call with the steps done and the total.
  std::function<void(int64_t done, int64_t total)> progress;
  // Added to run.pod.options (sim backend): the devices whose spans are kept
  // besides the default ones, or all of them (tpusim run --trace-devices).
  std::vector<int> trace_devices;
  bool trace_all_devices = false;
  // A limit on this process's memory that the run's estimate
  // (sim/memory_estimate.h) must not pass, checked before the pod is built
  // and before each program's first call on the sim backend:
  // ResourceExhausted naming the estimate's largest parts. 0: none.
  int64_t memory_limit_bytes = 0;
  // Trace and compile the scenario's step for its slice without running it
  // (`tpusim compile SCENARIO`): the host backend with abstract values and
  // synthetic inputs of the workload's per-replica types (a pipeline's
  // batches are at most that), one traced step, no timing. TrainResult::
  // step_program is the traced per-replica program; steps and profile are
  // empty.
  bool plan_only = false;
  // Called with each program the strategy compiles, before the backend
  // compiles it; a non-OK status ends the run with that status (tpusim
  // compile --compiler xla-tpu takes the training step this way).
  std::function<absl::Status(const runtime::Program&,
                             const runtime::CompileOptions&)>
      on_compile;
  // The sim backend compiles with this instead of sim/compile (tpusim run
  // --compiler xla-tpu: scenarios/xla_tpu_step.h), named `compiler` in the
  // result and the report. Any other backend with it is InvalidArgument.
  sim::ExternalCompiler sim_compiler;
  std::string compiler = "tpusim";
  // Shown in the report under the compiler ("libtpu 0.0.30 ...").
  std::string compiler_detail;
  // run.program: compiles the module (the path resolved against the
  // scenario's directory) for the slice (tpusim run --compiler xla-tpu sets
  // it: scenarios/xla_tpu_step.h). The run is then `steps` calls of that
  // module on the sim backend over every device of the slice, with no inputs
  // (its parameters are resident) and no variables. Without it a scenario
  // with run.program is InvalidArgument saying it needs --compiler xla-tpu;
  // with run.program, a `pipeline`, run.device_assignment or a backend other
  // than sim is InvalidArgument naming the field. steps_per_run applies (a
  // device loop of the module).
  std::function<absl::StatusOr<ModuleProgram>(
      const std::string& path, const runtime::SliceLayout& layout)>
      compile_module;
};

// What fed the workload.
struct InputSummary {
  // False: synthetic batches (no `pipeline`).
  bool pipeline = false;
  std::string api;               // "DISTRIBUTE_DATASET", ...
  std::string semantics;         // "2.2" / "2.4" / "2.21"
  std::string requested_policy;  // the scenario's shard_policy
  int workers = 0;
  // Per input worker: the shard policy applied and why
  // (data::WorkerExplanation).
  std::vector<std::string> applied_policy;
  std::vector<std::string> shard_reason;
  // Examples (rows) each replica received over the run, and all replicas'
  // rows in the last step.
  std::vector<int64_t> examples_per_replica;
  int64_t examples_last_step = 0;
  int64_t steps_run = 0;
  int64_t steps_pulled = 0;  // elements taken from the iterator
  // The data ended before run.steps steps.
  bool ended = false;
  // The loss is strategy.reduce(MEAN, per-example losses, axis=0).
  bool per_example_loss = false;
};

struct TrainResult {
  std::string backend;
  // Whose schedule the sim backend timed: "tpusim" (sim/compile) or
  // "xla-tpu"; and what the options said of it.
  std::string compiler = "tpusim";
  std::string compiler_detail;
  std::string slice;
  std::string generation;
  int num_chips = 0;
  int num_devices = 0;
  int devices_per_chip = 1;
  int num_replicas = 0;
  int64_t global_batch = 0;
  int64_t steps = 0;
  int steps_per_run = 1;
  // Model FLOPs of one global step (all replicas), from the workload.
  double model_flops_per_step = 0;
  // Per device: peak FLOP/s (the MXU identity), HBM bytes/s and capacity.
  double peak_flops_per_device = 0;
  double hbm_bytes_per_second_per_device = 0;
  int64_t hbm_capacity_per_device = 0;
  // The mean loss over replicas of the last step (real values only; NaN for
  // abstract runs).
  double last_loss = std::nan("");
  InputSummary input;
  // Model parallelism: logical cores per replica; bytes moved between a
  // replica's cores (the profile's cross_core_bytes), the part of them that
  // crossed ICI (the cores are on different chips) and the largest chip
  // distance (sum over x, y, z of |difference|) between a replica's cores.
  int cores_per_replica = 1;
  int64_t cross_core_bytes = 0;
  int64_t cross_core_ici_bytes = 0;
  int max_pair_chip_distance = 0;
  // The simulator's work (sim backend only; sim::SimBackend::SimStats): device
  // kernels timed, collective member starts, network events.
  int64_t sim_kernels = 0;
  int64_t sim_collectives = 0;
  int64_t sim_network_events = 0;
  // The estimate of this process's memory for the run (sim/memory_estimate.h;
  // the sim backend's for its programs, else the pod's before it was built).
  int64_t memory_estimate_bytes = 0;
  int64_t sim_late_starts = 0;  // SimStats::late_starts
  runtime::Profile profile;
  // TrainOptions::plan_only: the step as TPUStrategy traced it.
  std::shared_ptr<const runtime::Program> step_program;
};

std::vector<std::string> WorkloadNames();

absl::StatusOr<TrainResult> RunTraining(const LoadedScenario& scenario,
                                        const TrainOptions& options);

}  // namespace tpusim::scenarios

#endif  // TPUSIM_SCENARIOS_TRAIN_RUNNER_H_
