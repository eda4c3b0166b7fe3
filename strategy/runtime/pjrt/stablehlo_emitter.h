// strategy/runtime/pjrt/stablehlo_emitter.h
//
// runtime::Program -> StableHLO MLIR text (the generic op form, one op per
// line), the program a PJRT plugin compiles.
//
//   TPUSIM_ASSIGN_OR_RETURN(EmittedModule m, EmitStableHlo(program));
//   // m.text: "module @step attributes {mhlo.num_replicas = 2 : i32, ...} {"
//
// The module has one function, @main. Its arguments, in order:
//  1. the program's parameters, each at its BOUND shape (a dynamic dim holds
//     its upper bound: the caller pads);
//  2. one tensor<i32> per dynamic dimension of a parameter (`dynamic_args`):
//     the true size of that dimension on the executing replica;
//  3. one argument per variable slot the program reads before writing it
//     (`variable_inputs`, ascending slot).
// Its results: the program's outputs (at their bound shapes; the caller slices
// a dynamic output to its true size), then the new value of every (slot,
// core) the program writes (`variable_outputs`).
//
// Variables: StableHLO has no mutable state, so a slot's value is threaded
// through the function: variable_read uses the slot's current SSA value,
// variable_assign replaces it, variable_assign_add adds to it. A slot both read
// and written is marked `tf.aliasing_output` so a plugin may update it in place.
//
// Bounded dynamic dimensions (f32[<=8,4]) are PADDED to the bound and MASKED:
// the emitter tracks, for every dynamic dim of every value, the SSA scalar
// holding its true size, and masks padded elements wherever they could reach a
// valid result (reductions over the dim, a dot contracting it, softmax over
// it, scatter_add updates, the count of a mean). Ops that would move padding
// into valid positions (slice, concat along, reshape across, collectives
// other than all_reduce on a dynamic dim) are Unimplemented, naming the op.
//
// conv2d and its gradients are stablehlo.convolution (the input gradient over
// the stride-dilated dy with the filter reversed, the filter gradient with the
// batch as the contracted feature); max_pool2d is reduce_window(max) and its
// gradient select_and_scatter (GE: the first maximum of a window wins, as on
// the host) over the input padded with -inf.
//
// Model parallelism (C logical cores per replica) maps to XLA replicas with
// groups: XLA replica r*C + c runs core c of replica r (num_replicas = R*C,
// one partition). Every XLA replica runs the whole function; an op's value is
// meaningful on the XLA replicas of its core. A value used on another core is
// moved there with a collective_permute (pairs r*C+from -> r*C+to); a
// collective on core c uses groups {g*C + c} (each core's copy communicates
// with the same core of the other replicas); replica_id is the XLA replica id
// divided by C; variable storage is per (slot, core). The caller passes, on
// XLA replica (r, c), the real arguments of the parameters and variables of
// core c and zeros for the others, and keeps the results of core c.
//
// Limits (Unimplemented, naming the op): convolutions and pooling of dynamic
// shapes; slices into, concatenation along and collectives other than
// all_reduce over a dynamic dim.
//
// Numerics: dot and conv precision is written as the op's precision config
// (DEFAULT / HIGH / HIGHEST); integer division by zero is not trapped (XLA
// defines it), gather indices are clamped by XLA rather than rejected.

#ifndef TPUSIM_STRATEGY_RUNTIME_PJRT_STABLEHLO_EMITTER_H_
#define TPUSIM_STRATEGY_RUNTIME_PJRT_STABLEHLO_EMITTER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "strategy/runtime/program.h"

namespace tpusim::runtime::pjrt {

struct DynamicDimArg {
  int parameter = 0;  // parameter index
  int dim = 0;
};

// A variable's storage on the devices of one logical core.
struct VariableArg {
  int slot = 0;
  int core = 0;
  friend bool operator==(const VariableArg& a, const VariableArg& b) {
    return a.slot == b.slot && a.core == b.core;
  }
};

struct EmittedModule {
  std::string text;
  std::vector<DynamicDimArg> dynamic_args;
  std::vector<VariableArg> variable_inputs;   // ascending (slot, core)
  std::vector<VariableArg> variable_outputs;  // ascending (slot, core)
};

// The oldest StableHLO a plugin must read for the emitted text (the 1.x
// generic form with array<i64> attributes): a plugin whose
// stablehlo_current_version is older is rejected at backend creation.
inline constexpr int kMinStableHloMajor = 1;

// StableHLO element type of a dtype: f32 f64 bf16 i32 i64 ui8.
// InvalidArgument for kBytes.
absl::StatusOr<std::string> StableHloElementType(DType dtype);

// See the file comment. InvalidArgument for an abstract constant; Unimplemented
// for the limits above.
absl::StatusOr<EmittedModule> EmitStableHlo(const Program& program);

}  // namespace tpusim::runtime::pjrt

#endif  // TPUSIM_STRATEGY_RUNTIME_PJRT_STABLEHLO_EMITTER_H_
