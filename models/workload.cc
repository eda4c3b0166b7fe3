#include "models/workload.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "strategy/distribute_lib.h"

namespace tpusim::models {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::ValueType;

float Noise(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull +
               index * 0xBF58476D1CE4E5B9ull + 1;
  z ^= z >> 31;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 29;
  return static_cast<float>(static_cast<double>(z >> 11) / 4503599627370496.0 -
                            1.0);
}

int64_t Workload::NumParams() const {
  int64_t n = 0;
  for (const ParamSpec& p : params_) n += p.shape.num_elements();
  return n;
}

int64_t Workload::NumNonEmbeddingParams() const {
  int64_t n = 0;
  for (const ParamSpec& p : params_)
    if (!p.embedding) n += p.shape.num_elements();
  return n;
}

std::vector<int64_t> StorageShape(const ParamSpec& param,
                                  const TrainOptions& options,
                                  int num_replicas) {
  if (!options.fsdp) return param.shape.dims();
  const int64_t n = param.shape.num_elements();
  return {(n + num_replicas - 1) / num_replicas};
}

// ---- StepContext / GradientBucketer ----

absl::StatusOr<TracedValue> StepContext::Param(int index) {
  if (index < 0 || index >= static_cast<int>(params_.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter index ", index, " outside [0, ", params_.size(), ")"));
  }
  if (cache_[index].has_value()) return *cache_[index];
  TPUSIM_ASSIGN_OR_RETURN(TracedValue v, store_.Read(ctx_, index));
  if (options_.compute_dtype != DType::kF32) {
    // (With FSDP the shard is cast before the gather: half the bytes in bf16.)
    TPUSIM_ASSIGN_OR_RETURN(v, ctx_.Cast(v, options_.compute_dtype));
  }
  if (options_.fsdp) {
    // All-gather the shards, drop the padding, restore the shape.
    const ParamSpec& p = params_[index];
    TPUSIM_ASSIGN_OR_RETURN(v, ctx_.AllGather(v, 0));
    TPUSIM_ASSIGN_OR_RETURN(ValueType t, ctx_.TypeOf(v));
    const int64_t n = p.shape.num_elements();
    if (t.shape.dim(0) != n) {
      TPUSIM_ASSIGN_OR_RETURN(v, ctx_.Slice(v, {0}, {n}));
    }
    TPUSIM_ASSIGN_OR_RETURN(v, ctx_.Reshape(v, p.shape.dims()));
  }
  cache_[index] = v;
  return v;
}

absl::Status GradientBucketer::Add(int index, TracedValue grad) {
  if (seen_.empty()) seen_.assign(params_.size(), false);
  if (index < 0 || index >= static_cast<int>(params_.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("gradient for parameter index ", index, " outside [0, ",
                     params_.size(), ")"));
  }
  const ParamSpec& p = params_[index];
  if (seen_[index]) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter ", p.name, " got a second gradient"));
  }
  TPUSIM_ASSIGN_OR_RETURN(ValueType t, ctx_.TypeOf(grad));
  if (t.shape != p.shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("gradient of ", p.name, " has type ", t.ToString(),
                     "; the parameter's shape is ", p.shape.ToString()));
  }
  if (t.dtype != DType::kF32) {
    TPUSIM_ASSIGN_OR_RETURN(grad, ctx_.Cast(grad, DType::kF32));
  }
  seen_[index] = true;
  if (options_.fsdp) {
    // Reduce-scatter this gradient and update this replica's shard.
    ++num_buckets_;
    const int n = ctx_.num_replicas_in_sync();
    const int64_t size = p.shape.num_elements();
    const int64_t shard = StorageShape(p, options_, n)[0];
    TPUSIM_ASSIGN_OR_RETURN(TracedValue flat, ctx_.Reshape(grad, {-1}));
    if (shard * n > size) {
      TPUSIM_ASSIGN_OR_RETURN(
          TracedValue zeros,
          ctx_.Constant(Tensor::Zeros(DType::kF32, Shape({shard * n - size}))));
      TPUSIM_ASSIGN_OR_RETURN(flat, ctx_.Concat({flat, zeros}, 0));
    }
    TPUSIM_ASSIGN_OR_RETURN(
        TracedValue gs, ctx_.ReduceScatter(strategy::ReduceOp::kMean, flat, 0));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue lr,
                            ctx_.ScalarConstant(options_.learning_rate));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue step, ctx_.Mul(gs, lr));
    return store_.AssignSub(ctx_, index, step);
  }
  pending_.emplace_back(index, grad);
  pending_bytes_ += p.shape.num_elements() * 4;
  if (pending_bytes_ >= options_.bucket_bytes) return Flush();
  return absl::OkStatus();
}

