#include "strategy/runtime/ops.h"

#include <algorithm>
#include <array>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/check.h"
#include "common/int_math.h"
#include "common/status_macros.h"

namespace tpusim::runtime {
namespace {

struct OpInfo {
  OpCode code;
  const char* name;
};

constexpr std::array<OpInfo, kNumOpCodes> kOpInfos = {{
    {OpCode::kParameter, "parameter"},
    {OpCode::kConstant, "constant"},
    {OpCode::kReplicaId, "replica_id"},
    {OpCode::kVariableRead, "variable_read"},
    {OpCode::kVariableAssign, "variable_assign"},
    {OpCode::kVariableAssignAdd, "variable_assign_add"},
    {OpCode::kNeg, "neg"},
    {OpCode::kExp, "exp"},
    {OpCode::kLog, "log"},
    {OpCode::kTanh, "tanh"},
    {OpCode::kRelu, "relu"},
    {OpCode::kSigmoid, "sigmoid"},
    {OpCode::kRsqrt, "rsqrt"},
    {OpCode::kSqrt, "sqrt"},
    {OpCode::kCast, "cast"},
    {OpCode::kAdd, "add"},
    {OpCode::kSub, "sub"},
    {OpCode::kMul, "mul"},
    {OpCode::kDiv, "div"},
    {OpCode::kMax, "max"},
    {OpCode::kMin, "min"},
    {OpCode::kDot, "dot"},
    {OpCode::kConv2D, "conv2d"},
    {OpCode::kMaxPool2D, "max_pool2d"},
    {OpCode::kConv2DBackpropInput, "conv2d_backprop_input"},
    {OpCode::kConv2DBackpropFilter, "conv2d_backprop_filter"},
    {OpCode::kMaxPool2DGrad, "max_pool2d_grad"},
    {OpCode::kCompare, "compare"},
    {OpCode::kSelect, "select"},
    {OpCode::kScatterAdd, "scatter_add"},
    {OpCode::kReduceSum, "reduce_sum"},
    {OpCode::kReduceMean, "reduce_mean"},
    {OpCode::kReduceMax, "reduce_max"},
    {OpCode::kSoftmax, "softmax"},
    {OpCode::kReshape, "reshape"},
    {OpCode::kTranspose, "transpose"},
    {OpCode::kBroadcast, "broadcast"},
    {OpCode::kSlice, "slice"},
    {OpCode::kConcat, "concat"},
    {OpCode::kGather, "gather"},
    {OpCode::kOneHot, "one_hot"},
    {OpCode::kAllReduce, "all_reduce"},
    {OpCode::kAllGather, "all_gather"},
    {OpCode::kReduceScatter, "reduce_scatter"},
    {OpCode::kCollectivePermute, "collective_permute"},
    {OpCode::kAllToAll, "all_to_all"},
}};

constexpr std::array<const char*, 6> kComparisonNames = {"eq", "ne", "lt",
                                                         "le", "gt", "ge"};

// "add(f32[2,3], f32[4])" for error messages.
std::string Describe(OpCode code, absl::Span<const ValueType* const> operands) {
  std::vector<std::string> parts;
  parts.reserve(operands.size());
  for (const ValueType* t : operands) parts.push_back(t->ToString());
  return absl::StrCat(OpCodeName(code), "(", absl::StrJoin(parts, ", "), ")");
}

absl::Status Error(OpCode code, absl::Span<const ValueType* const> operands,
                   absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(Describe(code, operands), ": ", what));
}

std::string Ints(absl::Span<const int64_t> v) {
  return absl::StrCat("{", absl::StrJoin(v, ","), "}");
}

bool IsNumeric(DType d) { return d != DType::kBytes; }

// Normalizes `axis` (negative counts from the end) into [0, rank).
absl::StatusOr<int> NormalizeAxis(OpCode code,
                                  absl::Span<const ValueType* const> operands,
                                  int64_t axis, int rank,
                                  absl::string_view field) {
  if (axis < -rank || axis >= rank) {
    return Error(code, operands,
                 absl::StrCat(field, "=", axis, " is out of range for rank ",
                              rank, "; allowed [", -rank, ", ", rank, ")"));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

ValueType Make(DType dtype, std::vector<int64_t> dims, uint64_t dynamic) {
  return ValueType(dtype, Shape(std::move(dims)), dynamic);
}

// ---- shape rules by family ----

absl::StatusOr<ValueType> InferUnary(OpCode code, const OpAttrs& attrs,
                                     absl::Span<const ValueType* const> ops) {
  const ValueType& x = *ops[0];
  if (!IsNumeric(x.dtype))
    return Error(code, ops, "operand must be numeric, not string");
  if (code == OpCode::kCast)
    return ValueType(attrs.dtype, x.shape, x.dynamic_dims);
  if (code == OpCode::kRelu || code == OpCode::kNeg) return x;
  if (!IsFloating(x.dtype)) {
    return Error(code, ops,
                 "operand must be floating point (float32, float64, bfloat16)");
  }
  return x;
}

// numpy broadcasting of a's and b's shapes (dtypes are the caller's business);
// the result has a's dtype. Errors name `code` and all of `ops`.
absl::StatusOr<ValueType> BroadcastTypes(OpCode code,
                                         absl::Span<const ValueType* const> ops,
                                         const ValueType& a,
                                         const ValueType& b) {
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  uint64_t dynamic = 0;
  for (int i = 0; i < rank; ++i) {
    const int ia = i - (rank - a.rank());
    const int ib = i - (rank - b.rank());
    const int64_t da = ia >= 0 ? a.shape.dim(ia) : 1;
    const int64_t db = ib >= 0 ? b.shape.dim(ib) : 1;
    const bool dyn_a = ia >= 0 && a.is_dynamic(ia);
    const bool dyn_b = ib >= 0 && b.is_dynamic(ib);
    if (dyn_a || dyn_b) {
      // A dynamic dim meets the same dynamic dim or a static 1.
      if (dyn_a && dyn_b) {
        if (da != db) {
          return Error(code, ops,
                       absl::StrCat("dynamic dimension ", i, " sizes ", da,
                                    " and ", db, " differ"));
        }
      } else if ((dyn_a ? db : da) != 1) {
        return Error(
            code, ops,
            absl::StrCat(
                "dimension ", i,
                " is dynamic in one operand; the other must have the same "
                "dynamic dimension or size 1"));
      }
      dims[i] = dyn_a ? da : db;
      dynamic |= uint64_t{1} << i;
      continue;
    }
    if (da != db && da != 1 && db != 1) {
      return Error(
          code, ops,
          absl::StrCat("shapes are not broadcast-compatible at dimension ", i,
                       " (", da, " vs ", db,
                       "); numpy broadcasting needs equal sizes or 1"));
    }
    dims[i] = da == 1 ? db : da;
  }
  return Make(a.dtype, std::move(dims), dynamic);
}

absl::StatusOr<ValueType> InferBinary(OpCode code,
                                      absl::Span<const ValueType* const> ops) {
  const ValueType& a = *ops[0];
  const ValueType& b = *ops[1];
  if (a.dtype != b.dtype) {
    return Error(code, ops,
                 "operand dtypes must be equal (no implicit promotion)");
  }
  if (!IsNumeric(a.dtype))
    return Error(code, ops, "operands must be numeric, not string");
  TPUSIM_ASSIGN_OR_RETURN(ValueType r, BroadcastTypes(code, ops, a, b));
  if (code == OpCode::kCompare) r.dtype = DType::kU8;
  return r;
}

absl::StatusOr<ValueType> InferSelect(absl::Span<const ValueType* const> ops) {
  const OpCode code = OpCode::kSelect;
  const ValueType& p = *ops[0];
  const ValueType& a = *ops[1];
  const ValueType& b = *ops[2];
  if (p.dtype != DType::kU8) {
    return Error(code, ops,
                 "the predicate must be u8 (0 = false, else true), as compare "
                 "returns");
  }
  if (a.dtype != b.dtype)
    return Error(code, ops, "on_true and on_false dtypes must be equal");
  TPUSIM_ASSIGN_OR_RETURN(ValueType ab, BroadcastTypes(code, ops, a, b));
  TPUSIM_ASSIGN_OR_RETURN(ValueType r, BroadcastTypes(code, ops, ab, p));
  r.dtype = a.dtype;
  return r;
}

absl::Status CheckDims(OpCode code, absl::Span<const ValueType* const> ops,
                       absl::Span<const int64_t> dims, int rank,
                       absl::string_view field, std::vector<bool>* used) {
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      return Error(code, ops,
                   absl::StrCat(field, "=", Ints(dims), " has dimension ", d,
                                " out of range for rank ", rank));
    }
    if ((*used)[d]) {
      return Error(code, ops,
                   absl::StrCat(field, "=", Ints(dims), " uses dimension ", d,
                                " twice (or in two roles)"));
    }
    (*used)[d] = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<ValueType> InferDot(const OpAttrs& attrs,
                                   absl::Span<const ValueType* const> ops) {
  const OpCode code = OpCode::kDot;
  const ValueType& l = *ops[0];
  const ValueType& r = *ops[1];
  const DotDims& d = attrs.dot;
  if (l.dtype != r.dtype)
    return Error(code, ops, "operand dtypes must be equal");
  if (!IsNumeric(l.dtype)) return Error(code, ops, "operands must be numeric");
  if (d.lhs_batch.size() != d.rhs_batch.size()) {
    return Error(code, ops,
                 absl::StrCat("lhs_batch=", Ints(d.lhs_batch),
                              " and rhs_batch=", Ints(d.rhs_batch),
                              " must have the same length"));
  }
  if (d.lhs_contracting.size() != d.rhs_contracting.size()) {
    return Error(code, ops,
                 absl::StrCat("lhs_contracting=", Ints(d.lhs_contracting),
                              " and rhs_contracting=", Ints(d.rhs_contracting),
                              " must have the same length"));
  }
  std::vector<bool> lused(l.rank()), rused(r.rank());
  TPUSIM_RETURN_IF_ERROR(
      CheckDims(code, ops, d.lhs_batch, l.rank(), "lhs_batch", &lused));
  TPUSIM_RETURN_IF_ERROR(CheckDims(code, ops, d.lhs_contracting, l.rank(),
                                   "lhs_contracting", &lused));
  TPUSIM_RETURN_IF_ERROR(
      CheckDims(code, ops, d.rhs_batch, r.rank(), "rhs_batch", &rused));
  TPUSIM_RETURN_IF_ERROR(CheckDims(code, ops, d.rhs_contracting, r.rank(),
                                   "rhs_contracting", &rused));
  std::vector<int64_t> dims;
  uint64_t dynamic = 0;
  auto push = [&](int64_t size, bool dyn) {
    if (dyn) dynamic |= uint64_t{1} << dims.size();
    dims.push_back(size);
  };
  for (size_t i = 0; i < d.lhs_batch.size(); ++i) {
    const int lb = d.lhs_batch[i], rb = d.rhs_batch[i];
    if (l.shape.dim(lb) != r.shape.dim(rb) ||
        l.is_dynamic(lb) != r.is_dynamic(rb)) {
      return Error(
          code, ops,
          absl::StrCat("batch dimension ", i, " sizes differ: lhs dim ", lb,
                       " is ", l.shape.dim(lb), ", rhs dim ", rb, " is ",
                       r.shape.dim(rb)));
    }
    push(l.shape.dim(lb), l.is_dynamic(lb));
  }
  for (size_t i = 0; i < d.lhs_contracting.size(); ++i) {
    const int lc = d.lhs_contracting[i], rc = d.rhs_contracting[i];
    if (l.shape.dim(lc) != r.shape.dim(rc) ||
        l.is_dynamic(lc) != r.is_dynamic(rc)) {
      return Error(
          code, ops,
          absl::StrCat("contracting dimension ", i, " sizes differ: lhs dim ",
                       lc, " is ", l.shape.dim(lc), ", rhs dim ", rc, " is ",
                       r.shape.dim(rc)));
    }
  }
  for (int i = 0; i < l.rank(); ++i) {
    if (!lused[i]) push(l.shape.dim(i), l.is_dynamic(i));
  }
  for (int i = 0; i < r.rank(); ++i) {
    if (!rused[i]) push(r.shape.dim(i), r.is_dynamic(i));
  }
  return Make(l.dtype, std::move(dims), dynamic);
}

// Output size of spatial dim `dim` of a sliding window (conv2d filter or
// max_pool2d window) of size `k` and stride `s` over `size` input positions:
// SAME pads to ceil(size / s); VALID needs the window to fit.
absl::StatusOr<int64_t> WindowedSize(OpCode code,
                                     absl::Span<const ValueType* const> ops,
                                     absl::string_view what, int dim,
                                     int64_t size, int64_t k, int64_t s,
                                     Padding padding) {
  // ceil(size / s) without forming size + s - 1, which overflows for huge s.
  if (padding == Padding::kSame) return size == 0 ? 0 : (size - 1) / s + 1;
  if (k > size) {
    return Error(code, ops,
                 absl::StrCat("VALID padding needs the ", what, " (", k,
                              ") to fit in the input (", size,
                              ") in spatial dim ", dim));
  }
  return (size - k) / s + 1;
}

// The conv2d shape rule for input `in` and filter `f`; errors name `code` and
// `ops` (the gradients check their attrs.shape through it).
absl::StatusOr<ValueType> ConvForward(OpCode code, const OpAttrs& attrs,
                                      absl::Span<const ValueType* const> ops,
                                      const ValueType& in, const ValueType& f) {
  if (in.rank() != 4) return Error(code, ops, "input must be rank 4 (NHWC)");
  if (f.rank() != 4) return Error(code, ops, "filter must be rank 4 (HWIO)");
  if (in.dtype != f.dtype)
    return Error(code, ops, "input and filter dtypes must be equal");
  if (!IsNumeric(in.dtype)) return Error(code, ops, "operands must be numeric");
  if ((in.dynamic_dims & ~uint64_t{1}) != 0 || f.any_dynamic()) {
    return Error(code, ops,
                 "only the batch (N) dimension of the input may be dynamic");
  }
  if (attrs.window_strides.size() != 2 || attrs.window_strides[0] < 1 ||
      attrs.window_strides[1] < 1) {
    return Error(code, ops,
                 absl::StrCat("window_strides=", Ints(attrs.window_strides),
                              " must be two values >= 1 {h, w}"));
  }
  if (in.shape.dim(3) != f.shape.dim(2)) {
    return Error(code, ops,
                 absl::StrCat("input channels ", in.shape.dim(3),
                              " != filter input channels ", f.shape.dim(2)));
  }
  std::vector<int64_t> out = {in.shape.dim(0), 0, 0, f.shape.dim(3)};
  for (int i = 0; i < 2; ++i) {
    TPUSIM_ASSIGN_OR_RETURN(
        out[1 + i],
        WindowedSize(code, ops, "filter", i, in.shape.dim(1 + i),
                     f.shape.dim(i), attrs.window_strides[i], attrs.padding));
  }
  return Make(in.dtype, std::move(out), in.dynamic_dims);
}

absl::StatusOr<ValueType> InferConv(const OpAttrs& attrs,
                                    absl::Span<const ValueType* const> ops) {
  return ConvForward(OpCode::kConv2D, attrs, ops, *ops[0], *ops[1]);
}

// conv2d_backprop_input(dy, filter) and conv2d_backprop_filter(input, dy):
// attrs.shape is the shape of the result (the forward input / filter), and the
// forward shape rule applied to it must give dy's shape exactly.
absl::StatusOr<ValueType> InferConvBackprop(
    OpCode code, const OpAttrs& attrs, absl::Span<const ValueType* const> ops) {
  const bool input_grad = code == OpCode::kConv2DBackpropInput;
  const ValueType& dy = input_grad ? *ops[0] : *ops[1];
  const ValueType& other = input_grad ? *ops[1] : *ops[0];
  const std::vector<int64_t>& want = attrs.shape;
  const char* field_meaning = input_grad ? "the input shape {N, H, W, Ci}"
                                         : "the filter shape {Kh, Kw, Ci, Co}";
  if (want.size() != 4) {
    return Error(code, ops,
                 absl::StrCat("shape=", Ints(want), " must be ", field_meaning,
                              " (4 values)"));
  }
  for (int64_t d : want) {
    if (d < 1) {
      return Error(code, ops,
                   absl::StrCat("shape=", Ints(want), " has a dimension ", d,
                                "; every dimension must be >= 1"));
    }
  }
  if (dy.rank() != 4) return Error(code, ops, "dy must be rank 4 (NHWC)");
  ValueType result;
  ValueType forward;
  if (input_grad) {
    // The batch comes from dy (it may be dynamic: at execution the true N).
    std::vector<int64_t> dims = want;
    dims[0] = dy.shape.dim(0);
    result = Make(dy.dtype, std::move(dims), dy.dynamic_dims & 1u);
    if (!dy.is_dynamic(0) && want[0] != dy.shape.dim(0)) {
      return Error(code, ops,
                   absl::StrCat("shape=", Ints(want), " batch ", want[0],
                                " != dy batch ", dy.shape.dim(0)));
    }
    TPUSIM_ASSIGN_OR_RETURN(forward,
                            ConvForward(code, attrs, ops, result, other));
  } else {
    result = Make(dy.dtype, want, 0);
    TPUSIM_ASSIGN_OR_RETURN(forward,
                            ConvForward(code, attrs, ops, other, result));
  }
  if (forward.dtype != dy.dtype || forward.shape != dy.shape ||
      forward.dynamic_dims != dy.dynamic_dims) {
    return Error(
        code, ops,
        absl::StrCat("conv2d with shape=", Ints(want), " gives ",
                     forward.ToString(), ", not dy's ", dy.ToString()));
  }
  return result;
}

// max_pool2d_grad(input, dy): dy must be max_pool2d(input)'s type.
absl::StatusOr<ValueType> InferMaxPool(const OpAttrs& attrs,
                                       absl::Span<const ValueType* const> ops);
absl::StatusOr<ValueType> InferMaxPoolGrad(
    const OpAttrs& attrs, absl::Span<const ValueType* const> ops) {
  const OpCode code = OpCode::kMaxPool2DGrad;
  absl::StatusOr<ValueType> forward = InferMaxPool(attrs, ops.subspan(0, 1));
  if (!forward.ok()) {
    return Error(code, ops,
                 absl::StrCat("the forward max_pool2d is invalid: ",
                              forward.status().message()));
  }
  if (*forward != *ops[1]) {
    return Error(code, ops,
                 absl::StrCat("dy must be the forward result type ",
                              forward->ToString()));
  }
  return *ops[0];
}

absl::StatusOr<ValueType> InferMaxPool(const OpAttrs& attrs,
                                       absl::Span<const ValueType* const> ops) {
  const OpCode code = OpCode::kMaxPool2D;
  const ValueType& in = *ops[0];
  if (in.rank() != 4) return Error(code, ops, "input must be rank 4 (NHWC)");
  if (!IsNumeric(in.dtype)) return Error(code, ops, "input must be numeric");
  if ((in.dynamic_dims & ~uint64_t{1}) != 0) {
    return Error(code, ops,
                 "only the batch (N) dimension of the input may be dynamic");
  }
  if (attrs.window.size() != 2 || attrs.window[0] < 1 || attrs.window[1] < 1) {
    return Error(code, ops,
                 absl::StrCat("window=", Ints(attrs.window),
                              " must be two values >= 1 {h, w}"));
  }
  if (attrs.window_strides.size() != 2 || attrs.window_strides[0] < 1 ||
      attrs.window_strides[1] < 1) {
    return Error(code, ops,
                 absl::StrCat("window_strides=", Ints(attrs.window_strides),
                              " must be two values >= 1 {h, w}"));
  }
  std::vector<int64_t> out = {in.shape.dim(0), 0, 0, in.shape.dim(3)};
  for (int i = 0; i < 2; ++i) {
    TPUSIM_ASSIGN_OR_RETURN(
        out[1 + i],
        WindowedSize(code, ops, "window", i, in.shape.dim(1 + i),
                     attrs.window[i], attrs.window_strides[i], attrs.padding));
  }
  return Make(in.dtype, std::move(out), in.dynamic_dims);
}

absl::StatusOr<std::vector<bool>> ReduceMask(
    OpCode code, const OpAttrs& attrs, absl::Span<const ValueType* const> ops) {
  const int rank = ops[0]->rank();
  std::vector<bool> mask(rank, false);
  for (int64_t a : attrs.axes) {
    TPUSIM_ASSIGN_OR_RETURN(int axis,
                            NormalizeAxis(code, ops, a, rank, "axes"));
    if (mask[axis]) {
      return Error(
          code, ops,
          absl::StrCat("axes=", Ints(attrs.axes), " repeats axis ", a));
    }
    mask[axis] = true;
  }
  return mask;
}

absl::StatusOr<ValueType> InferReduce(OpCode code, const OpAttrs& attrs,
                                      absl::Span<const ValueType* const> ops) {
  const ValueType& x = *ops[0];
  if (!IsNumeric(x.dtype)) return Error(code, ops, "operand must be numeric");
  TPUSIM_ASSIGN_OR_RETURN(std::vector<bool> mask, ReduceMask(code, attrs, ops));
  std::vector<int64_t> dims;
  uint64_t dynamic = 0;
  for (int i = 0; i < x.rank(); ++i) {
    if (mask[i]) {
      if (attrs.keepdims) dims.push_back(1);
      continue;
    }
    if (x.is_dynamic(i)) dynamic |= uint64_t{1} << dims.size();
    dims.push_back(x.shape.dim(i));
  }
  return Make(x.dtype, std::move(dims), dynamic);
}

absl::StatusOr<ValueType> InferReshape(const OpAttrs& attrs,
                                       absl::Span<const ValueType* const> ops) {
  const OpCode code = OpCode::kReshape;
  const ValueType& x = *ops[0];
  std::vector<int64_t> dims = attrs.shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (infer >= 0) {
        return Error(
            code, ops,
            absl::StrCat("shape=", Ints(attrs.shape), " has more than one -1"));
      }
      infer = static_cast<int>(i);
    } else if (dims[i] < 0) {
      return Error(
          code, ops,
          absl::StrCat("shape=", Ints(attrs.shape), " has negative size ",
                       dims[i], "; sizes must be >= 0 or one -1 (inferred)"));
    } else {
      std::optional<int64_t> product = common::CheckedMul(known, dims[i]);
      if (!product.has_value()) {
        return Error(code, ops,
                     absl::StrCat("shape=", Ints(attrs.shape),
                                  " has more than 2^63-1 elements"));
      }
      known = *product;
    }
  }
  if (x.any_dynamic() && infer < 0) {
    return Error(
        code, ops,
        absl::StrCat(
            "shape=", Ints(attrs.shape),
            ": reshaping a dynamic shape needs one -1 in the target shape "
            "(it becomes the dynamic dimension)"));
  }
  const int64_t n = x.shape.num_elements();
  if (infer >= 0) {
    if (known == 0 || n % known != 0) {
      return Error(code, ops,
                   absl::StrCat("cannot infer -1 in shape=", Ints(attrs.shape),
                                " for ", n, " elements"));
    }
    dims[infer] = n / known;
  } else if (known != n) {
    return Error(code, ops,
                 absl::StrCat("shape=", Ints(attrs.shape), " has ", known,
                              " elements, the operand has ", n));
  }
  uint64_t dynamic = x.any_dynamic() ? (uint64_t{1} << infer) : 0;
  return Make(x.dtype, std::move(dims), dynamic);
}

absl::StatusOr<ValueType> InferTranspose(
    const OpAttrs& attrs, absl::Span<const ValueType* const> ops) {
  const ValueType& x = *ops[0];
  const auto& perm = attrs.permutation;
  if (static_cast<int>(perm.size()) != x.rank()) {
    return Error(OpCode::kTranspose, ops,
                 absl::StrCat("permutation=", Ints(perm), " must have rank ",
                              x.rank(), " entries"));
  }
  std::vector<bool> used(x.rank());
  TPUSIM_RETURN_IF_ERROR(
      CheckDims(OpCode::kTranspose, ops, perm, x.rank(), "permutation", &used));
  std::vector<int64_t> dims(x.rank());
  uint64_t dynamic = 0;
  for (int i = 0; i < x.rank(); ++i) {
    dims[i] = x.shape.dim(perm[i]);
    if (x.is_dynamic(perm[i])) dynamic |= uint64_t{1} << i;
  }
  return Make(x.dtype, std::move(dims), dynamic);
}

absl::StatusOr<ValueType> InferBroadcast(
    const OpAttrs& attrs, absl::Span<const ValueType* const> ops) {
  const OpCode code = OpCode::kBroadcast;
  const ValueType& x = *ops[0];
  const auto& target = attrs.shape;
  const int rank = static_cast<int>(target.size());
  if (rank < x.rank()) {
    return Error(code, ops,
                 absl::StrCat("shape=", Ints(target),
                              " has lower rank than the operand"));
  }
  std::vector<int64_t> dims(target.begin(), target.end());
  uint64_t dynamic = 0;
  for (int i = 0; i < rank; ++i) {
    if (target[i] < 0) {
      return Error(
          code, ops,
          absl::StrCat("shape=", Ints(target), " has a negative size"));
    }
    const int xi = i - (rank - x.rank());
    if (xi < 0) continue;
    if (x.is_dynamic(xi)) {
      // The dynamic dim keeps the operand's (true) size, which may not exceed
      // the target.
      if (x.shape.dim(xi) > target[i]) {
        return Error(
            code, ops,
            absl::StrCat("dynamic dimension ", xi, " of size ", x.shape.dim(xi),
                         " exceeds the target size ", target[i]));
      }
      dims[i] = x.shape.dim(xi);
      dynamic |= uint64_t{1} << i;
      continue;
    }
    if (x.shape.dim(xi) != target[i] && x.shape.dim(xi) != 1) {
      return Error(code, ops,
                   absl::StrCat("cannot broadcast dimension ", xi, " of size ",
                                x.shape.dim(xi), " to ", target[i], " (shape=",
                                Ints(target), "); sizes must be equal or 1"));
    }
  }
  return Make(x.dtype, std::move(dims), dynamic);
}

absl::StatusOr<ValueType> InferSlice(const OpAttrs& attrs,
                                     absl::Span<const ValueType* const> ops) {
  const OpCode code = OpCode::kSlice;
  const ValueType& x = *ops[0];
  const int rank = x.rank();
  if (static_cast<int>(attrs.start.size()) != rank ||
      static_cast<int>(attrs.limit.size()) != rank ||
      (!attrs.strides.empty() &&
       static_cast<int>(attrs.strides.size()) != rank)) {
    return Error(
        code, ops,
        absl::StrCat("start=", Ints(attrs.start), ", limit=", Ints(attrs.limit),
                     ", strides=", Ints(attrs.strides), " must each have ",
                     rank, " entries (strides may be empty)"));
  }
  std::vector<int64_t> dims(rank);
  uint64_t dynamic = 0;
  for (int i = 0; i < rank; ++i) {
    const int64_t s = attrs.start[i], l = attrs.limit[i];
    const int64_t st = attrs.strides.empty() ? 1 : attrs.strides[i];
    if (st < 1) {
      return Error(code, ops,
                   absl::StrCat("strides[", i, "]=", st, " must be >= 1"));
    }
    if (x.is_dynamic(i)) {
      // Only the full range of a dynamic dimension may be sliced (its true size
      // is unknown).
      if (s != 0 || st != 1 || l < x.shape.dim(i)) {
        return Error(
            code, ops,
            absl::StrCat(
                "dimension ", i,
                " is dynamic; only start=0, stride 1, limit >= its size may "
                "be sliced"));
      }
      dims[i] = x.shape.dim(i);
      dynamic |= uint64_t{1} << i;
      continue;
    }
    if (s < 0 || l < s || l > x.shape.dim(i)) {
      return Error(code, ops,
                   absl::StrCat("dimension ", i, ": start=", s, ", limit=", l,
                                " must satisfy 0 <= start <= limit <= ",
                                x.shape.dim(i)));
    }
    // Ceil-division written so it cannot overflow for a stride near 2^63.
    dims[i] = l == s ? 0 : (l - s - 1) / st + 1;
  }
  return Make(x.dtype, std::move(dims), dynamic);
}

absl::StatusOr<ValueType> InferConcat(const OpAttrs& attrs,
                                      absl::Span<const ValueType* const> ops) {
  const OpCode code = OpCode::kConcat;
  if (ops.empty()) return Error(code, ops, "needs at least one operand");
  const ValueType& first = *ops[0];
  if (first.rank() == 0) return Error(code, ops, "cannot concatenate scalars");
  TPUSIM_ASSIGN_OR_RETURN(
      int axis, NormalizeAxis(code, ops, attrs.axis, first.rank(), "axis"));
  std::vector<int64_t> dims = first.shape.dims();
  uint64_t dynamic = first.dynamic_dims;
  for (size_t k = 1; k < ops.size(); ++k) {
    const ValueType& t = *ops[k];
    if (t.dtype != first.dtype || t.rank() != first.rank()) {
      return Error(code, ops,
                   absl::StrCat("operand ", k, " differs in dtype or rank"));
    }
    for (int i = 0; i < first.rank(); ++i) {
      if (i == axis) {
        dims[i] += t.shape.dim(i);
        if (t.is_dynamic(i)) dynamic |= uint64_t{1} << i;
      } else if (t.shape.dim(i) != first.shape.dim(i) ||
                 t.is_dynamic(i) != first.is_dynamic(i)) {
        return Error(
            code, ops,
            absl::StrCat("operand ", k, " differs in dimension ", i,
                         "; all dimensions but axis ", axis, " must agree"));
      }
    }
  }
  return Make(first.dtype, std::move(dims), dynamic);
}

absl::StatusOr<ValueType> InferGather(const OpAttrs& attrs,
                                      absl::Span<const ValueType* const> ops) {
  const OpCode code = OpCode::kGather;
  const ValueType& p = *ops[0];
  const ValueType& idx = *ops[1];
  if (idx.dtype != DType::kI32 && idx.dtype != DType::kI64) {
    return Error(code, ops, "indices must be int32 or int64");
  }
  if (p.rank() == 0) return Error(code, ops, "params must have rank >= 1");
  TPUSIM_ASSIGN_OR_RETURN(
      int axis, NormalizeAxis(code, ops, attrs.axis, p.rank(), "axis"));
  std::vector<int64_t> dims;
  uint64_t dynamic = 0;
  auto push = [&](int64_t size, bool dyn) {
    if (dyn) dynamic |= uint64_t{1} << dims.size();
    dims.push_back(size);
  };
  for (int i = 0; i < axis; ++i) push(p.shape.dim(i), p.is_dynamic(i));
  for (int i = 0; i < idx.rank(); ++i)
    push(idx.shape.dim(i), idx.is_dynamic(i));
  for (int i = axis + 1; i < p.rank(); ++i)
    push(p.shape.dim(i), p.is_dynamic(i));
  return Make(p.dtype, std::move(dims), dynamic);
}

// scatter_add(operand, indices, updates): updates must have gather(operand,
// indices)'s type; the result is the operand's type.
absl::StatusOr<ValueType> InferScatterAdd(
    const OpAttrs& attrs, absl::Span<const ValueType* const> ops) {
  const OpCode code = OpCode::kScatterAdd;
  const ValueType& operand = *ops[0];
  const ValueType& updates = *ops[2];
  if (!IsNumeric(operand.dtype))
    return Error(code, ops, "operand must be numeric");
  if (operand.dtype != updates.dtype)
    return Error(code, ops, "operand and updates dtypes must be equal");
  if (operand.any_dynamic())
    return Error(code, ops, "operand must not have dynamic dimensions");
  absl::StatusOr<ValueType> gathered = InferGather(attrs, ops.subspan(0, 2));
  if (!gathered.ok()) {
    return Error(code, ops,
                 absl::StrCat("operand and indices do not gather: ",
                              gathered.status().message()));
  }
  if (*gathered != updates) {
    return Error(
        code, ops,
        absl::StrCat("updates must have type ", gathered->ToString(),
                     " (operand[:axis] + indices + operand[axis+1:])"));
  }
  return operand;
}

absl::StatusOr<ValueType> InferOneHot(const OpAttrs& attrs,
                                      absl::Span<const ValueType* const> ops) {
  const ValueType& idx = *ops[0];
  if (!IsInteger(idx.dtype))
    return Error(OpCode::kOneHot, ops, "indices must be an integer type");
  if (attrs.depth < 0) {
    return Error(OpCode::kOneHot, ops,
                 absl::StrCat("depth=", attrs.depth, " must be >= 0"));
  }
  if (!IsNumeric(attrs.dtype))
    return Error(OpCode::kOneHot, ops, "dtype must be numeric");
  std::vector<int64_t> dims = idx.shape.dims();
  dims.push_back(attrs.depth);
  return Make(attrs.dtype, std::move(dims), idx.dynamic_dims);
}

absl::StatusOr<ValueType> InferCollective(
    OpCode code, const OpAttrs& attrs, absl::Span<const ValueType* const> ops,
    const InferContext& context) {
  const ValueType& x = *ops[0];
  if (!IsNumeric(x.dtype)) return Error(code, ops, "operand must be numeric");
  if (code == OpCode::kCollectivePermute) {
    std::vector<bool> src(context.num_replicas), dst(context.num_replicas);
    for (const auto& [s, t] : attrs.source_target_pairs) {
      if (s < 0 || s >= context.num_replicas || t < 0 ||
          t >= context.num_replicas) {
        return Error(code, ops,
                     absl::StrCat("source_target_pair (", s, ",", t,
                                  ") names a replica outside [0, ",
                                  context.num_replicas, ")"));
      }
      if (src[s] || dst[t]) {
        return Error(
            code, ops,
            absl::StrCat(
                "source_target_pair (", s, ",", t,
                ") repeats a source or a target; each may appear once"));
      }
      src[s] = dst[t] = true;
    }
    return x;
  }
  TPUSIM_ASSIGN_OR_RETURN(
      auto groups,
      ResolveReplicaGroups(code, attrs.replica_groups, context.num_replicas));
  const int64_t group_size = static_cast<int64_t>(groups[0].size());
  if (attrs.reduce == CollectiveReduce::kMean && !IsFloating(x.dtype) &&
      (code == OpCode::kAllReduce || code == OpCode::kReduceScatter)) {
    return Error(code, ops,
                 "MEAN needs a floating operand (each value is scaled by 1/N, "
                 "which cannot "
                 "scale an integer tensor)");
  }
  if (code == OpCode::kAllReduce) return x;
  if (x.rank() == 0) return Error(code, ops, "operand must have rank >= 1");
  TPUSIM_ASSIGN_OR_RETURN(
      int axis, NormalizeAxis(code, ops, attrs.axis, x.rank(), "axis"));
  std::vector<int64_t> dims = x.shape.dims();
  if (code == OpCode::kAllToAll) {
    TPUSIM_ASSIGN_OR_RETURN(
        int concat,
        NormalizeAxis(code, ops, attrs.concat_axis, x.rank(), "concat_axis"));
    if (x.is_dynamic(axis) || x.is_dynamic(concat)) {
      return Error(code, ops,
                   absl::StrCat("the split axis ", axis, " and concat axis ",
                                concat, " must not be dynamic"));
    }
    if (dims[axis] % group_size != 0) {
      return Error(
          code, ops,
          absl::StrCat("split dimension ", axis, " (", dims[axis],
                       ") must be divisible by the group size ", group_size));
    }
    dims[axis] /= group_size;
    dims[concat] *= group_size;
    return Make(x.dtype, std::move(dims), x.dynamic_dims);
  }
  if (code == OpCode::kAllGather) {
    dims[axis] *= group_size;
    return Make(x.dtype, std::move(dims), x.dynamic_dims);
  }
  // reduce_scatter
  if (x.is_dynamic(axis)) {
    return Error(
        code, ops,
        absl::StrCat("the scatter axis ", axis, " must not be dynamic"));
  }
  if (dims[axis] % group_size != 0) {
    return Error(
        code, ops,
        absl::StrCat("dimension ", axis, " (", dims[axis],
                     ") must be divisible by the group size ", group_size));
  }
  dims[axis] /= group_size;
  return Make(x.dtype, std::move(dims), x.dynamic_dims);
}

}  // namespace

