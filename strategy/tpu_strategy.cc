#include "strategy/tpu_strategy.h"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "strategy/config_proto.h"

namespace tpusim::strategy {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::ValueType;

uint64_t StepFunction::NextId() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

// How one flattened argument leaf enters the program.
struct LeafPlan {
  enum class Kind { kParameter, kConstant, kVariable };
  Kind kind = Kind::kParameter;
  bool distributed = false;
  ValueType type;  // parameters: bound shape + dynamic dims
  std::vector<Tensor>
      per_replica;  // parameters: N tensors, or 1 broadcast to every replica
  // Parameters: the host CPU time that produced each replica's tensor (empty
  // or N entries; PerReplica::host_costs), passed on with its transfer.
  std::vector<common::Picoseconds> host_costs;
  Tensor constant;  // numbers
  const MirroredVariable* variable = nullptr;
};

struct TPUStrategy::ArgPlan {
  ValueNest structure;
  std::vector<LeafPlan> leaves;
  std::string signature;
};

struct TPUStrategy::Compiled {
  std::unique_ptr<runtime::Executable> executable;
  // The traced result structure; leaf k is program output k.
  TracedNest result;
  // Per output: true when it does not depend on the replica (returned
  // unwrapped).
  std::vector<bool> independent;
  // Multi-step: output name → (output index, reduced).
  std::vector<std::pair<std::string, bool>> named_outputs;
};

namespace {

// Buffers on each replica's devices for one step.
class VariableStoreOnBackend final : public VariableStore {
 public:
  VariableStoreOnBackend(runtime::Backend* backend,
                         std::vector<int> component_devices)
      : backend_(backend), devices_(std::move(component_devices)) {}
  absl::StatusOr<Tensor> ReadComponent(int slot, int component) const override {
    return backend_->ReadVariable(devices_.at(component), slot);
  }
  absl::Status WriteComponent(int slot, int component,
                              const Tensor& value) override {
    return backend_->WriteVariable(devices_.at(component), slot, value);
  }

 private:
  runtime::Backend* backend_;
  std::vector<int> devices_;
};

// True for ops whose value differs (or may differ) between replicas.
bool IsReplicaDependentSource(const runtime::Op& op) {
  switch (op.code) {
    case runtime::OpCode::kReplicaId:
    case runtime::OpCode::kVariableRead:
    case runtime::OpCode::kVariableAssign:
    case runtime::OpCode::kVariableAssignAdd:
      return true;
    default:
      return runtime::IsCollective(op.code);
  }
}

std::vector<bool> ReplicaDependence(
    const runtime::Program& program,
    const std::vector<bool>& parameter_distributed) {
  const std::vector<runtime::Op>& ops = program.ops();
  std::vector<bool> dep(ops.size(), false);
  for (size_t i = 0; i < ops.size(); ++i) {
    const runtime::Op& op = ops[i];
    bool d = IsReplicaDependentSource(op);
    if (op.code == runtime::OpCode::kParameter) {
      const int64_t index = op.attrs.parameter_index;
      d = index >= 0 &&
          index < static_cast<int64_t>(parameter_distributed.size()) &&
          parameter_distributed[index];
    }
    for (int operand : op.operands) d = d || dep[operand];
    dep[i] = d;
  }
  return dep;
}

absl::StatusOr<LeafPlan> PlanLeaf(const Value& value, const std::string& path,
                                  int n, bool dynamic_batch) {
  LeafPlan leaf;
  switch (value.kind()) {
    case Value::Kind::kNumber:
      leaf.kind = LeafPlan::Kind::kConstant;
      leaf.constant = value.NumberTensor();
      return leaf;
    case Value::Kind::kVariable:
      if (value.component() < 0) {
        // The whole mirrored variable: each replica reads its own component.
        leaf.kind = LeafPlan::Kind::kVariable;
        leaf.variable = value.variable();
        return leaf;
      } else {
        // One component (e.g. from experimental_local_results): a plain value
        // broadcast to every replica.
        TPUSIM_ASSIGN_OR_RETURN(
            Tensor t, value.variable()->ReadComponent(value.component()));
        leaf.per_replica = {std::move(t)};
      }
      break;
    case Value::Kind::kTensor:
      leaf.per_replica = {value.tensor()};
      break;
    case Value::Kind::kPerReplica:
    case Value::Kind::kMirrored:
      if (value.num_components() != n) {
        return absl::InvalidArgumentError(absl::StrCat(
            "run: argument ", path, " is a distributed value with ",
            value.num_components(), " components, but the strategy has ", n,
            " replicas"));
      }
      leaf.distributed = true;
      leaf.per_replica = value.components();
      leaf.host_costs = value.host_costs();
      break;
  }
  const Tensor& first = leaf.per_replica[0];
  if (first.dtype() == DType::kBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("run: argument ", path, " is a string tensor (",
                     first.spec().ToString(),
                     "); TPU replica functions take numeric tensors only"));
  }
  std::vector<int64_t> bound = first.shape().dims();
  uint64_t dynamic = 0;
  for (size_t r = 1; r < leaf.per_replica.size(); ++r) {
    const Tensor& t = leaf.per_replica[r];
    if (t.dtype() != first.dtype() || t.rank() != first.rank()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "run: argument ", path, " is ", first.spec().ToString(),
          " on replica 0 but ", t.spec().ToString(), " on replica ", r,
          "; dtype and rank must agree across replicas"));
    }
    for (int d = 0; d < t.rank(); ++d) {
      if (t.shape().dim(d) != bound[d]) {
        if (!dynamic_batch) {
          return absl::InvalidArgumentError(absl::StrCat(
              "run: argument ", path, " has shape ", first.shape().ToString(),
              " on replica 0 but ", t.shape().ToString(), " on replica ", r,
              " and dynamic batch size is disabled"));
        }
        dynamic |= uint64_t{1} << d;
        bound[d] = std::max(bound[d], t.shape().dim(d));
      }
    }
  }
  leaf.type = ValueType(first.dtype(), Shape(bound), dynamic);
  return leaf;
}

}  // namespace

