#include "strategy/data/dataset.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/int_math.h"
#include "common/status_macros.h"
#include "strategy/data/dataset_nodes.h"

namespace tpusim::data {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;

// ---- specs ----

ElementSpec SpecOf(const Element& element) {
  return element.Map([](const Tensor& t) { return t.spec(); });
}

namespace {

void SpecString(const ElementSpec& spec, std::string* out) {
  switch (spec.kind()) {
    case ElementSpec::Kind::kNone:
      absl::StrAppend(out, "None");
      return;
    case ElementSpec::Kind::kLeaf:
      absl::StrAppend(out, spec.leaf().ToString());
      return;
    case ElementSpec::Kind::kTuple:
      absl::StrAppend(out, "(");
      for (size_t i = 0; i < spec.children().size(); ++i) {
        if (i > 0) absl::StrAppend(out, ", ");
        SpecString(spec.children()[i], out);
      }
      absl::StrAppend(out, spec.children().size() == 1 ? ",)" : ")");
      return;
    case ElementSpec::Kind::kDict:
      absl::StrAppend(out, "{");
      for (size_t i = 0; i < spec.children().size(); ++i) {
        if (i > 0) absl::StrAppend(out, ", ");
        absl::StrAppend(out, spec.keys()[i], ": ");
        SpecString(spec.children()[i], out);
      }
      absl::StrAppend(out, "}");
      return;
  }
}

}  // namespace

std::string ElementSpecToString(const ElementSpec& spec) {
  std::string out;
  SpecString(spec, &out);
  return out;
}

absl::StatusOr<int64_t> DatasetIterator::Skip(int64_t n) {
  int64_t skipped = 0;
  while (skipped < n) {
    TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, GetNext());
    if (!e.has_value()) break;
    ++skipped;
  }
  return skipped;
}

bool IsCompatible(const ElementSpec& a, const ElementSpec& b) {
  if (!a.SameStructure(b)) return false;
  auto fa = a.Flatten();
  auto fb = b.Flatten();
  for (size_t i = 0; i < fa.size(); ++i) {
    if (fa[i]->dtype != fb[i]->dtype ||
        !fa[i]->shape.IsCompatibleWith(fb[i]->shape)) {
      return false;
    }
    // The spec of a runtime element (SpecOf) cannot tell a box tensor from
    // a string tensor: sparse specs are compared when both sides have one.
    if (fa[i]->sparse.has_value() && fb[i]->sparse.has_value() &&
        (fa[i]->sparse->dtype != fb[i]->sparse->dtype ||
         !fa[i]->sparse->shape.IsCompatibleWith(fb[i]->sparse->shape))) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<ElementSpec> MostSpecificCompatible(const ElementSpec& a,
                                                   const ElementSpec& b) {
  auto fa = a.Flatten();
  auto fb = b.Flatten();
  bool ok = a.SameStructure(b);
  for (size_t i = 0; ok && i < fa.size(); ++i) {
    ok = fa[i]->dtype == fb[i]->dtype &&
         fa[i]->sparse.has_value() == fb[i]->sparse.has_value() &&
         (!fa[i]->sparse.has_value() ||
          fa[i]->sparse->dtype == fb[i]->sparse->dtype);
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "incompatible element specs: ", ElementSpecToString(a), " and ",
        ElementSpecToString(b), " (structure and dtypes must match)"));
  }
  std::vector<TensorSpec> leaves;
  for (size_t i = 0; i < fa.size(); ++i) {
    TensorSpec leaf =
        fa[i]->WithShape(fa[i]->shape.MostSpecificCompatible(fb[i]->shape));
    if (leaf.sparse.has_value()) {
      leaf.sparse->shape =
          fa[i]->sparse->shape.MostSpecificCompatible(fb[i]->sparse->shape);
    }
    leaves.push_back(std::move(leaf));
  }
  return a.Unflatten(std::move(leaves));
}

