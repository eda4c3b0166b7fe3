// strategy/data/dataset_nodes.h
//
// The concrete dataset node classes, one per TF dataset op, with typed
// accessors for the parameters that graph rewrites inspect:
//
// clang-format off
//   if (node->op() == BatchNode::kOp) {
//     const auto& batch = static_cast<const BatchNode&>(*node);
//     if (!batch.drop_remainder() && batch.batch_size() % n == 0) ...
//     TPUSIM_ASSIGN_OR_RETURN(
//         NodePtr smaller, BatchNode::Make(batch.inputs()[0], batch.batch_size() / n,
//                                          batch.drop_remainder()));
//   }
// clang-format on
//
// Every class has `static constexpr absl::string_view kOp` (TF's op name) and a
// `static absl::StatusOr<NodePtr> Make(...)` that validates its arguments the
// way the Dataset builders do (the builders call Make).

#ifndef TPUSIM_STRATEGY_DATA_DATASET_NODES_H_
#define TPUSIM_STRATEGY_DATA_DATASET_NODES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/data/dataset.h"

namespace tpusim::data {

// ---- sources ----

class RangeNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "RangeDataset";
  // step == 0 → InvalidArgument.
  static absl::StatusOr<NodePtr> Make(int64_t start, int64_t stop,
                                      int64_t step);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t start() const { return start_; }
  int64_t stop() const { return stop_; }
  int64_t step() const { return step_; }
  // Number of elements.
  int64_t size() const;

  RangeNode(int64_t start, int64_t stop, int64_t step);  // use Make

 private:
  int64_t start_, stop_, step_;
};

// from_generator with a C++ callable. `make_generator` is called once per
// iterator (TF calls the Python generator function anew for each iterator)
// and returns the function that yields the next element, nullopt at the end.
// Every element must match `spec` (dtype, and shape where known), else
// InvalidArgument at iteration naming the element index. A source without
// files: auto-shard FILE finds no reader, so AUTO falls back to DATA.
// (GeneratorFn and GeneratorFactory are declared in dataset.h.)
class GeneratorNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "GeneratorDataset";
  // InvalidArgument: a null factory.
  static absl::StatusOr<NodePtr> Make(GeneratorFactory make_generator,
                                      ElementSpec spec);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;

  GeneratorNode(GeneratorFactory make_generator,
                ElementSpec spec);  // use Make

 private:
  GeneratorFactory make_generator_;
};

// from_tensors: TF op "TensorDataset".
class TensorNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "TensorDataset";
  static absl::StatusOr<NodePtr> Make(TensorRefNest components);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  const TensorRefNest& components() const { return components_; }

  TensorNode(TensorRefNest components, ElementSpec spec);  // use Make

 private:
  TensorRefNest components_;
};

// from_tensor_slices: TF op "TensorSliceDataset".
class TensorSliceNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "TensorSliceDataset";
  // InvalidArgument: no components, a scalar component, or differing dimension
  // 0.
  static absl::StatusOr<NodePtr> Make(TensorRefNest components);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  const TensorRefNest& components() const { return components_; }

  TensorSliceNode(TensorRefNest components, ElementSpec spec);  // use Make

 private:
  TensorRefNest components_;
};

// The single-op file readers. `filenames` is a string scalar or vector
// (constant or function argument); the files are read in order. Element: a
// string scalar per record.
class ReaderNode : public DatasetNode {
 public:
  const TensorRef& filenames() const { return filenames_; }

 protected:
  explicit ReaderNode(TensorRef filenames);
  // The file names resolved in ctx. InvalidArgument when not a string
  // scalar/vector.
  absl::StatusOr<std::vector<std::string>> ResolveFilenames(
      const IteratorContext& ctx) const;

 private:
  TensorRef filenames_;
};

class TFRecordReaderNode final : public ReaderNode {
 public:
  static constexpr absl::string_view kOp = "TFRecordDataset";
  // InvalidArgument when filenames is not string[] or string[?]; Unimplemented
  // for a compression_type other than "".
  static absl::StatusOr<NodePtr> Make(TensorRef filenames,
                                      std::string compression_type = "");
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  const std::string& compression_type() const { return compression_type_; }

  TFRecordReaderNode(TensorRef filenames,
                     std::string compression_type);  // use Make

 private:
  std::string compression_type_;
};

