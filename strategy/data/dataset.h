// strategy/data/dataset.h
//
// The tf.data dataset graph: an immutable DAG of DatasetNode objects (one class
// per TF dataset op, named with TF's op names), wrapped by the cheap value type
// Dataset with builder methods.
//
// clang-format off
//   Dataset ds = Dataset::Range(0, 10).Batch(4, /*drop_remainder=*/false)
//                    .Shard(2, 0);
//   if (!ds.ok()) return ds.status();   // construction errors are sticky
//   TPUSIM_ASSIGN_OR_RETURN(IteratorPtr it, ds.MakeIterator());
//   while (true) {
//     TPUSIM_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
//     if (!e) break;                    // end of sequence
//   }
// clang-format on
//
// Graph form matters: auto-shard and rebatch (strategy/data/auto_shard.h,
// rebatch.h) are graph rewrites, like TensorFlow's grappler passes. A rewrite
// walks `node()->inputs()`, inspects a node through `op()` and its concrete
// class (strategy/data/dataset_nodes.h, e.g. BatchNode), and rebuilds the nodes
// above a changed one with `DatasetNode::WithInputs`.
//
// Functions. map and filter take plain C++ callables on Elements. flat_map and
// interleave take a *traced* function `Dataset(const FunctionArg&)`: it is
// called once at construction with a symbolic argument, and the returned body
// graph is kept (`FunctionNode::body()`), so a rewrite can see e.g. "the body
// is TFRecordDataset(filenames = argument)". Where TF takes a tensor input
// (from_tensors, from_tensor_slices, the readers' filenames), the builders take
// a TensorRef, which is either a constant tensor or a component of the function
// argument; at iteration time the body is instantiated with the actual element
// (IteratorContext::argument). window(...) returns a WindowedDataset, consumed
// the same way by a traced function over each window (WindowArg: one dataset
// per component, WindowArgNode sources in the body).
//
// Errors. A builder never crashes on bad input: an invalid argument (e.g.
// Shard(0, 0)) makes the resulting Dataset carry the error (`ok()` false,
// `status()`), every builder applied to it keeps that error, and MakeIterator()
// returns it. This mirrors TF's eager mode, where the op raises when the
// dataset is created.
//
// Determinism: iteration is single-threaded and deterministic. Two iterators
// made from the same Dataset produce the same sequence (shuffle included; see
// ShuffleNode).

#ifndef TPUSIM_STRATEGY_DATA_DATASET_H_
#define TPUSIM_STRATEGY_DATA_DATASET_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/units.h"
#include "strategy/runtime/nest.h"
#include "strategy/runtime/tensor.h"

