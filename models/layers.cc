#include "models/layers.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tpusim::models {

using runtime::Comparison;
using runtime::DotDims;
using runtime::DType;
using runtime::Padding;
using runtime::Shape;
using runtime::Tensor;
using runtime::ValueType;

#define ASSIGN TPUSIM_ASSIGN_OR_RETURN
#define RETURN_IF TPUSIM_RETURN_IF_ERROR

absl::StatusOr<TracedValue> Zeros(ReplicaContext& ctx, DType dtype,
                                  std::vector<int64_t> dims) {
  ASSIGN(TracedValue z, ctx.ScalarConstant(0, dtype));
  return ctx.Broadcast(z, std::move(dims));
}

bool Tape::NeedsGrad(TracedValue v) const {
  for (int id : inputs_)
    if (id == v.id) return false;
  return true;
}

absl::StatusOr<TracedValue> Tape::Param(int index) {
  ASSIGN(TracedValue v, s_.Param(index));
  ++param_uses_[index];
  return v;
}

std::optional<TracedValue> Tape::GradOf(TracedValue v) const {
  auto it = grads_.find(v.id);
  if (it == grads_.end()) return std::nullopt;
  return it->second;
}

absl::Status Tape::Accumulate(TracedValue v, TracedValue g) {
  if (!NeedsGrad(v)) return absl::OkStatus();
  auto it = grads_.find(v.id);
  if (it == grads_.end()) {
    grads_.emplace(v.id, g);
    return absl::OkStatus();
  }
  ASSIGN(TracedValue sum, ctx().Add(it->second, g));
  it->second = sum;
  return absl::OkStatus();
}

absl::Status Tape::ParamGrad(int index, TracedValue g) {
  auto it = param_grads_.find(index);
  if (it != param_grads_.end()) {
    ASSIGN(g, ctx().Add(it->second, g));
  }
  if (--param_uses_[index] > 0) {
    param_grads_[index] = g;
    return absl::OkStatus();
  }
  param_grads_.erase(index);
  return s_.Grad(index, g);
}

absl::Status Tape::Backward() {
  for (auto it = backward_.rbegin(); it != backward_.rend(); ++it) {
    RETURN_IF((*it)());
  }
  return absl::OkStatus();
}

namespace {

// The gradient of `y`, or an error if backward reached a layer whose output
// received none (a layer whose output is unused).
absl::StatusOr<TracedValue> Dy(Tape& t, TracedValue y) {
  std::optional<TracedValue> g = t.GradOf(y);
  if (!g.has_value()) {
    return absl::InternalError(
        absl::StrCat("value %", y.id, " reached backward without a gradient"));
  }
  return *g;
}

}  // namespace

absl::StatusOr<TracedValue> Dense(Tape& t, TracedValue x, int w_index,
                                  int b_index) {
  ReplicaContext& c = t.ctx();
  ASSIGN(TracedValue w, t.Param(w_index));
  ASSIGN(TracedValue y, c.MatMul(x, w));
  std::optional<TracedValue> b;
  if (b_index >= 0) {
    ASSIGN(b, t.Param(b_index));
    ASSIGN(y, c.Add(y, *b));
  }
  t.Record([&t, x, w, y, w_index, b_index]() -> absl::Status {
    ReplicaContext& c = t.ctx();
    ASSIGN(TracedValue dy, Dy(t, y));
    ASSIGN(TracedValue dw, c.MatMul(x, dy, /*transpose_a=*/true));
    RETURN_IF(t.ParamGrad(w_index, dw));
    if (b_index >= 0) {
      ASSIGN(TracedValue db, c.ReduceSum(dy, {0}));
      RETURN_IF(t.ParamGrad(b_index, db));
    }
    if (t.NeedsGrad(x)) {
      ASSIGN(TracedValue dx, c.MatMul(dy, w, false, /*transpose_b=*/true));
      RETURN_IF(t.Accumulate(x, dx));
    }
    return absl::OkStatus();
  });
  return y;
}

