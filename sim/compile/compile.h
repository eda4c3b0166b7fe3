// sim/compile/compile.h
//
// Compile: from a traced Program to the kernels each logical core issues, as
// XLA does for TPUs. Pure C++ (no SystemC); the pod's timing model
// (sim/sim_backend) consumes the result.
//
//   absl::StatusOr<CompiledProgram> c = CompileProgram(program, {});
//   for (const Kernel& k : c->kernels) { ... KernelDuration(rates, k.work, bw) }
//   std::cout << c->FusionText(program);
//
// Every count uses the bound (padded) shapes of dynamic dimensions, which is
// what a TPU computes on.
//
// Fusion (tpusim's rules, after XLA's TPU fusion passes):
// * Fusible ops: elementwise unary/binary ops (cast included), compare,
//   select, broadcast, slice, concat, and variable_assign /
//   variable_assign_add (the in-place update ends a fusion). dot and conv2d
//   are fusion roots that take elementwise consumers into their epilogue
//   (output fusion); chains of fusible ops fuse into one kernel (loop
//   fusion). reduce_sum / reduce_mean / reduce_max take fusible producers
//   (input fusion) and end their kernel. Everything else (softmax, transpose,
//   gather, one_hot, max_pool2d) is a kernel of its own; collectives are
//   never fused.
// * Fusion with duplication (decided first): a cheap elementwise op or
//   broadcast (no transcendental work) that is effectively unary (at most one
//   operand with as many elements as its result, of no more bytes than the
//   result; the others are broadcast in), is no program output, whose
//   consumers are all fusible or reductions on its logical core, and that at
//   least two kernel ops evaluate (its consumers, a recomputed consumer's
//   counting as the ops that evaluate it; decided consumers first) is recomputed
//   inside each consumer's kernel and has no kernel of its own: a consumer
//   reads what it reads instead of its value (never more bytes, apart from
//   the broadcast operands). A later evaluation of the same op is counted in
//   Kernel::recomputed_flops; a kernel reading it only through slices
//   evaluates (vector work) and reads (of its inputs as large as it) only the
//   sliced elements.
// * Then, in four phases: (1) single-consumer producers fuse into their
//   consumer (program order); (2) a producer with several consumers joins
//   them if they already form one kernel (reverse program order), so a
//   shared value (a learning rate feeding every update) never glues
//   independent kernels together; (3) sibling multi-output fusion: kernels
//   that end in reductions of the same input shape over the same axes and
//   read a common value with as many elements as that input merge (program
//   order of the value), and so do kernels that update variables (no dot,
//   conv or reduction) and read a common value with at least as many
//   elements as each variable they update (an all-reduced gradient bucket);
//   (4) producer-consumer multi-output fusion: a
//   producer whose consumers did not all join it fuses into the first
//   consumer kernel (program order) that legally takes it; its value leaves
//   that kernel once for the others (reverse program order).
// * Legal kernel: one logical core; at most one dot or conv2d, never with a
//   reduction, slice or concat; several reductions only of the same input
//   shape over the same axes; a reduction's or an update's value is never
//   consumed inside its kernel; no cycle between kernels (a merge that would
//   create one is skipped).
// * reshape is a bitcast: never a kernel, its value is its operand's buffer;
//   fusion looks through it. parameter, constant, replica_id and variable_read
//   are buffers already in HBM (no kernel).
// * A kernel's HBM bytes: each distinct external input read once (a value
//   produced outside the kernel, or a variable/parameter/constant buffer; an
//   assign_add also reads the variable it updates), plus each value that leaves
//   the kernel (consumed by another kernel, a collective, a copy, or a program
//   output) written once; a variable assignment writes the variable once.
//   Fused and recomputed intermediates never touch HBM. FLOPs are the sum of
//   the evaluated ops' cost rules (runtime/ops.h), so fusion changes them
//   only by recomputed_flops.
//   Byte and element sums saturate at INT64_MAX (as OpCost totals do).
//
// Async collectives: every collective op becomes a kCollectiveStart and a
// kCollectiveDone kernel. Values used on another logical core get a kCopy
// kernel on the consuming core. The issue order (the order of `kernels`) is a
// deterministic topological order of the dependencies: a start or copy right
// after the kernel that produces its operand; compute kernels that do not wait
// on any collective at the program position of their last member (or just
// before their first dependent, when a multi-output kernel feeds an earlier
// one); then the
// work that does (a done and everything depending on one), again by program
// position, with each done right before its first consumer (at the end when
// only program outputs use it). So a gradient all-reduce of layer L is
// started when layer L's gradient is ready and runs while the backward pass
// of the earlier layers, and any other independent work, computes.
//
// Timing it (what a backend does with the result): each logical core issues
// its kernels in `kernels` order. A kernel starts when the core is free and
// all `deps` have finished. kMxu / kVector take
// KernelDuration(rates, work, hbm share) (sim/chip/kernel_timing.h). A
// kCollectiveStart hands `collective_bytes` to the network and finishes at
// once; its kCollectiveDone finishes when the collective has (the exposed
// part is the core's wait). A kCopy moves `copy_bytes` from `copy_from_core`'s
// device. `memory[c].total()` is what the capacity check compares with HBM.
//
// Liveness (per logical core, over the issue order): a buffer a kernel writes
// is live from that kernel to its last use (program outputs to the end); a
// collective's result from its start, and its operand is kept until its done.
// The peak HBM footprint is variables + optimizer state + parameters (the
// step's arguments) + infeed buffers (the prefetched batches) + constants + the
// peak of that live set.