Options MergeOptions(const Options& a, const Options& b) {
  Options out = a;
  if (b.auto_shard_policy != AutoShardPolicy::kAuto) {
    out.auto_shard_policy = b.auto_shard_policy;
  }
  if (b.max_memory != kDefaultMaxMemory) out.max_memory = b.max_memory;
  out.make_stateless = a.make_stateless || b.make_stateless;
  return out;
}

std::optional<int64_t> EstimateElementBytes(const ElementSpec& spec) {
  int64_t total = kElementOverheadBytes;
  for (const TensorSpec* leaf : spec.Flatten()) {
    int64_t elements = 1;
    if (leaf->shape.rank_known()) {
      for (int64_t d : leaf->shape.dims()) {
        std::optional<int64_t> p =
            common::CheckedMul(elements, std::max<int64_t>(d, 0));
        if (!p.has_value()) return std::nullopt;
        elements = *p;
      }
    }
    const int64_t per_element = leaf->dtype == DType::kBytes
                                    ? static_cast<int64_t>(sizeof(std::string))
                                    : runtime::DTypeSize(leaf->dtype);
    std::optional<int64_t> bytes = common::CheckedMul(elements, per_element);
    if (!bytes.has_value()) return std::nullopt;
    std::optional<int64_t> leaf_bytes =
        common::CheckedAdd(*bytes, kTensorOverheadBytes);
    if (!leaf_bytes.has_value()) return std::nullopt;
    std::optional<int64_t> sum = common::CheckedAdd(total, *leaf_bytes);
    if (!sum.has_value()) return std::nullopt;
    total = *sum;
  }
  return total;
}

int64_t ElementBytes(const Element& element) {
  int64_t total = kElementOverheadBytes;
  element.ForEachLeaf([&](const Tensor& t) {
    total += kTensorOverheadBytes + t.byte_size();
    if (t.dtype() == DType::kBytes) {
      total += t.num_elements() * static_cast<int64_t>(sizeof(std::string));
    }
  });
  return total;
}

namespace {
std::string BudgetText(common::Bytes budget) {
  return absl::StrCat("the memory budget of ", budget.count(), " bytes (",
                      budget.ToString(),
                      "; Options.max_memory, tpusim --max-memory)");
}
}  // namespace

absl::Status CheckBufferEstimate(absl::string_view what, int64_t count,
                                 const ElementSpec& spec,
                                 common::Bytes budget) {
  const std::optional<int64_t> per_element = EstimateElementBytes(spec);
  std::optional<int64_t> estimate;
  if (per_element.has_value())
    estimate = common::CheckedMul(count, *per_element);
  if (estimate.has_value() && *estimate <= budget.count())
    return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      what, ": ", count, " elements of ", ElementSpecToString(spec),
      " need an estimated ",
      estimate.has_value() ? absl::StrCat(*estimate) : "more than 2^63-1",
      " bytes, more than ", BudgetText(budget)));
}

absl::Status MemoryBudgetExceeded(absl::string_view what, int64_t bytes,
                                  common::Bytes budget) {
  return absl::ResourceExhaustedError(
      absl::StrCat(what, ": the buffer reached ", bytes, " bytes, more than ",
                   BudgetText(budget)));
}

absl::string_view AutoShardPolicyName(AutoShardPolicy policy) {
  switch (policy) {
    case AutoShardPolicy::kAuto:
      return "AUTO";
    case AutoShardPolicy::kFile:
      return "FILE";
    case AutoShardPolicy::kData:
      return "DATA";
    case AutoShardPolicy::kOff:
      return "OFF";
  }
  return "?";
}

// ---- TensorRef / FunctionArg ----

TensorRef::TensorRef(Tensor constant) : constant_(std::move(constant)) {
  spec_ = constant_->spec();
}