absl::string_view OpCodeName(OpCode code) {
  const int i = static_cast<int>(code);
  if (i < 0 || i >= kNumOpCodes) return "?";
  return kOpInfos[i].name;
}

absl::StatusOr<OpCode> OpCodeFromName(absl::string_view name) {
  for (const OpInfo& info : kOpInfos) {
    if (name == info.name) return info.code;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown op \"", name, "\""));
}

absl::string_view PrecisionName(Precision p) {
  switch (p) {
    case Precision::kDefault:
      return "DEFAULT";
    case Precision::kHigh:
      return "HIGH";
    case Precision::kHighest:
      return "HIGHEST";
  }
  return "?";
}

absl::StatusOr<Precision> PrecisionFromName(absl::string_view name) {
  if (name.empty() || name == "DEFAULT") return Precision::kDefault;
  if (name == "HIGH") return Precision::kHigh;
  if (name == "HIGHEST") return Precision::kHighest;
  return absl::InvalidArgumentError(absl::StrCat(
      "precision \"", name, "\" is not DEFAULT, HIGH or HIGHEST"));
}

bool IsElementwiseUnary(OpCode c) {
  return c >= OpCode::kNeg && c <= OpCode::kCast;
}
bool IsElementwiseBinary(OpCode c) {
  return c >= OpCode::kAdd && c <= OpCode::kMin;
}
bool IsCollective(OpCode c) { return c >= OpCode::kAllReduce; }

