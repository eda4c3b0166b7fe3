#include "scenarios/train_runner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/did_you_mean.h"
#include "common/int_math.h"
#include "common/status_macros.h"
#include "models/workload.h"
#include "scenarios/backend_registry.h"
#include "scenarios/input_runner.h"
#include "scenarios/pipeline_builder.h"
#include "sim/chip/chip_preset.h"
#include "sim/chip/kernel_timing.h"
#include "sim/memory_estimate.h"
#include "sim/sim_backend.h"
#include "strategy/cluster_resolver.h"
#include "strategy/device_assignment.h"
#include "strategy/distributed_input.h"
#include "strategy/input_iterator.h"
#include "strategy/reduce.h"
#include "strategy/tpu_strategy.h"

namespace tpusim::scenarios {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using strategy::MirroredVariable;
using strategy::ReplicaContext;
using strategy::TracedNest;
using strategy::TracedValue;

// A workload of `tpusim run`: its variables, its step, its per-replica inputs
// and its model FLOPs.
class Workload {
 public:
  virtual ~Workload() = default;
  // Abstract variables (shapes only) unless `real`.
  virtual absl::Status CreateVariables(bool real, uint64_t seed) = 0;
  virtual strategy::StepFunction Step() = 0;
  // One replica's inputs for a local batch, in the step's argument order.
  virtual absl::StatusOr<std::vector<Tensor>> Inputs(int64_t local_batch,
                                                     bool real,
                                                     uint64_t seed) const = 0;
  // Model FLOPs of one global training step.
  virtual absl::StatusOr<double> FlopsPerStep(int replicas,
                                              int64_t local_batch) const = 0;
  // The per-replica input signature for a local batch, with a name per
  // input (a pipeline's element must match it).
  virtual std::vector<runtime::ValueType> InputTypes(
      int64_t local_batch) const = 0;
  virtual std::vector<std::string> InputNames() const = 0;
  // Asks the step to return per-example losses (see models::TrainOptions::
  // per_example_loss); false when the workload cannot.
  virtual bool EnablePerExampleLoss() { return false; }
};

// The mean over replicas of a run()'s loss (a PerReplica of scalars, or one
// scalar); NaN when it has no data.
double MeanLoss(const strategy::ValueNest& loss) {
  if (!loss.is_leaf()) return std::nan("");
  const strategy::Value& v = loss.leaf();
  if (v.is_tensor()) {
    return v.tensor().has_data() ? v.tensor().AsDouble(0) : std::nan("");
  }
  double sum = 0;
  for (const Tensor& t : v.components()) {
    if (!t.has_data()) return std::nan("");
    sum += t.AsDouble(0);
  }
  return sum / v.components().size();
}

// Typed access to run.workload.params; every key must be consumed.
class Params {
 public:
  explicit Params(const WorkloadSpec& spec) : spec_(spec) {}
  absl::StatusOr<int64_t> Int(const std::string& name, int64_t fallback,
                              int64_t min, int64_t max) {
    used_.push_back(name);
    auto it = spec_.params().find(name);
    if (it == spec_.params().end()) return fallback;
    int64_t v = 0;
    if (!absl::SimpleAtoi(it->second, &v) || v < min || v > max) {
      return Bad(name, it->second,
                 absl::StrCat("an integer in [", min, ", ", max, "]"));
    }
    return v;
  }
  absl::StatusOr<std::string> OneOf(const std::string& name,
                                    const std::string& fallback,
                                    const std::vector<std::string>& allowed) {
    used_.push_back(name);
    auto it = spec_.params().find(name);
    if (it == spec_.params().end()) return fallback;
    for (const std::string& a : allowed) {
      if (a == it->second) return a;
    }
    return Bad(name, it->second,
               absl::StrCat("one of ", absl::StrJoin(allowed, ", ")));
  }
  absl::Status CheckAllUsed() const {
    std::vector<std::string> names(spec_.params().size());
    names.clear();
    for (const auto& [k, v] : spec_.params()) names.push_back(k);
    std::sort(names.begin(), names.end());
    for (const std::string& k : names) {
      if (std::find(used_.begin(), used_.end(), k) == used_.end()) {
        return InRun(models::UnknownParameterError(spec_.name(), k, used_));
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Bad(const std::string& name, const std::string& value,
                   const std::string& want) const {
    return InRun(
        models::BadParameterValueError(spec_.name(), name, value, want));
  }
  // As ModelsWorkload's errors: "run.workload: " and the models/ wording.
  static absl::Status InRun(const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat("run.workload: ", s.message()));
  }
  const WorkloadSpec& spec_;
  std::vector<std::string> used_;
};

// Deterministic real values in [-0.5, 0.5) for (seed, stream).
Tensor RealValues(DType dtype, std::vector<int64_t> dims, uint64_t seed,
                  uint64_t stream) {
  const Shape shape(std::move(dims));
  const size_t n = static_cast<size_t>(shape.num_elements());
  if (dtype == DType::kBF16) {
    std::vector<runtime::BFloat16> v(n);
    for (size_t i = 0; i < n; ++i) {
      v[i] = runtime::BFloat16::FromFloat(0.5f * models::Noise(seed, stream, i));
    }
    return Tensor::FromVector<runtime::BFloat16>(shape, std::move(v));
  }
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.5f * models::Noise(seed, stream, i);
  return Tensor::FromVector<float>(shape, std::move(v));
}

// deep_mlp, the stack of tanh layers of the header comment.
class DeepMlp final : public Workload {
 public:
  static absl::StatusOr<std::unique_ptr<Workload>> Create(
      const WorkloadSpec& spec) {
    Params p(spec);
    auto w = std::make_unique<DeepMlp>();
    TPUSIM_ASSIGN_OR_RETURN(w->layers_, p.Int("layers", 4, 1, 1000));
    TPUSIM_ASSIGN_OR_RETURN(w->width_, p.Int("width", 1024, 1, 1 << 16));
    TPUSIM_ASSIGN_OR_RETURN(
        std::string dtype,
        p.OneOf("dtype", "bfloat16", {"bfloat16", "float32"}));
    w->dtype_ = dtype == "float32" ? DType::kF32 : DType::kBF16;
    TPUSIM_ASSIGN_OR_RETURN(
        std::string mp, p.OneOf("model_parallel", "none", {"none", "layers"}));
    w->split_layers_ = mp == "layers";
    TPUSIM_RETURN_IF_ERROR(p.CheckAllUsed());
    return std::unique_ptr<Workload>(std::move(w));
  }

  absl::Status CreateVariables(bool real, uint64_t seed) override {
    for (int64_t l = 0; l < layers_; ++l) {
      const Tensor init =
          real ? RealValues(dtype_, {width_, width_}, seed, l)
               : Tensor::Abstract(dtype_, Shape({width_, width_}));
      TPUSIM_ASSIGN_OR_RETURN(
          MirroredVariable * v,
          strategy::CreateVariable(init, {absl::StrCat("dense_", l, "/kernel")}));
      weights_.push_back(v);
    }
    return absl::OkStatus();
  }

  strategy::StepFunction Step() override {
    std::vector<MirroredVariable*> weights = weights_;
    const DType dtype = dtype_;
    const bool split = split_layers_;
    return strategy::StepFunction(
        [weights, dtype, split](ReplicaContext& ctx, const TracedNest& args)
            -> absl::StatusOr<TracedNest> {
          // model_parallel=layers: layer l (forward, backward, its gradient's
          // all-reduce and update) runs on logical core l mod cores, so each
          // activation and each backward gradient crosses between cores.
          const int cores = ctx.num_cores_per_replica();
          auto place =
              [&](int l) -> absl::StatusOr<strategy::LogicalCoreScope> {
            return ctx.AssignToLogicalCore(split ? l % cores : 0);
          };
          const TracedValue x = args.children()[0].leaf();
          std::vector<TracedValue> h = {x}, w;
          for (size_t l = 0; l < weights.size(); ++l) {
            MirroredVariable* v = weights[l];
            TPUSIM_ASSIGN_OR_RETURN(strategy::LogicalCoreScope on,
                                    place(static_cast<int>(l)));
            TPUSIM_ASSIGN_OR_RETURN(TracedValue wl, ctx.ReadVariable(*v));
            w.push_back(wl);
            TPUSIM_ASSIGN_OR_RETURN(TracedValue z, ctx.MatMul(h.back(), wl));
            TPUSIM_ASSIGN_OR_RETURN(TracedValue a, ctx.Tanh(z));
            h.push_back(a);
          }
          // loss = 0.5 * sum(h_L^2): dL/dh_L = h_L.
          TracedValue dh = h.back();
          TPUSIM_ASSIGN_OR_RETURN(TracedValue one, ctx.ScalarConstant(1, dtype));
          TPUSIM_ASSIGN_OR_RETURN(TracedValue lr,
                                  ctx.ScalarConstant(0.01, dtype));
          for (int l = static_cast<int>(weights.size()) - 1; l >= 0; --l) {
            TPUSIM_ASSIGN_OR_RETURN(strategy::LogicalCoreScope on, place(l));
            // tanh' = 1 - h^2.
            TPUSIM_ASSIGN_OR_RETURN(TracedValue sq, ctx.Mul(h[l + 1], h[l + 1]));
            TPUSIM_ASSIGN_OR_RETURN(TracedValue d, ctx.Sub(one, sq));
            TPUSIM_ASSIGN_OR_RETURN(TracedValue dz, ctx.Mul(dh, d));
            TPUSIM_ASSIGN_OR_RETURN(TracedValue dw,
                                    ctx.MatMul(h[l], dz, /*transpose_a=*/true));
            TPUSIM_ASSIGN_OR_RETURN(
                TracedValue g, ctx.AllReduce(strategy::ReduceOp::kSum, dw));
            TPUSIM_ASSIGN_OR_RETURN(TracedValue step, ctx.Mul(g, lr));
            TPUSIM_RETURN_IF_ERROR(
                ctx.AssignSubVariable(*weights[l], step).status());
            if (l > 0) {
              TPUSIM_ASSIGN_OR_RETURN(
                  dh, ctx.MatMul(dz, w[l], false, /*transpose_b=*/true));
            }
          }
          return TracedNest();
        },
        "mlp_train_step");
  }

  absl::StatusOr<std::vector<Tensor>> Inputs(int64_t local_batch, bool real,
                                             uint64_t seed) const override {
    return std::vector<Tensor>{
        real ? RealValues(dtype_, {local_batch, width_}, seed, 1000)
             : Tensor::Abstract(dtype_, Shape({local_batch, width_}))};
  }
  absl::StatusOr<double> FlopsPerStep(int replicas,
                                      int64_t local_batch) const override {
    // Forward 2 B w^2 per layer, backward twice that (the data gradient of
    // the first layer is not computed: 2 B w^2 less).
    const double per = 2.0 * replicas * local_batch * width_ * width_;
    return 3 * per * layers_ - per;
  }
  std::vector<runtime::ValueType> InputTypes(
      int64_t local_batch) const override {
    return {runtime::ValueType(dtype_, Shape({local_batch, width_}))};
  }
  std::vector<std::string> InputNames() const override { return {"features"}; }

 private:
  int64_t layers_ = 4;
  int64_t width_ = 1024;
  bool split_layers_ = false;
  DType dtype_ = DType::kBF16;
  std::vector<MirroredVariable*> weights_;
};

// The models/ workloads (mlp, resnet50, bert, transformer_lm), as written
// against ReplicaContext with their hand-written backward passes.
class ModelsWorkload final : public Workload {
 public:
  static absl::StatusOr<std::unique_ptr<Workload>> Create(
      const WorkloadSpec& spec) {
    std::map<std::string, std::string> params(spec.params().begin(),
                                              spec.params().end());
    absl::StatusOr<std::unique_ptr<models::Workload>> w =
        models::CreateWorkload(spec.name(), params);
    if (!w.ok()) {
      return absl::Status(w.status().code(),
                          absl::StrCat("run.workload: ", w.status().message()));
    }
    auto out = std::make_unique<ModelsWorkload>();
    out->workload_ = std::move(*w);
    return std::unique_ptr<Workload>(std::move(out));
  }
  absl::Status CreateVariables(bool real, uint64_t seed) override {
    if (real) {
      TPUSIM_ASSIGN_OR_RETURN(vars_,
                              models::CreateParamVariables(*workload_, seed));
    } else {
      TPUSIM_ASSIGN_OR_RETURN(vars_,
                              models::CreateAbstractParamVariables(*workload_));
    }
    return absl::OkStatus();
  }
  strategy::StepFunction Step() override {
    return models::MakeTrainStep(*workload_, vars_);
  }
  absl::StatusOr<std::vector<Tensor>> Inputs(int64_t local_batch, bool real,
                                             uint64_t seed) const override {
    if (real) return workload_->SyntheticInputs(local_batch, seed);
    std::vector<Tensor> out;
    for (const runtime::ValueType& t : workload_->InputTypes(local_batch)) {
      out.push_back(Tensor::Abstract(t.dtype, t.shape));
    }
    return out;
  }
  absl::StatusOr<double> FlopsPerStep(int replicas,
                                      int64_t local_batch) const override {
    TPUSIM_ASSIGN_OR_RETURN(
        runtime::Program p,
        models::TraceTrainStep(*workload_, replicas, local_batch));
    return static_cast<double>(models::MatrixFlops(p)) * replicas;
  }
  std::vector<runtime::ValueType> InputTypes(
      int64_t local_batch) const override {
    return workload_->InputTypes(local_batch);
  }
  std::vector<std::string> InputNames() const override {
    return workload_->InputNames();
  }
  bool EnablePerExampleLoss() override {
    if (!workload_->SupportsPerExampleLoss()) return false;
    workload_->set_per_example_loss(true);
    return true;
  }

 private:
  std::unique_ptr<models::Workload> workload_;
  std::vector<MirroredVariable*> vars_;
};

// The body of a steps_per_run loop: one step of `step`; its loss is the last
// step's output "loss", MEAN-reduced across replicas in the program, or, with
// per-example losses, returned per replica (the host reduces it with axis 0).
strategy::MultiStepFn LoopBody(const strategy::StepFunction& step,
                               bool per_example) {
  return [step, per_example](ReplicaContext& ctx,
                             strategy::MultiStepContext& steps,
                             const TracedNest& in) -> absl::Status {
    TPUSIM_ASSIGN_OR_RETURN(TracedNest out, step.fn()(ctx, in));
    if (out.is_leaf()) {
      if (per_example) return steps.SetLastStepOutput("loss", out.leaf());
      return steps.SetLastStepOutput("loss", out.leaf(),
                                     strategy::ReduceOp::kMean);
    }
    return absl::OkStatus();
  };
}

// ResolvedShape "float32[<=32,64]": the workload's per-replica input type with
// its batch dimension as a bound.
std::string InputTypeString(const runtime::ValueType& t) {
  std::vector<std::string> dims;
  for (int d = 0; d < t.shape.rank(); ++d) {
    dims.push_back(absl::StrCat(d == 0 ? "<=" : "", t.shape.dim(d)));
  }
  return absl::StrCat(runtime::DTypeName(t.dtype), "[",
                      absl::StrJoin(dims, ","), "]");
}

// The pipeline's per-replica element must match the workload's inputs: as
// many components (flattened: dict keys sorted, tuples in order) as inputs,
// each of the input's dtype and rank, every dimension but the batch equal, and
// the batch dimension unknown or at most the per-replica batch.
absl::Status CheckInputSignature(const data::ElementSpec& spec,
                                 const Workload& workload,
                                 const std::string& name, int64_t local_batch) {
  const std::vector<runtime::ValueType> want = workload.InputTypes(local_batch);
  const std::vector<std::string> names = workload.InputNames();
  const auto got = spec.FlattenWithPaths();
  auto signature = [&] {
    std::vector<std::string> parts;
    for (size_t i = 0; i < want.size(); ++i) {
      parts.push_back(absl::StrCat(i < names.size() ? names[i] : "?", " ",
                                   InputTypeString(want[i])));
    }
    return absl::StrJoin(parts, ", ");
  };
  auto component = [&](size_t i) {
    return absl::StrCat(got[i].first.empty() ? "" : got[i].first + ": ",
                        got[i].second->ToString());
  };
  if (got.size() != want.size()) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < got.size(); ++i) parts.push_back(component(i));
    return absl::InvalidArgumentError(absl::StrCat(
        "pipeline: the per-replica element has ", got.size(), " component(s) (",
        absl::StrJoin(parts, ", "), ") but workload ", name, " takes ",
        want.size(), " input(s): ", signature()));
  }
  for (size_t i = 0; i < want.size(); ++i) {
    const runtime::TensorSpec& g = *got[i].second;
    const runtime::ValueType& w = want[i];
    bool ok = g.dtype == w.dtype && g.shape.rank() == w.shape.rank();
    for (int d = 0; ok && d < w.shape.rank(); ++d) {
      const int64_t gd = g.shape.dim(d);
      ok = d == 0 ? (gd == runtime::kUnknownDim || gd <= w.shape.dim(0))
                  : gd == w.shape.dim(d);
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pipeline: component ", i, " of the per-replica element (",
          component(i), ") does not match workload ", name, "'s input ",
          i < names.size() ? names[i] : "?", ", which must be ",
          InputTypeString(w), " (at most global_batch_size / replicas = ",
          local_batch, " rows); inputs: ", signature()));
    }
  }
  return absl::OkStatus();
}

