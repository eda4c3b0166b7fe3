#include "strategy/runtime/kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/int_math.h"

namespace tpusim::runtime {
namespace {

// ---- element types ----

// The type arithmetic runs in: bf16 computes in f32 (rounded to nearest even on
// output).
template <typename T>
struct ComputeOf {
  using type = T;
};
template <>
struct ComputeOf<BFloat16> {
  using type = float;
};
template <typename T>
using C = typename ComputeOf<T>::type;

template <typename T>
C<T> Load(T v) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    return v.ToFloat();
  } else {
    return v;
  }
}
template <typename T>
T Store(C<T> v) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16::FromFloat(v);
  } else {
    return v;
  }
}

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<C<T>>;

// Calls fn(T{}) for any dtype (data movement ops also move strings).
template <typename Fn>
auto VisitAny(DType dtype, Fn&& fn) {
  if (dtype == DType::kBytes) return fn(std::string{});
  return VisitNumeric(dtype, std::forward<Fn>(fn));
}

// Integer arithmetic wraps (two's complement) instead of overflowing.
using common::WrapAdd;
using common::WrapMul;
using common::WrapSub;

// NaN-propagating max/min.
template <typename V>
V NanMax(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<V>::quiet_NaN();
  }
  return a < b ? b : a;
}
template <typename V>
V NanMin(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<V>::quiet_NaN();
  }
  return b < a ? b : a;
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * dims[i + 1];
  return s;
}

// Calls fn(out_flat, in_offset) for every element of `out_dims`, where
// in_offset advances by in_strides (a stride may be 0 for a broadcast
// dimension).
template <typename Fn>
void ForEachIndex(const std::vector<int64_t>& out_dims,
                  const std::vector<int64_t>& in_strides, Fn&& fn) {
  const int rank = static_cast<int>(out_dims.size());
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  if (total == 0) return;
  std::vector<int64_t> idx(rank, 0);
  int64_t offset = 0;
  for (int64_t flat = 0; flat < total; ++flat) {
    fn(flat, offset);
    for (int i = rank - 1; i >= 0; --i) {
      if (++idx[i] < out_dims[i]) {
        offset += in_strides[i];
        break;
      }
      offset -= in_strides[i] * (out_dims[i] - 1);
      idx[i] = 0;
    }
  }
}

// Strides of `in` broadcast (numpy rules) to `out_dims`.
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in_dims,
                                      const std::vector<int64_t>& out_dims) {
  const int rank = static_cast<int>(out_dims.size());
  const int in_rank = static_cast<int>(in_dims.size());
  std::vector<int64_t> in_s = Strides(in_dims);
  std::vector<int64_t> s(rank, 0);
  for (int i = 0; i < rank; ++i) {
    const int j = i - (rank - in_rank);
    if (j >= 0 && in_dims[j] != 1) s[i] = in_s[j];
  }
  return s;
}

absl::Status KernelError(OpCode code, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(OpCodeName(code), ": ", what));
}

// A fresh tensor of `type`'s shape; returns its writable values.
template <typename T>
absl::Span<T> NewOutput(const ValueType& type, Tensor* out) {
  *out = Tensor::Zeros(type.dtype, type.shape);
  return out->mutable_values<T>();
}

// Permutes `in` (dims `in_dims`) so that out dim i = in dim perm[i].
template <typename T>
void PermuteInto(absl::Span<const T> in, const std::vector<int64_t>& in_dims,
                 const std::vector<int64_t>& perm, absl::Span<T> out) {
  std::vector<int64_t> in_s = Strides(in_dims);
  std::vector<int64_t> out_dims(perm.size()), s(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out_dims[i] = in_dims[perm[i]];
    s[i] = in_s[perm[i]];
  }
  ForEachIndex(out_dims, s,
               [&](int64_t flat, int64_t off) { out[flat] = in[off]; });
}

// ---- elementwise ----

template <typename T>
absl::StatusOr<Tensor> UnaryKernel(OpCode code, const Tensor& x,
                                   const ValueType& result) {
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  absl::Span<const T> in = x.values<T>();
  using V = C<T>;
  for (int64_t i = 0; i < static_cast<int64_t>(in.size()); ++i) {
    const V v = Load(in[i]);
    V r{};
    switch (code) {
      case OpCode::kNeg:
        if constexpr (std::is_integral_v<V>) {
          r = WrapSub<V>(0, v);
        } else {
          r = -v;
        }
        break;
      case OpCode::kRelu:
        if constexpr (std::is_floating_point_v<V>) {
          r = std::isnan(v) ? v : (v > 0 ? v : V(0));
        } else {
          r = v > 0 ? v : V(0);
        }
        break;
      default:
        if constexpr (std::is_floating_point_v<V>) {
          switch (code) {
            case OpCode::kExp:
              r = std::exp(v);
              break;
            case OpCode::kLog:
              r = std::log(v);
              break;
            case OpCode::kTanh:
              r = std::tanh(v);
              break;
            case OpCode::kSigmoid:
              r = V(1) / (V(1) + std::exp(-v));
              break;
            case OpCode::kRsqrt:
              r = V(1) / std::sqrt(v);
              break;
            case OpCode::kSqrt:
              r = std::sqrt(v);
              break;
            default:
              return KernelError(code, "not a unary op");
          }
        } else {
          return KernelError(code, "needs a floating operand");
        }
    }
    o[i] = Store<T>(r);
  }
  return out;
}

