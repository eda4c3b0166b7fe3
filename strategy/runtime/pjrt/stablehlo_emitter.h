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
// a dynamic output to its true size), then the new value of every slot the
// program writes (`variable_outputs`, ascending slot).
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
// Limits (Unimplemented, naming the op): programs with more than one logical
// core per replica; convolutions and pooling of dynamic shapes.
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

struct EmittedModule {
  std::string text;
  std::vector<DynamicDimArg> dynamic_args;
  std::vector<int> variable_inputs;   // slots, ascending
  std::vector<int> variable_outputs;  // slots, ascending
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