absl::Status GradientBucketer::Flush() {
  if (pending_.empty()) return absl::OkStatus();
  ++num_buckets_;
  const int n = ctx_.num_replicas_in_sync();
  TPUSIM_ASSIGN_OR_RETURN(TracedValue lr,
                          ctx_.ScalarConstant(options_.learning_rate));
  if (pending_.size() == 1 && !options_.shard_update) {
    const auto [index, g] = pending_[0];
    TPUSIM_ASSIGN_OR_RETURN(TracedValue r,
                            ctx_.AllReduce(strategy::ReduceOp::kMean, g));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue step, ctx_.Mul(r, lr));
    TPUSIM_RETURN_IF_ERROR(store_.AssignSub(ctx_, index, step));
    pending_.clear();
    pending_bytes_ = 0;
    return absl::OkStatus();
  }
  // Flatten and concatenate in arrival order.
  std::vector<TracedValue> flat;
  std::vector<int64_t> sizes;
  int64_t total = 0;
  for (const auto& [index, g] : pending_) {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue f, ctx_.Reshape(g, {-1}));
    flat.push_back(f);
    sizes.push_back(params_[index].shape.num_elements());
    total += sizes.back();
  }
  if (options_.shard_update) {
    // Pad to a multiple of N, reduce-scatter, update the shard, all-gather.
    const int64_t padded = (total + n - 1) / n * n;
    if (padded > total) {
      TPUSIM_ASSIGN_OR_RETURN(
          TracedValue zeros,
          ctx_.Constant(Tensor::Zeros(DType::kF32, Shape({padded - total}))));
      flat.push_back(zeros);
    }
  }
  TPUSIM_ASSIGN_OR_RETURN(TracedValue bucket,
                          flat.size() == 1
                              ? absl::StatusOr<TracedValue>(flat[0])
                              : ctx_.Concat(flat, 0));
  std::vector<TracedValue> updates;  // per pending gradient: lr * mean grad
  if (!options_.shard_update) {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue r,
                            ctx_.AllReduce(strategy::ReduceOp::kMean, bucket));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue step, ctx_.Mul(r, lr));
    int64_t off = 0;
    for (size_t i = 0; i < pending_.size(); ++i) {
      TPUSIM_ASSIGN_OR_RETURN(TracedValue s,
                              ctx_.Slice(step, {off}, {off + sizes[i]}));
      off += sizes[i];
      updates.push_back(s);
    }
  } else {
    // Each replica computes the update of its 1/N shard only (the optimizer
    // arithmetic is sharded), then the updates are all-gathered.
    TPUSIM_ASSIGN_OR_RETURN(
        TracedValue gshard,
        ctx_.ReduceScatter(strategy::ReduceOp::kMean, bucket, 0));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue sshard, ctx_.Mul(gshard, lr));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue delta, ctx_.AllGather(sshard, 0));
    int64_t off = 0;
    for (size_t i = 0; i < pending_.size(); ++i) {
      TPUSIM_ASSIGN_OR_RETURN(TracedValue s,
                              ctx_.Slice(delta, {off}, {off + sizes[i]}));
      off += sizes[i];
      updates.push_back(s);
    }
  }
  for (size_t i = 0; i < pending_.size(); ++i) {
    const int index = pending_[i].first;
    TPUSIM_ASSIGN_OR_RETURN(
        TracedValue u, ctx_.Reshape(updates[i], params_[index].shape.dims()));
    TPUSIM_RETURN_IF_ERROR(store_.AssignSub(ctx_, index, u));
  }
  pending_.clear();
  pending_bytes_ = 0;
  return absl::OkStatus();
}

absl::Status GradientBucketer::Finish() {
  TPUSIM_RETURN_IF_ERROR(Flush());
  if (seen_.empty()) seen_.assign(params_.size(), false);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!seen_[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter ", params_[i].name, " got no gradient this step"));
    }
  }
  return absl::OkStatus();
}

// ---- parameter stores ----

