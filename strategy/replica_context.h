// strategy/replica_context.h
//
// ReplicaContext: what a replica function sees (tf.distribute.ReplicaContext)
// and the op builders the user writes the step function with. On TPU one
// program is traced for all replicas, so the context records ops into a
// runtime::ProgramBuilder instead of computing:
//
//   StepFunction step([&](ReplicaContext& ctx, const TracedNest& args)
//                         -> absl::StatusOr<TracedNest> {
//     TracedValue x = args.children()[0].leaf();
//     TPUSIM_ASSIGN_OR_RETURN(TracedValue w, ctx.ReadVariable(*weights));
//     TPUSIM_ASSIGN_OR_RETURN(TracedValue y, ctx.MatMul(x, w));
//     TPUSIM_ASSIGN_OR_RETURN(TracedValue s, ctx.AllReduce("sum", y));
//     return TracedNest(s);
//   });
//
// Every builder method returns InvalidArgument for bad shapes or dtypes (the
// message names the op and the operand types) and never crashes. Outside a
// replica function (the default replica context) there is no program to
// record into: op builders return kFailedPrecondition.
//
// Model parallelism (num_cores_per_replica > 1, TF's
// experimental_assign_to_logical_device): every op runs on a logical core of
// the replica. Ops recorded while a LogicalCoreScope is alive run on that
// core; others run on core 0. Values used on another core are transferred by
// the backend. Variables live on core 0 of each replica; their reads and
// writes are always placed on core 0.

#ifndef TPUSIM_STRATEGY_REPLICA_CONTEXT_H_
#define TPUSIM_STRATEGY_REPLICA_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "strategy/reduce.h"
#include "strategy/runtime/nest.h"
#include "strategy/runtime/ops.h"
#include "strategy/runtime/program.h"
#include "strategy/runtime/tensor.h"
#include "strategy/variables.h"

namespace tpusim::strategy {

class Strategy;
class MergeContext;

// A value of the traced program (an SSA handle); arguments and results of
// replica functions.
using TracedValue = runtime::Value;
using TracedNest = runtime::Nest<runtime::Value>;

// RAII guard of ReplicaContext::AssignToLogicalCore: restores the previous core
// when destroyed. Move-only; destroy in reverse order of creation.
class LogicalCoreScope {
 public:
  LogicalCoreScope() = default;
  LogicalCoreScope(LogicalCoreScope&& other) noexcept;
  LogicalCoreScope& operator=(LogicalCoreScope&& other) noexcept;
  LogicalCoreScope(const LogicalCoreScope&) = delete;
  LogicalCoreScope& operator=(const LogicalCoreScope&) = delete;
  ~LogicalCoreScope();

 private:
  friend class ReplicaContext;
  LogicalCoreScope(runtime::ProgramBuilder* builder, int previous)
      : builder_(builder), previous_(previous) {}
  runtime::ProgramBuilder* builder_ = nullptr;
  int previous_ = 0;
};

class ReplicaContext {
 public:
  // A context that records into `builder` (not owned; nullptr for the default
  // replica context, which has replica id 0). Made by the strategy; users get
  // it as the first argument of their replica function or from
  // GetReplicaContext().
  ReplicaContext(Strategy* strategy, runtime::ProgramBuilder* builder,
                 int num_replicas_in_sync);
  ReplicaContext(const ReplicaContext&) = delete;
  ReplicaContext& operator=(const ReplicaContext&) = delete;

  Strategy* strategy() const { return strategy_; }
  int num_replicas_in_sync() const { return num_replicas_in_sync_; }
  // True while a replica function is being traced.
  bool is_tracing() const { return builder_ != nullptr; }
  // The replica id when it is a known constant: 0 in the default context;
  // nullopt while tracing (one traced program serves every replica).
  std::optional<int> replica_id_constant() const;
  // replica_id_in_sync_group: an i32 scalar program value holding the replica
  // index 0..N-1. kFailedPrecondition outside tracing (use
  // replica_id_constant()).
  absl::StatusOr<TracedValue> ReplicaIdInSyncGroup();

