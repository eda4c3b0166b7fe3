#include "sim/xla/hlo_analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tpusim::sim::xla {
namespace {

const std::set<std::string>& Elementwise() {
  static const auto* s = new std::set<std::string>{
      "abs", "add", "and", "ceil", "clamp", "clz", "compare", "complex",
      "divide", "floor", "imag", "is-finite", "maximum", "minimum",
      "multiply", "negate", "not", "or", "popcnt", "real", "reduce-precision",
      "remainder", "round-nearest-afz", "round-nearest-even", "select",
      "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign",
      "subtract", "xor", "stochastic-convert"};
  return *s;
}

const std::set<std::string>& Transcendental() {
  static const auto* s = new std::set<std::string>{
      "atan2", "cbrt", "cosine", "erf", "exponential",
      "exponential-minus-one", "log", "log-plus-one", "logistic", "power",
      "rsqrt", "sine", "sqrt", "tan", "tanh"};
  return *s;
}

// Data movement and layout: kernels of their own at top level, no FLOPs.
const std::set<std::string>& DataMovement() {
  static const auto* s = new std::set<std::string>{
      "bitcast-convert", "broadcast", "concatenate", "convert", "copy",
      "dynamic-slice", "dynamic-update-slice", "gather", "iota", "pad",
      "reshape", "reverse", "slice", "transpose", "sort", "rng",
      "rng-bit-generator", "top-k", "get-dimension-size",
      "set-dimension-size", "select-and-scatter"};
  return *s;
}

// Not kernels: no device work of their own.
const std::set<std::string>& NoWork() {
  static const auto* s = new std::set<std::string>{
      "parameter", "constant", "get-tuple-element", "tuple", "bitcast",
      "after-all", "partition-id", "replica-id", "opt-barrier",
      "optimization-barrier", "add-dependency", "domain", "async-update"};
  return *s;
}

const std::set<std::string>& Collectives() {
  static const auto* s = new std::set<std::string>{
      "all-reduce", "all-gather", "reduce-scatter", "all-to-all",
      "collective-permute", "collective-broadcast"};
  return *s;
}

const std::set<std::string>& Unsupported() {
  static const auto* s = new std::set<std::string>{
      "while", "conditional", "call", "send", "send-done", "recv",
      "recv-done", "infeed", "outfeed", "rng-get-and-update-state"};
  return *s;
}

int64_t ShapeElements(const HloShape& s) {
  if (s.is_tuple()) {
    int64_t n = 0;
    for (const HloShape& t : s.tuple_shapes) n += ShapeElements(t);
    return n;
  }
  return s.ElementCount();
}

struct Cost {
  double flops = 0;
  double transcendentals = 0;
  std::vector<HloMatmul> matmuls;
};

absl::Status Unknown(const HloInstruction& inst, const HloComputation& comp) {
  return absl::InvalidArgumentError(absl::StrCat(
      "HLO import: unknown HLO opcode \"", inst.opcode, "\" (instruction ",
      inst.name, " in ", comp.name, ")"));
}

// The FLOPs of one instruction; fusions and nested fusions add their fused
// computation's.
// The mean number of window positions per output element that read an
// input element (see the convolution case above): the product over spatial
// dimensions of valid (output, window) pairs / output size. Without window
// or spatial dimension numbers, the kernel's spatial sizes.
double ConvolutionWindowPerOutput(const HloInstruction& inst,
                                  const HloInstruction* input,
                                  const HloInstruction* kernel) {
  const size_t n = inst.kernel_spatial_dimensions.size();
  auto kernel_sizes = [&] {
    double w = 1;
    for (int64_t d : inst.kernel_spatial_dimensions) {
      w *= static_cast<double>(kernel->shape.dimensions[d]);
    }
    return w;
  };
  if (input == nullptr || inst.window.size() != n ||
      inst.input_spatial_dimensions.size() != n ||
      inst.output_spatial_dimensions.size() != n) {
    return kernel_sizes();
  }
  double per_output = 1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t in_d = inst.input_spatial_dimensions[i];
    const int64_t out_d = inst.output_spatial_dimensions[i];
    if (in_d < 0 || in_d >= static_cast<int64_t>(input->shape.dimensions.size()) ||
        out_d < 0 ||
        out_d >= static_cast<int64_t>(inst.shape.dimensions.size())) {
      return kernel_sizes();
    }
    const int64_t in_size = input->shape.dimensions[in_d];
    const int64_t out_size = inst.shape.dimensions[out_d];
    const HloInstruction::WindowDim& w = inst.window[i];
    int64_t valid = 0;
    for (int64_t o = 0; o < out_size; ++o) {
      for (int64_t k = 0; k < w.size; ++k) {
        const int64_t pos = o * w.stride + k * w.window_dilation - w.padding_low;
        if (pos < 0 || pos % w.base_dilation != 0) continue;
        if (pos / w.base_dilation < in_size) ++valid;
      }
    }
    per_output *= out_size > 0 ? static_cast<double>(valid) /
                                     static_cast<double>(out_size)
                               : 0.0;
  }
  return per_output;
}