namespace {

class SlotStore : public ParamStore {
 public:
  SlotStore(const std::vector<ParamSpec>& params, const TrainOptions& options,
            int num_replicas)
      : params_(params), options_(options), num_replicas_(num_replicas) {}
  absl::StatusOr<TracedValue> Read(ReplicaContext& ctx, int index) override {
    TPUSIM_ASSIGN_OR_RETURN(runtime::ProgramBuilder * b, Declare(ctx, index));
    return b->VariableRead(index);
  }
  absl::Status AssignSub(ReplicaContext& ctx, int index,
                         TracedValue delta) override {
    TPUSIM_ASSIGN_OR_RETURN(runtime::ProgramBuilder * b, Declare(ctx, index));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue neg, b->Neg(delta));
    return b->VariableAssignAdd(index, neg).status();
  }

 private:
  absl::StatusOr<runtime::ProgramBuilder*> Declare(ReplicaContext& ctx,
                                                   int index) {
    TPUSIM_ASSIGN_OR_RETURN(runtime::ProgramBuilder * b, ctx.builder());
    TPUSIM_RETURN_IF_ERROR(b->DeclareVariable(
        index, DType::kF32,
        Shape(StorageShape(params_[index], options_, num_replicas_)),
        params_[index].name));
    return b;
  }
  const std::vector<ParamSpec>& params_;
  TrainOptions options_;
  int num_replicas_;
};

class VariableStore : public ParamStore {
 public:
  explicit VariableStore(std::vector<strategy::MirroredVariable*> vars)
      : vars_(std::move(vars)) {}
  absl::StatusOr<TracedValue> Read(ReplicaContext& ctx, int index) override {
    return ctx.ReadVariable(*vars_[index]);
  }
  absl::Status AssignSub(ReplicaContext& ctx, int index,
                         TracedValue delta) override {
    return ctx.AssignSubVariable(*vars_[index], delta).status();
  }

 private:
  std::vector<strategy::MirroredVariable*> vars_;
};

absl::StatusOr<TracedValue> RunStep(const Workload& w, ReplicaContext& ctx,
                                    ParamStore& store,
                                    absl::Span<const TracedValue> inputs) {
  StepContext s(ctx, store, w.params(), w.options());
  TPUSIM_ASSIGN_OR_RETURN(TracedValue loss, w.ForwardBackward(s, inputs));
  TPUSIM_RETURN_IF_ERROR(s.Finish());
  return loss;
}

}  // namespace

absl::StatusOr<runtime::Program> TraceTrainStep(const Workload& workload,
                                                int num_replicas,
                                                int64_t local_batch) {
  if (num_replicas < 1 || local_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_replicas=", num_replicas,
                     " and local_batch=", local_batch, " must be >= 1"));
  }
  runtime::ProgramBuilder b(workload.name() + "_train_step", num_replicas);
  ReplicaContext ctx(&strategy::DefaultStrategy::Get(), &b, num_replicas);
  std::vector<TracedValue> inputs;
  for (const ValueType& t : workload.InputTypes(local_batch)) {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue v, b.Parameter(t));
    inputs.push_back(v);
  }
  SlotStore store(workload.params(), workload.options(), num_replicas);
  absl::StatusOr<TracedValue> loss;
  {
    strategy::internal::ContextFrameGuard guard(
        &strategy::DefaultStrategy::Get(), &ctx);
    loss = RunStep(workload, ctx, store, inputs);
  }
  ctx.EndTracing();
  TPUSIM_RETURN_IF_ERROR(loss.status());
  return std::move(b).Build({*loss});
}