// The loss of a step's output: per-example losses reduced with
// strategy.reduce(MEAN, losses, axis=0) (the real number of examples, spec
// (f)), else the mean over replicas of the replica losses.
absl::StatusOr<double> LossOf(const strategy::TPUStrategy& tpu,
                              const strategy::Value& loss, bool per_example) {
  if (!per_example) return MeanLoss(strategy::ValueNest(loss));
  TPUSIM_ASSIGN_OR_RETURN(
      strategy::Value mean,
      tpu.Reduce(strategy::ReduceOp::kMean, loss, strategy::ReduceAxis(0)));
  if (!mean.is_tensor() || !mean.tensor().has_data()) return std::nan("");
  return mean.tensor().AsDouble(0);
}

// Trains on the scenario's pipeline, distributed through `tpu` as
// inspect-input distributes it; stops after run.steps steps or at the end of
// the data.
absl::Status RunOnPipeline(const LoadedScenario& scenario,
                           const TrainOptions& options,
                           strategy::TPUStrategy& tpu,
                           runtime::Backend& backend, const Workload& workload,
                           const strategy::StepFunction& step,
                           int64_t local_batch, bool real, bool per_example,
                           TrainResult& result) {
  const Scenario& sc = scenario.proto;
  InputSummary& in = result.input;
  in.pipeline = true;
  in.api = Scenario::Api_Name(sc.api());
  in.semantics = SemanticsOf(sc);
  in.requested_policy = ShardPolicyName(sc.shard_policy());
  in.per_example_loss = per_example;
  const std::string data_dir =
      options.data_dir.empty() ? DefaultDataDir() : options.data_dir;
  TPUSIM_ASSIGN_OR_RETURN(const FileSetPaths files,
                          MaterializeFileSets(scenario, data_dir));
  TPUSIM_ASSIGN_OR_RETURN(absl::StatusOr<data::DistributedDataset> dist,
                          DistributeScenarioPipeline(scenario, files, tpu,
                                                     data::kDefaultMaxMemory));
  if (!dist.ok()) {
    return absl::Status(dist.status().code(),
                        absl::StrCat("pipeline: ", dist.status().message()));
  }
  TPUSIM_RETURN_IF_ERROR(CheckInputSignature(
      dist->element_spec(), workload, sc.run().workload().name(), local_batch));
  in.workers = dist->num_workers();
  for (const data::WorkerExplanation& e : dist->explanations()) {
    in.applied_policy.push_back(e.applied_policy);
    in.shard_reason.push_back(e.shard_reason);
  }
  const int n = tpu.num_replicas_in_sync();
  in.examples_per_replica.assign(n, 0);
  TPUSIM_ASSIGN_OR_RETURN(
      std::unique_ptr<strategy::DistributedInputIterator> it,
      strategy::DistributedInputIterator::Create(*dist));
  // Pulls one step: false at the end of the data. Counts each replica's rows.
  auto pull = [&](strategy::PerReplica<strategy::ReplicaElement>& out)
      -> absl::StatusOr<bool> {
    absl::StatusOr<strategy::PerReplica<strategy::ReplicaElement>> next =
        it->GetNext();
    if (absl::IsOutOfRange(next.status())) return false;
    if (!next.ok()) {
      return absl::Status(next.status().code(),
                          absl::StrCat("pipeline: ", next.status().message()));
    }
    std::vector<strategy::ReplicaElement> parts;
    int64_t rows = 0;
    for (int r = 0; r < n; ++r) {
      const strategy::ReplicaElement& e = (*next)[r];
      const std::vector<const Tensor*> leaves = e.Flatten();
      const int64_t b = leaves.empty() || leaves[0]->rank() == 0
                            ? 0
                            : leaves[0]->shape().dim(0);
      if (b > local_batch) {
        return absl::InvalidArgumentError(absl::StrCat(
            "pipeline: step ", in.steps_pulled, " gives replica ", r, " ", b,
            " rows, more than global_batch_size / replicas = ", local_batch,
            sc.api() == Scenario::DISTRIBUTE_DATASETS_FROM_FUNCTION
                ? " (a function's dataset makes per-replica batches: batch "
                  "with use_global_batch: true)"
                : ""));
      }
      in.examples_per_replica[r] += b;
      rows += b;
      // The step takes the element's leaves as its tuple of inputs.
      std::vector<strategy::ReplicaElement> flat;
      for (const Tensor* t : leaves) {
        flat.emplace_back(real ? *t : Tensor::Abstract(t->dtype(), t->shape()));
      }
      parts.push_back(strategy::ReplicaElement::Tuple(std::move(flat)));
    }
    in.examples_last_step = rows;
    ++in.steps_pulled;
    out = strategy::PerReplica<strategy::ReplicaElement>(std::move(parts));
    // The pipeline's declared host work per replica goes with the step (the
    // sim backend's host model charges it with the transfer).
    out.set_host_costs(next->host_costs());
    return true;
  };
  TPUSIM_RETURN_IF_ERROR(backend.CollectProfile().status());
  backend.ResetProfile();
  const int64_t want = result.steps;
  int64_t done = 0;
  const strategy::MultiStepFn body = LoopBody(step, per_example);
  // The shapes of a step's per-replica inputs: a device loop of steps_per_run
  // steps needs the same static shapes in every step, so a step whose shapes
  // differ (a partial final batch) starts the next device call.
  auto shapes = [](const strategy::PerReplica<strategy::ReplicaElement>& e) {
    std::string out;
    for (int r = 0; r < e.num_replicas(); ++r) {
      for (const Tensor* t : e[r].Flatten()) {
        absl::StrAppend(&out, t->shape().ToString(), ";");
      }
    }
    return out;
  };
  std::optional<strategy::PerReplica<strategy::ReplicaElement>> pending;
  while (done < want) {
    const int k =
        static_cast<int>(std::min<int64_t>(result.steps_per_run, want - done));
    std::vector<strategy::PerReplica<strategy::ReplicaElement>> elements;
    if (pending.has_value()) {
      elements.push_back(std::move(*pending));
      pending.reset();
    }
    while (!in.ended && static_cast<int>(elements.size()) < k) {
      strategy::PerReplica<strategy::ReplicaElement> e;
      TPUSIM_ASSIGN_OR_RETURN(bool got, pull(e));
      if (!got) {
        in.ended = true;
        break;
      }
      if (!elements.empty() && shapes(e) != shapes(elements[0])) {
        pending = std::move(e);
        break;
      }
      elements.push_back(std::move(e));
    }
    if (elements.empty()) break;
    const int got = static_cast<int>(elements.size());
    if (result.steps_per_run == 1) {
      TPUSIM_ASSIGN_OR_RETURN(strategy::ValueNest args,
                              strategy::RegroupElement(elements[0]));
      TPUSIM_ASSIGN_OR_RETURN(strategy::ValueNest loss, tpu.Run(step, args));
      if (real && loss.is_leaf()) {
        TPUSIM_ASSIGN_OR_RETURN(result.last_loss,
                                LossOf(tpu, loss.leaf(), per_example));
      }
    } else {
      strategy::VectorInputIterator iterator(std::move(elements));
      TPUSIM_ASSIGN_OR_RETURN(
          strategy::MultiStepResult r,
          tpu.ExperimentalRunStepsOnIterator(body, iterator, got));
      if (real && r.last_step_outputs.count("loss")) {
        TPUSIM_ASSIGN_OR_RETURN(
            result.last_loss,
            LossOf(tpu, r.last_step_outputs.at("loss"), per_example));
      }
    }
    done += got;
    if (options.progress) options.progress(done, want);
    if (in.ended && !pending.has_value()) break;
  }
  in.steps_run = done;
  result.steps = done;
  TPUSIM_ASSIGN_OR_RETURN(result.profile, backend.CollectProfile());
  return absl::OkStatus();
}