  // ReplicaContext.all_reduce: every replica receives the same reduced value.
  // SUM = cross-replica sum; MEAN = multiply by 1/N (a constant of the value's
  // dtype) then cross-replica sum, so MEAN of an integer value is
  // kInvalidArgument. An unknown op name
  // ("max") is kInvalidArgument. A nest is reduced leaf by leaf.
  // kFailedPrecondition when this is not the current replica context (e.g.
  // inside a merge_call function: use MergeContext::ReduceTo there).
  absl::StatusOr<TracedValue> AllReduce(ReduceOpArg op, TracedValue value);
  absl::StatusOr<TracedNest> AllReduce(ReduceOpArg op, const TracedNest& value);

  // ReplicaContext.merge_call(fn, args). On TPU the replica function is traced
  // once, so `fn` runs ONCE, at trace time, in cross-replica context
  // (GetReplicaContext() == nullptr, InCrossReplicaContext() true), with the
  // strategy and the values of the single traced replica (`args` as given:
  // traced values standing for every replica's value, not a PerReplica of N
  // host values). Ops `fn` records through MergeContext join the program; its
  // result is returned to the (single traced) replica. Errors of `fn`
  // propagate. kFailedPrecondition when this is not the current replica
  // context (e.g. a nested merge_call from inside a merge function).
  using MergeFn = std::function<absl::StatusOr<TracedNest>(MergeContext&,
                                                           const TracedNest&)>;
  absl::StatusOr<TracedNest> MergeCall(const MergeFn& fn,
                                       const TracedNest& args);

  // ---- placement (model parallelism) ----
  // Ops recorded while the returned scope lives run on logical core `core`.
  // kInvalidArgument outside [0, num_cores_per_replica).
  absl::StatusOr<LogicalCoreScope> AssignToLogicalCore(int core);
  // TF's experimental_assign_to_logical_device(value, core): a copy of `value`
  // placed on `core` (a zero-cost reshape recorded on that core).
  absl::StatusOr<TracedValue> AssignToLogicalDevice(TracedValue value,
                                                    int core);
  int num_cores_per_replica() const;

  // ---- variables (replica context: applied once to the logical variable, in
  // the program) -- kInvalidArgument for a variable of another strategy.
  absl::StatusOr<TracedValue> ReadVariable(const MirroredVariable& variable);
  // Returns the variable's new value. The value's dtype and shape must match
  // exactly.
  absl::StatusOr<TracedValue> AssignVariable(const MirroredVariable& variable,
                                             TracedValue value);
  absl::StatusOr<TracedValue> AssignAddVariable(
      const MirroredVariable& variable, TracedValue delta);
  absl::StatusOr<TracedValue> AssignSubVariable(
      const MirroredVariable& variable, TracedValue delta);

