#include "strategy/data/dataset_nodes.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <mutex>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "strategy/data/random.h"

namespace tpusim::data {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;

namespace {

std::string B(bool b) { return b ? "true" : "false"; }

absl::Status CheckInputCount(absl::string_view op,
                             const std::vector<NodePtr>& inputs,
                             size_t expected) {
  if (inputs.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": WithInputs got ", inputs.size(),
                     " inputs, the node has ", expected));
  }
  for (const NodePtr& n : inputs) {
    if (n == nullptr)
      return absl::InvalidArgumentError(absl::StrCat(op, ": null input node"));
  }
  return absl::OkStatus();
}

ElementSpec RefSpec(const TensorRefNest& refs) {
  return refs.Map([](const TensorRef& r) { return r.spec(); });
}

// Resolves every reference of `refs` in ctx, keeping the structure.
absl::StatusOr<Element> ResolveNest(const TensorRefNest& refs,
                                    const IteratorContext& ctx) {
  std::vector<Tensor> leaves;
  absl::Status status;
  refs.ForEach([&](const std::string&, const TensorRef& r) {
    if (!status.ok()) return;
    absl::StatusOr<Tensor> t = r.Resolve(ctx);
    if (!t.ok()) {
      status = t.status();
      return;
    }
    leaves.push_back(*std::move(t));
  });
  TPUSIM_RETURN_IF_ERROR(status);
  return refs.Unflatten(std::move(leaves));
}

// An iterator over a fixed list of elements.
class VectorIterator final : public DatasetIterator {
 public:
  explicit VectorIterator(std::vector<Element> elements)
      : elements_(std::move(elements)) {}
  absl::StatusOr<std::optional<Element>> GetNext() override {
    if (next_ >= elements_.size()) return std::optional<Element>();
    return std::optional<Element>(elements_[next_++]);
  }

 private:
  std::vector<Element> elements_;
  size_t next_ = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// RangeNode

RangeNode::RangeNode(int64_t start, int64_t stop, int64_t step)
    : DatasetNode({}, ElementSpec(TensorSpec{DType::kI64, Shape()})),
      start_(start),
      stop_(stop),
      step_(step) {}

absl::StatusOr<NodePtr> RangeNode::Make(int64_t start, int64_t stop,
                                        int64_t step) {
  if (step == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "range: step must be a non-zero integer, got step=0 (start=", start,
        ", stop=", stop, ")"));
  }
  return NodePtr(std::make_shared<RangeNode>(start, stop, step));
}

std::vector<NodeAttr> RangeNode::attrs() const {
  return {{"start", absl::StrCat(start_)},
          {"stop", absl::StrCat(stop_)},
          {"step", absl::StrCat(step_)}};
}

int64_t RangeNode::size() const {
  // Unsigned arithmetic: no overflow for any int64 start/stop/step. A range of
  // more than INT64_MAX elements reports INT64_MAX (never iterated to the end).
  uint64_t count = 0;
  if (step_ > 0 && stop_ > start_) {
    const uint64_t diff =
        static_cast<uint64_t>(stop_) - static_cast<uint64_t>(start_);
    count = (diff - 1) / static_cast<uint64_t>(step_) + 1;
  } else if (step_ < 0 && start_ > stop_) {
    const uint64_t diff =
        static_cast<uint64_t>(start_) - static_cast<uint64_t>(stop_);
    count = (diff - 1) / (uint64_t{0} - static_cast<uint64_t>(step_)) + 1;
  }
  return static_cast<int64_t>(std::min<uint64_t>(
      count, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
}

absl::StatusOr<IteratorPtr> RangeNode::DoMakeIterator(
    const IteratorContext&) const {
  class It final : public DatasetIterator {
   public:
    It(int64_t start, int64_t count, int64_t step)
        : next_(static_cast<uint64_t>(start)),
          left_(count),
          step_(static_cast<uint64_t>(step)) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      if (left_ <= 0) return std::optional<Element>();
      --left_;
      const int64_t v = static_cast<int64_t>(next_);
      next_ += step_;  // wraps harmlessly after the last element
      return std::optional<Element>(Element(Tensor::Scalar<int64_t>(v)));
    }
    absl::StatusOr<int64_t> Skip(int64_t n) override {
      const int64_t k = std::max<int64_t>(0, std::min(n, left_));
      left_ -= k;
      next_ += step_ * static_cast<uint64_t>(k);  // wraps as GetNext's would
      return k;
    }

   private:
    uint64_t next_;
    int64_t left_;
    uint64_t step_;
  };
  return IteratorPtr(std::make_unique<It>(start_, size(), step_));
}

absl::StatusOr<NodePtr> RangeNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 0));
  return Make(start_, stop_, step_);
}

// ---------------------------------------------------------------------------------------------
// GeneratorNode

GeneratorNode::GeneratorNode(GeneratorFactory make_generator, ElementSpec spec)
    : DatasetNode({}, std::move(spec)),
      make_generator_(std::move(make_generator)) {}

absl::StatusOr<NodePtr> GeneratorNode::Make(GeneratorFactory make_generator,
                                            ElementSpec spec) {
  if (!make_generator) {
    return absl::InvalidArgumentError(
        "from_generator: the generator factory is null");
  }
  return NodePtr(std::make_shared<GeneratorNode>(std::move(make_generator),
                                                 std::move(spec)));
}

std::vector<NodeAttr> GeneratorNode::attrs() const {
  return {{"output_spec", ElementSpecToString(element_spec())}};
}

absl::StatusOr<IteratorPtr> GeneratorNode::DoMakeIterator(
    const IteratorContext&) const {
  class It final : public DatasetIterator {
   public:
    It(GeneratorFn next, ElementSpec spec)
        : next_(std::move(next)), spec_(std::move(spec)) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      if (done_) return std::optional<Element>();
      if (!next_) {
        return absl::InvalidArgumentError(
            "from_generator: the factory returned a null generator");
      }
      TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, next_());
      if (!e.has_value()) {
        done_ = true;
        return e;
      }
      const std::vector<const TensorSpec*> want = spec_.Flatten();
      const std::vector<const Tensor*> got = e->Flatten();
      bool ok = want.size() == got.size();
      for (size_t k = 0; ok && k < got.size(); ++k) {
        const Shape& ws = want[k]->shape;
        ok = got[k]->dtype() == want[k]->dtype &&
             (!ws.rank_known() || ws.IsCompatibleWith(got[k]->shape()));
      }
      if (!ok) {
        std::vector<std::string> specs;
        for (const Tensor* t : got) specs.push_back(t->spec().ToString());
        return absl::InvalidArgumentError(absl::StrCat(
            "from_generator: element ", index_, " has components [",
            absl::StrJoin(specs, ", "),
            "], which do not match the declared output spec ",
            ElementSpecToString(spec_)));
      }
      ++index_;
      return e;
    }

   private:
    GeneratorFn next_;
    ElementSpec spec_;
    int64_t index_ = 0;
    bool done_ = false;
  };
  return IteratorPtr(
      std::make_unique<It>(make_generator_(), element_spec()));
}

absl::StatusOr<NodePtr> GeneratorNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 0));
  return Make(make_generator_, element_spec());
}

// ---------------------------------------------------------------------------------------------
// TensorNode

TensorNode::TensorNode(TensorRefNest components, ElementSpec spec)
    : DatasetNode({}, std::move(spec)), components_(std::move(components)) {}

absl::StatusOr<NodePtr> TensorNode::Make(TensorRefNest components) {
  ElementSpec spec = RefSpec(components);
  return NodePtr(
      std::make_shared<TensorNode>(std::move(components), std::move(spec)));
}

std::vector<NodeAttr> TensorNode::attrs() const {
  std::vector<std::string> parts;
  components_.ForEach([&](const std::string&, const TensorRef& r) {
    parts.push_back(r.DebugString());
  });
  return {{"components", absl::StrCat("[", absl::StrJoin(parts, ", "), "]")}};
}

absl::StatusOr<IteratorPtr> TensorNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(Element e, ResolveNest(components_, ctx));
  std::vector<Element> v;
  v.push_back(std::move(e));
  return IteratorPtr(std::make_unique<VectorIterator>(std::move(v)));
}

absl::StatusOr<NodePtr> TensorNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 0));
  return Make(components_);
}

// ---------------------------------------------------------------------------------------------
// TensorSliceNode

namespace {

// The common dimension 0 of the leaves of `specs`, kUnknownDim if unknown;
// InvalidArgument on a scalar or disagreeing dimension 0.
absl::StatusOr<int64_t> SliceDim0(
    const std::vector<std::pair<std::string, Shape>>& shapes) {
  if (shapes.empty()) {
    return absl::InvalidArgumentError(
        "from_tensor_slices: at least one component is required");
  }
  int64_t dim0 = runtime::kUnknownDim;
  std::string first_path;
  for (const auto& [path, shape] : shapes) {
    if (!shape.rank_known()) continue;
    if (shape.rank() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("from_tensor_slices: component ", path,
                       " is a scalar; every component needs rank >= 1"));
    }
    const int64_t d = shape.dim(0);
    if (d == runtime::kUnknownDim) continue;
    if (dim0 == runtime::kUnknownDim) {
      dim0 = d;
      first_path = path;
    } else if (d != dim0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "from_tensor_slices: dimension 0 of every component must match; "
          "component ",
          first_path, " has ", dim0, " and component ", path, " has ", d,
          " (Dimensions ", dim0, " and ", d, " are not compatible)"));
    }
  }
  return dim0;
}

}  // namespace

TensorSliceNode::TensorSliceNode(TensorRefNest components, ElementSpec spec)
    : DatasetNode({}, std::move(spec)), components_(std::move(components)) {}

absl::StatusOr<NodePtr> TensorSliceNode::Make(TensorRefNest components) {
  std::vector<std::pair<std::string, Shape>> shapes;
  components.ForEach([&](const std::string& path, const TensorRef& r) {
    shapes.emplace_back(path, r.spec().shape);
  });
  TPUSIM_RETURN_IF_ERROR(SliceDim0(shapes).status());
  ElementSpec spec = RefSpec(components).Map([](const TensorSpec& s) {
    return s.WithShape(s.shape.rank_known() ? s.shape.DropDim0() : s.shape);
  });
  return NodePtr(std::make_shared<TensorSliceNode>(std::move(components),
                                                   std::move(spec)));
}

