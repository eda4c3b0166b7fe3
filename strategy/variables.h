// strategy/variables.h
//
// Variables created under a strategy: MirroredVariable (one component per
// replica device, TF's TPUMirroredVariable) and its sync-on-read flavour
// (TF's TPUSyncOnReadVariable).
//
//   TPUSIM_ASSIGN_OR_RETURN(StrategyScope scope, strategy->Scope());
//   Tensor zeros = Tensor::Zeros(DType::kF32, Shape({4, 3}));
//   TPUSIM_ASSIGN_OR_RETURN(MirroredVariable* w, CreateVariable(zeros, {"w"}));
//   w->name();              // "w:0"
//   w->component_name(1);   // "w/replica_1:0"
//   w->Assign(zeros);       // cross-replica: every component
//   // Inside a replica function, ctx.AssignVariable(*w, value) applies once,
//   // in the program.
//
// Variables are owned by the strategy that created them (the current
// strategy of CreateVariable: the default strategy outside any scope) and
// live as long as it does. Component values live in the strategy's
// VariableStore (a backend's per-device variable buffers for TPUStrategy,
// host memory for the default strategy).

#ifndef TPUSIM_STRATEGY_VARIABLES_H_
#define TPUSIM_STRATEGY_VARIABLES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "strategy/runtime/tensor.h"
#include "strategy/values.h"

namespace tpusim::strategy {

class Strategy;

// tf.VariableSynchronization. kAuto means ON_WRITE (mirrored).
enum class VariableSynchronization { kAuto, kOnWrite, kOnRead, kNone };
// tf.VariableAggregation.
enum class VariableAggregation { kNone, kSum, kMean, kOnlyFirstReplica };

struct VariableOptions {
  // TF's variable name without the ":0" suffix.
  std::string name = "Variable";
  VariableSynchronization synchronization = VariableSynchronization::kAuto;
  VariableAggregation aggregation = VariableAggregation::kNone;
  bool trainable = true;
};

// Where the component values of a strategy's variables live.
class VariableStore {
 public:
  virtual ~VariableStore() = default;
  // kFailedPrecondition / kNotFound when the component was never written.
  virtual absl::StatusOr<runtime::Tensor> ReadComponent(
      int slot, int component) const = 0;
  virtual absl::Status WriteComponent(int slot, int component,
                                      const runtime::Tensor& value) = 0;
};

class MirroredVariable {
 public:
  // Made by Strategy::CreateVariableInScope; users call CreateVariable.
  MirroredVariable(Strategy* strategy, VariableStore* store, int slot,
                   int num_components, runtime::DType dtype,
                   runtime::Shape shape, VariableOptions options);
  MirroredVariable(const MirroredVariable&) = delete;
  MirroredVariable& operator=(const MirroredVariable&) = delete;

  // TF's .name: "<name>:0" (the name of component 0).
  std::string name() const { return component_name(0); }
  // "<name>:0" for component 0, "<name>/replica_<i>:0" for i > 0.
  std::string component_name(int component) const;
  const std::string& base_name() const { return options_.name; }
  int num_components() const { return num_components_; }
  runtime::DType dtype() const { return dtype_; }
  const runtime::Shape& shape() const { return shape_; }
  // The backend variable slot (one buffer per replica device and slot).
  int slot() const { return slot_; }
  Strategy* strategy() const { return strategy_; }
  bool is_sync_on_read() const {
    return options_.synchronization == VariableSynchronization::kOnRead;
  }
  VariableAggregation aggregation() const { return options_.aggregation; }
  bool trainable() const { return options_.trainable; }

  // The value of component `component`. kInvalidArgument for an index out of
  // range.
  absl::StatusOr<runtime::Tensor> ReadComponent(int component) const;
  // All components in replica order.
  absl::StatusOr<std::vector<runtime::Tensor>> ReadComponents() const;

  // Cross-replica read (read_value): a mirrored variable gives component 0; a
  // sync-on-read variable aggregates its components (SUM: sum, MEAN: mean,
  // ONLY_FIRST_REPLICA: component 0; NONE: kInvalidArgument, TF's "Could not
  // convert from `tf.VariableAggregation` NONE").
  absl::StatusOr<runtime::Tensor> Read() const;

  // Cross-replica updates: each component is updated separately
  // ("MirroredStrategy behaviour"). `value` may be a plain tensor (every
  // component gets it) or a Mirrored value with one component per replica
  // (component i gets value i). A PerReplica value is kInvalidArgument
  // ("Expected value to be mirrored across replicas"), as are dtype or shape
  // mismatches. A sync-on-read SUM variable assigns value / N to each component
  // (TF). kFailedPrecondition inside a replica function: there, use
  // ReplicaContext::AssignVariable, which applies once to the logical variable
  // inside the traced program.
  absl::Status Assign(const Value& value);
  absl::Status AssignAdd(const Value& delta);
  absl::Status AssignSub(const Value& delta);

 private:
  enum class UpdateKind { kAssign, kAdd, kSub };
  absl::Status Update(UpdateKind kind, const Value& value);

  Strategy* strategy_;
  VariableStore* store_;
  int slot_;
  int num_components_;
  runtime::DType dtype_;
  runtime::Shape shape_;
  VariableOptions options_;
};

// tf.Variable(initial_value, name=..., synchronization=..., aggregation=...)
// under the current strategy (GetStrategy(): the strategy whose scope is
// entered, or the default strategy). Under TPUStrategy the result is mirrored:
// one component per replica, every component initialised with `initial_value`
// (evaluated once). Errors: kInvalidArgument for an abstract or string initial
// value; the strategy's own errors (e.g. a backend without variable storage
// gives kUnimplemented).
absl::StatusOr<MirroredVariable*> CreateVariable(
    const runtime::Tensor& initial_value, VariableOptions options = {});

}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_VARIABLES_H_
