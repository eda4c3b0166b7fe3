// strategy/data/example_parser.h
//
// tf.io.parse_single_example / tf.io.parse_example for FixedLenFeature,
// VarLenFeature and FixedLenSequenceFeature, producing a dict element keyed by
// feature name:
//
// clang-format off
//   FeatureSpec spec = {{"image", FixedLenFeature{DType::kF32, Shape({28, 28})}},
//                       {"label", FixedLenFeature{DType::kI64, Shape()}}};
//   Dataset ds = Dataset::TFRecord(files).Map(ParseSingleExampleFn(spec));
//   // element: {image: float32[28,28], label: int64[]}
// clang-format on
//
// Feature kinds map to dtypes as in TF: bytes_list → string, float_list →
// float32, int64_list → int64. Errors are InvalidArgument with TF's key phrases
// ("is required but could not be found", "Data types don't match", "Number of
// ... values != expected", "Could not parse example input").
//
// A VarLenFeature is a sparse component (strategy/data/sparse.h): one example
// gives a SparseTensor of dense_shape [n] with indices [[0], ..., [n-1]] (n = 0
// when the feature is missing); parse_example gives [B, max n] with indices
// [b, j]. A FixedLenSequenceFeature(shape, allow_missing=true) is dense: one
// example gives [n, *shape] (the values, row-major, n = count / elements of
// shape; missing → n = 0); parse_example pads every example to the batch's
// largest n with default_value (0 or "" when absent), as TF does.

#ifndef TPUSIM_STRATEGY_DATA_EXAMPLE_PARSER_H_
#define TPUSIM_STRATEGY_DATA_EXAMPLE_PARSER_H_

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/data/dataset.h"
#include "strategy/runtime/tensor.h"

namespace tpusim::data {

// tf.io.FixedLenFeature(shape, dtype, default_value).
struct FixedLenFeature {
  // kF32, kI64 or kBytes.
  runtime::DType dtype = runtime::DType::kF32;
  // Fully defined.
  runtime::Shape shape;
  // Used when the feature is missing; must have `shape` and `dtype`.
  std::optional<runtime::Tensor> default_value;
};
// tf.io.VarLenFeature(dtype).
struct VarLenFeature {
  // kF32, kI64 or kBytes.
  runtime::DType dtype = runtime::DType::kF32;
};
// tf.io.FixedLenSequenceFeature(shape, dtype, allow_missing, default_value).
struct FixedLenSequenceFeature {
  // kF32, kI64 or kBytes.
  runtime::DType dtype = runtime::DType::kF32;
  // The shape of one step; fully defined.
  runtime::Shape shape;
  // Must be true (TF: "Unsupported: FixedLenSequenceFeature requires
  // allow_missing to be True.").
  bool allow_missing = false;
  // A scalar of `dtype` padding the shorter examples of a batch; absent = 0
  // (or "").
  std::optional<runtime::Tensor> default_value;
};
using Feature =
    std::variant<FixedLenFeature, VarLenFeature, FixedLenSequenceFeature>;
using FeatureSpec = std::vector<std::pair<std::string, Feature>>;

// InvalidArgument for an unsupported dtype, a partial shape, a duplicate key,
// a default of the wrong spec, or a FixedLenSequenceFeature without
// allow_missing.
absl::Status ValidateFeatureSpec(const FeatureSpec& spec);
// The dict spec of a parsed single example.
absl::StatusOr<ElementSpec> ParsedSpec(const FeatureSpec& spec);

// Parses one serialized tf.train.Example.
absl::StatusOr<Element> ParseSingleExample(absl::string_view serialized,
                                           const FeatureSpec& spec);
// Parses a vector (or scalar) string tensor of serialized Examples; every
// feature gets the batch dimension in front (none for a scalar input).
absl::StatusOr<Element> ParseExample(const runtime::Tensor& serialized,
                                     const FeatureSpec& spec);

// Map functions for Dataset::Map. ParseSingleExampleFn expects string scalar
// elements; ParseExampleFn expects string vectors (e.g. after batch) and keeps
// their batch dimension in the spec. Both declare their output spec, so no
// probing happens.
MapFunction ParseSingleExampleFn(FeatureSpec spec);
MapFunction ParseExampleFn(FeatureSpec spec);

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_EXAMPLE_PARSER_H_