template <typename T>
absl::StatusOr<Tensor> BinaryKernel(OpCode code, const Tensor& a,
                                    const Tensor& b, const ValueType& result) {
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  absl::Span<const T> va = a.values<T>();
  absl::Span<const T> vb = b.values<T>();
  using V = C<T>;
  bool div_by_zero = false;
  auto apply = [&](V x, V y) -> V {
    switch (code) {
      case OpCode::kAdd:
        if constexpr (std::is_integral_v<V>)
          return WrapAdd(x, y);
        else
          return x + y;
      case OpCode::kSub:
        if constexpr (std::is_integral_v<V>)
          return WrapSub(x, y);
        else
          return x - y;
      case OpCode::kMul:
        if constexpr (std::is_integral_v<V>)
          return WrapMul(x, y);
        else
          return x * y;
      case OpCode::kDiv:
        if constexpr (std::is_integral_v<V>) {
          if (y == 0) {
            div_by_zero = true;
            return 0;
          }
          if constexpr (std::is_signed_v<V>) {
            if (y == -1)
              return WrapSub<V>(0, x);  // avoids INT_MIN / -1 overflow
          }
          return x / y;  // truncates toward zero
        } else {
          return x / y;
        }
      case OpCode::kMax:
        return NanMax(x, y);
      case OpCode::kMin:
        return NanMin(x, y);
      default:
        return V{};
    }
  };
  const auto& dims = result.shape.dims();
  if (a.shape().dims() == dims && b.shape().dims() == dims) {
    for (size_t i = 0; i < o.size(); ++i)
      o[i] = Store<T>(apply(Load(va[i]), Load(vb[i])));
  } else {
    std::vector<int64_t> sa = BroadcastStrides(a.shape().dims(), dims);
    std::vector<int64_t> sb = BroadcastStrides(b.shape().dims(), dims);
    // Walk once for a's offsets and once for b's (both in output order).
    std::vector<int64_t> offb(o.size());
    ForEachIndex(dims, sb,
                 [&](int64_t flat, int64_t off) { offb[flat] = off; });
    ForEachIndex(dims, sa, [&](int64_t flat, int64_t off) {
      o[flat] = Store<T>(apply(Load(va[off]), Load(vb[offb[flat]])));
    });
  }
  if (div_by_zero) return KernelError(code, "integer division by zero");
  return out;
}

// ---- dot ----

template <typename T>
absl::StatusOr<Tensor> DotKernel(const OpAttrs& attrs, const Tensor& l,
                                 const Tensor& r, const ValueType& result) {
  const DotDims& d = attrs.dot;
  const auto& ld = l.shape().dims();
  const auto& rd = r.shape().dims();
  // lhs -> [batch, free, contracting]; rhs -> [batch, contracting, free].
  std::vector<bool> lused(ld.size()), rused(rd.size());
  for (int64_t i : d.lhs_batch) lused[i] = true;
  for (int64_t i : d.lhs_contracting) lused[i] = true;
  for (int64_t i : d.rhs_batch) rused[i] = true;
  for (int64_t i : d.rhs_contracting) rused[i] = true;
  std::vector<int64_t> lperm(d.lhs_batch.begin(), d.lhs_batch.end());
  std::vector<int64_t> rperm(d.rhs_batch.begin(), d.rhs_batch.end());
  int64_t batch = 1, m = 1, n = 1, k = 1;
  for (int64_t i : d.lhs_batch) batch *= ld[i];
  for (size_t i = 0; i < ld.size(); ++i) {
    if (!lused[i]) {
      lperm.push_back(i);
      m *= ld[i];
    }
  }
  for (size_t i = 0; i < d.lhs_contracting.size(); ++i) {
    lperm.push_back(d.lhs_contracting[i]);
    rperm.push_back(d.rhs_contracting[i]);
    k *= ld[d.lhs_contracting[i]];
    if (ld[d.lhs_contracting[i]] != rd[d.rhs_contracting[i]]) {
      return KernelError(
          OpCode::kDot,
          absl::StrCat("contracting dimension ", i,
                       " true sizes differ: ", ld[d.lhs_contracting[i]], " vs ",
                       rd[d.rhs_contracting[i]]));
    }
  }
  for (size_t i = 0; i < rd.size(); ++i) {
    if (!rused[i]) {
      rperm.push_back(i);
      n *= rd[i];
    }
  }
  using V = C<T>;
  // Widen to the compute type while permuting.
  std::vector<T> lt(l.num_elements()), rt(r.num_elements());
  PermuteInto<T>(l.values<T>(), ld, lperm, absl::MakeSpan(lt));
  PermuteInto<T>(r.values<T>(), rd, rperm, absl::MakeSpan(rt));
  std::vector<V> lc(lt.size()), rc(rt.size());
  for (size_t i = 0; i < lt.size(); ++i) lc[i] = Load(lt[i]);
  for (size_t i = 0; i < rt.size(); ++i) rc[i] = Load(rt[i]);
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  // Row-at-a-time (i, p, j) loop order for cache locality. Every output
  // element still accumulates its products in ascending p, starting from 0,
  // so the result is the same as a plain dot product per element.
  std::vector<V> row(n);
  for (int64_t b = 0; b < batch; ++b) {
    const V* lb = lc.data() + b * m * k;
    const V* rb = rc.data() + b * k * n;
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), V(0));
      for (int64_t p = 0; p < k; ++p) {
        const V a = lb[i * k + p];
        const V* r = rb + p * n;
        for (int64_t j = 0; j < n; ++j) {
          if constexpr (std::is_integral_v<V>) {
            row[j] = WrapAdd(row[j], WrapMul(a, r[j]));
          } else {
            row[j] += a * r[j];
          }
        }
      }
      for (int64_t j = 0; j < n; ++j) o[(b * m + i) * n + j] = Store<T>(row[j]);
    }
  }
  return out;
}

// ---- conv2d ----

