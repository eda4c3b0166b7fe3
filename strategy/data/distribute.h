// strategy/data/distribute.h
//
// Distributed datasets and iterators over W input workers × R replicas: the
// machinery behind TPUStrategy's experimental_distribute_dataset,
// experimental_distribute_datasets_from_function, make_dataset_iterator and
// make_input_fn_iterator (spec (b), (c), (d), (l)).
//
//   InputWorkers workers = InputWorkers::Uniform(2, 2);  // W=2, R=2
//   TPUSIM_ASSIGN_OR_RETURN(
//       DistributedDataset dist,
//       DistributeDataset(Dataset::Range(16).Batch(8), workers));
//   TPUSIM_ASSIGN_OR_RETURN(DistributedIterator it, dist.MakeIterator());
//   while (true) {
//     absl::StatusOr<strategy::PerReplica<Element>> step = it.GetNext();
//     if (absl::IsOutOfRange(step.status())) break;  // end of data
//     // (*step)[r] is replica r's element
//   }
//
// Pipeline of DistributeDataset (TF 2.2, the default): scalar check → rebatch
// graph rewrite with N = total replicas (+ prefetch N) → clone per worker →
// auto-shard(W, i) with the dataset's auto_shard_policy. TF 2.4
// (DistributeOptions::semantics_version = "2.4"): clone → per-worker
// RebatchDatasetV2 with balanced sizes, or the legacy N-piece split when the
// batch size is unknown (+ prefetch R); N == 1 → no rebatch → auto-shard.
//
// Each worker hands its elements round-robin to its replicas: element k of
// worker i's stream goes to replica replicas_per_worker[i][k % R]. A step
// returns one element per replica in replica order. tpusim choice (spec (a)
// [U]): when a device assignment interleaves hosts, the PerReplica is still
// indexed by the replica ids each worker lists, so replica r always gets the
// elements of the worker that feeds it.

#ifndef TPUSIM_STRATEGY_DATA_DISTRIBUTE_H_
#define TPUSIM_STRATEGY_DATA_DISTRIBUTE_H_

#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "strategy/data/dataset.h"
#include "strategy/data/input_context.h"
#include "strategy/data/rebatch.h"
#include "strategy/values.h"

namespace tpusim::data {

struct DistributeOptions {
  // "2.2" (default), "2.4" or "2.21"; anything else → InvalidArgument from every entry
  // point.
  std::string semantics_version = "2.2";
  // TPUStrategy forces experimental_enable_get_next_as_optional on; it is only
  // used when the per-replica element spec is not fully static.
  bool enable_get_next_as_optional = true;
};

// A nullary function producing one element (what a callable input_fn returns).
using ElementFn = std::function<absl::StatusOr<Element>()>;

// Iterates a distributed input. Movable, not copyable, not thread-safe.
class DistributedIterator {
 public:
  DistributedIterator(DistributedIterator&&) = default;
  DistributedIterator& operator=(DistributedIterator&&) = default;

  // One step: one element per replica, in replica order.
  // Contract:
  // * get-next-as-optional mode (per-replica spec not fully static): each
  //   worker fetches up to R elements; if no worker's FIRST replica got data,
  //   OutOfRange ("End of sequence"); otherwise replicas without data get an
  //   empty dummy (spec dtype; unknown dims 0; a fully known shape gets
  //   dimension 0 set to 0).
  // * static mode: no dummies; if any replica has no data, OutOfRange.
  // * errors of the workers' pipelines (e.g. the require-non-empty shard's
  //   InvalidArgument) are returned as they occur, first worker first
  //   (tpusim choice); the elements already fetched in that step are lost.
  // * callable inputs (make_input_fn_iterator) call the function once per
  //   replica per step (as TF's _SingleWorkerCallableIterator) and never end.
  // * after OutOfRange every later call is OutOfRange again.
  // * host costs (PerReplica::host_costs): replica r's entry is the host work
  //   (the pipeline's declared per-element costs, DatasetNode::
  //   host_cost_per_element) its worker's pipeline did since the previous
  //   batch it returned: a batch pays for every element made (or dropped by
  //   filter, shard, skip) on the way to it; a dummy pays for finding the
  //   end of the data. Callables cost 0.
  absl::StatusOr<strategy::PerReplica<Element>> GetNext();

