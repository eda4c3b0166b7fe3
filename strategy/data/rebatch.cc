// strategy/data/rebatch.cc

#include "strategy/data/rebatch.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/check.h"
#include "common/status_macros.h"
#include "strategy/data/dataset_nodes.h"
#include "strategy/data/sparse.h"

namespace tpusim::data {
namespace {

using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;

// Ops the 2.2 rewrite walks through (their element count may change, their
// element structure follows the input's): rebatch.cc's pass-through list
// restricted to the ops tpusim has.
bool IsRebatchPassThrough(absl::string_view op) {
  return op == MapNode::kOp || op == FilterNode::kOp ||
         op == PrefetchNode::kOp || op == RepeatNode::kOp ||
         op == ShuffleNode::kOp || op == ShardNode::kOp ||
         op == CacheNode::kOp || op == TakeNode::kOp || op == SkipNode::kOp;
}

bool IsMultiInput(absl::string_view op) {
  return op == ZipNode::kOp || op == ConcatenateNode::kOp;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// `node` (a pass-through op) over its rewritten input. Every node downstream
// of the rewritten batch re-derives its spec, as TF 2.2's rewrite updates
// their output_shapes (UpdateOutputShapes) and never checks them at run time:
// the nodes whose spec follows their input's do so in Make; a map with a
// declared output spec is the one node whose spec is fixed, so its dimension
// 0 is rebatched like the batch's (RebatchedElementSpec: B -> B / N when N
// divides B; tpusim choice where it does not: unknown, since the pieces are
// ceil(B / N) rows and fewer, while TF's B / N matches no piece and is never
// checked).
absl::StatusOr<NodePtr> WithRewrittenInput(const DatasetNode& node,
                                           NodePtr input, int64_t n) {
  if (node.op() == MapNode::kOp) {
    MapFunction fn = static_cast<const MapNode&>(node).function();
    if (fn.output_spec.has_value()) {
      fn.output_spec = RebatchedElementSpec(*fn.output_spec, n);
    }
    TPUSIM_ASSIGN_OR_RETURN(NodePtr map,
                            MapNode::Make(std::move(input), std::move(fn)));
    return WithHostCost(std::move(map), node.host_cost_per_element());
  }
  return Rebuild(node, {std::move(input)});
}

// One batch op of batch size `b`. Case 1 (no drop_remainder, N divides B):
// direct mutation, `resized(B / N)` is the op with the new batch size. A host
// cost declared on the op is per batch of B rows; the mutated batch has B / N
// rows and costs 1/N of it (the pipeline's work per global batch stays what
// was declared). Case 2: each batch split into pieces of m = ceil(B/N) rows.
// tpusim choice (spec (b) open point [U]): m comes from the batch op's
// constant B, not from each actual batch's size. With drop_remainder and N
// dividing B every batch has B rows and every piece exactly m: dropping the
// (never present) remainder in the body keeps the values and gives the
// pieces the static dimension m, which is the spec TF 2.2 writes downstream
// (B / N).
absl::StatusOr<NodePtr> RewriteBatchOp(
    const NodePtr& node, int64_t b, bool drop_remainder, int64_t n,
    const std::function<absl::StatusOr<NodePtr>(int64_t)>& resized,
    bool& any_case2, std::vector<int64_t>& sizes) {
  sizes.push_back(b);
  if (!drop_remainder && b % n == 0) {
    TPUSIM_ASSIGN_OR_RETURN(NodePtr mutated, resized(b / n));
    return WithHostCost(
        std::move(mutated),
        common::Picoseconds(node->host_cost_per_element().count() / n));
  }
  any_case2 = true;
  const int64_t m = CeilDiv(b, n);
  const bool exact = drop_remainder && b % n == 0;
  return FlatMapNode::Make(node, [m, exact](const FunctionArg& arg) {
    return Dataset::FromTensorSlices(arg.nest())
        .Batch(m, /*drop_remainder=*/exact);
  });
}

// The rewrite proper. Returns the rewritten node; any error means "use the
// fallback". `any_case2` is set when a Case 2 split was inserted; the batch
// size of every batch op rewritten is appended to `sizes`.
absl::StatusOr<NodePtr> RewriteOutermostBatch(const NodePtr& node, int64_t n,
                                              bool& any_case2,
                                              std::vector<int64_t>& sizes) {
  const absl::string_view op = node->op();
  if (op == BatchNode::kOp) {
    const auto& batch = static_cast<const BatchNode&>(*node);
    return RewriteBatchOp(
        node, batch.batch_size(), batch.drop_remainder(), n,
        [&batch](int64_t size) {
          return BatchNode::Make(batch.inputs()[0], size,
                                 /*drop_remainder=*/false);
        },
        any_case2, sizes);
  }
  if (op == MapAndBatchNode::kOp) {
    // TF 2.2's rewrite lists MapAndBatchDataset among its batch ops and
    // changes its batch_size input as for BatchDatasetV2. The map's host
    // cost stays per element (it is inside the node's chain).
    const auto& batch = static_cast<const MapAndBatchNode&>(*node);
    return RewriteBatchOp(
        node, batch.batch_size(), batch.drop_remainder(), n,
        [&batch](int64_t size) { return batch.WithBatchSize(size); },
        any_case2, sizes);
  }
  if (op == PaddedBatchNode::kOp) {
    // TF 2.2's rewrite lists PaddedBatchDataset(V2) among its batch ops and
    // changes only the batch_size input: Case 1 keeps padded_shapes and
    // padding_values, so each per-replica batch pads to ITS OWN maximum.
    // Case 2 slices the padded global batch (pieces keep its padded width).
    const auto& batch = static_cast<const PaddedBatchNode&>(*node);
    return RewriteBatchOp(
        node, batch.batch_size(), batch.drop_remainder(), n,
        [&batch](int64_t size) {
          return PaddedBatchNode::Make(
              batch.inputs()[0], size, batch.padded_shapes(),
              batch.padding_values(), /*drop_remainder=*/false);
        },
        any_case2, sizes);
  }
  // WindowDataset is on TF 2.2's pass-through list too (tpusim's windows are
  // only consumed by a flat_map/interleave, whose body the rewrite enters
  // instead, so the walk meets a window only as written here).
  if (IsRebatchPassThrough(op) || op == WindowNode::kOp) {
    TPUSIM_ASSIGN_OR_RETURN(
        NodePtr input,
        RewriteOutermostBatch(node->inputs()[0], n, any_case2, sizes));
    return WithRewrittenInput(*node, std::move(input), n);
  }
  if (IsMultiInput(op)) {
    std::vector<NodePtr> inputs;
    for (const NodePtr& input : node->inputs()) {
      TPUSIM_ASSIGN_OR_RETURN(
          NodePtr rewritten, RewriteOutermostBatch(input, n, any_case2, sizes));
      inputs.push_back(std::move(rewritten));
    }
    return Rebuild(*node, std::move(inputs));
  }
  if (const auto* fn = dynamic_cast<const FunctionNode*>(node.get())) {
    TPUSIM_ASSIGN_OR_RETURN(
        NodePtr body, RewriteOutermostBatch(fn->body(), n, any_case2, sizes));
    return RebuildWithBody(*fn, std::move(body));
  }
  return absl::NotFoundError(
      absl::StrCat("rebatch: reached ", op, " without encountering a batch"));
}

// The rebatching fallback: reshape every component from [L, ...] to [N, L/N,
// ...] and unbatch.
absl::StatusOr<NodePtr> ApplyFallback(const NodePtr& root, int64_t n,
                                      const absl::Status& why) {
  const ElementSpec& spec = root->element_spec();
  std::vector<std::string> dims;
  std::optional<int64_t> leading;
  bool usable = true;
  for (const auto& [path, leaf] : spec.FlattenWithPaths()) {
    if (leaf->sparse.has_value()) {
      // TF: a sparse component's dataset tensor is a variant of unknown
      // shape (SparseTensorSpec's flat spec), so GetBatchDim fails.
      usable = false;
      dims.push_back(
          absl::StrCat(path, ":", leaf->ToString(), " (boxed: unknown shape)"));
      continue;
    }
    if (!leaf->shape.rank_known() || leaf->shape.rank() < 1) {
      usable = false;
      dims.push_back(absl::StrCat(path, ":", leaf->shape.ToString()));
      continue;
    }
    const int64_t d0 = leaf->shape.dim(0);
    dims.push_back(absl::StrCat(
        path, ":", d0 == runtime::kUnknownDim ? "?" : absl::StrCat(d0)));
    if (d0 == runtime::kUnknownDim || (leading.has_value() && *leading != d0))
      usable = false;
    leading = d0;
  }
  if (!leading.has_value()) usable = false;
  if (usable && *leading % n != 0) usable = false;
  if (!usable) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot use rebatching fallback: the leading dimension of every "
        "component must be "
        "statically known, equal across components and divisible by "
        "num_replicas=",
        n, "; got leading dims [", absl::StrJoin(dims, ", "),
        "] (no batch op could be rewritten: ", why.message(), ")"));
  }
  const int64_t per = *leading / n;
  ElementSpec reshaped_spec = spec.Map([&](const TensorSpec& s) {
    std::vector<int64_t> d = s.shape.dims();
    d[0] = per;
    d.insert(d.begin(), n);
    return TensorSpec{s.dtype, Shape(std::move(d))};
  });
  MapFunction reshape;
  reshape.name = "rebatch_fallback_reshape";
  reshape.output_spec = reshaped_spec;
  reshape.fn = [n, per](const Element& e) -> absl::StatusOr<Element> {
    std::vector<Tensor> leaves;
    for (const Tensor* t : e.Flatten()) {
      std::vector<int64_t> d = t->shape().dims();
      if (d.empty() || d[0] != n * per) {
        return absl::InvalidArgumentError(absl::StrCat(
            "rebatching fallback: component of shape ", t->shape().ToString(),
            " does not have leading dimension ", n * per));
      }
      d[0] = per;
      d.insert(d.begin(), n);
      TPUSIM_ASSIGN_OR_RETURN(Tensor r, t->Reshape(Shape(std::move(d))));
      leaves.push_back(std::move(r));
    }
    return e.Unflatten(std::move(leaves));
  };
  TPUSIM_ASSIGN_OR_RETURN(NodePtr map, MapNode::Make(root, std::move(reshape)));
  return FlatMapNode::Make(map, [](const FunctionArg& arg) {
    return Dataset::FromTensorSlices(arg.nest());
  });
}