template <typename T>
absl::StatusOr<Tensor> ConvKernel(const OpAttrs& attrs, const Tensor& in,
                                  const Tensor& f, const ValueType& result) {
  using V = C<T>;
  const auto& id = in.shape().dims();    // N H W Ci
  const auto& fd = f.shape().dims();     // Kh Kw Ci Co
  const auto& od = result.shape.dims();  // N Ho Wo Co
  int64_t pad[2] = {0, 0};
  if (attrs.padding == Padding::kSame) {
    for (int i = 0; i < 2; ++i) {
      const int64_t total = std::max<int64_t>(
          (od[1 + i] - 1) * attrs.window_strides[i] + fd[i] - id[1 + i], 0);
      pad[i] = total / 2;
    }
  }
  absl::Span<const T> x = in.values<T>();
  absl::Span<const T> w = f.values<T>();
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  const int64_t H = id[1], W = id[2], Ci = id[3], Kh = fd[0], Kw = fd[1],
                Co = fd[3];
  for (int64_t nb = 0; nb < od[0]; ++nb) {
    for (int64_t oh = 0; oh < od[1]; ++oh) {
      for (int64_t ow = 0; ow < od[2]; ++ow) {
        for (int64_t co = 0; co < Co; ++co) {
          V acc = 0;
          for (int64_t kh = 0; kh < Kh; ++kh) {
            const int64_t ih = oh * attrs.window_strides[0] + kh - pad[0];
            if (ih < 0 || ih >= H) continue;
            for (int64_t kw = 0; kw < Kw; ++kw) {
              const int64_t iw = ow * attrs.window_strides[1] + kw - pad[1];
              if (iw < 0 || iw >= W) continue;
              for (int64_t ci = 0; ci < Ci; ++ci) {
                const V a = Load(x[((nb * H + ih) * W + iw) * Ci + ci]);
                const V b = Load(w[((kh * Kw + kw) * Ci + ci) * Co + co]);
                if constexpr (std::is_integral_v<V>) {
                  acc = WrapAdd(acc, WrapMul(a, b));
                } else {
                  acc += a * b;
                }
              }
            }
          }
          o[((nb * od[1] + oh) * od[2] + ow) * Co + co] = Store<T>(acc);
        }
      }
    }
  }
  return out;
}

template <typename T>
absl::StatusOr<Tensor> MaxPoolKernel(const OpAttrs& attrs, const Tensor& in,
                                     const ValueType& result) {
  using V = C<T>;
  const auto& id = in.shape().dims();    // N H W C
  const auto& od = result.shape.dims();  // N Ho Wo C
  int64_t pad[2] = {0, 0};
  if (attrs.padding == Padding::kSame) {
    for (int i = 0; i < 2; ++i) {
      const int64_t total =
          std::max<int64_t>((od[1 + i] - 1) * attrs.window_strides[i] +
                                attrs.window[i] - id[1 + i],
                            0);
      pad[i] = total / 2;
    }
  }
  absl::Span<const T> x = in.values<T>();
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  const int64_t H = id[1], W = id[2], Ch = id[3];
  for (int64_t nb = 0; nb < od[0]; ++nb) {
    for (int64_t oh = 0; oh < od[1]; ++oh) {
      for (int64_t ow = 0; ow < od[2]; ++ow) {
        for (int64_t c = 0; c < Ch; ++c) {
          V best;
          if constexpr (std::is_floating_point_v<V>) {
            best = -std::numeric_limits<V>::infinity();
          } else {
            best = std::numeric_limits<V>::lowest();
          }
          for (int64_t kh = 0; kh < attrs.window[0]; ++kh) {
            const int64_t ih = oh * attrs.window_strides[0] + kh - pad[0];
            if (ih < 0 || ih >= H) continue;
            for (int64_t kw = 0; kw < attrs.window[1]; ++kw) {
              const int64_t iw = ow * attrs.window_strides[1] + kw - pad[1];
              if (iw < 0 || iw >= W) continue;
              best = NanMax(best, Load(x[((nb * H + ih) * W + iw) * Ch + c]));
            }
          }
          o[((nb * od[1] + oh) * od[2] + ow) * Ch + c] = Store<T>(best);
        }
      }
    }
  }
  return out;
}

// ---- gradients of conv2d and max_pool2d ----

// The forward op's top/left padding of spatial dim i (SAME pads total/2 before,
// the rest after; VALID pads nothing).
int64_t PadBefore(const OpAttrs& attrs, int i, int64_t in_size, int64_t k,
                  int64_t out_size) {
  if (attrs.padding != Padding::kSame) return 0;
  return std::max<int64_t>(
             (out_size - 1) * attrs.window_strides[i] + k - in_size, 0) /
         2;
}

template <typename V>
V MulAdd(V acc, V a, V b) {
  if constexpr (std::is_integral_v<V>) {
    return WrapAdd(acc, WrapMul(a, b));
  } else {
    return acc + a * b;
  }
}

// dx[n, ih, iw, ci] = sum over (oh, ow, kh, kw, co) with ih = oh*s + kh - pad
// of dy[n, oh, ow, co] * w[kh, kw, ci, co]. Accumulates in the compute type,
// in the loop order below (deterministic).
template <typename T>
absl::StatusOr<Tensor> ConvBackpropInputKernel(const OpAttrs& attrs,
                                               const Tensor& dy,
                                               const Tensor& f,
                                               const ValueType& result) {
  using V = C<T>;
  const auto& dd = dy.shape().dims();    // N Ho Wo Co
  const auto& fd = f.shape().dims();     // Kh Kw Ci Co
  const auto& xd = result.shape.dims();  // N H W Ci
  const int64_t H = xd[1], W = xd[2], Ci = xd[3], Kh = fd[0], Kw = fd[1],
                Co = fd[3];
  const int64_t ph = PadBefore(attrs, 0, H, Kh, dd[1]);
  const int64_t pw = PadBefore(attrs, 1, W, Kw, dd[2]);
  absl::Span<const T> g = dy.values<T>();
  absl::Span<const T> w = f.values<T>();
  std::vector<V> acc(result.shape.num_elements(), V(0));
  for (int64_t nb = 0; nb < dd[0]; ++nb) {
    for (int64_t oh = 0; oh < dd[1]; ++oh) {
      for (int64_t ow = 0; ow < dd[2]; ++ow) {
        for (int64_t kh = 0; kh < Kh; ++kh) {
          const int64_t ih = oh * attrs.window_strides[0] + kh - ph;
          if (ih < 0 || ih >= H) continue;
          for (int64_t kw = 0; kw < Kw; ++kw) {
            const int64_t iw = ow * attrs.window_strides[1] + kw - pw;
            if (iw < 0 || iw >= W) continue;
            V* dx = &acc[((nb * H + ih) * W + iw) * Ci];
            for (int64_t ci = 0; ci < Ci; ++ci) {
              for (int64_t co = 0; co < Co; ++co) {
                dx[ci] = MulAdd<V>(
                    dx[ci], Load(g[((nb * dd[1] + oh) * dd[2] + ow) * Co + co]),
                    Load(w[((kh * Kw + kw) * Ci + ci) * Co + co]));
              }
            }
          }
        }
      }
    }
  }
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  for (size_t i = 0; i < acc.size(); ++i) o[i] = Store<T>(acc[i]);
  return out;
}

