#include "strategy/replica_context.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "strategy/distribute_lib.h"

namespace tpusim::strategy {

using runtime::DType;
using runtime::ProgramBuilder;
using runtime::Tensor;

// ---- LogicalCoreScope ----

LogicalCoreScope::LogicalCoreScope(LogicalCoreScope&& other) noexcept
    : builder_(other.builder_), previous_(other.previous_) {
  other.builder_ = nullptr;
}
LogicalCoreScope& LogicalCoreScope::operator=(
    LogicalCoreScope&& other) noexcept {
  if (this != &other) {
    if (builder_ != nullptr) (void)builder_->set_logical_core(previous_);
    builder_ = other.builder_;
    previous_ = other.previous_;
    other.builder_ = nullptr;
  }
  return *this;
}
LogicalCoreScope::~LogicalCoreScope() {
  if (builder_ != nullptr) (void)builder_->set_logical_core(previous_);
}

// ---- ReplicaContext ----

ReplicaContext::ReplicaContext(Strategy* strategy, ProgramBuilder* builder,
                               int num_replicas_in_sync)
    : strategy_(strategy),
      builder_(builder),
      num_replicas_in_sync_(num_replicas_in_sync) {}

std::optional<int> ReplicaContext::replica_id_constant() const {
  if (is_tracing()) return std::nullopt;
  return 0;
}

absl::Status ReplicaContext::RequireTracing(absl::string_view method) const {
  if (builder_ != nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("ReplicaContext::", method,
                   ": no program is being traced (the default replica context, "
                   "or a replica function that "
                   "has returned); op builders only work inside a function "
                   "passed to TPUStrategy::Run"));
}

absl::StatusOr<TracedValue> ReplicaContext::ReplicaIdInSyncGroup() {
  TPUSIM_RETURN_IF_ERROR(RequireTracing("ReplicaIdInSyncGroup"));
  return builder_->ReplicaId();
}

int ReplicaContext::num_cores_per_replica() const {
  return builder_ == nullptr ? 1 : builder_->num_cores_per_replica();
}

absl::StatusOr<runtime::ValueType> ReplicaContext::TypeOf(
    TracedValue value) const {
  TPUSIM_RETURN_IF_ERROR(RequireTracing("TypeOf"));
  if (value.id < 0 || value.id >= builder_->num_ops()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TypeOf: value %", value.id, " is not a value of this program (it has ",
        builder_->num_ops(), " values)"));
  }
  return builder_->type(value);
}

absl::StatusOr<ProgramBuilder*> ReplicaContext::builder() {
  TPUSIM_RETURN_IF_ERROR(RequireTracing("builder"));
  return builder_;
}

// TF on TPU: SUM → cross_replica_sum; MEAN → value * (1/N) then
// cross_replica_sum.
absl::Status ReplicaContext::RequireCurrent(absl::string_view method) const {
  TPUSIM_RETURN_IF_ERROR(RequireTracing(method));
  if (GetReplicaContext() == this) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "ReplicaContext::", method,
      ": Need to be inside `call_for_each_replica()`: this replica context is "
      "not current (called in cross-replica context, e.g. inside a merge_call "
      "function; use MergeContext::ReduceTo there)"));
}

absl::StatusOr<TracedValue> ReplicaContext::AllReduce(ReduceOpArg op,
                                                      TracedValue value) {
  TPUSIM_RETURN_IF_ERROR(RequireCurrent("AllReduce"));
  TPUSIM_ASSIGN_OR_RETURN(ReduceOp resolved, op.Resolve());
  return AllReduceImpl(resolved, value);
}

absl::StatusOr<TracedValue> ReplicaContext::AllReduceImpl(ReduceOp resolved,
                                                          TracedValue value) {
  TPUSIM_RETURN_IF_ERROR(RequireTracing("AllReduce"));
  TPUSIM_ASSIGN_OR_RETURN(runtime::ValueType type, TypeOf(value));
  if (resolved == ReduceOp::kMean) {
    if (!runtime::IsFloating(type.dtype)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "all_reduce MEAN multiplies the value by the float 1/",
          num_replicas_in_sync_,
          " before the cross-replica sum, which cannot scale a ",
          type.ToString(), " value; cast it to a float dtype or use SUM"));
    }
    TPUSIM_ASSIGN_OR_RETURN(
        TracedValue scale,
        ScalarConstant(1.0 / num_replicas_in_sync_, type.dtype));
    TPUSIM_ASSIGN_OR_RETURN(value, builder_->Mul(value, scale));
  }
  return builder_->AllReduce(value, runtime::CollectiveReduce::kSum);
}