namespace tpusim::data {

using Element = runtime::Nest<runtime::Tensor>;
using ElementSpec = runtime::Nest<runtime::TensorSpec>;
// from_generator's callables (GeneratorNode): the factory makes one generator
// per iterator; the generator returns the next element or nullopt at the end.
using GeneratorFn = std::function<absl::StatusOr<std::optional<Element>>()>;
using GeneratorFactory = std::function<GeneratorFn()>;

// The spec of an element (the dtype and shape of every leaf).
ElementSpec SpecOf(const Element& element);
// "(int64[?], {a: string[]})"-style rendering of a spec.
std::string ElementSpecToString(const ElementSpec& spec);
// True when both have the same structure and every leaf has the same dtype and
// compatible shapes (and, when both leaves are sparse components, the same
// values dtype and compatible boxed shapes: the spec of an element, SpecOf,
// cannot tell a sparse box from a string).
bool IsCompatible(const ElementSpec& a, const ElementSpec& b);
// The most specific spec compatible with both (leafwise
// Shape::MostSpecificCompatible). InvalidArgument when structures or dtypes
// differ, naming both specs.
absl::StatusOr<ElementSpec> MostSpecificCompatible(const ElementSpec& a,
                                                   const ElementSpec& b);

// tf.data.experimental.AutoShardPolicy, with TF's integer values.
enum class AutoShardPolicy : int { kAuto = 0, kFile = 1, kData = 2, kOff = -1 };
absl::string_view AutoShardPolicyName(
    AutoShardPolicy policy);  // "AUTO", "FILE", ...

// tpusim choice: the default memory budget (Options::max_memory). A fixed
// number, never read from the machine, so that a pipeline passes or fails the
// same way everywhere.
inline constexpr common::Bytes kDefaultMaxMemory = common::Bytes::GiB(2);

// tf.data.Options (the fields tpusim uses).
struct Options {
  AutoShardPolicy auto_shard_policy = AutoShardPolicy::kAuto;
  // Set by experimental_distribute_dataset (spec (b) step 2); informational
  // only.
  bool make_stateless = false;
  // tpusim extension (no TF counterpart; `tpusim --max-memory`): the memory
  // budget of each buffer an iterator fills — a batch being assembled, a
  // shuffle buffer, a cache, one record read from a file. A buffer whose
  // estimate (before allocating: count x EstimateElementBytes) or whose
  // actual size exceeds it fails with ResourceExhausted naming the estimate.
  common::Bytes max_memory = kDefaultMaxMemory;
  friend bool operator==(const Options& a, const Options& b) {
    return a.auto_shard_policy == b.auto_shard_policy &&
           a.make_stateless == b.make_stateless && a.max_memory == b.max_memory;
  }
};

// The options of a dataset built from two inputs (zip, concatenate), as TF's
// options merge: a field set (non-default) in `b` overrides `a`.
Options MergeOptions(const Options& a, const Options& b);

// tf.data.experimental.AUTOTUNE.
inline constexpr int64_t kAutotune = -1;
// tpusim choice: AUTOTUNE for interleave's cycle_length means this fixed number
// (never the CPU count, so results do not depend on the machine). block_length
// AUTOTUNE means 1.
inline constexpr int64_t kAutotuneCycleLength = 4;
// tpusim choice: interleave keeps one slot per cycle element, so cycle_length
// is limited to this (InvalidArgument above it) instead of failing to allocate.
inline constexpr int64_t kMaxCycleLength = int64_t{1} << 20;
// tpusim choice: a dataset graph is at most this many nodes deep (the longest
// chain from a source to the output; a function body counts on its own).
// Iterators, graph rewrites (auto-shard, rebatch, distribution) and
// destruction walk the chain recursively, so the limit keeps them far inside
// the stack; a builder that would exceed it returns a Dataset carrying
// InvalidArgument instead. Scenario files have a tighter, file:LINE-reported
// limit on their stages (scenarios/scenario_loader.h).
inline constexpr int kMaxDatasetDepth = 2000;

// ---------------------------------------------------------------------------------------------
// Iteration.

// One pass over a dataset. Not thread-safe.
class DatasetIterator {
 public:
  virtual ~DatasetIterator() = default;
  // The next element; OK + nullopt at the end of the sequence (after which
  // every call returns nullopt again). Errors (DataLoss from a corrupt file,
  // InvalidArgument from a map function, ...) are returned as they occur.
  virtual absl::StatusOr<std::optional<Element>> GetNext() = 0;
  // Moves past up to `n` (>= 0) elements exactly as `n` calls of GetNext
  // would, and returns how many there were (< n only at the end of the
  // sequence). The default calls GetNext; an override may skip without making
  // the elements, but only where that cannot change any later element or hide
  // an error GetNext would have returned (tpusim's speed-up for shard, which
  // drops num_shards - 1 of every num_shards elements: TF reads and drops
  // them).
  virtual absl::StatusOr<int64_t> Skip(int64_t n);
};
using IteratorPtr = std::unique_ptr<DatasetIterator>;

// The host CPU work an iterator tree has done, by the declared per-element
// costs of its nodes (DatasetNode::host_cost_per_element): every element a
// costed node produces — returned or skipped — adds its cost. A distributed
// iterator reads it between per-replica batches to learn what each batch cost
// the host (the host timing model of a timing backend consumes it).
struct HostWorkMeter {
  common::Picoseconds work;
};

// What an iterator is made in.
struct IteratorContext {
  // The actual argument when instantiating the body of a flat_map/interleave
  // function; null at top level. Only the innermost function's argument is
  // visible (no captures of outer function arguments). Shared so that iterators
  // made later (e.g. by repeat inside a body) can still resolve it.
  std::shared_ptr<const Element> argument;
  // Distinguishes the passes that repeat() makes over its input (0 for the
  // first pass of the outermost repeat; nested repeats mix their counts in).
  // Shuffle with reshuffle_each_iteration mixes it into its seed.
  uint64_t epoch = 0;
  // The memory budget of each buffer (Options::max_memory).
  common::Bytes max_memory = kDefaultMaxMemory;
  // Where costed nodes add their work; null: not metered.
  std::shared_ptr<HostWorkMeter> host_work;
};

// ---- memory estimates (Options::max_memory) ----

// tpusim choice: bookkeeping bytes counted for every tensor of a buffered
// element (its shared storage block, shape and nest node) on top of its data.
inline constexpr int64_t kTensorOverheadBytes = 128;
// tpusim choice: bytes counted for every buffered element itself (the Element
// object a buffer holds: sizeof(Element) is 120 with GCC 12 / libstdc++ on
// x86-64; a fixed figure keeps estimates the same on every platform). Without
// it a shuffle buffer of int64 scalars was estimated at 136 bytes an element
// against about 216 measured (issue 22); with it the estimate is 264.
inline constexpr int64_t kElementOverheadBytes = 128;

// Estimated bytes of one element of `spec`: kElementOverheadBytes, plus per
// leaf kTensorOverheadBytes and dtype size x elements (sizeof(std::string) per
// string element; unknown dimensions count as 0, so the estimate is a lower
// bound). nullopt when it exceeds 2^63-1.
std::optional<int64_t> EstimateElementBytes(const ElementSpec& spec);
// The bytes `element` occupies by the same rule (string payloads included).
int64_t ElementBytes(const Element& element);
// OK when `count` elements of `spec` fit in `budget` by the estimate, else
// ResourceExhausted: "<what>: <count> elements of <spec> need an estimated N
// bytes, more than the memory budget of M bytes (...)".
absl::Status CheckBufferEstimate(absl::string_view what, int64_t count,
                                 const ElementSpec& spec, common::Bytes budget);
// ResourceExhausted for a buffer that grew to `bytes` (> budget), naming
// `what` and both figures.
absl::Status MemoryBudgetExceeded(absl::string_view what, int64_t bytes,
                                  common::Bytes budget);

// ---------------------------------------------------------------------------------------------
// Tensor-valued node inputs.

// A tensor input of a node: a constant tensor, or leaf `arg_index` (flattening
// order) of the enclosing function's argument.
class TensorRef {
 public:
  // The constant abstract float32 scalar (needed by Nest; not useful on its
  // own).
  TensorRef() : TensorRef(runtime::Tensor()) {}
  // Implicit: constants are the common case.
  TensorRef(runtime::Tensor constant);  // NOLINT
  static TensorRef Argument(int arg_index, runtime::TensorSpec spec);
  // A constant tensor of boxed SparseTensors (strategy/data/sparse.h) whose
  // spec says so: `boxes`' spec with `sparse` set to `box_spec`.
  static TensorRef SparseBoxes(runtime::Tensor boxes,
                               runtime::SparseBoxSpec box_spec);