std::vector<NodeAttr> TensorSliceNode::attrs() const {
  std::vector<std::string> parts;
  components_.ForEach([&](const std::string&, const TensorRef& r) {
    parts.push_back(r.DebugString());
  });
  return {{"components", absl::StrCat("[", absl::StrJoin(parts, ", "), "]")}};
}

absl::StatusOr<IteratorPtr> TensorSliceNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(Element e, ResolveNest(components_, ctx));
  std::vector<std::pair<std::string, Shape>> shapes;
  std::vector<Tensor> leaves;
  e.ForEach([&](const std::string& path, const Tensor& t) {
    shapes.emplace_back(path, t.shape());
    leaves.push_back(t);
  });
  TPUSIM_ASSIGN_OR_RETURN(int64_t n, SliceDim0(shapes));
  class It final : public DatasetIterator {
   public:
    It(Element structure, std::vector<Tensor> leaves, int64_t n)
        : structure_(std::move(structure)), leaves_(std::move(leaves)), n_(n) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      if (i_ >= n_) return std::optional<Element>();
      if (structure_.is_leaf())
        return std::optional<Element>(Element(leaves_[0].Row(i_++)));
      std::vector<Tensor> rows;
      rows.reserve(leaves_.size());
      for (const Tensor& t : leaves_)
        rows.push_back(t.Row(i_));  // zero-copy views
      ++i_;
      TPUSIM_ASSIGN_OR_RETURN(Element e, structure_.Unflatten(std::move(rows)));
      return std::optional<Element>(std::move(e));
    }
    absl::StatusOr<int64_t> Skip(int64_t n) override {
      const int64_t k = std::max<int64_t>(0, std::min(n, n_ - i_));
      i_ += k;
      return k;
    }

   private:
    Element structure_;
    std::vector<Tensor> leaves_;
    int64_t n_;
    int64_t i_ = 0;
  };
  return IteratorPtr(std::make_unique<It>(std::move(e), std::move(leaves), n));
}

absl::StatusOr<NodePtr> TensorSliceNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 0));
  return Make(components_);
}

// ---------------------------------------------------------------------------------------------
// BatchNode

BatchNode::BatchNode(NodePtr input, int64_t batch_size, bool drop_remainder,
                     bool check_dropped_rows)
    : DatasetNode({input}, input->element_spec().Map([&](const TensorSpec& s) {
        return s.WithShape(s.shape.rank_known()
                               ? s.shape.Prepend(drop_remainder
                                                     ? batch_size
                                                     : runtime::kUnknownDim)
                               : s.shape);
      })),
      batch_size_(batch_size),
      drop_remainder_(drop_remainder),
      check_dropped_rows_(check_dropped_rows) {}

absl::StatusOr<NodePtr> BatchNode::Make(NodePtr input, int64_t batch_size,
                                        bool drop_remainder,
                                        bool check_dropped_rows) {
  if (batch_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch: batch_size must be greater than zero, got ", batch_size));
  }
  // batch x row bytes must be a representable size (the batched spec's shape
  // is [batch_size, ...]).
  for (const TensorSpec* leaf : input->element_spec().Flatten()) {
    if (!leaf->shape.IsFullyDefined()) continue;
    absl::StatusOr<int64_t> bytes =
        runtime::CheckedByteSize(leaf->dtype, leaf->shape.Prepend(batch_size));
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "batch: batch_size=", batch_size, " of ", leaf->ToString(),
          " elements: ", bytes.status().message()));
    }
  }
  // TF's default static optimization map_and_batch_fusion turns a map
  // directly followed by a batch into one MapAndBatchDataset, which checks the
  // rows of a dropped partial batch (found by tests/conformance/ in TF 2.21).
  // An identity map is removed first (TF's noop elimination), so it does not
  // fuse: a MapFunction named "identity" is taken to be one.
  if (input->op() == MapNode::kOp &&
      static_cast<const MapNode&>(*input).function().name != "identity") {
    check_dropped_rows = true;
  }
  return NodePtr(std::make_shared<BatchNode>(std::move(input), batch_size,
                                             drop_remainder,
                                             check_dropped_rows));
}

std::vector<NodeAttr> BatchNode::attrs() const {
  return {{"batch_size", absl::StrCat(batch_size_)},
          {"drop_remainder", B(drop_remainder_)}};
}

namespace {

// Stacks one component of a batch: a zero-copy view when the parts are
// consecutive views of one storage (e.g. from_tensor_slices rows), else one
// copy (into a recycled buffer of `pool` when given).
absl::StatusOr<Tensor> StackColumn(const std::vector<Tensor>& col, int k,
                                   Tensor::BufferPool* pool) {
  // StackViews and Stack check that the parts agree; only when they do not is
  // the column searched for the first odd one, for TF's message.
  if (std::optional<Tensor> view = Tensor::StackViews(col))
    return *std::move(view);
  absl::StatusOr<Tensor> stacked = Tensor::Stack(col, pool);
  if (stacked.ok()) return stacked;
  for (size_t i = 1; i < col.size(); ++i) {
    if (col[i].shape() != col[0].shape() || col[i].dtype() != col[0].dtype()) {
      // TF: "Cannot batch tensors with different shapes in component 0. First
      // element had shape [2] and element 1 had shape [3]."
      return absl::InvalidArgumentError(absl::StrCat(
          "Cannot batch tensors with different shapes in component ", k,
          ". First element had shape ", col[0].spec().ToString(),
          " and element ", i, " had shape ", col[i].spec().ToString(), "."));
    }
  }
  return stacked;
}

bool SpecFullyDefined(const ElementSpec& spec) {
  for (const TensorSpec* leaf : spec.Flatten()) {
    if (!leaf->shape.IsFullyDefined()) return false;
  }
  return true;
}

absl::Status StructureError(const Element& e, size_t i, const Element& first) {
  return absl::InvalidArgumentError(
      absl::StrCat("batch: element ", i, " has structure ", e.StructureString(),
                   ", element 0 has ", first.StructureString()));
}

// Builds batches column by column as elements arrive: each element's leaves
// are moved into one vector per component (reused from batch to batch), so
// no nest or vector is made per row, and the stacked components' storage is
// recycled through one BufferPool per component (when `pooled`). Errors are
// those of stacking the collected elements: the first element whose structure
// differs from element 0's, else the first component whose shapes differ.
class BatchAssembler {
 public:
  explicit BatchAssembler(bool pooled) : pooled_(pooled) {}

  size_t size() const { return rows_; }

  void Add(Element e) {
    const size_t i = rows_++;
    if (i == 0) {
      int n = 0;
      e.ForEachLeaf([&](const Tensor&) { ++n; });
      if (columns_.size() != static_cast<size_t>(n)) {
        columns_.assign(n, {});
        pools_.clear();
      }
      if (pooled_ && pools_.size() != static_cast<size_t>(n)) {
        pools_.clear();
        for (int k = 0; k < n; ++k)
          pools_.push_back(std::make_unique<Tensor::BufferPool>());
      }
      TakeLeaves(e);
      structure_ = std::move(e);  // leaves moved out; the structure is kept
      return;
    }
    if (!error_.ok()) return;
    if (structure_.is_leaf() ? !e.is_leaf() : !e.SameStructure(structure_)) {
      error_ = StructureError(e, i, structure_);
      return;
    }
    TakeLeaves(e);
  }

  // Stacks the collected elements and starts a new batch. Precondition:
  // size() > 0.
  absl::StatusOr<Element> Finish() {
    absl::Status error = std::move(error_);
    error_ = absl::OkStatus();
    rows_ = 0;
    if (!error.ok()) {
      Clear();
      return error;
    }
    std::vector<Tensor> stacked;
    stacked.reserve(columns_.size());
    for (size_t k = 0; k < columns_.size(); ++k) {
      absl::StatusOr<Tensor> t =
          StackColumn(columns_[k], static_cast<int>(k),
                      pooled_ ? pools_[k].get() : nullptr);
      if (!t.ok()) {
        Clear();
        return t.status();
      }
      stacked.push_back(*std::move(t));
    }
    Clear();
    if (structure_.is_leaf()) return Element(std::move(stacked[0]));
    return structure_.Unflatten(std::move(stacked));
  }

  // Drops the collected elements (a partial batch under drop_remainder).
  void Reset() {
    rows_ = 0;
    error_ = absl::OkStatus();
    Clear();
  }

 private:
  void TakeLeaves(Element& e) {
    size_t k = 0;
    e.ForEachMutableLeaf(
        [&](Tensor& t) { columns_[k++].push_back(std::move(t)); });
  }
  void Clear() {
    for (std::vector<Tensor>& c : columns_) c.clear();  // keeps capacity
  }

  bool pooled_;
  Element structure_;
  std::vector<std::vector<Tensor>> columns_;
  std::vector<std::unique_ptr<Tensor::BufferPool>> pools_;
  size_t rows_ = 0;
  absl::Status error_;
};

}  // namespace

absl::StatusOr<Element> StackElements(std::vector<Element> elements) {
  if (elements.empty())
    return absl::InvalidArgumentError("batch: no elements to stack");
  BatchAssembler batch(/*pooled=*/false);
  for (Element& e : elements) batch.Add(std::move(e));
  return batch.Finish();
}