// dw[kh, kw, ci, co] = sum over (n, oh, ow) of x[n, ih, iw, ci] *
// dy[n, oh, ow, co].
template <typename T>
absl::StatusOr<Tensor> ConvBackpropFilterKernel(const OpAttrs& attrs,
                                                const Tensor& in,
                                                const Tensor& dy,
                                                const ValueType& result) {
  using V = C<T>;
  const auto& xd = in.shape().dims();    // N H W Ci
  const auto& dd = dy.shape().dims();    // N Ho Wo Co
  const auto& fd = result.shape.dims();  // Kh Kw Ci Co
  const int64_t H = xd[1], W = xd[2], Ci = xd[3], Kh = fd[0], Kw = fd[1],
                Co = fd[3];
  const int64_t ph = PadBefore(attrs, 0, H, Kh, dd[1]);
  const int64_t pw = PadBefore(attrs, 1, W, Kw, dd[2]);
  absl::Span<const T> x = in.values<T>();
  absl::Span<const T> g = dy.values<T>();
  std::vector<V> acc(result.shape.num_elements(), V(0));
  for (int64_t kh = 0; kh < Kh; ++kh) {
    for (int64_t kw = 0; kw < Kw; ++kw) {
      V* dw = &acc[(kh * Kw + kw) * Ci * Co];
      for (int64_t nb = 0; nb < dd[0]; ++nb) {
        for (int64_t oh = 0; oh < dd[1]; ++oh) {
          const int64_t ih = oh * attrs.window_strides[0] + kh - ph;
          if (ih < 0 || ih >= H) continue;
          for (int64_t ow = 0; ow < dd[2]; ++ow) {
            const int64_t iw = ow * attrs.window_strides[1] + kw - pw;
            if (iw < 0 || iw >= W) continue;
            const T* xr = &x[((nb * H + ih) * W + iw) * Ci];
            const T* gr = &g[((nb * dd[1] + oh) * dd[2] + ow) * Co];
            for (int64_t ci = 0; ci < Ci; ++ci) {
              const V a = Load(xr[ci]);
              for (int64_t co = 0; co < Co; ++co)
                dw[ci * Co + co] = MulAdd<V>(dw[ci * Co + co], a, Load(gr[co]));
            }
          }
        }
      }
    }
  }
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  for (size_t i = 0; i < acc.size(); ++i) o[i] = Store<T>(acc[i]);
  return out;
}

// Each dy element goes to the first maximum (row-major window scan) of its
// window among the unpadded positions; a NaN counts as the maximum (the forward
// op propagates it). Windows that overlap add.
template <typename T>
absl::StatusOr<Tensor> MaxPoolGradKernel(const OpAttrs& attrs, const Tensor& in,
                                         const Tensor& dy,
                                         const ValueType& result) {
  using V = C<T>;
  const auto& id = in.shape().dims();  // N H W C
  const auto& dd = dy.shape().dims();  // N Ho Wo C
  const int64_t H = id[1], W = id[2], Ch = id[3];
  const int64_t ph = PadBefore(attrs, 0, H, attrs.window[0], dd[1]);
  const int64_t pw = PadBefore(attrs, 1, W, attrs.window[1], dd[2]);
  absl::Span<const T> x = in.values<T>();
  absl::Span<const T> g = dy.values<T>();
  std::vector<V> acc(result.shape.num_elements(), V(0));
  for (int64_t nb = 0; nb < dd[0]; ++nb) {
    for (int64_t oh = 0; oh < dd[1]; ++oh) {
      for (int64_t ow = 0; ow < dd[2]; ++ow) {
        for (int64_t c = 0; c < Ch; ++c) {
          int64_t best = -1;
          V best_v{};
          for (int64_t kh = 0; kh < attrs.window[0]; ++kh) {
            const int64_t ih = oh * attrs.window_strides[0] + kh - ph;
            if (ih < 0 || ih >= H) continue;
            for (int64_t kw = 0; kw < attrs.window[1]; ++kw) {
              const int64_t iw = ow * attrs.window_strides[1] + kw - pw;
              if (iw < 0 || iw >= W) continue;
              const int64_t at = ((nb * H + ih) * W + iw) * Ch + c;
              const V v = Load(x[at]);
              bool better = best < 0 || v > best_v;
              if constexpr (std::is_floating_point_v<V>) {
                if (best >= 0 && std::isnan(best_v)) better = false;
                if (best >= 0 && std::isnan(v) && !std::isnan(best_v))
                  better = true;
              }
              if (better) {
                best = at;
                best_v = v;
              }
            }
          }
          if (best < 0) continue;  // a window entirely in the padding
          const V d = Load(g[((nb * dd[1] + oh) * dd[2] + ow) * Ch + c]);
          if constexpr (std::is_integral_v<V>) {
            acc[best] = WrapAdd(acc[best], d);
          } else {
            acc[best] += d;
          }
        }
      }
    }
  }
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  for (size_t i = 0; i < acc.size(); ++i) o[i] = Store<T>(acc[i]);
  return out;
}

// ---- compare, select ----

// Offsets into `t` (broadcast to `dims`) for every output element, in order.
std::vector<int64_t> BroadcastOffsets(const Tensor& t,
                                      const std::vector<int64_t>& dims) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> off(total);
  ForEachIndex(dims, BroadcastStrides(t.shape().dims(), dims),
               [&](int64_t flat, int64_t o) { off[flat] = o; });
  return off;
}