  bool is_argument() const { return arg_index_ >= 0; }
  // Precondition: !is_argument().
  const runtime::Tensor& constant() const;
  // -1 for a constant.
  int arg_index() const { return arg_index_; }
  const runtime::TensorSpec& spec() const { return spec_; }
  // The value: the constant, or the argument's leaf from ctx.
  // FailedPrecondition when an argument is referenced outside a function
  // instantiation; Internal on a leaf-count mismatch.
  absl::StatusOr<runtime::Tensor> Resolve(const IteratorContext& ctx) const;
  // "int64[3]{0, 1, 2}" or "arg[0]:string[]".
  std::string DebugString() const;

 private:
  std::optional<runtime::Tensor> constant_;
  int arg_index_ = -1;
  runtime::TensorSpec spec_;
};
using TensorRefNest = runtime::Nest<TensorRef>;
// Constant references to every tensor of `element` (same structure).
TensorRefNest Constants(const Element& element);

// The symbolic argument of a traced function (flat_map, interleave).
class FunctionArg {
 public:
  explicit FunctionArg(ElementSpec spec);
  const ElementSpec& spec() const { return spec_; }
  // The whole argument as a nest of references (same structure as spec()).
  const TensorRefNest& nest() const { return nest_; }
  // The argument when it is a single tensor. Precondition: spec().is_leaf().
  const TensorRef& leaf() const;
  // Leaf `i` in flattening order. Precondition: 0 <= i < number of leaves.
  const TensorRef& component(int i) const;

