// TPUStrategy features on every registered backend (scenarios/
// backend_registry.h), with exact values: a partial final batch with MEAN
// reduce, steps_per_run, model parallelism with 2 cores per replica, and an
// explicit device assignment. On "sim" the same values come back, and the
// simulated profile places the work on the assigned devices.

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenarios/backend_registry.h"
#include "sim/sim_backend.h"
#include "strategy/cluster_resolver.h"
#include "strategy/device_assignment.h"
#include "strategy/tpu_strategy.h"
#include "tests/strategy/strategy_testing.h"

namespace tpusim::strategy {
namespace {

using runtime::Tensor;
using ::testing::ElementsAre;
using testing::F32;
using testing::F32s;
using testing::ReplicaScalars;
using testing::Values;
using tpusim::testing::IsOk;

struct Harness {
  std::unique_ptr<runtime::Backend> backend;
  std::unique_ptr<TPUClusterResolver> resolver;
  std::unique_ptr<TPUStrategy> strategy;
};

Harness Make(const std::string& backend, const std::string& slice,
           TPUStrategyOptions options = {},
           const std::vector<int>& da_shape = {}, int da_replicas = 0,
           const DeviceAssignment::CoreAssignment& cores = {}) {
  Harness s;
  auto b = scenarios::CreateBackend(backend, slice);
  EXPECT_THAT(b, IsOk());
  s.backend = std::move(*b);
  auto r = TPUClusterResolver::Create(*s.backend, slice);
  EXPECT_THAT(r, IsOk());
  s.resolver = std::make_unique<TPUClusterResolver>(*std::move(r));
  if (!da_shape.empty()) {
    auto da = DeviceAssignment::Build(s.resolver->topology(), da_shape, {},
                                      da_replicas);
    EXPECT_THAT(da, IsOk());
    options.device_assignment = *da;
  } else if (!cores.empty()) {
    auto da = DeviceAssignment::Create(s.resolver->topology(), cores);
    EXPECT_THAT(da, IsOk());
    options.device_assignment = *da;
  }
  auto st = TPUStrategy::Create(*s.backend, *s.resolver, std::move(options));
  EXPECT_THAT(st, IsOk());
  s.strategy = std::move(*st);
  return s;
}

TracedValue Arg(const TracedNest& args, int i) {
  return args.children()[i].leaf();
}

class StrategyFeaturesTest : public ::testing::TestWithParam<std::string> {};

// range(10).batch(8) on 2 replicas: [0..3] / [4..7], then [8, 9] / [] (an
// empty dummy batch); reduce(axis=0) of the squares stays exact.
TEST_P(StrategyFeaturesTest, PartialFinalBatchWithMeanReduceIsExact) {
  Harness s = Make(GetParam(), "v5litepod-2");
  auto element = [](std::vector<float> a, std::vector<float> b) {
    return PerReplica<ReplicaElement>({ReplicaElement(F32s(std::move(a))),
                                       ReplicaElement(F32s(std::move(b)))});
  };
  VectorInputIterator it(
      {element({0, 1, 2, 3}, {4, 5, 6, 7}), element({8, 9}, {})});
  StepFunction square([](ReplicaContext& ctx, const TracedNest& args)
                          -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue y, ctx.Mul(Arg(args, 0), Arg(args, 0)));
    return TracedNest(y);
  });
  auto step1 = s.strategy->ExperimentalRun(square, &it);
  ASSERT_THAT(step1, IsOk());
  EXPECT_EQ(s.strategy->Reduce(ReduceOp::kMean, step1->leaf(), 0)
                ->tensor()
                .AsDouble(0),
            17.5);
  auto step2 = s.strategy->ExperimentalRun(square, &it);
  ASSERT_THAT(step2, IsOk());
  EXPECT_THAT(Values(step2->leaf().components()[0]), ElementsAre(64, 81));
  EXPECT_EQ(step2->leaf().components()[1].shape(), runtime::Shape({0}));
  EXPECT_EQ(s.strategy->Reduce(ReduceOp::kMean, step2->leaf(), 0)
                ->tensor()
                .AsDouble(0),
            72.5);
  EXPECT_EQ(s.strategy->Reduce(ReduceOp::kSum, step2->leaf(), 0)
                ->tensor()
                .AsDouble(0),
            145.0);
}