// Model-parallel traffic from the profile's cross_core_bytes: a byte received
// by a core of a replica whose cores are not all on that core's chip crossed
// ICI (exact for 2 cores per replica; with more, a replica spanning chips
// counts all its cross-core bytes off-chip when the receiving core has a peer
// elsewhere).
void FillModelParallelTraffic(const strategy::TPUStrategy& tpu,
                              const runtime::SliceLayout& layout,
                              TrainResult& result) {
  result.cores_per_replica = tpu.num_cores_per_replica();
  result.cross_core_bytes = 0;
  result.cross_core_ici_bytes = 0;
  result.max_pair_chip_distance = 0;
  const auto& ids = tpu.input_workers().replica_device_ids;
  const runtime::Profile& p = result.profile;
  for (const std::vector<int>& devs : ids) {
    for (int d : devs) {
      bool off_chip = false;
      for (int e : devs) {
        const runtime::DeviceDescription& a = layout.devices[d];
        const runtime::DeviceDescription& b = layout.devices[e];
        if (a.chip == b.chip) continue;
        off_chip = true;
        int dist = 0;
        for (size_t k = 0; k + 1 < a.coords.size() && k + 1 < b.coords.size();
             ++k) {
          dist += std::abs(a.coords[k] - b.coords[k]);
        }
        result.max_pair_chip_distance =
            std::max(result.max_pair_chip_distance, dist);
      }
      if (d < p.devices_size()) {
        const int64_t bytes = p.devices(d).cross_core_bytes();
        result.cross_core_bytes += bytes;
        if (off_chip) result.cross_core_ici_bytes += bytes;
      }
    }
  }
}