absl::StatusOr<std::vector<strategy::MirroredVariable*>> CreateParamVariables(
    const Workload& workload, uint64_t seed) {
  std::vector<strategy::MirroredVariable*> vars;
  const auto& params = workload.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamSpec& p = params[i];
    std::vector<float> v(p.shape.num_elements(), p.init_value);
    if (p.init_scale != 0.0f) {
      for (size_t k = 0; k < v.size(); ++k)
        v[k] = p.init_scale * Noise(seed, i, k);
    }
    if (!workload.options().fsdp) {
      TPUSIM_ASSIGN_OR_RETURN(
          strategy::MirroredVariable * var,
          strategy::CreateVariable(
              Tensor::FromVector<float>(p.shape, std::move(v)), {p.name}));
      vars.push_back(var);
      continue;
    }
    // FSDP: replica r's component holds shard r (zero padded).
    const int n = strategy::GetStrategy()->num_replicas_in_sync();
    const int64_t shard = StorageShape(p, workload.options(), n)[0];
    v.resize(shard * n, 0.0f);
    TPUSIM_ASSIGN_OR_RETURN(
        strategy::MirroredVariable * var,
        strategy::CreateVariable(Tensor::Zeros(DType::kF32, Shape({shard})),
                                 {p.name}));
    std::vector<Tensor> shards;
    for (int r = 0; r < n; ++r) {
      shards.push_back(Tensor::FromVector<float>(
          Shape({shard}), std::vector<float>(v.begin() + r * shard,
                                             v.begin() + (r + 1) * shard)));
    }
    TPUSIM_RETURN_IF_ERROR(var->Assign(
        strategy::Value(strategy::Mirrored<Tensor>(std::move(shards)))));
    vars.push_back(var);
  }
  return vars;
}

absl::StatusOr<std::vector<strategy::MirroredVariable*>>
CreateAbstractParamVariables(const Workload& workload) {
  std::vector<strategy::MirroredVariable*> vars;
  const int n = strategy::GetStrategy()->num_replicas_in_sync();
  for (const ParamSpec& p : workload.params()) {
    const Shape shape = workload.options().fsdp
                            ? Shape(StorageShape(p, workload.options(), n))
                            : p.shape;
    TPUSIM_ASSIGN_OR_RETURN(
        strategy::MirroredVariable * var,
        strategy::CreateVariable(Tensor::Abstract(DType::kF32, shape),
                                 {p.name}));
    vars.push_back(var);
  }
  return vars;
}

absl::StatusOr<Tensor> ReadParam(const Workload& workload, int index,
                                 const strategy::MirroredVariable& var) {
  const ParamSpec& p = workload.params()[index];
  if (!workload.options().fsdp) return var.ReadComponent(0);
  TPUSIM_ASSIGN_OR_RETURN(std::vector<Tensor> parts, var.ReadComponents());
  std::vector<float> all;
  for (const Tensor& t : parts) {
    auto v = t.values<float>();
    all.insert(all.end(), v.begin(), v.end());
  }
  all.resize(p.shape.num_elements());
  return Tensor::FromVector<float>(p.shape, std::move(all));
}

strategy::StepFunction MakeTrainStep(
    const Workload& workload, std::vector<strategy::MirroredVariable*> vars) {
  return strategy::StepFunction(
      [&workload, vars](ReplicaContext& ctx, const strategy::TracedNest& args)
          -> absl::StatusOr<strategy::TracedNest> {
        std::vector<TracedValue> inputs;
        for (const strategy::TracedNest& c : args.children())
          inputs.push_back(c.leaf());
        VariableStore store(vars);
        TPUSIM_ASSIGN_OR_RETURN(TracedValue loss,
                                RunStep(workload, ctx, store, inputs));
        return strategy::TracedNest(loss);
      },
      workload.name() + "_train_step");
}

std::vector<std::string> Workload::InputNames() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < InputTypes(1).size(); ++i) {
    names.push_back(absl::StrCat("input_", i));
  }
  return names;
}

int64_t MatrixFlops(const runtime::Program& program) {
  int64_t f = 0;
  for (int i = 0; i < static_cast<int>(program.ops().size()); ++i) {
    const runtime::OpCode c = program.ops()[i].code;
    if (c == runtime::OpCode::kDot || c == runtime::OpCode::kConv2D ||
        c == runtime::OpCode::kConv2DBackpropInput ||
        c == runtime::OpCode::kConv2DBackpropFilter) {
      f += program.CostOf(runtime::Value{i}).flops;
    }
  }
  return f;
}

// ---- registry ----

namespace {

const char* TypeName(ParamType t) {
  switch (t) {
    case ParamType::kInt:
      return "an integer";
    case ParamType::kFloat:
      return "a number";
    case ParamType::kBool:
      return "true or false";
    case ParamType::kString:
      return "a string";
  }
  return "?";
}

}  // namespace

absl::Status UnknownParameterError(absl::string_view workload,
                                   absl::string_view name,
                                   absl::Span<const std::string> allowed) {
  return absl::InvalidArgumentError(
      absl::StrCat("workload ", workload, ": unknown parameter \"", name,
                   "\"; allowed: ", absl::StrJoin(allowed, ", ")));
}