absl::StatusOr<TracedValue> Relu(Tape& t, TracedValue x) {
  ASSIGN(TracedValue y, t.ctx().Relu(x));
  t.Record([&t, x, y]() -> absl::Status {
    ReplicaContext& c = t.ctx();
    ASSIGN(TracedValue dy, Dy(t, y));
    ASSIGN(TracedValue zero, t.s().Scalar(0));
    ASSIGN(TracedValue pos, c.Compare(x, zero, Comparison::kGt));
    ASSIGN(TracedValue dx, c.Select(pos, dy, zero));
    return t.Accumulate(x, dx);
  });
  return y;
}

absl::StatusOr<TracedValue> Tanh(Tape& t, TracedValue x) {
  ASSIGN(TracedValue y, t.ctx().Tanh(x));
  t.Record([&t, x, y]() -> absl::Status {
    ReplicaContext& c = t.ctx();
    ASSIGN(TracedValue dy, Dy(t, y));
    ASSIGN(TracedValue one, t.s().Scalar(1));
    ASSIGN(TracedValue y2, c.Mul(y, y));
    ASSIGN(TracedValue d, c.Sub(one, y2));
    ASSIGN(TracedValue dx, c.Mul(dy, d));
    return t.Accumulate(x, dx);
  });
  return y;
}

// gelu(x) = 0.5 x (1 + tanh(u)), u = k (x + 0.044715 x^3), k = sqrt(2/pi);
// gelu'(x) = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) k (1 + 3*0.044715 x^2).
absl::StatusOr<TracedValue> Gelu(Tape& t, TracedValue x) {
  ReplicaContext& c = t.ctx();
  StepContext& s = t.s();
  const double k = std::sqrt(2.0 / M_PI);
  ASSIGN(TracedValue x2, c.Mul(x, x));
  ASSIGN(TracedValue a, s.Scalar(0.044715));
  ASSIGN(TracedValue ax2, c.Mul(x2, a));
  ASSIGN(TracedValue one, s.Scalar(1));
  ASSIGN(TracedValue inner, c.Add(ax2, one));
  ASSIGN(TracedValue kk, s.Scalar(k));
  ASSIGN(TracedValue kx, c.Mul(x, kk));
  ASSIGN(TracedValue u, c.Mul(kx, inner));
  ASSIGN(TracedValue th, c.Tanh(u));
  ASSIGN(TracedValue half, s.Scalar(0.5));
  ASSIGN(TracedValue opt, c.Add(th, one));
  ASSIGN(TracedValue hx, c.Mul(x, half));
  ASSIGN(TracedValue y, c.Mul(hx, opt));
  t.Record([&t, x, x2, th, opt, hx, y, k]() -> absl::Status {
    ReplicaContext& c = t.ctx();
    StepContext& s = t.s();
    ASSIGN(TracedValue dy, Dy(t, y));
    ASSIGN(TracedValue half, s.Scalar(0.5));
    ASSIGN(TracedValue one, s.Scalar(1));
    ASSIGN(TracedValue a3, s.Scalar(3 * 0.044715));
    ASSIGN(TracedValue kk, s.Scalar(k));
    ASSIGN(TracedValue t1, c.Mul(opt, half));
    ASSIGN(TracedValue th2, c.Mul(th, th));
    ASSIGN(TracedValue sech2, c.Sub(one, th2));
    ASSIGN(TracedValue b, c.Mul(x2, a3));
    ASSIGN(TracedValue b1, c.Add(b, one));
    ASSIGN(TracedValue kb, c.Mul(b1, kk));
    ASSIGN(TracedValue t2a, c.Mul(hx, sech2));
    ASSIGN(TracedValue t2, c.Mul(t2a, kb));
    ASSIGN(TracedValue d, c.Add(t1, t2));
    ASSIGN(TracedValue dx, c.Mul(dy, d));
    return t.Accumulate(x, dx);
  });
  return y;
}