 private:
  ElementSpec spec_;
  TensorRefNest nest_;
  std::vector<TensorRef> flat_;
};

// ---------------------------------------------------------------------------------------------
// The graph.

class Dataset;
class DatasetNode;
using NodePtr = std::shared_ptr<const DatasetNode>;

// A named parameter of a node, rendered as text (for debugging, DebugString and
// tests).
struct NodeAttr {
  std::string name;
  std::string value;
};

// One dataset op. Immutable after construction; shared between graphs.
// Subclasses (also in other files, e.g. rebatch) implement the virtual methods
// (DoMakeIterator, not MakeIterator, which adds the host-cost metering);
// they must compute element_spec at construction. Graph rewrites rebuild a
// node with Rebuild / RebuildWithBody, which keep its declared host cost.
class DatasetNode {
 public:
  virtual ~DatasetNode() = default;
  DatasetNode(const DatasetNode&) = delete;
  DatasetNode& operator=(const DatasetNode&) = delete;

  // TF's op name: "RangeDataset", "BatchDatasetV2", "TFRecordDataset", ...
  virtual absl::string_view op() const = 0;
  const std::vector<NodePtr>& inputs() const { return inputs_; }
  const ElementSpec& element_spec() const { return element_spec_; }
  // The op's parameters (batch_size, drop_remainder, ...) as text, in a fixed
  // order.
  virtual std::vector<NodeAttr> attrs() const { return {}; }

  // A new iterator over this node's elements (DoMakeIterator's; when the node
  // declares a host cost and ctx.host_work is set, every element it produces
  // adds the cost to the meter). Errors: those of resolving tensor inputs
  // (e.g. FailedPrecondition for an argument reference outside a function),
  // opening files (NotFound), and node-specific ones.
  absl::StatusOr<IteratorPtr> MakeIterator(const IteratorContext& ctx) const;

  // A copy of this node with `inputs` instead of inputs() (same count; element
  // specs may differ: the copy recomputes its own spec from them). Errors as
  // the node's builder, e.g. InvalidArgument when the new inputs' specs are
  // unacceptable.
  virtual absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const = 0;

  // Declared host CPU cost of producing one output element in this node itself
  // (not its inputs): zero unless declared (Dataset::WithHostCost, a map
  // function's cost). Used by the host timing model.
  common::Picoseconds host_cost_per_element() const { return host_cost_; }

  // A one-line description: op(attr=value, ...).
  std::string ShortString() const;
  // The graph above and including this node, one node per line, inputs
  // indented, function bodies shown under their node.
  std::string DebugString() const;

 protected:
  // The node's own iterator (MakeIterator adds the host-cost metering).
  virtual absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const = 0;
  // For constructors: the declared per-element host cost (>= 0).
  void set_host_cost_per_element(common::Picoseconds cost) {
    host_cost_ = cost;
  }

  DatasetNode(std::vector<NodePtr> inputs, ElementSpec element_spec)
      : inputs_(std::move(inputs)), element_spec_(std::move(element_spec)) {
    for (const NodePtr& in : inputs_) {
      if (in != nullptr) depth_ = std::max(depth_, in->depth_ + 1);
    }
  }