bool DependsOnOperandsOnly(OpCode c) {
  return c != OpCode::kParameter && c != OpCode::kReplicaId &&
         c != OpCode::kVariableRead && c != OpCode::kVariableAssign &&
         c != OpCode::kVariableAssignAdd && !IsCollective(c);
}
bool IsTranscendental(OpCode c) {
  return c == OpCode::kExp || c == OpCode::kLog || c == OpCode::kTanh ||
         c == OpCode::kSigmoid || c == OpCode::kRsqrt || c == OpCode::kSqrt;
}

absl::string_view ComparisonName(Comparison c) {
  const int i = static_cast<int>(c);
  if (i < 0 || i >= static_cast<int>(kComparisonNames.size())) return "?";
  return kComparisonNames[i];
}

absl::StatusOr<Comparison> ComparisonFromName(absl::string_view name) {
  for (size_t i = 0; i < kComparisonNames.size(); ++i) {
    if (name == kComparisonNames[i]) return static_cast<Comparison>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "comparison \"", name, "\" is unknown; allowed eq, ne, lt, le, gt, ge"));
}

absl::string_view ShortDTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kBF16:
      return "bf16";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kU8:
      return "u8";
    case DType::kBytes:
      return "bytes";
  }
  return "?";
}

int64_t ValueType::byte_size() const {
  if (!shape.IsFullyDefined()) return 0;
  return shape.num_elements() * DTypeSize(dtype);
}