  // ---- op builders (wrap runtime::ProgramBuilder; see its shape rules) ----
  absl::StatusOr<TracedValue> Constant(runtime::Tensor literal);
  // A scalar constant of `dtype` holding `value`.
  absl::StatusOr<TracedValue> ScalarConstant(
      double value, runtime::DType dtype = runtime::DType::kF32);
  absl::StatusOr<TracedValue> Add(TracedValue x, TracedValue y);
  absl::StatusOr<TracedValue> Sub(TracedValue x, TracedValue y);
  absl::StatusOr<TracedValue> Mul(TracedValue x, TracedValue y);
  absl::StatusOr<TracedValue> Div(TracedValue x, TracedValue y);
  absl::StatusOr<TracedValue> Maximum(TracedValue x, TracedValue y);
  absl::StatusOr<TracedValue> Minimum(TracedValue x, TracedValue y);
  absl::StatusOr<TracedValue> Neg(TracedValue x);
  absl::StatusOr<TracedValue> Exp(TracedValue x);
  absl::StatusOr<TracedValue> Log(TracedValue x);
  absl::StatusOr<TracedValue> Tanh(TracedValue x);
  absl::StatusOr<TracedValue> Relu(TracedValue x);
  absl::StatusOr<TracedValue> Sigmoid(TracedValue x);
  absl::StatusOr<TracedValue> Sqrt(TracedValue x);
  absl::StatusOr<TracedValue> Cast(TracedValue x, runtime::DType dtype);
  // `precision` (XLA's DEFAULT / HIGH / HIGHEST) only changes simulated MXU
  // time; the values stay exact f32.
  absl::StatusOr<TracedValue> MatMul(
      TracedValue a, TracedValue b, bool transpose_a = false,
      bool transpose_b = false,
      runtime::Precision precision = runtime::Precision::kDefault);
  absl::StatusOr<TracedValue> Conv2D(
      TracedValue input, TracedValue filter, std::vector<int64_t> strides,
      runtime::Padding padding,
      runtime::Precision precision = runtime::Precision::kDefault);
  absl::StatusOr<TracedValue> ReduceSum(TracedValue x,
                                        std::vector<int64_t> axes,
                                        bool keepdims = false);
  absl::StatusOr<TracedValue> ReduceMean(TracedValue x,
                                         std::vector<int64_t> axes,
                                         bool keepdims = false);
  absl::StatusOr<TracedValue> ReduceMax(TracedValue x,
                                        std::vector<int64_t> axes,
                                        bool keepdims = false);
  absl::StatusOr<TracedValue> Softmax(TracedValue x);
  absl::StatusOr<TracedValue> Reshape(TracedValue x,
                                      std::vector<int64_t> shape);
  absl::StatusOr<TracedValue> Transpose(TracedValue x,
                                        std::vector<int64_t> permutation);
  absl::StatusOr<TracedValue> Broadcast(TracedValue x,
                                        std::vector<int64_t> shape);
  absl::StatusOr<TracedValue> Slice(TracedValue x, std::vector<int64_t> start,
                                    std::vector<int64_t> limit,
                                    std::vector<int64_t> strides = {});
  absl::StatusOr<TracedValue> Concat(absl::Span<const TracedValue> values,
                                     int64_t axis);
  absl::StatusOr<TracedValue> Gather(TracedValue params, TracedValue indices,
                                     int64_t axis = 0);
  absl::StatusOr<TracedValue> OneHot(
      TracedValue indices, int64_t depth,
      runtime::DType dtype = runtime::DType::kF32);

  // The (bound) type of a traced value: dtype, shape (upper bounds for dynamic
  // dims) and dynamic-dimension flags. kInvalidArgument for a value not
  // recorded in this program.
  absl::StatusOr<runtime::ValueType> TypeOf(TracedValue value) const;
  // The underlying builder for ops without a wrapper. kFailedPrecondition when
  // not tracing.
  absl::StatusOr<runtime::ProgramBuilder*> builder();

  // Used by the strategy when the trace ends: op builders fail afterwards.
  void EndTracing() { builder_ = nullptr; }

 private:
  friend class MergeContext;
  absl::Status RequireTracing(absl::string_view method) const;
  // RequireTracing, and GetReplicaContext() == this (TF's
  // require_replica_context).
  absl::Status RequireCurrent(absl::string_view method) const;
  absl::StatusOr<TracedValue> AllReduceImpl(ReduceOp op, TracedValue value);
  absl::Status CheckVariable(const MirroredVariable& variable,
                             absl::string_view method);
  absl::StatusOr<TracedValue> VariableUpdate(const MirroredVariable& variable,
                                             TracedValue value, int kind);

  Strategy* strategy_;
  runtime::ProgramBuilder* builder_;
  int num_replicas_in_sync_;
};

// What a merge_call function receives besides its arguments: the strategy (it
// runs in cross-replica context) and in-program cross-replica operations (TF's
// strategy.extended.reduce_to inside a TPU computation).
class MergeContext {
 public:
  MergeContext(Strategy* strategy, ReplicaContext* replica_context)
      : strategy_(strategy), replica_context_(replica_context) {}
  Strategy& strategy() const { return *strategy_; }
  // extended.reduce_to(op, value) inside the TPU computation: SUM →
  // cross-replica sum; MEAN → scale by 1/N then sum (integer MEAN is
  // kInvalidArgument).
  absl::StatusOr<TracedValue> ReduceTo(ReduceOpArg op, TracedValue value);
  // Records ops of the merge function (the program being traced).
  ReplicaContext& tracer() const { return *replica_context_; }

 private:
  Strategy* strategy_;
  ReplicaContext* replica_context_;
};

}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_REPLICA_CONTEXT_H_
