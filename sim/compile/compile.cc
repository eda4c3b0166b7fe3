#include "sim/compile/compile.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/units.h"

namespace tpusim::sim {
namespace {

using runtime::Op;
using runtime::OpCode;
using runtime::ValueType;

enum class Cls {
  kFree,        // a buffer already in HBM: parameter, constant, replica_id,
                // variable_read
  kAlias,       // reshape: its operand's buffer
  kMxu,         // dot, conv2d
  kFusible,     // elementwise (compare, select included), broadcast,
                // slice, concat, variable_assign(_add)
  kReduce,      // reduce_sum/mean/max: takes fusible producers (input fusion)
  kOther,       // a kernel of its own
  kCollective,  // start/done pair
  kRecomputed,  // a cheap elementwise producer evaluated inside each of its
                // consumers' kernels (fusion with duplication): no kernel
};

Cls Classify(OpCode c) {
  switch (c) {
    case OpCode::kParameter:
    case OpCode::kConstant:
    case OpCode::kReplicaId:
    case OpCode::kVariableRead:
      return Cls::kFree;
    case OpCode::kReshape:
      return Cls::kAlias;
    case OpCode::kDot:
    case OpCode::kConv2D:
    case OpCode::kConv2DBackpropInput:
    case OpCode::kConv2DBackpropFilter:
      return Cls::kMxu;
    case OpCode::kReduceSum:
    case OpCode::kReduceMean:
    case OpCode::kReduceMax:
      return Cls::kReduce;
    case OpCode::kBroadcast:
    case OpCode::kCompare:  // elementwise with broadcasting, like a binary op
    case OpCode::kSelect:
    case OpCode::kSlice:   // loop fusion reads the kept elements in place
    case OpCode::kConcat:  // loop fusion reads each piece in place
    case OpCode::kVariableAssign:
    case OpCode::kVariableAssignAdd:
      return Cls::kFusible;
    default:
      break;
  }
  if (runtime::IsElementwiseUnary(c) || runtime::IsElementwiseBinary(c)) {
    return Cls::kFusible;
  }
  if (runtime::IsCollective(c)) return Cls::kCollective;
  return Cls::kOther;
}

bool IsDataMovement(OpCode c) {
  return c == OpCode::kSlice || c == OpCode::kConcat;
}

bool IsAssign(OpCode c) {
  return c == OpCode::kVariableAssign || c == OpCode::kVariableAssignAdd;
}

bool IsKernelOp(Cls c) {
  return c == Cls::kMxu || c == Cls::kFusible || c == Cls::kReduce ||
         c == Cls::kOther;
}

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

MatmulWork MatmulOf(const std::vector<Op>& ops, const Op& op) {
  MatmulWork m;
  m.precision = TimingPrecision(op.attrs.precision);
  if (op.code == OpCode::kDot) {
    const ValueType& lhs = ops[op.operands[0]].type;
    const ValueType& rhs = ops[op.operands[1]].type;
    const runtime::DotDims& d = op.attrs.dot;
    m.batch = Product(lhs.shape.dims(), d.lhs_batch);
    m.k = Product(lhs.shape.dims(), d.lhs_contracting);
    m.m = Product(lhs.shape.dims(),
                  FreeDims(lhs.rank(), d.lhs_batch, d.lhs_contracting));
    m.n = Product(rhs.shape.dims(),
                  FreeDims(rhs.rank(), d.rhs_batch, d.rhs_contracting));
    m.dtype = lhs.dtype;
  } else if (op.code == OpCode::kConv2DBackpropInput) {
    // The input gradient as an implicit GEMM: dx[N*H*W, Cin] = dy patches
    // [N*H*W, Kh*Kw*Cout] x the filter transposed [Kh*Kw*Cout, Cin].
    const ValueType& f = ops[op.operands[1]].type;  // HWIO
    const std::vector<int64_t>& x = op.type.shape.dims();  // NHWC
    m.m = x[0] * x[1] * x[2];
    m.k = f.shape.dim(0) * f.shape.dim(1) * f.shape.dim(3);
    m.n = f.shape.dim(2);
    m.dtype = f.dtype;
  } else if (op.code == OpCode::kConv2DBackpropFilter) {
    // The filter gradient: dw[Kh*Kw*Cin, Cout] = input patches transposed
    // [Kh*Kw*Cin, N*Ho*Wo] x dy [N*Ho*Wo, Cout].
    const ValueType& dy = ops[op.operands[1]].type;  // NHWC
    const std::vector<int64_t>& w = op.type.shape.dims();  // HWIO
    m.m = w[0] * w[1] * w[2];
    m.k = dy.shape.dim(0) * dy.shape.dim(1) * dy.shape.dim(2);
    m.n = w[3];
    m.dtype = dy.dtype;
  } else {
    // Implicit GEMM: rows = N*Ho*Wo, K = Kh*Kw*Cin, N = Cout.
    const ValueType& f = ops[op.operands[1]].type;
    const std::vector<int64_t>& o = op.type.shape.dims();
    m.m = o[0] * o[1] * o[2];
    m.k = f.shape.dim(0) * f.shape.dim(1) * f.shape.dim(2);
    m.n = f.shape.dim(3);
    m.dtype = f.dtype;
  }
  return m;
}

int64_t Elements(const Op& op) { return op.type.shape.num_elements(); }

// The program's op graph with reshapes and recomputed producers looked
// through.
struct Graph {
  std::vector<Cls> cls;
  std::vector<int> base;  // the buffer an op's value is (itself unless alias)
  // The base values op i's kernel reads for it: its operands, with each
  // recomputed producer replaced by what that producer reads (transitively);
  // distinct, in first-use order.
  std::vector<std::vector<int>> eff;
  // The recomputed producers op i's kernel evaluates for it, ascending.
  std::vector<std::vector<int>> recomputed;
  // Of base values, over `eff`: distinct, sorted. Empty for recomputed ops.
  std::vector<std::vector<int>> consumers;
  std::vector<bool> is_output;  // base value is a program output
};

// Fusion with duplication (file comment): whether op p is recomputed in each
// of its consumers' kernels. `direct` are its consumers through reshapes.
// `evaluators` counts the kernel ops that would evaluate it (its consumers,
// through recomputed ones).
bool Recomputable(const runtime::Program& program, const Graph& g,
                  const std::vector<int>& direct, size_t evaluators, int p) {
  const std::vector<Op>& ops = program.ops();
  const Op& op = ops[p];
  if (g.cls[p] != Cls::kFusible || IsAssign(op.code) ||
      IsDataMovement(op.code)) {
    return false;
  }
  if (g.is_output[p] || evaluators < 2) return false;
  // Cheap: no transcendental work.
  if (program.CostOf(runtime::Value{p}).transcendentals != 0) return false;
  for (int k : direct) {
    if ((g.cls[k] != Cls::kFusible && g.cls[k] != Cls::kRecomputed &&
         g.cls[k] != Cls::kReduce) ||
        ops[k].logical_core != op.logical_core) {
      return false;
    }
  }
  // Effectively unary: at most one operand as large (in elements) as the
  // result, no more bytes than the result; the others are broadcast in.
  std::vector<int> seen;
  int full = 0;
  for (int o : op.operands) {
    const int b = g.base[o];
    if (std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
    seen.push_back(b);
    if (Elements(ops[b]) < Elements(op)) continue;
    ++full;
    if (ops[b].type.byte_size() > op.type.byte_size()) return false;
  }
  return full <= 1;
}

Graph BuildGraph(const runtime::Program& program, bool recompute) {
  const std::vector<Op>& ops = program.ops();
  const int n = static_cast<int>(ops.size());
  Graph g;
  g.cls.resize(n);
  g.base.resize(n);
  g.eff.resize(n);
  g.recomputed.resize(n);
  g.consumers.resize(n);
  g.is_output.assign(n, false);
  for (int i = 0; i < n; ++i) {
    g.cls[i] = Classify(ops[i].code);
    g.base[i] = g.cls[i] == Cls::kAlias ? g.base[ops[i].operands[0]] : i;
  }
  for (runtime::Value v : program.outputs()) g.is_output[g.base[v.id]] = true;
  if (recompute) {
    std::vector<std::vector<int>> direct(n);
    for (int i = 0; i < n; ++i) {
      if (g.cls[i] == Cls::kAlias) continue;
      for (int o : ops[i].operands) {
        std::vector<int>& c = direct[g.base[o]];
        if (c.empty() || c.back() != i) c.push_back(i);
      }
    }
    // Consumers first: a producer whose consumer is recomputed is evaluated
    // by that consumer's evaluators.
    std::vector<std::vector<int>> evaluators(n);
    for (int p = n - 1; p >= 0; --p) {
      std::vector<int> e;
      for (int k : direct[p]) {
        if (g.cls[k] == Cls::kRecomputed) {
          e.insert(e.end(), evaluators[k].begin(), evaluators[k].end());
        } else {
          e.push_back(k);
        }
      }
      std::sort(e.begin(), e.end());
      e.erase(std::unique(e.begin(), e.end()), e.end());
      if (Recomputable(program, g, direct[p], e.size(), p)) {
        g.cls[p] = Cls::kRecomputed;
        evaluators[p] = std::move(e);
      }
    }
  }
  auto add = [](std::vector<int>& v, int x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  };
  for (int i = 0; i < n; ++i) {
    if (g.cls[i] == Cls::kAlias) continue;
    for (int o : ops[i].operands) {
      const int b = g.base[o];
      if (g.cls[b] != Cls::kRecomputed) {
        add(g.eff[i], b);
        continue;
      }
      for (int e : g.eff[b]) add(g.eff[i], e);
      add(g.recomputed[i], b);
      for (int r : g.recomputed[b]) add(g.recomputed[i], r);
    }
    std::sort(g.recomputed[i].begin(), g.recomputed[i].end());
  }
  for (int i = 0; i < n; ++i) {
    if (g.cls[i] == Cls::kAlias || g.cls[i] == Cls::kRecomputed) continue;
    for (int b : g.eff[i]) g.consumers[b].push_back(i);
  }
  return g;
}

// Fusion groups: gid[i] for kernel ops, members[g] ascending.
struct Groups {
  std::vector<int> gid;
  std::vector<std::vector<int>> members;
};

class Fuser {
 public:
  Fuser(const runtime::Program& program, const Graph& graph)
      : ops_(program.ops()), g_(graph) {
    const int n = static_cast<int>(ops_.size());
    groups_.gid.assign(n, -1);
    in_set_.assign(n, false);
    visited_.assign(n, 0);
    for (int i = 0; i < n; ++i) {
      if (IsKernelOp(g_.cls[i])) {
        groups_.gid[i] = static_cast<int>(groups_.members.size());
        groups_.members.push_back({i});
      }
    }
  }

  // Phase 1, in program order: producers with one consumer op (chains and
  // epilogues). Phase 2, in reverse program order: a producer with several
  // consumers joins them only when they already form one kernel (so a shared
  // value such as a scalar feeding many independent updates never glues their
  // kernels together). Phase 3, in program order: sibling reductions (kernels
  // holding compatible reductions that read a common value as large as their
  // input) merge into one multi-output kernel. Phase 4, in reverse program
  // order: a producer whose consumers did not all join it fuses into the
  // first consumer kernel (program order) that legally takes it, and its
  // value leaves that kernel as an extra output for the others.
  void Run() {
    const int n = static_cast<int>(ops_.size());
    for (int p = 0; p < n; ++p) {
      if (g_.consumers[p].size() == 1) TryFuse(p, /*single_kernel=*/false);
    }
    for (int p = n - 1; p >= 0; --p) {
      if (g_.consumers[p].size() > 1) TryFuse(p, /*single_kernel=*/true);
    }
    for (int v = 0; v < n; ++v) {
      if (g_.consumers[v].size() > 1) FuseSiblingReductions(v);
    }
    for (int v = 0; v < n; ++v) {
      if (g_.consumers[v].size() > 1) FuseSiblingUpdates(v);
    }
    for (int p = n - 1; p >= 0; --p) {
      if (g_.consumers[p].size() > 1) FuseIntoOneConsumer(p);
    }
  }

  // Phase 3 for the readers of value v.
  void FuseSiblingReductions(int v) {
    int acc = -1;
    for (int k : g_.consumers[v]) {
      const int gk = groups_.gid[k];
      if (gk < 0 || gk == acc) continue;
      const int r = ReductionOf(gk);
      if (r < 0 || Elements(ops_[ops_[r].operands[0]]) != Elements(ops_[v])) {
        continue;
      }
      if (acc < 0) {
        acc = gk;
        continue;
      }
      std::vector<int> merge = {std::min(acc, gk), std::max(acc, gk)};
      if (Legal(merge)) {
        Merge(merge);
        acc = merge[0];
      }
    }
  }

  // Phase 3b for the readers of value v: kernels that update variables (no
  // dot, conv or reduction) and read v, which has at least as many elements
  // as each variable they update (an all-reduced gradient bucket, not a
  // shared learning rate), merge into one multi-output update kernel.
  void FuseSiblingUpdates(int v) {
    int acc = -1;
    for (int k : g_.consumers[v]) {
      const int gk = groups_.gid[k];
      if (gk < 0 || gk == acc) continue;
      bool update = false;
      bool ok = true;
      for (int m : groups_.members[gk]) {
        if (g_.cls[m] == Cls::kMxu || g_.cls[m] == Cls::kReduce) ok = false;
        if (IsAssign(ops_[m].code)) {
          update = true;
          if (Elements(ops_[m]) > Elements(ops_[v])) ok = false;
        }
      }
      if (!ok || !update) continue;
      if (acc < 0) {
        acc = gk;
        continue;
      }
      std::vector<int> merge = {std::min(acc, gk), std::max(acc, gk)};
      if (Legal(merge)) {
        Merge(merge);
        acc = merge[0];
      }
    }
  }

  // Phase 4 for producer p.
  void FuseIntoOneConsumer(int p) {
    const Cls c = g_.cls[p];
    if (c != Cls::kMxu && c != Cls::kFusible) return;
    if (IsAssign(ops_[p].code)) return;
    const int gp = groups_.gid[p];
    for (int k : g_.consumers[p]) {
      const int gk = groups_.gid[k];
      if (gk == gp ||
          (g_.cls[k] != Cls::kFusible && g_.cls[k] != Cls::kReduce) ||
          ops_[k].logical_core != ops_[p].logical_core) {
        continue;
      }
      std::vector<int> merge = {std::min(gp, gk), std::max(gp, gk)};
      if (Legal(merge)) {
        Merge(merge);
        return;
      }
    }
  }

  // The first reduction in group gi (-1: none).
  int ReductionOf(int gi) const {
    for (int m : groups_.members[gi]) {
      if (g_.cls[m] == Cls::kReduce) return m;
    }
    return -1;
  }

  void TryFuse(int p, bool single_kernel) {
    const Cls c = g_.cls[p];
    if (c != Cls::kMxu && c != Cls::kFusible) return;
    if (IsAssign(ops_[p].code)) return;  // an update ends a fusion
    const std::vector<int>& cons = g_.consumers[p];
    std::vector<int> merge = {groups_.gid[p]};
    for (int k : cons) {
      if ((g_.cls[k] != Cls::kFusible && g_.cls[k] != Cls::kReduce) ||
          ops_[k].logical_core != ops_[p].logical_core) {
        return;
      }
      if (single_kernel && groups_.gid[k] != groups_.gid[cons[0]]) return;
      merge.push_back(groups_.gid[k]);
    }
    std::sort(merge.begin(), merge.end());
    merge.erase(std::unique(merge.begin(), merge.end()), merge.end());
    if (merge.size() > 1 && Legal(merge)) Merge(merge);
  }

  Groups Take() && { return std::move(groups_); }

 private:
  // Whether the union of groups `merge` is a legal kernel (file comment).
  bool Legal(const std::vector<int>& merge) {
    std::vector<int> set;
    for (int gi : merge) {
      for (int m : groups_.members[gi]) set.push_back(m);
    }
    for (int m : set) in_set_[m] = true;
    bool ok = true;
    int mxu = 0;
    int first_reduce = -1;
    bool moves = false;
    for (int m : set) {
      if (g_.cls[m] == Cls::kMxu) ++mxu;
      if (IsDataMovement(ops_[m].code)) moves = true;
      if (g_.cls[m] == Cls::kReduce) {
        if (first_reduce < 0) {
          first_reduce = m;
        } else if (!SameReduction(first_reduce, m)) {
          ok = false;
        }
      }
      if (ops_[m].logical_core != ops_[set[0]].logical_core) ok = false;
      int inside = 0;
      for (int k : g_.consumers[m]) inside += in_set_[k] ? 1 : 0;
      // An update or a reduction ends the kernel. (A value some consumers
      // read inside and others outside is an extra output.)
      if (inside != 0 &&
          (IsAssign(ops_[m].code) || g_.cls[m] == Cls::kReduce)) {
        ok = false;
      }
    }
    if (mxu > 1 || (mxu == 1 && (first_reduce >= 0 || moves))) ok = false;
    if (ok) ok = !Cycle(set);
    for (int m : set) in_set_[m] = false;
    return ok;
  }

  // Reductions over the same input shape and the same axes: one loop nest.
  bool SameReduction(int a, int b) const {
    auto axes = [&](int r) {
      const Op& op = ops_[r];
      const int rank = ops_[op.operands[0]].type.rank();
      std::vector<int64_t> out;
      for (int64_t x : op.attrs.axes) out.push_back(x < 0 ? x + rank : x);
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
      return out;
    };
    return ops_[ops_[a].operands[0]].type.shape ==
               ops_[ops_[b].operands[0]].type.shape &&
           axes(a) == axes(b);
  }

  // A path from the set to itself through an op (or group) outside it.
  bool Cycle(const std::vector<int>& set) {
    const int max_id = *std::max_element(set.begin(), set.end());
    ++epoch_;
    std::vector<int> stack;
    auto visit = [&](int x) {
      if (x > max_id || in_set_[x] || visited_[x] == epoch_) return;
      visited_[x] = epoch_;
      stack.push_back(x);
    };
    for (int m : set) {
      for (int k : g_.consumers[m]) visit(k);
    }
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      if (groups_.gid[x] >= 0) {
        for (int y : groups_.members[groups_.gid[x]]) visit(y);
      }
      for (int k : g_.consumers[x]) {
        if (in_set_[k]) return true;
        visit(k);
      }
    }
    return false;
  }

  void Merge(const std::vector<int>& merge) {
    const int into = merge[0];
    for (size_t i = 1; i < merge.size(); ++i) {
      for (int m : groups_.members[merge[i]]) {
        groups_.gid[m] = into;
        groups_.members[into].push_back(m);
      }
      groups_.members[merge[i]].clear();
    }
    std::sort(groups_.members[into].begin(), groups_.members[into].end());
  }

  const std::vector<Op>& ops_;
  const Graph& g_;
  Groups groups_;
  std::vector<bool> in_set_;
  std::vector<int> visited_;
  int epoch_ = 0;
};

int64_t BytesOf(const Op& op) { return op.type.byte_size(); }

// Sums of byte and element counts saturate at INT64_MAX (hostile shapes), as
// OpCost totals do.
void Add(int64_t& total, int64_t v) {
  total = runtime::OpCost::SaturatingAdd(total, v);
}
int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return INT64_MAX;
  return out;
}

}  // namespace

