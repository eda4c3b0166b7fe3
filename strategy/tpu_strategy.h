// strategy/tpu_strategy.h
//
// TPUStrategy: tf.distribute.experimental.TPUStrategy (TF 2.2 semantics) over
// a runtime Backend. Construction mirrors TF: a cluster resolver names the
// slice, options carry steps_per_run (TF1) and an optional DeviceAssignment.
//
//   HostBackend backend(slice_layout.devices);
//   TPUSIM_ASSIGN_OR_RETURN(TPUClusterResolver resolver,
//                           TPUClusterResolver::Create(backend, "v3-8"));
//   TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<TPUStrategy> strategy,
//                           TPUStrategy::Create(backend, resolver));
//   StepFunction step([](ReplicaContext& ctx, const TracedNest& args)
//                         -> absl::StatusOr<TracedNest> {
//     TPUSIM_ASSIGN_OR_RETURN(TracedValue id, ctx.ReplicaIdInSyncGroup());
//     return TracedNest(id);
//   });
//   // PerReplica{0, 1, ..., 7}:
//   TPUSIM_ASSIGN_OR_RETURN(ValueNest ids, strategy->Run(step));
//   // 28:
//   TPUSIM_ASSIGN_OR_RETURN(Value sum, strategy->Reduce("sum", ids.leaf()));
//
// Run traces the step function once per input signature (structure, dtypes,
// shapes) into a runtime::Program, compiles it on the backend, and executes it
// SPMD on every replica's devices. Name mapping to TF: Run/ExperimentalRunV2 =
// run/experimental_run_v2, ExperimentalRun = experimental_run, Reduce =
// reduce, ExperimentalLocalResults = experimental_local_results, Scope =
// scope, UpdateConfigProto = update_config_proto,
// ExperimentalRunStepsOnIterator = extended.experimental_run_steps_on_iterator.

#ifndef TPUSIM_STRATEGY_TPU_STRATEGY_H_
#define TPUSIM_STRATEGY_TPU_STRATEGY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "strategy/cluster_resolver.h"
#include "strategy/config.pb.h"
#include "strategy/data/distribute.h"
#include "strategy/data/numpy_dataset.h"
#include "strategy/device_assignment.h"
#include "strategy/distribute_lib.h"
#include "strategy/distributed_input.h"
#include "strategy/input_iterator.h"
#include "strategy/reduce.h"
#include "strategy/replica_context.h"
#include "strategy/runtime/backend.h"
#include "strategy/values.h"
#include "strategy/variables.h"

namespace tpusim::strategy {

// The body of a replica function: receives the replica context and the
// arguments (a tuple, one entry per run() argument, with distributed values
// replaced by the replica's traced component), returns any nest of traced
// values (None for "no result").
using StepFn = std::function<absl::StatusOr<TracedNest>(ReplicaContext&,
                                                        const TracedNest&)>;

// A replica function with an identity, like a tf.function: traces are cached
// per (StepFunction, input signature). Copies share the identity. Constructing
// a StepFunction from a lambda at every call (e.g. Run([](...){...}, args))
// retraces every call.
class StepFunction {
 public:
  template <
      typename F,
      typename = std::enable_if_t<std::is_invocable_r_v<
          absl::StatusOr<TracedNest>, F&, ReplicaContext&, const TracedNest&>>>
  StepFunction(F&& fn,
               std::string name = "step")  // NOLINT: implicit from a callable
      : fn_(std::forward<F>(fn)), name_(std::move(name)), id_(NextId()) {}

  const StepFn& fn() const { return fn_; }
  const std::string& name() const { return name_; }
  uint64_t id() const { return id_; }
  // A fresh identity (shared by StepFunction and MultiStepFn).
  static uint64_t NewId() { return NextId(); }