absl::StatusOr<IteratorPtr> BatchNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  // Estimate before allocating: a batch holds batch_size input elements.
  TPUSIM_RETURN_IF_ERROR(CheckBufferEstimate(
      absl::StrCat("batch(batch_size=", batch_size_, ")"), batch_size_,
      inputs()[0]->element_spec(), ctx.max_memory));
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  class It final : public DatasetIterator {
   public:
    It(IteratorPtr input, int64_t b, bool drop, common::Bytes budget,
       bool uniform, bool check_dropped)
        : input_(std::move(input)),
          b_(b),
          drop_(drop),
          budget_(budget),
          uniform_(uniform),
          check_dropped_(check_dropped) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      if (done_) return std::optional<Element>();
      batch_.Reset();
      int64_t bytes = 0;
      while (static_cast<int64_t>(batch_.size()) < b_) {
        TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
        if (!e.has_value()) {
          done_ = true;
          break;
        }
        // Elements of unknown size (strings, unknown dimensions) are counted
        // as they arrive.
        bytes += ElementBytes(*e);
        if (bytes > budget_.count()) {
          const size_t at = batch_.size();
          batch_.Reset();
          return MemoryBudgetExceeded(
              absl::StrCat("batch(batch_size=", b_, ") at element ", at), bytes,
              budget_);
        }
        batch_.Add(*std::move(e));
      }
      if (batch_.size() == 0 ||
          (drop_ && static_cast<int64_t>(batch_.size()) < b_)) {
        if (check_dropped_ && batch_.size() > 1 && !uniform_) {
          absl::StatusOr<Element> rows = batch_.Finish();
          if (!rows.ok()) return rows.status();
        }
        batch_.Reset();
        return std::optional<Element>();
      }
      TPUSIM_ASSIGN_OR_RETURN(Element out, batch_.Finish());
      return std::optional<Element>(std::move(out));
    }
    // Stacking can only fail for elements of different shapes or structures;
    // with a fully defined input spec it cannot, so skipped batches need not
    // be stacked: the input skips their rows.
    absl::StatusOr<int64_t> Skip(int64_t n) override {
      if (!uniform_) return DatasetIterator::Skip(n);
      int64_t batches = 0;
      while (batches < n && !done_) {
        // In chunks, so that rows = chunk * b_ cannot overflow.
        const int64_t chunk = std::min(
            n - batches,
            std::max<int64_t>(1, std::numeric_limits<int64_t>::max() / b_ / 2));
        TPUSIM_ASSIGN_OR_RETURN(const int64_t rows, input_->Skip(chunk * b_));
        batches += rows / b_;
        if (rows < chunk * b_) {
          done_ = true;
          if (rows % b_ != 0 && !drop_) ++batches;  // the partial last batch
        }
      }
      return batches;
    }

   private:
    IteratorPtr input_;
    int64_t b_;
    bool drop_;
    common::Bytes budget_;
    bool uniform_;
    bool check_dropped_;
    bool done_ = false;
    BatchAssembler batch_{/*pooled=*/true};
  };
  return IteratorPtr(std::make_unique<It>(
      std::move(input), batch_size_, drop_remainder_, ctx.max_memory,
      SpecFullyDefined(inputs()[0]->element_spec()), check_dropped_rows_));
}

absl::StatusOr<NodePtr> BatchNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0], batch_size_, drop_remainder_, check_dropped_rows_);
}

// ---------------------------------------------------------------------------------------------
// PaddedBatchNode

PaddedBatchNode::PaddedBatchNode(NodePtr input, int64_t batch_size,
                                 std::vector<Shape> padded_shapes,
                                 std::vector<Tensor> padding_values,
                                 bool drop_remainder, ElementSpec spec)
    : DatasetNode({std::move(input)}, std::move(spec)),
      batch_size_(batch_size),
      padded_shapes_(std::move(padded_shapes)),
      padding_values_(std::move(padding_values)),
      drop_remainder_(drop_remainder) {}

absl::StatusOr<NodePtr> PaddedBatchNode::Make(
    NodePtr input, int64_t batch_size, std::vector<Shape> padded_shapes,
    std::vector<Tensor> padding_values, bool drop_remainder) {
  if (batch_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "padded_batch: batch_size must be greater than zero, got ",
        batch_size));
  }
  const std::vector<const TensorSpec*> leaves =
      input->element_spec().Flatten();
  const size_t n = leaves.size();
  // TF 2.2 (PaddedBatchDataset): a TypeError, "Batching of padded sparse
  // tensors is not currently supported".
  for (const auto& [path, leaf] : input->element_spec().FlattenWithPaths()) {
    if (leaf->sparse.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "padded_batch: component ", path, " is a ", leaf->ToString(),
          "; batching of padded sparse tensors is not supported (TF 2.2); "
          "use batch"));
    }
  }
  if (padded_shapes.empty()) {
    for (size_t k = 0; k < n; ++k) {
      if (!leaves[k]->shape.rank_known()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "padded_batch: component ", k, " (", leaves[k]->ToString(),
            ") has unknown rank; give its padded_shapes entry"));
      }
      padded_shapes.push_back(Shape(std::vector<int64_t>(
          leaves[k]->shape.rank(), runtime::kUnknownDim)));
    }
  }
  if (padded_shapes.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "padded_batch: padded_shapes has ", padded_shapes.size(),
        " entries, the element has ", n, " components"));
  }
  if (padding_values.empty()) {
    for (size_t k = 0; k < n; ++k)
      padding_values.push_back(Tensor::Zeros(leaves[k]->dtype, Shape()));
  }
  if (padding_values.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "padded_batch: padding_values has ", padding_values.size(),
        " entries, the element has ", n, " components"));
  }
  std::vector<TensorSpec> out;
  for (size_t k = 0; k < n; ++k) {
    const Shape& want = padded_shapes[k];
    const Shape& have = leaves[k]->shape;
    if (!want.rank_known()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "padded_batch: padded_shapes[", k, "] has unknown rank"));
    }
    if (have.rank_known() && have.rank() != want.rank()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "padded_batch: padded_shapes[", k, "]=", want.ToString(),
          " has rank ", want.rank(), ", component ", k, " (",
          leaves[k]->ToString(), ") has rank ", have.rank()));
    }
    for (int d = 0; d < want.rank(); ++d) {
      if (want.dim(d) != runtime::kUnknownDim && want.dim(d) < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "padded_batch: padded_shapes[", k, "]=", want.ToString(),
            " has a negative dimension"));
      }
      if (have.rank_known() && want.dim(d) != runtime::kUnknownDim &&
          have.dim(d) != runtime::kUnknownDim && have.dim(d) > want.dim(d)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "padded_batch: padded_shapes[", k, "]=", want.ToString(),
            " is smaller than component ", k, " (", leaves[k]->ToString(),
            ") in dimension ", d));
      }
    }
    const Tensor& pad = padding_values[k];
    if (pad.rank() != 0 || pad.dtype() != leaves[k]->dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "padded_batch: padding_values[", k, "]=", pad.DebugString(),
          " must be a scalar of component ", k, "'s dtype ",
          runtime::DTypeName(leaves[k]->dtype)));
    }
    if (!pad.has_data()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "padded_batch: padding_values[", k, "] has no data"));
    }
    if (want.IsFullyDefined()) {
      absl::StatusOr<int64_t> bytes = runtime::CheckedByteSize(
          leaves[k]->dtype, want.Prepend(batch_size));
      if (!bytes.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "padded_batch: batch_size=", batch_size, " of padded_shapes[", k,
            "]=", want.ToString(), ": ", bytes.status().message()));
      }
    }
    // Output: [B or ?] + the padded shape, a dimension the padded shape
    // leaves unknown stays unknown (the batch maximum varies).
    out.push_back(TensorSpec{
        leaves[k]->dtype,
        want.Prepend(drop_remainder ? batch_size : runtime::kUnknownDim)});
  }
  size_t next = 0;
  ElementSpec spec = input->element_spec().Map(
      [&](const TensorSpec&) { return out[next++]; });
  return NodePtr(std::make_shared<PaddedBatchNode>(
      std::move(input), batch_size, std::move(padded_shapes),
      std::move(padding_values), drop_remainder, std::move(spec)));
}

std::vector<NodeAttr> PaddedBatchNode::attrs() const {
  std::vector<std::string> shapes, values;
  for (const Shape& s : padded_shapes_) shapes.push_back(s.ToString());
  for (const Tensor& t : padding_values_) values.push_back(t.DebugString());
  return {{"batch_size", absl::StrCat(batch_size_)},
          {"padded_shapes", absl::StrCat("[", absl::StrJoin(shapes, ", "), "]")},
          {"padding_values", absl::StrCat("[", absl::StrJoin(values, ", "), "]")},
          {"drop_remainder", B(drop_remainder_)}};
}

namespace {

// Copies `rows` (equal rank, each fitting in `row_dims`) into a
// [rows.size()] + row_dims tensor filled with `pad`.
template <typename T>
Tensor PadAndStack(const std::vector<const Tensor*>& rows,
                   const std::vector<int64_t>& row_dims, const Tensor& pad) {
  int64_t row_size = 1;
  for (int64_t d : row_dims) row_size *= d;
  const int64_t b = static_cast<int64_t>(rows.size());
  std::vector<T> data(static_cast<size_t>(b * row_size), pad.scalar<T>());
  const int r = static_cast<int>(row_dims.size());
  std::vector<int64_t> out_stride(r, 1);
  for (int d = r - 2; d >= 0; --d)
    out_stride[d] = out_stride[d + 1] * row_dims[d + 1];
  for (int64_t i = 0; i < b; ++i) {
    const Tensor& t = *rows[i];
    absl::Span<const T> in = t.values<T>();
    const std::vector<int64_t>& dims = t.shape().dims();
    for (int64_t f = 0; f < static_cast<int64_t>(in.size()); ++f) {
      int64_t rest = f, o = 0;
      for (int d = r - 1; d >= 0; --d) {
        o += (rest % dims[d]) * out_stride[d];
        rest /= dims[d];
      }
      data[static_cast<size_t>(i * row_size + o)] = in[f];
    }
  }
  std::vector<int64_t> out_dims = row_dims;
  out_dims.insert(out_dims.begin(), b);
  return Tensor::FromVector<T>(Shape(std::move(out_dims)), std::move(data));
}

absl::StatusOr<Tensor> PadColumn(const std::vector<const Tensor*>& rows,
                                 const Shape& padded, const Tensor& pad,
                                 size_t k, common::Bytes budget) {
  std::vector<int64_t> dims(padded.rank(), 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Tensor& t = *rows[i];
    if (t.dtype() != pad.dtype() || t.rank() != padded.rank() ||
        !t.has_data()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "padded_batch: element ", i, " component ", k, " is ",
          t.spec().ToString(), ", expected ", DTypeName(pad.dtype()),
          " of rank ", padded.rank()));
    }
    for (int d = 0; d < padded.rank(); ++d)
      dims[d] = std::max(dims[d], t.shape().dim(d));
  }
  for (int d = 0; d < padded.rank(); ++d) {
    if (padded.dim(d) == runtime::kUnknownDim) continue;
    if (dims[d] > padded.dim(d)) {
      // DataLoss as TF's PaddedBatchDataset ("Attempted to pad to a smaller
      // size than the input element.").
      return absl::DataLossError(absl::StrCat(
          "padded_batch: attempted to pad component ", k, " to ",
          padded.ToString(), ", smaller than an element's dimension ", d,
          " (", dims[d], ")"));
    }
    dims[d] = padded.dim(d);
  }
  std::vector<int64_t> out_dims = dims;
  out_dims.insert(out_dims.begin(), static_cast<int64_t>(rows.size()));
  absl::StatusOr<int64_t> bytes =
      runtime::CheckedByteSize(pad.dtype(), Shape(out_dims));
  const std::string what = absl::StrCat("padded_batch: component ", k,
                                        " padded to ", Shape(out_dims).ToString());
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", bytes.status().message()));
  }
  if (*bytes > budget.count()) return MemoryBudgetExceeded(what, *bytes, budget);
  switch (pad.dtype()) {
    case DType::kF32: return PadAndStack<float>(rows, dims, pad);
    case DType::kF64: return PadAndStack<double>(rows, dims, pad);
    case DType::kBF16: return PadAndStack<runtime::BFloat16>(rows, dims, pad);
    case DType::kI32: return PadAndStack<int32_t>(rows, dims, pad);
    case DType::kI64: return PadAndStack<int64_t>(rows, dims, pad);
    case DType::kU8: return PadAndStack<uint8_t>(rows, dims, pad);
    case DType::kBytes: return PadAndStack<std::string>(rows, dims, pad);
  }
  return absl::InternalError("padded_batch: unknown dtype");
}

}  // namespace