// ---- element helpers for the 2.4 kernels ----

// Leaves of a batch element with their common dimension 0.
absl::StatusOr<std::pair<std::vector<Tensor>, int64_t>> BatchLeaves(
    const Element& e, absl::string_view op) {
  std::vector<Tensor> leaves;
  int64_t rows = -1;
  for (const auto& [path, t] : e.FlattenWithPaths()) {
    if (t->rank() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": component ", path, " is a scalar; elements need rank >= 1"));
    }
    const int64_t d0 = t->shape().dim(0);
    if (rows >= 0 && d0 != rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": components of one input batch differ in dimension 0 (", rows,
          " vs ", d0, " at component ", path, ")"));
    }
    rows = d0;
    leaves.push_back(*t);
  }
  return std::make_pair(std::move(leaves), std::max<int64_t>(rows, 0));
}

class RebatchV2Iterator final : public DatasetIterator {
 public:
  RebatchV2Iterator(IteratorPtr input, std::vector<int64_t> sizes,
                    ElementSpec spec)
      : input_(std::move(input)),
        sizes_(std::move(sizes)),
        spec_(std::move(spec)) {}

  // As TF's RebatchDatasetV2 kernel: rows are taken from the input until the
  // next size in the rotation is reached (or the input ends); a size of 0
  // gives an empty batch without touching the input. The end of the input is
  // final: every later call (also for a size of 0) ends the sequence.
  absl::StatusOr<std::optional<Element>> GetNext() override {
    if (done_) return std::optional<Element>();
    const int64_t target = sizes_[next_size_];
    std::vector<std::vector<Tensor>> pieces;
    int64_t collected = 0;
    while (collected < target) {
      if (!structure_.has_value() || offset_ == rows_) {
        TPUSIM_ASSIGN_OR_RETURN(bool more, Fetch());
        if (!more) {
          done_ = true;
          break;
        }
        continue;
      }
      const int64_t take = std::min(target - collected, rows_ - offset_);
      if (pieces.empty()) pieces.resize(current_.size());
      for (size_t i = 0; i < current_.size(); ++i) {
        pieces[i].push_back(current_[i].Slice(offset_, take));
      }
      offset_ += take;
      collected += take;
    }
    next_size_ = (next_size_ + 1) % sizes_.size();
    if (target == 0) return std::optional<Element>(EmptyBatch());
    if (collected == 0) return std::optional<Element>();
    std::vector<Tensor> leaves;
    for (auto& parts : pieces) {
      if (parts.size() == 1) {
        leaves.push_back(std::move(parts[0]));
      } else {
        absl::StatusOr<Tensor> joined = Tensor::Concat(parts);
        if (joined.status().code() == absl::StatusCode::kInvalidArgument) {
          // Rows of input batches whose other dimensions differ: TF's kernel
          // copies them with CopyContiguousSlices, a FailedPrecondition (TF
          // 2.21's dataset.rebatch on batches [1, 1] and [1, 2]).
          return absl::FailedPreconditionError(absl::StrCat(
              RebatchV2Node::kOp,
              ": cannot join rows of input batches of different shapes into "
              "one batch: ",
              joined.status().message()));
        }
        TPUSIM_RETURN_IF_ERROR(joined.status());
        leaves.push_back(*std::move(joined));
      }
    }
    TPUSIM_ASSIGN_OR_RETURN(Element out,
                            structure_->Unflatten(std::move(leaves)));
    return std::optional<Element>(std::move(out));
  }