TensorRef TensorRef::SparseBoxes(Tensor boxes,
                                 runtime::SparseBoxSpec box_spec) {
  TensorRef r(std::move(boxes));
  r.spec_.sparse = std::move(box_spec);
  return r;
}

TensorRef TensorRef::Argument(int arg_index, TensorSpec spec) {
  TPUSIM_CHECK(arg_index >= 0);
  TensorRef r;
  r.constant_.reset();
  r.arg_index_ = arg_index;
  r.spec_ = std::move(spec);
  return r;
}

const Tensor& TensorRef::constant() const {
  TPUSIM_CHECK(!is_argument());
  return *constant_;
}

absl::StatusOr<Tensor> TensorRef::Resolve(const IteratorContext& ctx) const {
  if (!is_argument()) return *constant_;
  if (ctx.argument == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("function argument component ", arg_index_,
                     " referenced outside a function instantiation (a traced "
                     "body cannot be iterated "
                     "on its own)"));
  }
  std::vector<const Tensor*> flat = ctx.argument->Flatten();
  if (arg_index_ >= static_cast<int>(flat.size())) {
    return absl::InternalError(
        absl::StrCat("function argument has ", flat.size(),
                     " components, body references component ", arg_index_));
  }
  return *flat[arg_index_];
}

std::string TensorRef::DebugString() const {
  if (is_argument())
    return absl::StrCat("arg[", arg_index_, "]:", spec_.ToString());
  return constant_->DebugString(4);
}

FunctionArg::FunctionArg(ElementSpec spec) : spec_(std::move(spec)) {
  int index = 0;
  nest_ = spec_.Map([&](const TensorSpec& leaf) {
    return TensorRef::Argument(index++, leaf);
  });
  nest_.ForEach(
      [&](const std::string&, const TensorRef& r) { flat_.push_back(r); });
}

const TensorRef& FunctionArg::leaf() const {
  TPUSIM_CHECK(spec_.is_leaf())
      << "FunctionArg::leaf() on structure " << spec_.StructureString();
  return flat_[0];
}

const TensorRef& FunctionArg::component(int i) const {
  TPUSIM_CHECK(i >= 0 && i < static_cast<int>(flat_.size()))
      << "component " << i << " of " << flat_.size();
  return flat_[i];
}

// ---- graph helpers ----

std::string DatasetNode::ShortString() const {
  std::vector<std::string> parts;
  for (const NodeAttr& a : attrs())
    parts.push_back(absl::StrCat(a.name, "=", a.value));
  if (host_cost_.count() != 0) {
    parts.push_back(absl::StrCat("host_cost=", host_cost_.ToString()));
  }
  return absl::StrCat(op(), "(", absl::StrJoin(parts, ", "), ")");
}

namespace {

void AppendDebug(const DatasetNode& node, int indent, std::string* out) {
  absl::StrAppend(out, std::string(indent * 2, ' '), node.ShortString(), " -> ",
                  ElementSpecToString(node.element_spec()), "\n");
  if (const auto* fn = dynamic_cast<const FunctionNode*>(&node)) {
    absl::StrAppend(out, std::string(indent * 2 + 2, ' '), "body:\n");
    AppendDebug(*fn->body(), indent + 2, out);
  }
  for (const NodePtr& in : node.inputs()) AppendDebug(*in, indent + 1, out);
}

void Topo(const NodePtr& node, std::set<const DatasetNode*>* seen,
          std::vector<NodePtr>* out) {
  if (!seen->insert(node.get()).second) return;
  for (const NodePtr& in : node->inputs()) Topo(in, seen, out);
  out->push_back(node);
}

void Costs(const NodePtr& root, std::vector<NodeCost>* out) {
  for (const NodePtr& n : TopologicalOrder(root)) {
    if (const auto* fn = dynamic_cast<const FunctionNode*>(n.get()))
      Costs(fn->body(), out);
    if (n->host_cost_per_element().count() != 0)
      out->push_back({n, n->host_cost_per_element()});
  }
}

}  // namespace