 public:
  // Nodes on the longest chain from a source to this node, this one included
  // (a source has depth 1). See kMaxDatasetDepth.
  int depth() const { return depth_; }

 private:
  friend absl::StatusOr<NodePtr> WithHostCost(NodePtr fresh,
                                              common::Picoseconds cost);
  int depth_ = 1;
  common::Picoseconds host_cost_;
  std::vector<NodePtr> inputs_;
  ElementSpec element_spec_;
};

// A node that owns a traced function body (FlatMapDataset, InterleaveDataset).
// Rewrites descend into body() and rebuild the node around a changed body with
// WithBody().
class FunctionNode : public DatasetNode {
 public:
  // The function body graph, traced with a symbolic argument whose spec is
  // argument_spec().
  const NodePtr& body() const { return body_; }
  const ElementSpec& argument_spec() const {
    return inputs().front()->element_spec();
  }
  // A copy of this node with another body (its spec becomes the new body's
  // spec).
  virtual absl::StatusOr<NodePtr> WithBody(NodePtr body) const = 0;

 protected:
  FunctionNode(std::vector<NodePtr> inputs, NodePtr body,
               ElementSpec element_spec)
      : DatasetNode(std::move(inputs), std::move(element_spec)),
        body_(std::move(body)) {}

 private:
  NodePtr body_;
};

// `node` rebuilt over `inputs` (node.WithInputs) keeping its declared host
// cost; graph rewrites (auto-shard, rebatch) use it so that a cost survives
// them.
absl::StatusOr<NodePtr> Rebuild(const DatasetNode& node,
                                std::vector<NodePtr> inputs);
// The same for a function node's body (node.WithBody).
absl::StatusOr<NodePtr> RebuildWithBody(const FunctionNode& node, NodePtr body);
// A copy of `node` whose own elements each cost `cost` of host CPU time.
// InvalidArgument for a negative cost, naming it.
absl::StatusOr<NodePtr> WithHostCost(NodePtr node, common::Picoseconds cost);

// Every node of the graph rooted at `root` (inputs before users; each node
// once), not descending into function bodies.
std::vector<NodePtr> TopologicalOrder(const NodePtr& root);

// A node's declared per-element host CPU cost together with the node.
struct NodeCost {
  NodePtr node;
  common::Picoseconds per_element;
};
// The nodes with a non-zero declared cost, from the source towards the root,
// including nodes inside function bodies (after their FunctionNode's inputs).
std::vector<NodeCost> CollectHostCosts(const NodePtr& root);

// ---------------------------------------------------------------------------------------------
// Functions.

using MapFn = std::function<absl::StatusOr<Element>(const Element&)>;
using PredicateFn = std::function<absl::StatusOr<bool>(const Element&)>;
// A traced dataset-valued function (flat_map, interleave).
using DatasetFn = std::function<Dataset(const FunctionArg&)>;
class WindowArg;
// A traced function over one window (window(...).flat_map(fn)).
using WindowFn = std::function<Dataset(const WindowArg&)>;
class WindowedDataset;

// A map function with its metadata.
struct MapFunction {
  MapFn fn;
  // The output spec. When absent, Map infers it by calling fn on probe elements
  // (zeros; unknown dims set to 1 and then 2, dims that differ become unknown);
  // if a probe fails, the Dataset carries InvalidArgument asking for an
  // explicit output_spec.
  std::optional<ElementSpec> output_spec;
  // Alternatively a shape function: the output spec from the input spec (used
  // when output_spec is absent; e.g. parse_example keeps the input's batch
  // dimension).
  std::function<absl::StatusOr<ElementSpec>(const ElementSpec& input)> spec_fn;
  // Declared host CPU cost per element (for the host timing model).
  common::Picoseconds cost = common::Picoseconds(0);
  // Shown in DebugString; optional.
  std::string name;
  // map(..., num_parallel_calls=k): >= 1, or -1 (tf.data.experimental.
  // AUTOTUNE). TF 2.2 keeps the input order unless
  // options().experimental_deterministic is false, when elements may come out
  // in the order their calls finish. tpusim choice: the output order is the
  // input order in both cases, so a run repeats exactly (the functions are
  // deterministic and tpusim evaluates them in order); the setting is kept on
  // the node for the host timing model, which can share the map's work over k
  // calls. 0 or < -1 is InvalidArgument.
  int64_t num_parallel_calls = 1;
  bool deterministic = true;
};

// ---------------------------------------------------------------------------------------------
// The value type.

// Options of the file readers.
struct TFRecordOptions {
  // "" (none), "ZLIB" or "GZIP" (strategy/data/zlib_stream.h); anything else
  // is InvalidArgument naming the value.
  std::string compression_type;
  // Absent (TF's None): files are read one after the other (flat_map). A value
  // (> 0, or kAutotune → kAutotuneCycleLength) reads them through an
  // InterleaveDataset with this cycle_length and block_length 1. tpusim choice:
  // TF 2.2 uses ParallelInterleaveDatasetV2 (sloppy=false) here; its order is
  // taken to be InterleaveDataset's (they can differ when a file ends early).
  std::optional<int64_t> num_parallel_reads;
};
struct FixedLengthRecordOptions {
  int64_t record_bytes = 0;
  int64_t header_bytes = 0;
  int64_t footer_bytes = 0;
  std::optional<int64_t> num_parallel_reads;
};

class Dataset {
 public:
  // An invalid dataset (status Unknown "empty Dataset"); use the builders.
  Dataset();
  // Wraps a node (not null).
  explicit Dataset(NodePtr node, Options options = {});
  // A dataset carrying a construction error (status must not be OK).
  static Dataset FromError(absl::Status status);

  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }
  // Precondition for the accessors below: ok().
  const NodePtr& node() const;
  const ElementSpec& element_spec() const;
  const Options& options() const { return options_; }

