// Data-parallel equivalence: an MLP trained 20 SGD steps on N replicas
// (gradients all-reduced with MEAN) ends with the weights of single-device
// training on the global batch, within |a - b| <= 1e-5 * max(1, |b|). The
// global batches go through experimental_distribute_dataset, as a user feeds
// them, and every replica's own loss is checked against a reference computed
// on exactly the rows TF gives that replica (so a replica fed another shard
// fails, even though the averaged gradients would not show it).
// Parameterized over the registered backends (scenarios/backend_registry.h):
// "host", "sim" and (when built) "pjrt". On "sim" the N-replica run must also give exactly (bit for
// bit) HostBackend's weights and losses; the single-device reference always
// runs on "host" (one SimBackend per process).

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenarios/backend_registry.h"
#include "sim/sim_backend.h"
#include "strategy/cluster_resolver.h"
#include "strategy/data/dataset.h"
#include "strategy/input_iterator.h"
#include "strategy/runtime/host_backend.h"
#include "strategy/tpu_strategy.h"
#include "tests/strategy/mlp_testing.h"

namespace tpusim::strategy {
namespace {

using testing::MlpConfig;
using testing::MlpVariables;
using tpusim::testing::IsOk;

constexpr int kSteps = 20;
constexpr int kGlobalBatch = 16;

// One host, N devices: the slice each replica count runs on.
std::string SliceFor(int replicas) {
  switch (replicas) {
    case 1:
      return "v5litepod-1";
    case 2:
      return "v5litepod-2";
    case 4:
      return "v5litepod-4";
    default:
      return "v3-8";  // 8 TensorCores on one host
  }
}

// The kSteps global batches as one dataset: from_tensor_slices((x, t))
// .batch(kGlobalBatch), whose batch s is (MlpBatchX(s), MlpBatchT(s)).
data::Dataset GlobalBatches(int in) {
  std::vector<runtime::Tensor> xs, ts;
  for (int s = 0; s < kSteps; ++s) {
    xs.push_back(testing::MlpBatchX(s, kGlobalBatch, in));
    ts.push_back(testing::MlpBatchT(s, kGlobalBatch));
  }
  absl::StatusOr<runtime::Tensor> x = runtime::Tensor::Concat(xs);
  absl::StatusOr<runtime::Tensor> t = runtime::Tensor::Concat(ts);
  EXPECT_THAT(x, IsOk());
  EXPECT_THAT(t, IsOk());
  return data::Dataset::FromTensorSlices(
             data::TensorRefNest::Tuple(
                 {data::TensorRefNest(*x), data::TensorRefNest(*t)}))
      .Batch(kGlobalBatch);
}

// Training on `replicas`: the final weights (w1, b1, w2, b2 flattened,
// component 0) and, per step, each replica's loss.
struct Trained {
  std::vector<float> weights;
  std::vector<std::vector<float>> losses;  // [step][replica]
  // On "sim": collective member starts, and those placed before the
  // network's clock (SimStats::late_starts).
  int64_t collectives = 0;
  int64_t late_starts = 0;
};

Trained Train(const std::string& backend_name, int replicas) {
  absl::StatusOr<std::unique_ptr<runtime::Backend>> created =
      scenarios::CreateBackend(backend_name, SliceFor(replicas));
  EXPECT_THAT(created, IsOk());
  std::unique_ptr<runtime::Backend> backend = std::move(*created);
  absl::StatusOr<TPUClusterResolver> resolver =
      TPUClusterResolver::Create(*backend, SliceFor(replicas));
  EXPECT_THAT(resolver, IsOk());
  absl::StatusOr<std::unique_ptr<TPUStrategy>> strategy =
      TPUStrategy::Create(*backend, *resolver);
  EXPECT_THAT(strategy, IsOk());
  const MlpConfig config;
  MlpVariables vars;
  {
    absl::StatusOr<StrategyScope> scope = (*strategy)->Scope();
    EXPECT_THAT(scope, IsOk());
    absl::StatusOr<MlpVariables> created = testing::CreateMlpVariables(config);
    EXPECT_THAT(created, IsOk());
    vars = *created;
  }
  const StepFunction step = testing::MakeMlpTrainStep(vars, config);
  absl::StatusOr<data::DistributedDataset> dist =
      (*strategy)->ExperimentalDistributeDataset(GlobalBatches(config.in));
  EXPECT_THAT(dist, IsOk());
  absl::StatusOr<data::DistributedIterator> it = dist->MakeIterator();
  EXPECT_THAT(it, IsOk());
  Trained out;
  for (int s = 0; s < kSteps; ++s) {
    absl::StatusOr<PerReplica<data::Element>> next = it->GetNext();
    EXPECT_THAT(next, IsOk());
    absl::StatusOr<ValueNest> args = RegroupElement(*next);
    EXPECT_THAT(args, IsOk());
    absl::StatusOr<ValueNest> loss = (*strategy)->Run(step, *args);
    EXPECT_THAT(loss, IsOk());
    std::vector<float>& losses = out.losses.emplace_back();
    const Value& l = loss->leaf();
    if (l.is_tensor()) {  // one replica: returned unwrapped
      losses.push_back(l.tensor().values<float>()[0]);
    } else {
      for (const runtime::Tensor& c : l.components())
        losses.push_back(c.values<float>()[0]);
    }
  }
  EXPECT_EQ((*strategy)->num_traces(), 1);
  std::vector<float>& weights = out.weights;
  for (MirroredVariable* v : {vars.w1, vars.b1, vars.w2, vars.b2}) {
    absl::StatusOr<std::vector<runtime::Tensor>> parts = v->ReadComponents();
    EXPECT_THAT(parts, IsOk());
    // Every replica's component holds the same weights.
    for (const runtime::Tensor& part : *parts)
      EXPECT_EQ(part, (*parts)[0]) << v->name();
    for (float w : (*parts)[0].values<float>()) weights.push_back(w);
  }
  if (const auto* sim = dynamic_cast<const sim::SimBackend*>(backend.get())) {
    const sim::SimBackend::SimStats stats = sim->Stats();
    out.collectives = stats.collectives;
    out.late_starts = stats.late_starts;
  }
  return out;
}

struct Reference {
  std::vector<double> weights;
  std::vector<std::vector<double>> losses;  // [step][replica]
};

// Plain C++ single-device SGD on the global batch, in double precision, with
// the loss each of `replicas` replicas computes before step s's update on its
// rows: with one input worker TF 2.2 rebatches batch(B) to batch(B / N), and
// replica r gets rows [r * B / N, (r + 1) * B / N) of each global batch.
Reference ReferenceTraining(int replicas) {
  const MlpConfig c;
  auto init = [](int n, uint64_t seed, float scale) {
    std::vector<double> v(n);
    for (int i = 0; i < n; ++i) v[i] = scale * testing::MlpNoise(seed, i);
    return v;
  };
  std::vector<double> w1 = init(c.in * c.hidden, 1, 0.5f),
                      b1 = init(c.hidden, 2, 0.1f);
  std::vector<double> w2 = init(c.hidden, 3, 0.5f), b2 = init(1, 4, 0.1f);
  const int B = kGlobalBatch;
  const int per = B / replicas;
  Reference ref;
  for (int s = 0; s < kSteps; ++s) {
    runtime::Tensor xt = testing::MlpBatchX(s, B, c.in);
    runtime::Tensor tt = testing::MlpBatchT(s, B);
    std::vector<double> gw1(w1.size()), gb1(b1.size()), gw2(w2.size()), gb2(1);
    std::vector<double>& losses = ref.losses.emplace_back(replicas, 0.0);
    for (int i = 0; i < B; ++i) {
      std::vector<double> h(c.hidden);
      double y = b2[0];
      for (int j = 0; j < c.hidden; ++j) {
        double z = b1[j];
        for (int k = 0; k < c.in; ++k)
          z += xt.AsDouble(i * c.in + k) * w1[k * c.hidden + j];
        h[j] = std::tanh(z);
        y += h[j] * w2[j];
      }
      const double d = y - tt.AsDouble(i);
      losses[i / per] += d * d / per;
      const double dy = 2.0 * d / B;
      gb2[0] += dy;
      for (int j = 0; j < c.hidden; ++j) {
        gw2[j] += h[j] * dy;
        const double dz = dy * w2[j] * (1 - h[j] * h[j]);
        gb1[j] += dz;
        for (int k = 0; k < c.in; ++k)
          gw1[k * c.hidden + j] += xt.AsDouble(i * c.in + k) * dz;
      }
    }
    auto sgd = [&](std::vector<double>& w, const std::vector<double>& g) {
      for (size_t i = 0; i < w.size(); ++i) w[i] -= c.learning_rate * g[i];
    };
    sgd(w1, gw1);
    sgd(b1, gb1);
    sgd(w2, gw2);
    sgd(b2, gb2);
  }
  for (const auto* v : {&w1, &b1, &w2, &b2})
    ref.weights.insert(ref.weights.end(), v->begin(), v->end());
  return ref;
}

class DataParallelTest
    : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(DataParallelTest,
       TwentySgdStepsMatchSingleDeviceTrainingOnTheGlobalBatch) {
  const auto& [backend, replicas] = GetParam();
  const std::vector<float> single = Train("host", 1).weights;
  const Trained trained = Train(backend, replicas);
  const std::vector<float>& parallel = trained.weights;
  if (backend == "sim") {
    // Every gradient all-reduce of every step ran, none started late.
    EXPECT_GT(trained.collectives, 0);
    EXPECT_EQ(trained.late_starts, 0);
  }
  ASSERT_EQ(parallel.size(), single.size());
  for (size_t i = 0; i < single.size(); ++i) {
    const double b = single[i];
    EXPECT_LE(std::fabs(parallel[i] - b), 1e-5 * std::max(1.0, std::fabs(b)))
        << "weight " << i << ": " << parallel[i] << " vs single-device " << b;
  }
  // Training moved the weights.
  EXPECT_NE(single[0], 0.5f * testing::MlpNoise(1, 0));
}

TEST_P(DataParallelTest, TrainingMatchesAHandWrittenDoublePrecisionReference) {
  const auto& [backend, replicas] = GetParam();
  const std::vector<float> trained = Train(backend, replicas).weights;
  const std::vector<double> reference = ReferenceTraining(replicas).weights;
  ASSERT_EQ(trained.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    EXPECT_LE(std::fabs(trained[i] - reference[i]),
              1e-5 * std::max(1.0, std::fabs(reference[i])))
        << "weight " << i;
  }
}

TEST_P(DataParallelTest, EachReplicasLossIsThatOfExactlyItsRows) {
  const auto& [backend, replicas] = GetParam();
  const Trained trained = Train(backend, replicas);
  const Reference reference = ReferenceTraining(replicas);
  ASSERT_EQ(trained.losses.size(), static_cast<size_t>(kSteps));
  for (int s = 0; s < kSteps; ++s) {
    ASSERT_EQ(trained.losses[s].size(), static_cast<size_t>(replicas));
    for (int r = 0; r < replicas; ++r) {
      const double want = reference.losses[s][r];
      EXPECT_LE(std::fabs(trained.losses[s][r] - want),
                1e-5 * std::max(1.0, std::fabs(want)))
          << "step " << s << " replica " << r << ": " << trained.losses[s][r]
          << " vs its rows' " << want;
    }
  }
  // The rows differ, so the replicas' losses do too: a replica fed another
  // replica's rows would not match.
  if (replicas > 1) {
    EXPECT_GT(std::fabs(reference.losses[0][0] - reference.losses[0][1]), 1e-3);
  }
}

// Every backend gives exactly HostBackend's values (architecture.md "Values
// and time are separate"); "pjrt" (a real XLA runtime, which may sum in
// another order and evaluates tanh with its own approximation) within the
// f32 tolerance kPjrtF32Tolerance relative to max(1, |host|).
constexpr double kPjrtF32Tolerance = 1e-5;

TEST_P(DataParallelTest, ValuesAreBitIdenticalToHostBackend) {
  const auto& [backend, replicas] = GetParam();
  if (backend == "host") GTEST_SKIP() << "the reference itself";
  const Trained got = Train(backend, replicas);
  const Trained host = Train("host", replicas);
  ASSERT_EQ(got.weights.size(), host.weights.size());
  if (backend == "pjrt") {
    auto near = [](double a, double b) {
      return std::fabs(a - b) <= kPjrtF32Tolerance * std::max(1.0, std::fabs(b));
    };
    for (size_t i = 0; i < host.weights.size(); ++i) {
      EXPECT_TRUE(near(got.weights[i], host.weights[i]))
          << "weight " << i << ": " << got.weights[i] << " vs host "
          << host.weights[i];
    }
    ASSERT_EQ(got.losses.size(), host.losses.size());
    for (size_t s = 0; s < host.losses.size(); ++s) {
      ASSERT_EQ(got.losses[s].size(), host.losses[s].size());
      for (size_t r = 0; r < host.losses[s].size(); ++r) {
        EXPECT_TRUE(near(got.losses[s][r], host.losses[s][r]))
            << "step " << s << " replica " << r;
      }
    }
    return;
  }
  for (size_t i = 0; i < host.weights.size(); ++i) {
    EXPECT_EQ(got.weights[i], host.weights[i]) << "weight " << i;
  }
  EXPECT_EQ(got.losses, host.losses);
}

// The registered backends this test runs on.
std::vector<std::string> Backends() {
#ifdef TPUSIM_HAVE_PJRT
  return {"host", "sim", "pjrt"};
#else
  return {"host", "sim"};
#endif
}

INSTANTIATE_TEST_SUITE_P(Backends, DataParallelTest,
                         ::testing::Combine(::testing::ValuesIn(Backends()),
                                            ::testing::Values(1, 2, 4, 8)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::to_string(std::get<1>(info.param)) +
                                  "replicas";
                         });

}  // namespace
}  // namespace tpusim::strategy