absl::StatusOr<TracedValue> Add(Tape& t, TracedValue a, TracedValue b) {
  ASSIGN(TracedValue y, t.ctx().Add(a, b));
  t.Record([&t, a, b, y]() -> absl::Status {
    ASSIGN(TracedValue dy, Dy(t, y));
    RETURN_IF(t.Accumulate(a, dy));
    return t.Accumulate(b, dy);
  });
  return y;
}

absl::StatusOr<TracedValue> Norm(Tape& t, TracedValue x, int gamma_index,
                                 int beta_index, std::vector<int64_t> axes,
                                 double eps) {
  ReplicaContext& c = t.ctx();
  ASSIGN(ValueType xt, c.TypeOf(x));
  const int rank = xt.rank();
  // The axes gamma and beta are reduced over in backward: all but the last.
  std::vector<int64_t> outer;
  for (int i = 0; i < rank - 1; ++i) outer.push_back(i);
  ASSIGN(TracedValue g, t.Param(gamma_index));
  ASSIGN(TracedValue b, t.Param(beta_index));
  // The statistics in one pass over x, as XLA's batch-norm expander and
  // Flax's fast variance take them: var = max(0, E[x^2] - E[x]^2). The two
  // means are sibling reductions of x: one fused kernel reads x once.
  ASSIGN(TracedValue mean, c.ReduceMean(x, axes, /*keepdims=*/true));
  ASSIGN(TracedValue x2, c.Mul(x, x));
  ASSIGN(TracedValue mean_x2, c.ReduceMean(x2, axes, true));
  ASSIGN(TracedValue mean2, c.Mul(mean, mean));
  ASSIGN(TracedValue diff, c.Sub(mean_x2, mean2));
  ASSIGN(TracedValue zero, t.s().Scalar(0));
  ASSIGN(TracedValue var, c.Maximum(diff, zero));
  ASSIGN(TracedValue e, t.s().Scalar(eps));
  ASSIGN(TracedValue ve, c.Add(var, e));
  ASSIGN(TracedValue rstd, c.Rsqrt(ve));
  ASSIGN(TracedValue xc, c.Sub(x, mean));
  ASSIGN(TracedValue xhat, c.Mul(xc, rstd));
  ASSIGN(TracedValue yg, c.Mul(xhat, g));
  ASSIGN(TracedValue y, c.Add(yg, b));
  // Elements each statistic is taken over.
  int64_t m = 1;
  for (int64_t a : axes) {
    m *= xt.shape.dims()[static_cast<size_t>(a < 0 ? a + rank : a)];
  }
  t.Record([&t, x, g, xhat, rstd, y, axes, outer, gamma_index, beta_index,
            m]() -> absl::Status {
    ReplicaContext& c = t.ctx();
    ASSIGN(TracedValue dy, Dy(t, y));
    ASSIGN(TracedValue dyx, c.Mul(dy, xhat));
    ASSIGN(TracedValue dg, c.ReduceSum(dyx, outer));
    ASSIGN(TracedValue db, c.ReduceSum(dy, outer));
    RETURN_IF(t.ParamGrad(gamma_index, dg));
    RETURN_IF(t.ParamGrad(beta_index, db));
    if (!t.NeedsGrad(x)) return absl::OkStatus();
    if (axes == outer) {
      // Batch norm: the statistics are taken over the same axes as the
      // parameter gradients, so mean(dxhat) = g*db/m and mean(dxhat*xhat) =
      // g*dg/m (as XLA's batch-norm-grad expander: one reduction pass, then
      // one elementwise pass). dx = g*rstd*(dy - db/m - xhat*dg/m).
      ASSIGN(TracedValue inv_m, t.s().Scalar(1.0 / static_cast<double>(m)));
      ASSIGN(TracedValue db_m, c.Mul(db, inv_m));
      ASSIGN(TracedValue dg_m, c.Mul(dg, inv_m));
      ASSIGN(TracedValue a1, c.Sub(dy, db_m));
      ASSIGN(TracedValue xg, c.Mul(xhat, dg_m));
      ASSIGN(TracedValue a2, c.Sub(a1, xg));
      ASSIGN(TracedValue gr, c.Mul(g, rstd));
      ASSIGN(TracedValue dx, c.Mul(a2, gr));
      return t.Accumulate(x, dx);
    }
    // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
    ASSIGN(TracedValue dxhat, c.Mul(dy, g));
    ASSIGN(TracedValue m1, c.ReduceMean(dxhat, axes, true));
    ASSIGN(TracedValue dxx, c.Mul(dxhat, xhat));
    ASSIGN(TracedValue m2, c.ReduceMean(dxx, axes, true));
    ASSIGN(TracedValue xm2, c.Mul(xhat, m2));
    ASSIGN(TracedValue a1, c.Sub(dxhat, m1));
    ASSIGN(TracedValue a2, c.Sub(a1, xm2));
    ASSIGN(TracedValue dx, c.Mul(a2, rstd));
    return t.Accumulate(x, dx);
  });
  return y;
}