// ---- MultiStepContext ----

absl::Status MultiStepContext::SetLastStepOutput(
    const std::string& name, TracedValue output,
    std::optional<ReduceOpArg> reduce_op) {
  Output out;
  out.value = output;
  if (reduce_op.has_value()) {
    TPUSIM_ASSIGN_OR_RETURN(out.value, ctx_->AllReduce(*reduce_op, output));
    out.reduced = true;
  } else {
    TPUSIM_RETURN_IF_ERROR(ctx_->TypeOf(output).status());
  }
  outputs_[name] = out;
  return absl::OkStatus();
}

// ---- TPUStrategy ----

absl::StatusOr<std::unique_ptr<TPUStrategy>> TPUStrategy::Create(
    runtime::Backend& backend, const TPUClusterResolver& resolver,
    TPUStrategyOptions options) {
  if (options.steps_per_run.has_value() && *options.steps_per_run < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("TPUStrategy: steps_per_run = ", *options.steps_per_run,
                     ", must be >= 1"));
  }
  const DeviceAssignment* da = options.device_assignment.has_value()
                                   ? &*options.device_assignment
                                   : nullptr;
  TPUSIM_ASSIGN_OR_RETURN(InputWorkerMapping mapping,
                          resolver.InputWorkers(da));
  if (mapping.num_replicas_in_sync < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TPUStrategy: the device assignment has ", mapping.num_replicas_in_sync,
        " replicas; tpusim needs at least 1"));
  }
  const int cores = da != nullptr ? da->num_cores_per_replica() : 1;
  absl::Span<runtime::Device* const> devices = backend.devices();
  for (size_t r = 0; r < mapping.replica_device_ids.size(); ++r) {
    const std::vector<int>& ids = mapping.replica_device_ids[r];
    if (static_cast<int>(ids.size()) != cores) {
      return absl::InvalidArgumentError(
          absl::StrCat("TPUStrategy: replica ", r, " has ", ids.size(),
                       " devices, expected ", cores));
    }
    for (int id : ids) {
      if (id < 0 || id >= static_cast<int>(devices.size())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "TPUStrategy: replica ", r, " needs device ", id, " but backend '",
            backend.name(), "' has ", devices.size(),
            " devices (resolver slice '", resolver.tpu(), "')"));
      }
      const runtime::DeviceDescription& want = resolver.devices()[id];
      const runtime::Device& have = *devices[id];
      if (have.task() != want.task || have.ordinal() != want.ordinal) {
        return absl::InvalidArgumentError(absl::StrCat(
            "TPUStrategy: backend device ", id, " is task ", have.task(),
            " TPU:", have.ordinal(), " but the resolver expects task ",
            want.task, " TPU:", want.ordinal));
      }
    }
  }
  std::unique_ptr<TPUStrategy> strategy(new TPUStrategy(
      backend, resolver, std::move(options), std::move(mapping), cores));
  return strategy;
}

