#include "strategy/data/example_parser.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "strategy/data/example.pb.h"
#include "strategy/data/sparse.h"

namespace tpusim::data {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;

namespace {

absl::Status CheckDtype(const std::string& key, DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kI64 && dtype != DType::kBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "feature spec: feature \"", key, "\" has dtype ",
        runtime::DTypeName(dtype), "; allowed: float32, int64, string"));
  }
  return absl::OkStatus();
}

absl::Status CheckShape(const std::string& key, DType dtype, const Shape& shape,
                        absl::string_view kind) {
  if (!shape.IsFullyDefined()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "feature spec: feature \"", key, "\" has shape ", shape.ToString(),
        "; ", kind, " needs a fully defined shape"));
  }
  if (absl::StatusOr<int64_t> bytes = runtime::CheckedByteSize(dtype, shape);
      !bytes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "feature spec: feature \"", key, "\": ", bytes.status().message()));
  }
  return absl::OkStatus();
}

absl::Status ValidateFeature(const std::string& key, const FixedLenFeature& f) {
  TPUSIM_RETURN_IF_ERROR(CheckDtype(key, f.dtype));
  TPUSIM_RETURN_IF_ERROR(CheckShape(key, f.dtype, f.shape, "FixedLenFeature"));
  if (f.default_value.has_value() &&
      !(f.default_value->dtype() == f.dtype &&
        f.default_value->shape() == f.shape && f.default_value->has_data())) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature spec: default_value of feature \"", key, "\" is ",
                     f.default_value->spec().ToString(), ", expected ",
                     TensorSpec{f.dtype, f.shape}.ToString()));
  }
  return absl::OkStatus();
}

absl::Status ValidateFeature(const std::string& key, const VarLenFeature& f) {
  return CheckDtype(key, f.dtype);
}

absl::Status ValidateFeature(const std::string& key,
                             const FixedLenSequenceFeature& f) {
  TPUSIM_RETURN_IF_ERROR(CheckDtype(key, f.dtype));
  if (!f.allow_missing) {
    // TF 2.2 (parsing_config.py): ValueError "Unsupported:
    // FixedLenSequenceFeature requires allow_missing to be True."
    return absl::InvalidArgumentError(absl::StrCat(
        "feature spec: feature \"", key,
        "\": Unsupported: FixedLenSequenceFeature requires allow_missing to "
        "be True."));
  }
  TPUSIM_RETURN_IF_ERROR(
      CheckShape(key, f.dtype, f.shape, "FixedLenSequenceFeature"));
  if (f.default_value.has_value() &&
      !(f.default_value->dtype() == f.dtype && f.default_value->rank() == 0 &&
        f.default_value->has_data())) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature spec: default_value of feature \"", key, "\" is ",
                     f.default_value->spec().ToString(), ", expected a ",
                     runtime::DTypeName(f.dtype),
                     " scalar (the padding of a FixedLenSequenceFeature)"));
  }
  return absl::OkStatus();
}

// The parsed spec of one feature of one example.
TensorSpec FeatureSpecOf(const Feature& feature) {
  if (const auto* f = std::get_if<FixedLenFeature>(&feature))
    return TensorSpec{f->dtype, f->shape};
  if (const auto* f = std::get_if<VarLenFeature>(&feature))
    return SparseComponentSpec(f->dtype, Shape({runtime::kUnknownDim}));
  const auto& f = std::get<FixedLenSequenceFeature>(feature);
  return TensorSpec{f.dtype, f.shape.Prepend(runtime::kUnknownDim)};
}

}  // namespace

absl::Status ValidateFeatureSpec(const FeatureSpec& spec) {
  std::set<std::string> keys;
  for (const auto& [key, f] : spec) {
    if (!keys.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature spec: duplicate key \"", key, "\""));
    }
    TPUSIM_RETURN_IF_ERROR(std::visit(
        [&key = key](const auto& feature) {
          return ValidateFeature(key, feature);
        },
        f));
  }
  return absl::OkStatus();
}

absl::StatusOr<ElementSpec> ParsedSpec(const FeatureSpec& spec) {
  TPUSIM_RETURN_IF_ERROR(ValidateFeatureSpec(spec));
  std::vector<std::pair<std::string, ElementSpec>> items;
  for (const auto& [key, f] : spec) {
    items.emplace_back(key, ElementSpec(FeatureSpecOf(f)));
  }
  return ElementSpec::Dict(std::move(items));
}