// run.program: a module compiled by another compiler (TrainOptions::
// compile_module). The traced step is empty (no inputs, no variables): the
// sim backend's compiler returns the imported module for it, so the strategy
// only drives the calls.
class ModuleWorkload final : public Workload {
 public:
  explicit ModuleWorkload(double flops_per_device)
      : flops_per_device_(flops_per_device) {}
  absl::Status CreateVariables(bool, uint64_t) override {
    return absl::OkStatus();
  }
  strategy::StepFunction Step() override {
    return strategy::StepFunction(
        [](ReplicaContext&, const TracedNest&) -> absl::StatusOr<TracedNest> {
          return TracedNest::None();
        });
  }
  absl::StatusOr<std::vector<Tensor>> Inputs(int64_t, bool,
                                             uint64_t) const override {
    return std::vector<Tensor>{};
  }
  absl::StatusOr<double> FlopsPerStep(int replicas, int64_t) const override {
    return flops_per_device_ * replicas;
  }
  std::vector<runtime::ValueType> InputTypes(int64_t) const override {
    return {};
  }
  std::vector<std::string> InputNames() const override { return {}; }

 private:
  double flops_per_device_;
};

// What run.program rules out (TrainOptions::compile_module).
absl::Status CheckModuleRun(const LoadedScenario& scenario,
                            const TrainOptions& options,
                            const std::string& backend) {
  const Scenario& sc = scenario.proto;
  const RunSpec& run = sc.run();
  const std::string field =
      absl::StrCat("run.program=\"", run.program(), "\"");
  if (!options.compile_module) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": a module is compiled by the XLA:TPU compiler; run it with "
        "--compiler xla-tpu (tpusim's own compiler traces the C++ workloads "
        "of run.workload and does not read modules)"));
  }
  if (backend != "sim") {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": a module is timed on the sim backend; the run's backend is \"",
        backend, "\""));
  }
  if (sc.pipeline_size() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": a module has no input pipeline (its parameters are "
        "resident); remove the scenario's `pipeline`"));
  }
  if (run.has_device_assignment()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run.device_assignment: run.program runs over every device of the "
        "slice (its shardings or replicas place it); remove "
        "run.device_assignment"));
  }
  return absl::OkStatus();
}