absl::StatusOr<std::unique_ptr<TPUStrategy>> TPUStrategy::Create(
    runtime::Backend& backend, TPUStrategyOptions options) {
  // tpu_cluster_resolver=None: a resolver for the default TPU (empty name),
  // here the backend's devices as they are.
  TPUSIM_ASSIGN_OR_RETURN(TPUClusterResolver resolver,
                          TPUClusterResolver::Create(backend, ""));
  return Create(backend, resolver, std::move(options));
}

TPUStrategy::TPUStrategy(runtime::Backend& backend, TPUClusterResolver resolver,
                         TPUStrategyOptions options, InputWorkerMapping mapping,
                         int num_cores_per_replica)
    : backend_(&backend),
      resolver_(std::move(resolver)),
      options_(std::move(options)),
      mapping_(std::move(mapping)),
      num_cores_per_replica_(num_cores_per_replica),
      steps_per_run_(options_.steps_per_run.value_or(1)) {
  assignment_.replica_devices = mapping_.replica_device_ids;
  std::vector<int> component_devices;
  for (const std::vector<int>& ids : mapping_.replica_device_ids) {
    component_devices.push_back(ids[0]);
  }
  store_ = std::make_unique<VariableStoreOnBackend>(
      backend_, std::move(component_devices));
}

TPUStrategy::~TPUStrategy() = default;

VariableStore& TPUStrategy::variable_store() { return *store_; }

std::vector<int> TPUStrategy::LocalResultsOrder(int num_components) const {
  std::vector<int> order = Strategy::LocalResultsOrder(num_components);
  if (options_.sort_local_results_by_device_string &&
      num_components == static_cast<int>(mapping_.replica_devices.size())) {
    // TF 2.1: tuple(val.get(device=d) for d in sorted(val.devices)).
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return mapping_.replica_devices[a] < mapping_.replica_devices[b];
    });
  }
  return order;
}

tensorflow::ConfigProto TPUStrategy::UpdateConfigProto(
    const tensorflow::ConfigProto& config) const {
  return strategy::UpdateConfigProto(config, resolver_);
}

const runtime::Program* TPUStrategy::last_traced_program() const {
  return last_compiled_ == nullptr ? nullptr
                                   : &last_compiled_->executable->program();
}

absl::StatusOr<TPUStrategy::ArgPlan> TPUStrategy::PlanArgs(
    const ValueNest& args) const {
  ArgPlan plan;
  plan.structure = args;
  plan.signature = args.StructureString();
  const int n = num_replicas_in_sync();
  for (const auto& [path, value] : args.FlattenWithPaths()) {
    TPUSIM_ASSIGN_OR_RETURN(
        LeafPlan leaf,
        PlanLeaf(*value, path, n, options_.enable_dynamic_batch_size));
    switch (leaf.kind) {
      case LeafPlan::Kind::kConstant:
        absl::StrAppend(&plan.signature, "|C", leaf.constant.DebugString());
        break;
      case LeafPlan::Kind::kVariable:
        absl::StrAppend(&plan.signature, "|V", leaf.variable->slot(), "@",
                        reinterpret_cast<uintptr_t>(leaf.variable));
        break;
      case LeafPlan::Kind::kParameter:
        absl::StrAppend(&plan.signature, leaf.distributed ? "|D" : "|P",
                        leaf.type.ToString());
        break;
    }
    plan.leaves.push_back(std::move(leaf));
  }
  return plan;
}