 private:
  // TF's empty batch: built from the output spec, dimension 0 and every
  // unknown dimension 0; a component of unknown rank is a [0] tensor.
  Element EmptyBatch() const {
    return spec_.Map([](const TensorSpec& s) {
      std::vector<int64_t> dims = {0};
      if (s.shape.rank_known()) {
        dims = s.shape.dims();
        for (int64_t& d : dims) {
          if (d == runtime::kUnknownDim) d = 0;
        }
        if (!dims.empty()) dims[0] = 0;
      }
      return Tensor::Zeros(s.dtype, Shape(std::move(dims)));
    });
  }

  // Loads the next input batch; false at the end of the input.
  absl::StatusOr<bool> Fetch() {
    TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> next, input_->GetNext());
    if (!next.has_value()) return false;
    TPUSIM_ASSIGN_OR_RETURN(auto leaves,
                            BatchLeaves(*next, RebatchV2Node::kOp));
    current_ = std::move(leaves.first);
    rows_ = leaves.second;
    offset_ = 0;
    structure_ = std::move(*next);
    return true;
  }

  IteratorPtr input_;
  std::vector<int64_t> sizes_;
  ElementSpec spec_;  // the node's output spec (for empty batches)
  size_t next_size_ = 0;
  std::optional<Element>
      structure_;                // the last input batch (structure template)
  std::vector<Tensor> current_;  // its leaves
  int64_t rows_ = 0;
  int64_t offset_ = 0;
  bool done_ = false;
};