// steps_per_run = 4, 3 iterations: total = (0+1) + (10+11) + (20+21) = 63 in
// one device call.
TEST_P(StrategyFeaturesTest, StepsPerRunRunsTheLoopInOneCall) {
  TPUStrategyOptions options;
  options.steps_per_run = 4;
  Harness s = Make(GetParam(), "v5litepod-2", options);
  MirroredVariable* total = nullptr;
  {
    auto scope = s.strategy->Scope();
    total = *CreateVariable(F32(0), {"total"});
  }
  std::vector<PerReplica<ReplicaElement>> steps;
  for (int st = 0; st < 5; ++st) {
    steps.push_back(PerReplica<ReplicaElement>::FromFn(
        2, [&](int r) { return ReplicaElement(F32(10.f * st + r)); }));
  }
  VectorInputIterator it(std::move(steps));
  MultiStepFn body = [total](ReplicaContext& ctx, MultiStepContext& ms,
                             const TracedNest& inputs) -> absl::Status {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue sum,
                            ctx.AllReduce(ReduceOp::kSum, inputs.leaf()));
    TPUSIM_RETURN_IF_ERROR(ctx.AssignAddVariable(*total, sum).status());
    return ms.SetLastStepOutput("x", inputs.leaf());
  };
  const int64_t before = s.backend->CollectProfile()->devices(0).executions();
  auto r = s.strategy->ExperimentalRunStepsOnIterator(body, it, 3);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->steps_run, 3);
  EXPECT_EQ(s.backend->CollectProfile()->devices(0).executions() - before, 1);
  EXPECT_EQ(total->Read()->scalar<float>(), 63.0f);
  EXPECT_THAT(ReplicaScalars(r->last_step_outputs.at("x")),
              ElementsAre(20, 21));
}

// 4 replicas x 2 logical cores on v3-8 (computation shape 1x1x2): core 1
// doubles the input, core 0 adds one.
TEST_P(StrategyFeaturesTest, ModelParallelismWithTwoCoresPerReplica) {
  Harness s = Make(GetParam(), "v3-8", {}, {1, 1, 2}, 4);
  EXPECT_EQ(s.strategy->num_cores_per_replica(), 2);
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TracedValue doubled;
    {
      TPUSIM_ASSIGN_OR_RETURN(LogicalCoreScope on_core1,
                              ctx.AssignToLogicalCore(1));
      TPUSIM_ASSIGN_OR_RETURN(doubled, ctx.Add(Arg(args, 0), Arg(args, 0)));
    }
    TPUSIM_ASSIGN_OR_RETURN(TracedValue one, ctx.ScalarConstant(1));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue out, ctx.Add(doubled, one));
    return TracedNest(out);
  });
  auto ids = PerReplica<Tensor>::FromFn(4, [](int r) { return F32(r); });
  auto out = s.strategy->Run(step, ValueNest::Tuple({Value(ids)}));
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(ReplicaScalars(out->leaf()), ElementsAre(1, 3, 5, 7));
  auto profile = s.backend->CollectProfile();
  ASSERT_THAT(profile, IsOk());
  const int core1 = s.strategy->input_workers().replica_device_ids[0][1];
  EXPECT_GT(profile->devices(core1).cross_core_bytes(), 0);
}

// The same model-parallel replicas with a cross-replica all-reduce on core 0:
// every replica gets (0+1) + (2+1) + (4+1) + (6+1) = 16, and on "sim" no
// collective member starts before the network's clock (SimStats::late_starts
// counts the walk's causality errors; they are started late, never dropped).
TEST_P(StrategyFeaturesTest, ModelParallelAllReduceStartsNoCollectiveLate) {
  Harness s = Make(GetParam(), "v3-8", {}, {1, 1, 2}, 4);
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TracedValue doubled;
    {
      TPUSIM_ASSIGN_OR_RETURN(LogicalCoreScope on_core1,
                              ctx.AssignToLogicalCore(1));
      TPUSIM_ASSIGN_OR_RETURN(doubled, ctx.Add(Arg(args, 0), Arg(args, 0)));
    }
    TPUSIM_ASSIGN_OR_RETURN(TracedValue one, ctx.ScalarConstant(1));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue out, ctx.Add(doubled, one));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue sum,
                            ctx.AllReduce(ReduceOp::kSum, out));
    return TracedNest(sum);
  });
  auto ids = PerReplica<Tensor>::FromFn(4, [](int r) { return F32(r); });
  for (int call = 0; call < 3; ++call) {
    auto out = s.strategy->Run(step, ValueNest::Tuple({Value(ids)}));
    ASSERT_THAT(out, IsOk());
    EXPECT_THAT(ReplicaScalars(out->leaf()), ElementsAre(16, 16, 16, 16));
  }
  if (GetParam() == "sim") {
    const auto* sim = dynamic_cast<const sim::SimBackend*>(s.backend.get());
    ASSERT_NE(sim, nullptr);
    const sim::SimBackend::SimStats stats = sim->Stats();
    EXPECT_EQ(stats.collectives, 3 * 4);
    EXPECT_EQ(stats.late_starts, 0);
  }
}