 private:
  static uint64_t NextId();
  StepFn fn_;
  std::string name_;
  uint64_t id_;
};

struct TPUStrategyOptions {
  // TF1 TPUStrategyV1(steps_per_run=None): nullopt means 1. Must be >= 1.
  std::optional<int> steps_per_run;
  // Without one: one replica per TPU device in (task, ordinal) order. With one:
  // N = num_replicas, replica r on tpu_device(r, logical_core=0), and
  // num_cores_per_replica logical cores per replica (model parallelism).
  std::optional<DeviceAssignment> device_assignment;
  // TF 2.1 quirk (off by default): experimental_local_results orders components
  // by the lexicographic sort of their device strings ("task:10" before
  // "task:2").
  bool sort_local_results_by_device_string = false;
  // experimental_enable_dynamic_batch_size (TF default true): inputs whose
  // shapes differ across replicas are padded to the per-step maximum. When
  // false such inputs are kInvalidArgument.
  bool enable_dynamic_batch_size = true;
  // run()'s "same object" regroup rule: a result leaf that does not depend on
  // the replica (a constant, a non-distributed input passed through) is
  // returned unwrapped. tpusim default (the rule): true. TF 2.2's TPU
  // path regroups the outputs of tpu.replicate, which are distinct tensors per
  // replica, so there every leaf is a PerReplica when N > 1: set false for
  // that behaviour.
  bool unwrap_replica_independent_results = true;
  // Input semantics (spec "tpusim conventions"): "2.2" (default), "2.4" (the
  // balanced RebatchDatasetV2 path) or "2.21" (TF 2.21, docs/semantics.md).
  // Anything else is kInvalidArgument from the input entry points.
  std::string semantics_version = "2.2";
};

// The outputs of ExperimentalRunStepsOnIterator (TF's MultiStepContext after
// the loop).
struct MultiStepResult {
  // Last-step outputs by name: registered WITH a reduce op → a plain tensor
  // (the reduced value, first replica's copy); WITHOUT → a PerReplica value
  // (TF's list of N values).
  std::map<std::string, Value> last_step_outputs;
  // Steps actually run in the device call (1 when steps_per_run == 1, else
  // `iterations`).
  int steps_run = 0;
};

// Registers last-step outputs from inside a multi-step function (TF's
// MultiStepContext).
class MultiStepContext {
 public:
  // set_last_step_output(name, output, reduce_op): with a reduce op the value
  // is all-reduced in the program (MEAN = scale by 1/N then sum; integer MEAN
  // is kInvalidArgument); without one the per-replica values are returned. A
  // later step overwrites an earlier one.
  absl::Status SetLastStepOutput(
      const std::string& name, TracedValue output,
      std::optional<ReduceOpArg> reduce_op = std::nullopt);

 private:
  friend class TPUStrategy;
  explicit MultiStepContext(ReplicaContext* ctx) : ctx_(ctx) {}
  ReplicaContext* ctx_;
  struct Output {
    TracedValue value;
    bool reduced = false;
  };
  std::map<std::string, Output> outputs_;
};

// The body of a multi-step loop: one step's inputs (replica element structure),
// registering outputs through the MultiStepContext. Like StepFunction it has
// an identity: the body is traced once per (MultiStepFn, input signature) and
// the trace is reused by later calls with the same function object.
class MultiStepFn {
 public:
  using Body = std::function<absl::Status(ReplicaContext&, MultiStepContext&,
                                          const TracedNest& inputs)>;
  template <typename F,
            typename = std::enable_if_t<
                std::is_invocable_r_v<absl::Status, F&, ReplicaContext&,
                                      MultiStepContext&, const TracedNest&>>>
  MultiStepFn(F&& fn)  // NOLINT: implicit from a callable
      : fn_(std::forward<F>(fn)), id_(StepFunction::NewId()) {}
  absl::Status operator()(ReplicaContext& ctx, MultiStepContext& steps,
                          const TracedNest& inputs) const {
    return fn_(ctx, steps, inputs);
  }
  uint64_t id() const { return id_; }

 private:
  Body fn_;
  uint64_t id_;
};

class TPUStrategy final : public Strategy {
 public:
  // TPUStrategy(tpu_cluster_resolver, steps_per_run, device_assignment) on
  // `backend` (not owned; must outlive the strategy and hold the resolver's
  // devices). kInvalidArgument when steps_per_run < 1, the device assignment
  // does not fit the resolver's topology, or the backend lacks a device the
  // replicas need.
  static absl::StatusOr<std::unique_ptr<TPUStrategy>> Create(
      runtime::Backend& backend, const TPUClusterResolver& resolver,
      TPUStrategyOptions options = {});
  // TPUStrategy(tpu_cluster_resolver=None): the default TPU, i.e. a resolver
  // made from the backend's devices as they are
  // (TPUClusterResolver::Create(backend, "")).
  static absl::StatusOr<std::unique_ptr<TPUStrategy>> Create(
      runtime::Backend& backend, TPUStrategyOptions options = {});
  ~TPUStrategy() override;

