// models/workload.h
//
// Training workloads written against ReplicaContext: a forward pass, a backward
// pass written out by hand (no autodiff), gradients all-reduced in buckets in
// the order backward produces them, and an SGD update of f32 master weights.
//
//   absl::StatusOr<std::unique_ptr<Workload>> w =
//       CreateWorkload("resnet50", {{"image_size", "224"}});
//   // Abstract tracing (shapes only; what the simulator times):
//   absl::StatusOr<runtime::Program> p = TraceTrainStep(**w, /*replicas=*/8,
//                                                      /*local_batch=*/32);
//   // Real values: create the variables under a TPUStrategy scope and run
//   // MakeTrainStep(**w, vars) with the inputs of MakeSyntheticInputs.
//
// Conventions (tpusim choices, documented and tested):
//  * Parameters are f32 variables ("master weights"); a workload with
//    compute_dtype=bfloat16 casts each parameter to bf16 once per step, runs
//    forward and backward in bf16 (the TPU's matmul inputs; the kernels
//    accumulate in f32) and casts every gradient back to f32 before the
//    all-reduce, as TF mixed precision on TPU does. The loss is f32 (f64 with
//    compute_dtype=float64).
//  * Gradients go to a GradientBucketer in the order backward produces them.
//    A bucket is all-reduced (MEAN: scale by 1/N, then cross-replica sum) as
//    soon as it holds bucket_bytes (f32 bytes), so the collective is recorded
//    right after the backward ops it depends on and can overlap the rest of
//    backward. Several gradients in one bucket are flattened and concatenated
//    first and sliced back after.
//  * The optimizer is plain SGD: w -= learning_rate * g.
//  * With weight-update sharding (shard_update=true) a bucket is instead
//    reduce-scattered (MEAN), each replica computes the SGD update of its 1/N
//    shard and the updates are all-gathered and applied (the bucket is padded
//    with zeros to a multiple of N).

#ifndef TPUSIM_MODELS_WORKLOAD_H_
#define TPUSIM_MODELS_WORKLOAD_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "strategy/replica_context.h"
#include "strategy/runtime/program.h"
#include "strategy/runtime/tensor.h"
#include "strategy/tpu_strategy.h"
#include "strategy/variables.h"

namespace tpusim::models {

using strategy::ReplicaContext;
using strategy::TracedValue;

// One trainable parameter.
struct ParamSpec {
  std::string name;
  runtime::Shape shape;
  // Initial values: uniform in [-init_scale, init_scale) from a fixed hash of
  // (seed, parameter index, element), or the constant init_value when
  // init_scale == 0 (e.g. batch-norm gamma = 1).
  float init_scale = 0.0f;
  float init_value = 0.0f;
  // Embedding tables (excluded from N in the scaling-law FLOP count).
  bool embedding = false;
};

// Options shared by every workload.
struct TrainOptions {
  int64_t bucket_bytes = int64_t{25} << 20;  // 25 MiB (chosen: PyTorch DDP's
                                             // default bucket size)
  double learning_rate = 0.01;
  bool shard_update = false;
  // Fully sharded data parallel (transformer_lm): each replica stores 1/N of
  // every parameter (flattened, zero-padded to a multiple of N); the step
  // all-gathers a parameter before its first use and reduce-scatters (MEAN)
  // its gradient, and each replica updates only its shard. The shard is cast
  // to the compute dtype before the gather; gathered values are kept for
  // backward (no re-gather).
  bool fsdp = false;
  runtime::DType compute_dtype = runtime::DType::kF32;
  // Set by `tpusim run` for pipeline-fed input
  // (Workload::SupportsPerExampleLoss workloads only): ForwardBackward returns
  // the per-example losses (f32 [rows]) instead of their mean, so that the
  // caller's strategy.reduce(MEAN, losses, axis=0) divides by the real number
  // of examples, and the gradient is scaled by N / (rows of all replicas)
  // before the MEAN all-reduce, so it is the exact gradient of the global mean
  // loss even when replicas hold partial or empty batches (spec (f), partial
  // batches). Costs one extra scalar all-reduce per step.
  bool per_example_loss = false;
};

// The shape a replica stores for `param`: the parameter's shape, or with FSDP
// its flattened shard {ceil(n / num_replicas)}.
std::vector<int64_t> StorageShape(const ParamSpec& param,
                                  const TrainOptions& options,
                                  int num_replicas);

// How the step reads and updates parameters: MirroredVariables of a strategy,
// or variable slots declared directly on the builder (abstract tracing).
class ParamStore {
 public:
  virtual ~ParamStore() = default;
  virtual absl::StatusOr<TracedValue> Read(ReplicaContext& ctx, int index) = 0;
  virtual absl::Status AssignSub(ReplicaContext& ctx, int index,
                                 TracedValue delta) = 0;
};

// Collects gradients in backward order and emits bucketed collectives and the
// SGD update (see the file comment).
class GradientBucketer {
 public:
  GradientBucketer(ReplicaContext& ctx, ParamStore& store,
                   const std::vector<ParamSpec>& params,
                   const TrainOptions& options)
      : ctx_(ctx), store_(store), params_(params), options_(options) {}
  // `grad` must have parameter `index`'s shape; it is cast to f32. Each
  // parameter takes exactly one gradient per step (InvalidArgument otherwise).
  absl::Status Add(int index, TracedValue grad);
  // Flushes the last bucket; InvalidArgument naming the first parameter
  // without a gradient.
  absl::Status Finish();
  // Number of buckets emitted so far.
  int num_buckets() const { return num_buckets_; }

