// strategy/data/auto_shard.cc

#include "strategy/data/auto_shard.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "strategy/data/dataset_nodes.h"

namespace tpusim::data {
namespace {

using runtime::Shape;
using runtime::Tensor;

class RequireNonEmptyShardIterator final : public DatasetIterator {
 public:
  RequireNonEmptyShardIterator(IteratorPtr input, int64_t num_shards,
                               int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}

  absl::StatusOr<std::optional<Element>> GetNext() override {
    if (input_ == nullptr) return std::optional<Element>();
    std::optional<Element> result;
    do {
      TPUSIM_ASSIGN_OR_RETURN(result, input_->GetNext());
      if (!result.has_value()) {
        input_.reset();
        return std::optional<Element>();
      }
      ++next_index_;
    } while ((next_index_ - 1) % num_shards_ != index_);
    // TF 2.2 shard_dataset_op: the first element of every shard must exist;
    // read ahead to position num_shards-1 and fail if the input ends before.
    while (next_index_ < num_shards_) {
      TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> unused, input_->GetNext());
      if (!unused.has_value()) {
        input_.reset();
        return absl::InvalidArgumentError(absl::StrCat(
            "ShardDataset(require_non_empty): there aren't enough elements in "
            "this dataset "
            "for each shard to have at least one element (# elems = ",
            next_index_, ", # shards = ", num_shards_,
            "); with a distribution strategy, consider setting the auto-shard "
            "policy to DATA "
            "or OFF (options.auto_shard_policy)"));
      }
      ++next_index_;
    }
    return result;
  }

 private:
  IteratorPtr input_;
  int64_t num_shards_, index_;
  int64_t next_index_ = 0;
};

bool IsFilePassThrough(absl::string_view op) {
  return op == BatchNode::kOp || op == MapNode::kOp || op == FilterNode::kOp ||
         op == PrefetchNode::kOp || op == RepeatNode::kOp ||
         op == ShuffleNode::kOp || op == ShardNode::kOp ||
         op == TakeNode::kOp || op == SkipNode::kOp || op == CacheNode::kOp ||
         op == RebatchV2Node::kOp || op == LegacyRebatchNode::kOp;
}

bool BodyHasReader(const FunctionNode& fn) {
  for (const NodePtr& n : TopologicalOrder(fn.body())) {
    if (IsReaderOp(n->op())) return true;
  }
  return false;
}

// Inserts the shard as the function node's input, moving shuffles of the
// file-name chain after it.
absl::StatusOr<NodePtr> ShardFunctionInput(const FunctionNode& fn, int64_t w,
                                           int64_t i) {
  const NodePtr& input = fn.inputs()[0];
  std::vector<NodePtr> chain;  // top (nearest the function) first
  NodePtr base = input;
  while (base->inputs().size() == 1 && IsFilePassThrough(base->op())) {
    chain.push_back(base);
    base = base->inputs()[0];
  }
  std::vector<NodePtr> shuffles;  // source side first
  NodePtr rebuilt = base;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if ((*it)->op() == ShuffleNode::kOp) {
      shuffles.push_back(*it);
    } else {
      TPUSIM_ASSIGN_OR_RETURN(rebuilt, (*it)->WithInputs({rebuilt}));
    }
  }
  if (shuffles.empty()) rebuilt = input;
  TPUSIM_ASSIGN_OR_RETURN(NodePtr sharded,
                          RequireNonEmptyShardNode::Make(rebuilt, w, i));
  for (const NodePtr& shuffle : shuffles) {
    TPUSIM_ASSIGN_OR_RETURN(sharded, shuffle->WithInputs({sharded}));
  }
  return fn.WithInputs({sharded});
}

