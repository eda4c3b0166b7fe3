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

bool IsFilePassThrough(absl::string_view op) {
  return op == BatchNode::kOp || op == PaddedBatchNode::kOp ||
         op == MapNode::kOp || op == FilterNode::kOp ||
         op == PrefetchNode::kOp || op == RepeatNode::kOp ||
         op == ShuffleNode::kOp || op == ShardNode::kOp ||
         op == TakeNode::kOp || op == SkipNode::kOp || op == CacheNode::kOp ||
         op == RebatchV2Node::kOp || op == LegacyRebatchNode::kOp ||
         op == MapAndBatchNode::kOp || op == WindowNode::kOp;
}

// TF's ReaderOpInFunction: the body holds a reader whose file names are the
// function's argument, or a nested flat_map/interleave whose body does.
bool BodyHasReader(const FunctionNode& fn) {
  for (const NodePtr& n : TopologicalOrder(fn.body())) {
    if (IsReaderOp(n->op())) {
      const auto* reader = dynamic_cast<const ReaderNode*>(n.get());
      if (reader != nullptr && reader->filenames().is_argument()) return true;
    }
    if (const auto* nested = dynamic_cast<const FunctionNode*>(n.get())) {
      if (BodyHasReader(*nested)) return true;
    }
  }
  return false;
}

// Removes every shuffle upstream of `node` (not inside function bodies),
// remembering the last one in pre-order depth-first order, as TF's
// RemoveShuffleDataset does.
absl::StatusOr<NodePtr> StripShuffles(const NodePtr& node,
                                      NodePtr& last_shuffle) {
  if (node->op() == ShuffleNode::kOp) {
    last_shuffle = node;
    return StripShuffles(node->inputs()[0], last_shuffle);
  }
  std::vector<NodePtr> inputs;
  bool changed = false;
  for (const NodePtr& input : node->inputs()) {
    TPUSIM_ASSIGN_OR_RETURN(NodePtr out, StripShuffles(input, last_shuffle));
    changed = changed || out != input;
    inputs.push_back(std::move(out));
  }
  if (!changed) return node;
  return Rebuild(*node, std::move(inputs));
}

// TF's ProcessDatasetSourceNode for a flat_map/interleave holding a reader: a
// require-non-empty shard becomes the function's input, every shuffle upstream
// is removed, and one shuffle (with the parameters of the last one removed) is
// re-inserted between the shard and the function. Files are thus assigned by
// their unshuffled position, and each worker then shuffles its own subset.
absl::StatusOr<NodePtr> ShardFunctionInput(const FunctionNode& fn, int64_t w,
                                           int64_t i,
                                           SemanticsVersion version) {
  NodePtr last_shuffle;
  TPUSIM_ASSIGN_OR_RETURN(NodePtr input,
                          StripShuffles(fn.inputs()[0], last_shuffle));
  TPUSIM_ASSIGN_OR_RETURN(NodePtr sharded,
                          MakeRequireNonEmptyShard(input, w, i, version));
  if (last_shuffle != nullptr) {
    TPUSIM_ASSIGN_OR_RETURN(sharded, Rebuild(*last_shuffle, {sharded}));
  }
  return Rebuild(fn, {sharded});
}

struct FileWalk {
  int64_t w;
  int64_t i;
  SemanticsVersion version;
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
  absl::StatusOr<NodePtr> rebuilt = Rebuild(*node, std::move(inputs));
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
    absl::StatusOr<NodePtr> out =
        ShardFunctionInput(*fn, walk.w, walk.i, walk.version);
    if (!out.ok()) {
      walk.status = out.status();
      return node;
    }
    return *std::move(out);
  }
  if (IsReaderOp(op)) {
    // TF's AddShardNode can only shard a dataset input, not a reader's
    // constant file-name tensor (TF's own readers always wrap the names in
    // from_tensor_slices + flat_map, as Dataset::TFRecord(filenames) does).
    walk.status = absl::NotFoundError(absl::StrCat(
        "auto-shard FILE: unable to shard the input of ", node->ShortString(),
        ": its file names are a constant tensor, not a dataset; wrap them in "
        "from_tensor_slices and read them with flat_map, or use the DATA "
        "policy"));
    return node;
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
  return Rebuild(*node, std::move(inputs));
}

}  // namespace

absl::StatusOr<NodePtr> MakeRequireNonEmptyShard(NodePtr input,
                                                 int64_t num_shards,
                                                 int64_t index,
                                                 SemanticsVersion version) {
  return ShardNode::Make(std::move(input), num_shards, index,
                         version != SemanticsVersion::k2_2
                             ? ShardNonEmpty::kTf24Wording
                             : ShardNonEmpty::kTf22Wording);
}

// ---- policies ----

absl::StatusOr<NodePtr> ShardByFile(const NodePtr& root, int64_t num_workers,
                                    int64_t index, NodePtr* partial,
                                    SemanticsVersion version) {
  FileWalk walk{num_workers, index, version, absl::OkStatus()};
  NodePtr out = WalkFile(root, walk);
  if (partial != nullptr) *partial = out;
  if (!walk.status.ok()) return walk.status;
  return out;
}

absl::StatusOr<NodePtr> ShardByData(const NodePtr& root, int64_t num_workers,
                                    int64_t index, int64_t num_replicas,
                                    SemanticsVersion version) {
  NodePtr node = root;
  if (version != SemanticsVersion::k2_2) {
    TPUSIM_ASSIGN_OR_RETURN(node, RebatchV2ToLegacy(root, num_replicas));
  }
  return MakeRequireNonEmptyShard(node, num_workers, index, version);
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
  if (policy == AutoShardPolicy::kOff) return result;
  if (num_workers == 1) {
    // TF 2.21 (seen by tests/conformance/): one worker still gets the DATA
    // rewrite (the V2 rebatch becomes the legacy N-piece split), under DATA
    // and under AUTO when FILE finds no reader; FILE, and AUTO that finds
    // one, change nothing. Older versions skip auto-shard for one worker.
    // The shard(1, 0) TF's rewrite also appends keeps every element and is
    // left out.
    if (version != SemanticsVersion::k2_21 ||
        policy == AutoShardPolicy::kFile) {
      return result;
    }
    if (policy == AutoShardPolicy::kAuto &&
        ShardByFile(root, num_workers, index, nullptr, version).ok()) {
      return result;
    }
    TPUSIM_ASSIGN_OR_RETURN(result.node, RebatchV2ToLegacy(root, num_replicas));
    result.applied = AutoShardPolicy::kData;
    return result;
  }
  switch (policy) {
    case AutoShardPolicy::kFile: {
      TPUSIM_ASSIGN_OR_RETURN(
          result.node, ShardByFile(root, num_workers, index, nullptr, version));
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
          ShardByFile(root, num_workers, index, &partial, version);
      if (by_file.ok()) {
        result.node = *std::move(by_file);
        result.applied = AutoShardPolicy::kFile;
        return result;
      }
      if (by_file.status().code() != absl::StatusCode::kNotFound)
        return by_file.status();
      // tpusim choice: one warning per worker (TF logs one per worker's
      // rewrite), naming the worker and the FILE failure.
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