class LegacyRebatchIterator final : public DatasetIterator {
 public:
  LegacyRebatchIterator(IteratorPtr input, int64_t n)
      : input_(std::move(input)), n_(n) {}

  absl::StatusOr<std::optional<Element>> GetNext() override {
    if (pending_.empty()) {
      TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> next, input_->GetNext());
      if (!next.has_value()) return std::optional<Element>();
      // As TF's RebatchDataset kernel: every component is split on its own
      // dimension 0 (zip of batches of different sizes has components that
      // differ there): piece j of a component with p rows is rows
      // [j*m, min((j+1)*m, p)) with m = ceil(p/N), empty once j*m >= p.
      std::vector<const Tensor*> leaves;
      for (const auto& [path, t] : next->FlattenWithPaths()) {
        if (t->rank() < 1) {
          return absl::InvalidArgumentError(
              absl::StrCat(LegacyRebatchNode::kOp, ": component ", path,
                           " is a scalar; elements need rank >= 1"));
        }
        leaves.push_back(t);
      }
      for (int64_t j = 0; j < n_; ++j) {
        std::vector<Tensor> piece;
        piece.reserve(leaves.size());
        for (const Tensor* t : leaves) {
          const int64_t p = t->shape().dim(0);
          const int64_t m = CeilDiv(p, n_);
          const int64_t begin = std::min(j * m, p);
          const int64_t end = std::min(begin + m, p);
          piece.push_back(t->Slice(begin, end - begin));
        }
        TPUSIM_ASSIGN_OR_RETURN(Element e, next->Unflatten(std::move(piece)));
        pending_.push_back(std::move(e));
      }
    }
    Element out = std::move(pending_.front());
    pending_.pop_front();
    return std::optional<Element>(std::move(out));
  }

 private:
  IteratorPtr input_;
  int64_t n_;
  std::deque<Element> pending_;
};