class TextLineReaderNode final : public ReaderNode {
 public:
  static constexpr absl::string_view kOp = "TextLineDataset";
  static absl::StatusOr<NodePtr> Make(TensorRef filenames);
  absl::string_view op() const override { return kOp; }
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;

  explicit TextLineReaderNode(TensorRef filenames);  // use Make
};

class FixedLengthRecordReaderNode final : public ReaderNode {
 public:
  static constexpr absl::string_view kOp = "FixedLengthRecordDataset";
  // record_bytes > 0, header_bytes >= 0, footer_bytes >= 0, else
  // InvalidArgument.
  static absl::StatusOr<NodePtr> Make(TensorRef filenames, int64_t record_bytes,
                                      int64_t header_bytes,
                                      int64_t footer_bytes);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t record_bytes() const { return record_bytes_; }
  int64_t header_bytes() const { return header_bytes_; }
  int64_t footer_bytes() const { return footer_bytes_; }

  FixedLengthRecordReaderNode(TensorRef filenames, int64_t record_bytes,
                              int64_t header_bytes,
                              int64_t footer_bytes);  // use Make

 private:
  int64_t record_bytes_, header_bytes_, footer_bytes_;
};

// True for the reader ops auto-shard looks for (TFRecord, TextLine,
// FixedLengthRecord).
bool IsReaderOp(absl::string_view op);

// ---- unary transformations ----

// What batch does to a list of elements of one structure: stacks each component
// along a new dimension 0. Zero-copy when a component's parts are consecutive
// views of one storage (e.g. rows of from_tensor_slices), otherwise one copy.
// InvalidArgument (TF's "Cannot batch tensors with different shapes in
// component k ...") on differing shapes or structures, or on an empty list.
absl::StatusOr<Element> StackElements(std::vector<Element> elements);

// batch: TF op "BatchDatasetV2". Components are stacked along a new dimension
// 0.
class BatchNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "BatchDatasetV2";
  // batch_size <= 0 → InvalidArgument. `check_dropped_rows` (map_and_batch's
  // batch): a final partial batch that drop_remainder drops must still stack
  // (TF's MapAndBatchDataset copies every row into its batch as it arrives,
  // so rows of different shapes fail with InvalidArgument even there; plain
  // batch drops them unseen). A batch directly after a map checks too: TF's
  // default map_and_batch_fusion makes the pair one MapAndBatchDataset
  // (unless the map is an identity, which TF removes first: a MapFunction
  // named "identity").
  static absl::StatusOr<NodePtr> Make(NodePtr input, int64_t batch_size,
                                      bool drop_remainder,
                                      bool check_dropped_rows = false);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t batch_size() const { return batch_size_; }
  bool drop_remainder() const { return drop_remainder_; }

  BatchNode(NodePtr input, int64_t batch_size, bool drop_remainder,
            bool check_dropped_rows);  // use Make

 private:
  int64_t batch_size_;
  bool drop_remainder_;
  bool check_dropped_rows_;
};

// padded_batch(batch_size, padded_shapes, padding_values, drop_remainder):
// TF op "PaddedBatchDatasetV2". `padded_shapes` has one shape per component
// (flattened order); an unknown dimension (kUnknownDim) pads to the batch's
// maximum; an empty list means every dimension is unknown. `padding_values`
// has one scalar per component of the component's dtype; empty means 0 (""
// for strings). InvalidArgument at Make: batch_size <= 0, a count that does
// not match the components, a padded shape whose rank differs from the
// component's (or unknown rank), a known dimension smaller than the
// component's static one, a padding value that is not a scalar or not of the
// component's dtype. At iteration: an element larger than its padded shape.
class PaddedBatchNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "PaddedBatchDatasetV2";
  static absl::StatusOr<NodePtr> Make(NodePtr input, int64_t batch_size,
                                      std::vector<runtime::Shape> padded_shapes,
                                      std::vector<runtime::Tensor> padding_values,
                                      bool drop_remainder);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t batch_size() const { return batch_size_; }
  bool drop_remainder() const { return drop_remainder_; }
  const std::vector<runtime::Shape>& padded_shapes() const {
    return padded_shapes_;
  }
  const std::vector<runtime::Tensor>& padding_values() const {
    return padding_values_;
  }

  PaddedBatchNode(NodePtr input, int64_t batch_size,
                  std::vector<runtime::Shape> padded_shapes,
                  std::vector<runtime::Tensor> padding_values,
                  bool drop_remainder, ElementSpec spec);  // use Make

 private:
  int64_t batch_size_;
  std::vector<runtime::Shape> padded_shapes_;   // one per component
  std::vector<runtime::Tensor> padding_values_;  // one per component
  bool drop_remainder_;
};