absl::StatusOr<IteratorPtr> PaddedBatchNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  class It final : public DatasetIterator {
   public:
    It(IteratorPtr input, const PaddedBatchNode& node, common::Bytes budget)
        : input_(std::move(input)),
          budget_(budget),
          b_(node.batch_size()),
          drop_(node.drop_remainder()),
          shapes_(node.padded_shapes()),
          pads_(node.padding_values()) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      if (done_) return std::optional<Element>();
      const int64_t b = b_;
      std::vector<Element> parts;
      while (static_cast<int64_t>(parts.size()) < b) {
        TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
        if (!e.has_value()) {
          done_ = true;
          break;
        }
        parts.push_back(*std::move(e));
      }
      if (parts.empty() ||
          (drop_ && static_cast<int64_t>(parts.size()) < b))
        return std::optional<Element>();
      const Element& first = parts[0];
      const size_t n = shapes_.size();
      std::vector<std::vector<const Tensor*>> columns(n);
      for (size_t i = 0; i < parts.size(); ++i) {
        if (!parts[i].SameStructure(first))
          return StructureError(parts[i], i, first);
        size_t k = 0;
        for (const Tensor* t : parts[i].Flatten()) {
          if (k < n) columns[k].push_back(t);
          ++k;
        }
        if (k != n) return StructureError(parts[i], i, first);
      }
      std::vector<Tensor> leaves;
      for (size_t k = 0; k < n; ++k) {
        TPUSIM_ASSIGN_OR_RETURN(
            Tensor t, PadColumn(columns[k], shapes_[k], pads_[k], k, budget_));
        leaves.push_back(std::move(t));
      }
      TPUSIM_ASSIGN_OR_RETURN(Element out, first.Unflatten(std::move(leaves)));
      return std::optional<Element>(std::move(out));
    }

   private:
    IteratorPtr input_;
    common::Bytes budget_;
    int64_t b_;
    bool drop_;
    std::vector<Shape> shapes_;  // copies: the iterator may outlive the node
    std::vector<Tensor> pads_;
    bool done_ = false;
  };
  return IteratorPtr(
      std::make_unique<It>(std::move(input), *this, ctx.max_memory));
}

absl::StatusOr<NodePtr> PaddedBatchNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0], batch_size_, padded_shapes_, padding_values_,
              drop_remainder_);
}

// ---------------------------------------------------------------------------------------------
// UnbatchNode

UnbatchNode::UnbatchNode(NodePtr input, ElementSpec spec)
    : DatasetNode({std::move(input)}, std::move(spec)) {}

absl::StatusOr<NodePtr> UnbatchNode::Make(NodePtr input) {
  for (const auto& [path, leaf] : input->element_spec().FlattenWithPaths()) {
    if (leaf->shape.rank_known() && leaf->shape.rank() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unbatch: component ", path, " (", leaf->ToString(),
          ") is a scalar; every component needs rank >= 1"));
    }
  }
  ElementSpec spec = input->element_spec().Map([](const TensorSpec& s) {
    if (!s.shape.rank_known()) return s;
    std::vector<int64_t> d(s.shape.dims().begin() + 1, s.shape.dims().end());
    return s.WithShape(Shape(std::move(d)));
  });
  return NodePtr(std::make_shared<UnbatchNode>(std::move(input),
                                               std::move(spec)));
}

absl::StatusOr<IteratorPtr> UnbatchNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  class It final : public DatasetIterator {
   public:
    explicit It(IteratorPtr input) : input_(std::move(input)) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      while (!current_.has_value() || row_ == rows_) {
        TPUSIM_ASSIGN_OR_RETURN(current_, input_->GetNext());
        if (!current_.has_value()) return std::optional<Element>();
        row_ = 0;
        rows_ = -1;
        for (const auto& [path, t] : current_->FlattenWithPaths()) {
          if (t->rank() < 1) {
            return absl::InvalidArgumentError(absl::StrCat(
                "unbatch: component ", path, " is a scalar"));
          }
          if (rows_ >= 0 && t->shape().dim(0) != rows_) {
            return absl::InvalidArgumentError(absl::StrCat(
                "unbatch: components of one element differ in dimension 0 (",
                rows_, " vs ", t->shape().dim(0), " at component ", path,
                ")"));
          }
          rows_ = t->shape().dim(0);
        }
        if (rows_ < 0) rows_ = 0;
      }
      std::vector<Tensor> leaves;
      for (const Tensor* t : current_->Flatten()) leaves.push_back(t->Row(row_));
      ++row_;
      TPUSIM_ASSIGN_OR_RETURN(Element out,
                              current_->Unflatten(std::move(leaves)));
      return std::optional<Element>(std::move(out));
    }

   private:
    IteratorPtr input_;
    std::optional<Element> current_;
    int64_t row_ = 0;
    int64_t rows_ = 0;
  };
  return IteratorPtr(std::make_unique<It>(std::move(input)));
}

absl::StatusOr<NodePtr> UnbatchNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0]);
}

// ---------------------------------------------------------------------------------------------
// WindowNode

WindowNode::WindowNode(NodePtr input, int64_t size, int64_t shift,
                       int64_t stride, bool drop_remainder)
    : DatasetNode({input}, input->element_spec()),
      size_(size),
      shift_(shift),
      stride_(stride),
      drop_remainder_(drop_remainder) {}

absl::StatusOr<NodePtr> WindowNode::Make(NodePtr input, int64_t size,
                                         int64_t shift, int64_t stride,
                                         bool drop_remainder) {
  // TF 2.2's WindowDatasetOp: "Window size must be greater than zero." (and
  // shift, stride likewise); tpusim adds the value.
  if (size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "window: size must be greater than zero, got size=", size));
  }
  if (shift <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "window: shift must be greater than zero, got shift=", shift));
  }
  if (stride <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "window: stride must be greater than zero, got stride=", stride));
  }
  // The buffer holds (size - 1) * stride + 1 elements.
  if (size - 1 > (std::numeric_limits<int64_t>::max() - 1) / stride) {
    return absl::InvalidArgumentError(absl::StrCat(
        "window: size=", size, " and stride=", stride,
        " span (size - 1) * stride + 1 elements, more than 2^63-1"));
  }
  return NodePtr(std::make_shared<WindowNode>(std::move(input), size, shift,
                                              stride, drop_remainder));
}

std::vector<NodeAttr> WindowNode::attrs() const {
  return {{"size", absl::StrCat(size_)},
          {"shift", absl::StrCat(shift_)},
          {"stride", absl::StrCat(stride_)},
          {"drop_remainder", B(drop_remainder_)}};
}

absl::StatusOr<IteratorPtr> WindowNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  const int64_t span = (size_ - 1) * stride_ + 1;
  // Estimate before buffering: the buffer holds `span` input elements.
  TPUSIM_RETURN_IF_ERROR(CheckBufferEstimate(
      absl::StrCat("window(size=", size_, ", stride=", stride_, ")"), span,
      inputs()[0]->element_spec(), ctx.max_memory));
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  class It final : public DatasetIterator {
   public:
    It(IteratorPtr input, const WindowNode& node, int64_t span,
       common::Bytes budget)
        : input_(std::move(input)),
          shift_(node.shift()),
          stride_(node.stride()),
          drop_(node.drop_remainder()),
          span_(span),
          budget_(budget) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      if (input_ == nullptr && buffer_.empty()) return std::optional<Element>();
      // Fill the buffer up to the span. Like TF's kernel, an element's error
      // is kept with it and reported only if the element is in a window.
      while (input_ != nullptr &&
             static_cast<int64_t>(buffer_.size()) < span_) {
        absl::StatusOr<std::optional<Element>> e = input_->GetNext();
        if (e.ok() && !e->has_value()) {
          input_.reset();
          break;
        }
        if (e.ok()) {
          const int64_t b = ElementBytes(**e);
          bytes_ += b;
          if (bytes_ > budget_.count()) {
            return MemoryBudgetExceeded(
                absl::StrCat("window buffer at element ", buffer_.size()),
                bytes_, budget_);
          }
          buffer_.push_back({*std::move(*e), b});
        } else {
          buffer_.push_back({e.status(), 0});
        }
      }
      const int64_t n = static_cast<int64_t>(buffer_.size());
      if (n == 0 || (drop_ && n < span_)) {
        buffer_.clear();
        bytes_ = 0;
        return std::optional<Element>();
      }
      std::vector<Element> window;
      absl::Status status;
      for (int64_t i = 0; i < n; i += stride_) {
        if (!buffer_[i].value.ok()) {
          status = buffer_[i].value.status();
          break;
        }
        window.push_back(*buffer_[i].value);
      }
      // Shift, reading and discarding input elements past the buffer.
      if (shift_ >= n) {
        for (int64_t i = n; input_ != nullptr && i < shift_; ++i) {
          absl::StatusOr<std::optional<Element>> e = input_->GetNext();
          if (e.ok() && !e->has_value()) input_.reset();  // errors ignored
        }
        buffer_.clear();
        bytes_ = 0;
      } else {
        for (int64_t i = 0; i < shift_; ++i) {
          bytes_ -= buffer_.front().bytes;
          buffer_.pop_front();
        }
      }
      TPUSIM_RETURN_IF_ERROR(status);
      return std::optional<Element>(Element::Tuple(std::move(window)));
    }

   private:
    struct Buffered {
      absl::StatusOr<Element> value;
      int64_t bytes;
    };
    IteratorPtr input_;
    int64_t shift_, stride_;
    bool drop_;
    int64_t span_;
    common::Bytes budget_;
    std::deque<Buffered> buffer_;
    int64_t bytes_ = 0;
  };
  return IteratorPtr(
      std::make_unique<It>(std::move(input), *this, span, ctx.max_memory));
}