std::string DatasetNode::DebugString() const {
  std::string out;
  AppendDebug(*this, 0, &out);
  return out;
}

std::vector<NodePtr> TopologicalOrder(const NodePtr& root) {
  std::set<const DatasetNode*>
      seen;  // membership only; order comes from the walk
  std::vector<NodePtr> out;
  Topo(root, &seen, &out);
  return out;
}

namespace {

// Adds the node's declared cost for every element its iterator produces.
class MeteredIterator final : public DatasetIterator {
 public:
  MeteredIterator(IteratorPtr input, common::Picoseconds cost,
                  std::shared_ptr<HostWorkMeter> meter)
      : input_(std::move(input)), cost_(cost), meter_(std::move(meter)) {}
  absl::StatusOr<std::optional<Element>> GetNext() override {
    TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
    if (e.has_value()) Add(1);
    return e;
  }
  absl::StatusOr<int64_t> Skip(int64_t n) override {
    TPUSIM_ASSIGN_OR_RETURN(int64_t skipped, input_->Skip(n));
    Add(skipped);
    return skipped;
  }

 private:
  // Saturates at the largest Picoseconds (a pipeline that long is reported as
  // such by the host model, never wrapped).
  void Add(int64_t elements) {
    const int64_t max = std::numeric_limits<int64_t>::max();
    const std::optional<int64_t> add = common::CheckedMul(cost_.count(), elements);
    meter_->work = common::Picoseconds(
        add.has_value()
            ? common::CheckedAdd(meter_->work.count(), *add).value_or(max)
            : max);
  }
  IteratorPtr input_;
  common::Picoseconds cost_;
  std::shared_ptr<HostWorkMeter> meter_;
};

}  // namespace

absl::StatusOr<IteratorPtr> DatasetNode::MakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr it, DoMakeIterator(ctx));
  if (ctx.host_work == nullptr || host_cost_.count() == 0) return it;
  return IteratorPtr(new MeteredIterator(std::move(it), host_cost_, ctx.host_work));
}

absl::StatusOr<NodePtr> WithHostCost(NodePtr node, common::Picoseconds cost) {
  if (cost.count() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "with_host_cost: per_element=", cost.count(),
        "ps on ", node->op(), ": a host cost must be >= 0"));
  }
  if (node->host_cost_per_element() == cost) return node;
  TPUSIM_ASSIGN_OR_RETURN(NodePtr fresh, node->WithInputs(node->inputs()));
  // `fresh` was just made and is not shared yet, so setting its cost cannot
  // change a node another graph holds.
  if (fresh.use_count() != 1) {
    return absl::InternalError(absl::StrCat(
        "with_host_cost: ", fresh->op(), "::WithInputs returned a shared node"));
  }
  const_cast<DatasetNode&>(*fresh).host_cost_ = cost;
  return fresh;
}

absl::StatusOr<NodePtr> Rebuild(const DatasetNode& node,
                                std::vector<NodePtr> inputs) {
  TPUSIM_ASSIGN_OR_RETURN(NodePtr rebuilt, node.WithInputs(std::move(inputs)));
  return WithHostCost(std::move(rebuilt), node.host_cost_per_element());
}

absl::StatusOr<NodePtr> RebuildWithBody(const FunctionNode& node,
                                        NodePtr body) {
  TPUSIM_ASSIGN_OR_RETURN(NodePtr rebuilt, node.WithBody(std::move(body)));
  return WithHostCost(std::move(rebuilt), node.host_cost_per_element());
}

std::vector<NodeCost> CollectHostCosts(const NodePtr& root) {
  std::vector<NodeCost> out;
  Costs(root, &out);
  return out;
}

// ---- Dataset ----

Dataset::Dataset()
    : status_(absl::UnknownError("empty Dataset (use the builders)")) {}

