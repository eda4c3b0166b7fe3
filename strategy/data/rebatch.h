// strategy/data/rebatch.h
//
// Rebatching: turning a dataset of GLOBAL batches into a dataset of per-replica
// "minibatches", as experimental_distribute_dataset does (spec (b)).
//
// TF 2.2 (the default) does it as a graph rewrite of the outermost batch op:
//
//   TPUSIM_ASSIGN_OR_RETURN(RebatchResult r,
//                           RebatchGraph(ds.node(), /*num_replicas=*/2));
//
// range(10).batch(8) becomes range(10).batch(4) (Case 1);
// range(10).batch(5) becomes range(10).batch(5).flat_map(slice, batch(3))
// (Case 2); from_tensors(<[8,3] tensor>) becomes
// from_tensors(...).map(reshape to [2,4,3]).flat_map(from_tensor_slices)
// (the fallback).
//
// TF 2.4 (an explicit option) appends a rebatch op instead: RebatchDatasetV2
// with per-worker balanced batch sizes (BatchSizesForWorker), or the legacy
// N-piece split (RebatchDataset) when the batch size is unknown. Both are
// ordinary DatasetNodes defined here.

#ifndef TPUSIM_STRATEGY_DATA_REBATCH_H_
#define TPUSIM_STRATEGY_DATA_REBATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/data/dataset.h"

namespace tpusim::data {

// Which TensorFlow release's input semantics to reproduce (spec "tpusim
// conventions").
// k2_21 is TF 2.21 (the version the differential suite tests/conformance/
// runs): 2.4's input pipeline, except that with one input worker the DATA
// policy (and AUTO when FILE finds no reader) still applies the auto-shard
// rewrite, which turns the RebatchDatasetV2 back into the legacy N-piece
// rebatch (docs/semantics.md).
enum class SemanticsVersion { k2_2, k2_4, k2_21 };

// "2.2" → k2_2, "2.4" → k2_4, "2.21" → k2_21; anything else → InvalidArgument
// naming the value and the allowed ones.
absl::StatusOr<SemanticsVersion> ParseSemanticsVersion(
    absl::string_view version);
absl::string_view SemanticsVersionName(
    SemanticsVersion version);  // "2.2" / "2.4" / "2.21"

// InvalidArgument (TF's ValueError) when any component of `spec` is a scalar:
// distributing needs elements of rank >= 1 (add `batch`). Components of unknown
// rank pass.
absl::Status CheckNoScalarComponents(const ElementSpec& spec);

// ---- TF 2.2: graph rewrite ----

enum class RebatchKind {
  kCase1,  // a batch op rewritten to batch(B/N)
  kCase2,  // a flat_map splitting each batch into pieces of ceil(B/N) inserted
           // after it
  kFallback,  // no usable batch op: reshape to (N, L/N, ...) and unbatch at the
              // end
};
absl::string_view RebatchKindName(
    RebatchKind kind);  // "case1", "case2", "fallback"

struct RebatchResult {
  NodePtr node;
  // What was done. With zip/concatenate several batch ops may be rewritten;
  // `kind` is then kCase2 if any of them needed Case 2, else kCase1.
  RebatchKind kind = RebatchKind::kCase1;
  // The batch_size of every batch op rewritten (walk order; also those found
  // inside flat_map/interleave bodies, e.g. window(n).flat_map(batch(n)));
  // empty for the fallback.
  std::vector<int64_t> batch_sizes;
};

// TF 2.2's rebatch rewrite with split_batch_by = num_replicas (spec (b)
// "Rebatch rules, TF 2.2"). Walks from `root` towards the source through
// pass-through ops (map, filter, prefetch, repeat, shuffle, shard, cache, take,
// skip), into every input of zip/concatenate and into flat_map/interleave
// bodies, and rewrites the first batch op found on each path. If that fails (a
// source or an unsupported op reached without a batch), the fallback is applied
// to the unchanged graph. Errors: InvalidArgument "cannot use rebatching
// fallback ..." when the fallback needs a statically known leading dimension,
// equal across components and divisible by num_replicas, and the element spec
// does not have one (the message names the dims); InvalidArgument for
// num_replicas < 1. No prefetch is added here.
absl::StatusOr<RebatchResult> RebatchGraph(const NodePtr& root,
                                           int64_t num_replicas);

// The per-replica element spec TF 2.2 reports: each component's dimension 0
// becomes dim0 / num_replicas when known and divisible, otherwise unknown.
ElementSpec RebatchedElementSpec(const ElementSpec& global_spec,
                                 int64_t num_replicas);

// ---- TF 2.4 ----

// The per-worker batch sizes of RebatchDatasetV2: with floor = B div (W·R) and
// k = B − W·R·floor, worker 0 gets k copies of floor+1 followed by floor's;
// worker i gets worker 0's list rotated left by i·R. B=7, W=2, R=2 → [2,2,2,1]
// (worker 0), [2,1,2,2] (1). Precondition: global_batch_size >= 0, num_workers
// >= 1, replicas_per_worker >= 1, 0 <= worker_index < num_workers.
std::vector<int64_t> BatchSizesForWorker(int64_t global_batch_size,
                                         int num_workers,
                                         int replicas_per_worker,
                                         int worker_index);

// The static global batch size as TF 2.4's compute_batch_size finds it:
// dimension 0 of the element spec when known and equal for every component;
// otherwise the batch_size of the outermost batch op reached through
// pass-through ops (all zip/concatenate inputs must agree); otherwise -1
// (unknown). tpusim choice: the ops walked through are those of the 2.2
// rewrite (map, filter, prefetch, repeat, shuffle, shard, cache, take, skip);
// anything else (e.g. flat_map) gives -1.
int64_t ComputeBatchSize(const NodePtr& root);

// RebatchDatasetV2: re-slices the input's batches into output batches whose
// sizes cycle through `batch_sizes`, combining rows of consecutive input
// batches as needed; at the end of the input the rows collected so far are
// emitted as a short batch. A size of 0 emits an empty batch (dimension 0 = 0,
// other dims from the next input batch). Components of one input batch with
// different dimension 0 → InvalidArgument at iteration.
class RebatchV2Node final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "RebatchDatasetV2";
  // InvalidArgument: empty batch_sizes, a negative size, all sizes 0, or a
  // scalar component.
  static absl::StatusOr<NodePtr> Make(NodePtr input,
                                      std::vector<int64_t> batch_sizes);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  const std::vector<int64_t>& batch_sizes() const { return batch_sizes_; }