template <typename T>
absl::StatusOr<Tensor> CompareKernel(const OpAttrs& attrs, const Tensor& a,
                                     const Tensor& b, const ValueType& result) {
  Tensor out;
  absl::Span<uint8_t> o = NewOutput<uint8_t>(result, &out);
  absl::Span<const T> va = a.values<T>();
  absl::Span<const T> vb = b.values<T>();
  const std::vector<int64_t> oa = BroadcastOffsets(a, result.shape.dims());
  const std::vector<int64_t> ob = BroadcastOffsets(b, result.shape.dims());
  for (size_t i = 0; i < o.size(); ++i) {
    const auto x = Load(va[oa[i]]);
    const auto y = Load(vb[ob[i]]);
    bool r = false;  // IEEE: every comparison with NaN is false except ne
    switch (attrs.comparison) {
      case Comparison::kEq:
        r = x == y;
        break;
      case Comparison::kNe:
        r = x != y;
        break;
      case Comparison::kLt:
        r = x < y;
        break;
      case Comparison::kLe:
        r = x <= y;
        break;
      case Comparison::kGt:
        r = x > y;
        break;
      case Comparison::kGe:
        r = x >= y;
        break;
    }
    o[i] = r ? 1 : 0;
  }
  return out;
}

template <typename T>
absl::StatusOr<Tensor> SelectKernel(const Tensor& p, const Tensor& a,
                                    const Tensor& b, const ValueType& result) {
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  absl::Span<const uint8_t> vp = p.values<uint8_t>();
  absl::Span<const T> va = a.values<T>();
  absl::Span<const T> vb = b.values<T>();
  const std::vector<int64_t> op = BroadcastOffsets(p, result.shape.dims());
  const std::vector<int64_t> oa = BroadcastOffsets(a, result.shape.dims());
  const std::vector<int64_t> ob = BroadcastOffsets(b, result.shape.dims());
  for (size_t i = 0; i < o.size(); ++i)
    o[i] = vp[op[i]] != 0 ? va[oa[i]] : vb[ob[i]];
  return out;
}

// ---- reductions ----

template <typename T>
absl::StatusOr<Tensor> ReduceKernel(OpCode code, const OpAttrs& attrs,
                                    const Tensor& x, const ValueType& result) {
  using V = C<T>;
  const std::vector<int64_t> dims = x.shape().dims();
  const int rank = static_cast<int>(dims.size());
  std::vector<bool> mask(rank, false);
  for (int64_t a : attrs.axes) mask[a < 0 ? a + rank : a] = true;
  // Output strides over the input's dims (0 on reduced dims).
  std::vector<int64_t> kept;
  for (int i = 0; i < rank; ++i) {
    if (!mask[i]) kept.push_back(dims[i]);
  }
  std::vector<int64_t> kept_s = Strides(kept);
  std::vector<int64_t> s(rank, 0);
  int64_t count = 1;
  for (int i = 0, j = 0; i < rank; ++i) {
    if (mask[i]) {
      count *= dims[i];
    } else {
      s[i] = kept_s[j++];
    }
  }
  const int64_t out_n = result.shape.num_elements();
  V init = 0;
  if (code == OpCode::kReduceMax) {
    if constexpr (std::is_floating_point_v<V>) {
      init = -std::numeric_limits<V>::infinity();
    } else {
      init = std::numeric_limits<V>::lowest();
    }
  }
  std::vector<V> acc(out_n, init);
  absl::Span<const T> in = x.values<T>();
  ForEachIndex(dims, s, [&](int64_t flat, int64_t off) {
    const V v = Load(in[flat]);
    if (code == OpCode::kReduceMax) {
      acc[off] = NanMax(acc[off], v);
    } else if constexpr (std::is_integral_v<V>) {
      acc[off] = WrapAdd(acc[off], v);
    } else {
      acc[off] += v;
    }
  });
  if (code == OpCode::kReduceMean) {
    if constexpr (std::is_integral_v<V>) {
      if (count == 0)
        return KernelError(code, "mean over an empty integer axis");
      for (V& v : acc) v = static_cast<V>(v / static_cast<V>(count));
    } else {
      for (V& v : acc) v = v / static_cast<V>(count);
    }
  }
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  for (int64_t i = 0; i < out_n; ++i) o[i] = Store<T>(acc[i]);
  return out;
}

template <typename T>
absl::StatusOr<Tensor> SoftmaxKernel(const Tensor& x, const ValueType& result) {
  using V = C<T>;
  const int64_t row = x.shape().dims().back();
  const int64_t rows = row == 0 ? 0 : x.num_elements() / row;
  absl::Span<const T> in = x.values<T>();
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  std::vector<V> e(row);
  for (int64_t r = 0; r < rows; ++r) {
    V m = -std::numeric_limits<V>::infinity();
    for (int64_t i = 0; i < row; ++i) m = NanMax(m, Load(in[r * row + i]));
    V sum = 0;
    for (int64_t i = 0; i < row; ++i) {
      e[i] = std::exp(Load(in[r * row + i]) - m);
      sum += e[i];
    }
    for (int64_t i = 0; i < row; ++i) o[r * row + i] = Store<T>(e[i] / sum);
  }
  return out;
}

// ---- data movement ----

template <typename T>
absl::StatusOr<Tensor> TransposeKernel(const OpAttrs& attrs, const Tensor& x,
                                       const ValueType& result) {
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  PermuteInto<T>(x.values<T>(), x.shape().dims(), attrs.permutation, o);
  return out;
}

template <typename T>
absl::StatusOr<Tensor> BroadcastKernel(const Tensor& x,
                                       const ValueType& result) {
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  absl::Span<const T> in = x.values<T>();
  ForEachIndex(result.shape.dims(),
               BroadcastStrides(x.shape().dims(), result.shape.dims()),
               [&](int64_t flat, int64_t off) { o[flat] = in[off]; });
  return out;
}

template <typename T>
absl::StatusOr<Tensor> SliceKernel(const OpAttrs& attrs, const Tensor& x,
                                   const ValueType& result) {
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  absl::Span<const T> in = x.values<T>();
  std::vector<int64_t> in_s = Strides(x.shape().dims());
  std::vector<int64_t> s(in_s.size());
  int64_t base = 0;
  for (size_t i = 0; i < in_s.size(); ++i) {
    const int64_t st = attrs.strides.empty() ? 1 : attrs.strides[i];
    s[i] = in_s[i] * st;
    base += attrs.start[i] * in_s[i];
  }
  ForEachIndex(result.shape.dims(), s,
               [&](int64_t flat, int64_t off) { o[flat] = in[base + off]; });
  return out;
}