Dataset::Dataset(NodePtr node, Options options)
    : node_(std::move(node)), options_(options) {
  TPUSIM_CHECK(node_ != nullptr);
}

Dataset Dataset::FromError(absl::Status status) {
  TPUSIM_CHECK(!status.ok());
  Dataset d;
  d.status_ = std::move(status);
  return d;
}

const NodePtr& Dataset::node() const {
  TPUSIM_CHECK(ok()) << status_.ToString();
  return node_;
}

const ElementSpec& Dataset::element_spec() const {
  return node()->element_spec();
}

namespace {

Dataset Wrap(absl::StatusOr<NodePtr> node, Options options = {}) {
  if (!node.ok()) return Dataset::FromError(node.status());
  if ((*node)->depth() > kMaxDatasetDepth) {
    return Dataset::FromError(absl::InvalidArgumentError(
        absl::StrCat((*node)->op(), ": the dataset would be ", (*node)->depth(),
                     " nodes deep, more than tpusim's limit of ",
                     kMaxDatasetDepth, " (kMaxDatasetDepth)")));
  }
  return Dataset(*std::move(node), options);
}

}  // namespace

Dataset Dataset::Then(
    const std::function<absl::StatusOr<NodePtr>(const NodePtr&)>& make) const {
  if (!ok()) return *this;
  return Wrap(make(node_), options_);
}

Dataset Dataset::Range(int64_t stop) { return Range(0, stop, 1); }
Dataset Dataset::Range(int64_t start, int64_t stop, int64_t step) {
  return Wrap(RangeNode::Make(start, stop, step));
}
Dataset Dataset::FromTensors(TensorRefNest components) {
  return Wrap(TensorNode::Make(std::move(components)));
}
TensorRefNest Constants(const Element& element) {
  return element.Map([](const Tensor& t) { return TensorRef(t); });
}
Dataset Dataset::FromTensors(const Element& components) {
  return FromTensors(Constants(components));
}
Dataset Dataset::FromTensorSlices(const Element& components) {
  return FromTensorSlices(Constants(components));
}
Dataset Dataset::FromTensorSlices(TensorRefNest components) {
  return Wrap(TensorSliceNode::Make(std::move(components)));
}

namespace {

// readers.py's _create_or_validate_filenames_dataset for a dataset argument.
absl::Status ValidateFilenamesDataset(const Dataset& filenames,
                                      absl::string_view reader) {
  TPUSIM_RETURN_IF_ERROR(filenames.status());
  const ElementSpec& spec = filenames.element_spec();
  if (!spec.is_leaf() || spec.leaf().dtype != DType::kBytes ||
      !spec.leaf().shape.rank_known() || spec.leaf().shape.rank() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        reader,
        ": `filenames` must be a dataset of string scalars, got element spec ",
        ElementSpecToString(spec)));
  }
  return absl::OkStatus();
}

Dataset FilenameList(const std::vector<std::string>& filenames) {
  // readers.py converts the names to a tensor and reshapes it to [-1].
  return Dataset::FromTensorSlices(
      TensorRefNest(Tensor::Vector<std::string>(filenames)));
}

Dataset ReadFiles(const Dataset& filenames, absl::string_view op,
                  std::optional<int64_t> num_parallel_reads,
                  const DatasetFn& reader) {
  if (!num_parallel_reads.has_value()) return filenames.FlatMap(reader);
  // The readers interleave with cycle_length = num_parallel_reads; the errors
  // name the reader's own argument, not interleave's.
  const int64_t n = *num_parallel_reads;
  if (n < 1 && n != kAutotune) {
    return Dataset::FromError(absl::InvalidArgumentError(absl::StrCat(
        op, ": num_parallel_reads=", n, ": must be >= 1 or AUTOTUNE (-1)")));
  }
  if (n > kMaxCycleLength) {
    return Dataset::FromError(absl::InvalidArgumentError(absl::StrCat(
        op, ": num_parallel_reads=", n, ": exceeds tpusim's limit of ",
        kMaxCycleLength, " files read in parallel")));
  }
  return filenames.Interleave(reader, n, 1);
}

}  // namespace

