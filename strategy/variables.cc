#include "strategy/variables.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "strategy/distribute_lib.h"
#include "strategy/reduce.h"
#include "strategy/replica_context.h"

namespace tpusim::strategy {
namespace {

using runtime::Tensor;

absl::Status CheckSpec(const MirroredVariable& var, const Tensor& value,
                       absl::string_view what) {
  if (value.dtype() != var.dtype() || value.shape() != var.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " of variable ", var.name(), ": value ",
                     value.spec().ToString(), " does not match the variable's ",
                     runtime::DTypeName(var.dtype()), var.shape().ToString()));
  }
  return absl::OkStatus();
}

}  // namespace

MirroredVariable::MirroredVariable(Strategy* strategy, VariableStore* store,
                                   int slot, int num_components,
                                   runtime::DType dtype, runtime::Shape shape,
                                   VariableOptions options)
    : strategy_(strategy),
      store_(store),
      slot_(slot),
      num_components_(num_components),
      dtype_(dtype),
      shape_(std::move(shape)),
      options_(std::move(options)) {}

std::string MirroredVariable::component_name(int component) const {
  if (component == 0) return absl::StrCat(options_.name, ":0");
  return absl::StrCat(options_.name, "/replica_", component, ":0");
}

absl::StatusOr<Tensor> MirroredVariable::ReadComponent(int component) const {
  if (component < 0 || component >= num_components_) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable ", name(), ": component ", component,
                     " out of range [0, ", num_components_, ")"));
  }
  return store_->ReadComponent(slot_, component);
}

absl::StatusOr<std::vector<Tensor>> MirroredVariable::ReadComponents() const {
  std::vector<Tensor> out;
  for (int i = 0; i < num_components_; ++i) {
    TPUSIM_ASSIGN_OR_RETURN(Tensor t, ReadComponent(i));
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<Tensor> MirroredVariable::Read() const {
  if (!is_sync_on_read()) return ReadComponent(0);
  switch (options_.aggregation) {
    case VariableAggregation::kOnlyFirstReplica:
      return ReadComponent(0);
    case VariableAggregation::kNone:
      return absl::InvalidArgumentError(
          absl::StrCat("reading sync-on-read variable ", name(),
                       " in cross-replica context: Could not convert from "
                       "`tf.VariableAggregation` NONE to "
                       "`tf.distribute.ReduceOp` type (create it with "
                       "aggregation SUM, MEAN or "
                       "ONLY_FIRST_REPLICA)"));
    case VariableAggregation::kSum:
    case VariableAggregation::kMean: {
      TPUSIM_ASSIGN_OR_RETURN(std::vector<Tensor> parts, ReadComponents());
      TPUSIM_ASSIGN_OR_RETURN(
          Value v,
          ReduceOnHost(options_.aggregation == VariableAggregation::kSum
                           ? ReduceOp::kSum
                           : ReduceOp::kMean,
                       Value(Mirrored<Tensor>(std::move(parts))), ReduceAxis(),
                       num_components_));
      return v.tensor();
    }
  }
  return absl::InternalError("unknown aggregation");
}

absl::Status MirroredVariable::Assign(const Value& value) {
  return Update(UpdateKind::kAssign, value);
}
absl::Status MirroredVariable::AssignAdd(const Value& delta) {
  return Update(UpdateKind::kAdd, delta);
}
absl::Status MirroredVariable::AssignSub(const Value& delta) {
  return Update(UpdateKind::kSub, delta);
}

absl::Status MirroredVariable::Update(UpdateKind kind, const Value& value) {
  static constexpr absl::string_view kNames[] = {"assign", "assign_add",
                                                 "assign_sub"};
  const absl::string_view what = kNames[static_cast<int>(kind)];
  const ReplicaContext* ctx = GetReplicaContext();
  if (ctx != nullptr && ctx->is_tracing()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " of variable ", name(),
                     " on the host inside a replica function; use "
                     "ReplicaContext::AssignVariable / "
                     "AssignAddVariable / AssignSubVariable, which apply once "
                     "inside the traced program"));
  }
  // Per-component values ("MirroredStrategy behaviour": each component
  // separately).
  std::vector<Tensor> per_component;
  switch (value.kind()) {
    case Value::Kind::kTensor:
      per_component.assign(num_components_, value.tensor());
      break;
    case Value::Kind::kMirrored:
      if (value.num_components() != num_components_) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " of variable ", name(),
                         ": the Mirrored value has ", value.num_components(),
                         " components, the variable has ", num_components_));
      }
      per_component = value.components();
      break;
    case Value::Kind::kNumber: {
      TPUSIM_ASSIGN_OR_RETURN(
          Tensor t, Tensor::Scalar<double>(value.number()).Cast(dtype_));
      per_component.assign(num_components_, t);
      break;
    }
    case Value::Kind::kPerReplica:
      return absl::InvalidArgumentError(absl::StrCat(
          what, " of variable ", name(),
          ": Expected value to be mirrored across replicas: got ",
          value.DebugString(),
          " (a PerReplica value cannot update a mirrored variable in "
          "cross-replica context; reduce it first)"));
    case Value::Kind::kVariable:
      return absl::InvalidArgumentError(absl::StrCat(
          what, " of variable ", name(), ": read the source variable first"));
  }
  for (int i = 0; i < num_components_; ++i) {
    TPUSIM_RETURN_IF_ERROR(CheckSpec(*this, per_component[i], what));
  }
  for (int i = 0; i < num_components_; ++i) {
    Tensor v = per_component[i];
    if (is_sync_on_read() &&
        options_.aggregation == VariableAggregation::kSum &&
        kind == UpdateKind::kAssign) {
      // TF: a cross-replica assign of a SUM sync-on-read variable stores value
      // / N in each component so that reading (the sum) gives the value back.
      TPUSIM_ASSIGN_OR_RETURN(Tensor as_f64, v.Cast(runtime::DType::kF64));
      auto span = as_f64.mutable_values<double>();
      for (double& x : span) x /= num_components_;
      TPUSIM_ASSIGN_OR_RETURN(v, as_f64.Cast(dtype_));
    }
    if (kind != UpdateKind::kAssign) {
      TPUSIM_ASSIGN_OR_RETURN(Tensor current, ReadComponent(i));
      Tensor rhs = v;
      if (kind == UpdateKind::kSub) {
        TPUSIM_ASSIGN_OR_RETURN(Tensor f, rhs.Cast(runtime::DType::kF64));
        for (double& x : f.mutable_values<double>()) x = -x;
        TPUSIM_ASSIGN_OR_RETURN(rhs, f.Cast(dtype_));
      }
      const Tensor parts[] = {current, rhs};
      TPUSIM_ASSIGN_OR_RETURN(v, AddN(parts));
    }
    TPUSIM_RETURN_IF_ERROR(store_->WriteComponent(slot_, i, v));
  }
  return absl::OkStatus();
}

absl::StatusOr<MirroredVariable*> CreateVariable(
    const runtime::Tensor& initial_value, VariableOptions options) {
  return GetStrategy()->CreateVariableInScope(initial_value, options);
}

}  // namespace tpusim::strategy