std::string ValueType::ToString() const {
  std::string out = absl::StrCat(ShortDTypeName(dtype), "[");
  for (int i = 0; i < shape.rank(); ++i) {
    if (i > 0) out += ",";
    if (is_dynamic(i)) out += "<=";
    absl::StrAppend(&out, shape.dim(i));
  }
  out += "]";
  return out;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> ResolveReplicaGroups(
    OpCode code, const std::vector<std::vector<int64_t>>& groups,
    int num_replicas) {
  if (groups.empty()) {
    std::vector<int64_t> all(num_replicas);
    for (int i = 0; i < num_replicas; ++i) all[i] = i;
    return std::vector<std::vector<int64_t>>{std::move(all)};
  }
  std::vector<bool> seen(num_replicas, false);
  for (const auto& g : groups) {
    if (g.empty() || g.size() != groups[0].size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          OpCodeName(code),
          ": replica_groups must be non-empty and of equal size; group {",
          absl::StrJoin(g, ","), "} has ", g.size(), " members, group 0 has ",
          groups[0].size()));
    }
    for (int64_t r : g) {
      if (r < 0 || r >= num_replicas || seen[r]) {
        return absl::InvalidArgumentError(absl::StrCat(
            OpCodeName(code), ": replica_groups member ", r,
            (r < 0 || r >= num_replicas)
                ? absl::StrCat(" is outside [0, ", num_replicas, ")")
                : std::string(" appears twice")));
      }
      seen[r] = true;
    }
  }
  for (int r = 0; r < num_replicas; ++r) {
    if (!seen[r]) {
      return absl::InvalidArgumentError(
          absl::StrCat(OpCodeName(code),
                       ": replica_groups must cover every replica; replica ", r,
                       " of ", num_replicas, " is missing"));
    }
  }
  return groups;
}