// A top-level reader op with a constant file list becomes
// from_tensor_slices(files).shard(W, i).flat_map(reader(file)).
absl::StatusOr<NodePtr> ShardReader(const NodePtr& node, int64_t w, int64_t i) {
  const auto* reader = dynamic_cast<const ReaderNode*>(node.get());
  if (reader == nullptr || reader->filenames().is_argument()) {
    return absl::NotFoundError(
        absl::StrCat("auto-shard FILE: reader ", node->op(),
                     " has no file-name input to shard"));
  }
  Tensor files = reader->filenames().constant();
  if (files.rank() == 0) {
    TPUSIM_ASSIGN_OR_RETURN(files, files.Reshape(Shape({1})));
  }
  TPUSIM_ASSIGN_OR_RETURN(
      NodePtr slices, TensorSliceNode::Make(TensorRefNest(TensorRef(files))));
  TPUSIM_ASSIGN_OR_RETURN(NodePtr sharded,
                          RequireNonEmptyShardNode::Make(slices, w, i));
  DatasetFn make_reader;
  if (const auto* tfr = dynamic_cast<const TFRecordReaderNode*>(reader)) {
    std::string compression = tfr->compression_type();
    make_reader = [compression](const FunctionArg& arg) {
      return Dataset::TFRecordReader(
          arg.leaf(), TFRecordOptions{compression, std::nullopt});
    };
  } else if (const auto* fl =
                 dynamic_cast<const FixedLengthRecordReaderNode*>(reader)) {
    FixedLengthRecordOptions options;
    options.record_bytes = fl->record_bytes();
    options.header_bytes = fl->header_bytes();
    options.footer_bytes = fl->footer_bytes();
    make_reader = [options](const FunctionArg& arg) {
      return Dataset::FixedLengthRecordReader(arg.leaf(), options);
    };
  } else {
    make_reader = [](const FunctionArg& arg) {
      return Dataset::TextLineReader(arg.leaf());
    };
  }
  return FlatMapNode::Make(sharded, make_reader);
}

struct FileWalk {
  int64_t w;
  int64_t i;
  absl::Status status;
};

NodePtr WalkFile(const NodePtr& node, FileWalk& walk);

// Rebuilds `node` with walked inputs (stopping the walk at the first failure).
NodePtr WalkInputs(const NodePtr& node, FileWalk& walk) {
  std::vector<NodePtr> inputs;
  bool changed = false;
  for (const NodePtr& input : node->inputs()) {
    if (!walk.status.ok()) {
      inputs.push_back(input);
      continue;
    }
    NodePtr out = WalkFile(input, walk);
    changed = changed || out != input;
    inputs.push_back(std::move(out));
  }
  if (!changed) return node;
  absl::StatusOr<NodePtr> rebuilt = node->WithInputs(std::move(inputs));
  if (!rebuilt.ok()) {
    if (walk.status.ok()) walk.status = rebuilt.status();
    return node;
  }
  return *std::move(rebuilt);
}

NodePtr WalkFile(const NodePtr& node, FileWalk& walk) {
  const absl::string_view op = node->op();
  const auto* fn = dynamic_cast<const FunctionNode*>(node.get());
  if (fn != nullptr && BodyHasReader(*fn)) {
    absl::StatusOr<NodePtr> out = ShardFunctionInput(*fn, walk.w, walk.i);
    if (!out.ok()) {
      walk.status = out.status();
      return node;
    }
    return *std::move(out);
  }
  if (IsReaderOp(op)) {
    absl::StatusOr<NodePtr> out = ShardReader(node, walk.w, walk.i);
    if (!out.ok()) {
      walk.status = out.status();
      return node;
    }
    return *std::move(out);
  }
  if (op == ZipNode::kOp || op == ConcatenateNode::kOp)
    return WalkInputs(node, walk);
  if (IsFilePassThrough(op) && node->inputs().size() == 1)
    return WalkInputs(node, walk);
  if (node->inputs().empty()) {
    walk.status = absl::NotFoundError(
        absl::StrCat("auto-shard FILE: found an unshardable source dataset: ",
                     node->ShortString()));
  } else {
    walk.status = absl::NotFoundError(absl::StrCat(
        "auto-shard FILE: did not find a shardable source, walked to ",
        node->ShortString(),
        ", which is neither a pass-through op nor a reader (or a "
        "flat_map/interleave whose "
        "function holds a reader)"));
  }
  return node;
}

// Replaces every RebatchDatasetV2 (outside function bodies) by
// RebatchDataset(num_replicas).
absl::StatusOr<NodePtr> RebatchV2ToLegacy(const NodePtr& node,
                                          int64_t num_replicas) {
  std::vector<NodePtr> inputs;
  bool changed = false;
  for (const NodePtr& input : node->inputs()) {
    TPUSIM_ASSIGN_OR_RETURN(NodePtr out,
                            RebatchV2ToLegacy(input, num_replicas));
    changed = changed || out != input;
    inputs.push_back(std::move(out));
  }
  if (node->op() == RebatchV2Node::kOp) {
    return LegacyRebatchNode::Make(inputs[0], num_replicas);
  }
  if (!changed) return node;
  return node->WithInputs(std::move(inputs));
}

}  // namespace

// ---- RequireNonEmptyShardNode ----

absl::StatusOr<NodePtr> RequireNonEmptyShardNode::Make(NodePtr input,
                                                       int64_t num_shards,
                                                       int64_t index) {
  if (num_shards < 1 || index < 0 || index >= num_shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ShardDataset(require_non_empty): num_shards=", num_shards, ", index=",
        index, "; need num_shards >= 1 and 0 <= index < num_shards"));
  }
  return NodePtr(std::make_shared<RequireNonEmptyShardNode>(std::move(input),
                                                            num_shards, index));
}