absl::Status AddCost(const HloModule& module, const HloComputation& comp,
                     const HloInstruction& inst, int depth, Cost* cost) {
  const std::string& op = inst.opcode;
  const double out = static_cast<double>(ShapeElements(inst.shape));
  auto operand = [&](size_t k) -> const HloInstruction* {
    return k < inst.operand_ids.size() ? comp.Find(inst.operand_ids[k])
                                       : nullptr;
  };
  if (op == "fusion") {
    if (depth > 16) {
      return absl::InvalidArgumentError(absl::StrCat(
          "HLO import: fusions nested more than 16 deep at ", inst.name));
    }
    for (int64_t id : inst.called_computation_ids) {
      const HloComputation* fused = module.FindComputation(id);
      for (const HloInstruction& i : fused->instructions) {
        TPUSIM_RETURN_IF_ERROR(AddCost(module, *fused, i, depth + 1, cost));
      }
    }
    return absl::OkStatus();
  }
  if (op == "dot") {
    const HloInstruction* lhs = operand(0);
    if (lhs == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("HLO import: dot ", inst.name, " has no lhs operand"));
    }
    double k = 1;
    for (int64_t d : inst.lhs_contracting) {
      if (d < 0 || d >= static_cast<int64_t>(lhs->shape.dimensions.size())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "HLO import: dot ", inst.name, " contracts dimension ", d,
            " of an operand of rank ", lhs->shape.dimensions.size()));
      }
      k *= static_cast<double>(lhs->shape.dimensions[d]);
    }
    cost->flops += 2 * out * k;
    HloMatmul mm;
    mm.element_type = lhs->shape.element_type;
    for (int64_t d : inst.lhs_batch) {
      if (d >= 0 && d < static_cast<int64_t>(lhs->shape.dimensions.size())) {
        mm.batch *= lhs->shape.dimensions[d];
      }
    }
    mm.k = std::max<int64_t>(1, static_cast<int64_t>(std::llround(k)));
    const HloInstruction* rhs = operand(1);
    const int64_t bk = std::max<int64_t>(1, mm.batch * mm.k);
    mm.m = ShapeElements(lhs->shape) / bk;
    mm.n = rhs == nullptr ? 0 : ShapeElements(rhs->shape) / bk;
    cost->matmuls.push_back(mm);
    return absl::OkStatus();
  }
  if (op == "convolution") {
    const HloInstruction* kernel = operand(1);
    const int64_t rank =
        kernel == nullptr ? 0
                          : static_cast<int64_t>(kernel->shape.dimensions.size());
    const int64_t in_dim = inst.kernel_input_feature_dimension;
    if (kernel == nullptr || in_dim < 0 || in_dim >= rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          "HLO import: convolution ", inst.name,
          " has no kernel operand or no kernel input feature dimension"));
    }
    double k = static_cast<double>(kernel->shape.dimensions[in_dim]);
    for (int64_t d : inst.kernel_spatial_dimensions) {
      if (d < 0 || d >= rank) {
        return absl::InvalidArgumentError(absl::StrCat(
            "HLO import: convolution ", inst.name,
            " has a kernel spatial dimension ", d, " outside rank ", rank));
      }
    }
    // Per spatial dimension, the (output, window) position pairs that read
    // an input element rather than padding or a base-dilation hole, as XLA's
    // HloCostAnalysis counts them: XLA:TPU writes a batched dot as a
    // convolution whose batch dimensions are spatial ones with a window as
    // large as the batch (stride, padding and base dilation such that each
    // output reads one element); a product of window sizes would count every
    // padding position.
    k *= ConvolutionWindowPerOutput(inst, operand(0), kernel);
    cost->flops += 2 * out * k;
    HloMatmul mm;
    const HloInstruction* input = operand(0);
    mm.element_type = input != nullptr ? input->shape.element_type
                                       : inst.shape.element_type;
    const int64_t out_dim = inst.kernel_output_feature_dimension;
    const int64_t cout =
        out_dim >= 0 && out_dim < rank ? kernel->shape.dimensions[out_dim] : 1;
    mm.batch = std::max<int64_t>(1, inst.feature_group_count);
    mm.k = std::max<int64_t>(1, static_cast<int64_t>(std::llround(k)));
    mm.n = std::max<int64_t>(1, cout / mm.batch);
    mm.m = static_cast<int64_t>(out) / std::max<int64_t>(1, cout);
    cost->matmuls.push_back(mm);
    return absl::OkStatus();
  }
  if (Elementwise().count(op)) {
    cost->flops += out;
    return absl::OkStatus();
  }
  if (Transcendental().count(op)) {
    cost->transcendentals += out;
    return absl::OkStatus();
  }
  if (op == "reduce") {
    const HloInstruction* in = operand(0);
    cost->flops += in == nullptr ? 0 : static_cast<double>(ShapeElements(in->shape));
    return absl::OkStatus();
  }
  if (op == "reduce-window") {
    double window = 1;
    for (int64_t w : inst.window_sizes) window *= static_cast<double>(w);
    cost->flops += out * window;
    return absl::OkStatus();
  }
  if (op == "scatter") {
    const HloInstruction* updates = operand(inst.operand_ids.size() - 1);
    cost->flops += updates == nullptr
                       ? 0
                       : static_cast<double>(ShapeElements(updates->shape));
    return absl::OkStatus();
  }
  if (DataMovement().count(op) || NoWork().count(op) ||
      Collectives().count(op) || op == "custom-call") {
    return absl::OkStatus();
  }
  if (Unsupported().count(op)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HLO import: instruction ", inst.name, " (", op, ") in ", comp.name,
        " is not supported by tpusim's importer"));
  }
  return Unknown(inst, comp);
}

