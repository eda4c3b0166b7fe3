// scenarios/train_runner.h
//
// `tpusim run`: trains a scenario's workload with a real TPUStrategy on the
// scenario's backend ("sim" by default) and returns the backend's Profile.
//
//   TPUSIM_ASSIGN_OR_RETURN(LoadedScenario s, LoadScenarioFile(path));
//   TPUSIM_ASSIGN_OR_RETURN(TrainResult r, RunTraining(s, {}));
//   r.profile.steps(0) ...
//
// The input is synthetic: every step each replica gets a batch of
// global_batch_size / num_replicas examples of the workload's input types.
// By default inputs and variables are abstract (timed, never computed: pod
// scale); `run.real_values` gives deterministic real values from `run.seed`
// (small configs), and the report shows the loss. Workloads (WorkloadNames()):
//   mlp, resnet50, bert, transformer_lm  models/ (models/workload.h): forward,
//        hand-written backward, gradients all-reduced in buckets as backward
//        produces them, SGD; parameters as the models registry defines them.
//   deep_mlp  layers (int, default 4), width (int, default 1024), dtype
//        ("bfloat16" default, or "float32"): tanh layers of width x width
//        weights, each layer's gradient all-reduced (SUM) as backward
//        produces it; a simple timing study.
// Each parameter is checked: an unknown name or a value of the wrong type is
// InvalidArgument naming it and what is allowed.

#ifndef TPUSIM_SCENARIOS_TRAIN_RUNNER_H_
#define TPUSIM_SCENARIOS_TRAIN_RUNNER_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scenarios/scenario_loader.h"
#include "strategy/runtime/profile.h"

namespace tpusim::scenarios {

struct TrainOptions {
  // Overrides run.backend when not empty.
  std::string backend;
  // Called after every device call with the steps done and the total.
  std::function<void(int64_t done, int64_t total)> progress;
};

struct TrainResult {
  std::string backend;
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
  runtime::Profile profile;
};

std::vector<std::string> WorkloadNames();

absl::StatusOr<TrainResult> RunTraining(const LoadedScenario& scenario,
                                        const TrainOptions& options);

}  // namespace tpusim::scenarios

#endif  // TPUSIM_SCENARIOS_TRAIN_RUNNER_H_