namespace {

absl::string_view KindName(tensorflow::Feature::KindCase k) {
  switch (k) {
    case tensorflow::Feature::kBytesList:
      return "string";
    case tensorflow::Feature::kFloatList:
      return "float";
    case tensorflow::Feature::kInt64List:
      return "int64";
    default:
      return "none";
  }
}

absl::string_view DtypeKind(DType d) {
  switch (d) {
    case DType::kF32:
      return "float";
    case DType::kI64:
      return "int64";
    default:
      return "string";
  }
}

// All values of feature `key` as a vector tensor of `dtype`; nullopt when the
// example does not have the feature.
absl::StatusOr<std::optional<Tensor>> FeatureValues(
    const tensorflow::Example& ex, const std::string& key, DType dtype) {
  const auto& map = ex.features().feature();
  auto it = map.find(key);
  if (it == map.end()) return std::optional<Tensor>();
  const tensorflow::Feature& feature = it->second;
  const bool kind_ok =
      feature.kind_case() == tensorflow::Feature::KIND_NOT_SET ||
      (dtype == DType::kF32 &&
       feature.kind_case() == tensorflow::Feature::kFloatList) ||
      (dtype == DType::kI64 &&
       feature.kind_case() == tensorflow::Feature::kInt64List) ||
      (dtype == DType::kBytes &&
       feature.kind_case() == tensorflow::Feature::kBytesList);
  if (!kind_ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Feature: ", key,
        ".  Data types don't match. Data type: ", KindName(feature.kind_case()),
        " but expected type: ", DtypeKind(dtype)));
  }
  switch (dtype) {
    case DType::kF32: {
      const auto& v = feature.float_list().value();
      return std::optional<Tensor>(
          Tensor::Vector<float>(std::vector<float>(v.begin(), v.end())));
    }
    case DType::kI64: {
      const auto& v = feature.int64_list().value();
      return std::optional<Tensor>(
          Tensor::Vector<int64_t>(std::vector<int64_t>(v.begin(), v.end())));
    }
    default: {
      const auto& v = feature.bytes_list().value();
      return std::optional<Tensor>(Tensor::Vector<std::string>(
          std::vector<std::string>(v.begin(), v.end())));
    }
  }
}

// One feature of one example: FixedLenFeature → its tensor of f.shape;
// VarLenFeature → its values [n]; FixedLenSequenceFeature → [n, *shape].
absl::StatusOr<Tensor> ParseFeature(const tensorflow::Example& ex,
                                    const std::string& key,
                                    const FixedLenFeature& f) {
  TPUSIM_ASSIGN_OR_RETURN(std::optional<Tensor> values,
                          FeatureValues(ex, key, f.dtype));
  if (!values.has_value()) {
    if (f.default_value.has_value()) return *f.default_value;
    return absl::InvalidArgumentError(
        absl::StrCat("Feature: ", key, " (data type: ", DtypeKind(f.dtype),
                     ") is required but could not be found."));
  }
  if (values->num_elements() != f.shape.num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Key: ", key, ".  Number of ", DtypeKind(f.dtype),
        " values != expected.  Values size: ", values->num_elements(),
        " but output shape: ", f.shape.ToString()));
  }
  return values->Reshape(f.shape);
}

absl::StatusOr<Tensor> ParseFeature(const tensorflow::Example& ex,
                                    const std::string& key,
                                    const VarLenFeature& f) {
  TPUSIM_ASSIGN_OR_RETURN(std::optional<Tensor> values,
                          FeatureValues(ex, key, f.dtype));
  if (!values.has_value()) return Tensor::Zeros(f.dtype, Shape({0}));
  return *std::move(values);
}

absl::StatusOr<Tensor> ParseFeature(const tensorflow::Example& ex,
                                    const std::string& key,
                                    const FixedLenSequenceFeature& f) {
  TPUSIM_ASSIGN_OR_RETURN(std::optional<Tensor> values,
                          FeatureValues(ex, key, f.dtype));
  if (!values.has_value()) return Tensor::Zeros(f.dtype, f.shape.Prepend(0));
  const int64_t stride = f.shape.num_elements();
  const int64_t count = values->num_elements();
  if ((stride == 0 && count != 0) || (stride != 0 && count % stride != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Key: ", key, ".  Number of ", DtypeKind(f.dtype),
                     " values is not a multiple of stride length. Saw ", count,
                     " values but output shape is: ",
                     f.shape.Prepend(runtime::kUnknownDim).ToString()));
  }
  return values->Reshape(f.shape.Prepend(stride == 0 ? 0 : count / stride));
}