absl::StatusOr<TracedNest> ReplicaContext::AllReduce(ReduceOpArg op,
                                                     const TracedNest& value) {
  TPUSIM_RETURN_IF_ERROR(RequireCurrent("AllReduce"));
  TPUSIM_ASSIGN_OR_RETURN(ReduceOp resolved, op.Resolve());
  std::vector<TracedValue> reduced;
  for (const TracedValue* leaf : value.Flatten()) {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue r, AllReduce(resolved, *leaf));
    reduced.push_back(r);
  }
  return value.Unflatten(std::move(reduced));
}

absl::StatusOr<TracedNest> ReplicaContext::MergeCall(const MergeFn& fn,
                                                     const TracedNest& args) {
  TPUSIM_RETURN_IF_ERROR(RequireCurrent("MergeCall"));
  // The merge function runs once, in cross-replica context.
  internal::ContextFrameGuard cross_replica(strategy_,
                                            /*replica_context=*/nullptr);
  MergeContext merge(strategy_, this);
  return fn(merge, args);
}

absl::StatusOr<LogicalCoreScope> ReplicaContext::AssignToLogicalCore(int core) {
  TPUSIM_RETURN_IF_ERROR(RequireTracing("AssignToLogicalCore"));
  const int previous = builder_->logical_core();
  absl::Status s = builder_->set_logical_core(core);
  if (!s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AssignToLogicalCore: logical core ", core, " out of range [0, ",
        builder_->num_cores_per_replica(), ") (num_cores_per_replica of the ",
        "strategy's device assignment): ", s.message()));
  }
  return LogicalCoreScope(builder_, previous);
}

absl::StatusOr<TracedValue> ReplicaContext::AssignToLogicalDevice(
    TracedValue value, int core) {
  TPUSIM_ASSIGN_OR_RETURN(runtime::ValueType type, TypeOf(value));
  TPUSIM_ASSIGN_OR_RETURN(LogicalCoreScope scope, AssignToLogicalCore(core));
  return builder_->Reshape(value, type.shape.dims());
}

absl::Status ReplicaContext::CheckVariable(const MirroredVariable& variable,
                                           absl::string_view method) {
  TPUSIM_RETURN_IF_ERROR(RequireTracing(method));
  if (variable.strategy() != strategy_) {
    return absl::InvalidArgumentError(
        absl::StrCat(method, ": variable ", variable.name(),
                     " was created under ", variable.strategy()->DebugName(),
                     ", not under the strategy running this function"));
  }
  return builder_->DeclareVariable(variable.slot(), variable.dtype(),
                                   variable.shape(), variable.name());
}

absl::StatusOr<TracedValue> ReplicaContext::ReadVariable(
    const MirroredVariable& variable) {
  TPUSIM_RETURN_IF_ERROR(CheckVariable(variable, "ReadVariable"));
  // Variables live on logical core 0 of each replica.
  const int previous = builder_->logical_core();
  TPUSIM_RETURN_IF_ERROR(builder_->set_logical_core(0));
  absl::StatusOr<TracedValue> v = builder_->VariableRead(variable.slot());
  TPUSIM_RETURN_IF_ERROR(builder_->set_logical_core(previous));
  return v;
}