template <typename T>
absl::StatusOr<Tensor> ConcatKernel(const OpAttrs& attrs,
                                    absl::Span<const Tensor* const> xs,
                                    const ValueType& result) {
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  const auto& dims = result.shape.dims();
  const int rank = static_cast<int>(dims.size());
  const int axis =
      static_cast<int>(attrs.axis < 0 ? attrs.axis + rank : attrs.axis);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= dims[i];
  for (int i = axis + 1; i < rank; ++i) inner *= dims[i];
  int64_t pos = 0;
  for (int64_t ob = 0; ob < outer; ++ob) {
    for (const Tensor* x : xs) {
      const int64_t chunk = x->shape().dim(axis) * inner;
      absl::Span<const T> in = x->values<T>();
      for (int64_t i = 0; i < chunk; ++i) o[pos++] = in[ob * chunk + i];
    }
  }
  return out;
}

template <typename T>
absl::StatusOr<Tensor> GatherKernel(const OpAttrs& attrs, const Tensor& p,
                                    const Tensor& idx,
                                    const ValueType& result) {
  const auto& pd = p.shape().dims();
  const int rank = static_cast<int>(pd.size());
  const int axis =
      static_cast<int>(attrs.axis < 0 ? attrs.axis + rank : attrs.axis);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= pd[i];
  for (int i = axis + 1; i < rank; ++i) inner *= pd[i];
  const int64_t limit = pd[axis];
  const int64_t n_idx = idx.num_elements();
  for (int64_t j = 0; j < n_idx; ++j) {
    const int64_t v = idx.AsInt64(j);
    if (v < 0 || v >= limit) {
      return KernelError(OpCode::kGather,
                         absl::StrCat("index ", v, " (element ", j,
                                      " of indices) is out of "
                                      "range [0, ",
                                      limit, ") of params dimension ", axis));
    }
  }
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  absl::Span<const T> in = p.values<T>();
  int64_t pos = 0;
  for (int64_t ob = 0; ob < outer; ++ob) {
    for (int64_t j = 0; j < n_idx; ++j) {
      const int64_t row = idx.AsInt64(j);
      for (int64_t i = 0; i < inner; ++i)
        o[pos++] = in[(ob * limit + row) * inner + i];
    }
  }
  return out;
}

// result = operand; result[..., indices[j], ...] += updates[..., j, ...]
// (the transpose of gather), adding in update order.
template <typename T>
absl::StatusOr<Tensor> ScatterAddKernel(const OpAttrs& attrs,
                                        const Tensor& operand,
                                        const Tensor& idx, const Tensor& upd,
                                        const ValueType& result) {
  using V = C<T>;
  const auto& pd = operand.shape().dims();
  const int rank = static_cast<int>(pd.size());
  const int axis =
      static_cast<int>(attrs.axis < 0 ? attrs.axis + rank : attrs.axis);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= pd[i];
  for (int i = axis + 1; i < rank; ++i) inner *= pd[i];
  const int64_t limit = pd[axis];
  const int64_t n_idx = idx.num_elements();
  for (int64_t j = 0; j < n_idx; ++j) {
    const int64_t v = idx.AsInt64(j);
    if (v < 0 || v >= limit) {
      return KernelError(OpCode::kScatterAdd,
                         absl::StrCat("index ", v, " (element ", j,
                                      " of indices) is out of range [0, ",
                                      limit, ") of operand dimension ", axis));
    }
  }
  absl::Span<const T> base = operand.values<T>();
  std::vector<V> acc(base.size());
  for (size_t i = 0; i < base.size(); ++i) acc[i] = Load(base[i]);
  absl::Span<const T> u = upd.values<T>();
  int64_t pos = 0;
  for (int64_t ob = 0; ob < outer; ++ob) {
    for (int64_t j = 0; j < n_idx; ++j) {
      const int64_t row = idx.AsInt64(j);
      V* dst = &acc[(ob * limit + row) * inner];
      for (int64_t i = 0; i < inner; ++i) {
        if constexpr (std::is_integral_v<V>) {
          dst[i] = WrapAdd(dst[i], Load(u[pos++]));
        } else {
          dst[i] += Load(u[pos++]);
        }
      }
    }
  }
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  for (size_t i = 0; i < acc.size(); ++i) o[i] = Store<T>(acc[i]);
  return out;
}

template <typename T>
absl::StatusOr<Tensor> OneHotKernel(const OpAttrs& attrs, const Tensor& idx,
                                    const ValueType& result) {
  Tensor out;
  absl::Span<T> o = NewOutput<T>(result, &out);
  // tf.one_hot: an index outside [0, depth) gives a row of off_value.
  const T on = VisitNumeric(result.dtype, [&](auto) -> T {
    if constexpr (std::is_same_v<T, BFloat16>) {
      return BFloat16::FromFloat(static_cast<float>(attrs.on_value));
    } else {
      return static_cast<T>(attrs.on_value);
    }
  });
  const T off = VisitNumeric(result.dtype, [&](auto) -> T {
    if constexpr (std::is_same_v<T, BFloat16>) {
      return BFloat16::FromFloat(static_cast<float>(attrs.off_value));
    } else {
      return static_cast<T>(attrs.off_value);
    }
  });
  const int64_t depth = attrs.depth;
  for (int64_t j = 0; j < idx.num_elements(); ++j) {
    const int64_t v = idx.AsInt64(j);
    for (int64_t d = 0; d < depth; ++d) o[j * depth + d] = d == v ? on : off;
  }
  return out;
}

// ---- collective helpers ----

template <typename T>
Tensor SumOf(absl::Span<const Tensor* const> xs, bool mean,
             const ValueType& type) {
  using V = C<T>;
  const int64_t n = type.shape.num_elements();
  std::vector<V> acc(n, V(0));
  const V scale = mean ? V(1) / static_cast<V>(xs.size()) : V(1);
  for (const Tensor* x : xs) {  // group order, never arrival order
    absl::Span<const T> v = x->values<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_integral_v<V>) {
        acc[i] = WrapAdd(acc[i], Load(v[i]));
      } else {
        acc[i] += mean ? Load(v[i]) * scale : Load(v[i]);
      }
    }
  }
  Tensor out;
  absl::Span<T> o = NewOutput<T>(type, &out);
  for (int64_t i = 0; i < n; ++i) o[i] = Store<T>(acc[i]);
  return out;
}

