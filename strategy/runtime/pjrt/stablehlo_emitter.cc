#include "strategy/runtime/pjrt/stablehlo_emitter.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace tpusim::runtime::pjrt {
namespace {

// The program name as an MLIR symbol: [A-Za-z0-9_], "program" when empty.
std::string SymbolName(const std::string& name) {
  std::string out;
  for (char c : name) out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out.empty() ? "program" : out;
}

std::string Ints(const std::vector<int64_t>& v) { return absl::StrJoin(v, ", "); }

// `array<i64: 1, 2>` (StableHLO's DenseI64ArrayAttr).
std::string I64Array(const std::vector<int64_t>& v) {
  if (v.empty()) return "array<i64>";
  return absl::StrCat("array<i64: ", Ints(v), ">");
}

// dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, for replica groups and pairs.
std::string I64Matrix(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<std::string> parts;
  for (const auto& r : rows) parts.push_back(absl::StrCat("[", Ints(r), "]"));
  const size_t cols = rows.empty() ? 0 : rows[0].size();
  return absl::StrCat("dense<[", absl::StrJoin(parts, ", "), "]> : tensor<",
                      rows.size(), "x", cols, "xi64>");
}

std::string HexBytes(absl::Span<const uint8_t> bytes) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "0x";
  for (uint8_t b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

class Emitter {
 public:
  explicit Emitter(const Program& p) : p_(p) {}

  absl::StatusOr<EmittedModule> Run();

 private:
  // ---- types ----
  absl::StatusOr<std::string> TensorType(DType dtype,
                                         const std::vector<int64_t>& dims) {
    TPUSIM_ASSIGN_OR_RETURN(std::string et, StableHloElementType(dtype));
    std::string s = "tensor<";
    for (int64_t d : dims) absl::StrAppend(&s, d, "x");
    return absl::StrCat(s, et, ">");
  }
  std::string RawType(const std::string& et, const std::vector<int64_t>& dims) {
    std::string s = "tensor<";
    for (int64_t d : dims) absl::StrAppend(&s, d, "x");
    return absl::StrCat(s, et, ">");
  }
  absl::StatusOr<std::string> Ty(const ValueType& t) {
    return TensorType(t.dtype, t.shape.dims());
  }

  std::string Fresh() { return absl::StrCat("%t", next_tmp_++); }
  std::string V(int id) const { return absl::StrCat("%v", id); }
  void Line(const std::string& s) { absl::StrAppend(&body_, "    ", s, "\n"); }

  absl::Status Unsupported(int id, absl::string_view why) {
    return absl::UnimplementedError(absl::StrCat(
        "pjrt: program ", p_.name(), " op %", id, " (",
        OpCodeName(p_.ops()[id].code), " ", p_.ops()[id].type.ToString(),
        "): ", why));
  }

  // ---- building blocks (each returns the SSA name of its result) ----
  // A splat constant of `value` (a finite double; integer types get the
  // truncated value) of element type et.
  std::string Splat(const std::string& et, const std::vector<int64_t>& dims,
                    double value) {
    std::string lit;
    if (et == "f32" || et == "f64" || et == "bf16") {
      if (std::isinf(value)) {
        // IEEE infinities in hex: MLIR parses a float splat from its bits.
        const bool neg = value < 0;
        lit = et == "f32"   ? (neg ? "0xFF800000" : "0x7F800000")
              : et == "f64" ? (neg ? "0xFFF0000000000000" : "0x7FF0000000000000")
                            : (neg ? "0xFF80" : "0x7F80");
      } else {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%.17e", value);
        lit = buf;
      }
    } else {
      lit = absl::StrCat(static_cast<int64_t>(value));
    }
    const std::string out = Fresh();
    const std::string t = RawType(et, dims);
    Line(absl::StrCat(out, " = \"stablehlo.constant\"() {value = dense<", lit,
                      "> : ", t, "} : () -> ", t));
    return out;
  }
  std::string Unary(const std::string& op, const std::string& x,
                    const std::string& in_t, const std::string& out_t) {
    const std::string out = Fresh();
    Line(absl::StrCat(out, " = \"stablehlo.", op, "\"(", x, ") : (", in_t,
                      ") -> ", out_t));
    return out;
  }
  std::string Binary(const std::string& op, const std::string& a,
                     const std::string& b, const std::string& t) {
    const std::string out = Fresh();
    Line(absl::StrCat(out, " = \"stablehlo.", op, "\"(", a, ", ", b, ") : (",
                      t, ", ", t, ") -> ", t));
    return out;
  }
  // broadcast_in_dim of x (dims `from`) into `to`, operand dim i going to
  // result dim map[i].
  std::string BroadcastInDim(const std::string& x, const std::string& et,
                             const std::vector<int64_t>& from,
                             const std::vector<int64_t>& to,
                             const std::vector<int64_t>& map) {
    const std::string out = Fresh();
    Line(absl::StrCat(out,
                      " = \"stablehlo.broadcast_in_dim\"(", x,
                      ") {broadcast_dimensions = ", I64Array(map), "} : (",
                      RawType(et, from), ") -> ", RawType(et, to)));
    return out;
  }
  // Numpy broadcasting of x (dims `from`) to `to` (aligned at the end); x
  // itself when the shapes agree.
  std::string NumpyBroadcast(const std::string& x, const std::string& et,
                             const std::vector<int64_t>& from,
                             const std::vector<int64_t>& to) {
    if (from == to) return x;
    std::vector<int64_t> map;
    const size_t off = to.size() - from.size();
    for (size_t i = 0; i < from.size(); ++i) map.push_back(off + i);
    // A dim of 1 that meets a larger one: reshape away the 1s first is not
    // needed; broadcast_in_dim stretches size-1 operand dims.
    return BroadcastInDim(x, et, from, to, map);
  }
  // reduce of x over `axes` with `op` ("add" / "maximum") from `init`.
  std::string Reduce(const std::string& x, const std::string& et,
                     const std::vector<int64_t>& dims,
                     const std::vector<int64_t>& axes, const std::string& op,
                     double init) {
    const std::string zero = Splat(et, {}, init);
    std::vector<int64_t> out_dims;
    for (size_t i = 0; i < dims.size(); ++i) {
      bool reduced = false;
      for (int64_t a : axes) reduced = reduced || a == static_cast<int64_t>(i);
      if (!reduced) out_dims.push_back(dims[i]);
    }
    const std::string s = RawType(et, {});
    const std::string out = Fresh();
    const std::string a = Fresh(), b = Fresh(), r = Fresh();
    Line(absl::StrCat(out, " = \"stablehlo.reduce\"(", x, ", ", zero, ") ({"));
    Line(absl::StrCat("^bb0(", a, ": ", s, ", ", b, ": ", s, "):"));
    Line(absl::StrCat("  ", r, " = \"stablehlo.", op, "\"(", a, ", ", b,
                      ") : (", s, ", ", s, ") -> ", s));
    Line(absl::StrCat("  \"stablehlo.return\"(", r, ") : (", s, ") -> ()"));
    Line(absl::StrCat("}) {dimensions = ", I64Array(axes), "} : (",
                      RawType(et, dims), ", ", s, ") -> ",
                      RawType(et, out_dims)));
    return out;
  }
  // A reduction region for a collective: "({ ^bb0(..): add; return })".
  void AddRegion(const std::string& et) {
    const std::string s = RawType(et, {});
    const std::string a = Fresh(), b = Fresh(), r = Fresh();
    Line(absl::StrCat("^bb0(", a, ": ", s, ", ", b, ": ", s, "):"));
    Line(absl::StrCat("  ", r, " = \"stablehlo.add\"(", a, ", ", b, ") : (", s,
                      ", ", s, ") -> ", s));
    Line(absl::StrCat("  \"stablehlo.return\"(", r, ") : (", s, ") -> ()"));
  }
  // i1 mask of dims (bound shape): true where every listed dynamic dim's index
  // is below its true size. Empty string when `mask_dims` is empty.
  std::string Mask(int id, const std::vector<int64_t>& dims,
                   const std::vector<int>& mask_dims) {
    std::string mask;
    for (int d : mask_dims) {
      const std::string iota = Fresh();
      Line(absl::StrCat(iota, " = \"stablehlo.iota\"() {iota_dimension = ", d,
                        " : i64} : () -> ", RawType("i32", dims)));
      const std::string size =
          BroadcastInDim(size_of_.at({id, d}), "i32", {}, dims, {});
      const std::string lt = Fresh();
      Line(absl::StrCat(lt, " = \"stablehlo.compare\"(", iota, ", ", size,
                        ") {comparison_direction = "
                        "#stablehlo<comparison_direction LT>} : (",
                        RawType("i32", dims), ", ", RawType("i32", dims),
                        ") -> ", RawType("i1", dims)));
      mask = mask.empty() ? lt : Binary("and", mask, lt, RawType("i1", dims));
    }
    return mask;
  }
  // x with the padded part of `mask_dims` replaced by `fill`.
  std::string Masked(int id, const std::string& x, const std::string& et,
                     const std::vector<int64_t>& dims,
                     const std::vector<int>& mask_dims, double fill) {
    if (mask_dims.empty()) return x;
    const std::string mask = Mask(id, dims, mask_dims);
    const std::string f = Splat(et, dims, fill);
    const std::string out = Fresh();
    const std::string t = RawType(et, dims);
    Line(absl::StrCat(out, " = \"stablehlo.select\"(", mask, ", ", x, ", ", f,
                      ") : (", RawType("i1", dims), ", ", t, ", ", t, ") -> ",
                      t));
    return out;
  }
  // The dynamic dims of value `id` among `dims`.
  std::vector<int> DynamicAmong(int id, const std::vector<int64_t>& dims) {
    std::vector<int> out;
    for (int64_t d : dims) {
      if (p_.ops()[id].type.is_dynamic(static_cast<int>(d)))
        out.push_back(static_cast<int>(d));
    }
    return out;
  }
  std::vector<int64_t> AllDims(int rank) {
    std::vector<int64_t> v(rank);
    for (int i = 0; i < rank; ++i) v[i] = i;
    return v;
  }

  // Result dim `d` of op `id` takes its true size from operand value `src`
  // dim `sd` (when that one is dynamic).
  void Carry(int id, int d, int src, int sd) {
    if (p_.ops()[src].type.is_dynamic(sd)) size_of_[{id, d}] = size_of_.at({src, sd});
  }
  // Numpy-aligned carry from every operand.
  void CarryAligned(int id) {
    const Op& op = p_.ops()[id];
    const int rank = op.type.rank();
    for (int o : op.operands) {
      const int orank = p_.ops()[o].type.rank();
      for (int i = 0; i < orank; ++i) Carry(id, rank - orank + i, o, i);
    }
  }

  absl::Status EmitOp(int id);
  // Operand k of op `id`, on the op's logical core: a value made on another
  // core of the replica is moved with a collective_permute from XLA replica
  // r*C + its core to r*C + this core, for every replica r.
  std::string Operand(int id, int k) {
    const Op& op = p_.ops()[id];
    const int src = op.operands[k];
    const int from = p_.ops()[src].logical_core, to = op.logical_core;
    if (from == to) return V(src);
    auto it = moved_.find({src, to});
    if (it != moved_.end()) return it->second;
    std::vector<std::vector<int64_t>> pairs;
    for (int r = 0; r < p_.num_replicas(); ++r)
      pairs.push_back({int64_t{r} * cores_ + from, int64_t{r} * cores_ + to});
    const absl::StatusOr<std::string> t = Ty(p_.ops()[src].type);
    const std::string out = Fresh();
    Line(absl::StrCat(out, " = \"stablehlo.collective_permute\"(", V(src),
                      ") {source_target_pairs = ", I64Matrix(pairs), "} : (",
                      *t, ") -> ", *t, "  // core ", from, " -> core ", to));
    moved_[{src, to}] = out;
    return out;
  }
  // The XLA replica groups of a collective on logical core `core`: every
  // tpusim group g becomes {g_i * C + c} for each core c (the other cores run
  // the same op on their own copies).
  std::vector<std::vector<int64_t>> XlaGroups(
      const std::vector<std::vector<int64_t>>& groups) {
    if (cores_ == 1) return groups;
    std::vector<std::vector<int64_t>> out;
    for (int c = 0; c < cores_; ++c) {
      for (const auto& g : groups) {
        std::vector<int64_t>& row = out.emplace_back();
        for (int64_t r : g) row.push_back(r * cores_ + c);
      }
    }
    return out;
  }
  // conv2d, its two gradients, max_pool2d and its gradient (NHWC / HWIO).
  absl::Status EmitWindowed(int id, const std::string& et, const std::string& t);
  absl::Status CheckSizesKnown(int id) {
    const ValueType& t = p_.ops()[id].type;
    for (int d = 0; d < t.rank(); ++d) {
      if (t.is_dynamic(d) && size_of_.count({id, d}) == 0) {
        return Unsupported(id, absl::StrCat("the true size of dynamic dim ", d,
                                            " cannot be tracked"));
      }
    }
    return absl::OkStatus();
  }
  absl::Status NoDynamicOperands(int id, absl::string_view why) {
    for (int o : p_.ops()[id].operands) {
      if (p_.ops()[o].type.any_dynamic()) return Unsupported(id, why);
    }
    return absl::OkStatus();
  }

  const Program& p_;
  std::string body_;
  int next_tmp_ = 0;
  std::map<std::pair<int, int>, std::string> size_of_;  // (value, dim) -> i32
  // Current SSA value of each (slot, logical core): each core's device keeps
  // its own storage of a slot.
  std::map<std::pair<int, int>, std::string> slot_value_;
  int cores_ = 1;
  // Operand values moved to another core (value, core) -> SSA.
  std::map<std::pair<int, int>, std::string> moved_;
};

absl::StatusOr<EmittedModule> Emitter::Run() {
  cores_ = p_.num_cores_per_replica();
  EmittedModule m;
  // Arguments: parameters, dynamic sizes, variables read before written.
  std::vector<std::string> args;
  for (size_t i = 0; i < p_.parameters().size(); ++i) {
    const Value v = p_.parameters()[i];
    TPUSIM_ASSIGN_OR_RETURN(std::string t, Ty(p_.type(v)));
    args.push_back(absl::StrCat(V(v.id), ": ", t));
  }
  for (size_t i = 0; i < p_.parameters().size(); ++i) {
    const Value v = p_.parameters()[i];
    for (int d = 0; d < p_.type(v).rank(); ++d) {
      if (!p_.type(v).is_dynamic(d)) continue;
      const std::string name = absl::StrCat("%size_p", i, "_d", d);
      args.push_back(absl::StrCat(name, ": tensor<i32>"));
      size_of_[{v.id, d}] = name;
      m.dynamic_args.push_back({static_cast<int>(i), d});
    }
  }
  // Variable storage per (slot, logical core).
  std::set<std::pair<int, int>> read_first, written;
  for (const Op& op : p_.ops()) {
    const std::pair<int, int> key(static_cast<int>(op.attrs.variable_slot),
                                  op.logical_core);
    if (op.code == OpCode::kVariableRead ||
        op.code == OpCode::kVariableAssignAdd) {
      if (written.count(key) == 0) read_first.insert(key);
    }
    if (op.code == OpCode::kVariableAssign ||
        op.code == OpCode::kVariableAssignAdd) {
      written.insert(key);
    }
  }
  for (const auto& [slot, core] : read_first) m.variable_inputs.push_back({slot, core});
  for (const auto& [slot, core] : written) m.variable_outputs.push_back({slot, core});
  const int num_outputs = static_cast<int>(p_.outputs().size());
  for (const VariableArg& v : m.variable_inputs) {
    const VariableDecl* decl = p_.FindVariable(v.slot);
    if (decl == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pjrt: program ", p_.name(), " uses undeclared variable slot ", v.slot));
    }
    TPUSIM_ASSIGN_OR_RETURN(std::string t,
                            TensorType(decl->dtype, decl->shape.dims()));
    const std::string name = cores_ == 1
                                 ? absl::StrCat("%var", v.slot)
                                 : absl::StrCat("%var", v.slot, "_core", v.core);
    std::string arg = absl::StrCat(name, ": ", t);
    for (size_t k = 0; k < m.variable_outputs.size(); ++k) {
      if (m.variable_outputs[k].slot == v.slot &&
          m.variable_outputs[k].core == v.core) {
        absl::StrAppend(&arg, " {tf.aliasing_output = ", num_outputs + k,
                        " : i32}");
      }
    }
    args.push_back(arg);
    slot_value_[{v.slot, v.core}] = name;
  }
  for (int i = 0; i < static_cast<int>(p_.ops().size()); ++i) {
    TPUSIM_RETURN_IF_ERROR(EmitOp(i));
  }
  std::vector<std::string> results, result_types;
  for (Value v : p_.outputs()) {
    results.push_back(V(v.id));
    TPUSIM_ASSIGN_OR_RETURN(std::string t, Ty(p_.type(v)));
    result_types.push_back(t);
  }
  for (const VariableArg& v : m.variable_outputs) {
    const VariableDecl* decl = p_.FindVariable(v.slot);
    results.push_back(slot_value_.at({v.slot, v.core}));
    TPUSIM_ASSIGN_OR_RETURN(std::string t,
                            TensorType(decl->dtype, decl->shape.dims()));
    result_types.push_back(t);
  }
  std::string text = absl::StrCat(
      "module @", SymbolName(p_.name()),
      " attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = ",
      p_.num_replicas() * cores_, " : i32} {\n");
  absl::StrAppend(&text, "  func.func public @main(",
                  absl::StrJoin(args, ", "), ") -> (",
                  absl::StrJoin(result_types, ", "), ") {\n");
  absl::StrAppend(&text, body_);
  absl::StrAppend(&text, "    \"func.return\"(", absl::StrJoin(results, ", "),
                  ") : (", absl::StrJoin(result_types, ", "), ") -> ()\n");
  absl::StrAppend(&text, "  }\n}\n");
  m.text = std::move(text);
  return m;
}


// TF's SAME padding of one spatial dim: the total pad splits total/2 before,
// the rest after (the host kernels' PadBefore); VALID pads nothing.
std::pair<int64_t, int64_t> SamePads(Padding padding, int64_t in, int64_t k,
                                     int64_t stride, int64_t out) {
  if (padding != Padding::kSame) return {0, 0};
  const int64_t total = std::max<int64_t>((out - 1) * stride + k - in, 0);
  return {total / 2, total - total / 2};
}

std::string PadMatrix(const std::vector<std::pair<int64_t, int64_t>>& pads) {
  std::vector<std::string> rows;
  for (const auto& [lo, hi] : pads) rows.push_back(absl::StrCat("[", lo, ", ", hi, "]"));
  return absl::StrCat("dense<[", absl::StrJoin(rows, ", "), "]> : tensor<",
                      pads.size(), "x2xi64>");
}

absl::Status Emitter::EmitWindowed(int id, const std::string& et,
                                   const std::string& t) {
  const Op& op = p_.ops()[id];
  const OpAttrs& a = op.attrs;
  const ValueType& rt = op.type;
  auto type_of = [&](int k) { return p_.ops()[op.operands[k]].type; };
  auto x = [&](int k) { return Operand(id, k); };
  const std::vector<int64_t>& st = a.window_strides;
  const std::string prec = absl::StrCat(
      "#stablehlo<precision ", PrecisionName(a.precision), ">");
  auto conv = [&](const std::string& lhs, const std::string& lhs_t,
                  const std::string& rhs, const std::string& rhs_t,
                  const std::string& dims,
                  const std::vector<std::pair<int64_t, int64_t>>& pads,
                  const std::vector<int64_t>& window_strides,
                  const std::vector<int64_t>& lhs_dilation,
                  const std::vector<int64_t>& rhs_dilation) {
    Line(absl::StrCat(
        V(id), " = \"stablehlo.convolution\"(", lhs, ", ", rhs,
        ") {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<",
        dims, ">, feature_group_count = 1 : i64, lhs_dilation = ",
        I64Array(lhs_dilation), ", padding = ", PadMatrix(pads),
        ", precision_config = [", prec, ", ", prec, "], rhs_dilation = ",
        I64Array(rhs_dilation), ", window_strides = ", I64Array(window_strides),
        "} : (", lhs_t, ", ", rhs_t, ") -> ", t));
  };
  switch (op.code) {
    case OpCode::kConv2D: {
      const ValueType in = type_of(0), f = type_of(1);
      std::vector<std::pair<int64_t, int64_t>> pads;
      for (int i = 0; i < 2; ++i)
        pads.push_back(SamePads(a.padding, in.shape.dim(1 + i), f.shape.dim(i),
                                st[i], rt.shape.dim(1 + i)));
      TPUSIM_ASSIGN_OR_RETURN(std::string ti, Ty(in));
      TPUSIM_ASSIGN_OR_RETURN(std::string tf, Ty(f));
      conv(x(0), ti, x(1), tf, "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", pads,
           st, {1, 1}, {1, 1});
      return absl::OkStatus();
    }
    case OpCode::kConv2DBackpropInput: {
      // dx = dy (dilated by the strides) convolved with the filter turned by
      // 180 degrees, its in/out features swapped.
      const ValueType dy = type_of(0), f = type_of(1);
      TPUSIM_ASSIGN_OR_RETURN(std::string tdy, Ty(dy));
      TPUSIM_ASSIGN_OR_RETURN(std::string tf, Ty(f));
      const std::string rev = Fresh();
      Line(absl::StrCat(rev, " = \"stablehlo.reverse\"(", x(1),
                        ") {dimensions = array<i64: 0, 1>} : (", tf, ") -> ", tf));
      std::vector<std::pair<int64_t, int64_t>> pads;
      for (int i = 0; i < 2; ++i) {
        const int64_t in = a.shape[1 + i], k = f.shape.dim(i), out = dy.shape.dim(1 + i);
        const int64_t lo = SamePads(a.padding, in, k, st[i], out).first;
        pads.push_back({k - 1 - lo, in - 1 - (out - 1) * st[i] + lo});
      }
      conv(x(0), tdy, rev, tf, "[b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f]", pads,
           {1, 1}, st, {1, 1});
      return absl::OkStatus();
    }
    case OpCode::kConv2DBackpropFilter: {
      // dW[kh, kw, ci, co] = sum over n, ho, wo of x[n, ho*s + kh - pad, ...,
      // ci] * dy[n, ho, wo, co]: a convolution whose "batch" is ci and whose
      // contracted feature is n, the window dilated by the strides.
      const ValueType in = type_of(0), dy = type_of(1);
      TPUSIM_ASSIGN_OR_RETURN(std::string ti, Ty(in));
      TPUSIM_ASSIGN_OR_RETURN(std::string tdy, Ty(dy));
      std::vector<std::pair<int64_t, int64_t>> pads;
      for (int i = 0; i < 2; ++i) {
        const int64_t n_in = in.shape.dim(1 + i), k = a.shape[i], out = dy.shape.dim(1 + i);
        const int64_t lo = SamePads(a.padding, n_in, k, st[i], out).first;
        pads.push_back({lo, k + (out - 1) * st[i] - n_in - lo});
      }
      conv(x(0), ti, x(1), tdy, "[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]", pads,
           {1, 1}, {1, 1}, st);
      return absl::OkStatus();
    }
    case OpCode::kMaxPool2D: {
      const ValueType in = type_of(0);
      TPUSIM_ASSIGN_OR_RETURN(std::string ti, Ty(in));
      std::vector<std::pair<int64_t, int64_t>> pads = {{0, 0}};
      for (int i = 0; i < 2; ++i)
        pads.push_back(SamePads(a.padding, in.shape.dim(1 + i), a.window[i],
                                st[i], rt.shape.dim(1 + i)));
      pads.push_back({0, 0});
      const double lowest = IsFloating(rt.dtype) ? -INFINITY
                            : rt.dtype == DType::kU8 ? 0.0
                            : rt.dtype == DType::kI32 ? static_cast<double>(INT32_MIN)
                                                      : static_cast<double>(INT64_MIN);
      const std::string init = Splat(et, {}, lowest);
      const std::string sc = RawType(et, {});
      const std::string ra = Fresh(), rb = Fresh(), rr = Fresh();
      Line(absl::StrCat(V(id), " = \"stablehlo.reduce_window\"(", x(0), ", ",
                        init, ") ({"));
      Line(absl::StrCat("^bb0(", ra, ": ", sc, ", ", rb, ": ", sc, "):"));
      Line(absl::StrCat("  ", rr, " = \"stablehlo.maximum\"(", ra, ", ", rb,
                        ") : (", sc, ", ", sc, ") -> ", sc));
      Line(absl::StrCat("  \"stablehlo.return\"(", rr, ") : (", sc, ") -> ()"));
      Line(absl::StrCat("}) {padding = ", PadMatrix(pads),
                        ", window_dimensions = ",
                        I64Array({1, a.window[0], a.window[1], 1}),
                        ", window_strides = ", I64Array({1, st[0], st[1], 1}),
                        "} : (", ti, ", ", sc, ") -> ", t));
      return absl::OkStatus();
    }
    case OpCode::kMaxPool2DGrad: {
      // select_and_scatter picks, per window, the first maximum (GE keeps the
      // earlier candidate) and adds dy there. The padding is made explicit
      // with -inf (the lowest value) so that it never wins, then cut off.
      const ValueType in = type_of(0), dy = type_of(1);
      if (!IsFloating(in.dtype)) {
        return Unsupported(id, "max_pool2d_grad of an integer tensor");
      }
      TPUSIM_ASSIGN_OR_RETURN(std::string tdy, Ty(dy));
      std::vector<int64_t> padded = in.shape.dims();
      std::vector<int64_t> lo(4, 0), hi(4, 0);
      for (int i = 0; i < 2; ++i) {
        const auto pr = SamePads(a.padding, in.shape.dim(1 + i), a.window[i],
                                 st[i], dy.shape.dim(1 + i));
        lo[1 + i] = pr.first;
        hi[1 + i] = pr.second;
        padded[1 + i] += pr.first + pr.second;
      }
      std::string xp = x(0);
      if (padded != in.shape.dims()) {
        const std::string ninf = Splat(et, {}, -INFINITY);
        xp = Fresh();
        Line(absl::StrCat(xp, " = \"stablehlo.pad\"(", x(0), ", ", ninf,
                          ") {edge_padding_high = ", I64Array(hi),
                          ", edge_padding_low = ", I64Array(lo),
                          ", interior_padding = ", I64Array({0, 0, 0, 0}),
                          "} : (", t, ", ", RawType(et, {}), ") -> ",
                          RawType(et, padded)));
      }
      const std::string zero = Splat(et, {}, 0.0);
      const std::string sc = RawType(et, {});
      const std::string out = padded != in.shape.dims() ? Fresh() : V(id);
      const std::string a1 = Fresh(), b1 = Fresh(), c1 = Fresh();
      const std::string a2 = Fresh(), b2 = Fresh(), c2 = Fresh();
      Line(absl::StrCat(out, " = \"stablehlo.select_and_scatter\"(", xp, ", ",
                        x(1), ", ", zero, ") ({"));
      Line(absl::StrCat("^bb0(", a1, ": ", sc, ", ", b1, ": ", sc, "):"));
      Line(absl::StrCat("  ", c1, " = \"stablehlo.compare\"(", a1, ", ", b1,
                        ") {comparison_direction = "
                        "#stablehlo<comparison_direction GE>} : (",
                        sc, ", ", sc, ") -> tensor<i1>"));
      Line(absl::StrCat("  \"stablehlo.return\"(", c1, ") : (tensor<i1>) -> ()"));
      Line("}, {");
      Line(absl::StrCat("^bb0(", a2, ": ", sc, ", ", b2, ": ", sc, "):"));
      Line(absl::StrCat("  ", c2, " = \"stablehlo.add\"(", a2, ", ", b2,
                        ") : (", sc, ", ", sc, ") -> ", sc));
      Line(absl::StrCat("  \"stablehlo.return\"(", c2, ") : (", sc, ") -> ()"));
      Line(absl::StrCat("}) {window_dimensions = ",
                        I64Array({1, a.window[0], a.window[1], 1}),
                        ", window_strides = ", I64Array({1, st[0], st[1], 1}),
                        "} : (", RawType(et, padded), ", ", tdy, ", ", sc,
                        ") -> ", RawType(et, padded)));
      if (out != V(id)) {
        std::vector<int64_t> limit = in.shape.dims();
        for (int i = 0; i < 4; ++i) limit[i] += lo[i];
        Line(absl::StrCat(V(id), " = \"stablehlo.slice\"(", out,
                          ") {limit_indices = ", I64Array(limit),
                          ", start_indices = ", I64Array(lo),
                          ", strides = ", I64Array({1, 1, 1, 1}), "} : (",
                          RawType(et, padded), ") -> ", t));
      }
      return absl::OkStatus();
    }
    default:
      break;
  }
  return Unsupported(id, "not a windowed op");
}

absl::Status Emitter::EmitOp(int id) {
  const Op& op = p_.ops()[id];
  const ValueType& rt = op.type;
  TPUSIM_ASSIGN_OR_RETURN(const std::string et,
                          StableHloElementType(rt.dtype));
  TPUSIM_ASSIGN_OR_RETURN(const std::string t, Ty(rt));
  const std::vector<int64_t> dims = rt.shape.dims();
  auto operand_type = [&](int k) -> const ValueType& {
    return p_.ops()[op.operands[k]].type;
  };
  auto ot = [&](int k) { return Ty(operand_type(k)); };
  auto x = [&](int k) { return Operand(id, k); };
  // Most ops: emit straight into %vN.
  auto def = [&](const std::string& rhs) {
    Line(absl::StrCat(V(id), " = ", rhs));
  };
  // Rebinds %vN to an already computed temporary (a no-op reshape keeps the
  // text one-op-per-value and readable).
  auto alias = [&](const std::string& ssa) {
    def(absl::StrCat("\"stablehlo.reshape\"(", ssa, ") : (", t, ") -> ", t));
  };

  switch (op.code) {
    case OpCode::kParameter:
      return absl::OkStatus();  // a function argument already named %vN
    case OpCode::kConstant: {
      const Tensor& lit = op.attrs.literal;
      if (!lit.has_data()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "pjrt: program ", p_.name(), " op %", id,
            " is an abstract constant (", rt.ToString(),
            "); the pjrt backend runs real values only"));
      }
      std::string value;
      if (lit.num_elements() == 1 && rt.dtype != DType::kBF16) {
        const double d = lit.AsDouble(0);
        if (IsFloating(rt.dtype) && std::isfinite(d)) {
          char buf[64];
          std::snprintf(buf, sizeof(buf),
                        rt.dtype == DType::kF32 ? "%.9e" : "%.17e", d);
          value = buf;
        } else if (IsInteger(rt.dtype)) {
          value = absl::StrCat(lit.AsInt64(0));
        }
      }
      if (value.empty()) value = absl::StrCat("\"", HexBytes(lit.raw_bytes()), "\"");
      def(absl::StrCat("\"stablehlo.constant\"() {value = dense<", value,
                       "> : ", t, "} : () -> ", t));
      return absl::OkStatus();
    }
    case OpCode::kReplicaId: {
      const std::string r = Fresh();
      Line(absl::StrCat(r, " = \"stablehlo.replica_id\"() : () -> tensor<ui32>"));
      if (cores_ == 1) {
        def(absl::StrCat("\"stablehlo.convert\"(", r, ") : (tensor<ui32>) -> ", t));
        return absl::OkStatus();
      }
      // XLA replica r*C + c runs core c of tpusim replica r.
      const std::string c = Splat("ui32", {}, cores_);
      const std::string q = Binary("divide", r, c, "tensor<ui32>");
      def(absl::StrCat("\"stablehlo.convert\"(", q, ") : (tensor<ui32>) -> ", t));
      return absl::OkStatus();
    }
    case OpCode::kVariableRead: {
      const int slot = static_cast<int>(op.attrs.variable_slot);
      auto it = slot_value_.find({slot, op.logical_core});
      if (it == slot_value_.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "pjrt: program ", p_.name(), " reads slot ", slot, " with no value"));
      }
      alias(it->second);
      return absl::OkStatus();
    }
    case OpCode::kVariableAssign: {
      alias(x(0));
      slot_value_[{static_cast<int>(op.attrs.variable_slot), op.logical_core}] = V(id);
      return absl::OkStatus();
    }
    case OpCode::kVariableAssignAdd: {
      const int slot = static_cast<int>(op.attrs.variable_slot);
      def(absl::StrCat("\"stablehlo.add\"(", slot_value_.at({slot, op.logical_core}),
                       ", ", x(0), ") : (", t, ", ", t, ") -> ", t));
      slot_value_[{slot, op.logical_core}] = V(id);
      return absl::OkStatus();
    }
    case OpCode::kNeg:
    case OpCode::kExp:
    case OpCode::kLog:
    case OpCode::kTanh:
    case OpCode::kSigmoid:
    case OpCode::kRsqrt:
    case OpCode::kSqrt: {
      static const std::map<OpCode, std::string>* names =
          new std::map<OpCode, std::string>{
              {OpCode::kNeg, "negate"},    {OpCode::kExp, "exponential"},
              {OpCode::kLog, "log"},       {OpCode::kTanh, "tanh"},
              {OpCode::kSigmoid, "logistic"}, {OpCode::kRsqrt, "rsqrt"},
              {OpCode::kSqrt, "sqrt"}};
      def(absl::StrCat("\"stablehlo.", names->at(op.code), "\"(", x(0),
                       ") : (", t, ") -> ", t));
      CarryAligned(id);
      return CheckSizesKnown(id);
    }
    case OpCode::kRelu: {
      // max(x, 0); NaN stays NaN.
      const std::string zero = Splat(et, dims, 0.0);
      def(absl::StrCat("\"stablehlo.maximum\"(", x(0), ", ", zero, ") : (", t,
                       ", ", t, ") -> ", t));
      CarryAligned(id);
      return CheckSizesKnown(id);
    }
    case OpCode::kCast: {
      TPUSIM_ASSIGN_OR_RETURN(std::string in, ot(0));
      def(absl::StrCat("\"stablehlo.convert\"(", x(0), ") : (", in, ") -> ", t));
      CarryAligned(id);
      return CheckSizesKnown(id);
    }
    case OpCode::kAdd:
    case OpCode::kSub:
    case OpCode::kMul:
    case OpCode::kDiv:
    case OpCode::kMax:
    case OpCode::kMin: {
      static const std::map<OpCode, std::string>* names =
          new std::map<OpCode, std::string>{
              {OpCode::kAdd, "add"},     {OpCode::kSub, "subtract"},
              {OpCode::kMul, "multiply"}, {OpCode::kDiv, "divide"},
              {OpCode::kMax, "maximum"}, {OpCode::kMin, "minimum"}};
      const std::string a =
          NumpyBroadcast(x(0), et, operand_type(0).shape.dims(), dims);
      const std::string b =
          NumpyBroadcast(x(1), et, operand_type(1).shape.dims(), dims);
      def(absl::StrCat("\"stablehlo.", names->at(op.code), "\"(", a, ", ", b,
                       ") : (", t, ", ", t, ") -> ", t));
      CarryAligned(id);
      return CheckSizesKnown(id);
    }
    case OpCode::kCompare: {
      TPUSIM_ASSIGN_OR_RETURN(std::string oet,
                              StableHloElementType(operand_type(0).dtype));
      const std::string a =
          NumpyBroadcast(x(0), oet, operand_type(0).shape.dims(), dims);
      const std::string b =
          NumpyBroadcast(x(1), oet, operand_type(1).shape.dims(), dims);
      static const char* kDir[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
      const std::string c = Fresh();
      Line(absl::StrCat(c, " = \"stablehlo.compare\"(", a, ", ", b,
                        ") {comparison_direction = "
                        "#stablehlo<comparison_direction ",
                        kDir[static_cast<int>(op.attrs.comparison)], ">} : (",
                        RawType(oet, dims), ", ", RawType(oet, dims), ") -> ",
                        RawType("i1", dims)));
      def(absl::StrCat("\"stablehlo.convert\"(", c, ") : (",
                       RawType("i1", dims), ") -> ", t));
      CarryAligned(id);
      return CheckSizesKnown(id);
    }
    case OpCode::kSelect: {
      TPUSIM_ASSIGN_OR_RETURN(std::string pet,
                              StableHloElementType(operand_type(0).dtype));
      const std::string pred =
          NumpyBroadcast(x(0), pet, operand_type(0).shape.dims(), dims);
      const std::string zero = Splat(pet, dims, 0.0);
      const std::string c = Fresh();
      Line(absl::StrCat(c, " = \"stablehlo.compare\"(", pred, ", ", zero,
                        ") {comparison_direction = "
                        "#stablehlo<comparison_direction NE>} : (",
                        RawType(pet, dims), ", ", RawType(pet, dims), ") -> ",
                        RawType("i1", dims)));
      const std::string a =
          NumpyBroadcast(x(1), et, operand_type(1).shape.dims(), dims);
      const std::string b =
          NumpyBroadcast(x(2), et, operand_type(2).shape.dims(), dims);
      def(absl::StrCat("\"stablehlo.select\"(", c, ", ", a, ", ", b, ") : (",
                       RawType("i1", dims), ", ", t, ", ", t, ") -> ", t));
      CarryAligned(id);
      return CheckSizesKnown(id);
    }
    case OpCode::kDot: {
      const DotDims& dd = op.attrs.dot;
      const ValueType& lt = operand_type(0);
      const ValueType& rtp = operand_type(1);
      // Padding in a contracted dim must not reach the sum: mask both sides.
      std::vector<int> lmask, rmask;
      for (size_t i = 0; i < dd.lhs_contracting.size(); ++i) {
        const int l = static_cast<int>(dd.lhs_contracting[i]);
        const int r = static_cast<int>(dd.rhs_contracting[i]);
        if (lt.is_dynamic(l) || rtp.is_dynamic(r)) {
          if (lt.is_dynamic(l)) lmask.push_back(l);
          if (rtp.is_dynamic(r)) rmask.push_back(r);
        }
      }
      const std::string a = Masked(op.operands[0], x(0), et, lt.shape.dims(), lmask, 0.0);
      const std::string b = Masked(op.operands[1], x(1), et, rtp.shape.dims(), rmask, 0.0);
      TPUSIM_ASSIGN_OR_RETURN(std::string ta, ot(0));
      TPUSIM_ASSIGN_OR_RETURN(std::string tb, ot(1));
      const std::string prec = absl::StrCat(
          "#stablehlo<precision ", PrecisionName(op.attrs.precision), ">");
      def(absl::StrCat(
          "\"stablehlo.dot_general\"(", a, ", ", b,
          ") {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [",
          Ints(dd.lhs_batch), "], rhs_batching_dimensions = [",
          Ints(dd.rhs_batch), "], lhs_contracting_dimensions = [",
          Ints(dd.lhs_contracting), "], rhs_contracting_dimensions = [",
          Ints(dd.rhs_contracting), "]>, precision_config = [", prec, ", ",
          prec, "]} : (", ta, ", ", tb, ") -> ", t));
      // Result dims: batch, lhs free, rhs free.
      int d = 0;
      for (int64_t b0 : dd.lhs_batch) Carry(id, d++, op.operands[0], b0);
      auto free_dims = [](int rank, const std::vector<int64_t>& a1,
                          const std::vector<int64_t>& a2) {
        std::vector<int> f;
        for (int i = 0; i < rank; ++i) {
          bool used = false;
          for (int64_t k : a1) used = used || k == i;
          for (int64_t k : a2) used = used || k == i;
          if (!used) f.push_back(i);
        }
        return f;
      };
      for (int f : free_dims(lt.rank(), dd.lhs_batch, dd.lhs_contracting))
        Carry(id, d++, op.operands[0], f);
      for (int f : free_dims(rtp.rank(), dd.rhs_batch, dd.rhs_contracting))
        Carry(id, d++, op.operands[1], f);
      return CheckSizesKnown(id);
    }
    case OpCode::kReduceSum:
    case OpCode::kReduceMean:
    case OpCode::kReduceMax: {
      const ValueType& in = operand_type(0);
      std::vector<int64_t> axes;
      for (int64_t a : op.attrs.axes) axes.push_back(a < 0 ? a + in.rank() : a);
      std::sort(axes.begin(), axes.end());
      const bool is_max = op.code == OpCode::kReduceMax;
      double init = 0.0;
      if (is_max) {
        if (IsFloating(in.dtype)) {
          init = -INFINITY;
        } else if (in.dtype == DType::kU8) {
          init = 0;
        } else if (in.dtype == DType::kI32) {
          init = static_cast<double>(INT32_MIN);
        } else {
          init = static_cast<double>(INT64_MIN);
        }
      }
      const std::vector<int> dyn = DynamicAmong(op.operands[0], axes);
      const std::string masked =
          Masked(op.operands[0], x(0), et, in.shape.dims(), dyn, init);
      std::string r = Reduce(masked, et, in.shape.dims(), axes,
                             is_max ? "maximum" : "add", init);
      std::vector<int64_t> kept;
      std::vector<int> kept_src;
      for (int i = 0; i < in.rank(); ++i) {
        if (!std::binary_search(axes.begin(), axes.end(), i)) {
          kept.push_back(in.shape.dim(i));
          kept_src.push_back(i);
        }
      }
      if (op.code == OpCode::kReduceMean) {
        // Divide by the true element count of the reduced axes.
        int64_t static_count = 1;
        std::string count;
        for (int64_t a : axes) {
          if (in.is_dynamic(static_cast<int>(a))) {
            const std::string s = size_of_.at({op.operands[0], static_cast<int>(a)});
            count = count.empty() ? s : Binary("multiply", count, s, "tensor<i32>");
          } else {
            static_count *= in.shape.dim(a);
          }
        }
        std::string n = Splat(et, {}, static_cast<double>(static_count));
        if (!count.empty()) {
          const std::string c = Unary("convert", count, "tensor<i32>", RawType(et, {}));
          n = Binary("multiply", n, c, RawType(et, {}));
        }
        const std::string nb = BroadcastInDim(n, et, {}, kept, {});
        r = Binary("divide", r, nb, RawType(et, kept));
      }
      if (op.attrs.keepdims) {
        def(absl::StrCat("\"stablehlo.reshape\"(", r, ") : (",
                         RawType(et, kept), ") -> ", t));
        for (int i = 0, k = 0; i < in.rank(); ++i) {
          if (!std::binary_search(axes.begin(), axes.end(), i)) Carry(id, i, op.operands[0], kept_src[k++]);
        }
      } else {
        alias(r);
        for (size_t k = 0; k < kept_src.size(); ++k)
          Carry(id, static_cast<int>(k), op.operands[0], kept_src[k]);
      }
      return CheckSizesKnown(id);
    }
    case OpCode::kSoftmax: {
      const int last = rt.rank() - 1;
      std::vector<int> dyn;
      if (last >= 0 && rt.is_dynamic(last)) dyn.push_back(last);
      const double lowest = -INFINITY;
      const std::string xm = Masked(op.operands[0], x(0), et, dims, dyn, lowest);
      std::vector<int64_t> rows(dims.begin(), dims.end() - 1);
      std::vector<int64_t> row_map = AllDims(last);
      const std::string mx = Reduce(xm, et, dims, {last}, "maximum", lowest);
      const std::string mxb = BroadcastInDim(mx, et, rows, dims, row_map);
      const std::string sh = Binary("subtract", xm, mxb, t);
      std::string e = Unary("exponential", sh, t, t);
      e = Masked(op.operands[0], e, et, dims, dyn, 0.0);
      const std::string sum = Reduce(e, et, dims, {last}, "add", 0.0);
      const std::string sb = BroadcastInDim(sum, et, rows, dims, row_map);
      def(absl::StrCat("\"stablehlo.divide\"(", e, ", ", sb, ") : (", t, ", ",
                       t, ") -> ", t));
      CarryAligned(id);
      return CheckSizesKnown(id);
    }
    case OpCode::kReshape: {
      TPUSIM_ASSIGN_OR_RETURN(std::string in, ot(0));
      const ValueType& xt = operand_type(0);
      if (xt.any_dynamic()) {
        if (xt.dynamic_dims != 1 || !rt.is_dynamic(0)) {
          return Unsupported(id, "a reshape of a dynamic shape is supported "
                                 "only when dim 0 is the one dynamic dim of "
                                 "both shapes (padding stays at the end)");
        }
        int64_t inner_in = 1, inner_out = 1;
        for (int i = 1; i < xt.rank(); ++i) inner_in *= xt.shape.dim(i);
        for (int i = 1; i < rt.rank(); ++i) inner_out *= rt.shape.dim(i);
        std::string s = size_of_.at({op.operands[0], 0});
        if (inner_in != inner_out) {
          const std::string a = Splat("i32", {}, static_cast<double>(inner_in));
          const std::string b = Splat("i32", {}, static_cast<double>(inner_out));
          s = Binary("divide", Binary("multiply", s, a, "tensor<i32>"), b,
                     "tensor<i32>");
        }
        size_of_[{id, 0}] = s;
      }
      def(absl::StrCat("\"stablehlo.reshape\"(", x(0), ") : (", in, ") -> ", t));
      return CheckSizesKnown(id);
    }
    case OpCode::kTranspose: {
      TPUSIM_ASSIGN_OR_RETURN(std::string in, ot(0));
      def(absl::StrCat("\"stablehlo.transpose\"(", x(0),
                       ") {permutation = ", I64Array(op.attrs.permutation),
                       "} : (", in, ") -> ", t));
      for (size_t i = 0; i < op.attrs.permutation.size(); ++i)
        Carry(id, static_cast<int>(i), op.operands[0],
              static_cast<int>(op.attrs.permutation[i]));
      return CheckSizesKnown(id);
    }
    case OpCode::kBroadcast: {
      alias(NumpyBroadcast(x(0), et, operand_type(0).shape.dims(), dims));
      CarryAligned(id);
      return CheckSizesKnown(id);
    }
    case OpCode::kSlice: {
      TPUSIM_ASSIGN_OR_RETURN(std::string in, ot(0));
      std::vector<int64_t> strides = op.attrs.strides;
      if (strides.empty()) strides.assign(op.attrs.start.size(), 1);
      // A dynamic dim may only be kept whole (the shape rule's condition), so
      // its padding stays at its end and its size carries over.
      const ValueType& xt = operand_type(0);
      for (int d = 0; d < xt.rank(); ++d) {
        if (!xt.is_dynamic(d)) continue;
        if (op.attrs.start[d] != 0 || strides[d] != 1 ||
            op.attrs.limit[d] < xt.shape.dim(d)) {
          return Unsupported(id, "slicing into a dynamic dim");
        }
        Carry(id, d, op.operands[0], d);
      }
      def(absl::StrCat("\"stablehlo.slice\"(", x(0), ") {start_indices = ",
                       I64Array(op.attrs.start), ", limit_indices = ",
                       I64Array(op.attrs.limit), ", strides = ",
                       I64Array(strides), "} : (", in, ") -> ", t));
      return CheckSizesKnown(id);
    }
    case OpCode::kConcat: {
      const int axis = static_cast<int>(op.attrs.axis < 0 ? op.attrs.axis + rt.rank() : op.attrs.axis);
      std::vector<std::string> names, types;
      for (size_t k = 0; k < op.operands.size(); ++k) {
        if (operand_type(k).is_dynamic(axis))
          return Unsupported(id, "concatenating along a dynamic dim");
        names.push_back(x(k));
        TPUSIM_ASSIGN_OR_RETURN(std::string tk, ot(k));
        types.push_back(tk);
      }
      def(absl::StrCat("\"stablehlo.concatenate\"(", absl::StrJoin(names, ", "),
                       ") {dimension = ", axis, " : i64} : (",
                       absl::StrJoin(types, ", "), ") -> ", t));
      CarryAligned(id);
      return CheckSizesKnown(id);
    }
    case OpCode::kGather: {
      const ValueType& pt = operand_type(0);
      const ValueType& it = operand_type(1);
      const int axis = static_cast<int>(op.attrs.axis < 0 ? op.attrs.axis + pt.rank() : op.attrs.axis);
      if (pt.is_dynamic(axis)) return Unsupported(id, "gathering along a dynamic dim");
      std::vector<int64_t> offset_dims, slice_sizes;
      for (int i = 0; i < pt.rank(); ++i) {
        slice_sizes.push_back(i == axis ? 1 : pt.shape.dim(i));
        if (i < axis) offset_dims.push_back(i);
        if (i > axis) offset_dims.push_back(i - 1 + it.rank());
      }
      TPUSIM_ASSIGN_OR_RETURN(std::string tp, ot(0));
      TPUSIM_ASSIGN_OR_RETURN(std::string ti, ot(1));
      def(absl::StrCat(
          "\"stablehlo.gather\"(", x(0), ", ", x(1),
          ") {dimension_numbers = #stablehlo.gather<offset_dims = [",
          Ints(offset_dims), "], collapsed_slice_dims = [", axis,
          "], start_index_map = [", axis, "], index_vector_dim = ", it.rank(),
          ">, indices_are_sorted = false, slice_sizes = ",
          I64Array(slice_sizes), "} : (", tp, ", ", ti, ") -> ", t));
      for (int i = 0; i < pt.rank(); ++i) {
        if (i < axis) Carry(id, i, op.operands[0], i);
        if (i > axis) Carry(id, i - 1 + it.rank(), op.operands[0], i);
      }
      for (int i = 0; i < it.rank(); ++i) Carry(id, axis + i, op.operands[1], i);
      return CheckSizesKnown(id);
    }
    case OpCode::kOneHot: {
      const ValueType& it = operand_type(0);
      TPUSIM_ASSIGN_OR_RETURN(std::string iet, StableHloElementType(it.dtype));
      std::vector<int64_t> map = AllDims(it.rank());
      const std::string ib = BroadcastInDim(x(0), iet, it.shape.dims(), dims, map);
      const std::string iota = Fresh();
      Line(absl::StrCat(iota, " = \"stablehlo.iota\"() {iota_dimension = ",
                        it.rank(), " : i64} : () -> ", RawType(iet, dims)));
      const std::string c = Fresh();
      Line(absl::StrCat(c, " = \"stablehlo.compare\"(", ib, ", ", iota,
                        ") {comparison_direction = "
                        "#stablehlo<comparison_direction EQ>} : (",
                        RawType(iet, dims), ", ", RawType(iet, dims), ") -> ",
                        RawType("i1", dims)));
      const std::string on = Splat(et, dims, op.attrs.on_value);
      const std::string off = Splat(et, dims, op.attrs.off_value);
      def(absl::StrCat("\"stablehlo.select\"(", c, ", ", on, ", ", off,
                       ") : (", RawType("i1", dims), ", ", t, ", ", t, ") -> ",
                       t));
      for (int i = 0; i < it.rank(); ++i) Carry(id, i, op.operands[0], i);
      return CheckSizesKnown(id);
    }
    case OpCode::kScatterAdd: {
      const ValueType& opt = operand_type(0);
      const ValueType& it = operand_type(1);
      const ValueType& ut = operand_type(2);
      if (opt.any_dynamic()) return Unsupported(id, "scatter_add into a dynamic shape");
      const int axis = static_cast<int>(op.attrs.axis < 0 ? op.attrs.axis + opt.rank() : op.attrs.axis);
      std::vector<int> dyn;
      for (int i = 0; i < ut.rank(); ++i) {
        if (ut.is_dynamic(i)) dyn.push_back(i);
      }
      const std::string upd = Masked(op.operands[2], x(2), et, ut.shape.dims(), dyn, 0.0);
      std::vector<int64_t> window;
      for (int i = 0; i < ut.rank(); ++i) {
        if (i < axis || i >= axis + it.rank()) window.push_back(i);
      }
      TPUSIM_ASSIGN_OR_RETURN(std::string ti, ot(1));
      TPUSIM_ASSIGN_OR_RETURN(std::string tu, ot(2));
      Line(absl::StrCat(
          V(id), " = \"stablehlo.scatter\"(", x(0), ", ", x(1), ", ", upd,
          ") ({"));
      AddRegion(et);
      Line(absl::StrCat(
          "}) {indices_are_sorted = false, scatter_dimension_numbers = "
          "#stablehlo.scatter<update_window_dims = [",
          Ints(window), "], inserted_window_dims = [", axis,
          "], scatter_dims_to_operand_dims = [", axis,
          "], index_vector_dim = ", it.rank(),
          ">, unique_indices = false} : (", t, ", ", ti, ", ", tu, ") -> ", t));
      return absl::OkStatus();
    }
    case OpCode::kAllReduce:
    case OpCode::kAllGather:
    case OpCode::kReduceScatter:
    case OpCode::kAllToAll:
    case OpCode::kCollectivePermute: {
      TPUSIM_ASSIGN_OR_RETURN(std::string in, ot(0));
      const ValueType& xt = operand_type(0);
      if (op.code != OpCode::kAllReduce && xt.any_dynamic()) {
        return Unsupported(id, "a collective other than all_reduce on a dynamic shape");
      }
      if (op.code == OpCode::kCollectivePermute) {
        std::vector<std::vector<int64_t>> pairs;
        for (int c = 0; c < cores_; ++c) {
          for (const auto& [src, dst] : op.attrs.source_target_pairs)
            pairs.push_back({src * cores_ + c, dst * cores_ + c});
        }
        def(absl::StrCat("\"stablehlo.collective_permute\"(", x(0),
                         ") {source_target_pairs = ",
                         pairs.empty() ? "dense<> : tensor<0x2xi64>" : I64Matrix(pairs),
                         "} : (", in, ") -> ", t));
        return absl::OkStatus();
      }
      TPUSIM_ASSIGN_OR_RETURN(
          std::vector<std::vector<int64_t>> groups,
          ResolveReplicaGroups(op.code, op.attrs.replica_groups, p_.num_replicas()));
      const std::string rg = I64Matrix(XlaGroups(groups));
      const int64_t group_size = groups.empty() ? 1 : groups[0].size();
      auto norm = [&](int64_t a) { return a < 0 ? a + xt.rank() : a; };
      if (op.code == OpCode::kAllGather) {
        def(absl::StrCat("\"stablehlo.all_gather\"(", x(0),
                         ") {all_gather_dim = ", norm(op.attrs.axis),
                         " : i64, replica_groups = ", rg, "} : (", in, ") -> ", t));
        return absl::OkStatus();
      }
      if (op.code == OpCode::kAllToAll) {
        def(absl::StrCat("\"stablehlo.all_to_all\"(", x(0),
                         ") {concat_dimension = ", norm(op.attrs.concat_axis),
                         " : i64, replica_groups = ", rg,
                         ", split_count = ", group_size,
                         " : i64, split_dimension = ", norm(op.attrs.axis),
                         " : i64} : (", in, ") -> ", t));
        return absl::OkStatus();
      }
      const bool mean = op.attrs.reduce == CollectiveReduce::kMean;
      const std::string target = mean ? Fresh() : V(id);
      if (op.code == OpCode::kAllReduce) {
        Line(absl::StrCat(target, " = \"stablehlo.all_reduce\"(", x(0), ") ({"));
        AddRegion(et);
        Line(absl::StrCat("}) {replica_groups = ", rg, "} : (", in, ") -> ", t));
      } else {
        Line(absl::StrCat(target, " = \"stablehlo.reduce_scatter\"(", x(0), ") ({"));
        AddRegion(et);
        Line(absl::StrCat("}) {replica_groups = ", rg, ", scatter_dimension = ",
                          norm(op.attrs.axis), " : i64} : (", in, ") -> ", t));
      }
      if (mean) {
        const std::string n = Splat(et, dims, static_cast<double>(group_size));
        def(absl::StrCat("\"stablehlo.divide\"(", target, ", ", n, ") : (", t,
                         ", ", t, ") -> ", t));
      }
      CarryAligned(id);
      return CheckSizesKnown(id);
    }
    case OpCode::kConv2D:
    case OpCode::kConv2DBackpropInput:
    case OpCode::kConv2DBackpropFilter:
    case OpCode::kMaxPool2D:
    case OpCode::kMaxPool2DGrad: {
      for (int o : op.operands) {
        if (p_.ops()[o].type.any_dynamic())
          return Unsupported(id, "a convolution or pooling of a dynamic shape");
      }
      return EmitWindowed(id, et, t);
    }
  }
  return Unsupported(id, "unknown op");
}

}  // namespace

absl::StatusOr<std::string> StableHloElementType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return std::string("f32");
    case DType::kF64:
      return std::string("f64");
    case DType::kBF16:
      return std::string("bf16");
    case DType::kI32:
      return std::string("i32");
    case DType::kI64:
      return std::string("i64");
    case DType::kU8:
      return std::string("ui8");
    case DType::kBytes:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "pjrt: dtype ", DTypeName(dtype),
      " has no device representation; allowed: float32, float64, bfloat16, "
      "int32, int64, uint8"));
}

absl::StatusOr<EmittedModule> EmitStableHlo(const Program& program) {
  return Emitter(program).Run();
}

}  // namespace tpusim::runtime::pjrt