namespace {

// Records the program inputs of one step's arguments and returns them in the
// args' structure.
absl::StatusOr<TracedNest> TraceArgs(runtime::ProgramBuilder& builder,
                                     ReplicaContext& ctx,
                                     const ValueNest& structure,
                                     const std::vector<LeafPlan>& leaves,
                                     std::vector<bool>& parameter_distributed) {
  std::vector<TracedValue> traced;
  for (const LeafPlan& leaf : leaves) {
    switch (leaf.kind) {
      case LeafPlan::Kind::kParameter: {
        TPUSIM_ASSIGN_OR_RETURN(TracedValue p, builder.Parameter(leaf.type));
        parameter_distributed.push_back(leaf.distributed);
        traced.push_back(p);
        break;
      }
      case LeafPlan::Kind::kConstant: {
        TPUSIM_ASSIGN_OR_RETURN(TracedValue c, builder.Constant(leaf.constant));
        traced.push_back(c);
        break;
      }
      case LeafPlan::Kind::kVariable: {
        TPUSIM_ASSIGN_OR_RETURN(TracedValue v,
                                ctx.ReadVariable(*leaf.variable));
        traced.push_back(v);
        break;
      }
    }
  }
  return structure.Unflatten(std::move(traced));
}

}  // namespace

absl::StatusOr<runtime::SpmdOutputs> TPUStrategy::Execute(
    const Compiled& compiled, const std::vector<ArgPlan>& plans, bool loop) {
  const runtime::Program& program = compiled.executable->program();
  const int n = num_replicas_in_sync();
  std::vector<std::unique_ptr<runtime::Buffer>> keep;
  // [iteration][replica][parameter]
  std::vector<std::vector<std::vector<runtime::Buffer*>>> args;
  for (const ArgPlan& plan : plans) {
    std::vector<std::vector<runtime::Buffer*>>& iteration =
        args.emplace_back(n);
    size_t param = 0;
    for (const LeafPlan& leaf : plan.leaves) {
      if (leaf.kind != LeafPlan::Kind::kParameter) continue;
      if (param >= program.parameters().size()) {
        return absl::InternalError(
            "run: more argument leaves than program parameters");
      }
      const int core = program.op(program.parameters()[param]).logical_core;
      for (int r = 0; r < n; ++r) {
        const Tensor& t = leaf.per_replica.size() == 1 ? leaf.per_replica[0]
                                                       : leaf.per_replica[r];
        runtime::TransferOptions transfer;
        if (!leaf.host_costs.empty()) transfer.host_cost = leaf.host_costs[r];
        TPUSIM_ASSIGN_OR_RETURN(
            std::unique_ptr<runtime::Buffer> b,
            backend_->TransferToDevice(assignment_.replica_devices[r][core], t,
                                       transfer));
        iteration[r].push_back(b.get());
        keep.push_back(std::move(b));
      }
      ++param;
    }
  }
  if (!loop) {
    return backend_->ExecuteSpmd(*compiled.executable, assignment_, args[0]);
  }
  return backend_->ExecuteSpmdLoop(*compiled.executable, assignment_, args);
}

absl::StatusOr<std::vector<Tensor>> TPUStrategy::FetchOutput(
    const runtime::SpmdOutputs& outputs, int index) {
  std::vector<Tensor> out;
  for (size_t r = 0; r < outputs.size(); ++r) {
    if (index >= static_cast<int>(outputs[r].size())) {
      return absl::InternalError(
          absl::StrCat("run: replica ", r, " returned ", outputs[r].size(),
                       " outputs, expected more than ", index));
    }
    TPUSIM_ASSIGN_OR_RETURN(Tensor t,
                            backend_->TransferFromDevice(*outputs[r][index]));
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<ValueNest> TPUStrategy::Run(const StepFunction& fn,
                                           const ValueNest& args) {
  TPUSIM_RETURN_IF_ERROR(RequireCrossReplicaOrDefaultContext("run"));
  if (!args.is_tuple()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run: `args` must be a list or tuple, got ",
        args.is_leaf()
            ? absl::StrCat("a single value ", args.leaf().DebugString())
            : args.StructureString(),
        "; wrap it as ValueNest::Tuple({...})"));
  }
  // Trailing None entries are stripped (TF 2.1 TPU).
  std::vector<ValueNest> children = args.children();
  while (!children.empty() && children.back().is_none()) children.pop_back();
  return RunInternal(fn, ValueNest::Tuple(std::move(children)));
}

