#include "sim/lower.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tpusim::sim {
namespace {

using runtime::Op;
using runtime::OpCode;
using runtime::ValueType;

int64_t Product(const std::vector<int64_t>& dims,
                const std::vector<int64_t>& which) {
  int64_t p = 1;
  for (int64_t d : which) p *= dims[d];
  return p;
}

// The dims of a rank-r shape that are not in `a` or `b`.
std::vector<int64_t> FreeDims(int rank, const std::vector<int64_t>& a,
                              const std::vector<int64_t>& b) {
  std::vector<int64_t> out;
  for (int i = 0; i < rank; ++i) {
    if (std::find(a.begin(), a.end(), i) == a.end() &&
        std::find(b.begin(), b.end(), i) == b.end()) {
      out.push_back(i);
    }
  }
  return out;
}


// Ops that are views or live elsewhere: no kernel, no new HBM buffer.
bool IsAlias(OpCode code) {
  return code == OpCode::kReshape || code == OpCode::kVariableRead;
}

// The op's precision attribute (XLA's PrecisionConfig) for the MXU passes.
Precision TimingPrecisionOf(runtime::Precision p) {
  switch (p) {
    case runtime::Precision::kHigh:
      return Precision::kHigh;
    case runtime::Precision::kHighest:
      return Precision::kHighest;
    case runtime::Precision::kDefault:
      break;
  }
  return Precision::kDefault;
}

}  // namespace