  RebatchV2Node(NodePtr input, std::vector<int64_t> batch_sizes,
                ElementSpec spec);  // use Make

 private:
  std::vector<int64_t> batch_sizes_;
};

// The legacy RebatchDataset kernel of TF 2.4: splits every input batch of size
// p into exactly num_replicas pieces of ceil(p/N) rows (the last ones short or
// EMPTY): range(8).batch(4), N=3 → [0,1],[2,3],[],[4,5],[6,7],[]. Each
// component is split on its own dimension 0 (TF's kernel does the same), so
// zip(range(8).batch(4), range(4).batch(2)), N=3 → ([0,1],[0]), ([2,3],[1]),
// ([],[]), ...
class LegacyRebatchNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "RebatchDataset";
  // InvalidArgument: num_replicas < 1 or a scalar component.
  static absl::StatusOr<NodePtr> Make(NodePtr input, int64_t num_replicas);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t num_replicas() const { return num_replicas_; }

  LegacyRebatchNode(NodePtr input, int64_t num_replicas,
                    ElementSpec spec);  // use Make

 private:
  int64_t num_replicas_;
};

// The per-replica spec of RebatchDatasetV2 (tpusim choice, from a reading of
// TF 2.4's static batch dim): dimension 0 is b when every size equals b > 0 and
// the input's dimension 0 is known and divisible by b (so no partial batch can
// occur); otherwise unknown.
ElementSpec RebatchV2ElementSpec(const ElementSpec& input_spec,
                                 const std::vector<int64_t>& batch_sizes);

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_REBATCH_H_