  // Restarts every worker's pipeline (TF1 initializer / a new eager iterator):
  // the same sequence is produced again. Callable inputs are unaffected.
  // Errors: those of making the workers' iterators.
  absl::Status Initialize();

  // The per-replica element spec (None for callable inputs).
  const ElementSpec& element_spec() const { return element_spec_; }
  bool get_next_as_optional() const { return optional_; }
  int num_replicas() const { return workers_.num_replicas(); }

  // One worker's input: a dataset or a callable.
  struct WorkerInput {
    std::optional<Dataset> dataset;
    ElementFn callable;
  };
  // Prefer the entry points below. Precondition: workers.Validate() is OK and
  // inputs has one entry per worker. Errors: those of making the workers'
  // iterators.
  static absl::StatusOr<DistributedIterator> Create(
      InputWorkers workers, std::vector<WorkerInput> inputs,
      ElementSpec element_spec, bool get_next_as_optional);

 private:
  DistributedIterator() = default;

  InputWorkers workers_;
  std::vector<WorkerInput> inputs_;
  std::vector<IteratorPtr> iterators_;  // per worker; null for callables
  // Per worker: the host work of its pipeline so far (declared costs), and
  // how much of it the batches returned so far have accounted for.
  std::vector<std::shared_ptr<HostWorkMeter>> meters_;
  std::vector<common::Picoseconds> accounted_;
  ElementSpec element_spec_;
  bool optional_ = false;
};

// Why worker i got its pipeline (`tpusim inspect-input --explain`).
struct WorkerExplanation {
  int worker = 0;
  std::string before;  // the input graph (DebugString) before the rewrites
  std::string after;   // the worker's graph after rebatch and auto-shard
  std::string requested_policy;  // "AUTO", "FILE", "DATA", "OFF"
  std::string applied_policy;    // "FILE", "DATA", "OFF"
  // Why: "FILE: 1 reader over 4 files; worker 0 reads files 0, 2 (shard(2,
  // 0))", "AUTO: FILE sharding failed: <reason>; DATA: ...", ...
  std::string shard_reason;
  // "case1", "case2", "fallback" (2.2), "batch_sizes" or "legacy_split"
  // (2.4), "none" (one replica or datasets from a function).
  std::string rebatch;
  std::string rebatch_detail;  // the numbers, e.g. "batch(8) -> batch(2) ..."
};

// A distributed dataset: one pipeline per input worker. It offers no
// transformations, only iteration and its per-replica element_spec. Copyable
// (shares the immutable graphs).
class DistributedDataset {
 public:
  // A fresh iterator from the start of every worker's pipeline.
  absl::StatusOr<DistributedIterator> MakeIterator() const;

  // The per-replica element spec.
  const ElementSpec& element_spec() const { return element_spec_; }
  bool get_next_as_optional() const { return optional_; }
  const InputWorkers& input_workers() const { return workers_; }
  int num_workers() const { return workers_.num_workers(); }
  // Worker i's pipeline after rebatch and auto-shard (inspection, the CLI's
  // inspect-input). Precondition: 0 <= i < num_workers().
  const Dataset& worker_dataset(int i) const;
  // The auto-shard policy that took effect on worker i (kOff when W == 1 or
  // nothing applied).
  AutoShardPolicy applied_policy(int i) const;
  // What the 2.2 rebatch rewrite did (absent in 2.4 mode and for datasets from
  // a function).
  const std::optional<RebatchKind>& rebatch_kind() const {
    return rebatch_kind_;
  }
  // Warnings to show the user (AUTO's "switching to DATA-based sharding"),
  // worker order.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // One explanation per worker (worker order).
  const std::vector<WorkerExplanation>& explanations() const {
    return explanations_;
  }
  void set_explanations(std::vector<WorkerExplanation> e) {
    explanations_ = std::move(e);
  }