const char* CompiledKernelKindName(CompiledKernelKind kind) {
  switch (kind) {
    case CompiledKernelKind::kMxu:
      return "mxu";
    case CompiledKernelKind::kVector:
      return "vector";
    case CompiledKernelKind::kCollectiveStart:
      return "collective-start";
    case CompiledKernelKind::kCollectiveDone:
      return "collective-done";
    case CompiledKernelKind::kCopy:
      return "copy";
  }
  return "?";
}

Precision TimingPrecision(runtime::Precision p) {
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

int64_t CoreMemory::total() const {
  int64_t t = 0;
  for (int64_t v : {variables, optimizer_state, parameters, infeed, constants,
                    live_peak}) {
    Add(t, v);
  }
  return t;
}

int64_t CompiledProgram::total_flops() const {
  int64_t t = 0;
  for (const Kernel& k : kernels) t = runtime::OpCost::SaturatingAdd(t, k.flops);
  return t;
}

int64_t CompiledProgram::total_hbm_bytes() const {
  int64_t t = 0;
  for (const Kernel& k : kernels) {
    t = runtime::OpCost::SaturatingAdd(t, k.work.hbm_bytes);
  }
  return t;
}

absl::StatusOr<CompiledProgram> CompileProgram(const runtime::Program& program,
                                               const CompileOptions& options) {
  if (options.infeed_depth < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("CompileOptions.infeed_depth ", options.infeed_depth,
                     " must be >= 0"));
  }
  for (int slot : options.optimizer_state_slots) {
    if (program.FindVariable(slot) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CompileOptions.optimizer_state_slots: slot ", slot,
          " is not a variable of program ", program.name()));
    }
  }
  const std::vector<Op>& ops = program.ops();
  const int n = static_cast<int>(ops.size());
  const int cores = program.num_cores_per_replica();
  const Graph graph = BuildGraph(program, /*recompute=*/options.fusion);
  Fuser fuser(program, graph);
  if (options.fusion) fuser.Run();
  const Groups groups = std::move(fuser).Take();

  // ---- kernels, in creation order (indices remapped to issue order below).
  std::vector<Kernel> ks;
  std::vector<int> value_kernel(n, -1);  // base value -> producing kernel
  std::map<std::pair<int, int>, int> copy_of;  // (base value, core) -> copy

  // The kernel a consumer on `core` waits for to read base value `b` (-1:
  // none); creates the cross-core copy on first use.
  auto producer_for = [&](int b, int core) -> int {
    const int src_core = ops[b].logical_core;
    if (src_core == core) return value_kernel[b];
    auto it = copy_of.find({b, core});
    if (it != copy_of.end()) return it->second;
    Kernel k;
    k.name = absl::StrCat("copy.", b, ".to", core);
    k.kind = CompiledKernelKind::kCopy;
    k.op_ids = {b};
    k.core = core;
    k.copy_from_core = src_core;
    k.copy_bytes = BytesOf(ops[b]);
    if (value_kernel[b] >= 0) k.deps.push_back(value_kernel[b]);
    ks.push_back(std::move(k));
    const int id = static_cast<int>(ks.size()) - 1;
    copy_of[{b, core}] = id;
    return id;
  };
  auto add_dep = [](Kernel& k, int d) {
    if (d >= 0 && std::find(k.deps.begin(), k.deps.end(), d) == k.deps.end()) {
      k.deps.push_back(d);
    }
  };

  // Builds the kernel computing op i (and, first, those it reads), so every
  // kernel is created after its deps.
  std::vector<bool> built(n, false);
  std::function<void(int)> build = [&](int i) {
    if (built[i]) return;
    built[i] = true;
    const Op& op = ops[i];
    const Cls c = graph.cls[i];
    if (c == Cls::kCollective) {
      const int b0 = graph.base[op.operands[0]];
      build(b0);
      const int b = graph.base[op.operands[0]];
      Kernel start;
      start.name = absl::StrCat(runtime::OpCodeName(op.code), ".", i, ".start");
      start.kind = CompiledKernelKind::kCollectiveStart;
      start.op_ids = {i};
      start.core = op.logical_core;
      start.collective = op.code;
      start.collective_bytes = op.code == OpCode::kAllGather
                                   ? BytesOf(op)
                                   : BytesOf(ops[b]);
      start.replica_groups = op.attrs.replica_groups;
      add_dep(start, producer_for(b, op.logical_core));
      Kernel done = start;
      done.name = absl::StrCat(runtime::OpCodeName(op.code), ".", i, ".done");
      done.kind = CompiledKernelKind::kCollectiveDone;
      const int s = static_cast<int>(ks.size());
      start.pair = s + 1;
      done.pair = s;
      done.deps = {s};
      ks.push_back(std::move(start));
        ks.push_back(std::move(done));
        value_kernel[i] = s + 1;
      return;
    }
    if (!IsKernelOp(c)) return;
    const int gi = groups.gid[i];
    const std::vector<int>& members = groups.members[gi];
    for (int m : members) built[m] = true;
    for (int m : members) {
      for (int b : graph.eff[m]) build(b);
    }
    // The recomputed producers this kernel evaluates for its members.
    std::vector<int> recomputed;
    for (int m : members) {
      for (int r : graph.recomputed[m]) recomputed.push_back(r);
    }
    std::sort(recomputed.begin(), recomputed.end());
    recomputed.erase(std::unique(recomputed.begin(), recomputed.end()),
                     recomputed.end());
    Kernel k;
    k.op_ids = members;
    k.op_ids.insert(k.op_ids.end(), recomputed.begin(), recomputed.end());
    std::sort(k.op_ids.begin(), k.op_ids.end());
    const int root = members.back();
    k.core = ops[root].logical_core;
    k.name = k.op_ids.size() == 1
                 ? absl::StrCat(runtime::OpCodeName(ops[root].code), ".", root)
                 : absl::StrCat("fusion.", root);
    k.kind = CompiledKernelKind::kVector;
    std::vector<int> inputs;
    // Inputs read in full, and the bytes of inputs only sliced or gathered.
    std::set<int> full_read;
    std::map<int, int64_t> partial_bytes;
    // The elements of each recomputed producer this kernel evaluates: all of
    // them, unless the kernel reads it only through slices (then the sliced
    // elements; a producer of it evaluates as many). Consumers first.
    std::map<int, int64_t> evaluated;
    for (auto it = recomputed.rbegin(); it != recomputed.rend(); ++it) {
      const int r = *it;
      const int64_t all = Elements(ops[r]);
      int64_t e = 0;
      auto reads = [&](const Op& reader) {
        for (int o : reader.operands) {
          if (graph.base[o] == r) return true;
        }
        return false;
      };
      for (int m : members) {
        if (!reads(ops[m])) continue;
        Add(e, ops[m].code == OpCode::kSlice ? Elements(ops[m]) : all);
      }
      for (const auto& [r2, e2] : evaluated) {
        if (reads(ops[r2])) Add(e, e2);
      }
      evaluated[r] = std::min(e, all);
    }
    for (int r : recomputed) {
      const runtime::OpCost cost = program.CostOf(runtime::Value{r});
      k.flops = runtime::OpCost::SaturatingAdd(k.flops, cost.flops);
      // Element work scales with the evaluated fraction (elementwise and
      // broadcast cost rules are per result element).
      const int64_t all = Elements(ops[r]);
      const int64_t work =
          all == 0 ? 0
                   : static_cast<int64_t>(static_cast<long double>(cost.flops) *
                                          evaluated[r] / all);
      const int64_t trans =
          all == 0 ? 0
                   : static_cast<int64_t>(
                         static_cast<long double>(cost.transcendentals) *
                         evaluated[r] / all);
      Add(k.work.transcendental_elements, trans);
      Add(k.work.vector_elements, work);
    }
    auto read_input = [&](int b) {
      if (std::find(inputs.begin(), inputs.end(), b) == inputs.end()) {
        inputs.push_back(b);
      }
    };
    for (int m : members) {
      const Op& mo = ops[m];
      const runtime::OpCost cost = program.CostOf(runtime::Value{m});
      k.flops = runtime::OpCost::SaturatingAdd(k.flops, cost.flops);
      Add(k.work.transcendental_elements, cost.transcendentals);
      if (graph.cls[m] == Cls::kMxu) {
        k.kind = CompiledKernelKind::kMxu;
        k.work.matmuls.push_back(MatmulOf(ops, mo));
      } else {
        // Element operations on the vector unit: the cost rule's FLOPs; pure
        // data movement has none and is HBM-bound.
        Add(k.work.vector_elements, cost.flops);
      }
      for (size_t oi = 0; oi < mo.operands.size(); ++oi) {
        const int b = graph.base[mo.operands[oi]];
        if (graph.cls[b] == Cls::kRecomputed) {
          // Its inputs are read in full; a slice of it reads only its
          // elements of the inputs as large as the recomputed value (an
          // elementwise chain), and the broadcast ones in full.
          for (int e : graph.eff[b]) {
            if (groups.gid[e] == gi && IsKernelOp(graph.cls[e])) continue;
            read_input(e);
            if (mo.code == OpCode::kSlice &&
                Elements(ops[e]) == Elements(ops[b])) {
              Add(partial_bytes[e],
                  SaturatingMul(Elements(mo),
                                runtime::DTypeSize(ops[e].type.dtype)));
            } else {
              full_read.insert(e);
            }
          }
          continue;
        }
        if (groups.gid[b] == gi && IsKernelOp(graph.cls[b])) continue;
        read_input(b);
        // A slice (or a gather's table) reads only the elements it uses.
        const bool partial_read =
            oi == 0 &&
            (mo.code == OpCode::kSlice || mo.code == OpCode::kGather);
        if (partial_read) {
          Add(partial_bytes[b], BytesOf(mo));
        } else {
          full_read.insert(b);
        }
      }
      if (mo.code == OpCode::kVariableAssignAdd) {
        Add(k.hbm_read_bytes, BytesOf(mo));  // the variable's old value
      }
      if (IsAssign(mo.code)) {
        Add(k.hbm_write_bytes, BytesOf(mo));  // the variable, in place
        continue;
      }
      bool leaves = graph.is_output[m];
      for (int kc : graph.consumers[m]) {
        if (groups.gid[kc] != gi || !IsKernelOp(graph.cls[kc])) leaves = true;
      }
      if (leaves) Add(k.hbm_write_bytes, BytesOf(mo));
    }
    for (int b : inputs) {
      Add(k.hbm_read_bytes,
          full_read.count(b) != 0
              ? BytesOf(ops[b])
              : std::min(BytesOf(ops[b]), partial_bytes[b]));
      add_dep(k, producer_for(b, k.core));
    }
    k.work.hbm_bytes =
        runtime::OpCost::SaturatingAdd(k.hbm_read_bytes, k.hbm_write_bytes);
    ks.push_back(std::move(k));
    const int id = static_cast<int>(ks.size()) - 1;
    for (int m : members) value_kernel[m] = id;
  };
  for (int i = 0; i < n; ++i) build(i);

  // ---- issue order. Compute kernels sit at 4*root+2; a done just before the
  // first kernel that needs it (need = min over dependents - 1, the end when
  // nothing does); starts and copies are issued as soon as they are ready.
  // Work that waits on a collective (a done and everything after one) goes
  // after the work that does not, so independent compute fills the time the
  // collective is in flight.
  const int nk = static_cast<int>(ks.size());
  std::vector<std::vector<int>> dependents(nk);
  for (int k = 0; k < nk; ++k) {
    for (int d : ks[k].deps) dependents[d].push_back(k);
  }
  const int64_t kEnd = 4 * int64_t{n} + 8;
  std::vector<int64_t> need(nk, -1);
  // Kernels were created in an order where every dep precedes its dependent,
  // so a reverse sweep sees all dependents first.
  // A compute kernel is also needed before its first dependent (a
  // multi-output kernel may feed one whose root comes earlier).
  for (int k = nk - 1; k >= 0; --k) {
    const Kernel& kk = ks[k];
    int64_t m = kEnd;
    if (kk.kind == CompiledKernelKind::kMxu ||
        kk.kind == CompiledKernelKind::kVector) {
      m = 4 * int64_t{kk.op_ids.back()} + 2;
    }
    for (int d : dependents[k]) m = std::min(m, need[d] - 1);
    need[k] = m;
  }
  std::vector<bool> waits(nk, false);
  for (int k = 0; k < nk; ++k) {
    waits[k] = ks[k].kind == CompiledKernelKind::kCollectiveDone;
    for (int d : ks[k].deps) waits[k] = waits[k] || waits[d];
  }
  std::vector<int> missing(nk, 0);
  for (int k = 0; k < nk; ++k) {
    missing[k] = static_cast<int>(ks[k].deps.size());
  }
  // (eager ? 0 : 1, waits on a collective, need, creation index)
  using Entry = std::tuple<int, int, int64_t, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  auto push = [&](int k) {
    const bool eager = ks[k].kind == CompiledKernelKind::kCollectiveStart ||
                       ks[k].kind == CompiledKernelKind::kCopy;
    ready.push({eager ? 0 : 1, eager || !waits[k] ? 0 : 1, need[k], k});
  };
  for (int k = 0; k < nk; ++k) {
    if (missing[k] == 0) push(k);
  }
  std::vector<int> order;
  std::vector<int> position(nk, -1);
  while (!ready.empty()) {
    const int k = std::get<3>(ready.top());
    ready.pop();
    position[k] = static_cast<int>(order.size());
    order.push_back(k);
    for (int d : dependents[k]) {
      if (--missing[d] == 0) push(d);
    }
  }

  CompiledProgram out;
  out.kernels.reserve(nk);
  for (int k : order) {
    Kernel kk = std::move(ks[k]);
    for (int& d : kk.deps) d = position[d];
    std::sort(kk.deps.begin(), kk.deps.end());
    if (kk.pair >= 0) kk.pair = position[kk.pair];
    out.kernels.push_back(std::move(kk));
  }
  out.kernel_of_op.assign(n, -1);
  for (int i = 0; i < n; ++i) {
    const int b = graph.base[i];
    if (value_kernel[b] >= 0) out.kernel_of_op[i] = position[value_kernel[b]];
  }
  // A recomputed op: the first kernel (issue order) that evaluates it; the
  // later ones evaluate it again (recomputed_flops).
  for (int t = 0; t < nk; ++t) {
    Kernel& k = out.kernels[t];
    for (int m : k.op_ids) {
      if (graph.cls[m] != Cls::kRecomputed) continue;
      if (out.kernel_of_op[m] < 0) {
        out.kernel_of_op[m] = t;
      } else {
        k.recomputed_flops = runtime::OpCost::SaturatingAdd(
            k.recomputed_flops, program.CostOf(runtime::Value{m}).flops);
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    const int b = graph.base[i];
    if (graph.cls[i] == Cls::kAlias && graph.cls[b] == Cls::kRecomputed) {
      out.kernel_of_op[i] = out.kernel_of_op[b];
    }
  }

  // ---- liveness per core over the issue order.
  // Buffers: (base value, core) -> [alloc, last use].
  struct Buffer {
    int value;
    int core;
    int alloc;
    int last;
  };
  std::vector<Buffer> buffers;
  std::map<std::pair<int, int>, int> buffer_of;
  auto use = [&](int b, int core, int at) {
    auto it = buffer_of.find({b, core});
    if (it == buffer_of.end()) return;  // a free value (counted separately)
    buffers[it->second].last = std::max(buffers[it->second].last, at);
  };
  const int end = nk;  // program outputs stay live to the end
  for (int t = 0; t < nk; ++t) {
    const Kernel& k = out.kernels[t];
    auto alloc = [&](int b, int core) {
      buffer_of[{b, core}] = static_cast<int>(buffers.size());
      buffers.push_back({b, core, t, graph.is_output[b] ? end : t});
    };
    switch (k.kind) {
      case CompiledKernelKind::kCollectiveStart: {
        const int i = k.op_ids[0];
        use(graph.base[ops[i].operands[0]], k.core, t);
        alloc(i, k.core);
        break;
      }
      case CompiledKernelKind::kCollectiveDone: {
        const int i = k.op_ids[0];
        use(graph.base[ops[i].operands[0]], k.core, t);  // kept until done
        use(i, k.core, t);
        break;
      }
      case CompiledKernelKind::kCopy: {
        const int b = k.op_ids[0];
        use(b, k.copy_from_core, t);
        alloc(b, k.core);
        break;
      }
      default: {
        for (int m : k.op_ids) {
          for (int o : ops[m].operands) use(graph.base[o], k.core, t);
        }
        for (int m : k.op_ids) {
          if (IsAssign(ops[m].code)) continue;
          bool leaves = graph.is_output[m];
          for (int kc : graph.consumers[m]) {
            if (std::find(k.op_ids.begin(), k.op_ids.end(), kc) ==
                k.op_ids.end()) {
              leaves = true;
            }
          }
          if (leaves) alloc(m, k.core);
        }
        break;
      }
    }
  }
  out.memory.assign(cores, {});
  std::vector<std::vector<int64_t>> delta(cores,
                                          std::vector<int64_t>(nk + 2, 0));
  for (const Buffer& b : buffers) {
    const int64_t bytes = BytesOf(ops[b.value]);
    Add(delta[b.core][b.alloc], bytes);
    Add(delta[b.core][std::min(b.last, nk) + 1], -bytes);
  }
  for (int c = 0; c < cores; ++c) {
    CoreMemory& mem = out.memory[c];
    int64_t live = 0;
    for (int t = 0; t <= nk; ++t) {
      Add(live, delta[c][t]);
      if (live > mem.live_peak) {
        mem.live_peak = live;
        mem.peak_kernel = std::min(t, nk - 1);
      }
    }
    if (mem.peak_kernel >= 0) {
      std::vector<std::pair<int64_t, int>> at_peak;
      for (const Buffer& b : buffers) {
        if (b.core == c && b.alloc <= mem.peak_kernel &&
            mem.peak_kernel <= b.last) {
          at_peak.push_back({BytesOf(ops[b.value]), b.value});
        }
      }
      std::stable_sort(at_peak.begin(), at_peak.end(),
                       [](const auto& a, const auto& b) {
                         return a.first > b.first;
                       });
      for (size_t i = 0; i < at_peak.size() && i < 5; ++i) {
        const int v = at_peak[i].second;
        mem.largest_at_peak.push_back(absl::StrCat(
            runtime::OpCodeName(ops[v].code), " %", v, ": ",
            ops[v].type.ToString(), ", ", common::HumanBytes(at_peak[i].first)));
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    CoreMemory& mem = out.memory[ops[i].logical_core];
    if (ops[i].code == OpCode::kParameter) Add(mem.parameters, BytesOf(ops[i]));
    if (ops[i].code == OpCode::kConstant) Add(mem.constants, BytesOf(ops[i]));
  }
  for (CoreMemory& mem : out.memory) {
    mem.infeed = SaturatingMul(mem.parameters, options.infeed_depth);
  }
  // Variables are stored on every core with a variable op for their slot
  // (core 0 when none).
  std::map<int64_t, std::vector<bool>> var_cores;
  for (const Op& op : ops) {
    if (op.code == OpCode::kVariableRead || IsAssign(op.code)) {
      std::vector<bool>& on = var_cores[op.attrs.variable_slot];
      on.resize(cores, false);
      on[op.logical_core] = true;
    }
  }
  for (const runtime::VariableDecl& var : program.variables()) {
    std::vector<bool> on(cores, false);
    auto it = var_cores.find(var.slot);
    if (it != var_cores.end()) on = it->second;
    if (std::none_of(on.begin(), on.end(), [](bool b) { return b; })) {
      on[0] = true;
    }
    const int64_t bytes =
        var.shape.IsFullyDefined()
            ? var.shape.num_elements() * runtime::DTypeSize(var.dtype)
            : 0;
    const bool optimizer =
        std::find(options.optimizer_state_slots.begin(),
                  options.optimizer_state_slots.end(),
                  var.slot) != options.optimizer_state_slots.end();
    for (int c = 0; c < cores; ++c) {
      if (!on[c]) continue;
      Add(optimizer ? out.memory[c].optimizer_state : out.memory[c].variables,
          bytes);
    }
  }
  return out;
}

std::string CompiledProgram::FusionText(const runtime::Program& program) const {
  const std::vector<Op>& ops = program.ops();
  std::string s = program.ToText();
  absl::StrAppend(&s, "kernels (issue order) {\n");
  for (size_t t = 0; t < kernels.size(); ++t) {
    const Kernel& k = kernels[t];
    std::vector<std::string> members;
    for (int m : k.op_ids) {
      members.push_back(absl::StrCat("%", m, " ", runtime::OpCodeName(ops[m].code)));
    }
    absl::StrAppend(&s, "  #", t, " core ", k.core, " ",
                    CompiledKernelKindName(k.kind), " ", k.name);
    switch (k.kind) {
      case CompiledKernelKind::kMxu:
      case CompiledKernelKind::kVector:
        absl::StrAppend(&s, " = {", absl::StrJoin(members, ", "), "} reads ",
                        k.hbm_read_bytes, " writes ", k.hbm_write_bytes);
        break;
      case CompiledKernelKind::kCollectiveStart:
        absl::StrAppend(&s, " bytes ", k.collective_bytes);
        break;
      case CompiledKernelKind::kCollectiveDone:
        absl::StrAppend(&s, " start #", k.pair);
        break;
      case CompiledKernelKind::kCopy:
        absl::StrAppend(&s, " from core ", k.copy_from_core, " bytes ",
                        k.copy_bytes);
        break;
    }
    if (!k.deps.empty()) {
      std::vector<std::string> d;
      for (int x : k.deps) d.push_back(absl::StrCat("#", x));
      absl::StrAppend(&s, " after ", absl::StrJoin(d, ","));
    }
    absl::StrAppend(&s, "\n");
  }
  absl::StrAppend(&s, "}\n");
  for (size_t c = 0; c < memory.size(); ++c) {
    const CoreMemory& m = memory[c];
    absl::StrAppend(&s, "hbm core ", c, ": total ", m.total(), " = variables ",
                    m.variables, " + optimizer_state ", m.optimizer_state,
                    " + parameters ", m.parameters, " + infeed ", m.infeed,
                    " + constants ", m.constants, " + live_peak ", m.live_peak,
                    "\n");
  }
  return s;
}

}  // namespace tpusim::sim