absl::StatusOr<TracedValue> Conv(Tape& t, TracedValue x, int w_index,
                                 int64_t stride) {
  ReplicaContext& c = t.ctx();
  ASSIGN(TracedValue w, t.Param(w_index));
  ASSIGN(ValueType xt, c.TypeOf(x));
  ASSIGN(ValueType wt, c.TypeOf(w));
  ASSIGN(TracedValue y, c.Conv2D(x, w, {stride, stride}, Padding::kSame));
  t.Record([&t, x, w, y, w_index, stride, xt, wt]() -> absl::Status {
    ReplicaContext& c = t.ctx();
    ASSIGN(TracedValue dy, Dy(t, y));
    ASSIGN(TracedValue dw,
           c.Conv2DBackpropFilter(x, dy, wt.shape.dims(), {stride, stride},
                                  Padding::kSame));
    RETURN_IF(t.ParamGrad(w_index, dw));
    if (!t.NeedsGrad(x)) return absl::OkStatus();
    ASSIGN(TracedValue dx,
           c.Conv2DBackpropInput(dy, w, xt.shape.dims(), {stride, stride},
                                 Padding::kSame));
    return t.Accumulate(x, dx);
  });
  return y;
}

absl::StatusOr<TracedValue> MaxPool(Tape& t, TracedValue x, int64_t window,
                                    int64_t stride) {
  ASSIGN(TracedValue y, t.ctx().MaxPool2D(x, {window, window}, {stride, stride},
                                          Padding::kSame));
  t.Record([&t, x, y, window, stride]() -> absl::Status {
    ASSIGN(TracedValue dy, Dy(t, y));
    ASSIGN(TracedValue dx,
           t.ctx().MaxPool2DGrad(x, dy, {window, window}, {stride, stride},
                                 Padding::kSame));
    return t.Accumulate(x, dx);
  });
  return y;
}

absl::StatusOr<TracedValue> GlobalAvgPool(Tape& t, TracedValue x) {
  ReplicaContext& c = t.ctx();
  ASSIGN(ValueType xt, c.TypeOf(x));
  ASSIGN(TracedValue y, c.ReduceMean(x, {1, 2}));
  t.Record([&t, x, y, xt]() -> absl::Status {
    ReplicaContext& c = t.ctx();
    ASSIGN(TracedValue dy, Dy(t, y));
    const auto& d = xt.shape.dims();
    ASSIGN(TracedValue scale,
           t.s().Scalar(1.0 / static_cast<double>(d[1] * d[2])));
    ASSIGN(TracedValue ds, c.Mul(dy, scale));
    ASSIGN(TracedValue d4, c.Reshape(ds, {d[0], 1, 1, d[3]}));
    ASSIGN(TracedValue dx, c.Broadcast(d4, d));
    return t.Accumulate(x, dx);
  });
  return y;
}

