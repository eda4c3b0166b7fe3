// strategy/data/auto_shard.h
//
// Auto-sharding (tf.data's AutoShardDataset rewrite): makes worker i of W read
// only its part of a dataset, by policy (spec (b) "Multi-worker
// auto-sharding"):
//
//   std::vector<std::string> warnings;
//   TPUSIM_ASSIGN_OR_RETURN(AutoShardResult r,
//                           AutoShard(node, /*num_workers=*/2, /*index=*/0,
//                                     AutoShardPolicy::kAuto,
//                                     /*num_replicas=*/4,
//                                     SemanticsVersion::k2_2));
//   // r.node: the worker's graph; r.applied: kFile or kData; r.warnings:
//   AUTO's fallback note
//
// FILE inserts a require-non-empty shard(W, i) on the file-name input of the
// readers; DATA appends one at the very end; AUTO tries FILE and falls back to
// DATA on NotFound; OFF and W == 1 change nothing.

#ifndef TPUSIM_STRATEGY_DATA_AUTO_SHARD_H_
#define TPUSIM_STRATEGY_DATA_AUTO_SHARD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/data/dataset.h"
#include "strategy/data/rebatch.h"

namespace tpusim::data {

// The shard auto-shard inserts: TF's ShardDataset with require_non_empty=true.
// It keeps elements index, index+num_shards, ... like shard(); in addition,
// after taking its first element it reads ahead to position num_shards-1 and,
// if the input ends before that, fails with InvalidArgument "... not enough
// elements ... (# elems = M, # shards = W) ..." (TF 2.2's check). A worker
// whose index is >= M sees a clean end instead. After the error the iterator is
// at its end.
class RequireNonEmptyShardNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp =
      "ShardDataset";  // TF's op, attr require_non_empty
  // num_shards >= 1 and 0 <= index < num_shards, else InvalidArgument.
  static absl::StatusOr<NodePtr> Make(NodePtr input, int64_t num_shards,
                                      int64_t index);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> MakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t num_shards() const { return num_shards_; }
  int64_t index() const { return index_; }

  RequireNonEmptyShardNode(NodePtr input, int64_t num_shards,
                           int64_t index);  // use Make

 private:
  int64_t num_shards_, index_;
};

struct AutoShardResult {
  NodePtr node;
  // The policy that took effect: kOff (also for W == 1), kFile or kData.
  AutoShardPolicy applied = AutoShardPolicy::kOff;
  // AUTO's fallback note ("... switching to DATA-based sharding ..."), for the
  // caller to show.
  std::vector<std::string> warnings;
};

// FILE sharding. Walks from `root` through pass-through ops (batch, map,
// filter, prefetch, repeat, shuffle, shard, take, skip, cache, rebatch) and
// every input of zip/concatenate. At a flat_map/interleave whose body holds a
// reader op (TFRecord, TextLine, FixedLengthRecord) it inserts a
// require-non-empty shard(W, i) on the function's input (the file names; worker
// i gets files i, i+W, ...); shuffles on that input are moved after the shard.
// A reader op with a constant file list at top level is expanded to
// from_tensor_slices(files).shard(W, i).flat_map(reader) (tpusim choice: TF
// never builds that graph itself). NotFound for an unshardable source (range,
// from_tensors, from_tensor_slices, ...) or a node that is neither a
// pass-through nor a reader-holding op (e.g. a flat_map without a reader, like
// the one a 2.2 Case-2 or fallback rebatch inserts).
//
// Like TF, the walk stops at the first failure: `partial` (if not null)
// receives the graph with the changes made up to that point (AUTO continues
// from it).
absl::StatusOr<NodePtr> ShardByFile(const NodePtr& root, int64_t num_workers,
                                    int64_t index, NodePtr* partial = nullptr);

// DATA sharding: appends a require-non-empty shard(W, i) at the very end.
// Under 2.4 every RebatchDatasetV2 is first turned back into the legacy
// RebatchDataset(num_replicas) (as TF's auto_shard does).
absl::StatusOr<NodePtr> ShardByData(const NodePtr& root, int64_t num_workers,
                                    int64_t index, int64_t num_replicas,
                                    SemanticsVersion version);

// The auto-shard rewrite for worker `index` of `num_workers`. W == 1 or kOff:
// unchanged. kFile: ShardByFile (its NotFound propagates). kData: ShardByData.
// kAuto: FILE, and on NotFound a warning plus DATA on the partially
// FILE-sharded graph (AUTO does not undo what FILE changed). Other errors
// propagate. InvalidArgument for num_workers < 1 or an index outside [0,
// num_workers).
absl::StatusOr<AutoShardResult> AutoShard(const NodePtr& root,
                                          int64_t num_workers, int64_t index,
                                          AutoShardPolicy policy,
                                          int64_t num_replicas,
                                          SemanticsVersion version);

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_AUTO_SHARD_H_