absl::StatusOr<ValueNest> TPUStrategy::RunInternal(const StepFunction& fn,
                                                   const ValueNest& args) {
  TPUSIM_ASSIGN_OR_RETURN(ArgPlan plan, PlanArgs(args));
  const std::string key = absl::StrCat(fn.id(), "#", plan.signature);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    const int n = num_replicas_in_sync();
    runtime::ProgramBuilder builder(fn.name(), n, num_cores_per_replica_);
    ReplicaContext ctx(this, &builder, n);
    std::vector<bool> parameter_distributed;
    absl::StatusOr<TracedNest> result;
    {
      internal::ContextFrameGuard replica(this, &ctx);
      TPUSIM_ASSIGN_OR_RETURN(TracedNest traced_args,
                              TraceArgs(builder, ctx, plan.structure,
                                        plan.leaves, parameter_distributed));
      result = fn.fn()(ctx, traced_args);
    }
    ctx.EndTracing();
    if (!result.ok()) return result.status();
    std::vector<TracedValue> outputs;
    for (const TracedValue* v : result->Flatten()) {
      if (v->id < 0 || v->id >= builder.num_ops()) {
        return absl::InvalidArgumentError(
            absl::StrCat("run: the step function returned value %", v->id,
                         ", which is not a value of the traced program (",
                         builder.num_ops(), " values)"));
      }
      outputs.push_back(*v);
    }
    TPUSIM_ASSIGN_OR_RETURN(runtime::Program program,
                            std::move(builder).Build(outputs));
    auto compiled = std::make_unique<Compiled>();
    const std::vector<bool> dep =
        ReplicaDependence(program, parameter_distributed);
    for (TracedValue v : program.outputs())
      compiled->independent.push_back(!dep[v.id]);
    TPUSIM_ASSIGN_OR_RETURN(
        compiled->executable,
        backend_->Compile(program, {n, num_cores_per_replica_}));
    compiled->result = *std::move(result);
    ++num_traces_;
    it = cache_.emplace(key, std::move(compiled)).first;
  }
  const Compiled& compiled = *it->second;
  last_compiled_ = &compiled;
  std::vector<ArgPlan> plans;
  plans.push_back(std::move(plan));
  TPUSIM_ASSIGN_OR_RETURN(runtime::SpmdOutputs outs,
                          Execute(compiled, plans, /*loop=*/false));
  std::vector<Value> leaves;
  for (size_t k = 0; k < compiled.independent.size(); ++k) {
    TPUSIM_ASSIGN_OR_RETURN(std::vector<Tensor> parts,
                            FetchOutput(outs, static_cast<int>(k)));
    // regroup: the same object on every replica (always the case with one
    // replica) is returned unwrapped.
    if ((compiled.independent[k] &&
         options_.unwrap_replica_independent_results) ||
        parts.size() == 1) {
      leaves.emplace_back(std::move(parts[0]));
    } else {
      leaves.emplace_back(PerReplica<Tensor>(std::move(parts)));
    }
  }
  return compiled.result.Unflatten(std::move(leaves));
}

absl::StatusOr<ValueNest> TPUStrategy::ExperimentalRun(
    const StepFunction& fn, InputIterator* input_iterator) {
  TPUSIM_RETURN_IF_ERROR(
      RequireCrossReplicaOrDefaultContext("experimental_run"));
  if (input_iterator == nullptr) return Run(fn, ValueNest::Tuple({}));
  TPUSIM_ASSIGN_OR_RETURN(PerReplica<ReplicaElement> element,
                          input_iterator->GetNext());
  if (element.num_replicas() != num_replicas_in_sync()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "experimental_run: the iterator yielded ", element.num_replicas(),
        " per-replica elements, the strategy has ", num_replicas_in_sync(),
        " replicas"));
  }
  TPUSIM_ASSIGN_OR_RETURN(ValueNest inputs, RegroupElement(element));
  return Run(fn, ValueNest::Tuple({std::move(inputs)}));
}

