// strategy/data/distribute.cc

#include "strategy/data/distribute.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/check.h"
#include "common/status_macros.h"
#include "strategy/data/auto_shard.h"
#include "strategy/data/dataset_nodes.h"
#include "strategy/data/sparse.h"

namespace tpusim::data {
namespace {

using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;

absl::Status ValidateCommon(const InputWorkers& workers,
                            const DistributeOptions& options) {
  TPUSIM_RETURN_IF_ERROR(workers.Validate());
  return ParseSemanticsVersion(options.semantics_version).status();
}

Element DummyElement(const ElementSpec& spec) {
  return spec.Map([](const TensorSpec& s) { return DummyTensor(s); });
}

Options Stateless(Options options) {
  options.make_stateless = true;
  return options;
}

}  // namespace

Tensor DummyTensor(const TensorSpec& spec) {
  if (spec.sparse.has_value()) return DummySparseBoxes(spec);
  if (!spec.shape.rank_known()) return Tensor::Zeros(spec.dtype, Shape({0}));
  std::vector<int64_t> dims = spec.shape.dims();
  if (dims.empty()) return Tensor::Zeros(spec.dtype, Shape());
  const bool fully_known = spec.shape.IsFullyDefined();
  for (int64_t& d : dims) {
    if (d == runtime::kUnknownDim) d = 0;
  }
  if (fully_known) dims[0] = 0;
  return Tensor::Zeros(spec.dtype, Shape(std::move(dims)));
}

bool IsStaticallyShaped(const ElementSpec& spec) {
  for (const TensorSpec* leaf : spec.Flatten()) {
    if (leaf->sparse.has_value()) {
      // TF's _is_statically_shaped: for a SparseTensorSpec only the batch
      // dimension counts.
      const Shape logical = LogicalShape(*leaf);
      if (!logical.rank_known() ||
          (logical.rank() > 0 && logical.dim(0) == runtime::kUnknownDim))
        return false;
      continue;
    }
    if (!leaf->shape.rank_known() || !leaf->shape.IsFullyDefined())
      return false;
  }
  return true;
}

// ---- DistributedIterator ----

absl::StatusOr<DistributedIterator> DistributedIterator::Create(
    InputWorkers workers, std::vector<WorkerInput> inputs,
    ElementSpec element_spec, bool get_next_as_optional) {
  TPUSIM_CHECK(static_cast<int>(inputs.size()) == workers.num_workers())
      << inputs.size() << " inputs for " << workers.num_workers() << " workers";
  DistributedIterator it;
  it.workers_ = std::move(workers);
  it.inputs_ = std::move(inputs);
  it.element_spec_ = std::move(element_spec);
  it.optional_ = get_next_as_optional;
  TPUSIM_RETURN_IF_ERROR(it.Initialize());
  return it;
}

absl::Status DistributedIterator::Initialize() {
  std::vector<IteratorPtr> iterators(inputs_.size());
  std::vector<std::shared_ptr<HostWorkMeter>> meters(inputs_.size());
  for (size_t w = 0; w < inputs_.size(); ++w) {
    if (inputs_[w].dataset.has_value()) {
      meters[w] = std::make_shared<HostWorkMeter>();
      TPUSIM_ASSIGN_OR_RETURN(iterators[w],
                              inputs_[w].dataset->MakeIterator(meters[w]));
    }
  }
  iterators_ = std::move(iterators);
  meters_ = std::move(meters);
  accounted_.assign(inputs_.size(), common::Picoseconds(0));
  return absl::OkStatus();
}

absl::StatusOr<strategy::PerReplica<Element>> DistributedIterator::GetNext() {
  const int n = workers_.num_replicas();
  std::vector<std::optional<Element>> per_replica(n);
  std::vector<common::Picoseconds> costs(n, common::Picoseconds(0));
  int workers_with_data = 0;
  bool any_missing = false;
  for (int w = 0; w < workers_.num_workers(); ++w) {
    const std::vector<int>& replicas = workers_.replicas_per_worker[w];
    bool ended = false;
    for (size_t j = 0; j < replicas.size(); ++j) {
      if (inputs_[w].callable) {
        TPUSIM_ASSIGN_OR_RETURN(Element e, inputs_[w].callable());
        per_replica[replicas[j]] = std::move(e);
        continue;
      }
      if (ended) {
        any_missing = true;
        continue;
      }
      TPUSIM_ASSIGN_OR_RETURN(per_replica[replicas[j]],
                              iterators_[w]->GetNext());
      costs[replicas[j]] = meters_[w]->work - accounted_[w];
      accounted_[w] = meters_[w]->work;
      if (!per_replica[replicas[j]].has_value()) {
        ended = true;
        any_missing = true;
      }
    }
    if (per_replica[replicas[0]].has_value()) ++workers_with_data;
  }
  if (optional_) {
    if (workers_with_data == 0) {
      return absl::OutOfRangeError(
          "End of sequence: no worker's first replica has data");
    }
  } else if (any_missing) {
    return absl::OutOfRangeError(
        "End of sequence: a replica's input ran out (static shapes: no partial "
        "steps)");
  }
  std::vector<Element> out;
  out.reserve(n);
  for (int r = 0; r < n; ++r) {
    out.push_back(per_replica[r].has_value() ? std::move(*per_replica[r])
                                             : DummyElement(element_spec_));
  }
  strategy::PerReplica<Element> step(std::move(out));
  step.set_host_costs(std::move(costs));
  return step;
}

// ---- DistributedDataset ----

DistributedDataset::DistributedDataset(InputWorkers workers,
                                       std::vector<Dataset> worker_datasets,
                                       std::vector<AutoShardPolicy> applied,
                                       ElementSpec element_spec,
                                       bool get_next_as_optional,
                                       std::optional<RebatchKind> rebatch_kind,
                                       std::vector<std::string> warnings)
    : workers_(std::move(workers)),
      worker_datasets_(std::move(worker_datasets)),
      applied_(std::move(applied)),
      element_spec_(std::move(element_spec)),
      optional_(get_next_as_optional),
      rebatch_kind_(rebatch_kind),
      warnings_(std::move(warnings)) {}

absl::StatusOr<DistributedIterator> DistributedDataset::MakeIterator() const {
  std::vector<DistributedIterator::WorkerInput> inputs;
  for (const Dataset& ds : worker_datasets_) inputs.push_back({ds, nullptr});
  return DistributedIterator::Create(workers_, std::move(inputs), element_spec_,
                                     optional_);
}

const Dataset& DistributedDataset::worker_dataset(int i) const {
  TPUSIM_CHECK(i >= 0 && i < num_workers()) << i;
  return worker_datasets_[i];
}

AutoShardPolicy DistributedDataset::applied_policy(int i) const {
  TPUSIM_CHECK(i >= 0 && i < num_workers()) << i;
  return applied_[i];
}

// ---- entry points ----

namespace {

// The require-non-empty shards FILE sharding inserted into `root`'s graph
// (top level, through every input) and the number of file names each reads
// (-1 when not a constant list).
void FindFileShards(const NodePtr& root, std::vector<int64_t>* files,
                    int64_t* num_shards, int64_t* index) {
  std::vector<const DatasetNode*> stack = {root.get()};
  while (!stack.empty()) {
    const DatasetNode* n = stack.back();
    stack.pop_back();
    if (n == nullptr) continue;
    if (n->op() == ShardNode::kOp) {
      const auto* shard = static_cast<const ShardNode*>(n);
      if (shard->require_non_empty() && !shard->inputs().empty() &&
          shard->inputs()[0]->op() == TensorSliceNode::kOp) {
        const auto* slices =
            static_cast<const TensorSliceNode*>(shard->inputs()[0].get());
        int64_t count = -1;
        const auto leaves = slices->components().Flatten();
        if (!leaves.empty() && leaves[0]->spec().shape.rank() > 0)
          count = leaves[0]->spec().shape.dim(0);
        files->push_back(count);
        *num_shards = shard->num_shards();
        *index = shard->index();
      }
    }
    for (const NodePtr& in : n->inputs()) stack.push_back(in.get());
  }
}

std::string ShardReason(AutoShardPolicy requested, const AutoShardResult& r,
                        int workers, int index) {
  if (workers == 1 && r.applied == AutoShardPolicy::kData) {
    return absl::StrCat(
        requested == AutoShardPolicy::kAuto
            ? "AUTO: FILE sharding found nothing to shard, fallback to DATA; "
            : "DATA: ",
        "one input worker, semantics 2.21: the DATA rewrite still runs (the "
        "RebatchDatasetV2 becomes the legacy RebatchDataset; its shard(1, 0) "
        "would keep every element and is left out)");
  }
  if (workers == 1) return "one input worker: the pipeline is not sharded";
  if (requested == AutoShardPolicy::kOff)
    return "policy OFF: every worker reads the whole pipeline";
  std::string why;
  if (requested == AutoShardPolicy::kAuto) {
    why = r.applied == AutoShardPolicy::kFile
              ? "AUTO: FILE sharding found readers; "
              : "AUTO: FILE sharding found nothing to shard, fallback to "
                "DATA (";
    for (const std::string& w : r.warnings) absl::StrAppend(&why, w);
    if (r.applied != AutoShardPolicy::kFile) absl::StrAppend(&why, "); ");
  }
  if (r.applied == AutoShardPolicy::kFile) {
    std::vector<int64_t> files;
    int64_t shards = workers, at = index;
    FindFileShards(r.node, &files, &shards, &at);
    int64_t total = 0;
    bool known = true;
    for (int64_t f : files) {
      if (f < 0) known = false;
      total += f;
    }
    std::vector<std::string> lists;
    for (int64_t f : files) {
      if (f < 0) {
        lists.push_back(absl::StrCat("files ", at, ", ", at + shards,
                                     ", ... of an unknown number"));
        continue;
      }
      std::vector<int64_t> mine;
      for (int64_t k = at; k < f; k += shards) mine.push_back(k);
      lists.push_back(
          mine.empty()
              ? absl::StrCat("no file of ", f,
                             " (the shard fails at run "
                             "time: require_non_empty)")
              : absl::StrCat("files ", absl::StrJoin(mine, ", "), " of ", f));
    }
    absl::StrAppend(
        &why, "FILE: found ", files.size(),
        files.size() == 1 ? " reader" : " readers", " over ",
        known ? absl::StrCat(total) : std::string("an unknown number of"),
        " files; worker ", at, " of ", shards, " reads ",
        absl::StrJoin(lists, "; "), " (shard(", shards, ", ", at,
        ", require_non_empty) on the file names)");
  } else if (r.applied == AutoShardPolicy::kData) {
    absl::StrAppend(&why, "DATA: shard(", workers, ", ", index,
                    ") appended after the rebatch: worker ", index,
                    " keeps elements ", index, ", ", index + workers, ", ",
                    index + 2 * workers, ", ... of the rebatched stream");
  } else {
    absl::StrAppend(&why, "no sharding applied");
  }
  return why;
}

}  // namespace

absl::StatusOr<DistributedDataset> DistributeDataset(
    const Dataset& dataset, const InputWorkers& workers,
    const DistributeOptions& options) {
  TPUSIM_RETURN_IF_ERROR(ValidateCommon(workers, options));
  TPUSIM_ASSIGN_OR_RETURN(SemanticsVersion version,
                          ParseSemanticsVersion(options.semantics_version));
  if (!dataset.ok()) return dataset.status();
  const int64_t n = workers.num_replicas();
  const int w = workers.num_workers();
  const AutoShardPolicy policy = dataset.options().auto_shard_policy;
  const Options worker_options = Stateless(dataset.options());

  std::vector<Dataset> worker_datasets;
  std::vector<AutoShardPolicy> applied;
  std::vector<std::string> warnings;
  ElementSpec spec;
  std::optional<RebatchKind> kind;
  std::vector<WorkerExplanation> explain;
  const std::string before = dataset.node()->DebugString();
  auto explained = [&](int i, const AutoShardResult& sharded,
                       std::string rebatch, std::string detail) {
    WorkerExplanation e;
    e.worker = i;
    e.before = before;
    e.after = sharded.node->DebugString();
    e.requested_policy = std::string(AutoShardPolicyName(policy));
    e.applied_policy = std::string(AutoShardPolicyName(sharded.applied));
    e.shard_reason = ShardReason(policy, sharded, w, i);
    e.rebatch = std::move(rebatch);
    e.rebatch_detail = std::move(detail);
    explain.push_back(std::move(e));
  };

  if (version == SemanticsVersion::k2_2) {
    TPUSIM_RETURN_IF_ERROR(CheckNoScalarComponents(dataset.element_spec()));
    TPUSIM_ASSIGN_OR_RETURN(RebatchResult rebatched,
                            RebatchGraph(dataset.node(), n));
    kind = rebatched.kind;
    TPUSIM_ASSIGN_OR_RETURN(NodePtr root,
                            PrefetchNode::Make(rebatched.node, n));
    spec = RebatchedElementSpec(dataset.element_spec(), n);
    int64_t b = ComputeBatchSize(dataset.node());
    // The batch op the rewrite changed, when the 2.4 search finds none (e.g.
    // a batch inside a flat_map body) and all rewritten ones agree.
    if (b < 0 && !rebatched.batch_sizes.empty() &&
        std::all_of(rebatched.batch_sizes.begin(), rebatched.batch_sizes.end(),
                    [&](int64_t s) { return s == rebatched.batch_sizes[0]; })) {
      b = rebatched.batch_sizes[0];
    }
    const std::string bs = b >= 0 ? absl::StrCat(b) : std::string("unknown");
    std::string detail;
    switch (rebatched.kind) {
      case RebatchKind::kCase1:
        detail = absl::StrCat(
            "Case 1: global batch ", bs, " over ", n,
            " replicas: the batch op is rewritten to batch(", bs, "/", n,
            b >= 0 ? absl::StrCat(" = ", b / n) : std::string(), ")");
        break;
      case RebatchKind::kCase2:
        detail = absl::StrCat(
            "Case 2: global batch ", bs, " over ", n,
            " replicas does not divide: a flat_map after the batch op splits "
            "each batch into pieces of ceil(",
            bs, "/", n,
            b >= 0 ? absl::StrCat(") = ", (b + n - 1) / n) : std::string(")"));
        break;
      case RebatchKind::kFallback: {
        const auto leaves = dataset.element_spec().Flatten();
        const int64_t l = leaves.empty() || leaves[0]->shape.rank() == 0
                              ? -1
                              : leaves[0]->shape.dim(0);
        const std::string ls = l >= 0 ? absl::StrCat(l) : std::string("L");
        detail = absl::StrCat(
            "fallback: no batch op found; each element (",
            ElementSpecToString(dataset.element_spec()), ", dimension 0 = ", ls,
            ") is reshaped to (", n, ", ", ls, "/", n,
            l >= 0 ? absl::StrCat(" = ", l / n) : std::string(),
            ", ...) and unbatched into ", n, " pieces");
      } break;
    }
    for (int i = 0; i < w; ++i) {
      TPUSIM_ASSIGN_OR_RETURN(AutoShardResult sharded,
                              AutoShard(root, w, i, policy, n, version));
      explained(i, sharded,
                std::string(n > 1 ? RebatchKindName(rebatched.kind) : "none"),
                n > 1 ? detail : "one replica: batches are used as they are");
      worker_datasets.emplace_back(sharded.node, worker_options);
      applied.push_back(sharded.applied);
      for (std::string& warning : sharded.warnings)
        warnings.push_back(std::move(warning));
    }
  } else {
    // tpusim choice: TF 2.4's batch_sizes_for_worker assumes R replicas on
    // every worker; other layouts are rejected rather than guessed.
    const int r = static_cast<int>(workers.replicas_per_worker[0].size());
    for (int i = 0; i < w; ++i) {
      if (static_cast<int>(workers.replicas_per_worker[i].size()) != r) {
        return absl::InvalidArgumentError(absl::StrCat(
            "semantics ", SemanticsVersionName(version),
            " needs the same number of replicas on every worker; "
            "worker 0 has ",
            r, ", worker ", i, " has ", workers.replicas_per_worker[i].size()));
      }
    }
    int64_t global_batch = -1;
    if (n > 1) {
      TPUSIM_RETURN_IF_ERROR(CheckNoScalarComponents(dataset.element_spec()));
      global_batch = ComputeBatchSize(dataset.node());
    }
    for (int i = 0; i < w; ++i) {
      NodePtr node = dataset.node();
      std::string rebatch = "none";
      std::string detail = "one replica: batches are used as they are";
      if (n > 1) {
        if (global_batch > 0) {
          const std::vector<int64_t> sizes =
              BatchSizesForWorker(global_batch, w, r, i);
          rebatch = "batch_sizes";
          detail = absl::StrCat(SemanticsVersionName(version), ": global batch ", global_batch, ", ", w,
                                " workers x ", r,
                                " replicas: RebatchDatasetV2(batch_sizes=[",
                                absl::StrJoin(sizes, ", "), "]) on worker ", i);
        } else {
          rebatch = "legacy_split";
          detail = absl::StrCat(
              SemanticsVersionName(version), ": the global batch size is not known statically: the legacy "
              "RebatchDataset(num_replicas=",
              n, ") splits every batch into ", n, " pieces");
        }
        if (global_batch > 0) {
          TPUSIM_ASSIGN_OR_RETURN(
              node, RebatchV2Node::Make(
                        node, BatchSizesForWorker(global_batch, w, r, i)));
        } else {
          TPUSIM_ASSIGN_OR_RETURN(node, LegacyRebatchNode::Make(node, n));
        }
        TPUSIM_ASSIGN_OR_RETURN(node, PrefetchNode::Make(node, r));
      }
      if (i == 0) spec = node->element_spec();
      TPUSIM_ASSIGN_OR_RETURN(AutoShardResult sharded,
                              AutoShard(node, w, i, policy, n, version));
      explained(i, sharded, rebatch, detail);
      worker_datasets.emplace_back(sharded.node, worker_options);
      applied.push_back(sharded.applied);
      for (std::string& warning : sharded.warnings)
        warnings.push_back(std::move(warning));
    }
  }
  const bool optional =
      options.enable_get_next_as_optional && !IsStaticallyShaped(spec);
  DistributedDataset out(workers, std::move(worker_datasets),
                         std::move(applied), std::move(spec), optional, kind,
                         std::move(warnings));
  out.set_explanations(std::move(explain));
  return out;
}

absl::StatusOr<DistributedDataset> DistributeDatasetsFromFunctionWithContexts(
    const DatasetFunction& dataset_fn, const InputWorkers& workers,
    const std::vector<InputContext>& contexts,
    const DistributeOptions& options) {
  TPUSIM_RETURN_IF_ERROR(ValidateCommon(workers, options));
  if (static_cast<int>(contexts.size()) != workers.num_workers()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the number of input contexts (", contexts.size(),
                     ") must equal the number of input workers (",
                     workers.num_workers(), ")"));
  }
  std::vector<Dataset> datasets;
  for (const InputContext& ctx : contexts) {
    Dataset ds = dataset_fn(ctx);
    if (!ds.ok()) return ds.status();
    datasets.push_back(std::move(ds));
  }
  ElementSpec spec = datasets[0].element_spec();
  const bool optional =
      options.enable_get_next_as_optional && !IsStaticallyShaped(spec);
  std::vector<AutoShardPolicy> applied(datasets.size(), AutoShardPolicy::kOff);
  std::vector<WorkerExplanation> explain;
  for (size_t i = 0; i < datasets.size(); ++i) {
    WorkerExplanation e;
    e.worker = static_cast<int>(i);
    e.before = e.after = datasets[i].node()->DebugString();
    e.requested_policy = std::string(
        AutoShardPolicyName(datasets[i].options().auto_shard_policy));
    e.applied_policy = "OFF";
    e.shard_reason =
        "datasets from a function: each worker's dataset is used as it is "
        "(no auto-shard; the function shards with its InputContext)";
    e.rebatch = "none";
    e.rebatch_detail =
        "datasets from a function hold per-replica batches: no rebatch";
    explain.push_back(std::move(e));
  }
  DistributedDataset out(workers, std::move(datasets), std::move(applied),
                         std::move(spec), optional, std::nullopt, {});
  out.set_explanations(std::move(explain));
  return out;
}