std::string ShapesOf(absl::Span<const Tensor* const> xs) {
  std::vector<std::string> parts;
  for (const Tensor* x : xs) parts.push_back(x->spec().ToString());
  return absl::StrJoin(parts, ", ");
}

}  // namespace

absl::StatusOr<Tensor> RunKernel(OpCode code, const OpAttrs& attrs,
                                 absl::Span<const Tensor* const> operands,
                                 const ValueType& result, int replica_id) {
  switch (code) {
    case OpCode::kConstant:
      return attrs.literal;
    case OpCode::kReplicaId:
      return Tensor::Scalar<int32_t>(replica_id);
    case OpCode::kParameter:
    case OpCode::kVariableRead:
    case OpCode::kVariableAssign:
      return absl::UnimplementedError(absl::StrCat(
          OpCodeName(code), " is executed by the backend, not by a kernel"));
    default:
      break;
  }
  if (IsCollective(code)) {
    return absl::UnimplementedError(
        absl::StrCat(OpCodeName(code), " is a collective; use RunCollective"));
  }
  for (const Tensor* t : operands) {
    if (!t->has_data()) return Tensor::Abstract(result.dtype, result.shape);
  }
  if (code == OpCode::kReshape) return operands[0]->Reshape(result.shape);
  if (code == OpCode::kCast) return operands[0]->Cast(attrs.dtype);
  if (code == OpCode::kVariableAssignAdd) {
    return VisitNumeric(result.dtype, [&](auto zero) {
      return BinaryKernel<decltype(zero)>(OpCode::kAdd, *operands[0],
                                          *operands[1], result);
    });
  }
  if (IsElementwiseUnary(code)) {
    return VisitNumeric(result.dtype, [&](auto zero) {
      return UnaryKernel<decltype(zero)>(code, *operands[0], result);
    });
  }
  if (IsElementwiseBinary(code)) {
    return VisitNumeric(result.dtype, [&](auto zero) {
      return BinaryKernel<decltype(zero)>(code, *operands[0], *operands[1],
                                          result);
    });
  }
  switch (code) {
    case OpCode::kDot:
      return VisitNumeric(result.dtype, [&](auto zero) {
        return DotKernel<decltype(zero)>(attrs, *operands[0], *operands[1],
                                         result);
      });
    case OpCode::kConv2D:
      return VisitNumeric(result.dtype, [&](auto zero) {
        return ConvKernel<decltype(zero)>(attrs, *operands[0], *operands[1],
                                          result);
      });
    case OpCode::kMaxPool2D:
      return VisitNumeric(result.dtype, [&](auto zero) {
        return MaxPoolKernel<decltype(zero)>(attrs, *operands[0], result);
      });
    case OpCode::kConv2DBackpropInput:
      return VisitNumeric(result.dtype, [&](auto zero) {
        return ConvBackpropInputKernel<decltype(zero)>(attrs, *operands[0],
                                                       *operands[1], result);
      });
    case OpCode::kConv2DBackpropFilter:
      return VisitNumeric(result.dtype, [&](auto zero) {
        return ConvBackpropFilterKernel<decltype(zero)>(attrs, *operands[0],
                                                        *operands[1], result);
      });
    case OpCode::kMaxPool2DGrad:
      return VisitNumeric(result.dtype, [&](auto zero) {
        return MaxPoolGradKernel<decltype(zero)>(attrs, *operands[0],
                                                 *operands[1], result);
      });
    case OpCode::kCompare:
      return VisitNumeric(operands[0]->dtype(), [&](auto zero) {
        return CompareKernel<decltype(zero)>(attrs, *operands[0], *operands[1],
                                             result);
      });
    case OpCode::kSelect:
      return VisitNumeric(result.dtype, [&](auto zero) {
        return SelectKernel<decltype(zero)>(*operands[0], *operands[1],
                                            *operands[2], result);
      });
    case OpCode::kScatterAdd:
      return VisitNumeric(result.dtype, [&](auto zero) {
        return ScatterAddKernel<decltype(zero)>(
            attrs, *operands[0], *operands[1], *operands[2], result);
      });
    case OpCode::kReduceSum:
    case OpCode::kReduceMean:
    case OpCode::kReduceMax:
      return VisitNumeric(result.dtype, [&](auto zero) {
        return ReduceKernel<decltype(zero)>(code, attrs, *operands[0], result);
      });
    case OpCode::kSoftmax:
      return VisitNumeric(
          result.dtype, [&](auto zero) -> absl::StatusOr<Tensor> {
            using T = decltype(zero);
            if constexpr (kIsFloat<T>) {
              return SoftmaxKernel<T>(*operands[0], result);
            } else {
              return KernelError(code, "needs a floating operand");
            }
          });
    case OpCode::kTranspose:
      return VisitAny(result.dtype, [&](auto zero) {
        return TransposeKernel<decltype(zero)>(attrs, *operands[0], result);
      });
    case OpCode::kBroadcast:
      return VisitAny(result.dtype, [&](auto zero) {
        return BroadcastKernel<decltype(zero)>(*operands[0], result);
      });
    case OpCode::kSlice:
      return VisitAny(result.dtype, [&](auto zero) {
        return SliceKernel<decltype(zero)>(attrs, *operands[0], result);
      });
    case OpCode::kConcat:
      return VisitAny(result.dtype, [&](auto zero) {
        return ConcatKernel<decltype(zero)>(attrs, operands, result);
      });
    case OpCode::kGather:
      return VisitAny(result.dtype, [&](auto zero) {
        return GatherKernel<decltype(zero)>(attrs, *operands[0], *operands[1],
                                            result);
      });
    case OpCode::kOneHot:
      return VisitNumeric(result.dtype, [&](auto zero) {
        return OneHotKernel<decltype(zero)>(attrs, *operands[0], result);
      });
    default:
      break;
  }
  return absl::UnimplementedError(
      absl::StrCat("no host kernel for ", OpCodeName(code)));
}

