// strategy/data/input_context.cc

#include "strategy/data/input_context.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/check.h"

namespace tpusim::data {

InputContext::InputContext(int num_input_pipelines, int input_pipeline_id,
                           int num_replicas_in_sync)
    : num_input_pipelines_(num_input_pipelines),
      input_pipeline_id_(input_pipeline_id),
      num_replicas_in_sync_(num_replicas_in_sync) {
  TPUSIM_CHECK(num_input_pipelines >= 1) << num_input_pipelines;
  TPUSIM_CHECK(input_pipeline_id >= 0 &&
               input_pipeline_id < num_input_pipelines)
      << input_pipeline_id;
  TPUSIM_CHECK(num_replicas_in_sync >= 1) << num_replicas_in_sync;
}

absl::StatusOr<int64_t> InputContext::GetPerReplicaBatchSize(
    int64_t global_batch_size) const {
  if (global_batch_size % num_replicas_in_sync_ != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "global_batch_size ", global_batch_size,
        " is not divisible by num_replicas_in_sync ", num_replicas_in_sync_));
  }
  return global_batch_size / num_replicas_in_sync_;
}

std::string InputContext::DebugString() const {
  return absl::StrCat("InputContext(num_input_pipelines=", num_input_pipelines_,
                      ", input_pipeline_id=", input_pipeline_id_,
                      ", num_replicas_in_sync=", num_replicas_in_sync_, ")");
}

int InputWorkers::num_replicas() const {
  int n = 0;
  for (const auto& replicas : replicas_per_worker)
    n += static_cast<int>(replicas.size());
  return n;
}

absl::Status InputWorkers::Validate() const {
  if (replicas_per_worker.empty()) {
    return absl::InvalidArgumentError(
        "InputWorkers: replicas_per_worker is empty; need >= 1 worker");
  }
  if (worker_devices.size() != replicas_per_worker.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("InputWorkers: worker_devices has ", worker_devices.size(),
                     " entries but replicas_per_worker has ",
                     replicas_per_worker.size(), "; must be equal"));
  }
  const int n = num_replicas();
  std::vector<int> seen(n, -1);
  for (int w = 0; w < num_workers(); ++w) {
    if (replicas_per_worker[w].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("InputWorkers: worker ", w, " (", worker_devices[w],
                       ") feeds no replica; every worker needs >= 1"));
    }
    for (int r : replicas_per_worker[w]) {
      if (r < 0 || r >= n) {
        return absl::InvalidArgumentError(
            absl::StrCat("InputWorkers: worker ", w, " lists replica ", r,
                         ", must be in [0, ", n, ")"));
      }
      if (seen[r] >= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "InputWorkers: replica ", r, " is fed by worker ", seen[r],
            " and by worker ", w, "; each replica needs exactly one"));
      }
      seen[r] = w;
    }
  }
  return absl::OkStatus();
}

InputWorkers InputWorkers::Uniform(int num_workers, int replicas_per_worker) {
  TPUSIM_CHECK(num_workers >= 1 && replicas_per_worker >= 1)
      << num_workers << " x " << replicas_per_worker;
  InputWorkers workers;
  for (int w = 0; w < num_workers; ++w) {
    std::vector<int> replicas;
    for (int r = 0; r < replicas_per_worker; ++r)
      replicas.push_back(w * replicas_per_worker + r);
    workers.replicas_per_worker.push_back(std::move(replicas));
    workers.worker_devices.push_back(
        absl::StrCat("/job:worker/replica:0/task:", w, "/device:CPU:0"));
  }
  return workers;
}

std::vector<InputContext> MakeInputContexts(const InputWorkers& workers) {
  std::vector<InputContext> contexts;
  for (int i = 0; i < workers.num_workers(); ++i) {
    contexts.emplace_back(workers.num_workers(), i, workers.num_replicas());
  }
  return contexts;
}

}  // namespace tpusim::data