absl::Status CheckRank1(const ElementSpec& spec, absl::string_view op) {
  absl::Status s = CheckNoScalarComponents(spec);
  if (!s.ok())
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", s.message()));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SemanticsVersion> ParseSemanticsVersion(
    absl::string_view version) {
  if (version == "2.2") return SemanticsVersion::k2_2;
  if (version == "2.4") return SemanticsVersion::k2_4;
  if (version == "2.21") return SemanticsVersion::k2_21;
  return absl::InvalidArgumentError(
      absl::StrCat("semantics version \"", version,
                   "\" is not supported; allowed: \"2.2\" "
                   "(default), \"2.4\", \"2.21\""));
}

absl::string_view SemanticsVersionName(SemanticsVersion version) {
  switch (version) {
    case SemanticsVersion::k2_2:
      return "2.2";
    case SemanticsVersion::k2_4:
      return "2.4";
    case SemanticsVersion::k2_21:
      return "2.21";
  }
  return "2.2";
}

absl::Status CheckNoScalarComponents(const ElementSpec& spec) {
  for (const auto& [path, leaf] : spec.FlattenWithPaths()) {
    // TF checks the legacy output shapes: a SparseTensor's own (logical) one.
    const Shape shape = LogicalShape(*leaf);
    if (shape.rank_known() && shape.rank() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot distribute a dataset whose elements are scalars (component ",
          path, ": ", leaf->ToString(), " in element spec ",
          ElementSpecToString(spec),
          "); elements must have rank >= 1, add a `batch` transformation to "
          "the dataset"));
    }
  }
  return absl::OkStatus();
}

absl::string_view RebatchKindName(RebatchKind kind) {
  switch (kind) {
    case RebatchKind::kCase1:
      return "case1";
    case RebatchKind::kCase2:
      return "case2";
    case RebatchKind::kFallback:
      return "fallback";
  }
  return "?";
}

absl::StatusOr<RebatchResult> RebatchGraph(const NodePtr& root,
                                           int64_t num_replicas) {
  if (num_replicas < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("rebatch: num_replicas=", num_replicas, ", must be >= 1"));
  }
  bool any_case2 = false;
  std::vector<int64_t> sizes;
  absl::StatusOr<NodePtr> rewritten =
      RewriteOutermostBatch(root, num_replicas, any_case2, sizes);
  if (rewritten.ok()) {
    return RebatchResult{*std::move(rewritten),
                         any_case2 ? RebatchKind::kCase2 : RebatchKind::kCase1,
                         std::move(sizes)};
  }
  // tpusim choice: any failure of the rewrite (also a WithInputs error on the
  // way back) falls back, like rebatch.cc with use_fallback=true, starting
  // again from the unchanged graph, and the fallback is applied at the end of
  // the whole pipeline. (TF also tries the fallback inside a flat_map body
  // whose rewrite fails; the elements come out the same.)
  TPUSIM_ASSIGN_OR_RETURN(
      NodePtr fallback, ApplyFallback(root, num_replicas, rewritten.status()));
  return RebatchResult{std::move(fallback), RebatchKind::kFallback, {}};
}