absl::StatusOr<TracedValue> Embed(Tape& t, int table_index, TracedValue ids) {
  ReplicaContext& c = t.ctx();
  ASSIGN(TracedValue table, t.Param(table_index));
  ASSIGN(ValueType tt, c.TypeOf(table));
  ASSIGN(TracedValue y, c.Gather(table, ids, 0));
  t.Record([&t, ids, y, tt, table_index]() -> absl::Status {
    ReplicaContext& c = t.ctx();
    ASSIGN(TracedValue dy, Dy(t, y));
    ASSIGN(TracedValue zeros, Zeros(c, tt.dtype, tt.shape.dims()));
    ASSIGN(TracedValue dt, c.ScatterAdd(zeros, ids, dy, 0));
    return t.ParamGrad(table_index, dt);
  });
  return y;
}

absl::StatusOr<TracedValue> Reshape(Tape& t, TracedValue x,
                                    std::vector<int64_t> shape) {
  ReplicaContext& c = t.ctx();
  ASSIGN(ValueType xt, c.TypeOf(x));
  ASSIGN(TracedValue y, c.Reshape(x, std::move(shape)));
  t.Record([&t, x, y, xt]() -> absl::Status {
    ASSIGN(TracedValue dy, Dy(t, y));
    ASSIGN(TracedValue dx, t.ctx().Reshape(dy, xt.shape.dims()));
    return t.Accumulate(x, dx);
  });
  return y;
}

namespace {

DotDims Batched(int64_t lhs_contract, int64_t rhs_contract) {
  DotDims d;
  d.lhs_batch = {0, 1};
  d.rhs_batch = {0, 1};
  d.lhs_contracting = {lhs_contract};
  d.rhs_contracting = {rhs_contract};
  return d;
}

}  // namespace

absl::StatusOr<TracedValue> Attention(Tape& t, TracedValue q, TracedValue k,
                                      TracedValue v, int64_t batch, int64_t seq,
                                      int64_t heads, bool causal) {
  ReplicaContext& c = t.ctx();
  ASSIGN(ValueType qt, c.TypeOf(q));
  const int64_t d = qt.shape.dim(1);
  const int64_t dh = d / heads;
  auto split = [&](TracedValue x) -> absl::StatusOr<TracedValue> {
    ASSIGN(TracedValue r, c.Reshape(x, {batch, seq, heads, dh}));
    return c.Transpose(r, {0, 2, 1, 3});  // [B, H, S, Dh]
  };
  ASSIGN(TracedValue q4, split(q));
  ASSIGN(TracedValue k4, split(k));
  ASSIGN(TracedValue v4, split(v));
  ASSIGN(TracedValue scores, c.DotGeneral(q4, k4, Batched(3, 3)));
  ASSIGN(TracedValue scale, t.s().Scalar(1.0 / std::sqrt(double(dh))));
  ASSIGN(TracedValue scaled, c.Mul(scores, scale));
  if (causal) {
    // -1e9 above the diagonal (a constant [S, S] mask).
    std::vector<float> m(seq * seq, 0.0f);
    for (int64_t i = 0; i < seq; ++i)
      for (int64_t j = i + 1; j < seq; ++j) m[i * seq + j] = -1e9f;
    ASSIGN(Tensor mask,
           Tensor::FromVector<float>(Shape({seq, seq}), std::move(m))
               .Cast(t.s().dtype()));
    ASSIGN(TracedValue mv, c.Constant(std::move(mask)));
    ASSIGN(scaled, c.Add(scaled, mv));
  }
  ASSIGN(TracedValue p, c.Softmax(scaled));
  ASSIGN(TracedValue ctx4, c.DotGeneral(p, v4, Batched(3, 2)));
  ASSIGN(TracedValue ctxt, c.Transpose(ctx4, {0, 2, 1, 3}));
  ASSIGN(TracedValue y, c.Reshape(ctxt, {batch * seq, d}));
  t.Record([&t, q, k, v, q4, k4, v4, p, scale, y, batch, seq, heads, dh,
            d]() -> absl::Status {
    ReplicaContext& c = t.ctx();
    ASSIGN(TracedValue dy, Dy(t, y));
    ASSIGN(TracedValue dy4, c.Reshape(dy, {batch, seq, heads, dh}));
    ASSIGN(TracedValue dctx, c.Transpose(dy4, {0, 2, 1, 3}));
    ASSIGN(TracedValue dp, c.DotGeneral(dctx, v4, Batched(3, 3)));
    ASSIGN(TracedValue dv, c.DotGeneral(p, dctx, Batched(2, 2)));
    // Softmax backward: ds = p * (dp - sum(dp * p)).
    ASSIGN(TracedValue dpp, c.Mul(dp, p));
    ASSIGN(TracedValue sum, c.ReduceSum(dpp, {3}, true));
    ASSIGN(TracedValue diff, c.Sub(dp, sum));
    ASSIGN(TracedValue ds0, c.Mul(p, diff));
    ASSIGN(TracedValue ds, c.Mul(ds0, scale));
    ASSIGN(TracedValue dq, c.DotGeneral(ds, k4, Batched(3, 2)));
    ASSIGN(TracedValue dk, c.DotGeneral(ds, q4, Batched(2, 2)));
    auto merge = [&](TracedValue x4) -> absl::StatusOr<TracedValue> {
      ASSIGN(TracedValue tr, c.Transpose(x4, {0, 2, 1, 3}));
      return c.Reshape(tr, {batch * seq, d});
    };
    ASSIGN(TracedValue dq2, merge(dq));
    ASSIGN(TracedValue dk2, merge(dk));
    ASSIGN(TracedValue dv2, merge(dv));
    RETURN_IF(t.Accumulate(q, dq2));
    RETURN_IF(t.Accumulate(k, dk2));
    return t.Accumulate(v, dv2);
  });
  return y;
}