absl::StatusOr<NodePtr> WindowNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0], size_, shift_, stride_, drop_remainder_);
}

// ---------------------------------------------------------------------------------------------
// WindowArgNode

namespace {

ElementSpec WindowArgSpec(const ElementSpec& window_spec, int component) {
  if (component == WindowArgNode::kAllComponents) return window_spec;
  return *window_spec.Flatten()[component];
}

}  // namespace

WindowArgNode::WindowArgNode(ElementSpec spec, int component)
    : DatasetNode({}, std::move(spec)), component_(component) {}

absl::StatusOr<NodePtr> WindowArgNode::Make(ElementSpec window_spec,
                                            int component) {
  const int leaves = window_spec.num_leaves();
  if (component != kAllComponents && (component < 0 || component >= leaves)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "window argument: component ", component,
        " out of range; the elements have ", leaves, " components"));
  }
  return NodePtr(std::make_shared<WindowArgNode>(
      WindowArgSpec(window_spec, component), component));
}

std::vector<NodeAttr> WindowArgNode::attrs() const {
  return {{"component", component_ == kAllComponents
                            ? std::string("all")
                            : absl::StrCat(component_)}};
}

absl::StatusOr<IteratorPtr> WindowArgNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  if (ctx.argument == nullptr || !ctx.argument->is_tuple()) {
    return absl::FailedPreconditionError(
        "WindowArg: a window dataset is iterated outside a function over "
        "windows (window(...).flat_map / interleave)");
  }
  std::vector<Element> elements;
  elements.reserve(ctx.argument->children().size());
  for (const Element& e : ctx.argument->children()) {
    if (component_ == kAllComponents) {
      elements.push_back(e);
      continue;
    }
    std::vector<const Tensor*> leaves = e.Flatten();
    if (component_ >= static_cast<int>(leaves.size())) {
      return absl::InternalError(
          absl::StrCat("WindowArg: component ", component_,
                       " of an element with ", leaves.size(), " components"));
    }
    elements.push_back(Element(*leaves[component_]));
  }
  return IteratorPtr(std::make_unique<VectorIterator>(std::move(elements)));
}

absl::StatusOr<NodePtr> WindowArgNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 0));
  return NodePtr(std::make_shared<WindowArgNode>(element_spec(), component_));
}

// ---------------------------------------------------------------------------------------------
// ShardNode

ShardNode::ShardNode(NodePtr input, int64_t num_shards, int64_t index,
                     ShardNonEmpty non_empty)
    : DatasetNode({input}, input->element_spec()),
      num_shards_(num_shards),
      index_(index),
      non_empty_(non_empty) {}

absl::StatusOr<NodePtr> ShardNode::Make(NodePtr input, int64_t num_shards,
                                        int64_t index,
                                        ShardNonEmpty non_empty) {
  // TF (shard_dataset_op.cc): "Number of shards must be greater than zero
  // (currently num_shards = 0)." and "Index must be between 0 and 1 (currently
  // index = 2)."
  if (num_shards <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard: Number of shards must be greater than zero "
                     "(currently num_shards = ",
                     num_shards, ")."));
  }
  if (index < 0 || index >= num_shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard: Index must be between 0 and ", num_shards - 1,
                     " (currently index = ", index, ")."));
  }
  return NodePtr(std::make_shared<ShardNode>(std::move(input), num_shards,
                                             index, non_empty));
}

std::vector<NodeAttr> ShardNode::attrs() const {
  std::vector<NodeAttr> attrs = {{"num_shards", absl::StrCat(num_shards_)},
                                 {"index", absl::StrCat(index_)}};
  if (require_non_empty()) attrs.push_back({"require_non_empty", "true"});
  return attrs;
}

namespace {

// The error of a require-non-empty shard whose input had only `elems`
// elements for `shards` shards.
absl::Status NotEnoughElementsForShards(ShardNonEmpty wording, int64_t elems,
                                        int64_t shards) {
  if (wording == ShardNonEmpty::kTf24Wording) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ShardDataset(require_non_empty): Could not apply FILE based "
        "sharding: the dataset only has ",
        elems, " file(s), which is not enough for the required ", shards,
        " shards/workers; consider the auto-shard policy DATA or OFF "
        "(options.auto_shard_policy), or split the input files into more "
        "files"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "ShardDataset(require_non_empty): there aren't enough elements in this "
      "dataset for each shard to have at least one element (# elems = ",
      elems, ", # shards = ", shards,
      "); with a distribution strategy, consider setting the auto-shard "
      "policy to DATA or OFF (options.auto_shard_policy)"));
}

}  // namespace

absl::StatusOr<IteratorPtr> ShardNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  class It final : public DatasetIterator {
   public:
    It(IteratorPtr input, int64_t n, int64_t i, ShardNonEmpty non_empty)
        : input_(std::move(input)), n_(n), i_(i), non_empty_(non_empty) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      if (input_ == nullptr) return std::optional<Element>();
      // The elements of the other shards are skipped (not made when the input
      // can avoid it; see DatasetIterator::Skip).
      const int64_t before = (i_ - pos_ % n_ + n_) % n_;
      TPUSIM_ASSIGN_OR_RETURN(const int64_t skipped, input_->Skip(before));
      pos_ += skipped;
      if (skipped < before) {
        input_.reset();
        return std::optional<Element>();
      }
      TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
      if (!e.has_value()) {
        input_.reset();
        return e;
      }
      ++pos_;
      // Require non-empty (TF 2.2 shard_dataset_op): with the first element
      // in hand, every shard must have one: read ahead to position n-1.
      if (non_empty_ != ShardNonEmpty::kNotRequired && pos_ < n_) {
        const int64_t ahead = n_ - pos_;
        TPUSIM_ASSIGN_OR_RETURN(const int64_t got, input_->Skip(ahead));
        pos_ += got;
        if (got < ahead) {
          input_.reset();
          return NotEnoughElementsForShards(non_empty_, pos_, n_);
        }
      }
      return e;
    }

   private:
    IteratorPtr input_;  // null once the input ended (or failed the check)
    int64_t n_, i_;
    ShardNonEmpty non_empty_;
    int64_t pos_ = 0;
  };
  return IteratorPtr(
      std::make_unique<It>(std::move(input), num_shards_, index_, non_empty_));
}

absl::StatusOr<NodePtr> ShardNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0], num_shards_, index_, non_empty_);
}

// ---------------------------------------------------------------------------------------------
// RepeatNode

RepeatNode::RepeatNode(NodePtr input, int64_t count)
    : DatasetNode({input}, input->element_spec()), count_(count) {}

absl::StatusOr<NodePtr> RepeatNode::Make(NodePtr input, int64_t count) {
  if (count < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "repeat: count must be -1 (forever) or >= 0, got ", count));
  }
  return NodePtr(std::make_shared<RepeatNode>(std::move(input), count));
}

std::vector<NodeAttr> RepeatNode::attrs() const {
  return {{"count", absl::StrCat(count_)}};
}

absl::StatusOr<IteratorPtr> RepeatNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  class It final : public DatasetIterator {
   public:
    It(NodePtr input, int64_t count, IteratorContext ctx)
        : input_(std::move(input)), count_(count), ctx_(std::move(ctx)) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      while (count_ < 0 || pass_ < count_) {
        if (current_ == nullptr) {
          IteratorContext c = ctx_;
          c.epoch = ctx_.epoch * 1000003u + static_cast<uint64_t>(pass_);
          TPUSIM_ASSIGN_OR_RETURN(current_, input_->MakeIterator(c));
          produced_in_pass_ = false;
        }
        TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, current_->GetNext());
        if (e.has_value()) {
          produced_in_pass_ = true;
          return e;
        }
        current_.reset();
        ++pass_;
        // As TF's forever-repeat: an input that produced nothing in a pass ends
        // the repetition (avoids an endless loop over an empty dataset). A
        // finite count just runs its passes.
        if (count_ < 0 && !produced_in_pass_) break;
      }
      count_ = 0;
      pass_ = 0;
      return std::optional<Element>();
    }
    absl::StatusOr<int64_t> Skip(int64_t n) override {
      // Skip(0) moves past nothing and must not end the repetition (the reset
      // below is for passes that ran out): shard(n, i) asks for 0 whenever
      // its next element is the input's next one.
      if (n <= 0) return 0;
      int64_t skipped = 0;
      while (skipped < n && (count_ < 0 || pass_ < count_)) {
        if (current_ == nullptr) {
          IteratorContext c = ctx_;
          c.epoch = ctx_.epoch * 1000003u + static_cast<uint64_t>(pass_);
          TPUSIM_ASSIGN_OR_RETURN(current_, input_->MakeIterator(c));
          produced_in_pass_ = false;
        }
        TPUSIM_ASSIGN_OR_RETURN(const int64_t got, current_->Skip(n - skipped));
        skipped += got;
        if (got > 0) produced_in_pass_ = true;
        if (skipped == n) return skipped;  // GetNext moves on if it ended
        current_.reset();
        ++pass_;
        if (count_ < 0 && !produced_in_pass_) break;
      }
      count_ = 0;
      pass_ = 0;
      return skipped;
    }

   private:
    NodePtr input_;
    int64_t count_;
    IteratorContext ctx_;
    int64_t pass_ = 0;
    bool produced_in_pass_ = false;
    IteratorPtr current_;
  };
  return IteratorPtr(std::make_unique<It>(inputs()[0], count_, ctx));
}

