#include "strategy/reduce.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/int_math.h"
#include "common/status_macros.h"

namespace tpusim::strategy {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;

bool HasAllData(absl::Span<const Tensor> parts) {
  for (const Tensor& t : parts) {
    if (!t.has_data()) return false;
  }
  return true;
}

// Builds a tensor of `dtype` from doubles (floats round to the dtype; bf16 to
// nearest even).
Tensor FromDoubles(DType dtype, const Shape& shape,
                   std::vector<double> values) {
  Tensor t = Tensor::FromVector<double>(shape, std::move(values));
  if (dtype == DType::kF64) return t;
  absl::StatusOr<Tensor> cast = t.Cast(dtype);
  TPUSIM_CHECK(cast.ok()) << cast.status();
  return *std::move(cast);
}

Tensor FromInt64s(DType dtype, const Shape& shape,
                  std::vector<int64_t> values) {
  Tensor t = Tensor::FromVector<int64_t>(shape, std::move(values));
  if (dtype == DType::kI64) return t;
  absl::StatusOr<Tensor> cast = t.Cast(dtype);
  TPUSIM_CHECK(cast.ok()) << cast.status();
  return *std::move(cast);
}

absl::Status CheckNumeric(const Tensor& t, absl::string_view what) {
  if (t.dtype() == DType::kBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": cannot reduce a string tensor (", t.spec().ToString(), ")"));
  }
  return absl::OkStatus();
}

std::string ValueForMessage(const Value& v) { return v.DebugString(); }

// Multiplies `sum` by the dtype's value of 1/n, computed in the dtype (bf16 in
// f32).
Tensor ScaleByInverse(const Tensor& sum, int n) {
  if (!sum.has_data()) return Tensor::Abstract(sum.dtype(), sum.shape());
  const int64_t count = sum.num_elements();
  std::vector<double> out(count);
  const double inv = 1.0 / n;
  switch (sum.dtype()) {
    case DType::kF64:
      for (int64_t i = 0; i < count; ++i) out[i] = sum.AsDouble(i) * inv;
      break;
    case DType::kF32:
      for (int64_t i = 0; i < count; ++i) {
        out[i] = static_cast<float>(static_cast<float>(sum.AsDouble(i)) *
                                    static_cast<float>(inv));
      }
      break;
    case DType::kBF16: {
      const float inv_bf16 =
          runtime::BFloat16::FromFloat(static_cast<float>(inv)).ToFloat();
      for (int64_t i = 0; i < count; ++i) {
        out[i] = static_cast<float>(sum.AsDouble(i)) * inv_bf16;
      }
      break;
    }
    default:
      TPUSIM_CHECK(false) << "ScaleByInverse on "
                          << runtime::DTypeName(sum.dtype());
  }
  return FromDoubles(sum.dtype(), sum.shape(), std::move(out));
}

// tf.truediv(numer, cast(denom, numer.dtype)): floats keep their dtype,
// int32/int64 give float64, uint8 gives float32 (TF's _TRUEDIV_TABLE).
Tensor TrueDiv(const Tensor& numer, int64_t denom) {
  DType out_dtype = numer.dtype();
  if (out_dtype == DType::kI32 || out_dtype == DType::kI64)
    out_dtype = DType::kF64;
  if (out_dtype == DType::kU8) out_dtype = DType::kF32;
  if (!numer.has_data()) return Tensor::Abstract(out_dtype, numer.shape());
  const int64_t count = numer.num_elements();
  std::vector<double> out(count);
  for (int64_t i = 0; i < count; ++i) {
    const double x = numer.AsDouble(i);
    if (out_dtype == DType::kF64) {
      out[i] = x / static_cast<double>(denom);
    } else if (out_dtype == DType::kBF16) {
      const float d =
          runtime::BFloat16::FromFloat(static_cast<float>(denom)).ToFloat();
      out[i] = static_cast<float>(x) / d;
    } else {  // f32
      out[i] = static_cast<float>(x) / static_cast<float>(denom);
    }
  }
  return FromDoubles(out_dtype, numer.shape(), std::move(out));
}

absl::Status AxisOutOfRange(int axis, int rank, absl::string_view where) {
  return absl::InvalidArgumentError(absl::StrCat(
      where, "`axis` = ", axis, " out of range for `value` with rank ", rank,
      " (Invalid reduction dimension ", axis, " for input with ", rank,
      " dimensions); allowed: ", -rank, " <= axis < ", rank));
}