// Two replicas placed by hand on devices (1,1,1) and (1,0,0) of v3-8: the
// values follow the replicas, and on "sim" only those devices run kernels.
TEST_P(StrategyFeaturesTest, ExplicitDeviceAssignmentPlacesTheReplicas) {
  Harness s = Make(GetParam(), "v3-8", {}, {}, 0, {{{1, 1, 1}}, {{1, 0, 0}}});
  const auto& ids = s.strategy->input_workers().replica_device_ids;
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0][0], 7);
  EXPECT_EQ(ids[1][0], 2);
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue id, ctx.ReplicaIdInSyncGroup());
    TPUSIM_ASSIGN_OR_RETURN(TracedValue f, ctx.Cast(id, runtime::DType::kF32));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue y, ctx.Mul(Arg(args, 0), f));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue sum, ctx.AllReduce(ReduceOp::kSum, y));
    return TracedNest(sum);
  });
  auto xs = PerReplica<Tensor>::FromFn(2, [](int r) { return F32(10.f + r); });
  auto out = s.strategy->Run(step, ValueNest::Tuple({Value(xs)}));
  ASSERT_THAT(out, IsOk());
  // replica 0: 10 * 0, replica 1: 11 * 1; the sum is 11 on both.
  const Value& leaf = out->leaf();
  const std::vector<double> got =
      leaf.is_tensor() ? std::vector<double>{leaf.tensor().AsDouble(0)}
                       : ReplicaScalars(leaf);
  for (double v : got) EXPECT_EQ(v, 11.0);
  if (GetParam() == "sim") {
    auto profile = s.backend->CollectProfile();
    ASSERT_THAT(profile, IsOk());
    std::vector<int> devices_with_kernels;
    for (const auto& span : profile->spans()) {
      if (span.device_id() >= 0 && span.category() != "host" &&
          span.category() != "infeed" &&
          (devices_with_kernels.empty() ||
           std::find(devices_with_kernels.begin(), devices_with_kernels.end(),
                     span.device_id()) == devices_with_kernels.end())) {
        devices_with_kernels.push_back(span.device_id());
      }
    }
    std::sort(devices_with_kernels.begin(), devices_with_kernels.end());
    EXPECT_THAT(devices_with_kernels, ElementsAre(2, 7));
  }
}


TEST(BackendRegistryTest, KnowsHostAndSimAndNamesAnUnknownOne) {
#ifdef TPUSIM_HAVE_PJRT
  EXPECT_THAT(scenarios::BackendNames(), ElementsAre("host", "sim", "pjrt"));
  EXPECT_THAT(scenarios::CreateBackend("tpu", "v3-8"),
              tpusim::testing::StatusIs(
                  absl::StatusCode::kInvalidArgument,
                  "backend \"tpu\" is unknown; known backends: host, sim, pjrt"));
  scenarios::BackendOptions missing;
  missing.pjrt_plugin = "/nonexistent/libtpu.so";
  EXPECT_THAT(scenarios::CreateBackend("pjrt", "v3-8", missing),
              tpusim::testing::StatusIs(
                  absl::StatusCode::kNotFound,
                  ::testing::HasSubstr("\"/nonexistent/libtpu.so\" does not exist")));
#else
  EXPECT_THAT(scenarios::BackendNames(), ElementsAre("host", "sim"));
  EXPECT_THAT(scenarios::CreateBackend("pjrt", "v3-8"),
              tpusim::testing::StatusIs(
                  absl::StatusCode::kInvalidArgument,
                  "backend \"pjrt\" is unknown; known backends: host, sim"));
#endif
  EXPECT_THAT(scenarios::CreateBackend("host", "v3-7"),
              tpusim::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                        ::testing::HasSubstr("v3-7")));
}

INSTANTIATE_TEST_SUITE_P(Backends, StrategyFeaturesTest,
#ifdef TPUSIM_HAVE_PJRT
                         ::testing::Values("host", "sim", "pjrt"),
#else
                         ::testing::Values("host", "sim"),
#endif
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tpusim::strategy