using Factory =
    std::function<absl::StatusOr<std::unique_ptr<Workload>>(const WorkloadSpec&)>;

const std::map<std::string, Factory>& Workloads() {
  static const auto* w = [] {
    auto* m = new std::map<std::string, Factory>{
        {"deep_mlp", &DeepMlp::Create},
    };
    for (const models::WorkloadEntry& e : models::Registry()) {
      (*m)[e.name] = &ModelsWorkload::Create;
    }
    return m;
  }();
  return *w;
}

}  // namespace

std::vector<std::string> WorkloadNames() {
  std::vector<std::string> names;
  for (const auto& [name, f] : Workloads()) names.push_back(name);
  return names;
}

namespace {

absl::StatusOr<TrainResult> RunTrainingUnguarded(
    const LoadedScenario& scenario, const TrainOptions& options);

// An allocation failure while running: RESOURCE_EXHAUSTED naming the
// scenario fields whose values size the tensors (the workload parameters the
// scenario sets, the global batch, real values held on this host).
absl::Status OutOfMemory(const Scenario& sc, absl::string_view what) {
  std::vector<std::string> params;
  std::map<std::string, std::string> sorted(sc.run().workload().params().begin(),
                                            sc.run().workload().params().end());
  for (const auto& [k, v] : sorted) params.push_back(absl::StrCat(k, "=", v));
  return absl::ResourceExhaustedError(absl::StrCat(
      "out of memory (", what, ") running workload ", sc.run().workload().name(),
      ": its tensors are sized by run.workload.params",
      params.empty() ? " (defaults)"
                     : absl::StrCat(" (", absl::StrJoin(params, ", "), ")"),
      " and global_batch_size=", sc.global_batch_size(),
      sc.run().real_values()
          ? "; run.real_values=true holds their values in this host's memory: "
            "lower them, or set run.real_values: false to time abstract "
            "tensors"
          : "; lower them"));
}

// A backend that passes every call to `inner`, first calling `hook` with each
// program compiled (TrainOptions::on_compile).
class CompileHookBackend : public runtime::Backend {
 public:
  using Hook = std::function<absl::Status(const runtime::Program&,
                                          const runtime::CompileOptions&)>;
  CompileHookBackend(std::unique_ptr<runtime::Backend> inner, Hook hook)
      : inner_(std::move(inner)), hook_(std::move(hook)) {}
  absl::string_view name() const override { return inner_->name(); }
  absl::Span<runtime::Device* const> devices() const override {
    return inner_->devices();
  }
  absl::StatusOr<std::unique_ptr<runtime::Buffer>> TransferToDevice(
      int device_id, const runtime::Tensor& value,
      const runtime::TransferOptions& options) override {
    return inner_->TransferToDevice(device_id, value, options);
  }
  absl::StatusOr<runtime::Tensor> TransferFromDevice(
      const runtime::Buffer& buffer) override {
    return inner_->TransferFromDevice(buffer);
  }
  absl::StatusOr<std::unique_ptr<runtime::Executable>> Compile(
      const runtime::Program& program,
      const runtime::CompileOptions& options) override {
    TPUSIM_RETURN_IF_ERROR(hook_(program, options));
    return inner_->Compile(program, options);
  }
  absl::StatusOr<runtime::SpmdOutputs> ExecuteSpmd(
      const runtime::Executable& executable,
      const runtime::SpmdAssignment& assignment,
      absl::Span<const std::vector<runtime::Buffer*>> per_replica_args)
      override {
    return inner_->ExecuteSpmd(executable, assignment, per_replica_args);
  }
  absl::StatusOr<runtime::SpmdOutputs> ExecuteSpmdLoop(
      const runtime::Executable& executable,
      const runtime::SpmdAssignment& assignment,
      absl::Span<const std::vector<std::vector<runtime::Buffer*>>>
          per_iteration_args) override {
    return inner_->ExecuteSpmdLoop(executable, assignment, per_iteration_args);
  }
  absl::Status WriteVariable(int device_id, int slot,
                             const runtime::Tensor& value) override {
    return inner_->WriteVariable(device_id, slot, value);
  }
  absl::StatusOr<runtime::Tensor> ReadVariable(int device_id,
                                               int slot) const override {
    return inner_->ReadVariable(device_id, slot);
  }
  absl::StatusOr<runtime::Profile> CollectProfile() const override {
    return inner_->CollectProfile();
  }
  void ResetProfile() override { inner_->ResetProfile(); }