Dataset Dataset::TFRecord(std::vector<std::string> filenames,
                          TFRecordOptions options) {
  return TFRecord(FilenameList(filenames), std::move(options));
}
Dataset Dataset::TFRecord(const Dataset& filenames, TFRecordOptions options) {
  absl::Status s = ValidateFilenamesDataset(filenames, "TFRecordDataset");
  if (!s.ok()) return FromError(s);
  const std::string compression = options.compression_type;
  return ReadFiles(filenames, "TFRecordDataset", options.num_parallel_reads,
                   [compression](const FunctionArg& arg) {
                     return TFRecordReader(
                         arg.leaf(),
                         TFRecordOptions{compression, std::nullopt});
                   });
}
Dataset Dataset::TextLine(std::vector<std::string> filenames,
                          std::optional<int64_t> num_parallel_reads) {
  return TextLine(FilenameList(filenames), num_parallel_reads);
}
Dataset Dataset::TextLine(const Dataset& filenames,
                          std::optional<int64_t> num_parallel_reads) {
  absl::Status s = ValidateFilenamesDataset(filenames, "TextLineDataset");
  if (!s.ok()) return FromError(s);
  return ReadFiles(
      filenames, "TextLineDataset", num_parallel_reads,
      [](const FunctionArg& arg) { return TextLineReader(arg.leaf()); });
}
Dataset Dataset::FixedLengthRecord(std::vector<std::string> filenames,
                                   FixedLengthRecordOptions options) {
  return FixedLengthRecord(FilenameList(filenames), options);
}
Dataset Dataset::FixedLengthRecord(const Dataset& filenames,
                                   FixedLengthRecordOptions options) {
  absl::Status s =
      ValidateFilenamesDataset(filenames, "FixedLengthRecordDataset");
  if (!s.ok()) return FromError(s);
  return ReadFiles(filenames, "FixedLengthRecordDataset",
                   options.num_parallel_reads,
                   [options](const FunctionArg& arg) {
                     return FixedLengthRecordReader(arg.leaf(), options);
                   });
}
Dataset Dataset::TFRecordReader(TensorRef filenames, TFRecordOptions options) {
  return Wrap(
      TFRecordReaderNode::Make(std::move(filenames), options.compression_type));
}
Dataset Dataset::TextLineReader(TensorRef filenames) {
  return Wrap(TextLineReaderNode::Make(std::move(filenames)));
}
Dataset Dataset::FixedLengthRecordReader(TensorRef filenames,
                                         FixedLengthRecordOptions options) {
  return Wrap(FixedLengthRecordReaderNode::Make(
      std::move(filenames), options.record_bytes, options.header_bytes,
      options.footer_bytes));
}