  // ---- sources ----
  // tf.data.Dataset.range(start, stop, step), int64 scalars. step == 0 →
  // InvalidArgument.
  static Dataset Range(int64_t stop);
  static Dataset Range(int64_t start, int64_t stop, int64_t step = 1);
  // from_generator with a C++ callable (GeneratorNode): `make_generator` is
  // called once per iterator; its result yields elements matching `spec`
  // until it returns nullopt. Auto-shard cannot FILE-shard it (AUTO → DATA).
  static Dataset FromGenerator(GeneratorFactory make_generator,
                               ElementSpec spec);
  // One element (TensorDataset).
  static Dataset FromTensors(TensorRefNest components);
  static Dataset FromTensors(const Element& components);  // constants
  // Slices along dimension 0 (TensorSliceDataset). Every component needs rank
  // >= 1 and the same dimension 0 (known); else InvalidArgument.
  static Dataset FromTensorSlices(TensorRefNest components);
  static Dataset FromTensorSlices(const Element& components);  // constants
  // tf.data.Dataset.list_files: the files matching any pattern (all matches
  // sorted bytewise together, as TF's MatchingFiles), then, if shuffle,
  // shuffled with tpusim's PRNG and `seed` (buffer = all files, reshuffled each
  // iteration as in TF). No match → InvalidArgument "No files matched pattern:
  // <patterns>".
  static Dataset ListFiles(std::vector<std::string> patterns,
                           bool shuffle = true,
                           std::optional<uint64_t> seed = std::nullopt);
  // tf.data.TFRecordDataset(filenames):
  // from_tensor_slices(filenames).flat_map(TFRecordReader) (or interleave when
  // num_parallel_reads is set), as TF 2.2's readers.py builds it.
  static Dataset TFRecord(std::vector<std::string> filenames,
                          TFRecordOptions options = {});
  // The same over a dataset of string scalars (e.g. ListFiles); other specs →
  // InvalidArgument.
  static Dataset TFRecord(const Dataset& filenames,
                          TFRecordOptions options = {});
  static Dataset TextLine(
      std::vector<std::string> filenames,
      std::optional<int64_t> num_parallel_reads = std::nullopt);
  static Dataset TextLine(
      const Dataset& filenames,
      std::optional<int64_t> num_parallel_reads = std::nullopt);
  static Dataset FixedLengthRecord(std::vector<std::string> filenames,
                                   FixedLengthRecordOptions options);
  static Dataset FixedLengthRecord(const Dataset& filenames,
                                   FixedLengthRecordOptions options);
  // The reader ops themselves (TF's "TFRecordDataset", "TextLineDataset",
  // "FixedLengthRecordDataset"): read the files of a string scalar or vector,
  // in order. Used inside traced functions with an argument reference.
  static Dataset TFRecordReader(TensorRef filenames,
                                TFRecordOptions options = {});
  static Dataset TextLineReader(TensorRef filenames);
  static Dataset FixedLengthRecordReader(TensorRef filenames,
                                         FixedLengthRecordOptions options);