RequireNonEmptyShardNode::RequireNonEmptyShardNode(NodePtr input,
                                                   int64_t num_shards,
                                                   int64_t index)
    : DatasetNode({input}, input->element_spec()),
      num_shards_(num_shards),
      index_(index) {}

std::vector<NodeAttr> RequireNonEmptyShardNode::attrs() const {
  return {{"num_shards", absl::StrCat(num_shards_)},
          {"index", absl::StrCat(index_)},
          {"require_non_empty", "true"}};
}

absl::StatusOr<IteratorPtr> RequireNonEmptyShardNode::MakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  return IteratorPtr(std::make_unique<RequireNonEmptyShardIterator>(
      std::move(input), num_shards_, index_));
}

absl::StatusOr<NodePtr> RequireNonEmptyShardNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  if (inputs.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ShardDataset takes 1 input, got ", inputs.size()));
  }
  return Make(std::move(inputs[0]), num_shards_, index_);
}

// ---- policies ----

absl::StatusOr<NodePtr> ShardByFile(const NodePtr& root, int64_t num_workers,
                                    int64_t index, NodePtr* partial) {
  FileWalk walk{num_workers, index, absl::OkStatus()};
  NodePtr out = WalkFile(root, walk);
  if (partial != nullptr) *partial = out;
  if (!walk.status.ok()) return walk.status;
  return out;
}

absl::StatusOr<NodePtr> ShardByData(const NodePtr& root, int64_t num_workers,
                                    int64_t index, int64_t num_replicas,
                                    SemanticsVersion version) {
  NodePtr node = root;
  if (version == SemanticsVersion::k2_4) {
    TPUSIM_ASSIGN_OR_RETURN(node, RebatchV2ToLegacy(root, num_replicas));
  }
  return RequireNonEmptyShardNode::Make(node, num_workers, index);
}

absl::StatusOr<AutoShardResult> AutoShard(const NodePtr& root,
                                          int64_t num_workers, int64_t index,
                                          AutoShardPolicy policy,
                                          int64_t num_replicas,
                                          SemanticsVersion version) {
  if (num_workers < 1 || index < 0 || index >= num_workers) {
    return absl::InvalidArgumentError(
        absl::StrCat("auto-shard: num_workers=", num_workers, ", index=", index,
                     "; need num_workers >= 1 and 0 <= index < "
                     "num_workers"));
  }
  if (policy != AutoShardPolicy::kAuto && policy != AutoShardPolicy::kFile &&
      policy != AutoShardPolicy::kData && policy != AutoShardPolicy::kOff) {
    return absl::InvalidArgumentError(
        absl::StrCat("auto-shard: unknown policy ", static_cast<int>(policy),
                     "; allowed: AUTO=0, FILE=1, DATA=2, OFF=-1"));
  }
  AutoShardResult result;
  result.node = root;
  if (num_workers == 1 || policy == AutoShardPolicy::kOff) return result;
  switch (policy) {
    case AutoShardPolicy::kFile: {
      TPUSIM_ASSIGN_OR_RETURN(result.node,
                              ShardByFile(root, num_workers, index));
      result.applied = AutoShardPolicy::kFile;
      return result;
    }
    case AutoShardPolicy::kData: {
      TPUSIM_ASSIGN_OR_RETURN(result.node, ShardByData(root, num_workers, index,
                                                       num_replicas, version));
      result.applied = AutoShardPolicy::kData;
      return result;
    }
    case AutoShardPolicy::kAuto: {
      NodePtr partial;
      absl::StatusOr<NodePtr> by_file =
          ShardByFile(root, num_workers, index, &partial);
      if (by_file.ok()) {
        result.node = *std::move(by_file);
        result.applied = AutoShardPolicy::kFile;
        return result;
      }
      if (by_file.status().code() != absl::StatusCode::kNotFound)
        return by_file.status();
      result.warnings.push_back(absl::StrCat(
          "worker ", index, " of ", num_workers,
          ": AUTO sharding policy could not apply FILE-based sharding (",
          by_file.status().message(), "); switching to DATA-based sharding"));
      TPUSIM_ASSIGN_OR_RETURN(
          result.node,
          ShardByData(partial, num_workers, index, num_replicas, version));
      result.applied = AutoShardPolicy::kData;
      return result;
    }
    case AutoShardPolicy::kOff:
      break;
  }
  return result;
}

}  // namespace tpusim::data