absl::StatusOr<std::vector<Tensor>> ParseToLeaves(absl::string_view serialized,
                                                  const FeatureSpec& spec) {
  // protobuf takes an int size: a larger input must not be cut to its low
  // bits and parsed as a (valid) prefix.
  if (serialized.size() >
      static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat("Could not parse example input: ", serialized.size(),
                     " bytes; a serialized Example has at most ",
                     std::numeric_limits<int>::max()));
  }
  tensorflow::Example ex;
  if (!ex.ParseFromArray(serialized.data(),
                         static_cast<int>(serialized.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("Could not parse example input, value: '",
                     absl::CHexEscape(serialized.substr(0, 64)), "'"));
  }
  std::vector<Tensor> out;
  for (const auto& [key, f] : spec) {
    TPUSIM_ASSIGN_OR_RETURN(Tensor t,
                            std::visit(
                                [&ex, &key = key](const auto& feature) {
                                  return ParseFeature(ex, key, feature);
                                },
                                f));
    out.push_back(std::move(t));
  }
  return out;
}

// The feature spec sorted by key (the dict's flattening order).
FeatureSpec Sorted(FeatureSpec spec) {
  std::sort(spec.begin(), spec.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return spec;
}

// A VarLenFeature's SparseTensor: values [n] at [[0], ..., [n-1]] of
// dense_shape [width] (width >= n).
SparseTensor VarLenSparse(const Tensor& values, int64_t width) {
  const int64_t n = values.num_elements();
  std::vector<int64_t> idx(n);
  for (int64_t j = 0; j < n; ++j) idx[j] = j;
  return SparseTensor{
      Tensor::FromVector<int64_t>(Shape({n, 1}), std::move(idx)), values,
      Tensor::Vector<int64_t>({width})};
}

// Stacks [n_i, *step] tensors into [B, max n_i, *step], padding with `pad`.
template <typename T>
Tensor PadSequences(const std::vector<Tensor>& rows, const Shape& step,
                    const T& pad) {
  int64_t max_n = 0;
  for (const Tensor& r : rows) max_n = std::max(max_n, r.shape().dim(0));
  const int64_t stride = step.num_elements();
  const int64_t batch = static_cast<int64_t>(rows.size());
  std::vector<T> out(batch * max_n * stride, pad);
  for (int64_t b = 0; b < batch; ++b) {
    auto v = rows[b].values<T>();
    std::copy(v.begin(), v.end(), out.begin() + b * max_n * stride);
  }
  return Tensor::FromVector<T>(step.Prepend(max_n).Prepend(batch),
                               std::move(out));
}

absl::StatusOr<Tensor> BatchFeature(const std::string& key,
                                    const Feature& feature,
                                    const std::vector<Tensor>& rows) {
  const int64_t n = static_cast<int64_t>(rows.size());
  if (const auto* f = std::get_if<FixedLenFeature>(&feature)) {
    if (n == 0) return Tensor::Zeros(f->dtype, f->shape.Prepend(0));
    return Tensor::Stack(rows);
  }
  if (std::holds_alternative<VarLenFeature>(feature)) {
    // TF: one SparseTensor [B, max n]; boxed as its rows (serialize_many),
    // each of dense_shape [max n].
    int64_t width = 0;
    for (const Tensor& r : rows) width = std::max(width, r.num_elements());
    std::vector<std::string> boxes;
    boxes.reserve(n);
    for (const Tensor& r : rows) {
      TPUSIM_ASSIGN_OR_RETURN(Tensor box,
                              BoxSparse(VarLenSparse(r, width), key));
      boxes.push_back(box.scalar<std::string>());
    }
    return Tensor::FromVector<std::string>(Shape({n}), std::move(boxes));
  }
  const auto& f = std::get<FixedLenSequenceFeature>(feature);
  switch (f.dtype) {
    case DType::kF32:
      return PadSequences<float>(
          rows, f.shape,
          f.default_value.has_value() ? f.default_value->scalar<float>() : 0.f);
    case DType::kI64:
      return PadSequences<int64_t>(rows, f.shape,
                                   f.default_value.has_value()
                                       ? f.default_value->scalar<int64_t>()
                                       : int64_t{0});
    default:
      return PadSequences<std::string>(
          rows, f.shape,
          f.default_value.has_value() ? f.default_value->scalar<std::string>()
                                      : std::string());
  }
}

}  // namespace