 private:
  absl::Status Flush();
  ReplicaContext& ctx_;
  ParamStore& store_;
  const std::vector<ParamSpec>& params_;
  TrainOptions options_;
  std::vector<std::pair<int, TracedValue>> pending_;
  int64_t pending_bytes_ = 0;
  std::vector<bool> seen_;
  int num_buckets_ = 0;
};

// What the model code uses during one step: the replica context, parameters
// in the compute dtype (read and cast once) and the gradient sink.
class StepContext {
 public:
  StepContext(ReplicaContext& ctx, ParamStore& store,
              const std::vector<ParamSpec>& params, const TrainOptions& options)
      : ctx_(ctx),
        store_(store),
        params_(params),
        options_(options),
        bucketer_(ctx, store, params, options),
        cache_(params.size()) {}
  ReplicaContext& ctx() { return ctx_; }
  runtime::DType dtype() const { return options_.compute_dtype; }
  bool per_example_loss() const { return options_.per_example_loss; }
  // Parameter `index` in the compute dtype.
  absl::StatusOr<TracedValue> Param(int index);
  absl::Status Grad(int index, TracedValue grad) {
    return bucketer_.Add(index, grad);
  }
  // A scalar constant of the compute dtype.
  absl::StatusOr<TracedValue> Scalar(double v) {
    return ctx_.ScalarConstant(v, options_.compute_dtype);
  }
  absl::Status Finish() { return bucketer_.Finish(); }
  const GradientBucketer& bucketer() const { return bucketer_; }

 private:
  ReplicaContext& ctx_;
  ParamStore& store_;
  const std::vector<ParamSpec>& params_;
  TrainOptions options_;
  GradientBucketer bucketer_;
  std::vector<std::optional<TracedValue>> cache_;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  const std::vector<ParamSpec>& params() const { return params_; }
  const TrainOptions& options() const { return options_; }
  // Per-replica input types for a local batch (e.g. images and labels).
  virtual std::vector<runtime::ValueType> InputTypes(
      int64_t local_batch) const = 0;
  // A name per input, in InputTypes order (error messages; default
  // "input_0", ...).
  virtual std::vector<std::string> InputNames() const;
  // True when ForwardBackward honours TrainOptions::per_example_loss.
  virtual bool SupportsPerExampleLoss() const { return false; }
  void set_per_example_loss(bool v) { options_.per_example_loss = v; }
  // Records forward, backward (gradients to s.Grad in backward order) and
  // returns the replica's loss (f32 scalar). The caller finishes `s`.
  virtual absl::StatusOr<TracedValue> ForwardBackward(
      StepContext& s, absl::Span<const TracedValue> inputs) const = 0;
  // Deterministic inputs with real values for a local batch (small configs).
  virtual std::vector<runtime::Tensor> SyntheticInputs(int64_t local_batch,
                                                       uint64_t seed) const = 0;