namespace {

absl::StatusOr<ValueType> InferOpTypeImpl(
    OpCode code, const OpAttrs& attrs,
    absl::Span<const ValueType* const> operands, const InferContext& context) {
  auto arity = [&](size_t n) -> absl::Status {
    if (operands.size() != n) {
      return Error(
          code, operands,
          absl::StrCat("takes ", n, " operand(s), got ", operands.size()));
    }
    return absl::OkStatus();
  };
  switch (code) {
    case OpCode::kParameter:
    case OpCode::kVariableRead: {
      TPUSIM_RETURN_IF_ERROR(arity(0));
      const ValueType& t = attrs.declared_type;
      if (!t.shape.IsFullyDefined()) {
        return Error(
            code, operands,
            absl::StrCat(
                "declared shape ", t.shape.ToString(),
                " must be fully defined (dynamic dims carry their bound)"));
      }
      if (t.rank() > 64 ||
          (t.rank() < 64 && (t.dynamic_dims >> t.rank()) != 0)) {
        return Error(code, operands,
                     absl::StrCat("dynamic_dims mask ", t.dynamic_dims,
                                  " flags dimensions beyond rank ", t.rank()));
      }
      if (code == OpCode::kVariableRead && t.any_dynamic()) {
        return Error(code, operands,
                     "variables cannot have dynamic dimensions");
      }
      return t;
    }
    case OpCode::kConstant:
      TPUSIM_RETURN_IF_ERROR(arity(0));
      return ValueType::Of(attrs.literal);
    case OpCode::kReplicaId:
      TPUSIM_RETURN_IF_ERROR(arity(0));
      return ValueType(DType::kI32, Shape());
    case OpCode::kVariableAssign:
    case OpCode::kVariableAssignAdd: {
      TPUSIM_RETURN_IF_ERROR(arity(1));
      const ValueType& v = *operands[0];
      const ValueType& decl = attrs.declared_type;
      if (v.dtype != decl.dtype || v.shape != decl.shape || v.any_dynamic()) {
        return Error(
            code, operands,
            absl::StrCat("value must match variable slot ", attrs.variable_slot,
                         " of type ", decl.ToString(), " exactly"));
      }
      if (code == OpCode::kVariableAssignAdd && !IsNumeric(v.dtype)) {
        return Error(code, operands, "value must be numeric");
      }
      return decl;
    }
    case OpCode::kNeg:
    case OpCode::kExp:
    case OpCode::kLog:
    case OpCode::kTanh:
    case OpCode::kRelu:
    case OpCode::kSigmoid:
    case OpCode::kRsqrt:
    case OpCode::kSqrt:
    case OpCode::kCast:
      TPUSIM_RETURN_IF_ERROR(arity(1));
      return InferUnary(code, attrs, operands);
    case OpCode::kAdd:
    case OpCode::kSub:
    case OpCode::kMul:
    case OpCode::kDiv:
    case OpCode::kMax:
    case OpCode::kMin:
      TPUSIM_RETURN_IF_ERROR(arity(2));
      return InferBinary(code, operands);
    case OpCode::kDot:
      TPUSIM_RETURN_IF_ERROR(arity(2));
      return InferDot(attrs, operands);
    case OpCode::kConv2D:
      TPUSIM_RETURN_IF_ERROR(arity(2));
      return InferConv(attrs, operands);
    case OpCode::kMaxPool2D:
      TPUSIM_RETURN_IF_ERROR(arity(1));
      return InferMaxPool(attrs, operands);
    case OpCode::kConv2DBackpropInput:
    case OpCode::kConv2DBackpropFilter:
      TPUSIM_RETURN_IF_ERROR(arity(2));
      return InferConvBackprop(code, attrs, operands);
    case OpCode::kMaxPool2DGrad:
      TPUSIM_RETURN_IF_ERROR(arity(2));
      return InferMaxPoolGrad(attrs, operands);
    case OpCode::kCompare:
      TPUSIM_RETURN_IF_ERROR(arity(2));
      return InferBinary(code, operands);
    case OpCode::kSelect:
      TPUSIM_RETURN_IF_ERROR(arity(3));
      return InferSelect(operands);
    case OpCode::kScatterAdd:
      TPUSIM_RETURN_IF_ERROR(arity(3));
      return InferScatterAdd(attrs, operands);
    case OpCode::kReduceSum:
    case OpCode::kReduceMean:
    case OpCode::kReduceMax:
      TPUSIM_RETURN_IF_ERROR(arity(1));
      return InferReduce(code, attrs, operands);
    case OpCode::kSoftmax: {
      TPUSIM_RETURN_IF_ERROR(arity(1));
      const ValueType& x = *operands[0];
      if (x.rank() < 1)
        return Error(code, operands, "operand must have rank >= 1");
      if (!IsFloating(x.dtype))
        return Error(code, operands, "operand must be floating point");
      return x;
    }
    case OpCode::kReshape:
      TPUSIM_RETURN_IF_ERROR(arity(1));
      return InferReshape(attrs, operands);
    case OpCode::kTranspose:
      TPUSIM_RETURN_IF_ERROR(arity(1));
      return InferTranspose(attrs, operands);
    case OpCode::kBroadcast:
      TPUSIM_RETURN_IF_ERROR(arity(1));
      return InferBroadcast(attrs, operands);
    case OpCode::kSlice:
      TPUSIM_RETURN_IF_ERROR(arity(1));
      return InferSlice(attrs, operands);
    case OpCode::kConcat:
      return InferConcat(attrs, operands);
    case OpCode::kGather:
      TPUSIM_RETURN_IF_ERROR(arity(2));
      return InferGather(attrs, operands);
    case OpCode::kOneHot:
      TPUSIM_RETURN_IF_ERROR(arity(1));
      return InferOneHot(attrs, operands);
    case OpCode::kAllReduce:
    case OpCode::kAllGather:
    case OpCode::kReduceScatter:
    case OpCode::kCollectivePermute:
    case OpCode::kAllToAll:
      TPUSIM_RETURN_IF_ERROR(arity(1));
      return InferCollective(code, attrs, operands, context);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown op code ", static_cast<int>(code)));
}

}  // namespace

absl::StatusOr<ValueType> InferOpType(
    OpCode code, const OpAttrs& attrs,
    absl::Span<const ValueType* const> operands, const InferContext& context) {
  if (attrs.precision != Precision::kDefault && code != OpCode::kDot &&
      code != OpCode::kConv2D) {
    return Error(code, operands,
                 absl::StrCat("precision=", PrecisionName(attrs.precision),
                              " is only allowed on dot and conv2d"));
  }
  TPUSIM_ASSIGN_OR_RETURN(ValueType type,
                          InferOpTypeImpl(code, attrs, operands, context));
  // Element and byte counts must fit in int64 (cost rules multiply further).
  int64_t n = 1;
  for (int64_t d : type.shape.dims()) {
    if (d > 0 && n > (int64_t{1} << 52) / d) {
      return Error(code, operands,
                   absl::StrCat("result shape ", type.ToString(),
                                " has more than 2^52 elements"));
    }
    n *= d;
  }
  // So are the op's cost counts, which later stages only add up.
  TPUSIM_RETURN_IF_ERROR(
      CheckedOpCost(code, attrs, operands, type, context).status());
  return type;
}

namespace {

// Cost arithmetic over user-controlled sizes. Every product and sum is checked;
// the first overflow is remembered and CheckedOpCost reports it.
class CostArith {
 public:
  int64_t Mul(int64_t a, int64_t b) {
    std::optional<int64_t> r = common::CheckedMul(a, b);
    if (!r) overflow_ = true;
    return r.value_or(0);
  }
  int64_t Add(int64_t a, int64_t b) {
    std::optional<int64_t> r = common::CheckedAdd(a, b);
    if (!r) overflow_ = true;
    return r.value_or(0);
  }
  bool overflow() const { return overflow_; }