Dataset Dataset::FromGenerator(GeneratorFactory make_generator,
                               ElementSpec spec) {
  return Wrap(GeneratorNode::Make(std::move(make_generator), std::move(spec)));
}
Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  return Then([&](const NodePtr& in) {
    return BatchNode::Make(in, batch_size, drop_remainder);
  });
}
Dataset Dataset::PaddedBatch(int64_t batch_size,
                             std::vector<runtime::Shape> padded_shapes,
                             std::vector<runtime::Tensor> padding_values,
                             bool drop_remainder) const {
  return Then([&](const NodePtr& in) {
    return PaddedBatchNode::Make(in, batch_size, std::move(padded_shapes),
                                 std::move(padding_values), drop_remainder);
  });
}
Dataset Dataset::Unbatch() const {
  return Then([](const NodePtr& in) { return UnbatchNode::Make(in); });
}
Dataset Dataset::Shard(int64_t num_shards, int64_t index) const {
  return Then([&](const NodePtr& in) {
    return ShardNode::Make(in, num_shards, index);
  });
}
Dataset Dataset::Repeat(int64_t count) const {
  return Then([&](const NodePtr& in) { return RepeatNode::Make(in, count); });
}
Dataset Dataset::Map(MapFunction fn) const {
  return Then(
      [&](const NodePtr& in) { return MapNode::Make(in, std::move(fn)); });
}
Dataset Dataset::Map(MapFn fn, common::Picoseconds cost) const {
  MapFunction f;
  f.fn = std::move(fn);
  f.cost = cost;
  return Map(std::move(f));
}
Dataset Dataset::Filter(PredicateFn predicate) const {
  return Then([&](const NodePtr& in) {
    return FilterNode::Make(in, std::move(predicate));
  });
}
Dataset Dataset::Shuffle(int64_t buffer_size, std::optional<uint64_t> seed,
                         bool reshuffle_each_iteration) const {
  return Then([&](const NodePtr& in) {
    return ShuffleNode::Make(in, buffer_size, seed.value_or(0),
                             reshuffle_each_iteration);
  });
}
Dataset Dataset::Take(int64_t count) const {
  return Then([&](const NodePtr& in) { return TakeNode::Make(in, count); });
}
Dataset Dataset::Skip(int64_t count) const {
  return Then([&](const NodePtr& in) { return SkipNode::Make(in, count); });
}
Dataset Dataset::Prefetch(int64_t buffer_size) const {
  return Then(
      [&](const NodePtr& in) { return PrefetchNode::Make(in, buffer_size); });
}
Dataset Dataset::Cache(const std::string& filename) const {
  if (!filename.empty()) {
    return FromError(absl::UnimplementedError(
        absl::StrCat("cache(filename=\"", filename,
                     "\"): only the in-memory cache (filename \"\") exists")));
  }
  return Then([&](const NodePtr& in) { return CacheNode::Make(in); });
}
Dataset Dataset::FlatMap(const DatasetFn& fn) const {
  return Then([&](const NodePtr& in) { return FlatMapNode::Make(in, fn); });
}
Dataset Dataset::Interleave(const DatasetFn& fn, int64_t cycle_length,
                            int64_t block_length) const {
  return Then([&](const NodePtr& in) {
    return InterleaveNode::Make(in, fn, cycle_length, block_length);
  });
}
WindowedDataset Dataset::Window(int64_t size, std::optional<int64_t> shift,
                                int64_t stride, bool drop_remainder) const {
  if (!ok()) return WindowedDataset(nullptr, options_, status_);
  Dataset out = Then([&](const NodePtr& in) {
    return WindowNode::Make(in, size, shift.value_or(size), stride,
                            drop_remainder);
  });
  if (!out.ok()) return WindowedDataset(nullptr, options_, out.status());
  return WindowedDataset(out.node(), options_, absl::OkStatus());
}
Dataset Dataset::MapAndBatch(MapFunction fn, int64_t batch_size,
                             bool drop_remainder,
                             std::optional<int64_t> num_parallel_calls) const {
  return Then([&](const NodePtr& in) {
    return MapAndBatchNode::Make(in, std::move(fn), batch_size, drop_remainder,
                                 num_parallel_calls.value_or(batch_size));
  });
}

// ---- windows ----

WindowArg::WindowArg(ElementSpec spec) : spec_(std::move(spec)) {
  int index = 0;
  nest_ = spec_.Map([&](const TensorSpec&) {
    return Wrap(WindowArgNode::Make(spec_, index++));
  });
  nest_.ForEach(
      [&](const std::string&, const Dataset& d) { flat_.push_back(d); });
  zipped_ = Wrap(WindowArgNode::Make(spec_, WindowArgNode::kAllComponents));
}

const Dataset& WindowArg::dataset() const {
  TPUSIM_CHECK(spec_.is_leaf())
      << "WindowArg::dataset() on structure " << spec_.StructureString();
  return flat_[0];
}

