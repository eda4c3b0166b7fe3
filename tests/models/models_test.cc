// Tests of models/: the registry, parameter counts, FLOPs per step against the
// published counts, bucketing, and real-value training on HostBackend (exact
// hand-computed MLP step, 1 vs 2 replicas, finite-difference checks of every
// hand-written backward pass).

#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/workload.h"
#include "strategy/runtime/program.pb.h"
#include "tests/strategy/strategy_testing.h"

namespace tpusim::models {
namespace {

using runtime::OpCode;
using runtime::Shape;
using runtime::Tensor;
using strategy::MirroredVariable;
using strategy::PerReplica;
using strategy::Value;
using strategy::ValueNest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

std::unique_ptr<Workload> Make(const std::string& name,
                               std::map<std::string, std::string> params = {}) {
  absl::StatusOr<std::unique_ptr<Workload>> w = CreateWorkload(name, params);
  EXPECT_THAT(w, IsOk());
  return w.ok() ? *std::move(w) : nullptr;
}

int CountOps(const runtime::Program& p, OpCode code) {
  int n = 0;
  for (const runtime::Op& op : p.ops()) n += op.code == code;
  return n;
}

// The all-reduce operands: every bucket but the last >= `bucket` bytes, the
// last below it, all of them together every f32 gradient of ResNet-50.
void ExpectBuckets(const runtime::Program& p, int64_t bucket, int count) {
  std::vector<int64_t> sizes;
  for (const runtime::Op& op : p.ops()) {
    if (op.code == OpCode::kAllReduce) sizes.push_back(op.type.byte_size());
  }
  ASSERT_EQ(static_cast<int>(sizes.size()), count);
  int64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    total += sizes[i];
    if (i + 1 < sizes.size()) {
      EXPECT_GE(sizes[i], bucket) << "bucket " << i;
    } else {
      EXPECT_LT(sizes[i], bucket);
    }
  }
  EXPECT_EQ(total, int64_t{25'557'032} * 4);
}

// ---- registry ----

TEST(ModelsTest, RegistryNamesAndBadParametersAreNamed) {
  std::vector<std::string> names;
  for (const WorkloadEntry& e : Registry()) names.push_back(e.name);
  EXPECT_THAT(names, ElementsAre("mlp", "resnet50", "bert", "transformer_lm"));
  EXPECT_THAT(CreateWorkload("vgg16", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("workload \"vgg16\" is unknown; known: mlp, "
                                 "resnet50, bert, transformer_lm")));
  EXPECT_THAT(CreateWorkload("bert", {{"seq", "128"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("workload bert: unknown parameter \"seq\"; "
                                 "allowed: size, seq_len,")));
  EXPECT_THAT(CreateWorkload("transformer_lm", {{"layers", "two"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("workload transformer_lm: parameter "
                                 "layers=\"two\": must be an integer in [1, "
                                 "256]")));
  EXPECT_THAT(CreateWorkload("mlp", {{"shard_update", "maybe"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("parameter shard_update=\"maybe\": must be "
                                 "true or false")));
  EXPECT_THAT(CreateWorkload("mlp", {{"dtype", "float16"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("dtype=\"float16\" is not a compute dtype; "
                                 "allowed float32, bfloat16, float64")));
  EXPECT_THAT(CreateWorkload("bert", {{"size", "huge"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("size=\"huge\" is not allowed; allowed base, "
                                 "large, custom")));
  EXPECT_THAT(CreateWorkload("bert", {{"seq_len", "1024"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("workload bert: parameter seq_len=\"1024\": "
                                 "must be an integer in [1, 512]")));
  EXPECT_THAT(
      CreateWorkload("transformer_lm", {{"d_model", "100"}, {"heads", "3"}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("d_model=100 is not divisible by heads=3")));
  EXPECT_THAT(CreateWorkload("resnet50", {{"width", "0"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("workload resnet50: parameter width=\"0\": "
                                 "must be an integer in [1, 4096]")));
  EXPECT_THAT(CreateWorkload("mlp", {{"bucket_mib", "-1"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bucket_mib=-1 must be > 0")));
}

// Issue 22: dimensions whose element counts overflow int64 (they aborted on a
// CHECK in tensor.cc) and unbounded sizes (layers: 65536 built for minutes)
// are range errors naming the parameter and its bounds.
TEST(ModelsTest, HostileDimensionsAreRangeErrorsNamingTheParameter) {
  struct Case {
    std::string workload;
    std::map<std::string, std::string> params;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"mlp", {{"in", "9223372036854775807"}},
       "workload mlp: parameter in=\"9223372036854775807\": must be an "
       "integer in [1, 1048576]"},
      {"mlp", {{"hidden", "-5"}},
       "workload mlp: parameter hidden=\"-5\": must be an integer in [1, "
       "1048576]"},
      {"resnet50", {{"width", "2147483648"}},
       "workload resnet50: parameter width=\"2147483648\": must be an integer "
       "in [1, 4096]"},
      {"resnet50", {{"image_size", "65536"}},
       "workload resnet50: parameter image_size=\"65536\": must be an "
       "integer in [1, 4096]"},
      {"transformer_lm", {{"d_model", "2147483648"}},
       "workload transformer_lm: parameter d_model=\"2147483648\": must be an "
       "integer in [1, 65536]"},
      {"transformer_lm", {{"layers", "65536"}},
       "workload transformer_lm: parameter layers=\"65536\": must be an "
       "integer in [1, 256]"},
      {"transformer_lm", {{"ffn", "1000000"}},
       "workload transformer_lm: parameter ffn=\"1000000\": must be an "
       "integer in [0, 262144]"},
      {"transformer_lm", {{"vocab", "2000000"}},
       "workload transformer_lm: parameter vocab=\"2000000\": must be an "
       "integer in [1, 1048576]"},
      {"transformer_lm", {{"seq", "65536"}},
       "workload transformer_lm: parameter seq=\"65536\": must be an integer "
       "in [1, 32768]"},
      {"bert", {{"size", "custom"}, {"layers", "65536"}},
       "workload bert: parameter layers=\"65536\": must be an integer in [1, "
       "256]"},
      {"bert", {{"size", "custom"}, {"ffn", "2147483648"}},
       "workload bert: parameter ffn=\"2147483648\": must be an integer in "
       "[1, 262144]"},
      {"bert", {{"vocab", "99999999999"}},
       "workload bert: parameter vocab=\"99999999999\": must be an integer in "
       "[1, 1048576]"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(CreateWorkload(c.workload, c.params),
                StatusIs(absl::StatusCode::kInvalidArgument, c.message));
  }
  // The bounds themselves are allowed.
  EXPECT_THAT(CreateWorkload("transformer_lm", {{"layers", "256"}}), IsOk());
  EXPECT_THAT(CreateWorkload("mlp", {{"in", "1048576"}}), IsOk());
}

TEST(ModelsTest, LearningRateMustBeFiniteAndNotNegative) {
  for (const char* lr : {"nan", "-1", "inf", "-inf"}) {
    SCOPED_TRACE(lr);
    absl::StatusOr<std::unique_ptr<Workload>> w =
        CreateWorkload("mlp", {{"learning_rate", lr}});
    EXPECT_THAT(w, StatusIs(absl::StatusCode::kInvalidArgument,
                            ::testing::StartsWith("learning_rate=")));
    EXPECT_THAT(w, StatusIs(absl::StatusCode::kInvalidArgument,
                            HasSubstr(" must be a finite number >= 0")));
  }
  EXPECT_THAT(CreateWorkload("mlp", {{"learning_rate", "-1"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "learning_rate=-1 must be a finite number >= 0"));
  EXPECT_THAT(CreateWorkload("mlp", {{"learning_rate", "0"}}), IsOk());
  EXPECT_THAT(CreateWorkload("mlp", {{"bucket_mib", "inf"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bucket_mib=inf must be <= 1048576 (1 TiB)"));
}

// ---- parameter counts ----

TEST(ModelsTest, ResNet50V15ParameterCount) {
  // Convention: no conv biases; BN gamma and beta counted, moving statistics
  // not (they are not trainable); the classifier has a bias. This is
  // torchvision's resnet50 count.
  auto w = Make("resnet50");
  EXPECT_EQ(w->NumParams(), 25'557'032);
  EXPECT_EQ(w->params().size(), 161u);  // 53 convs x 3 + fc kernel and bias
}

TEST(ModelsTest, BertParameterCounts) {
  // vocab 30,522, 512 positions, 2 token types, pooler included; the MLM
  // output layer is tied to the word embedding and the NSP head has no
  // weights of its own (the published counts leave the heads out).
  EXPECT_EQ(Make("bert", {{"size", "base"}})->NumParams(), 109'482'240);
  EXPECT_EQ(Make("bert", {{"size", "large"}})->NumParams(), 335'141'888);
}

TEST(ModelsTest, TransformerLmParameterCount) {
  // Per layer 12 d^2 + 13 d (q, k, v, out, two FFN matrices with biases, two
  // layer norms), plus a final layer norm; embeddings word + position.
  auto w = Make("transformer_lm", {{"layers", "12"},
                                   {"d_model", "768"},
                                   {"heads", "12"},
                                   {"seq", "1024"},
                                   {"vocab", "50257"}});
  const int64_t d = 768;
  EXPECT_EQ(w->NumNonEmbeddingParams(), 12 * (12 * d * d + 13 * d) + 2 * d);
  EXPECT_EQ(w->NumParams(), w->NumNonEmbeddingParams() + 50257 * d + 1024 * d);
}

// ---- FLOPs per step ----

TEST(ModelsTest, ResNet50FlopsMatchThePublishedCount) {
  // Published: ~4.1 G multiply-adds forward per 224x224 image = 8.2 GFLOPs at
  // 2 FLOPs per multiply-add. A training step is counted as 3x forward (two
  // gradient convolutions per forward one); the stem's input gradient is not
  // computed (the image needs none), which this count includes.
  auto w = Make("resnet50");
  absl::StatusOr<runtime::Program> p = TraceTrainStep(*w, 1, 1);
  ASSERT_THAT(p, IsOk());
  int64_t forward = 0;
  for (int i = 0; i < static_cast<int>(p->ops().size()); ++i) {
    if (p->ops()[i].code == OpCode::kConv2D)
      forward += p->CostOf(runtime::Value{i}).flops;
  }
  forward += 2 * 2048 * 1000;  // the classifier's forward dot
  EXPECT_NEAR(static_cast<double>(forward) / 8.2e9, 1.0, 0.03) << forward;
  const int64_t step = MatrixFlops(*p);
  std::cout << "resnet50 forward FLOPs/image " << forward << ", step " << step
            << " (total incl. elementwise " << p->TotalCost().flops << ")\n";
  EXPECT_NEAR(static_cast<double>(step) / (3 * 8.2e9), 1.0, 0.03) << step;
  // Scales with the local batch.
  absl::StatusOr<runtime::Program> p4 = TraceTrainStep(*w, 1, 4);
  ASSERT_THAT(p4, IsOk());
  EXPECT_EQ(MatrixFlops(*p4), 4 * step);
}

// Matrix FLOPs of a transformer step minus the tied output layer (6 d V per
// token: forward, its input gradient and its weight gradient), against the
// scaling-law count 6 N T + 12 L S d T with N the non-embedding parameters.
void ExpectTransformerFlops(const Workload& w, int64_t layers, int64_t d,
                            int64_t seq, int64_t vocab, int64_t batch) {
  absl::StatusOr<runtime::Program> p = TraceTrainStep(w, 1, batch);
  ASSERT_THAT(p, IsOk());
  const double tokens = static_cast<double>(batch * seq);
  const double head = 6.0 * d * vocab * tokens;
  const double want = 6.0 * w.NumNonEmbeddingParams() * tokens +
                      12.0 * layers * seq * d * tokens;
  const double got = static_cast<double>(MatrixFlops(*p)) - head;
  EXPECT_NEAR(got / want, 1.0, 0.03) << got << " vs " << want;
  std::cout << w.name() << " matrix FLOPs/step (batch " << batch << "): " << got
            << " (+ head " << head << ") vs 6NT+12LSdT " << want << ", ratio "
            << got / want << "\n";
}

TEST(ModelsTest, BertFlopsMatchTheScalingLawCount) {
  ExpectTransformerFlops(*Make("bert", {{"size", "base"}, {"seq_len", "128"}}),
                         12, 768, 128, 30522, 2);
  ExpectTransformerFlops(*Make("bert", {{"size", "large"}, {"seq_len", "512"}}),
                         24, 1024, 512, 30522, 1);
}

TEST(ModelsTest, TransformerLmFlopsMatchTheScalingLawCount) {
  ExpectTransformerFlops(*Make("transformer_lm", {{"layers", "12"},
                                                  {"d_model", "768"},
                                                  {"heads", "12"},
                                                  {"seq", "1024"},
                                                  {"vocab", "50257"}}),
                         12, 768, 1024, 50257, 1);
}

// ---- bucketing ----

TEST(ModelsTest, GradientsAreAllReducedInBucketsAsBackwardProducesThem) {
  auto w = Make("resnet50");
  absl::StatusOr<runtime::Program> p = TraceTrainStep(*w, 8, 2);
  ASSERT_THAT(p, IsOk());
  // 102,228,128 bytes of f32 gradients; a bucket closes at the first gradient
  // that brings it to >= 25 MiB, so every bucket but the last holds >= 25 MiB
  // and the last the remainder (here: 4 buckets).
  ExpectBuckets(*p, int64_t{25} << 20, 4);
  // The first bucket is recorded before backward ends (it can overlap).
  int first_all_reduce = -1, last_filter_grad = -1;
  for (int i = 0; i < static_cast<int>(p->ops().size()); ++i) {
    const OpCode c = p->ops()[i].code;
    if (c == OpCode::kAllReduce && first_all_reduce < 0) first_all_reduce = i;
    if (c == OpCode::kConv2DBackpropFilter) last_filter_grad = i;
  }
  EXPECT_LT(first_all_reduce, last_filter_grad);
  // Every parameter is updated once.
  EXPECT_EQ(CountOps(*p, OpCode::kVariableAssignAdd), 161);
  // Smaller buckets give more collectives; weight-update sharding swaps each
  // all-reduce for a reduce-scatter and an all-gather.
  auto small = Make("resnet50", {{"bucket_mib", "1"}});
  absl::StatusOr<runtime::Program> ps = TraceTrainStep(*small, 8, 2);
  ASSERT_THAT(ps, IsOk());
  ExpectBuckets(*ps, int64_t{1} << 20, 34);
  auto sharded = Make("resnet50", {{"shard_update", "true"}});
  absl::StatusOr<runtime::Program> ph = TraceTrainStep(*sharded, 8, 2);
  ASSERT_THAT(ph, IsOk());
  EXPECT_EQ(CountOps(*ph, OpCode::kAllReduce), 0);
  EXPECT_EQ(CountOps(*ph, OpCode::kReduceScatter), 4);
  EXPECT_EQ(CountOps(*ph, OpCode::kAllGather), 4);
}

TEST(ModelsTest, Bf16ComputeKeepsF32MasterWeightsAndGradients) {
  auto w = Make("resnet50", {{"image_size", "32"}, {"width", "4"}});
  absl::StatusOr<runtime::Program> p = TraceTrainStep(*w, 2, 2);
  ASSERT_THAT(p, IsOk());
  for (const runtime::VariableDecl& v : p->variables())
    EXPECT_EQ(v.dtype, runtime::DType::kF32) << v.name;
  for (const runtime::Op& op : p->ops()) {
    if (op.code == OpCode::kConv2D || op.code == OpCode::kConv2DBackpropFilter)
      EXPECT_EQ(op.type.dtype, runtime::DType::kBF16);
    if (op.code == OpCode::kAllReduce)
      EXPECT_EQ(op.type.dtype, runtime::DType::kF32);
  }
}

// ---- real values on HostBackend ----

struct Runner {
  strategy::testing::StrategyFixture f;
  std::vector<MirroredVariable*> vars;

  Runner(const std::string& slice, const Workload& w, uint64_t seed)
      : f(strategy::testing::MakeStrategy(slice)) {
    absl::StatusOr<strategy::StrategyScope> scope = f.strategy->Scope();
    EXPECT_THAT(scope, IsOk());
    absl::StatusOr<std::vector<MirroredVariable*>> v =
        CreateParamVariables(w, seed);
    EXPECT_THAT(v, IsOk());
    vars = *v;
  }
  int replicas() const { return f.strategy->num_replicas_in_sync(); }
  // One step on the global batch `inputs` (split evenly); the replicas'
  // losses.
  std::vector<double> Step(const strategy::StepFunction& step,
                           const std::vector<Tensor>& inputs) {
    const int n = replicas();
    std::vector<ValueNest> args;
    for (const Tensor& t : inputs) {
      const int64_t per = t.shape().dim(0) / n;
      std::vector<Tensor> parts;
      for (int r = 0; r < n; ++r) parts.push_back(t.Slice(r * per, per));
      args.emplace_back(Value(PerReplica<Tensor>(std::move(parts))));
    }
    absl::StatusOr<ValueNest> out =
        f.strategy->Run(step, ValueNest::Tuple(std::move(args)));
    EXPECT_THAT(out, IsOk());
    if (!out.ok()) return {};
    if (!out->leaf().is_per_replica())
      return {out->leaf().tensor().AsDouble(0)};
    return strategy::testing::ReplicaScalars(out->leaf());
  }
  std::vector<float> Read(int i) {
    absl::StatusOr<Tensor> t = vars[i]->Read();
    EXPECT_THAT(t, IsOk());
    auto v = t->values<float>();
    return std::vector<float>(v.begin(), v.end());
  }
  void Set(int i, std::vector<float> v) {
    ASSERT_THAT(vars[i]->Assign(Value(
                    Tensor::FromVector<float>(vars[i]->shape(), std::move(v)))),
                IsOk());
  }
};

// The tiny MLP of the hand computation: x [2, 2], t [2, 1], hidden 2.
std::vector<Tensor> HandInputs() {
  return {Tensor::FromVector<float>(Shape({2, 2}), {1, 2, 0.5f, -1}),
          Tensor::FromVector<float>(Shape({2, 1}), {1, 0})};
}
void SetHandWeights(Runner& r) {
  r.Set(0, {0.5f, -1, 0.25f, 0.5f});
  r.Set(1, {0, 0.5f});
  r.Set(2, {2, -1});
  r.Set(3, {0.25f});
}

TEST(ModelsTest, MlpStepMatchesTheHandComputationExactly) {
  // z1 = x W1 + b1 = [[1, 0.5], [0, -0.5]]; h = relu = [[1, 0.5], [0, 0]];
  // y = h W2 + b2 = [1.75, 0.25]; d = y - t = [0.75, 0.25];
  // loss = mean(d^2) = 0.3125; dy = 2 d / 2 = d; dW2 = h^T dy = [0.75, 0.375];
  // db2 = 1; dh = dy W2^T = [[1.5, -0.75], [0.5, -0.25]]; dz1 = dh * (z1 > 0)
  // = [[1.5, -0.75], [0, 0]] (z1 = 0 gives no gradient); dW1 = x^T dz1 =
  // [[1.5, -0.75], [3, -1.5]]; db1 = [1.5, -0.75]. lr 0.5: every value is
  // dyadic, so f32 is exact.
  auto w =
      Make("mlp", {{"in", "2"}, {"hidden", "2"}, {"learning_rate", "0.5"}});
  for (const char* slice : {"plain:1x1", "plain:1x2"}) {
    for (const char* shard : {"false", "true"}) {
      SCOPED_TRACE(absl::StrCat(slice, " shard_update=", shard));
      auto ws = Make("mlp", {{"in", "2"},
                             {"hidden", "2"},
                             {"learning_rate", "0.5"},
                             {"shard_update", shard}});
      Runner r(slice, *ws, 1);
      SetHandWeights(r);
      std::vector<double> loss =
          r.Step(MakeTrainStep(*ws, r.vars), HandInputs());
      if (r.replicas() == 1) {
        EXPECT_THAT(loss, ElementsAre(0.3125));
      } else {
        EXPECT_THAT(loss, ElementsAre(0.5625, 0.0625));  // each replica's row
      }
      EXPECT_THAT(r.Read(0), ElementsAre(-0.25f, -0.625f, -1.25f, 1.25f));
      EXPECT_THAT(r.Read(1), ElementsAre(-0.75f, 0.875f));
      EXPECT_THAT(r.Read(2), ElementsAre(1.625f, -1.1875f));
      EXPECT_THAT(r.Read(3), ElementsAre(-0.25f));
    }
  }
}

TEST(ModelsTest, MlpTrainsAndOneAndTwoReplicasAgree) {
  auto w =
      Make("mlp", {{"in", "4"}, {"hidden", "8"}, {"learning_rate", "0.1"}});
  Runner one("plain:1x1", *w, 7);
  Runner two("plain:1x2", *w, 7);
  const strategy::StepFunction s1 = MakeTrainStep(*w, one.vars);
  const strategy::StepFunction s2 = MakeTrainStep(*w, two.vars);
  const std::vector<Tensor> batch = w->SyntheticInputs(8, 3);
  double first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    std::vector<double> l1 = one.Step(s1, batch);
    std::vector<double> l2 = two.Step(s2, batch);
    ASSERT_EQ(l1.size(), 1u);
    ASSERT_EQ(l2.size(), 2u);
    // The global mean loss is the mean of the replicas' (equal halves).
    EXPECT_NEAR(l1[0], (l2[0] + l2[1]) / 2, 1e-6);
    if (step == 0) first = l1[0];
    last = l1[0];
  }
  EXPECT_LT(last, 0.5 * first);
  // The weights agree to f32 rounding (the sums run in a different order).
  for (int i = 0; i < 4; ++i) {
    std::vector<float> a = one.Read(i), b = two.Read(i);
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-5);
  }
}

// per_example_loss (`tpusim run` fed by a pipeline): the step returns the
// per-example losses and scales the gradient by N / (rows of all replicas), so
// uneven per-replica batches (a partial final batch: 2 rows and 1 row) give
// exactly the global-mean loss (strategy.reduce MEAN, axis=0) and the same
// update as one replica holding all 3 rows. Without it, the MEAN all-reduce
// averages the replicas' means and the update differs.
TEST(ModelsTest, PerExampleLossTrainsExactlyOnUnevenBatches) {
  const std::vector<float> x = {1, 2, 0.5f, -1, 1, 1};
  const std::vector<float> t = {1, 0, 0.5f};
  auto run = [&](const std::string& slice, bool per_example,
                 std::vector<std::vector<float>>& weights) -> double {
    auto w =
        Make("mlp", {{"in", "2"}, {"hidden", "2"}, {"learning_rate", "0.5"}});
    w->set_per_example_loss(per_example);
    Runner r(slice, *w, 1);
    SetHandWeights(r);
    std::vector<Tensor> xs, ts;
    if (r.replicas() == 1) {
      xs = {Tensor::FromVector<float>(Shape({3, 2}), x)};
      ts = {Tensor::FromVector<float>(Shape({3, 1}), t)};
    } else {
      xs = {Tensor::FromVector<float>(Shape({2, 2}), {x[0], x[1], x[2], x[3]}),
            Tensor::FromVector<float>(Shape({1, 2}), {x[4], x[5]})};
      ts = {Tensor::FromVector<float>(Shape({2, 1}), {t[0], t[1]}),
            Tensor::FromVector<float>(Shape({1, 1}), {t[2]})};
    }
    absl::StatusOr<ValueNest> out = r.f.strategy->Run(
        MakeTrainStep(*w, r.vars),
        ValueNest::Tuple({ValueNest(Value(PerReplica<Tensor>(xs))),
                          ValueNest(Value(PerReplica<Tensor>(ts)))}));
    EXPECT_THAT(out, IsOk());
    for (int i = 0; i < 4; ++i) weights.push_back(r.Read(i));
    if (!out.ok() || !per_example) return 0;
    absl::StatusOr<Value> mean = r.f.strategy->Reduce(
        strategy::ReduceOp::kMean, out->leaf(), strategy::ReduceAxis(0));
    EXPECT_THAT(mean, IsOk());
    return mean.ok() ? mean->tensor().AsDouble(0) : 0;
  };
  // Forward with the hand weights: y = (1.75, 0.25, 1.75) for rows
  // x = (1, 2), (0.5, -1), (1, 1) (the third: z1 = (0.75, 0), h = (0.75, 0),
  // y = 1.5 + 0.25); d = y - t = (0.75, 0.25, 1.25); the exact mean of d^2
  // over the 3 rows = (0.5625 + 0.0625 + 1.5625) / 3 = 0.729166...
  // Every d^2 is dyadic, so the f32 sum is exact and the one division rounds.
  const double exact = static_cast<float>(2.1875 / 3);
  std::vector<std::vector<float>> one, two, two_means;
  EXPECT_EQ(run("plain:1x1", true, one), exact);
  EXPECT_EQ(run("plain:1x2", true, two), exact);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(one[i].size(), two[i].size());
    for (size_t k = 0; k < one[i].size(); ++k) {
      EXPECT_NEAR(one[i][k], two[i][k], 1e-6)
          << "parameter " << i << "[" << k << "]";
    }
  }
  run("plain:1x2", false, two_means);
  EXPECT_GT(std::abs(two_means[3][0] - one[3][0]), 0.01)
      << "the mean of the replicas' means weights the single row twice";
}

// Finite differences of the loss against the gradient the step applied
// (lr = 1: new = old - g), for a few elements of every parameter.
void CheckGradients(const std::string& name,
                    std::map<std::string, std::string> params, int64_t batch,
                    const std::string& dtype, double eps, double tol,
                    double rel = 0.02, bool all_three = true) {
  params["dtype"] = dtype;
  params["learning_rate"] = "0";
  auto frozen = Make(name, params);
  params["learning_rate"] = "1";
  auto train = Make(name, params);
  Runner r("plain:1x1", *train, 5);
  const std::vector<Tensor> in = train->SyntheticInputs(batch, 9);
  const strategy::StepFunction eval = MakeTrainStep(*frozen, r.vars);
  const strategy::StepFunction step = MakeTrainStep(*train, r.vars);
  const int n = static_cast<int>(train->params().size());
  std::vector<std::vector<float>> before(n);
  for (int i = 0; i < n; ++i) before[i] = r.Read(i);
  // The finite differences first (lr 0 leaves the weights unchanged). The
  // step is the f32 difference actually applied.
  std::vector<std::vector<std::pair<int, double>>> fd(n);
  for (int i = 0; i < n; ++i) {
    const int64_t size = static_cast<int64_t>(before[i].size());
    std::vector<int64_t> elements = {size / 2};
    if (all_three) elements = {0, size / 2, size - 1};
    for (int64_t e : elements) {
      std::vector<float> v = before[i];
      v[e] = static_cast<float>(before[i][e] + eps);
      const double hp = static_cast<double>(v[e]) - before[i][e];
      r.Set(i, v);
      const double lp = r.Step(eval, in)[0];
      v[e] = static_cast<float>(before[i][e] - eps);
      const double hm = static_cast<double>(v[e]) - before[i][e];
      r.Set(i, v);
      const double lm = r.Step(eval, in)[0];
      r.Set(i, before[i]);
      fd[i].emplace_back(static_cast<int>(e), (lp - lm) / (hp - hm));
    }
  }
  r.Step(step, in);
  for (int i = 0; i < n; ++i) {
    const std::vector<float> after = r.Read(i);
    for (const auto& [e, want] : fd[i]) {
      const double got = static_cast<double>(before[i][e]) - after[e];
      EXPECT_NEAR(got, want, tol + rel * std::abs(want))
          << name << " " << train->params()[i].name << "[" << e << "]";
    }
  }
}

TEST(ModelsTest, ResNetBackwardMatchesFiniteDifferences) {
  // A 50-layer net with batch norm over few values is rough: the finite
  // differences converge to the backward's gradient as eps shrinks (measured
  // at conv1/kernel[0]: eps 1e-3 -> 86.2, 1e-4 -> -15.8, 1e-6 -> -28.8, the
  // backward gives -30.1), so this check runs in f64 at eps 1e-6 with a 6%
  // tolerance, on the middle element of every parameter.
  CheckGradients("resnet50",
                 {{"image_size", "32"}, {"width", "4"}, {"num_classes", "5"}},
                 8, "float64", 1e-6, 1e-3, /*rel=*/0.06, /*all_three=*/false);
}

TEST(ModelsTest, BertBackwardMatchesFiniteDifferences) {
  CheckGradients("bert",
                 {{"size", "custom"},
                  {"layers", "1"},
                  {"d_model", "8"},
                  {"heads", "2"},
                  {"ffn", "16"},
                  {"seq_len", "4"},
                  {"vocab", "11"}},
                 2, "float32", 1e-3, 2e-3);
}

TEST(ModelsTest, TransformerLmBackwardMatchesFiniteDifferences) {
  CheckGradients("transformer_lm",
                 {{"layers", "2"},
                  {"d_model", "8"},
                  {"heads", "2"},
                  {"seq", "4"},
                  {"vocab", "11"}},
                 2, "float32", 1e-3, 2e-3);
}

TEST(ModelsTest, FsdpShardsWeightsGradientsAndUpdates) {
  // A GPT-3 XL-like config on 8 replicas: each replica stores 1/8 of every
  // parameter; every parameter is all-gathered once and its gradient
  // reduce-scattered once; no all-reduce.
  auto w = Make("transformer_lm", {{"layers", "24"},
                                   {"d_model", "2048"},
                                   {"heads", "16"},
                                   {"seq", "2048"},
                                   {"vocab", "50257"},
                                   {"fsdp", "true"}});
  absl::StatusOr<runtime::Program> p = TraceTrainStep(*w, 8, 1);
  ASSERT_THAT(p, IsOk());
  int64_t stored = 0;
  for (const runtime::VariableDecl& v : p->variables())
    stored += v.shape.num_elements();
  int64_t want = 0;
  for (const ParamSpec& s : w->params())
    want += (s.shape.num_elements() + 7) / 8;
  EXPECT_EQ(stored, want);
  EXPECT_LE(stored * 8,
            w->NumParams() + 8 * static_cast<int64_t>(w->params().size()));
  const int params = static_cast<int>(w->params().size());
  EXPECT_EQ(CountOps(*p, OpCode::kAllGather), params);
  EXPECT_EQ(CountOps(*p, OpCode::kReduceScatter), params);
  EXPECT_EQ(CountOps(*p, OpCode::kAllReduce), 0);
  // The gathers move bf16.
  for (const runtime::Op& op : p->ops()) {
    if (op.code == OpCode::kAllGather)
      EXPECT_EQ(op.type.dtype, runtime::DType::kBF16);
  }
  EXPECT_THAT(CreateWorkload("transformer_lm",
                             {{"fsdp", "true"}, {"shard_update", "true"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("fsdp=true and shard_update=true cannot be "
                                 "combined")));
}

TEST(ModelsTest, FsdpTrainsLikeDataParallelOnHostBackend) {
  std::map<std::string, std::string> params = {
      {"layers", "1"},         {"d_model", "8"},
      {"heads", "2"},          {"seq", "4"},
      {"vocab", "11"},         {"dtype", "float32"},
      {"learning_rate", "0.5"}};
  auto dp = Make("transformer_lm", params);
  params["fsdp"] = "true";
  auto fsdp = Make("transformer_lm", params);
  Runner a("plain:1x2", *dp, 3);
  Runner b("plain:1x2", *fsdp, 3);
  const std::vector<Tensor> in = dp->SyntheticInputs(4, 1);
  const strategy::StepFunction sa = MakeTrainStep(*dp, a.vars);
  const strategy::StepFunction sb = MakeTrainStep(*fsdp, b.vars);
  for (int step = 0; step < 3; ++step) {
    std::vector<double> la = a.Step(sa, in), lb = b.Step(sb, in);
    ASSERT_EQ(la.size(), 2u);
    ASSERT_EQ(lb.size(), 2u);
    EXPECT_NEAR(la[0], lb[0], 1e-5);
    EXPECT_NEAR(la[1], lb[1], 1e-5);
  }
  for (int i = 0; i < static_cast<int>(dp->params().size()); ++i) {
    absl::StatusOr<Tensor> x = ReadParam(*dp, i, *a.vars[i]);
    absl::StatusOr<Tensor> y = ReadParam(*fsdp, i, *b.vars[i]);
    ASSERT_THAT(x, IsOk());
    ASSERT_THAT(y, IsOk());
    ASSERT_EQ(x->shape(), y->shape());
    for (int64_t k = 0; k < x->num_elements(); ++k)
      EXPECT_NEAR(x->AsDouble(k), y->AsDouble(k), 1e-5) << dp->params()[i].name;
  }
}

TEST(ModelsTest, ReplicaContextCollectivesOnHostBackend) {
  // Two replicas holding x0 = [1, 2, 3, 4] and x1 = [5, 6, 7, 8] as [2, 2].
  Runner r("plain:1x2", *Make("mlp"), 1);
  const strategy::StepFunction step(
      [](ReplicaContext& ctx, const strategy::TracedNest& args)
          -> absl::StatusOr<strategy::TracedNest> {
        const TracedValue x = args.children()[0].leaf();
        TPUSIM_ASSIGN_OR_RETURN(TracedValue g, ctx.AllGather(x, 0));
        TPUSIM_ASSIGN_OR_RETURN(
            TracedValue rs, ctx.ReduceScatter(strategy::ReduceOp::kSum, x, 1));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue a2a, ctx.AllToAll(x, 0, 1));
        return strategy::TracedNest::Tuple({strategy::TracedNest(g),
                                            strategy::TracedNest(rs),
                                            strategy::TracedNest(a2a)});
      },
      "collectives");
  std::vector<Tensor> parts = {
      Tensor::FromVector<float>(Shape({2, 2}), {1, 2, 3, 4}),
      Tensor::FromVector<float>(Shape({2, 2}), {5, 6, 7, 8})};
  absl::StatusOr<ValueNest> out = r.f.strategy->Run(
      step, ValueNest::Tuple({ValueNest(Value(PerReplica<Tensor>(parts)))}));
  ASSERT_THAT(out, IsOk());
  auto comp = [&](int leaf, int replica) {
    return strategy::testing::Values(
        out->children()[leaf].leaf().components()[replica]);
  };
  EXPECT_THAT(comp(0, 1), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(comp(1, 0), ElementsAre(6, 10));       // column 0 of the sum
  EXPECT_THAT(comp(1, 1), ElementsAre(8, 12));       // column 1
  EXPECT_THAT(comp(2, 0), ElementsAre(1, 2, 5, 6));  // row 0 of each
  EXPECT_THAT(comp(2, 1), ElementsAre(3, 4, 7, 8));  // row 1 of each
}

TEST(ModelsTest, TracingIsDeterministic) {
  auto w = Make("bert", {{"size", "custom"},
                         {"layers", "1"},
                         {"d_model", "8"},
                         {"heads", "2"},
                         {"ffn", "16"},
                         {"seq_len", "4"},
                         {"vocab", "11"}});
  absl::StatusOr<runtime::Program> a = TraceTrainStep(*w, 2, 2);
  absl::StatusOr<runtime::Program> b = TraceTrainStep(*w, 2, 2);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(a->ToText(), b->ToText());
}

TEST(ModelsTest, FullSizeStepsRoundTripThroughTheProgramProto) {
  // What a backend receives: every shape rule re-runs on FromProto.
  for (const char* name : {"resnet50", "bert"}) {
    auto w = Make(name);
    absl::StatusOr<runtime::Program> p = TraceTrainStep(*w, 8, 2);
    ASSERT_THAT(p, IsOk());
    proto::ProgramProto pp;
    p->ToProto(&pp);
    absl::StatusOr<runtime::Program> back = runtime::Program::FromProto(pp);
    ASSERT_THAT(back, IsOk());
    EXPECT_EQ(back->ToText(), p->ToText()) << name;
    EXPECT_EQ(back->TotalCost(), p->TotalCost()) << name;
    std::cout << name << ": " << p->ops().size() << " ops per step\n";
  }
}

}  // namespace
}  // namespace tpusim::models