ElementSpec RebatchedElementSpec(const ElementSpec& global_spec,
                                 int64_t num_replicas) {
  return global_spec.Map([num_replicas](const TensorSpec& s) {
    if (!s.shape.rank_known() || s.shape.rank() < 1) return s;
    const int64_t d0 = s.shape.dim(0);
    const int64_t out = (d0 != runtime::kUnknownDim && d0 % num_replicas == 0)
                            ? d0 / num_replicas
                            : runtime::kUnknownDim;
    return s.WithShape(s.shape.WithDim0(out));
  });
}

std::vector<int64_t> BatchSizesForWorker(int64_t global_batch_size,
                                         int num_workers,
                                         int replicas_per_worker,
                                         int worker_index) {
  TPUSIM_CHECK(global_batch_size >= 0 && num_workers >= 1 &&
               replicas_per_worker >= 1 && worker_index >= 0 &&
               worker_index < num_workers)
      << global_batch_size << " " << num_workers << " " << replicas_per_worker
      << " " << worker_index;
  const int64_t total = int64_t{num_workers} * replicas_per_worker;
  const int64_t floor = global_batch_size / total;
  const int64_t k = global_batch_size - total * floor;
  std::vector<int64_t> worker0;
  for (int64_t j = 0; j < total; ++j)
    worker0.push_back(j < k ? floor + 1 : floor);
  const int64_t shift = (int64_t{worker_index} * replicas_per_worker) % total;
  std::vector<int64_t> out;
  for (int64_t j = 0; j < total; ++j)
    out.push_back(worker0[(j + shift) % total]);
  return out;
}

namespace {

int64_t ComputeBatchSizeFromGraph(const NodePtr& node) {
  const absl::string_view op = node->op();
  if (op == BatchNode::kOp)
    return static_cast<const BatchNode&>(*node).batch_size();
  if (op == PaddedBatchNode::kOp)
    return static_cast<const PaddedBatchNode&>(*node).batch_size();
  if (op == MapAndBatchNode::kOp)
    return static_cast<const MapAndBatchNode&>(*node).batch_size();
  if (IsRebatchPassThrough(op))
    return ComputeBatchSizeFromGraph(node->inputs()[0]);
  if (IsMultiInput(op)) {
    int64_t b = -2;
    for (const NodePtr& input : node->inputs()) {
      const int64_t bi = ComputeBatchSizeFromGraph(input);
      if (bi == -1 || (b != -2 && bi != b)) return -1;
      b = bi;
    }
    return b < 0 ? -1 : b;
  }
  return -1;
}

}  // namespace

int64_t ComputeBatchSize(const NodePtr& root) {
  std::optional<int64_t> d;
  bool all_static = true;
  for (const TensorSpec* leaf : root->element_spec().Flatten()) {
    if (!leaf->shape.rank_known() || leaf->shape.rank() < 1 ||
        leaf->shape.dim(0) == runtime::kUnknownDim) {
      all_static = false;
      break;
    }
    if (d.has_value() && *d != leaf->shape.dim(0)) return -1;
    d = leaf->shape.dim(0);
  }
  if (all_static && d.has_value()) return *d;
  return ComputeBatchSizeFromGraph(root);
}