absl::StatusOr<NodePtr> RepeatNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0], count_);
}

// ---------------------------------------------------------------------------------------------
// MapNode

namespace {

// A probe element of zeros for `spec`, unknown dims set to `unknown_as`,
// unknown ranks as scalars.
Element ProbeElement(const ElementSpec& spec, int64_t unknown_as) {
  return spec.Map([&](const TensorSpec& s) {
    std::vector<int64_t> dims;
    if (s.shape.rank_known()) {
      for (int64_t d : s.shape.dims())
        dims.push_back(d == runtime::kUnknownDim ? unknown_as : d);
    }
    return Tensor::Zeros(s.dtype, Shape(std::move(dims)));
  });
}

absl::StatusOr<ElementSpec> InferMapSpec(const ElementSpec& input,
                                         const MapFn& fn,
                                         absl::string_view name) {
  auto fail = [&](const absl::Status& s) {
    return absl::InvalidArgumentError(
        absl::StrCat("map", name.empty() ? "" : absl::StrCat(" '", name, "'"),
                     ": cannot infer the output spec by calling the function "
                     "on a zero element of spec ",
                     ElementSpecToString(input), " (", s.message(),
                     "); declare MapFunction::output_spec"));
  };
  // Probe elements are real zeros; refuse to allocate absurd ones.
  constexpr int64_t kMaxProbeElements = int64_t{1} << 24;
  int64_t probe_elements = 0;
  input.ForEach([&](const std::string&, const TensorSpec& t) {
    int64_t n = 1;
    if (t.shape.rank_known()) {
      for (int64_t d : t.shape.dims()) {
        const int64_t k = d == runtime::kUnknownDim ? 2 : d;
        n = (k != 0 && n > kMaxProbeElements / k) ? kMaxProbeElements + 1
                                                  : n * k;
      }
    }
    probe_elements = std::min(probe_elements + n, kMaxProbeElements + 1);
  });
  if (probe_elements > kMaxProbeElements) {
    return fail(absl::InvalidArgumentError(absl::StrCat(
        "a probe element would exceed ", kMaxProbeElements, " values")));
  }
  absl::StatusOr<Element> a = fn(ProbeElement(input, 1));
  if (!a.ok()) return fail(a.status());
  absl::StatusOr<Element> b = fn(ProbeElement(input, 2));
  if (!b.ok()) return fail(b.status());
  ElementSpec sa = SpecOf(*a);
  ElementSpec sb = SpecOf(*b);
  absl::StatusOr<ElementSpec> merged = MostSpecificCompatible(sa, sb);
  if (!merged.ok()) return fail(merged.status());
  return merged;
}

}  // namespace

MapNode::MapNode(NodePtr input, MapFunction fn, ElementSpec spec)
    : DatasetNode({std::move(input)}, std::move(spec)), fn_(std::move(fn)) {
  set_host_cost_per_element(fn_.cost);
}

absl::StatusOr<NodePtr> MapNode::Make(NodePtr input, MapFunction fn) {
  if (!fn.fn) return absl::InvalidArgumentError("map: the function is empty");
  if (fn.num_parallel_calls == 0 || fn.num_parallel_calls < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "map: num_parallel_calls=", fn.num_parallel_calls,
        ": must be >= 1 or -1 (AUTOTUNE)"));
  }
  if (fn.cost.count() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("map: cost=", fn.cost.count(),
                     "ps: a host cost per element must be >= 0"));
  }
  ElementSpec spec;
  if (fn.output_spec.has_value()) {
    spec = *fn.output_spec;
  } else if (fn.spec_fn) {
    TPUSIM_ASSIGN_OR_RETURN(spec, fn.spec_fn(input->element_spec()));
  } else {
    TPUSIM_ASSIGN_OR_RETURN(
        spec, InferMapSpec(input->element_spec(), fn.fn, fn.name));
  }
  return NodePtr(std::make_shared<MapNode>(std::move(input), std::move(fn),
                                           std::move(spec)));
}

std::vector<NodeAttr> MapNode::attrs() const {
  std::vector<NodeAttr> a;
  if (!fn_.name.empty()) a.push_back({"f", fn_.name});
  if (fn_.num_parallel_calls != 1) {
    a.push_back({"num_parallel_calls", fn_.num_parallel_calls == -1
                                           ? std::string("AUTOTUNE")
                                           : absl::StrCat(fn_.num_parallel_calls)});
  }
  if (!fn_.deterministic) a.push_back({"deterministic", "false"});
  return a;
}

absl::StatusOr<IteratorPtr> MapNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  class It final : public DatasetIterator {
   public:
    It(IteratorPtr input, MapFn fn, ElementSpec spec)
        : input_(std::move(input)),
          fn_(std::move(fn)),
          spec_(std::move(spec)) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
      if (!e.has_value()) return e;
      TPUSIM_ASSIGN_OR_RETURN(Element out, fn_(*e));
      const bool ok =
          (out.is_leaf() && spec_.is_leaf())
              ? out.leaf().dtype() == spec_.leaf().dtype &&
                    out.leaf().shape().IsCompatibleWith(spec_.leaf().shape)
              : IsCompatible(SpecOf(out), spec_);
      if (!ok) {
        return absl::InvalidArgumentError(
            absl::StrCat("map: the function returned an element of spec ",
                         ElementSpecToString(SpecOf(out)),
                         ", incompatible with its output spec ",
                         ElementSpecToString(spec_)));
      }
      return std::optional<Element>(std::move(out));
    }

   private:
    IteratorPtr input_;
    MapFn fn_;
    ElementSpec spec_;
  };
  return IteratorPtr(
      std::make_unique<It>(std::move(input), fn_.fn, element_spec()));
}

absl::StatusOr<NodePtr> MapNode::WithInputs(std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0], fn_);
}

// ---------------------------------------------------------------------------------------------
// MapAndBatchNode

MapAndBatchNode::MapAndBatchNode(NodePtr input, MapFunction fn,
                                 int64_t batch_size, bool drop_remainder,
                                 int64_t num_parallel_calls, NodePtr chain)
    : DatasetNode({std::move(input)}, chain->element_spec()),
      fn_(std::move(fn)),
      batch_size_(batch_size),
      drop_remainder_(drop_remainder),
      num_parallel_calls_(num_parallel_calls),
      chain_(std::move(chain)) {}

absl::StatusOr<NodePtr> MapAndBatchNode::Make(NodePtr input, MapFunction fn,
                                              int64_t batch_size,
                                              bool drop_remainder,
                                              int64_t num_parallel_calls) {
  // TF's MapAndBatchDatasetOp: "batch_size must be greater than zero." and
  // num_parallel_calls > 0 or AUTOTUNE; tpusim adds the value.
  if (batch_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "map_and_batch: batch_size must be greater than zero, got ",
        batch_size));
  }
  if (num_parallel_calls == 0 || num_parallel_calls < kAutotune) {
    return absl::InvalidArgumentError(
        absl::StrCat("map_and_batch: num_parallel_calls=", num_parallel_calls,
                     ": must be >= 1 or -1 (AUTOTUNE)"));
  }
  MapFunction map_fn = fn;
  map_fn.num_parallel_calls = num_parallel_calls;
  TPUSIM_ASSIGN_OR_RETURN(NodePtr map, MapNode::Make(input, std::move(map_fn)));
  absl::StatusOr<NodePtr> batch =
      BatchNode::Make(std::move(map), batch_size, drop_remainder,
                      /*check_dropped_rows=*/true);
  if (!batch.ok()) {
    return absl::Status(
        batch.status().code(),
        absl::StrCat("map_and_batch: ", batch.status().message()));
  }
  return NodePtr(std::make_shared<MapAndBatchNode>(
      std::move(input), std::move(fn), batch_size, drop_remainder,
      num_parallel_calls, *std::move(batch)));
}

std::vector<NodeAttr> MapAndBatchNode::attrs() const {
  std::vector<NodeAttr> a;
  if (!fn_.name.empty()) a.push_back({"f", fn_.name});
  a.push_back({"batch_size", absl::StrCat(batch_size_)});
  a.push_back({"num_parallel_calls", num_parallel_calls_ == kAutotune
                                         ? std::string("AUTOTUNE")
                                         : absl::StrCat(num_parallel_calls_)});
  a.push_back({"drop_remainder", B(drop_remainder_)});
  if (fn_.cost.count() != 0) a.push_back({"cost", fn_.cost.ToString()});
  return a;
}

absl::StatusOr<IteratorPtr> MapAndBatchNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  return chain_->MakeIterator(ctx);
}

absl::StatusOr<NodePtr> MapAndBatchNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0], fn_, batch_size_, drop_remainder_,
              num_parallel_calls_);
}

absl::StatusOr<NodePtr> MapAndBatchNode::WithBatchSize(
    int64_t batch_size) const {
  return Make(inputs()[0], fn_, batch_size, drop_remainder_,
              num_parallel_calls_);
}

// ---------------------------------------------------------------------------------------------
// FilterNode

FilterNode::FilterNode(NodePtr input, PredicateFn predicate)
    : DatasetNode({input}, input->element_spec()),
      predicate_(std::move(predicate)) {}

absl::StatusOr<NodePtr> FilterNode::Make(NodePtr input, PredicateFn predicate) {
  if (!predicate)
    return absl::InvalidArgumentError("filter: the predicate is empty");
  return NodePtr(
      std::make_shared<FilterNode>(std::move(input), std::move(predicate)));
}

absl::StatusOr<IteratorPtr> FilterNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  class It final : public DatasetIterator {
   public:
    It(IteratorPtr input, PredicateFn p)
        : input_(std::move(input)), p_(std::move(p)) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      while (true) {
        TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
        if (!e.has_value()) return e;
        TPUSIM_ASSIGN_OR_RETURN(bool keep, p_(*e));
        if (keep) return e;
      }
    }

   private:
    IteratorPtr input_;
    PredicateFn p_;
  };
  return IteratorPtr(std::make_unique<It>(std::move(input), predicate_));
}

absl::StatusOr<NodePtr> FilterNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0], predicate_);
}

// ---------------------------------------------------------------------------------------------
// ShuffleNode