absl::StatusOr<TracedValue> SoftmaxCrossEntropy(Tape& t, TracedValue logits,
                                                TracedValue labels) {
  ReplicaContext& c = t.ctx();
  ASSIGN(ValueType lt, c.TypeOf(logits));
  const int64_t m = lt.shape.dim(0);
  const int64_t classes = lt.shape.dim(1);
  // f32 (f64 when the compute dtype is f64).
  const DType acc = lt.dtype == DType::kF64 ? DType::kF64 : DType::kF32;
  TracedValue l32 = logits;
  if (lt.dtype != acc) {
    ASSIGN(l32, c.Cast(logits, acc));
  }
  ASSIGN(TracedValue p, c.Softmax(l32));
  ASSIGN(TracedValue onehot, c.OneHot(labels, classes, acc));
  ASSIGN(TracedValue tiny, c.ScalarConstant(1e-30, acc));
  ASSIGN(TracedValue pc, c.Maximum(p, tiny));
  ASSIGN(TracedValue logp, c.Log(pc));
  ASSIGN(TracedValue picked, c.Mul(onehot, logp));
  ASSIGN(TracedValue total, c.ReduceSum(picked, {0, 1}));
  ASSIGN(TracedValue neg_inv_m, c.ScalarConstant(-1.0 / double(m), acc));
  ASSIGN(TracedValue loss, c.Mul(total, neg_inv_m));
  // d loss / d logits = (p - onehot) / m.
  ASSIGN(TracedValue diff, c.Sub(p, onehot));
  ASSIGN(TracedValue inv_m, c.ScalarConstant(1.0 / double(m), acc));
  ASSIGN(TracedValue dl, c.Mul(diff, inv_m));
  if (lt.dtype != acc) {
    ASSIGN(dl, c.Cast(dl, lt.dtype));
  }
  RETURN_IF(t.Accumulate(logits, dl));
  return loss;
}

}  // namespace tpusim::models
