// strategy/data/auto_shard.h
//
// Auto-sharding (tf.data's AutoShardDataset rewrite): makes worker i of W read
// only its part of a dataset, by policy (spec (b) "Multi-worker
// auto-sharding"):
//
//   TPUSIM_ASSIGN_OR_RETURN(
//       AutoShardResult r,
//       AutoShard(node, /*num_workers=*/2, /*index=*/0, AutoShardPolicy::kAuto,
//                 /*num_replicas=*/4, SemanticsVersion::k2_2));
//
// r.node is the worker's graph, r.applied the policy that took effect (kFile
// or kData), r.warnings AUTO's fallback note.
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

// The shard auto-shard inserts: TF's ShardDataset with require_non_empty=true
// (ShardNode with the wording of `version`).
absl::StatusOr<NodePtr> MakeRequireNonEmptyShard(NodePtr input,
                                                 int64_t num_shards,
                                                 int64_t index,
                                                 SemanticsVersion version);

struct AutoShardResult {
  NodePtr node;
  // The policy that took effect: kOff (also for W == 1), kFile or kData.
  AutoShardPolicy applied = AutoShardPolicy::kOff;
  // AUTO's fallback note ("... switching to DATA-based sharding ..."), for the
  // caller to show.
  std::vector<std::string> warnings;
};

// FILE sharding (TF's auto_shard.cc). Walks from `root` through pass-through
// ops (batch, map, filter, prefetch, repeat, shuffle, shard, take, skip, cache,
// rebatch) and every input of zip/concatenate. At a flat_map/interleave whose
// body holds a reader op (TFRecord, TextLine, FixedLengthRecord) reading the
// function's argument (also in a nested flat_map/interleave), it inserts a
// require-non-empty shard(W, i) as the function's input (the file names;
// worker i gets files i, i+W, ...); every shuffle upstream is removed and one
// shuffle (the parameters of the last one removed, in depth-first order) is
// re-inserted after the shard. NotFound for an unshardable source (range,
// from_tensors, from_tensor_slices, ...), for a reader op with a constant file
// list at top level (TF cannot shard a non-dataset input either), and for a
// node that is neither a pass-through nor a reader-holding op (e.g. the
// reader-less flat_map a 2.2 Case-2 or fallback rebatch inserts).
//
// Like TF, the walk stops at the first failure: `partial` (if not null)
// receives the graph with the changes made up to that point (AUTO continues
// from it).
absl::StatusOr<NodePtr> ShardByFile(
    const NodePtr& root, int64_t num_workers, int64_t index,
    NodePtr* partial = nullptr,
    SemanticsVersion version = SemanticsVersion::k2_2);

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