  // ---- properties (spec (a)) ----
  int num_replicas_in_sync() const override {
    return mapping_.num_replicas_in_sync;
  }
  std::string DebugName() const override { return "TPUStrategy"; }
  int steps_per_run() const { return steps_per_run_; }
  int num_cores_per_replica() const { return num_cores_per_replica_; }
  int num_hosts() const { return mapping_.num_hosts; }
  int num_replicas_per_host() const { return mapping_.num_replicas_per_host; }
  // Replica r's device name (tpu_device(r, 0) with a device assignment); also
  // parameter_devices.
  const std::vector<std::string>& worker_devices() const {
    return mapping_.replica_devices;
  }
  const std::vector<std::string>& parameter_devices() const {
    return mapping_.replica_devices;
  }
  // Replicas, devices and input workers.
  const InputWorkerMapping& input_workers() const { return mapping_; }
  const std::optional<DeviceAssignment>& device_assignment() const {
    return options_.device_assignment;
  }
  const TPUClusterResolver& cluster_resolver() const { return resolver_; }
  runtime::Backend& backend() const { return *backend_; }
  // extended.* flags, constant for TPUStrategy.
  bool experimental_between_graph() const { return false; }
  bool experimental_should_init() const { return true; }
  bool should_checkpoint() const { return true; }
  bool should_save_summary() const { return true; }
  bool require_static_shapes() const { return true; }
  bool experimental_enable_get_next_as_optional() const { return true; }

  // ---- execution (spec (d)) ----
  // strategy.run(fn, args): `args` must be a tuple (kInvalidArgument
  // otherwise); trailing None entries are stripped. PerReplica and Mirrored
  // leaves are unwrapped per replica, other leaves broadcast (plain tensors
  // become program parameters, numbers constants, variables reads). Results are
  // regrouped: a leaf that does not depend on the replica (a constant, a
  // non-distributed input passed through, anything computed only from those) is
  // returned as a plain tensor, and so is every leaf when there is one replica;
  // every other leaf as a PerReplica; None stays None. Errors:
  // kFailedPrecondition inside a replica function or another strategy's scope;
  // kInvalidArgument for a distributed value with the wrong number of
  // components, shapes that differ across replicas in dtype or rank, a result
  // that is not a traced value of this program; errors of the step function and
  // of the backend propagate.
  absl::StatusOr<ValueNest> Run(const StepFunction& fn,
                                const ValueNest& args = ValueNest::Tuple({}));
  // Deprecated alias (TF 2.2).
  absl::StatusOr<ValueNest> ExperimentalRunV2(
      const StepFunction& fn, const ValueNest& args = ValueNest::Tuple({})) {
    return Run(fn, args);
  }
  // experimental_run(fn, input_iterator): run(fn, args=(iterator.get_next(),));
  // with no iterator fn gets no arguments. kOutOfRange at the end of the input.
  absl::StatusOr<ValueNest> ExperimentalRun(
      const StepFunction& fn, InputIterator* input_iterator = nullptr);

  // ---- steps_per_run (spec (i)) ----
  // extended.experimental_run_steps_on_iterator(fn, iterator, iterations): ONE
  // device call running a loop of steps, each pulling one element per replica.
  // Quirk reproduced: when steps_per_run == 1 exactly one step runs and
  // `iterations` is ignored; otherwise `iterations` steps run. kInvalidArgument
  // for iterations < 1 (when used); kOutOfRange if the iterator ends before the
  // loop's inputs are complete (nothing is executed then).
  // The body is traced once per (fn, input signature) and run K times in one
  // Backend::ExecuteSpmdLoop call, as TF's TPU training loop
  // (tpu.repeat/while_loop over infeed) runs it. Every step must have step 0's
  // input signature (static shapes, as TPU loops need): a step that differs is
  // kInvalidArgument naming the step and both signatures.
  absl::StatusOr<MultiStepResult> ExperimentalRunStepsOnIterator(
      const MultiStepFn& fn, InputIterator& iterator, int iterations);