ShuffleNode::ShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed,
                         bool reshuffle_each_iteration)
    : DatasetNode({input}, input->element_spec()),
      buffer_size_(buffer_size),
      seed_(seed),
      reshuffle_each_iteration_(reshuffle_each_iteration) {}

absl::StatusOr<NodePtr> ShuffleNode::Make(NodePtr input, int64_t buffer_size,
                                          uint64_t seed,
                                          bool reshuffle_each_iteration) {
  if (buffer_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shuffle: buffer_size must be greater than zero, got ", buffer_size));
  }
  return NodePtr(std::make_shared<ShuffleNode>(std::move(input), buffer_size,
                                               seed, reshuffle_each_iteration));
}

std::vector<NodeAttr> ShuffleNode::attrs() const {
  return {{"buffer_size", absl::StrCat(buffer_size_)},
          {"seed", absl::StrCat(seed_)},
          {"reshuffle_each_iteration", B(reshuffle_each_iteration_)}};
}

absl::StatusOr<IteratorPtr> ShuffleNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  // Estimate before allocating: the buffer holds up to buffer_size elements.
  TPUSIM_RETURN_IF_ERROR(CheckBufferEstimate(
      absl::StrCat("shuffle(buffer_size=", buffer_size_, ")"), buffer_size_,
      inputs()[0]->element_spec(), ctx.max_memory));
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  const uint64_t seed =
      reshuffle_each_iteration_ ? MixSeed(seed_, ctx.epoch) : MixSeed(seed_, 0);
  class It final : public DatasetIterator {
   public:
    It(IteratorPtr input, int64_t size, uint64_t seed, common::Bytes budget)
        : input_(std::move(input)), size_(size), rng_(seed), budget_(budget) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      // The whole buffer at once (the estimate admitted it): growing by
      // doubling would hold up to twice the slots the estimate counts.
      if (buffer_.capacity() == 0) buffer_.reserve(static_cast<size_t>(size_));
      while (!input_done_ && static_cast<int64_t>(buffer_.size()) < size_) {
        TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
        if (!e.has_value()) {
          input_done_ = true;
          break;
        }
        // Filling counts the elements' actual sizes (strings, unknown
        // dimensions); later refills replace one element with another.
        fill_bytes_ += ElementBytes(*e);
        if (fill_bytes_ > budget_.count()) {
          return MemoryBudgetExceeded(
              absl::StrCat("shuffle(buffer_size=", size_, ") at element ",
                           buffer_.size()),
              fill_bytes_, budget_);
        }
        buffer_.push_back(*std::move(e));
      }
      if (buffer_.empty()) return std::optional<Element>();
      const size_t k = static_cast<size_t>(rng_.Uniform(buffer_.size()));
      Element out = std::move(buffer_[k]);
      if (!input_done_) {
        TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
        if (e.has_value()) {
          buffer_[k] = *std::move(e);
          return std::optional<Element>(std::move(out));
        }
        input_done_ = true;
      }
      buffer_[k] = std::move(buffer_.back());
      buffer_.pop_back();
      return std::optional<Element>(std::move(out));
    }

   private:
    IteratorPtr input_;
    int64_t size_;
    Prng rng_;
    common::Bytes budget_;
    int64_t fill_bytes_ = 0;
    std::vector<Element> buffer_;
    bool input_done_ = false;
  };
  return IteratorPtr(std::make_unique<It>(std::move(input), buffer_size_, seed,
                                          ctx.max_memory));
}

absl::StatusOr<NodePtr> ShuffleNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0], buffer_size_, seed_, reshuffle_each_iteration_);
}

// ---------------------------------------------------------------------------------------------
// TakeNode / SkipNode / PrefetchNode

TakeNode::TakeNode(NodePtr input, int64_t count)
    : DatasetNode({input}, input->element_spec()), count_(count) {}

absl::StatusOr<NodePtr> TakeNode::Make(NodePtr input, int64_t count) {
  if (count < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("take: count must be -1 (all) or >= 0, got ", count));
  }
  return NodePtr(std::make_shared<TakeNode>(std::move(input), count));
}

std::vector<NodeAttr> TakeNode::attrs() const {
  return {{"count", absl::StrCat(count_)}};
}

absl::StatusOr<IteratorPtr> TakeNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  class It final : public DatasetIterator {
   public:
    It(IteratorPtr input, int64_t left)
        : input_(std::move(input)), left_(left) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      if (left_ == 0) return std::optional<Element>();
      TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
      if (!e.has_value()) {
        left_ = 0;
        return e;
      }
      if (left_ > 0) --left_;
      return e;
    }
    absl::StatusOr<int64_t> Skip(int64_t n) override {
      const int64_t want = left_ < 0 ? n : std::min(n, left_);
      if (want <= 0) return 0;
      TPUSIM_ASSIGN_OR_RETURN(const int64_t got, input_->Skip(want));
      if (got < want) {
        left_ = 0;
      } else if (left_ > 0) {
        left_ -= got;
      }
      return got;
    }

   private:
    IteratorPtr input_;
    int64_t left_;
  };
  return IteratorPtr(std::make_unique<It>(std::move(input), count_));
}

absl::StatusOr<NodePtr> TakeNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0], count_);
}

SkipNode::SkipNode(NodePtr input, int64_t count)
    : DatasetNode({input}, input->element_spec()), count_(count) {}

absl::StatusOr<NodePtr> SkipNode::Make(NodePtr input, int64_t count) {
  if (count < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("skip: count must be -1 (all) or >= 0, got ", count));
  }
  return NodePtr(std::make_shared<SkipNode>(std::move(input), count));
}

std::vector<NodeAttr> SkipNode::attrs() const {
  return {{"count", absl::StrCat(count_)}};
}

absl::StatusOr<IteratorPtr> SkipNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  if (count_ < 0) {
    // TF's skip(-1) ("skip all") iterator is empty: it never makes the input
    // iterator, so an endless or failing input gives an empty dataset at once
    // (checked against TF 2.21 by tests/conformance/).
    class Empty final : public DatasetIterator {
     public:
      absl::StatusOr<std::optional<Element>> GetNext() override {
        return std::optional<Element>();
      }
    };
    return IteratorPtr(std::make_unique<Empty>());
  }
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  class It final : public DatasetIterator {
   public:
    It(IteratorPtr input, int64_t skip)
        : input_(std::move(input)), skip_(skip) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      while (skip_ != 0) {
        TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
        if (!e.has_value()) {
          skip_ = 0;
          return e;
        }
        if (skip_ > 0) --skip_;
      }
      return input_->GetNext();
    }

   private:
    IteratorPtr input_;
    int64_t skip_;
  };
  return IteratorPtr(std::make_unique<It>(std::move(input), count_));
}

absl::StatusOr<NodePtr> SkipNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0], count_);
}

PrefetchNode::PrefetchNode(NodePtr input, int64_t buffer_size)
    : DatasetNode({input}, input->element_spec()), buffer_size_(buffer_size) {}

absl::StatusOr<NodePtr> PrefetchNode::Make(NodePtr input, int64_t buffer_size) {
  if (buffer_size < 0 && buffer_size != kAutotune) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prefetch: buffer_size must be >= 0 or AUTOTUNE (-1), got ",
        buffer_size));
  }
  return NodePtr(std::make_shared<PrefetchNode>(std::move(input), buffer_size));
}

std::vector<NodeAttr> PrefetchNode::attrs() const {
  return {{"buffer_size", absl::StrCat(buffer_size_)}};
}

absl::StatusOr<IteratorPtr> PrefetchNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  // Prefetching changes timing, never values: a pass-through here (the host
  // timing model reads buffer_size()).
  return inputs()[0]->MakeIterator(ctx);
}

absl::StatusOr<NodePtr> PrefetchNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0], buffer_size_);
}

// ---------------------------------------------------------------------------------------------
// CacheNode

// Shared by every iterator of one CacheNode; a mutex guards it because
// iterators of one graph may run on different threads (each iterator itself is
// single-threaded).
struct CacheNode::State {
  std::mutex mu;
  bool complete = false;
  std::vector<Element> elements;
};

CacheNode::CacheNode(NodePtr input, std::shared_ptr<State> state)
    : DatasetNode({input}, input->element_spec()), state_(std::move(state)) {}

absl::StatusOr<NodePtr> CacheNode::Make(NodePtr input) {
  return NodePtr(
      std::make_shared<CacheNode>(std::move(input), std::make_shared<State>()));
}

absl::StatusOr<IteratorPtr> CacheNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->complete) {
      return IteratorPtr(std::make_unique<VectorIterator>(state_->elements));
    }
  }
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  class It final : public DatasetIterator {
   public:
    It(IteratorPtr input, std::shared_ptr<State> state, common::Bytes budget)
        : input_(std::move(input)), state_(std::move(state)), budget_(budget) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      if (input_ == nullptr) return std::optional<Element>();
      TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
      if (e.has_value()) {
        bytes_ += ElementBytes(*e);
        if (bytes_ > budget_.count()) {
          return MemoryBudgetExceeded(
              absl::StrCat("cache at element ", seen_.size()), bytes_, budget_);
        }
      }
      if (!e.has_value()) {
        input_.reset();
        std::lock_guard<std::mutex> lock(state_->mu);
        if (!state_->complete) {
          state_->complete = true;
          state_->elements = std::move(seen_);
        }
        return e;
      }
      seen_.push_back(*e);
      return e;
    }

   private:
    IteratorPtr input_;
    std::shared_ptr<State> state_;
    common::Bytes budget_;
    int64_t bytes_ = 0;
    std::vector<Element> seen_;
  };
  return IteratorPtr(
      std::make_unique<It>(std::move(input), state_, ctx.max_memory));
}

absl::StatusOr<NodePtr> CacheNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return Make(inputs[0]);  // a new graph gets a new, empty cache
}

// ---------------------------------------------------------------------------------------------
// Function nodes

namespace {

absl::StatusOr<NodePtr> Trace(const NodePtr& input, const DatasetFn& fn,
                              absl::string_view op) {
  if (!fn)
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": the function is empty"));
  FunctionArg arg(input->element_spec());
  Dataset body = fn(arg);
  if (!body.ok()) {
    return absl::Status(
        body.status().code(),
        absl::StrCat(op, " function: ", body.status().message()));
  }
  return body.node();
}

