// strategy/runtime/kernels.h
//
// Host kernels: the real arithmetic of every op on concrete tensors, used by
// HostBackend (and by sim/ for functional values).
//
//   absl::StatusOr<Tensor> y =
//       RunKernel(OpCode::kAdd, attrs, {&a, &b}, result_type, replica);
//
// Numerics (tpusim conventions): f32 computes in f32 (matmul and reductions
// accumulate in f32 in index order), f64 in f64, bf16 computes in f32 and
// rounds to nearest even on output, NaN propagates, integer ops are exact
// (wrapping two's complement). Kernels are deterministic: the same inputs give
// bit-identical outputs.

#ifndef TPUSIM_STRATEGY_RUNTIME_KERNELS_H_
#define TPUSIM_STRATEGY_RUNTIME_KERNELS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "strategy/runtime/ops.h"
#include "strategy/runtime/tensor.h"

namespace tpusim::runtime {

// Computes a non-collective, non-source op for one replica. `result` is the
// op's TRUE result type for these operands (InferOpType on the operands' true
// shapes); abstract operands give an abstract result. kParameter, kVariableRead
// and kVariableAssign are the executor's business (Unimplemented here);
// kVariableAssignAdd computes old + delta (operands: the old value, the delta).
// Errors (InvalidArgument naming the op): integer division by zero, a gather
// index out of range.
absl::StatusOr<Tensor> RunKernel(OpCode code, const OpAttrs& attrs,
                                 absl::Span<const Tensor* const> operands,
                                 const ValueType& result, int replica_id);

// Computes a collective for the replicas of ONE group: `operands[i]` is the
// operand of group member i (group order), `results[i]` its true result type.
// Returns one tensor per member. Reductions add in group order (deterministic);
// MEAN scales each operand by 1/group_size first and then sums (TF's TPU MEAN).
// For kCollectivePermute pass ALL replicas (in replica order) and the pairs in
// attrs; replicas that receive nothing get zeros. InvalidArgument if the
// members' operand shapes differ (other than along all_gather's axis).
absl::StatusOr<std::vector<Tensor>> RunCollective(
    OpCode code, const OpAttrs& attrs, absl::Span<const Tensor* const> operands,
    absl::Span<const ValueType> results);

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_KERNELS_H_