// unbatch(): TF op "UnbatchDataset". Splits every element into its rows
// along dimension 0. InvalidArgument: a scalar component (at Make when the
// spec says so), or components of one element that differ in dimension 0
// (at iteration, naming both sizes).
class UnbatchNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "UnbatchDataset";
  static absl::StatusOr<NodePtr> Make(NodePtr input);
  absl::string_view op() const override { return kOp; }
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;

  UnbatchNode(NodePtr input, ElementSpec spec);  // use Make
};

// window(size, shift, stride, drop_remainder): TF op "WindowDataset", as TF
// 2.2's kernel: it buffers (size - 1) * stride + 1 input elements, emits
// buffer[0], buffer[stride], ... (fewer at the end of the input, never an
// empty window; none shorter than size with drop_remainder), then drops
// `shift` elements (reading and discarding input elements when shift exceeds
// the buffer; as in TF, errors of discarded elements and of elements skipped
// by the stride are ignored).
//
// Element representation (tpusim): TF's element is a nest of datasets, one per
// component. tpusim's element is a tuple of the window's input elements
// (shared, not copied); element_spec() is the spec of ONE input element (what
// each window dataset yields). Only a FunctionNode (flat_map, interleave; see
// WindowedDataset) consumes it, whose body reads the window through
// WindowArgNode. InvalidArgument at Make: size, shift or stride < 1 (naming
// the value), or a buffer size that overflows int64.
class WindowNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "WindowDataset";
  static absl::StatusOr<NodePtr> Make(NodePtr input, int64_t size,
                                      int64_t shift, int64_t stride,
                                      bool drop_remainder);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t size() const { return size_; }
  int64_t shift() const { return shift_; }
  int64_t stride() const { return stride_; }
  bool drop_remainder() const { return drop_remainder_; }

  WindowNode(NodePtr input, int64_t size, int64_t shift, int64_t stride,
             bool drop_remainder);  // use Make

 private:
  int64_t size_, shift_, stride_;
  bool drop_remainder_;
};

// The source of a window function body: the window dataset of component
// `component` (flattening order) of the window in the function argument, or,
// with component = kAllComponents, the window's whole elements. No TF op (in
// TF the body reads its argument, a dataset); op name "WindowArg". As a
// source, the rebatch rewrite and auto-shard stop here (as TF's stop at the
// function's _Arg). Iterating it outside a window function is
// FailedPrecondition.
class WindowArgNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "WindowArg";
  static constexpr int kAllComponents = -1;
  // `window_spec`: the spec of the windowed elements. InvalidArgument for a
  // component out of range.
  static absl::StatusOr<NodePtr> Make(ElementSpec window_spec, int component);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int component() const { return component_; }

  WindowArgNode(ElementSpec spec, int component);  // use Make

 private:
  int component_;
};

// shard(num_shards, index): keeps elements index, index + num_shards, ...
//
// With require_non_empty (TF's ShardDataset attr, set by auto-shard) it also
// reads ahead, after taking its first element, to position num_shards - 1 and,
// if the input ends before that, fails with InvalidArgument naming the element
// count M and num_shards W: "... not enough elements ... (# elems = M,
// # shards = W) ..." (TF 2.2's shard_dataset_op) or, with kTf24Wording, TF
// 2.4's "Could not apply FILE based sharding: the dataset only has M file(s)
// ...". A shard whose index is >= M sees a clean end instead. After the error
// the iterator is at its end. tpusim choice: M is always the number of
// elements the input had.
enum class ShardNonEmpty { kNotRequired, kTf22Wording, kTf24Wording };

class ShardNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "ShardDataset";
  // num_shards > 0 and 0 <= index < num_shards, else InvalidArgument.
  static absl::StatusOr<NodePtr> Make(
      NodePtr input, int64_t num_shards, int64_t index,
      ShardNonEmpty non_empty = ShardNonEmpty::kNotRequired);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t num_shards() const { return num_shards_; }
  int64_t index() const { return index_; }
  bool require_non_empty() const {
    return non_empty_ != ShardNonEmpty::kNotRequired;
  }
  ShardNonEmpty non_empty() const { return non_empty_; }

  ShardNode(NodePtr input, int64_t num_shards, int64_t index,
            ShardNonEmpty non_empty);  // use Make

 private:
  int64_t num_shards_, index_;
  ShardNonEmpty non_empty_;
};

class RepeatNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "RepeatDataset";
  // count -1 = forever; count < -1 → InvalidArgument.
  static absl::StatusOr<NodePtr> Make(NodePtr input, int64_t count);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t count() const { return count_; }

  RepeatNode(NodePtr input, int64_t count);  // use Make

 private:
  int64_t count_;
};

class MapNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "MapDataset";
  // Infers the output spec when fn.output_spec is absent (see MapFunction).
  static absl::StatusOr<NodePtr> Make(NodePtr input, MapFunction fn);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  // Re-infers the output spec unless it was declared.
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  const MapFunction& function() const { return fn_; }

  MapNode(NodePtr input, MapFunction fn, ElementSpec spec);  // use Make

 private:
  MapFunction fn_;  // output_spec as given by the user (may be absent)
};

// tf.data.experimental.map_and_batch: TF op "MapAndBatchDataset". The values
// of map(fn) followed by batch(batch_size, drop_remainder); the node runs
// both (it iterates an internal MapNode -> BatchNode chain). The 2.2 rebatch
// rewrite treats it as a batch op (its batch_size is changed like
// BatchDatasetV2's), 2.4's batch-size search finds it, and FILE auto-shard
// walks through it. InvalidArgument at Make: batch_size <= 0,
// num_parallel_calls 0 or < -1, and the map's own errors.
class MapAndBatchNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "MapAndBatchDataset";
  static absl::StatusOr<NodePtr> Make(NodePtr input, MapFunction fn,
                                      int64_t batch_size, bool drop_remainder,
                                      int64_t num_parallel_calls);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  // The map's declared cost for each of the batch_size rows of a batch.
  const MapFunction& function() const { return fn_; }
  int64_t batch_size() const { return batch_size_; }
  bool drop_remainder() const { return drop_remainder_; }
  int64_t num_parallel_calls() const { return num_parallel_calls_; }
  // The same node with another batch size (the rebatch rewrite).
  absl::StatusOr<NodePtr> WithBatchSize(int64_t batch_size) const;

  MapAndBatchNode(NodePtr input, MapFunction fn, int64_t batch_size,
                  bool drop_remainder, int64_t num_parallel_calls,
                  NodePtr chain);  // use Make

 private:
  MapFunction fn_;
  int64_t batch_size_;
  bool drop_remainder_;
  int64_t num_parallel_calls_;
  NodePtr chain_;  // BatchNode(MapNode(input)): what MakeIterator runs
};

class FilterNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "FilterDataset";
  static absl::StatusOr<NodePtr> Make(NodePtr input, PredicateFn predicate);
  absl::string_view op() const override { return kOp; }
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  const PredicateFn& predicate() const { return predicate_; }

  FilterNode(NodePtr input, PredicateFn predicate);  // use Make

 private:
  PredicateFn predicate_;
};

// shuffle: TF op "ShuffleDataset". tpusim choice: the order comes from tpusim's
// own PRNG (SplitMix64-seeded xoshiro256**), deterministic for a given seed and
// epoch, not TF-identical. The algorithm is TF's: fill a buffer of buffer_size
// elements, then repeatedly emit a uniformly chosen slot and refill it from the
// input. With reshuffle_each_iteration the seed is mixed with
// IteratorContext::epoch, which repeat() advances per pass; every top-level
// MakeIterator() is epoch 0, so two separate iterators give the same order
// (where TF's eager loops would reshuffle).
class ShuffleNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "ShuffleDataset";
  // buffer_size >= 1, else InvalidArgument.
  static absl::StatusOr<NodePtr> Make(NodePtr input, int64_t buffer_size,
                                      uint64_t seed,
                                      bool reshuffle_each_iteration);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t buffer_size() const { return buffer_size_; }
  uint64_t seed() const { return seed_; }
  bool reshuffle_each_iteration() const { return reshuffle_each_iteration_; }

  ShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed,
              bool reshuffle_each_iteration);  // use Make

 private:
  int64_t buffer_size_;
  uint64_t seed_;
  bool reshuffle_each_iteration_;
};

class TakeNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "TakeDataset";
  // count >= -1 (-1 = all), else InvalidArgument.
  static absl::StatusOr<NodePtr> Make(NodePtr input, int64_t count);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t count() const { return count_; }

  TakeNode(NodePtr input, int64_t count);  // use Make

 private:
  int64_t count_;
};

class SkipNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "SkipDataset";
  // count >= -1 (-1 = skip all), else InvalidArgument.
  static absl::StatusOr<NodePtr> Make(NodePtr input, int64_t count);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t count() const { return count_; }

  SkipNode(NodePtr input, int64_t count);  // use Make

 private:
  int64_t count_;
};

class PrefetchNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "PrefetchDataset";
  // buffer_size >= 0 or kAutotune, else InvalidArgument.
  static absl::StatusOr<NodePtr> Make(NodePtr input, int64_t buffer_size);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  int64_t buffer_size() const { return buffer_size_; }

  PrefetchNode(NodePtr input, int64_t buffer_size);  // use Make

 private:
  int64_t buffer_size_;
};

// cache(): in memory. The first iterator to reach the end of the input fills
// the cache; iterators made after that read from it. (tpusim: a pass that stops
// early fills nothing.)
class CacheNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "CacheDataset";
  static absl::StatusOr<NodePtr> Make(NodePtr input);
  absl::string_view op() const override { return kOp; }
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;

  struct State;
  CacheNode(NodePtr input, std::shared_ptr<State> state);  // use Make

 private:
  std::shared_ptr<State> state_;
};

// ---- function nodes ----

class FlatMapNode final : public FunctionNode {
 public:
  static constexpr absl::string_view kOp = "FlatMapDataset";
  // Traces fn with a FunctionArg of input's spec. The Dataset fn returns must
  // be ok().
  static absl::StatusOr<NodePtr> Make(NodePtr input, const DatasetFn& fn);
  static absl::StatusOr<NodePtr> MakeWithBody(NodePtr input, NodePtr body);
  absl::string_view op() const override { return kOp; }
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  absl::StatusOr<NodePtr> WithBody(NodePtr body) const override;

  FlatMapNode(NodePtr input, NodePtr body);  // use Make

 private:
};

class InterleaveNode final : public FunctionNode {
 public:
  static constexpr absl::string_view kOp = "InterleaveDataset";
  // cycle_length >= 1 or kAutotune, block_length >= 1 or kAutotune, else
  // InvalidArgument. The stored values are the resolved ones (AUTOTUNE
  // replaced).
  static absl::StatusOr<NodePtr> Make(NodePtr input, const DatasetFn& fn,
                                      int64_t cycle_length,
                                      int64_t block_length);
  static absl::StatusOr<NodePtr> MakeWithBody(NodePtr input, NodePtr body,
                                              int64_t cycle_length,
                                              int64_t block_length);
  absl::string_view op() const override { return kOp; }
  std::vector<NodeAttr> attrs() const override;
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;
  absl::StatusOr<NodePtr> WithBody(NodePtr body) const override;
  int64_t cycle_length() const { return cycle_length_; }
  int64_t block_length() const { return block_length_; }

  InterleaveNode(NodePtr input, NodePtr body, int64_t cycle_length,
                 int64_t block_length);  // use Make

 private:
  int64_t cycle_length_, block_length_;
};

// ---- n-ary ----

class ZipNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "ZipDataset";
  // At least one input, else InvalidArgument.
  static absl::StatusOr<NodePtr> Make(std::vector<NodePtr> inputs);
  absl::string_view op() const override { return kOp; }
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;

  ZipNode(std::vector<NodePtr> inputs, ElementSpec spec);  // use Make
};

class ConcatenateNode final : public DatasetNode {
 public:
  static constexpr absl::string_view kOp = "ConcatenateDataset";
  // Specs must have the same structure and dtypes, else InvalidArgument.
  static absl::StatusOr<NodePtr> Make(NodePtr input, NodePtr to_concatenate);
  absl::string_view op() const override { return kOp; }
  absl::StatusOr<IteratorPtr> DoMakeIterator(
      const IteratorContext& ctx) const override;
  absl::StatusOr<NodePtr> WithInputs(
      std::vector<NodePtr> inputs) const override;

  ConcatenateNode(NodePtr input, NodePtr to_concatenate,
                  ElementSpec spec);  // use Make
};

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_DATASET_NODES_H_