#ifndef TPUSIM_SIM_COMPILE_COMPILE_H_
#define TPUSIM_SIM_COMPILE_COMPILE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/chip/kernel_timing.h"
#include "strategy/runtime/program.h"

namespace tpusim::sim {

enum class CompiledKernelKind {
  kMxu,              // a dot or conv2d (with its fused epilogue)
  kVector,           // element operations, reductions, data movement
  kCollectiveStart,  // issues a collective; returns at once
  kCollectiveDone,   // waits for the collective started by `pair`
  kCopy,             // a value moved to another logical core's device
};
const char* CompiledKernelKindName(CompiledKernelKind kind);

struct Kernel {
  // "fusion.3" (several ops; the number is the root op), "dot.12",
  // "all_reduce.7.start" / ".done", "copy.5.to1".
  std::string name;
  CompiledKernelKind kind = CompiledKernelKind::kVector;
  // Program ops in this kernel, ascending, recomputed producers included (the
  // root, the op whose value the kernel is named after, is the last). A
  // collective's start and done and a copy name the one op they serve.
  std::vector<int> op_ids;
  int core = 0;  // logical core it runs on (a copy: the destination core)

  // Compute (kMxu, kVector): what it asks of the device. work.hbm_bytes =
  // hbm_read_bytes + hbm_write_bytes. work.matmuls has one entry for kMxu
  // (conv2d as implicit GEMM: m = N*Ho*Wo, k = Kh*Kw*Cin, n = Cout).
  KernelWork work;
  // The cost-rule FLOPs of the ops it evaluates, recomputed producers
  // included; recomputed_flops is the part an earlier kernel (issue order)
  // already did: the work duplication adds. (work.vector_elements counts
  // what the kernel evaluates: a recomputed producer it reads only through
  // slices, for the sliced elements only.)
  int64_t flops = 0;
  int64_t recomputed_flops = 0;
  int64_t hbm_read_bytes = 0;
  int64_t hbm_write_bytes = 0;

  // kCollectiveStart / kCollectiveDone.
  runtime::OpCode collective = runtime::OpCode::kAllReduce;
  // Per device, sim/net's convention: all_gather the gathered result, the
  // others their operand.
  int64_t collective_bytes = 0;
  std::vector<std::vector<int64_t>> replica_groups;  // as the op has them
  // An imported collective-permute's (source, target) replica pairs
  // (sim/compile's kernels take them from their op).
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;
  int pair = -1;  // the matching done / start kernel index

  // kCopy: from which logical core and how many bytes.
  int copy_from_core = -1;
  int64_t copy_bytes = 0;

  // Kernels (indices into CompiledProgram::kernels, all earlier) that must
  // finish before this one starts. A done depends on its start.
  std::vector<int> deps;
};

// Per logical core: the HBM footprint at the schedule's peak.
struct CoreMemory {
  int64_t variables = 0;        // declared variables used on the core
  int64_t optimizer_state = 0;  // the variables CompileOptions names so
  int64_t parameters = 0;       // the step's arguments (program parameters)
  int64_t infeed = 0;           // prefetched batches: infeed_depth x parameters
  int64_t constants = 0;
  int64_t live_peak = 0;        // the schedule's live buffers at their peak
  int peak_kernel = -1;         // the kernel at which live_peak is reached
  // Up to five largest buffers live at the peak, largest first, named by
  // the op that made them: "dot %7: f32[8,3], 96 B".
  std::vector<std::string> largest_at_peak;
  // Saturates at INT64_MAX, as every count here does.
  int64_t total() const;
};

struct CompileOptions {
  bool fusion = true;  // false: every op is its own kernel (the baseline)
  // Batches prefetched into HBM ahead of the running step (tpusim choice,
  // mirrors a double-buffered infeed queue).
  int infeed_depth = 1;
  // Variable slots holding optimizer state (slot variables such as momenta):
  // counted as optimizer_state instead of variables.
  std::vector<int> optimizer_state_slots;
};

struct CompiledProgram {
  std::vector<Kernel> kernels;  // in issue order
  // The kernel that computes each op's value (-1: none, e.g. parameter,
  // reshape); a collective op maps to its done kernel; a recomputed op to the
  // first kernel (issue order) that evaluates it.
  std::vector<int> kernel_of_op;
  std::vector<CoreMemory> memory;  // per logical core

  // Sums over the compute kernels.
  int64_t total_flops() const;
  int64_t total_hbm_bytes() const;

  // The program text followed by the kernels in issue order, one per line:
  //   kernels (issue order) {
  //     #0 core 0 mxu fusion.4 = {%2 dot, %3 add, %4 relu} reads 160 writes 64
  //     ...
  //   }
  // followed by the per-core memory breakdown.
  std::string FusionText(const runtime::Program& program) const;
};

// InvalidArgument (naming the field and value) for infeed_depth < 0 or an
// optimizer_state_slots entry the program does not declare.
absl::StatusOr<CompiledProgram> CompileProgram(const runtime::Program& program,
                                               const CompileOptions& options);

// The precision of a dot/conv op for the timing model.
Precision TimingPrecision(runtime::Precision p);

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_COMPILE_COMPILE_H_
