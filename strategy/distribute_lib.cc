#include "strategy/distribute_lib.h"

#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/status_macros.h"
#include "strategy/replica_context.h"

namespace tpusim::strategy {
namespace internal {
namespace {

thread_local std::vector<ContextFrame>* frames = nullptr;

std::vector<ContextFrame>& Frames() {
  if (frames == nullptr)
    frames = new std::vector<ContextFrame>();  // per thread, never freed
  return *frames;
}

ReplicaContext& DefaultReplicaContext() {
  static ReplicaContext* context = new ReplicaContext(
      &DefaultStrategy::Get(), /*builder=*/nullptr, /*num_replicas=*/1);
  return *context;
}

}  // namespace

ContextFrame CurrentFrame() {
  const std::vector<ContextFrame>& stack = Frames();
  if (stack.empty()) {
    return ContextFrame{&DefaultStrategy::Get(), &DefaultReplicaContext(),
                        /*is_default=*/true};
  }
  return stack.back();
}

void PushFrame(Strategy* strategy, ReplicaContext* replica_context) {
  Frames().push_back(
      ContextFrame{strategy, replica_context, /*is_default=*/false});
}

void PopFrame() {
  TPUSIM_CHECK(!Frames().empty()) << "context frame stack underflow";
  Frames().pop_back();
}

ContextFrameGuard::ContextFrameGuard(Strategy* strategy,
                                     ReplicaContext* replica_context) {
  PushFrame(strategy, replica_context);
}
ContextFrameGuard::~ContextFrameGuard() { PopFrame(); }

}  // namespace internal

// ---- StrategyScope ----

StrategyScope::StrategyScope(StrategyScope&& other) noexcept
    : pushed_(other.pushed_) {
  other.pushed_ = false;
}
StrategyScope& StrategyScope::operator=(StrategyScope&& other) noexcept {
  if (this != &other) {
    if (pushed_) internal::PopFrame();
    pushed_ = other.pushed_;
    other.pushed_ = false;
  }
  return *this;
}
StrategyScope::~StrategyScope() {
  if (pushed_) internal::PopFrame();
}

// ---- context functions ----

ReplicaContext* GetReplicaContext() {
  return internal::CurrentFrame().replica_context;
}
Strategy* GetStrategy() { return internal::CurrentFrame().strategy; }
bool HasStrategy() { return !internal::CurrentFrame().is_default; }
bool InCrossReplicaContext() {
  const internal::ContextFrame frame = internal::CurrentFrame();
  return !frame.is_default && frame.replica_context == nullptr;
}
Strategy* GetCrossReplicaContext() {
  const internal::ContextFrame frame = internal::CurrentFrame();
  if (frame.is_default) return frame.strategy;
  return frame.replica_context == nullptr ? frame.strategy : nullptr;
}

// ---- Strategy ----

Strategy::~Strategy() = default;

absl::Status Strategy::RequireCrossReplicaOrDefaultContext(
    absl::string_view method) const {
  const internal::ContextFrame frame = internal::CurrentFrame();
  if (frame.is_default) return absl::OkStatus();
  if (frame.strategy != this) {
    return absl::FailedPreconditionError(absl::StrCat(
        method, ": Mixing different tf.distribute.Strategy objects: ",
        frame.strategy->DebugName(), " is current, not this ", DebugName()));
  }
  if (frame.replica_context != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(method,
                     ": Method requires being in cross-replica context, use "
                     "get_replica_context().merge_call() (called inside a "
                     "replica function)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<StrategyScope> Strategy::Scope() {
  const internal::ContextFrame frame = internal::CurrentFrame();
  if (!frame.is_default) {
    // TF: a scope of the current strategy may be entered again; otherwise the
    // cross-replica check fails.
    TPUSIM_RETURN_IF_ERROR(RequireCrossReplicaOrDefaultContext("scope()"));
    return StrategyScope(/*pushed=*/false);
  }
  internal::PushFrame(this, nullptr);
  return StrategyScope(/*pushed=*/true);
}

std::vector<int> Strategy::LocalResultsOrder(int num_components) const {
  std::vector<int> order(num_components);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

absl::StatusOr<Value> Strategy::Reduce(ReduceOpArg op, const Value& value,
                                       const ReduceAxis& axis) const {
  TPUSIM_RETURN_IF_ERROR(RequireCrossReplicaOrDefaultContext("reduce"));
  TPUSIM_ASSIGN_OR_RETURN(ReduceOp resolved, op.Resolve());
  if (value.is_variable()) {
    if (value.component() >= 0) {
      TPUSIM_ASSIGN_OR_RETURN(
          runtime::Tensor t,
          value.variable()->ReadComponent(value.component()));
      return ReduceOnHost(resolved, Value(std::move(t)), axis,
                          num_replicas_in_sync());
    }
    TPUSIM_ASSIGN_OR_RETURN(std::vector<runtime::Tensor> parts,
                            value.variable()->ReadComponents());
    return ReduceOnHost(resolved,
                        Value(Mirrored<runtime::Tensor>(std::move(parts))),
                        axis, num_replicas_in_sync());
  }
  return ReduceOnHost(resolved, value, axis, num_replicas_in_sync());
}

namespace {
absl::StatusOr<runtime::Tensor> AsTensor(absl::StatusOr<Value> v) {
  if (!v.ok()) return v.status();
  if (v->is_number()) return v->NumberTensor();
  return v->tensor();
}
}  // namespace

absl::StatusOr<runtime::Tensor> Strategy::Reduce(
    ReduceOpArg op, const PerReplica<runtime::Tensor>& value,
    const ReduceAxis& axis) const {
  return AsTensor(Reduce(std::move(op), Value(value), axis));
}
absl::StatusOr<runtime::Tensor> Strategy::Reduce(
    ReduceOpArg op, const Mirrored<runtime::Tensor>& value,
    const ReduceAxis& axis) const {
  return AsTensor(Reduce(std::move(op), Value(value), axis));
}
absl::StatusOr<runtime::Tensor> Strategy::Reduce(ReduceOpArg op,
                                                 const runtime::Tensor& value,
                                                 const ReduceAxis& axis) const {
  return AsTensor(Reduce(std::move(op), Value(value), axis));
}

std::vector<Value> Strategy::ExperimentalLocalResults(
    const Value& value) const {
  if (value.is_per_replica() || value.is_mirrored()) {
    std::vector<Value> out;
    for (int i : LocalResultsOrder(value.num_components())) {
      out.emplace_back(value.components()[i]);
    }
    return out;
  }
  if (value.is_variable() && value.component() < 0) {
    const ReplicaContext* ctx = GetReplicaContext();
    if (ctx != nullptr && ctx->is_tracing())
      return {value};  // inside the TPU computation
    std::vector<Value> out;
    for (int i : LocalResultsOrder(value.variable()->num_components())) {
      out.emplace_back(value.variable(), i);
    }
    return out;
  }
  return {value};
}

std::vector<Value> Strategy::ExperimentalLocalResults(
    const std::vector<Value>& list) const {
  return list;
}

std::vector<ValueNest> Strategy::ExperimentalLocalResults(
    const ValueNest& value) const {
  if (!value.is_leaf()) return {value};
  std::vector<ValueNest> out;
  for (Value& v : ExperimentalLocalResults(value.leaf()))
    out.emplace_back(std::move(v));
  return out;
}

absl::StatusOr<MirroredVariable*> Strategy::CreateVariableInScope(
    const runtime::Tensor& initial_value, const VariableOptions& options) {
  // An abstract initial value (a shape without data) makes an abstract
  // variable: its reads and updates are timed on a timing backend and never
  // computed, which is how pod-scale workloads are simulated.
  if (initial_value.dtype() == runtime::DType::kBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable '", options.name, "': string variables are not supported"));
  }
  if (options.name.empty()) {
    return absl::InvalidArgumentError("variable name must not be empty");
  }
  const int slot = static_cast<int>(variables_.size());
  const int n = num_variable_components();
  VariableStore& store = variable_store();
  // The initial value is evaluated once and that same value initialises every
  // component.
  for (int i = 0; i < n; ++i) {
    TPUSIM_RETURN_IF_ERROR(store.WriteComponent(slot, i, initial_value));
  }
  variables_.push_back(std::make_unique<MirroredVariable>(
      this, &store, slot, n, initial_value.dtype(), initial_value.shape(),
      options));
  return variables_.back().get();
}

std::vector<MirroredVariable*> Strategy::variables() const {
  std::vector<MirroredVariable*> out;
  for (const auto& v : variables_) out.push_back(v.get());
  return out;
}

// ---- DefaultStrategy ----

namespace {

class HostVariableStore final : public VariableStore {
 public:
  absl::StatusOr<runtime::Tensor> ReadComponent(int slot,
                                                int component) const override {
    auto it = values_.find({slot, component});
    if (it == values_.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("variable slot ", slot, " component ", component,
                       " was never written"));
    }
    return it->second;
  }
  absl::Status WriteComponent(int slot, int component,
                              const runtime::Tensor& value) override {
    values_[{slot, component}] = value;
    return absl::OkStatus();
  }

 private:
  std::map<std::pair<int, int>, runtime::Tensor> values_;
};

}  // namespace

DefaultStrategy::DefaultStrategy()
    : store_(std::make_unique<HostVariableStore>()) {}

DefaultStrategy& DefaultStrategy::Get() {
  static DefaultStrategy* strategy = new DefaultStrategy();
  return *strategy;
}

VariableStore& DefaultStrategy::variable_store() { return *store_; }

}  // namespace tpusim::strategy