 private:
  bool overflow_ = false;
};

// The cost rule; `arith` records an overflow of any count.
OpCost ComputeOpCost(OpCode code, const OpAttrs& attrs,
                     absl::Span<const ValueType* const> operands,
                     const ValueType& result, const InferContext& context,
                     CostArith& arith) {
  OpCost cost;
  int64_t read = 0;
  for (const ValueType* t : operands) read = arith.Add(read, t->byte_size());
  const int64_t out_elems = result.shape.num_elements();
  cost.bytes_read = read;
  cost.bytes_written = result.byte_size();
  switch (code) {
    case OpCode::kParameter:
    case OpCode::kConstant:
    case OpCode::kReplicaId:
    case OpCode::kReshape:
      return OpCost{};
    case OpCode::kVariableRead:
      cost.bytes_read = result.byte_size();
      cost.bytes_written = 0;
      return cost;
    case OpCode::kVariableAssign:
      return cost;
    case OpCode::kVariableAssignAdd:
      // The old value is read too.
      cost.bytes_read = arith.Add(cost.bytes_read, result.byte_size());
      cost.flops = out_elems;
      return cost;
    case OpCode::kDot: {
      const ValueType& l = *operands[0];
      int64_t k = 1;
      for (int64_t d : attrs.dot.lhs_contracting) k = arith.Mul(k, l.shape.dim(d));
      cost.flops = arith.Mul(arith.Mul(2, out_elems), k);
      return cost;
    }
    case OpCode::kConv2D: {
      const ValueType& f = *operands[1];
      int64_t macs = out_elems;
      for (int i = 0; i < 3; ++i) macs = arith.Mul(macs, f.shape.dim(i));
      cost.flops = arith.Mul(2, macs);
      return cost;
    }
    case OpCode::kMaxPool2D:
      cost.flops =
          arith.Mul(arith.Mul(out_elems, attrs.window[0]), attrs.window[1]);
      return cost;
    case OpCode::kConv2DBackpropInput: {
      // One convolution of the forward size: 2 * |dy| * Kh * Kw * Ci.
      const ValueType& dy = *operands[0];
      const ValueType& f = *operands[1];
      cost.flops = 2 * dy.shape.num_elements() * f.shape.dim(0) *
                   f.shape.dim(1) * f.shape.dim(2);
      return cost;
    }
    case OpCode::kConv2DBackpropFilter: {
      const ValueType& dy = *operands[1];
      cost.flops = 2 * dy.shape.num_elements() * result.shape.dim(0) *
                   result.shape.dim(1) * result.shape.dim(2);
      return cost;
    }
    case OpCode::kMaxPool2DGrad:
      cost.flops = operands[1]->shape.num_elements() *
                   (attrs.window[0] * attrs.window[1] + 1);
      return cost;
    case OpCode::kCompare:
    case OpCode::kSelect:
      cost.flops = out_elems;
      return cost;
    case OpCode::kScatterAdd:
      cost.flops = operands[2]->shape.num_elements();
      return cost;
    case OpCode::kSlice:
      // A slice reads only the elements it keeps, not its whole operand.
      cost.bytes_read = result.byte_size();
      return cost;
    case OpCode::kGather:
      // A gather reads its indices and the rows it gathers.
      cost.bytes_read = arith.Add(operands[1]->byte_size(), result.byte_size());
      return cost;
    case OpCode::kReduceSum:
    case OpCode::kReduceMean:
    case OpCode::kReduceMax:
      cost.flops = operands[0]->shape.num_elements();
      return cost;
    case OpCode::kSoftmax:
      cost.flops = arith.Mul(4, out_elems);
      cost.transcendentals = out_elems;
      return cost;
    case OpCode::kAllReduce:
    case OpCode::kReduceScatter: {
      auto groups = ResolveReplicaGroups(code, attrs.replica_groups,
                                         context.num_replicas);
      const int64_t n =
          groups.ok() ? static_cast<int64_t>((*groups)[0].size()) : 1;
      cost.flops = arith.Mul(n - 1, operands[0]->shape.num_elements());
      return cost;
    }
    default:
      break;
  }
  if (IsElementwiseUnary(code) || IsElementwiseBinary(code)) {
    cost.flops = out_elems;
    if (IsTranscendental(code)) cost.transcendentals = out_elems;
  }
  return cost;
}

}  // namespace

absl::StatusOr<OpCost> CheckedOpCost(OpCode code, const OpAttrs& attrs,
                                     absl::Span<const ValueType* const> operands,
                                     const ValueType& result,
                                     const InferContext& context) {
  CostArith arith;
  OpCost cost = ComputeOpCost(code, attrs, operands, result, context, arith);
  if (arith.overflow()) {
    return Error(code, operands,
                 absl::StrCat("its cost (FLOPs or bytes) for result ",
                              result.ToString(), " exceeds 2^63"));
  }
  return cost;
}

OpCost OpCostOf(OpCode code, const OpAttrs& attrs,
                absl::Span<const ValueType* const> operands,
                const ValueType& result, const InferContext& context) {
  absl::StatusOr<OpCost> cost =
      CheckedOpCost(code, attrs, operands, result, context);
  TPUSIM_CHECK(cost.ok()) << cost.status();
  return *cost;
}

}  // namespace tpusim::runtime