LoweredProgram Lower(const runtime::Program& program) {
  const std::vector<Op>& ops = program.ops();
  LoweredProgram out;
  out.ops.resize(ops.size());
  const int cores = program.num_cores_per_replica();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    LoweredOp& l = out.ops[i];
    l.name = absl::StrCat(runtime::OpCodeName(op.code), ".", i);
    const runtime::OpCost cost = program.CostOf(runtime::Value{static_cast<int>(i)});
    switch (op.code) {
      case OpCode::kParameter:
      case OpCode::kConstant:
      case OpCode::kReplicaId:
      case OpCode::kReshape:
      case OpCode::kVariableRead:
        l.kind = KernelKind::kNone;
        continue;
      default:
        break;
    }
    if (runtime::IsCollective(op.code)) {
      l.kind = KernelKind::kCollective;
      const ValueType& operand = ops[op.operands[0]].type;
      // sim/net sizes: all_gather S is the gathered (output) array, the rest
      // their input.
      l.bytes = op.code == OpCode::kAllGather ? op.type.byte_size()
                                              : operand.byte_size();
      continue;
    }
    l.kind = KernelKind::kCompute;
    l.work.hbm_bytes = cost.bytes_read + cost.bytes_written;
    if (op.code == OpCode::kDot) {
      const ValueType& lhs = ops[op.operands[0]].type;
      const ValueType& rhs = ops[op.operands[1]].type;
      const runtime::DotDims& d = op.attrs.dot;
      MatmulWork m;
      m.batch = Product(lhs.shape.dims(), d.lhs_batch);
      m.k = Product(lhs.shape.dims(), d.lhs_contracting);
      m.m = Product(lhs.shape.dims(),
                    FreeDims(lhs.rank(), d.lhs_batch, d.lhs_contracting));
      m.n = Product(rhs.shape.dims(),
                    FreeDims(rhs.rank(), d.rhs_batch, d.rhs_contracting));
      m.dtype = lhs.dtype;
      m.precision = TimingPrecisionOf(op.attrs.precision);
      l.work.matmuls.push_back(m);
    } else if (op.code == OpCode::kConv2D) {
      // Implicit GEMM: rows = N*Ho*Wo, K = Kh*Kw*Cin, N = Cout.
      const ValueType& f = ops[op.operands[1]].type;
      const std::vector<int64_t>& o = op.type.shape.dims();
      MatmulWork m;
      m.m = o[0] * o[1] * o[2];
      m.k = f.shape.dim(0) * f.shape.dim(1) * f.shape.dim(2);
      m.n = f.shape.dim(3);
      m.dtype = f.dtype;
      m.precision = TimingPrecisionOf(op.attrs.precision);
      l.work.matmuls.push_back(m);
    } else {
      // Element operations on the vector unit: the cost rule's FLOPs (one per
      // element for elementwise ops, per input element for reductions), and
      // none for pure data movement, which is HBM-bound.
      l.work.vector_elements = cost.flops;
      l.work.transcendental_elements = cost.transcendentals;
    }
  }

  // The schedule: ops that (through data or a variable slot) depend on a
  // collective's result go after all the others.
  {
    std::vector<bool> after(ops.size(), false);
    std::map<int64_t, bool> slot_after;  // the last op on the slot was "after"
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      bool dep = false;
      for (int o : op.operands) {
        dep = dep || after[o] || runtime::IsCollective(ops[o].code);
      }
      const bool variable_op = op.code == OpCode::kVariableRead ||
                               op.code == OpCode::kVariableAssign ||
                               op.code == OpCode::kVariableAssignAdd;
      if (variable_op) {
        bool& last = slot_after[op.attrs.variable_slot];
        dep = dep || last;
        last = dep;
      }
      after[i] = dep;
    }
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < ops.size(); ++i) {
        if (after[i] == (pass == 1)) out.schedule.push_back(static_cast<int>(i));
      }
    }
  }

  // Liveness, per logical core: a value is live from its op to its last use.
  std::vector<int> last_use(ops.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int o : ops[i].operands) last_use[o] = static_cast<int>(i);
  }
  for (runtime::Value v : program.outputs()) {
    last_use[v.id] = static_cast<int>(ops.size());
  }
  out.peak_live_bytes.assign(cores, 0);
  out.variable_bytes.assign(cores, 0);
  out.largest_at_peak.assign(cores, {});
  std::vector<int64_t> live(cores, 0);
  std::vector<std::vector<int>> live_set(cores);
  std::vector<std::vector<int>> freed_at(ops.size() + 1);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (last_use[i] >= 0) freed_at[last_use[i]].push_back(static_cast<int>(i));
  }
  auto describe = [&](int v) {
    return std::make_pair(ops[v].type.byte_size(),
                          absl::StrCat("%", v, " ", ops[v].type.ToString(), " (",
                                       ops[v].type.byte_size(), " bytes)"));
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const int c = op.logical_core;
    if (!IsAlias(op.code) && last_use[i] >= 0) {
      live[c] += op.type.byte_size();
      live_set[c].push_back(static_cast<int>(i));
      if (live[c] > out.peak_live_bytes[c]) {
        out.peak_live_bytes[c] = live[c];
        std::vector<std::pair<int64_t, std::string>> values;
        for (int v : live_set[c]) values.push_back(describe(v));
        std::stable_sort(values.begin(), values.end(),
                         [](const auto& a, const auto& b) {
                           return a.first > b.first;
                         });
        out.largest_at_peak[c].clear();
        for (size_t k = 0; k < values.size() && k < 5; ++k) {
          out.largest_at_peak[c].push_back(values[k].second);
        }
      }
    }
    for (int v : freed_at[i]) {
      const int vc = ops[v].logical_core;
      if (IsAlias(ops[v].code)) continue;
      live[vc] -= ops[v].type.byte_size();
      live_set[vc].erase(
          std::find(live_set[vc].begin(), live_set[vc].end(), v));
    }
  }
  for (const runtime::VariableDecl& var : program.variables()) {
    // Variables are stored on every core that uses them; count them on each
    // core with a variable op for the slot (core 0 when none).
    std::vector<bool> on(cores, false);
    for (const Op& op : ops) {
      if ((op.code == OpCode::kVariableRead ||
           op.code == OpCode::kVariableAssign ||
           op.code == OpCode::kVariableAssignAdd) &&
          op.attrs.variable_slot == var.slot) {
        on[op.logical_core] = true;
      }
    }
    if (std::none_of(on.begin(), on.end(), [](bool b) { return b; })) {
      on[0] = true;
    }
    const int64_t bytes =
        var.shape.IsFullyDefined()
            ? var.shape.num_elements() * runtime::DTypeSize(var.dtype)
            : 0;
    for (int c = 0; c < cores; ++c) {
      if (on[c]) out.variable_bytes[c] += bytes;
    }
  }
  return out;
}

}  // namespace tpusim::sim