absl::StatusOr<std::vector<Tensor>> RunCollective(
    OpCode code, const OpAttrs& attrs, absl::Span<const Tensor* const> operands,
    absl::Span<const ValueType> results) {
  const size_t n = operands.size();
  TPUSIM_CHECK_EQ(n, results.size());
  std::vector<Tensor> out;
  out.reserve(n);
  bool abstract = false;
  for (const Tensor* t : operands) abstract = abstract || !t->has_data();
  if (code == OpCode::kCollectivePermute) {
    std::vector<int> source_of(n, -1);
    for (const auto& [s, t] : attrs.source_target_pairs)
      source_of[t] = static_cast<int>(s);
    for (size_t r = 0; r < n; ++r) {
      const int s = source_of[r];
      if (s >= 0 && operands[s]->shape() != operands[r]->shape()) {
        return KernelError(
            code,
            absl::StrCat("replica ", s, " sends ",
                         operands[s]->spec().ToString(), " to replica ", r,
                         " whose operand is ", operands[r]->spec().ToString()));
      }
      if (abstract) {
        out.push_back(Tensor::Abstract(results[r].dtype, results[r].shape));
      } else if (s >= 0) {
        out.push_back(*operands[s]);
      } else {
        out.push_back(Tensor::Zeros(results[r].dtype, results[r].shape));
      }
    }
    return out;
  }
  // Every member must agree on the shape (all_gather: except along its axis).
  const Tensor& first = *operands[0];
  for (size_t i = 1; i < n; ++i) {
    const Tensor& t = *operands[i];
    bool same = t.dtype() == first.dtype() && t.rank() == first.rank();
    for (int d = 0; same && d < t.rank(); ++d) {
      const bool gather_axis =
          code == OpCode::kAllGather &&
          d == (attrs.axis < 0 ? attrs.axis + t.rank() : attrs.axis);
      same = gather_axis || t.shape().dim(d) == first.shape().dim(d);
    }
    if (!same) {
      return KernelError(
          code, absl::StrCat("replica group members have different operand "
                             "shapes: ",
                             ShapesOf(operands)));
    }
  }
  if (abstract) {
    for (size_t i = 0; i < n; ++i) {
      out.push_back(Tensor::Abstract(results[i].dtype, results[i].shape));
    }
    return out;
  }
  switch (code) {
    case OpCode::kAllReduce: {
      const bool mean = attrs.reduce == CollectiveReduce::kMean;
      Tensor sum = VisitNumeric(first.dtype(), [&](auto zero) {
        return SumOf<decltype(zero)>(operands, mean, results[0]);
      });
      out.assign(n, sum);
      return out;
    }
    case OpCode::kAllGather: {
      const int rank = first.rank();
      const int axis =
          static_cast<int>(attrs.axis < 0 ? attrs.axis + rank : attrs.axis);
      OpAttrs concat;
      concat.axis = axis;
      std::vector<int64_t> dims = first.shape().dims();
      dims[axis] = 0;
      for (const Tensor* t : operands) dims[axis] += t->shape().dim(axis);
      ValueType type(first.dtype(), Shape(dims));
      TPUSIM_ASSIGN_OR_RETURN(
          Tensor all, RunKernel(OpCode::kConcat, concat, operands, type, 0));
      out.assign(n, all);
      return out;
    }
    case OpCode::kAllToAll: {
      // Member j receives piece j (along the split axis) of every member, and
      // concatenates them in group order along concat_axis.
      const int rank = first.rank();
      const int split =
          static_cast<int>(attrs.axis < 0 ? attrs.axis + rank : attrs.axis);
      const int64_t part = first.shape().dim(split) / static_cast<int64_t>(n);
      for (size_t j = 0; j < n; ++j) {
        std::vector<Tensor> pieces;
        pieces.reserve(n);
        for (size_t i = 0; i < n; ++i) {
          OpAttrs slice;
          slice.start.assign(rank, 0);
          slice.limit = operands[i]->shape().dims();
          slice.start[split] = static_cast<int64_t>(j) * part;
          slice.limit[split] = static_cast<int64_t>(j + 1) * part;
          std::vector<int64_t> dims = slice.limit;
          dims[split] = part;
          TPUSIM_ASSIGN_OR_RETURN(
              Tensor piece,
              RunKernel(OpCode::kSlice, slice, {operands[i]},
                        ValueType(first.dtype(), Shape(dims)), 0));
          pieces.push_back(std::move(piece));
        }
        std::vector<const Tensor*> ptrs;
        for (const Tensor& t : pieces) ptrs.push_back(&t);
        OpAttrs concat;
        concat.axis = attrs.concat_axis < 0 ? attrs.concat_axis + rank
                                            : attrs.concat_axis;
        TPUSIM_ASSIGN_OR_RETURN(Tensor all, RunKernel(OpCode::kConcat, concat,
                                                      ptrs, results[j], 0));
        out.push_back(std::move(all));
      }
      return out;
    }
    case OpCode::kReduceScatter: {
      const bool mean = attrs.reduce == CollectiveReduce::kMean;
      ValueType full(first.dtype(), first.shape());
      Tensor sum = VisitNumeric(first.dtype(), [&](auto zero) {
        return SumOf<decltype(zero)>(operands, mean, full);
      });
      const int rank = first.rank();
      const int axis =
          static_cast<int>(attrs.axis < 0 ? attrs.axis + rank : attrs.axis);
      const int64_t part = first.shape().dim(axis) / static_cast<int64_t>(n);
      for (size_t i = 0; i < n; ++i) {
        OpAttrs slice;
        slice.start.assign(rank, 0);
        slice.limit = first.shape().dims();
        slice.start[axis] = static_cast<int64_t>(i) * part;
        slice.limit[axis] = static_cast<int64_t>(i + 1) * part;
        TPUSIM_ASSIGN_OR_RETURN(Tensor piece, RunKernel(OpCode::kSlice, slice,
                                                        {&sum}, results[i], 0));
        out.push_back(std::move(piece));
      }
      return out;
    }
    default:
      break;
  }
  return absl::UnimplementedError(
      absl::StrCat(OpCodeName(code), " is not a collective"));
}

}  // namespace tpusim::runtime