absl::Status BadParameterValueError(absl::string_view workload,
                                    absl::string_view name,
                                    absl::string_view text,
                                    absl::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat("workload ", workload,
                                                 ": parameter ", name, "=\"",
                                                 text, "\": must be ", want));
}

int64_t WorkloadParams::Int(const std::string& name) const {
  return std::get<int64_t>(values.at(name));
}
double WorkloadParams::Float(const std::string& name) const {
  return std::get<double>(values.at(name));
}
bool WorkloadParams::Bool(const std::string& name) const {
  return std::get<bool>(values.at(name));
}
const std::string& WorkloadParams::String(const std::string& name) const {
  return std::get<std::string>(values.at(name));
}

absl::StatusOr<TrainOptions> CommonOptions(const WorkloadParams& p) {
  TrainOptions o;
  const double mib = p.Float("bucket_mib");
  if (!(mib > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bucket_mib=", mib, " must be > 0"));
  }
  // chosen: 1 TiB, far above any model's gradients, and a byte count that
  // cannot overflow.
  constexpr int64_t kMaxBucketMib = int64_t{1} << 20;
  if (!(mib <= static_cast<double>(kMaxBucketMib))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bucket_mib=", mib, " must be <= ", kMaxBucketMib, " (1 TiB)"));
  }
  o.bucket_bytes = static_cast<int64_t>(mib * (1 << 20));
  o.learning_rate = p.Float("learning_rate");
  // NaN or infinite steps make every weight NaN (and the loss with it);
  // a negative one is gradient ascent.
  if (!std::isfinite(o.learning_rate) || o.learning_rate < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("learning_rate=", o.learning_rate,
                     " must be a finite number >= 0"));
  }
  o.shard_update = p.Bool("shard_update");
  if (p.values.count("fsdp") > 0) o.fsdp = p.Bool("fsdp");
  if (o.fsdp && o.shard_update) {
    return absl::InvalidArgumentError(
        "fsdp=true and shard_update=true cannot be combined (FSDP already "
        "shards the update)");
  }
  const std::string& d = p.String("dtype");
  if (d == "float32") {
    o.compute_dtype = DType::kF32;
  } else if (d == "bfloat16") {
    o.compute_dtype = DType::kBF16;
  } else if (d == "float64") {
    o.compute_dtype = DType::kF64;  // for gradient checks
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype=\"", d,
                     "\" is not a compute dtype; allowed float32, bfloat16, "
                     "float64"));
  }
  return o;
}

absl::StatusOr<std::unique_ptr<Workload>> CreateWorkload(
    const std::string& name, const std::map<std::string, std::string>& params) {
  const WorkloadEntry* entry = nullptr;
  std::vector<std::string> names;
  for (const WorkloadEntry& e : Registry()) {
    names.push_back(e.name);
    if (e.name == name) entry = &e;
  }
  if (entry == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload \"", name,
                     "\" is unknown; known: ", absl::StrJoin(names, ", ")));
  }
  WorkloadParams parsed;
  for (const ParamDef& d : entry->params)
    parsed.values[d.name] = d.default_value;
  for (const auto& [key, text] : params) {
    const ParamDef* def = nullptr;
    std::vector<std::string> allowed;
    for (const ParamDef& d : entry->params) {
      allowed.push_back(d.name);
      if (d.name == key) def = &d;
    }
    if (def == nullptr) return UnknownParameterError(name, key, allowed);
    bool ok = true;
    switch (def->type) {
      case ParamType::kInt: {
        int64_t v;
        if (!absl::SimpleAtoi(text, &v) || v < def->min || v > def->max) {
          return BadParameterValueError(
              name, key, text,
              absl::StrCat("an integer in [", def->min, ", ", def->max, "]"));
        }
        parsed.values[key] = v;
        break;
      }
      case ParamType::kFloat: {
        double v;
        ok = absl::SimpleAtod(text, &v);
        if (ok) parsed.values[key] = v;
        break;
      }
      case ParamType::kBool: {
        bool v;
        ok = absl::SimpleAtob(text, &v);
        if (ok) parsed.values[key] = v;
        break;
      }
      case ParamType::kString:
        parsed.values[key] = text;
        break;
    }
    if (!ok) return BadParameterValueError(name, key, text, TypeName(def->type));
  }
  return entry->build(parsed);
}

}  // namespace tpusim::models
