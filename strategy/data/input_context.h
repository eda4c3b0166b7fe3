// strategy/data/input_context.h
//
// InputContext (tf.distribute.InputContext) and the input-worker description
// shared by every distribution entry point.
//
//   InputContext ctx(/*num_input_pipelines=*/2, /*input_pipeline_id=*/1,
//                    /*num_replicas_in_sync=*/4);
//   absl::StatusOr<int64_t> per_replica = ctx.GetPerReplicaBatchSize(8);  // 2
//
//   InputWorkers workers{{{0, 1}, {2, 3}},
//                        {"/job:worker/replica:0/task:0/device:CPU:0",
//                         "/job:worker/replica:0/task:1/device:CPU:0"}};
//
// InputWorkers is independent of the TPUStrategy facade: the facade builds it
// from its cluster resolver / device assignment (spec (a): one input worker per
// distinct host, in order of first appearance; each worker feeds its replicas
// in replica order).

#ifndef TPUSIM_STRATEGY_DATA_INPUT_CONTEXT_H_
#define TPUSIM_STRATEGY_DATA_INPUT_CONTEXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tpusim::data {

// What a dataset_fn / input_fn learns about the input pipeline it builds (spec
// (c)).
class InputContext {
 public:
  // Defaults as in TF: one pipeline, id 0, one replica.
  InputContext() = default;
  // Precondition (programming error otherwise): num_input_pipelines >= 1,
  // 0 <= input_pipeline_id < num_input_pipelines, num_replicas_in_sync >= 1.
  InputContext(int num_input_pipelines, int input_pipeline_id,
               int num_replicas_in_sync);

  int num_input_pipelines() const { return num_input_pipelines_; }
  int input_pipeline_id() const { return input_pipeline_id_; }
  int num_replicas_in_sync() const { return num_replicas_in_sync_; }

  // global_batch_size / num_replicas_in_sync. InvalidArgument (TF's ValueError)
  // when the division is not exact: "global_batch_size 7 is not divisible by
  // num_replicas_in_sync 2".
  absl::StatusOr<int64_t> GetPerReplicaBatchSize(
      int64_t global_batch_size) const;

  // "InputContext(num_input_pipelines=2, input_pipeline_id=1,
  // num_replicas_in_sync=4)".
  std::string DebugString() const;

 private:
  int num_input_pipelines_ = 1;
  int input_pipeline_id_ = 0;
  int num_replicas_in_sync_ = 1;
};

// The input workers (hosts) of a strategy and the replicas each one feeds.
struct InputWorkers {
  // replicas_per_worker[i] = the global replica ids worker i feeds, in the
  // order its iterator hands elements out (element k of the worker's stream
  // goes to replicas_per_worker[i][k % R]).
  std::vector<std::vector<int>> replicas_per_worker;
  // worker_devices[i] = the host CPU device of worker i, e.g.
  // "/job:worker/replica:0/task:0/device:CPU:0".
  std::vector<std::string> worker_devices;

  int num_workers() const {
    return static_cast<int>(replicas_per_worker.size());
  }
  // Total replica count N (the sum over workers).
  int num_replicas() const;
  // InvalidArgument unless: at least one worker; as many device names as
  // workers; every worker feeds at least one replica; the replica ids are
  // exactly 0..N-1, each once.
  absl::Status Validate() const;

  // W workers with R replicas each on devices
  // "/job:worker/replica:0/task:<i>/device:CPU:0", replicas numbered
  // worker-major (worker i feeds i*R .. i*R+R-1). Precondition: W, R >= 1.
  static InputWorkers Uniform(int num_workers, int replicas_per_worker);
};

// The contexts handed to dataset_fn / input_fn: InputContext(W, i, N) for i =
// 0..W-1.
std::vector<InputContext> MakeInputContexts(const InputWorkers& workers);

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_INPUT_CONTEXT_H_