absl::StatusOr<TracedValue> ReplicaContext::VariableUpdate(
    const MirroredVariable& variable, TracedValue value, int kind) {
  static constexpr absl::string_view kNames[] = {
      "AssignVariable", "AssignAddVariable", "AssignSubVariable"};
  TPUSIM_RETURN_IF_ERROR(CheckVariable(variable, kNames[kind]));
  const int previous = builder_->logical_core();
  TPUSIM_RETURN_IF_ERROR(builder_->set_logical_core(0));
  absl::StatusOr<TracedValue> result;
  if (kind == 0) {
    result = builder_->VariableAssign(variable.slot(), value);
  } else if (kind == 1) {
    result = builder_->VariableAssignAdd(variable.slot(), value);
  } else {
    absl::StatusOr<TracedValue> neg = builder_->Neg(value);
    result =
        neg.ok() ? builder_->VariableAssignAdd(variable.slot(), *neg) : neg;
  }
  TPUSIM_RETURN_IF_ERROR(builder_->set_logical_core(previous));
  if (!result.ok()) {
    return absl::Status(
        result.status().code(),
        absl::StrCat(kNames[kind], " of variable ", variable.name(), ": ",
                     result.status().message()));
  }
  return result;
}

absl::StatusOr<TracedValue> ReplicaContext::AssignVariable(
    const MirroredVariable& variable, TracedValue value) {
  return VariableUpdate(variable, value, 0);
}
absl::StatusOr<TracedValue> ReplicaContext::AssignAddVariable(
    const MirroredVariable& variable, TracedValue delta) {
  return VariableUpdate(variable, delta, 1);
}
absl::StatusOr<TracedValue> ReplicaContext::AssignSubVariable(
    const MirroredVariable& variable, TracedValue delta) {
  return VariableUpdate(variable, delta, 2);
}

// ---- op builders ----