// The first collective instruction of `comp` or of a fusion it calls.
const HloInstruction* FindCollective(const HloModule& module,
                                     const HloComputation& comp, int depth) {
  if (depth > 16) return nullptr;
  for (const HloInstruction& i : comp.instructions) {
    if (Collectives().count(i.opcode)) return &i;
    if (i.opcode == "fusion") {
      for (int64_t id : i.called_computation_ids) {
        if (const HloComputation* c = module.FindComputation(id)) {
          if (const HloInstruction* f = FindCollective(module, *c, depth + 1)) {
            return f;
          }
        }
      }
    }
  }
  return nullptr;
}

// What a computation holding `inner` does, by XLA:TPU's names for its
// decomposed collectives ("all-reduce-scatter.3": a reduce-scatter done with
// an all-reduce; "all-gather.3": an all-gather done with one); otherwise the
// wrapped op's own opcode.
std::string CollectiveOfComputation(const HloComputation& comp,
                                    const HloInstruction& inner,
                                    const HloModule&) {
  if (absl::StartsWith(comp.name, "all-reduce-scatter") ||
      absl::StartsWith(comp.name, "reduce-scatter")) {
    return "reduce-scatter";
  }
  if (absl::StartsWith(comp.name, "all-gather")) return "all-gather";
  if (absl::StartsWith(comp.name, "all-to-all")) return "all-to-all";
  return inner.opcode;
}

// "all-reduce-start" -> "all-reduce"; "" when `op` is not a collective start.
std::string StartedCollective(const std::string& op) {
  if (!absl::EndsWith(op, "-start")) return "";
  std::string base = op.substr(0, op.size() - 6);
  return Collectives().count(base) ? base : "";
}

}  // namespace

const char* HloKernelKindName(HloKernelKind kind) {
  switch (kind) {
    case HloKernelKind::kFusion: return "fusion";
    case HloKernelKind::kCompute: return "compute";
    case HloKernelKind::kCopy: return "copy";
    case HloKernelKind::kCustomCall: return "custom-call";
    case HloKernelKind::kCollective: return "collective";
    case HloKernelKind::kCollectiveStart: return "collective-start";
    case HloKernelKind::kCollectiveDone: return "collective-done";
  }
  return "?";
}

int64_t LaidOutBytes(const HloShape& shape, bool hbm_only) {
  if (shape.is_tuple()) {
    int64_t n = 0;
    for (const HloShape& t : shape.tuple_shapes) n += LaidOutBytes(t, hbm_only);
    return n;
  }
  if (hbm_only && shape.memory_space != 0) return 0;
  const int bits = shape.element_size_in_bits > 0
                       ? static_cast<int>(shape.element_size_in_bits)
                       : ElementBits(shape.element_type);
  if (bits == 0) return 0;
  // Physical dims, major to minor.
  std::vector<int64_t> dims;
  const size_t rank = shape.dimensions.size();
  if (shape.minor_to_major.size() == rank) {
    for (size_t i = rank; i-- > 0;) {
      const int64_t d = shape.minor_to_major[i];
      dims.push_back(d >= 0 && d < static_cast<int64_t>(rank)
                         ? shape.dimensions[d]
                         : 1);
    }
  } else {
    dims = shape.dimensions;
  }
  if (!shape.tiles.empty()) {
    const std::vector<int64_t>& tile = shape.tiles[0];
    for (size_t k = 0; k < tile.size() && k < dims.size(); ++k) {
      const int64_t t = tile[tile.size() - 1 - k];
      int64_t& d = dims[dims.size() - 1 - k];
      if (t > 1) d = (d + t - 1) / t * t;
    }
  }
  int64_t elements = 1;
  for (int64_t d : dims) elements *= d;
  return (elements * bits + 7) / 8;
}

