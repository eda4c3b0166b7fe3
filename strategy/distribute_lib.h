// strategy/distribute_lib.h
//
// The strategy-independent part of tf.distribute: the Strategy base class
// (reduce, local results, scope, variable creation), the default strategy,
// and the per-thread context that tf.distribute.get_replica_context() /
// get_strategy() / in_cross_replica_context() read.
//
//   GetReplicaContext();  // outside any scope: the default, replica 0 of 1
//   {
//     TPUSIM_ASSIGN_OR_RETURN(StrategyScope scope, strategy->Scope());
//     InCrossReplicaContext();  // true
//     GetReplicaContext();      // nullptr: cross-replica context
//     GetStrategy();            // strategy
//   }
//   // Inside a function passed to TPUStrategy::Run, GetReplicaContext() is
//   // that replica's context (one traced program serves every replica).
//
// The context is thread-local; scopes and replica functions nest LIFO.

#ifndef TPUSIM_STRATEGY_DISTRIBUTE_LIB_H_
#define TPUSIM_STRATEGY_DISTRIBUTE_LIB_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "strategy/reduce.h"
#include "strategy/runtime/tensor.h"
#include "strategy/values.h"
#include "strategy/variables.h"

namespace tpusim::strategy {

class ReplicaContext;
class Strategy;

// RAII guard returned by Strategy::Scope(): the strategy is current until it is
// destroyed. Move-only. Guards must be destroyed in reverse order of creation.
class StrategyScope {
 public:
  StrategyScope() = default;
  StrategyScope(StrategyScope&& other) noexcept;
  StrategyScope& operator=(StrategyScope&& other) noexcept;
  StrategyScope(const StrategyScope&) = delete;
  StrategyScope& operator=(const StrategyScope&) = delete;
  ~StrategyScope();

 private:
  friend class Strategy;
  explicit StrategyScope(bool pushed) : pushed_(pushed) {}
  bool pushed_ = false;
};

// What every distribution strategy offers (TF's tf.distribute.Strategy).
// TPUStrategy and the default strategy derive from it.
class Strategy {
 public:
  Strategy() = default;
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;
  virtual ~Strategy();

  virtual int num_replicas_in_sync() const = 0;
  // True only for the default strategy (no scope entered).
  virtual bool is_default() const { return false; }
  // "TPUStrategy", "DefaultStrategy": used in error messages.
  virtual std::string DebugName() const = 0;

  // Makes this strategy current (with strategy.scope():). Entering the scope
  // of the strategy that is already current nests. kFailedPrecondition when
  // another strategy is current ("Mixing different tf.distribute.Strategy
  // objects") or inside a replica function ("Method requires being in
  // cross-replica context").
  absl::StatusOr<StrategyScope> Scope();

  // strategy.reduce(reduce_op, value, axis): spec (f), see ReduceOnHost for the
  // rules. Must be called in cross-replica or default context:
  // kFailedPrecondition inside a replica function or inside another strategy's
  // scope. `op` may be a ReduceOp or a case-insensitive name (unknown names are
  // kInvalidArgument). A mirrored variable is reduced over its components.
  absl::StatusOr<Value> Reduce(ReduceOpArg op, const Value& value,
                               const ReduceAxis& axis = ReduceAxis()) const;
  absl::StatusOr<runtime::Tensor> Reduce(
      ReduceOpArg op, const PerReplica<runtime::Tensor>& value,
      const ReduceAxis& axis = ReduceAxis()) const;
  absl::StatusOr<runtime::Tensor> Reduce(
      ReduceOpArg op, const Mirrored<runtime::Tensor>& value,
      const ReduceAxis& axis = ReduceAxis()) const;
  absl::StatusOr<runtime::Tensor> Reduce(
      ReduceOpArg op, const runtime::Tensor& value,
      const ReduceAxis& axis = ReduceAxis()) const;