#define TPUSIM_REPLICA_OP(Name, ...)             \
  TPUSIM_RETURN_IF_ERROR(RequireTracing(#Name)); \
  return builder_->__VA_ARGS__

absl::StatusOr<TracedValue> ReplicaContext::Constant(Tensor literal) {
  TPUSIM_REPLICA_OP(Constant, Constant(std::move(literal)));
}
absl::StatusOr<TracedValue> ReplicaContext::ScalarConstant(double value,
                                                           DType dtype) {
  TPUSIM_RETURN_IF_ERROR(RequireTracing("ScalarConstant"));
  TPUSIM_ASSIGN_OR_RETURN(Tensor t, Tensor::Scalar<double>(value).Cast(dtype));
  return builder_->Constant(std::move(t));
}
absl::StatusOr<TracedValue> ReplicaContext::Add(TracedValue x, TracedValue y) {
  TPUSIM_REPLICA_OP(Add, Add(x, y));
}
absl::StatusOr<TracedValue> ReplicaContext::Sub(TracedValue x, TracedValue y) {
  TPUSIM_REPLICA_OP(Sub, Sub(x, y));
}
absl::StatusOr<TracedValue> ReplicaContext::Mul(TracedValue x, TracedValue y) {
  TPUSIM_REPLICA_OP(Mul, Mul(x, y));
}
absl::StatusOr<TracedValue> ReplicaContext::Div(TracedValue x, TracedValue y) {
  TPUSIM_REPLICA_OP(Div, Div(x, y));
}
absl::StatusOr<TracedValue> ReplicaContext::Maximum(TracedValue x,
                                                    TracedValue y) {
  TPUSIM_REPLICA_OP(Maximum, Max(x, y));
}
absl::StatusOr<TracedValue> ReplicaContext::Minimum(TracedValue x,
                                                    TracedValue y) {
  TPUSIM_REPLICA_OP(Minimum, Min(x, y));
}
absl::StatusOr<TracedValue> ReplicaContext::Neg(TracedValue x) {
  TPUSIM_REPLICA_OP(Neg, Neg(x));
}
absl::StatusOr<TracedValue> ReplicaContext::Exp(TracedValue x) {
  TPUSIM_REPLICA_OP(Exp, Exp(x));
}
absl::StatusOr<TracedValue> ReplicaContext::Log(TracedValue x) {
  TPUSIM_REPLICA_OP(Log, Log(x));
}
absl::StatusOr<TracedValue> ReplicaContext::Tanh(TracedValue x) {
  TPUSIM_REPLICA_OP(Tanh, Tanh(x));
}
absl::StatusOr<TracedValue> ReplicaContext::Relu(TracedValue x) {
  TPUSIM_REPLICA_OP(Relu, Relu(x));
}
absl::StatusOr<TracedValue> ReplicaContext::Sigmoid(TracedValue x) {
  TPUSIM_REPLICA_OP(Sigmoid, Sigmoid(x));
}
absl::StatusOr<TracedValue> ReplicaContext::Sqrt(TracedValue x) {
  TPUSIM_REPLICA_OP(Sqrt, Sqrt(x));
}
absl::StatusOr<TracedValue> ReplicaContext::Cast(TracedValue x, DType dtype) {
  TPUSIM_REPLICA_OP(Cast, Cast(x, dtype));
}
absl::StatusOr<TracedValue> ReplicaContext::MatMul(
    TracedValue a, TracedValue b, bool transpose_a, bool transpose_b,
    runtime::Precision precision) {
  TPUSIM_REPLICA_OP(MatMul, MatMul(a, b, transpose_a, transpose_b, precision));
}
absl::StatusOr<TracedValue> ReplicaContext::Conv2D(
    TracedValue input, TracedValue filter, std::vector<int64_t> strides,
    runtime::Padding padding, runtime::Precision precision) {
  TPUSIM_REPLICA_OP(Conv2D,
                    Conv2D(input, filter, std::move(strides), padding, precision));
}
absl::StatusOr<TracedValue> ReplicaContext::ReduceSum(TracedValue x,
                                                      std::vector<int64_t> axes,
                                                      bool keepdims) {
  TPUSIM_REPLICA_OP(ReduceSum, ReduceSum(x, std::move(axes), keepdims));
}
absl::StatusOr<TracedValue> ReplicaContext::ReduceMean(
    TracedValue x, std::vector<int64_t> axes, bool keepdims) {
  TPUSIM_REPLICA_OP(ReduceMean, ReduceMean(x, std::move(axes), keepdims));
}
absl::StatusOr<TracedValue> ReplicaContext::ReduceMax(TracedValue x,
                                                      std::vector<int64_t> axes,
                                                      bool keepdims) {
  TPUSIM_REPLICA_OP(ReduceMax, ReduceMax(x, std::move(axes), keepdims));
}
absl::StatusOr<TracedValue> ReplicaContext::Softmax(TracedValue x) {
  TPUSIM_REPLICA_OP(Softmax, Softmax(x));
}
absl::StatusOr<TracedValue> ReplicaContext::Reshape(
    TracedValue x, std::vector<int64_t> shape) {
  TPUSIM_REPLICA_OP(Reshape, Reshape(x, std::move(shape)));
}
absl::StatusOr<TracedValue> ReplicaContext::Transpose(
    TracedValue x, std::vector<int64_t> permutation) {
  TPUSIM_REPLICA_OP(Transpose, Transpose(x, std::move(permutation)));
}
absl::StatusOr<TracedValue> ReplicaContext::Broadcast(
    TracedValue x, std::vector<int64_t> shape) {
  TPUSIM_REPLICA_OP(Broadcast, Broadcast(x, std::move(shape)));
}
absl::StatusOr<TracedValue> ReplicaContext::Slice(
    TracedValue x, std::vector<int64_t> start, std::vector<int64_t> limit,
    std::vector<int64_t> strides) {
  TPUSIM_REPLICA_OP(
      Slice, Slice(x, std::move(start), std::move(limit), std::move(strides)));
}
absl::StatusOr<TracedValue> ReplicaContext::Concat(
    absl::Span<const TracedValue> values, int64_t axis) {
  TPUSIM_REPLICA_OP(Concat, Concat(values, axis));
}
absl::StatusOr<TracedValue> ReplicaContext::Gather(TracedValue params,
                                                   TracedValue indices,
                                                   int64_t axis) {
  TPUSIM_REPLICA_OP(Gather, Gather(params, indices, axis));
}
absl::StatusOr<TracedValue> ReplicaContext::OneHot(TracedValue indices,
                                                   int64_t depth, DType dtype) {
  TPUSIM_REPLICA_OP(OneHot, OneHot(indices, depth, dtype));
}

#undef TPUSIM_REPLICA_OP

// ---- MergeContext ----

absl::StatusOr<TracedValue> MergeContext::ReduceTo(ReduceOpArg op,
                                                   TracedValue value) {
  TPUSIM_ASSIGN_OR_RETURN(ReduceOp resolved, op.Resolve());
  return replica_context_->AllReduceImpl(resolved, value);
}

}  // namespace tpusim::strategy