  // Prefer the entry points below.
  DistributedDataset(InputWorkers workers, std::vector<Dataset> worker_datasets,
                     std::vector<AutoShardPolicy> applied,
                     ElementSpec element_spec, bool get_next_as_optional,
                     std::optional<RebatchKind> rebatch_kind,
                     std::vector<std::string> warnings);

 private:
  InputWorkers workers_;
  std::vector<Dataset> worker_datasets_;
  std::vector<AutoShardPolicy> applied_;
  ElementSpec element_spec_;
  bool optional_ = false;
  std::optional<RebatchKind> rebatch_kind_;
  std::vector<std::string> warnings_;
  std::vector<WorkerExplanation> explanations_;
};

// experimental_distribute_dataset(dataset): `dataset` carries GLOBAL batches.
// Errors: the dataset's own construction error; InvalidArgument for invalid
// `workers`, an unknown semantics version, scalar components (TF's ValueError:
// add `batch`), an unusable rebatch fallback ("cannot use rebatching fallback
// ..."), non-uniform workers under 2.4; NotFound when policy FILE finds nothing
// to shard (e.g. after a 2.2 Case-2 or fallback rebatch).
absl::StatusOr<DistributedDataset> DistributeDataset(
    const Dataset& dataset, const InputWorkers& workers,
    const DistributeOptions& options = {});

// experimental_distribute_datasets_from_function(dataset_fn): dataset_fn is
// called once per worker in worker order with InputContext(W, i, N); each
// dataset is used as is (PER-REPLICA batches, no rebatch, no auto-shard). The
// element spec is worker 0's. Errors: InvalidArgument for invalid workers or
// version; a dataset's construction error.
using DatasetFunction = std::function<Dataset(const InputContext&)>;
absl::StatusOr<DistributedDataset> DistributeDatasetsFromFunction(
    const DatasetFunction& dataset_fn, const InputWorkers& workers,
    const DistributeOptions& options = {});
// The same with explicit contexts; InvalidArgument (TF's ValueError) when their
// number differs from the number of workers.
absl::StatusOr<DistributedDataset> DistributeDatasetsFromFunctionWithContexts(
    const DatasetFunction& dataset_fn, const InputWorkers& workers,
    const std::vector<InputContext>& contexts,
    const DistributeOptions& options = {});

// make_dataset_iterator(dataset): DistributeDataset + MakeIterator.
absl::StatusOr<DistributedIterator> MakeDatasetIterator(
    const Dataset& dataset, const InputWorkers& workers,
    const DistributeOptions& options = {});

// tf.distribute.InputReplicationMode: PER_WORKER is the only member.
enum class InputReplicationMode : int { kPerWorker = 0 };

// What an input_fn may return: a dataset, a callable, or anything else
// (monostate, which stands for every other Python value and is rejected).
using InputFnResult = std::variant<std::monostate, Dataset, ElementFn>;
using InputFn = std::function<InputFnResult(const InputContext&)>;

// make_input_fn_iterator(input_fn, replication_mode): input_fn is called once
// per worker in worker order with InputContext(W, i, N). A dataset is used as
// is (per-replica batches, round-robin); a callable gives every replica one
// call's result per step and never ends. Errors: InvalidArgument "Input
// replication mode not supported" for a mode other than kPerWorker;
// InvalidArgument "input_fn must return a tf.data.Dataset or a callable" for
// monostate; a dataset's construction error; invalid workers or version.
absl::StatusOr<DistributedIterator> MakeInputFnIterator(
    const InputFn& input_fn, const InputWorkers& workers,
    InputReplicationMode replication_mode = InputReplicationMode::kPerWorker,
    const DistributeOptions& options = {});

// The empty dummy batch for a component of spec `spec`: every unknown dim 0,
// and dimension 0 set to 0 when the shape is fully known. tpusim choices: an
// unknown rank gives shape [0]; a scalar gives a zero scalar. A sparse
// component gets the empty sparse value, boxed (DummySparseBoxes).
runtime::Tensor DummyTensor(const runtime::TensorSpec& spec);

// True when every component's shape is fully defined; for a sparse component
// (as TF's _is_statically_shaped) when its batch dimension is known.
bool IsStaticallyShaped(const ElementSpec& spec);

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_DISTRIBUTE_H_