absl::StatusOr<HloSchedule> AnalyzeHloModule(const HloModule& module) {
  HloSchedule out;
  out.module_name = module.name;
  out.from_module_schedule = module.has_entry_schedule();
  const HloComputation* entry = module.Entry();
  if (entry == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("HLO module \"", module.name, "\" has no entry computation"));
  }
  // Kernel index of each async start instruction id, for its done.
  std::map<int64_t, int> start_kernel;
  for (int64_t id : module.EntrySequence()) {
    const HloInstruction& inst = *entry->Find(id);
    const std::string& op = inst.opcode;
    if (NoWork().count(op)) continue;
    auto operand_bytes = [&](HloKernel* k) {
      for (int64_t o : inst.operand_ids) {
        const HloInstruction* in = entry->Find(o);
        const HloInstruction* root = in;
        while ((root->opcode == "bitcast" ||
                root->opcode == "get-tuple-element") &&
               !root->operand_ids.empty()) {
          root = entry->Find(root->operand_ids[0]);
        }
        if (root->opcode == "parameter" &&
            std::find(k->parameters_read.begin(), k->parameters_read.end(),
                      root->parameter_number) == k->parameters_read.end()) {
          k->parameters_read.push_back(root->parameter_number);
          std::sort(k->parameters_read.begin(), k->parameters_read.end());
        }
        k->bytes_read += LaidOutBytes(in->shape);
        k->on_chip_bytes += LaidOutBytes(in->shape, false) - LaidOutBytes(in->shape);
      }
    };
    HloKernel k;
    k.name = inst.name;
    k.opcode = op;
    // Is it a collective? A collective op, its -start, an async-start
    // wrapping one, or a fusion whose computation holds one (XLA:TPU lowers
    // all-reduce to kCustom fusions "all-reduce-scatter.N" + "all-gather.N"
    // around an all-reduce).
    const HloInstruction* inner = nullptr;  // the collective instruction
    std::string collective;
    bool async = false;
    if (Collectives().count(op)) {
      inner = &inst;
      collective = op;
    } else if (std::string base = StartedCollective(op); !base.empty()) {
      inner = &inst;
      collective = base;
      async = true;
    } else if ((op == "async-start" || op == "fusion") &&
               !inst.called_computation_ids.empty()) {
      const HloComputation* c =
          module.FindComputation(inst.called_computation_ids[0]);
      inner = FindCollective(module, *c, 0);
      if (inner != nullptr) {
        collective = CollectiveOfComputation(*c, *inner, module);
        async = op == "async-start";
      } else if (op == "async-start") {
        // Any other op run asynchronously (an async slice, a dynamic
        // update, ...): a kernel with the wrapped computation's cost; its
        // async-done is a wait.
        Cost cost;
        for (const HloInstruction& i : c->instructions) {
          TPUSIM_RETURN_IF_ERROR(AddCost(module, *c, i, 1, &cost));
        }
        k.kind = HloKernelKind::kCompute;
        k.opcode = absl::StrCat(
            "async-start(", c->root() != nullptr ? c->root()->opcode : "", ")");
        k.flops = cost.flops;
        k.transcendentals = cost.transcendentals;
        k.matmuls = std::move(cost.matmuls);
        operand_bytes(&k);
        if (c->root() != nullptr) k.bytes_written = LaidOutBytes(c->root()->shape);
        out.kernels.push_back(std::move(k));
        continue;
      }
    }
    if (inner != nullptr) {
      k.kind = async ? HloKernelKind::kCollectiveStart
                     : HloKernelKind::kCollective;
      k.collective = collective;
      k.fusion_kind = inst.fusion_kind;
      k.replica_groups = inner->replica_groups;
      k.source_target_pairs = inner->source_target_pairs;
      if (op == "fusion") {
        // The fused elementwise work (padding, slicing) around it.
        Cost cost;
        TPUSIM_RETURN_IF_ERROR(AddCost(module, *entry, inst, 0, &cost));
        k.flops = cost.flops;
        k.transcendentals = cost.transcendentals;
      }
      int64_t in_bytes = 0;
      for (int64_t o : inst.operand_ids) {
        in_bytes += LaidOutBytes(entry->Find(o)->shape, false);
      }
      k.collective_bytes = in_bytes;
      if (k.collective == "all-gather") {
        // The result (for a start: the tuple's last element).
        const HloShape& s = inst.shape.is_tuple() && !inst.shape.tuple_shapes.empty()
                                ? inst.shape.tuple_shapes.back()
                                : inst.shape;
        k.collective_bytes = LaidOutBytes(s, false);
      }
      operand_bytes(&k);
      if (k.kind == HloKernelKind::kCollective) {
        k.bytes_written = LaidOutBytes(inst.shape);
      }
      if (k.kind == HloKernelKind::kCollectiveStart) {
        start_kernel[inst.id] = static_cast<int>(out.kernels.size());
      }
      out.kernels.push_back(std::move(k));
      continue;
    }
    if (absl::EndsWith(op, "-done") && op != "copy-done") {
      const std::string base = op.substr(0, op.size() - 5);
      if (Collectives().count(base) || op == "async-done") {
        k.kind = HloKernelKind::kCollectiveDone;
        if (op == "async-done" && !inst.operand_ids.empty() &&
            start_kernel.count(inst.operand_ids[0]) == 0) {
          continue;  // the done of an async non-collective: a wait
        }
        if (!inst.operand_ids.empty()) {
          auto it = start_kernel.find(inst.operand_ids[0]);
          if (it == start_kernel.end()) {
            return absl::InvalidArgumentError(absl::StrCat(
                "HLO import: ", op, " ", inst.name,
                " is scheduled before its start (or its operand is not one)"));
          }
          k.partner = it->second;
          out.kernels[it->second].partner = static_cast<int>(out.kernels.size());
          k.collective = out.kernels[it->second].collective;
        }
        k.bytes_written = LaidOutBytes(inst.shape);
        out.kernels.push_back(std::move(k));
        continue;
      }
    }
    if (op == "copy-done") continue;  // waits for its copy-start
    if (op == "copy-start" || op == "copy") {
      k.kind = HloKernelKind::kCopy;
      operand_bytes(&k);
      // A copy-start's destination is its copy-done's result.
      const HloShape* dest = &inst.shape;
      if (op == "copy-start") {
        for (const HloInstruction& user : entry->instructions) {
          if (user.opcode == "copy-done" && !user.operand_ids.empty() &&
              user.operand_ids[0] == inst.id) {
            dest = &user.shape;
          }
        }
        if (dest == &inst.shape) {
          return absl::InvalidArgumentError(absl::StrCat(
              "HLO import: copy-start ", inst.name, " has no copy-done"));
        }
      }
      const HloShape& s = *dest;
      k.bytes_written = LaidOutBytes(s);
      k.on_chip_bytes += LaidOutBytes(s, false) - LaidOutBytes(s);
      out.kernels.push_back(std::move(k));
      continue;
    }
    if (op == "custom-call") {
      k.kind = HloKernelKind::kCustomCall;
      operand_bytes(&k);
      k.bytes_written = LaidOutBytes(inst.shape);
      out.custom_calls.push_back(
          absl::StrCat(inst.name, " (", inst.custom_call_target, ")"));
      out.kernels.push_back(std::move(k));
      continue;
    }
    Cost cost;
    TPUSIM_RETURN_IF_ERROR(AddCost(module, *entry, inst, 0, &cost));
    k.kind = op == "fusion" ? HloKernelKind::kFusion : HloKernelKind::kCompute;
    k.fusion_kind = inst.fusion_kind;
    k.flops = cost.flops;
    k.transcendentals = cost.transcendentals;
    k.matmuls = std::move(cost.matmuls);
    operand_bytes(&k);
    k.bytes_written = LaidOutBytes(inst.shape);
    k.on_chip_bytes += LaidOutBytes(inst.shape, false) - LaidOutBytes(inst.shape);
    if (k.kind == HloKernelKind::kFusion) ++out.num_fusions;
    out.kernels.push_back(std::move(k));
  }
  for (const HloKernel& k : out.kernels) {
    out.total_flops += k.flops;
    out.total_transcendentals += k.transcendentals;
    out.total_hbm_bytes += k.hbm_bytes();
    if (k.kind == HloKernelKind::kCollectiveStart && k.partner < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "HLO import: collective start ", k.name, " has no done in the schedule"));
    }
  }
  return out;
}

}  // namespace tpusim::sim::xla
