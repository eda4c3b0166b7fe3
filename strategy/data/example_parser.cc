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

namespace tpusim::data {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;

absl::Status ValidateFeatureSpec(const FeatureSpec& spec) {
  std::set<std::string> keys;
  for (const auto& [key, f] : spec) {
    if (!keys.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature spec: duplicate key \"", key, "\""));
    }
    if (f.dtype != DType::kF32 && f.dtype != DType::kI64 &&
        f.dtype != DType::kBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feature spec: feature \"", key, "\" has dtype ",
          runtime::DTypeName(f.dtype), "; allowed: float32, int64, string"));
    }
    if (!f.shape.IsFullyDefined()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feature spec: feature \"", key, "\" has shape ", f.shape.ToString(),
          "; FixedLenFeature needs a fully "
          "defined shape"));
    }
    if (absl::StatusOr<int64_t> bytes =
            runtime::CheckedByteSize(f.dtype, f.shape);
        !bytes.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feature spec: feature \"", key, "\": ", bytes.status().message()));
    }
    if (f.default_value.has_value() &&
        !(f.default_value->dtype() == f.dtype &&
          f.default_value->shape() == f.shape && f.default_value->has_data())) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature spec: default_value of feature \"", key,
                       "\" is ", f.default_value->spec().ToString(),
                       ", expected ", TensorSpec{f.dtype, f.shape}.ToString()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ElementSpec> ParsedSpec(const FeatureSpec& spec) {
  TPUSIM_RETURN_IF_ERROR(ValidateFeatureSpec(spec));
  std::vector<std::pair<std::string, ElementSpec>> items;
  for (const auto& [key, f] : spec) {
    items.emplace_back(key, ElementSpec(TensorSpec{f.dtype, f.shape}));
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

// The values of one feature as a tensor of shape f.shape.
absl::StatusOr<Tensor> ParseFeature(const tensorflow::Example& ex,
                                    const std::string& key,
                                    const FixedLenFeature& f) {
  const auto& map = ex.features().feature();
  auto it = map.find(key);
  if (it == map.end()) {
    if (f.default_value.has_value()) return *f.default_value;
    return absl::InvalidArgumentError(
        absl::StrCat("Feature: ", key, " (data type: ", DtypeKind(f.dtype),
                     ") is required but could not be found."));
  }
  const tensorflow::Feature& feature = it->second;
  const int64_t expected = f.shape.num_elements();
  auto count_error = [&](int64_t got) {
    return absl::InvalidArgumentError(
        absl::StrCat("Key: ", key, ".  Number of ", DtypeKind(f.dtype),
                     " values != expected.  Values size: ", got,
                     " but output shape: ", f.shape.ToString()));
  };
  const bool kind_ok =
      feature.kind_case() == tensorflow::Feature::KIND_NOT_SET ||
      (f.dtype == DType::kF32 &&
       feature.kind_case() == tensorflow::Feature::kFloatList) ||
      (f.dtype == DType::kI64 &&
       feature.kind_case() == tensorflow::Feature::kInt64List) ||
      (f.dtype == DType::kBytes &&
       feature.kind_case() == tensorflow::Feature::kBytesList);
  if (!kind_ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Feature: ", key,
        ".  Data types don't match. Data type: ", KindName(feature.kind_case()),
        " but expected type: ", DtypeKind(f.dtype)));
  }
  switch (f.dtype) {
    case DType::kF32: {
      const auto& v = feature.float_list().value();
      if (v.size() != expected) return count_error(v.size());
      return Tensor::FromVector<float>(f.shape,
                                       std::vector<float>(v.begin(), v.end()));
    }
    case DType::kI64: {
      const auto& v = feature.int64_list().value();
      if (v.size() != expected) return count_error(v.size());
      return Tensor::FromVector<int64_t>(
          f.shape, std::vector<int64_t>(v.begin(), v.end()));
    }
    default: {
      const auto& v = feature.bytes_list().value();
      if (v.size() != expected) return count_error(v.size());
      return Tensor::FromVector<std::string>(
          f.shape, std::vector<std::string>(v.begin(), v.end()));
    }
  }
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
    TPUSIM_ASSIGN_OR_RETURN(Tensor t, ParseFeature(ex, key, f));
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

}  // namespace

absl::StatusOr<Element> ParseSingleExample(absl::string_view serialized,
                                           const FeatureSpec& spec) {
  TPUSIM_ASSIGN_OR_RETURN(ElementSpec out_spec, ParsedSpec(spec));
  FeatureSpec sorted = Sorted(spec);
  TPUSIM_ASSIGN_OR_RETURN(std::vector<Tensor> leaves,
                          ParseToLeaves(serialized, sorted));
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
    if (n == 0) {
      stacked.push_back(Tensor::Zeros(sorted[k].second.dtype,
                                      sorted[k].second.shape.Prepend(0)));
      continue;
    }
    TPUSIM_ASSIGN_OR_RETURN(Tensor t, Tensor::Stack(columns[k]));
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
      return TensorSpec{s.dtype, s.shape.Prepend(batch)};
    });
  };
  return f;
}

}  // namespace tpusim::data