  int64_t NumParams() const;
  int64_t NumNonEmbeddingParams() const;

 protected:
  std::vector<ParamSpec> params_;
  TrainOptions options_;
};

// ---- the registry ----

using ParamValue = std::variant<int64_t, double, bool, std::string>;
enum class ParamType { kInt, kFloat, kBool, kString };
struct ParamDef {
  std::string name;
  ParamType type;
  ParamValue default_value;
  std::string help;
  // The allowed range of a kInt parameter (inclusive). Every int parameter
  // has one, so that no dimension can overflow int64 or build for minutes.
  int64_t min = 0;
  int64_t max = 0;
};
// Parsed, typed workload parameters (every ParamDef present).
class WorkloadParams {
 public:
  int64_t Int(const std::string& name) const;
  double Float(const std::string& name) const;
  bool Bool(const std::string& name) const;
  const std::string& String(const std::string& name) const;
  std::map<std::string, ParamValue> values;
};
using WorkloadBuilder = std::function<absl::StatusOr<std::unique_ptr<Workload>>(
    const WorkloadParams&)>;
struct WorkloadEntry {
  std::string name;
  std::string help;
  std::vector<ParamDef> params;  // workload-specific + the common ones
  WorkloadBuilder build;
};

// Registered workloads, by name: mlp, resnet50, bert, transformer_lm.
const std::vector<WorkloadEntry>& Registry();
// InvalidArgument naming an unknown workload (and the known ones), an unknown
// parameter (and the allowed ones) or a value that does not parse as the
// parameter's type.
absl::StatusOr<std::unique_ptr<Workload>> CreateWorkload(
    const std::string& name, const std::map<std::string, std::string>& params);

// The wording every workload family (models/ and the run-only deep_mlp) uses
// for a parameter it does not have, and for a value that is not allowed
// (`want` says what is, e.g. "an integer in [1, 1000]").
absl::Status UnknownParameterError(absl::string_view workload,
                                   absl::string_view name,
                                   absl::Span<const std::string> allowed);
absl::Status BadParameterValueError(absl::string_view workload,
                                    absl::string_view name,
                                    absl::string_view text,
                                    absl::string_view want);

// Common parameters every workload takes: bucket_mib (float, 25),
// learning_rate (float), shard_update (bool), fsdp (bool, when the workload
// declares it), dtype ("float32"|"bfloat16"|
// "float64"; float64 serves gradient checks).
absl::StatusOr<TrainOptions> CommonOptions(const WorkloadParams& p);

// ---- running ----

// Traces one training step for `num_replicas` replicas of `local_batch`
// examples into a Program, with the parameters as variable slots 0..P-1
// declared on the builder (no strategy or backend needed). Outputs: the loss.
absl::StatusOr<runtime::Program> TraceTrainStep(const Workload& workload,
                                                int num_replicas,
                                                int64_t local_batch);

// Creates the f32 master variables under the current strategy scope (with
// FSDP, replica r's component holds shard r of the initial value).
absl::StatusOr<std::vector<strategy::MirroredVariable*>> CreateParamVariables(
    const Workload& workload, uint64_t seed);
// As CreateParamVariables with abstract initial values (shapes, no data): for
// pod-scale simulation, where the variables are timed and never computed.
absl::StatusOr<std::vector<strategy::MirroredVariable*>>
CreateAbstractParamVariables(const Workload& workload);
// The full value of parameter `index` from its variable (FSDP: the shards of
// all replicas concatenated, padding dropped).
absl::StatusOr<runtime::Tensor> ReadParam(
    const Workload& workload, int index, const strategy::MirroredVariable& var);
// A StepFunction for TPUStrategy::Run: args = the workload's inputs (a tuple in
// InputTypes order); returns the replica's loss.
strategy::StepFunction MakeTrainStep(
    const Workload& workload, std::vector<strategy::MirroredVariable*> vars);

// Sum of the flops of dot, conv2d and the conv2d gradients (the matrix work
// published FLOP counts refer to).
int64_t MatrixFlops(const runtime::Program& program);

// Deterministic value in [-1, 1) for (seed, stream, index).
float Noise(uint64_t seed, uint64_t stream, uint64_t index);

}  // namespace tpusim::models

#endif  // TPUSIM_MODELS_WORKLOAD_H_