  // update_config_proto(config): a copy with isolate_session_state and the
  // resolver's cluster_def (spec (h)).
  tensorflow::ConfigProto UpdateConfigProto(
      const tensorflow::ConfigProto& config) const;

  // Number of traces so far (one per new (function, input signature)).
  int num_traces() const { return num_traces_; }
  // The program of the most recent trace (for inspection and tests); nullptr
  // before any.
  const runtime::Program* last_traced_program() const;

  // ---- input (spec (b), (c), (d), (g), (l)); strategy/tpu_strategy_input.cc
  // ---- The input workers (one per distinct host of the replica devices, in
  // order of first appearance) and the replicas each feeds, as the data layer
  // takes them.
  data::InputWorkers data_input_workers() const;
  // experimental_distribute_dataset(dataset): `dataset` carries GLOBAL batches;
  // it is rebatched by N = num_replicas_in_sync, cloned per input worker and
  // auto-sharded there with its auto_shard_policy. Errors as
  // data::DistributeDataset.
  absl::StatusOr<data::DistributedDataset> ExperimentalDistributeDataset(
      const data::Dataset& dataset) const;
  // experimental_distribute_datasets_from_function(dataset_fn): dataset_fn runs
  // once per input worker with InputContext(W, i, N) and yields PER-REPLICA
  // batches, used as is.
  absl::StatusOr<data::DistributedDataset>
  ExperimentalDistributeDatasetsFromFunction(
      const data::DatasetFunction& dataset_fn) const;
  // make_dataset_iterator(dataset) (TF1): the same splitting as
  // ExperimentalDistributeDataset, returned as an iterator.
  absl::StatusOr<std::unique_ptr<DistributedInputIterator>> MakeDatasetIterator(
      const data::Dataset& dataset) const;
  // make_input_fn_iterator(input_fn, replication_mode) (TF1): input_fn returns
  // a dataset of per-replica batches or a callable. kInvalidArgument for a mode
  // other than PER_WORKER or a result that is neither.
  absl::StatusOr<std::unique_ptr<DistributedInputIterator>> MakeInputFnIterator(
      const data::InputFn& input_fn,
      data::InputReplicationMode replication_mode =
          data::InputReplicationMode::kPerWorker) const;
  // experimental_make_numpy_dataset(numpy_input): from_tensor_slices of host
  // arrays, placed on the host of replica 0 (NumpyDataset::host_device). Not
  // distributed: pass the (batched) dataset to ExperimentalDistributeDataset.
  absl::StatusOr<data::NumpyDataset> ExperimentalMakeNumpyDataset(
      const data::Element& numpy_input) const;

 protected:
  std::vector<int> LocalResultsOrder(int num_components) const override;
  VariableStore& variable_store() override;

 private:
  struct Compiled;
  struct ArgPlan;
  TPUStrategy(runtime::Backend& backend, TPUClusterResolver resolver,
              TPUStrategyOptions options, InputWorkerMapping mapping,
              int num_cores_per_replica);

  absl::StatusOr<ValueNest> RunInternal(const StepFunction& fn,
                                        const ValueNest& args);
  absl::StatusOr<ArgPlan> PlanArgs(const ValueNest& args) const;
  // Transfers every plan's parameters and runs the program: one ExecuteSpmd
  // for one plan, else one ExecuteSpmdLoop over the plans (one iteration
  // each). Returns the outputs (of the last iteration).
  absl::StatusOr<runtime::SpmdOutputs> Execute(
      const Compiled& compiled, const std::vector<ArgPlan>& plans, bool loop);
  absl::StatusOr<std::vector<runtime::Tensor>> FetchOutput(
      const runtime::SpmdOutputs& outputs, int index);

  runtime::Backend* backend_;
  TPUClusterResolver resolver_;
  TPUStrategyOptions options_;
  InputWorkerMapping mapping_;
  int num_cores_per_replica_ = 1;
  int steps_per_run_ = 1;
  runtime::SpmdAssignment assignment_;
  std::unique_ptr<VariableStore> store_;
  std::map<std::string, std::unique_ptr<Compiled>> cache_;
  const Compiled* last_compiled_ = nullptr;
  int num_traces_ = 0;
};

}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_TPU_STRATEGY_H_
