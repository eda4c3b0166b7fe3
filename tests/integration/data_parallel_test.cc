// Data-parallel equivalence: an MLP trained 20 SGD steps on N replicas
// (gradients all-reduced with MEAN) ends with the weights of single-device
// training on the global batch, within |a - b| <= 1e-5 * max(1, |b|).
// Parameterized over backends ("host" now; "sim" joins later by adding a
// factory to Backends()).

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
#include "strategy/cluster_resolver.h"
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

using BackendFactory = std::function<std::unique_ptr<runtime::Backend>(
    std::vector<runtime::DeviceDescription>)>;

const std::map<std::string, BackendFactory>& Backends() {
  static const auto* backends = new std::map<std::string, BackendFactory>{
      {"host",
       [](std::vector<runtime::DeviceDescription> devices)
           -> std::unique_ptr<runtime::Backend> {
         return std::make_unique<runtime::HostBackend>(std::move(devices));
       }},
  };
  return *backends;
}

// Final weights (w1, b1, w2, b2 flattened, component 0) after kSteps steps on
// `replicas`.
std::vector<float> Train(const std::string& backend_name, int replicas) {
  absl::StatusOr<TPUClusterResolver> resolver =
      TPUClusterResolver::CreatePlain(1, replicas);
  EXPECT_THAT(resolver, IsOk());
  std::unique_ptr<runtime::Backend> backend =
      Backends().at(backend_name)(resolver->devices());
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
  for (int s = 0; s < kSteps; ++s) {
    absl::StatusOr<ValueNest> args =
        testing::MlpStepArgs(s, kGlobalBatch, config.in, replicas);
    EXPECT_THAT(args, IsOk());
    absl::StatusOr<ValueNest> loss = (*strategy)->Run(step, *args);
    EXPECT_THAT(loss, IsOk());
  }
  EXPECT_EQ((*strategy)->num_traces(), 1);
  std::vector<float> weights;
  for (MirroredVariable* v : {vars.w1, vars.b1, vars.w2, vars.b2}) {
    absl::StatusOr<std::vector<runtime::Tensor>> parts = v->ReadComponents();
    EXPECT_THAT(parts, IsOk());
    // Every replica's component holds the same weights.
    for (const runtime::Tensor& part : *parts)
      EXPECT_EQ(part, (*parts)[0]) << v->name();
    for (float w : (*parts)[0].values<float>()) weights.push_back(w);
  }
  return weights;
}

// Plain C++ single-device SGD on the global batch, in double precision.
std::vector<double> ReferenceTraining() {
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
  for (int s = 0; s < kSteps; ++s) {
    runtime::Tensor xt = testing::MlpBatchX(s, B, c.in);
    runtime::Tensor tt = testing::MlpBatchT(s, B);
    std::vector<double> gw1(w1.size()), gb1(b1.size()), gw2(w2.size()), gb2(1);
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
      const double dy = 2.0 * (y - tt.AsDouble(i)) / B;
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
  std::vector<double> out;
  for (const auto* v : {&w1, &b1, &w2, &b2})
    out.insert(out.end(), v->begin(), v->end());
  return out;
}

class DataParallelTest
    : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(DataParallelTest,
       TwentySgdStepsMatchSingleDeviceTrainingOnTheGlobalBatch) {
  const auto& [backend, replicas] = GetParam();
  const std::vector<float> single = Train(backend, 1);
  const std::vector<float> parallel = Train(backend, replicas);
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
  const std::vector<float> trained = Train(backend, replicas);
  const std::vector<double> reference = ReferenceTraining();
  ASSERT_EQ(trained.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    EXPECT_LE(std::fabs(trained[i] - reference[i]),
              1e-5 * std::max(1.0, std::fabs(reference[i])))
        << "weight " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, DataParallelTest,
                         ::testing::Combine(::testing::Values("host"),
                                            ::testing::Values(1, 2, 8)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::to_string(std::get<1>(info.param)) +
                                  "replicas";
                         });

}  // namespace
}  // namespace tpusim::strategy