absl::StatusOr<Element> ParseSingleExample(absl::string_view serialized,
                                           const FeatureSpec& spec) {
  TPUSIM_ASSIGN_OR_RETURN(ElementSpec out_spec, ParsedSpec(spec));
  FeatureSpec sorted = Sorted(spec);
  TPUSIM_ASSIGN_OR_RETURN(std::vector<Tensor> leaves,
                          ParseToLeaves(serialized, sorted));
  for (size_t k = 0; k < sorted.size(); ++k) {
    if (std::holds_alternative<VarLenFeature>(sorted[k].second)) {
      TPUSIM_ASSIGN_OR_RETURN(
          leaves[k],
          BoxSparse(VarLenSparse(leaves[k], leaves[k].num_elements()),
                    sorted[k].first));
    }
  }
  return out_spec.Unflatten(std::move(leaves));
}

absl::StatusOr<Element> ParseExample(const Tensor& serialized,
                                     const FeatureSpec& spec) {
  if (serialized.dtype() != DType::kBytes || serialized.rank() > 1 ||
      !serialized.has_data()) {
    return absl::InvalidArgumentError(
        absl::StrCat("parse_example: `serialized` must be a string scalar or "
                     "vector with values, got ",
                     serialized.spec().ToString()));
  }
  if (serialized.rank() == 0) {
    return ParseSingleExample(serialized.scalar<std::string>(), spec);
  }
  TPUSIM_ASSIGN_OR_RETURN(ElementSpec out_spec, ParsedSpec(spec));
  FeatureSpec sorted = Sorted(spec);
  const int64_t n = serialized.shape().dim(0);
  std::vector<std::vector<Tensor>> columns(sorted.size());
  auto values = serialized.values<std::string>();
  for (int64_t i = 0; i < n; ++i) {
    TPUSIM_ASSIGN_OR_RETURN(std::vector<Tensor> leaves,
                            ParseToLeaves(values[i], sorted));
    for (size_t k = 0; k < leaves.size(); ++k) {
      columns[k].push_back(std::move(leaves[k]));
    }
  }
  std::vector<Tensor> stacked;
  for (size_t k = 0; k < sorted.size(); ++k) {
    TPUSIM_ASSIGN_OR_RETURN(
        Tensor t, BatchFeature(sorted[k].first, sorted[k].second, columns[k]));
    stacked.push_back(std::move(t));
  }
  return out_spec.Unflatten(std::move(stacked));
}

MapFunction ParseSingleExampleFn(FeatureSpec spec) {
  MapFunction f;
  f.name = "parse_single_example";
  f.fn = [spec](const Element& e) -> absl::StatusOr<Element> {
    if (!e.is_leaf() || e.leaf().dtype() != DType::kBytes ||
        e.leaf().rank() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parse_single_example: the element must be a string scalar, got ",
          ElementSpecToString(SpecOf(e))));
    }
    return ParseSingleExample(e.leaf().scalar<std::string>(), spec);
  };
  f.spec_fn = [spec](const ElementSpec& input) -> absl::StatusOr<ElementSpec> {
    if (!input.is_leaf() || input.leaf().dtype != DType::kBytes ||
        !(input.leaf().shape == Shape())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parse_single_example: the input elements must be string scalars, "
          "got ",
          ElementSpecToString(input)));
    }
    return ParsedSpec(spec);
  };
  return f;
}

MapFunction ParseExampleFn(FeatureSpec spec) {
  MapFunction f;
  f.name = "parse_example";
  f.fn = [spec](const Element& e) -> absl::StatusOr<Element> {
    if (!e.is_leaf()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parse_example: the element must be a string vector, got ",
          ElementSpecToString(SpecOf(e))));
    }
    return ParseExample(e.leaf(), spec);
  };
  f.spec_fn = [spec](const ElementSpec& input) -> absl::StatusOr<ElementSpec> {
    if (!input.is_leaf() || input.leaf().dtype != DType::kBytes ||
        !input.leaf().shape.rank_known() || input.leaf().shape.rank() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parse_example: the input elements must be string vectors (batch "
          "first), got ",
          ElementSpecToString(input)));
    }
    const int64_t batch = input.leaf().shape.dim(0);
    TPUSIM_ASSIGN_OR_RETURN(ElementSpec single, ParsedSpec(spec));
    return single.Map([batch](const TensorSpec& s) {
      return s.WithShape(s.shape.Prepend(batch));
    });
  };
  return f;
}

}  // namespace tpusim::data