// The reduce_sum / size-of-axis helper run on every component (what TF runs
// with experimental_run_v2 before the cross-replica SUM).
absl::StatusOr<Value> ReduceWithAxis(ReduceOp op, const Value& value,
                                     const ReduceAxis& axis,
                                     int num_replicas_in_sync) {
  if (op == ReduceOp::kMean && !axis.is_int()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reduce: Expected `axis` to be an integer not: ", axis.ToString(),
        "; MEAN takes one int axis (only SUM accepts a sequence)"));
  }
  std::vector<Tensor> components;
  switch (value.kind()) {
    case Value::Kind::kPerReplica:
    case Value::Kind::kMirrored:
      components = value.components();
      break;
    case Value::Kind::kTensor:
      // A non-distributed tensor is broadcast to every replica by run():
      // replicated.
      components.assign(num_replicas_in_sync, value.tensor());
      break;
    case Value::Kind::kNumber:
      components.assign(num_replicas_in_sync, value.NumberTensor());
      break;
    case Value::Kind::kVariable:
      return absl::InvalidArgumentError(
          "reduce: a mirrored variable must be resolved to its component "
          "values first");
  }
  if (components.empty()) {
    return absl::InvalidArgumentError(
        "reduce: the distributed value has no components");
  }
  std::vector<Tensor> sums;
  int64_t denom_total = 0;
  for (size_t r = 0; r < components.size(); ++r) {
    const Tensor& c = components[r];
    TPUSIM_RETURN_IF_ERROR(
        CheckNumeric(c, absl::StrCat("reduce (replica ", r, ")")));
    const int rank = c.rank();
    for (int a : axis.axes()) {
      if (a < -rank || a >= rank) {
        return AxisOutOfRange(
            a, rank,
            absl::StrCat("reduce ", ReduceOpName(op), " (replica ", r,
                         ", shape ", c.shape().ToString(), "): "));
      }
    }
    TPUSIM_ASSIGN_OR_RETURN(Tensor s, ReduceSumAxes(c, axis.axes()));
    sums.push_back(std::move(s));
    if (op == ReduceOp::kMean) {
      const int a = axis.axis() < 0 ? axis.axis() + rank : axis.axis();
      denom_total += c.shape().dim(a);
    }
  }
  absl::StatusOr<Tensor> total = AddN(sums);
  if (!total.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reduce ", ReduceOpName(op), " with axis=", axis.ToString(),
        ": the per-replica results must have equal shapes: ",
        total.status().message()));
  }
  if (op == ReduceOp::kSum) return Value(*std::move(total));
  return Value(TrueDiv(*total, denom_total));
}

}  // namespace

absl::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "SUM";
    case ReduceOp::kMean:
      return "MEAN";
  }
  return "?";
}

absl::StatusOr<ReduceOp> ReduceOpFromString(absl::string_view name) {
  const std::string upper = absl::AsciiStrToUpper(name);
  if (upper == "SUM") return ReduceOp::kSum;
  if (upper == "MEAN") return ReduceOp::kMean;
  return absl::InvalidArgumentError(
      absl::StrCat("'", upper, "' is not a valid ReduceOp (got \"", name,
                   "\"); valid ops are SUM and MEAN, case-insensitive"));
}

absl::StatusOr<ReduceOp> ReduceOpArg::Resolve() const {
  if (op_.has_value()) return *op_;
  return ReduceOpFromString(name_);
}

std::string ReduceAxis::ToString() const {
  switch (kind_) {
    case Kind::kNone:
      return "None";
    case Kind::kInt:
      return absl::StrCat(axes_[0]);
    case Kind::kSequence:
      return absl::StrCat("[", absl::StrJoin(axes_, ", "), "]");
  }
  return "?";
}