 private:
  std::unique_ptr<runtime::Backend> inner_;
  Hook hook_;
};

}  // namespace

absl::StatusOr<TrainResult> RunTraining(const LoadedScenario& scenario,
                                        const TrainOptions& options) {
  // tpusim does not throw; the standard library does when an allocation
  // fails, and only this layer knows which fields sized it.
  try {
    absl::StatusOr<TrainResult> result = RunTrainingUnguarded(scenario, options);
    if (result.ok()) return result;
    // Errors about the run section start with the field they name
    // ("run.workload.name=...", "global_batch_size=..."): add where it is.
    const absl::string_view message = result.status().message();
    if (absl::StartsWith(message, "run.") ||
        absl::StartsWith(message, "global_batch_size")) {
      const size_t end = message.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyz_0123456789.[]");
      return LocateScenarioStatus(scenario, message.substr(0, end),
                                  result.status());
    }
    return result;
  } catch (const std::bad_alloc&) {
    return OutOfMemory(scenario.proto, "std::bad_alloc");
  } catch (const std::length_error& e) {
    return OutOfMemory(scenario.proto,
                       absl::StrCat("std::length_error: ", e.what()));
  }
}

namespace {

absl::StatusOr<TrainResult> RunTrainingUnguarded(
    const LoadedScenario& scenario, const TrainOptions& options) {
  const Scenario& sc = scenario.proto;
  if (!sc.has_run()) {
    return absl::InvalidArgumentError(absl::StrCat(
        scenario.source_name,
        ": the scenario has no `run` section; `tpusim run` needs run { "
        "workload { name: \"mlp\" } } (inspect-input lists input-only "
        "scenarios)"));
  }
  const RunSpec& run = sc.run();
  TrainResult result;
  const bool plan = options.plan_only;
  result.backend = plan                     ? "host"
                   : !options.backend.empty() ? options.backend
                   : run.has_backend()      ? run.backend()
                                            : "sim";
  std::unique_ptr<Workload> workload;
  const bool module = run.has_program();
  if (module) {
    TPUSIM_RETURN_IF_ERROR(CheckModuleRun(scenario, options, result.backend));
  } else {
    auto it = Workloads().find(run.workload().name());
    if (it == Workloads().end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "run.workload.name=\"", run.workload().name(),
          "\": unknown workload; workloads: ",
          absl::StrJoin(WorkloadNames(), ", "),
          common::DidYouMean(run.workload().name(), WorkloadNames())));
    }
    TPUSIM_ASSIGN_OR_RETURN(workload, it->second(run.workload()));
  }
  proto::PodSpec pod = run.pod();
  // A pod that names no slice and no generation (none, or only options) is
  // the cluster's slice.
  if (!pod.has_slice() && !pod.has_generation() && pod.shape_size() == 0) {
    pod.set_slice(sc.cluster().slice());
  }
  for (int d : options.trace_devices) pod.mutable_options()->add_trace_devices(d);
  if (options.trace_all_devices) {
    pod.mutable_options()->set_trace_all_devices(true);
  }
  // The pod's own memory before it is built (the program's is checked by
  // the sim backend before its first call).
  if (pod.has_slice()) {
    absl::StatusOr<runtime::SliceLayout> planned = runtime::ParseSlice(pod.slice());
    if (planned.ok()) {
      sim::RunShape shape;
      shape.devices = planned->num_devices();
      shape.chips = planned->num_chips;
      shape.record_spans = false;
      const sim::MemoryEstimate estimate = sim::EstimateRunMemory(shape);
      result.memory_estimate_bytes = estimate.total_bytes;
      TPUSIM_RETURN_IF_ERROR(
          sim::CheckMemoryLimit(estimate, options.memory_limit_bytes));
    }
  }
  if (options.sim_compiler && result.backend != "sim") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--compiler ", options.compiler, " times the compiled program on the "
        "sim backend; the run's backend is \"", result.backend, "\""));
  }
  std::unique_ptr<runtime::Backend> backend;
  const sim::SimBackend* sim_backend = nullptr;
  runtime::SliceLayout layout;
  if (result.backend == "sim") {
    TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<sim::SimBackend> s,
                            sim::SimBackend::Create(pod));
    if (module) {
      // The module, compiled once for the slice, is what every program of
      // the run (the empty traced step) executes.
      TPUSIM_ASSIGN_OR_RETURN(
          ModuleProgram compiled,
          options.compile_module(ResolveScenarioPath(scenario, run.program()),
                                 s->layout()));
      workload = std::make_unique<ModuleWorkload>(compiled.flops_per_device);
      s->SetCompiler(
          [imported = std::move(compiled.imported)](
              const runtime::Program&, const runtime::SliceLayout&)
              -> absl::StatusOr<sim::ExternalCompiledProgram> {
            return imported;
          },
          options.compiler);
      result.compiler = options.compiler;
      result.compiler_detail = options.compiler_detail;
    } else if (options.sim_compiler) {
      s->SetCompiler(options.sim_compiler, options.compiler);
      result.compiler = options.compiler;
      result.compiler_detail = options.compiler_detail;
    }
    s->SetMemoryLimit(options.memory_limit_bytes,
                      run.has_steps() ? run.steps() : 10);
    layout = s->layout();
    result.peak_flops_per_device = s->rates().peak_flops_per_second;
    result.hbm_bytes_per_second_per_device = s->rates().hbm_bytes_per_second;
    result.hbm_capacity_per_device = s->rates().hbm_capacity.count();
    sim_backend = s.get();
    backend = std::move(s);
  } else if (result.backend == "host") {
    if (!pod.has_slice()) {
      return absl::InvalidArgumentError(
          plan ? "tpusim compile needs a slice name (run.pod.slice or "
                 "cluster.slice): a pod given as a generation and a shape is "
                 "only built by the simulator"
               : "run.backend=\"host\" needs a slice name (run.pod.slice or "
                 "cluster.slice)");
    }
    TPUSIM_ASSIGN_OR_RETURN(layout, runtime::ParseSlice(pod.slice()));
    TPUSIM_ASSIGN_OR_RETURN(backend, CreateBackend("host", pod.slice()));
  } else if (result.backend == "pjrt") {
    if (!pod.has_slice()) {
      return absl::InvalidArgumentError(
          "run.backend=\"pjrt\" needs a slice name (run.pod.slice or "
          "cluster.slice): it gives the devices' layout");
    }
    TPUSIM_ASSIGN_OR_RETURN(layout, runtime::ParseSlice(pod.slice()));
    BackendOptions backend_options;
    backend_options.pjrt_plugin = options.pjrt_plugin;
    TPUSIM_ASSIGN_OR_RETURN(
        backend, CreateBackend("pjrt", pod.slice(), backend_options));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--backend=", result.backend, ": must be one of ",
        absl::StrJoin(BackendNames(), ", ")));
  }
  if (options.on_compile) {
    backend = std::make_unique<CompileHookBackend>(std::move(backend),
                                                   options.on_compile);
  }
  result.slice = layout.name;
  result.generation =
      layout.generation != nullptr ? layout.generation->name : "";
  result.num_chips = layout.num_chips;
  result.num_devices = layout.num_devices();
  result.devices_per_chip = layout.devices_per_chip;
  if (result.peak_flops_per_device == 0 && layout.generation != nullptr) {
    TPUSIM_ASSIGN_OR_RETURN(const sim::ChipPreset* preset,
                            sim::FindChipPreset(layout.generation->name));
    const sim::DeviceRates rates = sim::DeviceRates::FromPreset(*preset);
    result.peak_flops_per_device = rates.peak_flops_per_second;
    result.hbm_bytes_per_second_per_device = rates.hbm_bytes_per_second;
    result.hbm_capacity_per_device = rates.hbm_capacity.count();
  }
  TPUSIM_ASSIGN_OR_RETURN(
      strategy::TPUClusterResolver resolver,
      strategy::TPUClusterResolver::Create(layout.devices, layout.name));
  strategy::TPUStrategyOptions strategy_options;
  result.steps_per_run = run.has_steps_per_run() ? run.steps_per_run() : 1;
  strategy_options.steps_per_run = result.steps_per_run;
  const bool pipeline = sc.pipeline_size() > 0 && !plan;
  if (pipeline) strategy_options.semantics_version = SemanticsOf(sc);
  if (run.has_device_assignment()) {
    const DeviceAssignmentSpec& da = run.device_assignment();
    absl::StatusOr<strategy::DeviceAssignment> built =
        strategy::DeviceAssignment::Build(
            resolver.topology(),
            std::vector<int>(da.computation_shape().begin(),
                             da.computation_shape().end()),
            std::vector<int>(da.computation_stride().begin(),
                             da.computation_stride().end()),
            da.has_num_replicas() ? da.num_replicas() : 1);
    if (!built.ok()) {
      return absl::Status(built.status().code(),
                          absl::StrCat("run.device_assignment: ",
                                       built.status().message()));
    }
    strategy_options.device_assignment = *built;
  }
  TPUSIM_ASSIGN_OR_RETURN(
      std::unique_ptr<strategy::TPUStrategy> strategy,
      strategy::TPUStrategy::Create(*backend, resolver, strategy_options));
  const int n = strategy->num_replicas_in_sync();
  result.num_replicas = n;
  result.global_batch = sc.global_batch_size();
  if (result.global_batch % n != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "global_batch_size=", result.global_batch, ": must be divisible by the ",
        n, " replicas (each replica gets global_batch_size / replicas rows)"));
  }
  const bool real = run.real_values() && !plan;
  {
    TPUSIM_ASSIGN_OR_RETURN(strategy::StrategyScope scope, strategy->Scope());
    TPUSIM_RETURN_IF_ERROR(workload->CreateVariables(real, run.seed()));
  }
  const int64_t local_batch = result.global_batch / n;
  const bool per_example = pipeline && real && workload->EnablePerExampleLoss();
  const strategy::StepFunction step = workload->Step();
  // The synthetic pipeline's host work per per-replica batch.
  const std::optional<int64_t> batch_cost_ns =
      common::CheckedMul(local_batch, run.input_host_cost_ns());
  if (run.input_host_cost_ns() < 0 || !batch_cost_ns.has_value() ||
      *batch_cost_ns > std::numeric_limits<int64_t>::max() / 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.input_host_cost_ns=", run.input_host_cost_ns(),
                     ": must be >= 0, and times the ", local_batch,
                     " examples of a replica's batch at most 2^63 ps"));
  }
  const std::vector<common::Picoseconds> host_costs(
      n, common::Picoseconds::FromNanoseconds(*batch_cost_ns));
  result.steps = run.has_steps() ? run.steps() : 10;
  TPUSIM_ASSIGN_OR_RETURN(result.model_flops_per_step,
                          workload->FlopsPerStep(n, local_batch));
  auto finish = [&] {
    FillModelParallelTraffic(*strategy, layout, result);
    if (sim_backend != nullptr) {
      const sim::SimBackend::SimStats st = sim_backend->Stats();
      result.sim_kernels = st.kernels;
      result.sim_collectives = st.collectives;
      result.sim_network_events = st.network_events;
      result.memory_estimate_bytes = std::max(
          result.memory_estimate_bytes, sim_backend->memory_estimate_bytes());
      result.sim_late_starts = st.late_starts;
    }
  };
  if (pipeline) {
    TPUSIM_RETURN_IF_ERROR(RunOnPipeline(scenario, options, *strategy, *backend,
                                         *workload, step, local_batch, real,
                                         per_example, result));
    finish();
    return result;
  }
  TPUSIM_ASSIGN_OR_RETURN(std::vector<Tensor> inputs,
                          workload->Inputs(local_batch, real, run.seed()));
  TPUSIM_RETURN_IF_ERROR(backend->CollectProfile().status());
  backend->ResetProfile();
  if (result.steps_per_run == 1 || plan) {
    std::vector<strategy::ValueNest> leaves;
    for (const Tensor& t : inputs) {
      strategy::PerReplica<Tensor> leaf =
          strategy::PerReplica<Tensor>::FromFn(n, [&](int) { return t; });
      // The batch's host work travels once, with its first tensor.
      if (leaves.empty()) leaf.set_host_costs(host_costs);
      leaves.emplace_back(strategy::Value(std::move(leaf)));
    }
    const strategy::ValueNest args = strategy::ValueNest::Tuple(leaves);
    if (plan) {
      // One traced step on abstract values: the host backend computes
      // nothing and times nothing.
      TPUSIM_RETURN_IF_ERROR(strategy->Run(step, args).status());
      result.step_program = std::make_shared<const runtime::Program>(
          *strategy->last_traced_program());
      result.steps = 0;
      return result;
    }
    for (int64_t s = 0; s < result.steps; ++s) {
      TPUSIM_ASSIGN_OR_RETURN(strategy::ValueNest loss, strategy->Run(step, args));
      if (real) result.last_loss = MeanLoss(loss);
      if (options.progress) options.progress(s + 1, result.steps);
    }
  } else {
    const strategy::MultiStepFn body = LoopBody(step, /*per_example=*/false);
    std::vector<strategy::ReplicaElement> parts;
    for (const Tensor& t : inputs) parts.emplace_back(t);
    const strategy::ReplicaElement element =
        strategy::ReplicaElement::Tuple(parts);
    for (int64_t done = 0; done < result.steps;) {
      const int k = static_cast<int>(
          std::min<int64_t>(result.steps_per_run, result.steps - done));
      strategy::PerReplica<strategy::ReplicaElement> per_replica =
          strategy::PerReplica<strategy::ReplicaElement>::FromFn(
              n, [&](int) { return element; });
      per_replica.set_host_costs(host_costs);
      std::vector<strategy::PerReplica<strategy::ReplicaElement>> elements(
          k, per_replica);
      strategy::VectorInputIterator iterator(std::move(elements));
      TPUSIM_ASSIGN_OR_RETURN(
          strategy::MultiStepResult r,
          strategy->ExperimentalRunStepsOnIterator(body, iterator, k));
      if (real && r.last_step_outputs.count("loss") &&
          r.last_step_outputs.at("loss").is_tensor() &&
          r.last_step_outputs.at("loss").tensor().has_data()) {
        result.last_loss = r.last_step_outputs.at("loss").tensor().AsDouble(0);
      }
      done += k;
      if (options.progress) options.progress(done, result.steps);
    }
  }
  TPUSIM_ASSIGN_OR_RETURN(result.profile, backend->CollectProfile());
  finish();
  return result;
}

}  // namespace

}  // namespace tpusim::scenarios