absl::StatusOr<MultiStepResult> TPUStrategy::ExperimentalRunStepsOnIterator(
    const MultiStepFn& fn, InputIterator& iterator, int iterations) {
  TPUSIM_RETURN_IF_ERROR(RequireCrossReplicaOrDefaultContext(
      "experimental_run_steps_on_iterator"));
  // Quirk (TF 2.1): steps_per_run == 1 runs exactly one step whatever
  // `iterations` says.
  const int steps = steps_per_run_ == 1 ? 1 : iterations;
  if (steps < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "experimental_run_steps_on_iterator: iterations = ", iterations,
        ", must be >= 1"));
  }
  const int n = num_replicas_in_sync();
  // The loop's inputs (the infeed of the device call), one element per step.
  std::vector<ArgPlan> plans;
  for (int s = 0; s < steps; ++s) {
    TPUSIM_ASSIGN_OR_RETURN(PerReplica<ReplicaElement> element,
                            iterator.GetNext());
    if (element.num_replicas() != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "experimental_run_steps_on_iterator: step ", s, " has ",
          element.num_replicas(), " per-replica elements, the strategy has ", n,
          " replicas"));
    }
    TPUSIM_ASSIGN_OR_RETURN(ValueNest inputs, RegroupElement(element));
    TPUSIM_ASSIGN_OR_RETURN(ArgPlan plan, PlanArgs(inputs));
    plans.push_back(std::move(plan));
  }
  // Every step shares step 0's signature: a TPU loop has static shapes.
  auto describe = [](const ArgPlan& plan) {
    std::vector<std::string> leaves;
    for (const LeafPlan& leaf : plan.leaves) {
      switch (leaf.kind) {
        case LeafPlan::Kind::kParameter:
          leaves.push_back(leaf.type.ToString());
          break;
        case LeafPlan::Kind::kConstant:
          leaves.push_back(leaf.constant.DebugString());
          break;
        case LeafPlan::Kind::kVariable:
          leaves.push_back(absl::StrCat("variable ", leaf.variable->name()));
          break;
      }
    }
    return absl::StrCat(plan.structure.StructureString(), " (",
                        absl::StrJoin(leaves, ", "), ")");
  };
  for (int st = 1; st < steps; ++st) {
    if (plans[st].signature != plans[0].signature) {
      return absl::InvalidArgumentError(absl::StrCat(
          "experimental_run_steps_on_iterator: step ", st,
          " has the input signature ", describe(plans[st]), " but step 0 has ",
          describe(plans[0]),
          "; the steps of one device loop must have the same static shapes"));
    }
  }
  // The body, traced once per (fn, signature) and cached like run()'s.
  const std::string key =
      absl::StrCat("loop#", fn.id(), "#", plans[0].signature);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    runtime::ProgramBuilder builder("multi_step", n, num_cores_per_replica_);
    ReplicaContext ctx(this, &builder, n);
    MultiStepContext step_ctx(&ctx);
    std::vector<bool> parameter_distributed;
    {
      internal::ContextFrameGuard replica(this, &ctx);
      absl::StatusOr<TracedNest> inputs =
          TraceArgs(builder, ctx, plans[0].structure, plans[0].leaves,
                    parameter_distributed);
      if (!inputs.ok()) {
        ctx.EndTracing();
        return inputs.status();
      }
      absl::Status status = fn(ctx, step_ctx, *inputs);
      if (!status.ok()) {
        ctx.EndTracing();
        return status;
      }
    }
    ctx.EndTracing();
    auto compiled = std::make_unique<Compiled>();
    std::vector<TracedValue> outputs;
    for (const auto& [name, out] : step_ctx.outputs_) {
      outputs.push_back(out.value);
      compiled->named_outputs.emplace_back(name, out.reduced);
    }
    TPUSIM_ASSIGN_OR_RETURN(runtime::Program program,
                            std::move(builder).Build(outputs));
    TPUSIM_ASSIGN_OR_RETURN(
        compiled->executable,
        backend_->Compile(program, {n, num_cores_per_replica_}));
    ++num_traces_;
    it = cache_.emplace(key, std::move(compiled)).first;
  }
  const Compiled* compiled = it->second.get();
  last_compiled_ = compiled;
  TPUSIM_ASSIGN_OR_RETURN(runtime::SpmdOutputs outs,
                          Execute(*compiled, plans, /*loop=*/true));
  MultiStepResult result;
  result.steps_run = steps;
  for (size_t k = 0; k < compiled->named_outputs.size(); ++k) {
    TPUSIM_ASSIGN_OR_RETURN(std::vector<Tensor> parts,
                            FetchOutput(outs, static_cast<int>(k)));
    const auto& [name, reduced] = compiled->named_outputs[k];
    if (reduced) {
      result.last_step_outputs[name] = Value(std::move(parts[0]));
    } else {
      result.last_step_outputs[name] =
          Value(PerReplica<Tensor>(std::move(parts)));
    }
  }
  return result;
}

}  // namespace tpusim::strategy