const Dataset& WindowArg::component(int i) const {
  TPUSIM_CHECK(i >= 0 && i < static_cast<int>(flat_.size()))
      << "component " << i << " of " << flat_.size();
  return flat_[i];
}

const NodePtr& WindowedDataset::node() const {
  TPUSIM_CHECK(ok()) << status_.ToString();
  return node_;
}

namespace {

// Traces a window function: calls it once with the symbolic WindowArg.
absl::StatusOr<NodePtr> TraceWindowFn(const NodePtr& window, const WindowFn& fn,
                                      absl::string_view op) {
  if (!fn) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": the function is empty"));
  }
  WindowArg arg(window->element_spec());
  Dataset body = fn(arg);
  if (!body.ok()) {
    return absl::Status(
        body.status().code(),
        absl::StrCat(op, " function: ", body.status().message()));
  }
  return body.node();
}

}  // namespace

Dataset WindowedDataset::FlatMap(const WindowFn& fn) const {
  if (!ok()) return Dataset::FromError(status_);
  absl::StatusOr<NodePtr> body = TraceWindowFn(node_, fn, "flat_map");
  if (!body.ok()) return Dataset::FromError(body.status());
  return Wrap(FlatMapNode::MakeWithBody(node_, *std::move(body)), options_);
}

Dataset WindowedDataset::Interleave(const WindowFn& fn, int64_t cycle_length,
                                    int64_t block_length) const {
  if (!ok()) return Dataset::FromError(status_);
  absl::StatusOr<NodePtr> body = TraceWindowFn(node_, fn, "interleave");
  if (!body.ok()) return Dataset::FromError(body.status());
  return Wrap(InterleaveNode::MakeWithBody(node_, *std::move(body),
                                           cycle_length, block_length),
              options_);
}

Dataset Dataset::Zip(std::vector<Dataset> datasets) {
  std::vector<NodePtr> nodes;
  Options options;
  for (size_t i = 0; i < datasets.size(); ++i) {
    if (!datasets[i].ok()) return datasets[i];
    options = MergeOptions(options, datasets[i].options());
    nodes.push_back(datasets[i].node());
  }
  return Wrap(ZipNode::Make(std::move(nodes)), options);
}
Dataset Dataset::Concatenate(const Dataset& other) const {
  if (!other.ok()) return other;
  Dataset out = Then([&](const NodePtr& in) {
    return ConcatenateNode::Make(in, other.node());
  });
  if (out.ok()) out.options_ = MergeOptions(options_, other.options());
  return out;
}
Dataset Dataset::WithOptions(Options options) const {
  Dataset d = *this;
  d.options_ = options;
  return d;
}

Dataset Dataset::WithHostCost(common::Picoseconds per_element) const {
  return Then([per_element](const NodePtr& node) {
    return data::WithHostCost(node, per_element);
  });
}

absl::StatusOr<IteratorPtr> Dataset::MakeIterator() const {
  return MakeIterator(nullptr);
}

absl::StatusOr<IteratorPtr> Dataset::MakeIterator(
    std::shared_ptr<HostWorkMeter> meter) const {
  TPUSIM_RETURN_IF_ERROR(status_);
  IteratorContext ctx;
  ctx.max_memory = options_.max_memory;
  ctx.host_work = std::move(meter);
  return node_->MakeIterator(ctx);
}

absl::StatusOr<std::vector<Element>> Dataset::Collect(
    int64_t max_elements) const {
  TPUSIM_ASSIGN_OR_RETURN(IteratorPtr it, MakeIterator());
  std::vector<Element> out;
  while (static_cast<int64_t>(out.size()) < max_elements) {
    TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
    if (!e.has_value()) break;
    out.push_back(*std::move(e));
  }
  return out;
}

}  // namespace tpusim::data