absl::StatusOr<Tensor> ReduceSumAxes(const Tensor& tensor,
                                     absl::Span<const int> axes) {
  TPUSIM_RETURN_IF_ERROR(CheckNumeric(tensor, "reduce_sum"));
  const int rank = tensor.rank();
  std::vector<bool> reduced(rank, false);
  for (int a : axes) {
    if (a < -rank || a >= rank) return AxisOutOfRange(a, rank, "reduce_sum: ");
    const int n = a < 0 ? a + rank : a;
    if (reduced[n]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "reduce_sum: duplicate reduction axis ", a, " in [",
          absl::StrJoin(axes, ", "), "] for a tensor of rank ", rank));
    }
    reduced[n] = true;
  }
  if (axes.empty()) return tensor;
  std::vector<int64_t> out_dims;
  for (int d = 0; d < rank; ++d) {
    if (!reduced[d]) out_dims.push_back(tensor.shape().dim(d));
  }
  const Shape out_shape(out_dims);
  if (!tensor.has_data()) return Tensor::Abstract(tensor.dtype(), out_shape);
  const int64_t out_count = out_shape.num_elements();
  // Row-major walk over the input; the output index drops the reduced
  // dimensions.
  std::vector<int64_t> index(rank, 0);
  const bool integral = runtime::IsInteger(tensor.dtype());
  std::vector<double> fsum(integral ? 0 : out_count, 0.0);
  std::vector<int64_t> isum(integral ? out_count : 0, 0);
  for (int64_t flat = 0; flat < tensor.num_elements(); ++flat) {
    int64_t out_flat = 0;
    for (int d = 0; d < rank; ++d) {
      if (!reduced[d]) out_flat = out_flat * tensor.shape().dim(d) + index[d];
    }
    if (integral) {
      isum[out_flat] = common::WrapAdd(isum[out_flat], tensor.AsInt64(flat));
    } else {
      fsum[out_flat] += tensor.AsDouble(flat);
    }
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < tensor.shape().dim(d)) break;
      index[d] = 0;
    }
  }
  if (integral) return FromInt64s(tensor.dtype(), out_shape, std::move(isum));
  return FromDoubles(tensor.dtype(), out_shape, std::move(fsum));
}

absl::StatusOr<Tensor> AddN(absl::Span<const Tensor> parts) {
  if (parts.empty())
    return absl::InvalidArgumentError("add_n: no tensors to add");
  const Tensor& first = parts[0];
  TPUSIM_RETURN_IF_ERROR(CheckNumeric(first, "add_n"));
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].dtype() != first.dtype() ||
        parts[i].shape() != first.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape mismatch: component 0 is ", first.spec().ToString(),
          " but component ", i, " is ", parts[i].spec().ToString(),
          "; all components must have the same dtype and shape"));
    }
  }
  if (!HasAllData(parts)) return Tensor::Abstract(first.dtype(), first.shape());
  const int64_t count = first.num_elements();
  if (runtime::IsInteger(first.dtype())) {
    std::vector<int64_t> sum(count, 0);
    for (const Tensor& t : parts) {
      for (int64_t i = 0; i < count; ++i)
        sum[i] = common::WrapAdd(sum[i], t.AsInt64(i));
    }
    return FromInt64s(first.dtype(), first.shape(), std::move(sum));
  }
  std::vector<double> sum(count, 0.0);
  for (const Tensor& t : parts) {
    for (int64_t i = 0; i < count; ++i) sum[i] += t.AsDouble(i);
  }
  return FromDoubles(first.dtype(), first.shape(), std::move(sum));
}

absl::StatusOr<Value> ReduceOnHost(ReduceOp op, const Value& value,
                                   const ReduceAxis& axis,
                                   int num_replicas_in_sync) {
  if (!axis.is_none())
    return ReduceWithAxis(op, value, axis, num_replicas_in_sync);
  switch (value.kind()) {
    case Value::Kind::kPerReplica:
    case Value::Kind::kMirrored: {
      const std::vector<Tensor>& components = value.components();
      absl::StatusOr<Tensor> sum = AddN(components);
      if (!sum.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("reduce ", ReduceOpName(op),
                         " with axis=None: ", sum.status().message()));
      }
      if (op == ReduceOp::kSum) return Value(*std::move(sum));
      if (!runtime::IsFloating(sum->dtype())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "reduce MEAN with axis=None scales the sum by the float 1/",
            components.size(), " and cannot be applied to ",
            runtime::DTypeName(sum->dtype()),
            " components; cast to a float dtype or pass an integer axis"));
      }
      return Value(ScaleByInverse(*sum, static_cast<int>(components.size())));
    }
    case Value::Kind::kNumber:
      if (value.number() == 0) return value;
      [[fallthrough]];
    case Value::Kind::kTensor:
      if (op == ReduceOp::kMean || num_replicas_in_sync == 1) return value;
      return absl::InvalidArgumentError(absl::StrCat(
          "A non-DistributedValues value ", ValueForMessage(value),
          " cannot be reduced with the given reduce op ", ReduceOpName(op),
          " (", num_replicas_in_sync,
          " replicas in sync; pass a PerReplica value or use MEAN)"));
    case Value::Kind::kVariable:
      return absl::InvalidArgumentError(
          "reduce: a mirrored variable must be resolved to its component "
          "values first");
  }
  return absl::InternalError("reduce: unknown value kind");
}

}  // namespace tpusim::strategy