ElementSpec RebatchV2ElementSpec(const ElementSpec& input_spec,
                                 const std::vector<int64_t>& batch_sizes) {
  bool all_equal = !batch_sizes.empty() && batch_sizes[0] > 0;
  for (int64_t b : batch_sizes) all_equal = all_equal && b == batch_sizes[0];
  return input_spec.Map([&](const TensorSpec& s) {
    if (!s.shape.rank_known() || s.shape.rank() < 1) return s;
    const int64_t d0 = s.shape.dim(0);
    const bool fixed =
        all_equal && d0 != runtime::kUnknownDim && d0 % batch_sizes[0] == 0;
    return s.WithShape(
        s.shape.WithDim0(fixed ? batch_sizes[0] : runtime::kUnknownDim));
  });
}

// ---- RebatchV2Node ----

absl::StatusOr<NodePtr> RebatchV2Node::Make(NodePtr input,
                                            std::vector<int64_t> batch_sizes) {
  if (batch_sizes.empty()) {
    return absl::InvalidArgumentError("RebatchDatasetV2: batch_sizes is empty");
  }
  int64_t sum = 0;
  for (int64_t b : batch_sizes) {
    if (b < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "RebatchDatasetV2: batch_sizes [", absl::StrJoin(batch_sizes, ","),
          "] has negative size ", b, "; sizes must be >= 0"));
    }
    sum += b;
  }
  if (sum == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RebatchDatasetV2: batch_sizes [", absl::StrJoin(batch_sizes, ","),
        "] are all 0; need at least one > 0"));
  }
  TPUSIM_RETURN_IF_ERROR(CheckRank1(input->element_spec(), kOp));
  ElementSpec spec = RebatchV2ElementSpec(input->element_spec(), batch_sizes);
  return NodePtr(std::make_shared<RebatchV2Node>(
      std::move(input), std::move(batch_sizes), std::move(spec)));
}

RebatchV2Node::RebatchV2Node(NodePtr input, std::vector<int64_t> batch_sizes,
                             ElementSpec spec)
    : DatasetNode({std::move(input)}, std::move(spec)),
      batch_sizes_(std::move(batch_sizes)) {}

std::vector<NodeAttr> RebatchV2Node::attrs() const {
  return {
      {"batch_sizes", absl::StrCat("[", absl::StrJoin(batch_sizes_, ","), "]")},
      {"drop_remainder", "false"}};
}

absl::StatusOr<IteratorPtr> RebatchV2Node::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  return IteratorPtr(std::make_unique<RebatchV2Iterator>(
      std::move(input), batch_sizes_, element_spec()));
}

absl::StatusOr<NodePtr> RebatchV2Node::WithInputs(
    std::vector<NodePtr> inputs) const {
  if (inputs.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("RebatchDatasetV2 takes 1 input, got ", inputs.size()));
  }
  return Make(std::move(inputs[0]), batch_sizes_);
}

// ---- LegacyRebatchNode ----

absl::StatusOr<NodePtr> LegacyRebatchNode::Make(NodePtr input,
                                                int64_t num_replicas) {
  if (num_replicas < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RebatchDataset: num_replicas=", num_replicas, ", must be >= 1"));
  }
  TPUSIM_RETURN_IF_ERROR(CheckRank1(input->element_spec(), kOp));
  ElementSpec spec = RebatchedElementSpec(input->element_spec(), num_replicas);
  return NodePtr(std::make_shared<LegacyRebatchNode>(
      std::move(input), num_replicas, std::move(spec)));
}

LegacyRebatchNode::LegacyRebatchNode(NodePtr input, int64_t num_replicas,
                                     ElementSpec spec)
    : DatasetNode({std::move(input)}, std::move(spec)),
      num_replicas_(num_replicas) {}

std::vector<NodeAttr> LegacyRebatchNode::attrs() const {
  return {{"num_replicas", absl::StrCat(num_replicas_)}};
}

absl::StatusOr<IteratorPtr> LegacyRebatchNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  return IteratorPtr(
      std::make_unique<LegacyRebatchIterator>(std::move(input), num_replicas_));
}

absl::StatusOr<NodePtr> LegacyRebatchNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  if (inputs.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("RebatchDataset takes 1 input, got ", inputs.size()));
  }
  return Make(std::move(inputs[0]), num_replicas_);
}

}  // namespace tpusim::data