// Makes an iterator over `body` instantiated with `element`.
absl::StatusOr<IteratorPtr> Instantiate(const NodePtr& body, Element element,
                                        const IteratorContext& outer) {
  IteratorContext ctx;
  ctx.argument = std::make_shared<const Element>(std::move(element));
  ctx.epoch = outer.epoch;
  ctx.max_memory = outer.max_memory;
  return body->MakeIterator(ctx);
}

}  // namespace

FlatMapNode::FlatMapNode(NodePtr input, NodePtr body)
    : FunctionNode({std::move(input)}, body, body->element_spec()) {}

absl::StatusOr<NodePtr> FlatMapNode::Make(NodePtr input, const DatasetFn& fn) {
  TPUSIM_ASSIGN_OR_RETURN(NodePtr body, Trace(input, fn, "flat_map"));
  return MakeWithBody(std::move(input), std::move(body));
}

absl::StatusOr<NodePtr> FlatMapNode::MakeWithBody(NodePtr input, NodePtr body) {
  if (body == nullptr) return absl::InvalidArgumentError("flat_map: null body");
  return NodePtr(
      std::make_shared<FlatMapNode>(std::move(input), std::move(body)));
}

absl::StatusOr<IteratorPtr> FlatMapNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  class It final : public DatasetIterator {
   public:
    It(IteratorPtr input, NodePtr body, IteratorContext ctx)
        : input_(std::move(input)),
          body_(std::move(body)),
          ctx_(std::move(ctx)) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      while (input_ != nullptr) {
        if (current_ == nullptr) {
          TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> arg,
                                  input_->GetNext());
          if (!arg.has_value()) {
            input_.reset();
            break;
          }
          TPUSIM_ASSIGN_OR_RETURN(current_,
                                  Instantiate(body_, *std::move(arg), ctx_));
        }
        TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, current_->GetNext());
        if (e.has_value()) return e;
        current_.reset();
      }
      return std::optional<Element>();
    }

   private:
    IteratorPtr input_;
    NodePtr body_;
    IteratorContext ctx_;
    IteratorPtr current_;
  };
  return IteratorPtr(std::make_unique<It>(std::move(input), body(), ctx));
}

absl::StatusOr<NodePtr> FlatMapNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return MakeWithBody(inputs[0], body());
}

absl::StatusOr<NodePtr> FlatMapNode::WithBody(NodePtr body) const {
  return MakeWithBody(inputs()[0], std::move(body));
}

InterleaveNode::InterleaveNode(NodePtr input, NodePtr body,
                               int64_t cycle_length, int64_t block_length)
    : FunctionNode({std::move(input)}, body, body->element_spec()),
      cycle_length_(cycle_length),
      block_length_(block_length) {}

absl::StatusOr<NodePtr> InterleaveNode::Make(NodePtr input, const DatasetFn& fn,
                                             int64_t cycle_length,
                                             int64_t block_length) {
  TPUSIM_ASSIGN_OR_RETURN(NodePtr body, Trace(input, fn, "interleave"));
  return MakeWithBody(std::move(input), std::move(body), cycle_length,
                      block_length);
}

absl::StatusOr<NodePtr> InterleaveNode::MakeWithBody(NodePtr input,
                                                     NodePtr body,
                                                     int64_t cycle_length,
                                                     int64_t block_length) {
  if (body == nullptr)
    return absl::InvalidArgumentError("interleave: null body");
  if (cycle_length == kAutotune) cycle_length = kAutotuneCycleLength;
  if (block_length == kAutotune) block_length = 1;
  if (cycle_length < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "interleave: cycle_length must be >= 1 or AUTOTUNE (-1), got ",
        cycle_length));
  }
  if (cycle_length > kMaxCycleLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "interleave: cycle_length ", cycle_length,
        " exceeds tpusim's limit of ", kMaxCycleLength, " open iterators"));
  }
  if (block_length < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "interleave: block_length must be >= 1 or AUTOTUNE (-1), got ",
        block_length));
  }
  return NodePtr(std::make_shared<InterleaveNode>(
      std::move(input), std::move(body), cycle_length, block_length));
}

std::vector<NodeAttr> InterleaveNode::attrs() const {
  return {{"cycle_length", absl::StrCat(cycle_length_)},
          {"block_length", absl::StrCat(block_length_)}};
}

absl::StatusOr<IteratorPtr> InterleaveNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr input, inputs()[0]->MakeIterator(ctx));
  // TF's InterleaveDataset order: a cycle of `cycle_length` slots visited in
  // turn; each visit takes up to block_length elements from the slot's
  // iterator. An empty slot is filled from the next input element when the
  // cycle reaches it; an exhausted iterator empties its slot and the cycle
  // moves on.
  class It final : public DatasetIterator {
   public:
    It(IteratorPtr input, NodePtr body, IteratorContext ctx, int64_t cycle,
       int64_t block)
        : input_(std::move(input)),
          body_(std::move(body)),
          ctx_(std::move(ctx)),
          slots_(static_cast<size_t>(cycle)),
          block_(block) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      while (!end_of_input_ || open_ > 0) {
        IteratorPtr& slot = slots_[cycle_index_];
        if (slot != nullptr) {
          TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, slot->GetNext());
          if (e.has_value()) {
            if (++block_index_ == block_) Advance();
            return e;
          }
          slot.reset();
          --open_;
          Advance();
        } else if (!end_of_input_) {
          TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> arg,
                                  input_->GetNext());
          if (!arg.has_value()) {
            end_of_input_ = true;
            continue;
          }
          TPUSIM_ASSIGN_OR_RETURN(slot,
                                  Instantiate(body_, *std::move(arg), ctx_));
          ++open_;
        } else {
          Advance();
        }
      }
      return std::optional<Element>();
    }

   private:
    void Advance() {
      block_index_ = 0;
      cycle_index_ = (cycle_index_ + 1) % slots_.size();
    }
    IteratorPtr input_;
    NodePtr body_;
    IteratorContext ctx_;
    std::vector<IteratorPtr> slots_;
    int64_t block_;
    size_t cycle_index_ = 0;
    int64_t block_index_ = 0;
    int64_t open_ = 0;
    bool end_of_input_ = false;
  };
  return IteratorPtr(std::make_unique<It>(std::move(input), body(), ctx,
                                          cycle_length_, block_length_));
}

absl::StatusOr<NodePtr> InterleaveNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 1));
  return MakeWithBody(inputs[0], body(), cycle_length_, block_length_);
}

absl::StatusOr<NodePtr> InterleaveNode::WithBody(NodePtr body) const {
  return MakeWithBody(inputs()[0], std::move(body), cycle_length_,
                      block_length_);
}

// ---------------------------------------------------------------------------------------------
// ZipNode / ConcatenateNode

ZipNode::ZipNode(std::vector<NodePtr> inputs, ElementSpec spec)
    : DatasetNode(std::move(inputs), std::move(spec)) {}

absl::StatusOr<NodePtr> ZipNode::Make(std::vector<NodePtr> inputs) {
  if (inputs.empty())
    return absl::InvalidArgumentError("zip: at least one dataset is required");
  std::vector<ElementSpec> specs;
  for (const NodePtr& n : inputs) {
    if (n == nullptr) return absl::InvalidArgumentError("zip: null input");
    specs.push_back(n->element_spec());
  }
  ElementSpec spec = ElementSpec::Tuple(std::move(specs));
  return NodePtr(std::make_shared<ZipNode>(std::move(inputs), std::move(spec)));
}

absl::StatusOr<IteratorPtr> ZipNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  std::vector<IteratorPtr> its;
  for (const NodePtr& n : inputs()) {
    TPUSIM_ASSIGN_OR_RETURN(IteratorPtr it, n->MakeIterator(ctx));
    its.push_back(std::move(it));
  }
  class It final : public DatasetIterator {
   public:
    explicit It(std::vector<IteratorPtr> its) : its_(std::move(its)) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      if (done_) return std::optional<Element>();
      std::vector<Element> parts;
      for (IteratorPtr& it : its_) {
        TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
        if (!e.has_value()) {
          done_ = true;
          return std::optional<Element>();
        }
        parts.push_back(*std::move(e));
      }
      return std::optional<Element>(Element::Tuple(std::move(parts)));
    }

   private:
    std::vector<IteratorPtr> its_;
    bool done_ = false;
  };
  return IteratorPtr(std::make_unique<It>(std::move(its)));
}

absl::StatusOr<NodePtr> ZipNode::WithInputs(std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, this->inputs().size()));
  return Make(std::move(inputs));
}

ConcatenateNode::ConcatenateNode(NodePtr input, NodePtr to_concatenate,
                                 ElementSpec spec)
    : DatasetNode({std::move(input), std::move(to_concatenate)},
                  std::move(spec)) {}

absl::StatusOr<NodePtr> ConcatenateNode::Make(NodePtr input,
                                              NodePtr to_concatenate) {
  absl::StatusOr<ElementSpec> spec = MostSpecificCompatible(
      input->element_spec(), to_concatenate->element_spec());
  if (!spec.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("concatenate: ", spec.status().message()));
  }
  return NodePtr(std::make_shared<ConcatenateNode>(
      std::move(input), std::move(to_concatenate), *std::move(spec)));
}

absl::StatusOr<IteratorPtr> ConcatenateNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  class It final : public DatasetIterator {
   public:
    It(NodePtr second, IteratorPtr first, IteratorContext ctx)
        : second_(std::move(second)),
          current_(std::move(first)),
          ctx_(std::move(ctx)) {}
    absl::StatusOr<std::optional<Element>> GetNext() override {
      while (current_ != nullptr) {
        TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, current_->GetNext());
        if (e.has_value()) return e;
        current_.reset();
        if (second_ != nullptr) {
          TPUSIM_ASSIGN_OR_RETURN(current_, second_->MakeIterator(ctx_));
          second_.reset();
        }
      }
      return std::optional<Element>();
    }

   private:
    NodePtr second_;
    IteratorPtr current_;
    IteratorContext ctx_;
  };
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr first, inputs()[0]->MakeIterator(ctx));
  return IteratorPtr(std::make_unique<It>(inputs()[1], std::move(first), ctx));
}

absl::StatusOr<NodePtr> ConcatenateNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckInputCount(kOp, inputs, 2));
  return Make(inputs[0], inputs[1]);
}

}  // namespace tpusim::data