absl::StatusOr<DistributedDataset> DistributeDatasetsFromFunction(
    const DatasetFunction& dataset_fn, const InputWorkers& workers,
    const DistributeOptions& options) {
  TPUSIM_RETURN_IF_ERROR(ValidateCommon(workers, options));
  return DistributeDatasetsFromFunctionWithContexts(
      dataset_fn, workers, MakeInputContexts(workers), options);
}

absl::StatusOr<DistributedIterator> MakeDatasetIterator(
    const Dataset& dataset, const InputWorkers& workers,
    const DistributeOptions& options) {
  TPUSIM_ASSIGN_OR_RETURN(DistributedDataset dist,
                          DistributeDataset(dataset, workers, options));
  return dist.MakeIterator();
}

absl::StatusOr<DistributedIterator> MakeInputFnIterator(
    const InputFn& input_fn, const InputWorkers& workers,
    InputReplicationMode replication_mode, const DistributeOptions& options) {
  if (replication_mode != InputReplicationMode::kPerWorker) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Input replication mode not supported: ",
        static_cast<int>(replication_mode), "; only PER_WORKER (0) is"));
  }
  TPUSIM_RETURN_IF_ERROR(ValidateCommon(workers, options));
  std::vector<DistributedIterator::WorkerInput> inputs;
  std::optional<ElementSpec> spec;
  for (const InputContext& ctx : MakeInputContexts(workers)) {
    InputFnResult result = input_fn(ctx);
    if (auto* ds = std::get_if<Dataset>(&result)) {
      if (!ds->ok()) return ds->status();
      if (!spec.has_value()) spec = ds->element_spec();
      inputs.push_back({*ds, nullptr});
    } else if (auto* fn = std::get_if<ElementFn>(&result);
               fn != nullptr && *fn) {
      inputs.push_back({std::nullopt, *fn});
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "input_fn must return a tf.data.Dataset or a callable; for ",
          ctx.DebugString(), " it returned neither"));
    }
  }
  // tpusim choice [U]: a dataset-returning input_fn uses get-next-as-optional
  // like distribute_datasets_from_function (worker 0's spec decides); callables
  // never end.
  const bool optional = spec.has_value() &&
                        options.enable_get_next_as_optional &&
                        !IsStaticallyShaped(*spec);
  return DistributedIterator::Create(workers, std::move(inputs),
                                     spec.value_or(ElementSpec()), optional);
}

}  // namespace tpusim::data