  // strategy.experimental_local_results(value), spec (e):
  // * PerReplica / Mirrored: the components in replica order (TPUStrategy's
  //   TF 2.1 device-string-sort quirk is an option, off by default);
  // * a whole mirrored variable: its N components (Value(var, i)) outside a
  //   replica function, (var,) inside one;
  // * anything else (plain tensor, number, a variable component): a 1-tuple
  //   (value,).
  std::vector<Value> ExperimentalLocalResults(const Value& value) const;
  // A Python list → the tuple of its items.
  std::vector<Value> ExperimentalLocalResults(
      const std::vector<Value>& list) const;
  // A nest: a leaf follows the rules above; a tuple or dict is "anything else"
  // (TF returns (value,) for a tuple: only a *list* is unpacked), so the result
  // is a 1-tuple.
  std::vector<ValueNest> ExperimentalLocalResults(const ValueNest& value) const;

  // The variable creator installed by scope(): makes a variable owned by this
  // strategy. Users call CreateVariable (variables.h), which dispatches to the
  // current strategy.
  absl::StatusOr<MirroredVariable*> CreateVariableInScope(
      const runtime::Tensor& initial_value, const VariableOptions& options);
  // Variables created under this strategy, in creation order.
  std::vector<MirroredVariable*> variables() const;

 protected:
  // The order in which ExperimentalLocalResults lists components (a permutation
  // of 0..n-1). Default: replica order.
  virtual std::vector<int> LocalResultsOrder(int num_components) const;
  // Where this strategy's variables live, and how many components a variable
  // has.
  virtual VariableStore& variable_store() = 0;
  virtual int num_variable_components() const { return num_replicas_in_sync(); }
  // kOk when reduce / scope may run in the current context (see Reduce).
  absl::Status RequireCrossReplicaOrDefaultContext(
      absl::string_view method) const;

 private:
  std::vector<std::unique_ptr<MirroredVariable>> variables_;
};

// The strategy that is current outside any scope: one replica, variables in
// host memory.
class DefaultStrategy final : public Strategy {
 public:
  // The process-wide instance.
  static DefaultStrategy& Get();
  int num_replicas_in_sync() const override { return 1; }
  bool is_default() const override { return true; }
  std::string DebugName() const override { return "DefaultStrategy"; }

 protected:
  VariableStore& variable_store() override;

 private:
  DefaultStrategy();
  std::unique_ptr<VariableStore> store_;
};

// ---- tf.distribute context functions (thread-local) ----

// tf.distribute.get_replica_context(): the current replica's context inside a
// replica function; the default replica context (replica 0 of 1, default
// strategy) outside any scope; nullptr in cross-replica context (inside a
// scope, or inside a merge_call function).
ReplicaContext* GetReplicaContext();
// tf.distribute.get_strategy(): the current strategy (the default strategy
// outside scopes).
Strategy* GetStrategy();
// tf.distribute.has_strategy(): false outside any scope.
bool HasStrategy();
// tf.distribute.in_cross_replica_context(): true inside a scope and outside
// replica functions (and inside merge_call functions); false in the default
// context.
bool InCrossReplicaContext();
// tf.distribute.get_cross_replica_context(): the strategy in cross-replica
// context, the default strategy in the default context, nullptr inside a
// replica function.
Strategy* GetCrossReplicaContext();

namespace internal {

// Pushes a context frame for the lifetime of the guard (used by scope(), run()
// and merge_call()). `replica_context` == nullptr means cross-replica context.
class ContextFrameGuard {
 public:
  ContextFrameGuard(Strategy* strategy, ReplicaContext* replica_context);
  ~ContextFrameGuard();
  ContextFrameGuard(const ContextFrameGuard&) = delete;
  ContextFrameGuard& operator=(const ContextFrameGuard&) = delete;
};

// The current frame (the default frame when the stack is empty).
struct ContextFrame {
  Strategy* strategy = nullptr;
  ReplicaContext* replica_context = nullptr;
  bool is_default = false;
};
ContextFrame CurrentFrame();
void PushFrame(Strategy* strategy, ReplicaContext* replica_context);
void PopFrame();

}  // namespace internal
}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_DISTRIBUTE_LIB_H_