  // ---- transformations ----
  // batch_size <= 0 → InvalidArgument.
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;
  // unbatch (UnbatchNode): every element split into its dimension-0 rows.
  Dataset Unbatch() const;
  // padded_batch (PaddedBatchNode): one padded shape and one scalar padding
  // value per component (flattened order); kUnknownDim pads to the batch
  // maximum; empty lists mean "all unknown" and zeros.
  Dataset PaddedBatch(int64_t batch_size,
                      std::vector<runtime::Shape> padded_shapes = {},
                      std::vector<runtime::Tensor> padding_values = {},
                      bool drop_remainder = false) const;
  // num_shards > 0 and 0 <= index < num_shards, else InvalidArgument.
  Dataset Shard(int64_t num_shards, int64_t index) const;
  // count -1 = forever; count < -1 → InvalidArgument.
  Dataset Repeat(int64_t count = -1) const;
  Dataset Map(MapFunction fn) const;
  Dataset Map(MapFn fn,
              common::Picoseconds cost = common::Picoseconds(0)) const;
  Dataset Filter(PredicateFn predicate) const;
  // buffer_size >= 1, else InvalidArgument. seed absent = seed 0 (tpusim
  // choice: deterministic).
  Dataset Shuffle(int64_t buffer_size,
                  std::optional<uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;
  // count -1 = all.
  Dataset Take(int64_t count) const;
  // count -1 = skip all.
  Dataset Skip(int64_t count) const;
  // buffer_size >= 0 or kAutotune. Elements pass through unchanged (no
  // threads).
  Dataset Prefetch(int64_t buffer_size) const;
  // In-memory cache (filename "" only; others → Unimplemented).
  Dataset Cache(const std::string& filename = "") const;
  Dataset FlatMap(const DatasetFn& fn) const;
  // cycle_length >= 1 or kAutotune (→ kAutotuneCycleLength); block_length >= 1
  // or kAutotune (→ 1).
  Dataset Interleave(const DatasetFn& fn, int64_t cycle_length = kAutotune,
                     int64_t block_length = 1) const;
  // Ends at the shortest input; the element is the tuple of the inputs'
  // elements. Options are merged in input order (MergeOptions).
  static Dataset Zip(std::vector<Dataset> datasets);
  // Element specs must be compatible (same structure and dtypes); the result's
  // spec is the most specific compatible one. Else InvalidArgument.
  Dataset Concatenate(const Dataset& other) const;
  // Attaches options (replacing those carried so far).
  Dataset WithOptions(Options options) const;
  // tpusim extension (no TF counterpart): declares that each element of the
  // last stage costs `per_element` of host CPU time to produce (beyond its
  // inputs' costs), for the host timing model of a timing backend; replaces a
  // cost declared before (a map function's included). It survives the
  // auto-shard and rebatch rewrites (a batch that the 2.2 rewrite's Case 1
  // makes N times smaller costs 1/N of the declared cost, rounded down to a
  // picosecond), and is metered per element produced.
  // A negative cost is InvalidArgument naming it.
  Dataset WithHostCost(common::Picoseconds per_element) const;
  // tf.data.Dataset.window(size, shift, stride, drop_remainder) (WindowNode):
  // a dataset of windows, consumed by WindowedDataset::FlatMap/Interleave.
  // Window k holds the input elements k*shift + i*stride, i = 0..size-1,
  // that exist; with drop_remainder a window with fewer than size elements
  // is not emitted. shift absent = size. size, shift and stride must be >= 1,
  // else InvalidArgument naming the value.
  WindowedDataset Window(int64_t size,
                         std::optional<int64_t> shift = std::nullopt,
                         int64_t stride = 1, bool drop_remainder = false) const;
  // tf.data.experimental.map_and_batch(map_func, batch_size,
  // num_parallel_calls, drop_remainder) (MapAndBatchNode, TF op
  // "MapAndBatchDataset"): the values of Map(fn).Batch(batch_size,
  // drop_remainder) in one node. num_parallel_calls absent = batch_size (TF's
  // default); otherwise >= 1 or kAutotune. batch_size <= 0 → InvalidArgument.
  Dataset MapAndBatch(
      MapFunction fn, int64_t batch_size, bool drop_remainder = false,
      std::optional<int64_t> num_parallel_calls = std::nullopt) const;

  // ---- iteration ----
  absl::StatusOr<IteratorPtr> MakeIterator() const;
  // The same, adding the declared host work of every element the pipeline's
  // nodes produce to `meter` (may be null: not metered).
  absl::StatusOr<IteratorPtr> MakeIterator(
      std::shared_ptr<HostWorkMeter> meter) const;
  // Every element (for tests and small datasets). Errors from iteration
  // propagate.
  absl::StatusOr<std::vector<Element>> Collect(
      int64_t max_elements = int64_t{1} << 40) const;

 private:
  // Applies `make` to this dataset's node unless it carries an error.
  Dataset Then(
      const std::function<absl::StatusOr<NodePtr>(const NodePtr&)>& make) const;

  NodePtr node_;
  Options options_;
  absl::Status status_;
};

// The symbolic argument of a window function: one dataset per component of
// the windowed elements (TF passes a nest of datasets with the structure of
// the input's elements). Each dataset yields that component of the window's
// elements; Zip() yields the whole elements (tf.data.Dataset.zip(window)).
class WindowArg {
 public:
  // `spec`: the spec of the windowed dataset's elements.
  explicit WindowArg(ElementSpec spec);
  const ElementSpec& spec() const { return spec_; }
  // The window of a single-tensor element. Precondition: spec().is_leaf().
  const Dataset& dataset() const;
  // The dataset of leaf `i` (flattening order). Precondition: 0 <= i < leaves.
  const Dataset& component(int i) const;
  // The datasets with the elements' structure.
  const runtime::Nest<Dataset>& nest() const { return nest_; }
  // The window's whole elements, with their structure.
  const Dataset& Zip() const { return zipped_; }

 private:
  ElementSpec spec_;
  runtime::Nest<Dataset> nest_;
  std::vector<Dataset> flat_;
  Dataset zipped_;
};

// The result of Dataset::Window: a dataset whose elements are windows (TF: a
// nest of datasets per element). tpusim consumes it only through a function
// over each window (flat_map, interleave), the way it is used in practice:
// ds.window(n).flat_map(lambda w: w.batch(n)). The traced body is kept like
// any flat_map body (FunctionNode::body()); its source is a WindowArgNode.
class WindowedDataset {
 public:
  WindowedDataset(NodePtr node, Options options, absl::Status status)
      : node_(std::move(node)),
        options_(std::move(options)),
        status_(std::move(status)) {}
  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }
  // The WindowNode. Precondition: ok().
  const NodePtr& node() const;
  // window(...).flat_map(fn).
  Dataset FlatMap(const WindowFn& fn) const;
  // window(...).interleave(fn, cycle_length, block_length).
  Dataset Interleave(const WindowFn& fn, int64_t cycle_length = kAutotune,
                     int64_t block_length = 1) const;

 private:
  NodePtr node_;
  Options options_;
  absl::Status status_;
};

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_DATASET_H_
