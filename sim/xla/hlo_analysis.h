// sim/xla/hlo_analysis.h
//
// What a compiled HLO module (sim/xla/hlo_module.h) asks of a TensorCore, step
// by step: the entry computation's schedule as a list of kernels, each with
// its FLOPs and HBM bytes, and the collectives with their replica groups and
// where their async start and done sit in the schedule.
//
//   TPUSIM_ASSIGN_OR_RETURN(HloSchedule s, AnalyzeHloModule(module));
//   for (const HloKernel& k : s.kernels) { ... k.flops, k.hbm_bytes() ... }
//
// Rules (tpusim's, counted as XLA's HloCostAnalysis counts them):
//  * FLOPs of an instruction (inside a fusion, the fused computation's
//    instructions, nested fusions included):
//      dot: 2 x result elements x the product of the lhs contracting dims;
//      convolution: 2 x result elements x the kernel's input features x the
//        window positions per output that read input, not padding (per
//        spatial dim: valid (output, window) pairs / output size, from the
//        window's size, stride, padding and dilations; without a window, the
//        kernel's spatial sizes) (feature groups: the kernel already holds
//        features / groups); its matmul's k is the same product;
//      elementwise arithmetic, compare, select, clamp: result elements;
//      exp, log, tanh, rsqrt, sqrt, power, logistic, sin, cos, erf, atan2,
//        cbrt, expm1, log1p: result elements counted as transcendentals;
//      reduce, reduce-window: operand elements (reduce-window: result
//        elements x window size); scatter: update elements;
//      data movement (broadcast, reshape, transpose, slice, concatenate, pad,
//        copy, convert, gather, dynamic-(update-)slice, iota, reverse, ...):
//        none.
//  * HBM bytes of a kernel: its operands' and its result's bytes as laid out
//    (the layout's first tile pads the minor-most physical dimensions to the
//    tile; element_size_in_bits when set); shapes in a memory space other
//    than 0 (on-chip memory) are not HBM traffic and count in
//    on_chip_bytes.
//  * Kernels: every fusion; every top-level compute or data-movement
//    instruction; copy-start (a copy between memory spaces; its copy-done is
//    a wait); custom-call (bytes only, no FLOPs; named in `custom_calls`).
//    parameter, constant, get-tuple-element, tuple, bitcast, after-all,
//    partition-id, replica-id, opt-barrier and the done half of an async
//    pair are not kernels. An async-start wrapping another op (XLA:TPU runs
//    slices and dynamic updates asynchronously) is a compute kernel costed
//    from the wrapped computation; its async-done is a wait.
//  * Collectives: all-reduce, all-gather, reduce-scatter, all-to-all,
//    collective-permute, synchronous or as -start/-done pairs (and
//    async-start/async-done wrapping one), and fusions whose computation
//    holds one (XLA:TPU lowers an all-reduce to kCustom fusions named
//    "all-reduce-scatter.N" and "all-gather.N", each around an all-reduce:
//    they are a reduce-scatter and an all-gather, named so): bytes are the
//    operand's (all-gather: the result's); such fusions are collectives, not
//    counted in num_fusions.
//  * Errors (InvalidArgument naming the instruction): while, conditional and
//    call (control flow the importer does not flatten), send/recv, infeed/
//    outfeed, and any opcode not listed here ("unknown HLO opcode").

#ifndef TPUSIM_SIM_XLA_HLO_ANALYSIS_H_
#define TPUSIM_SIM_XLA_HLO_ANALYSIS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/xla/hlo_module.h"

namespace tpusim::sim::xla {

enum class HloKernelKind {
  kFusion,           // a fusion instruction
  kCompute,          // an unfused compute or data-movement instruction
  kCopy,             // copy-start (between memory spaces) or copy
  kCustomCall,       // custom-call: bytes only
  kCollective,       // a synchronous collective
  kCollectiveStart,  // the start of an async collective
  kCollectiveDone,   // its done: waits for the start
};
const char* HloKernelKindName(HloKernelKind kind);

// A dot or convolution as matrix products (for the MXU timing): `batch`
// products of (m x k) . (k x n); a convolution as an implicit GEMM (m = output
// elements / output features, k = input features x window, n = output
// features; feature groups as the batch).
struct HloMatmul {
  int64_t batch = 1;
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  int element_type = 0;  // the lhs's
};

struct HloKernel {
  HloKernelKind kind = HloKernelKind::kCompute;
  std::string name;    // the instruction's name
  std::string opcode;  // "fusion", "dot", "all-reduce-start", ...
  std::string fusion_kind;
  double flops = 0;
  double transcendentals = 0;
  // Its dots and convolutions (fused ones included).
  std::vector<HloMatmul> matmuls;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t on_chip_bytes = 0;
  // The entry parameters it reads (parameter_number; through bitcasts and
  // get-tuple-elements), ascending.
  std::vector<int64_t> parameters_read;
  // Collectives: "all-reduce", "all-gather", "reduce-scatter", "all-to-all",
  // "collective-permute"; its replica groups (empty: all replicas in one
  // group) or its source-target pairs; its bytes per device.
  std::string collective;
  std::vector<std::vector<int64_t>> replica_groups;
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;
  int64_t collective_bytes = 0;
  // Async collectives: the index (in `kernels`) of the other half.
  int partner = -1;

  int64_t hbm_bytes() const { return bytes_read + bytes_written; }
};

struct HloSchedule {
  std::string module_name;
  // True when the order is the module's schedule, false when it is the entry
  // computation's instruction order (no schedule in the module).
  bool from_module_schedule = false;
  std::vector<HloKernel> kernels;
  int num_fusions = 0;
  double total_flops = 0;
  double total_transcendentals = 0;
  int64_t total_hbm_bytes = 0;
  std::vector<std::string> custom_calls;
};

// Bytes of `shape` as laid out (tuples: the sum of their leaves), padded to
// its layout's first tile. Memory space 0 only when `hbm_only`.
int64_t LaidOutBytes(const HloShape& shape, bool hbm_only = true);

// See the file comment.
absl::StatusOr<HloSchedule> AnalyzeHloModule(const HloModule& module);

}  // namespace tpusim::sim::xla

#endif  // TPUSIM_SIM_XLA_HLO_ANALYSIS_H_
