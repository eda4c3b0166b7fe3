// Tests of the tf.distribute context functions, scope(), reduce() context rules
// and experimental_local_results (spec (a), (e), (f)).

#include "strategy/distribute_lib.h"

#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/replica_context.h"
#include "tests/strategy/strategy_testing.h"

namespace tpusim::strategy {
namespace {

using runtime::Tensor;
using ::testing::ElementsAre;
using testing::F32;
using testing::F32s;
using ::testing::HasSubstr;
using testing::MakeStrategy;
using tpusim::testing::IsOk;
using tpusim::testing::StatusIs;

TEST(ContextTest, DefaultContextIsReplicaZeroOfOne) {
  ReplicaContext* ctx = GetReplicaContext();
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->replica_id_constant(), 0);
  EXPECT_EQ(ctx->num_replicas_in_sync(), 1);
  EXPECT_FALSE(ctx->is_tracing());
  EXPECT_TRUE(GetStrategy()->is_default());
  EXPECT_EQ(GetStrategy()->num_replicas_in_sync(), 1);
  EXPECT_FALSE(HasStrategy());
  EXPECT_FALSE(InCrossReplicaContext());
  EXPECT_EQ(GetCrossReplicaContext(), GetStrategy());
  EXPECT_THAT(
      ctx->ReplicaIdInSyncGroup(),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no program")));
}

TEST(ContextTest, ScopeMakesStrategyCurrentInCrossReplicaContext) {
  auto f = MakeStrategy();
  {
    absl::StatusOr<StrategyScope> scope = f.strategy->Scope();
    ASSERT_THAT(scope, IsOk());
    EXPECT_EQ(GetStrategy(), f.strategy.get());
    EXPECT_TRUE(HasStrategy());
    EXPECT_TRUE(InCrossReplicaContext());
    EXPECT_EQ(GetReplicaContext(), nullptr);
    EXPECT_EQ(GetCrossReplicaContext(), f.strategy.get());
    // Entering the same strategy's scope again nests.
    {
      absl::StatusOr<StrategyScope> again = f.strategy->Scope();
      ASSERT_THAT(again, IsOk());
      EXPECT_EQ(GetStrategy(), f.strategy.get());
    }
    EXPECT_EQ(GetStrategy(), f.strategy.get());
  }
  EXPECT_FALSE(HasStrategy());
  EXPECT_NE(GetReplicaContext(), nullptr);
}

TEST(ContextTest, EnteringAnotherStrategysScopeIsFailedPrecondition) {
  auto a = MakeStrategy();
  auto b = MakeStrategy();
  absl::StatusOr<StrategyScope> scope = a.strategy->Scope();
  ASSERT_THAT(scope, IsOk());
  EXPECT_THAT(
      b.strategy->Scope(),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("Mixing different tf.distribute.Strategy objects")));
  EXPECT_EQ(GetStrategy(), a.strategy.get());
}

TEST(ContextTest, ReplicaFunctionSeesItsReplicaContext) {
  auto f = MakeStrategy();
  bool checked = false;
  StepFunction step([&](ReplicaContext& ctx,
                        const TracedNest&) -> absl::StatusOr<TracedNest> {
    EXPECT_EQ(GetReplicaContext(), &ctx);
    EXPECT_EQ(ctx.num_replicas_in_sync(), 8);
    EXPECT_EQ(ctx.replica_id_constant(), std::nullopt);
    EXPECT_FALSE(InCrossReplicaContext());
    EXPECT_TRUE(HasStrategy());
    EXPECT_EQ(GetStrategy(), f.strategy.get());
    EXPECT_EQ(GetCrossReplicaContext(), nullptr);
    EXPECT_THAT(f.strategy->Scope(),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         HasSubstr("requires being in cross-replica context")));
    EXPECT_THAT(
        f.strategy->Reduce(ReduceOp::kSum, F32(1)),
        StatusIs(absl::StatusCode::kFailedPrecondition,
                 HasSubstr("Method requires being in cross-replica context")));
    checked = true;
    return TracedNest();
  });
  ASSERT_THAT(f.strategy->Run(step), IsOk());
  EXPECT_TRUE(checked);
  // Back in the default context.
  EXPECT_FALSE(HasStrategy());
}

// E5 of style-and-anchors.md.
TEST(StrategyReduceTest, ReduceSumAddsEveryReplica) {
  auto f = MakeStrategy("v3-8");
  PerReplica<Tensor> ids =
      PerReplica<Tensor>::FromFn(8, [](int r) { return F32(r); });
  absl::StatusOr<Tensor> sum =
      f.strategy->Reduce(ReduceOp::kSum, ids, std::nullopt);
  ASSERT_THAT(sum, IsOk());
  EXPECT_EQ(sum->scalar<float>(), 28.0f);
}

TEST(StrategyReduceTest, AcceptsCaseInsensitiveNamesAndRejectsMax) {
  auto f = MakeStrategy("v3-8");
  PerReplica<Tensor> ids =
      PerReplica<Tensor>::FromFn(8, [](int r) { return F32(r); });
  EXPECT_EQ(f.strategy->Reduce("sum", ids)->scalar<float>(), 28.0f);
  EXPECT_EQ(f.strategy->Reduce("Mean", ids)->scalar<float>(), 3.5f);
  EXPECT_THAT(f.strategy->Reduce("max", ids),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'MAX' is not a valid ReduceOp")));
}

TEST(StrategyReduceTest, WorksInDefaultAndCrossReplicaContextNotInOtherScope) {
  auto f = MakeStrategy();
  auto g = MakeStrategy();
  // Distinct values (1, 2, 4, ..., 128): every replica's contribution shows
  // in the sum, so a dropped or doubled replica changes it.
  PerReplica<Tensor> powers =
      PerReplica<Tensor>::FromFn(8, [](int r) { return F32(1 << r); });
  EXPECT_EQ(f.strategy->Reduce(ReduceOp::kSum, powers)->scalar<float>(),
            255.0f);
  {
    auto scope = f.strategy->Scope();
    EXPECT_EQ(f.strategy->Reduce(ReduceOp::kSum, powers)->scalar<float>(),
              255.0f);
    EXPECT_THAT(g.strategy->Reduce(ReduceOp::kSum, powers),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         HasSubstr("Mixing different")));
  }
}

TEST(StrategyReduceTest, NonDistributedRulesUseNumReplicasInSync) {
  auto f = MakeStrategy();
  EXPECT_THAT(f.strategy->Reduce(ReduceOp::kSum, F32(1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("non-DistributedValues")));
  EXPECT_EQ(
      f.strategy->Reduce(ReduceOp::kSum, F32s({1, 2}), 0)->scalar<float>(),
      24.0f);
  EXPECT_EQ(
      f.strategy->Reduce(ReduceOp::kMean, F32s({1, 2}), 0)->scalar<float>(),
      1.5f);
  absl::StatusOr<Value> zero =
      f.strategy->Reduce(ReduceOp::kSum, Value::Number(0));
  ASSERT_THAT(zero, IsOk());
  EXPECT_TRUE(zero->is_number());
  // The default strategy has one replica: SUM of a plain value is the value.
  EXPECT_EQ(
      DefaultStrategy::Get().Reduce(ReduceOp::kSum, F32(5))->scalar<float>(),
      5.0f);
}

TEST(LocalResultsTest, DistributedValuesGiveComponentsInReplicaOrder) {
  auto f = MakeStrategy();
  PerReplica<Tensor> ids =
      PerReplica<Tensor>::FromFn(8, [](int r) { return F32(r); });
  std::vector<Value> local = f.strategy->ExperimentalLocalResults(Value(ids));
  ASSERT_EQ(local.size(), 8u);
  for (int r = 0; r < 8; ++r) EXPECT_EQ(local[r], Value(F32(r)));
  std::vector<Value> mirrored = f.strategy->ExperimentalLocalResults(
      Value(Mirrored<Tensor>::Replicate(8, F32(3))));
  EXPECT_EQ(mirrored.size(), 8u);
}

TEST(LocalResultsTest, ListBecomesTupleAndAnythingElseA1Tuple) {
  auto f = MakeStrategy();
  std::vector<Value> list = {Value(F32(1)), Value(F32(2))};
  EXPECT_EQ(f.strategy->ExperimentalLocalResults(list), list);
  EXPECT_THAT(f.strategy->ExperimentalLocalResults(Value(F32(7))),
              ElementsAre(Value(F32(7))));
  EXPECT_THAT(f.strategy->ExperimentalLocalResults(Value::Number(3)),
              ElementsAre(Value::Number(3)));
  // A tuple (not a list) is "anything else": (value,).
  ValueNest tuple = ValueNest::Tuple({Value(F32(1)), Value(F32(2))});
  std::vector<ValueNest> local = f.strategy->ExperimentalLocalResults(tuple);
  ASSERT_EQ(local.size(), 1u);
  EXPECT_TRUE(local[0].is_tuple());
}

TEST(LocalResultsTest, Tf21DeviceStringSortQuirkIsAnOption) {
  TPUStrategyOptions options;
  options.sort_local_results_by_device_string = true;
  auto quirk = MakeStrategy("plain:12x1", options);
  auto normal = MakeStrategy("plain:12x1");
  PerReplica<Tensor> ids =
      PerReplica<Tensor>::FromFn(12, [](int r) { return F32(r); });
  std::vector<double> order;
  for (const Value& v : quirk.strategy->ExperimentalLocalResults(Value(ids))) {
    order.push_back(v.tensor().AsDouble(0));
  }
  // "task:10" and "task:11" sort before "task:2".
  EXPECT_THAT(order, ElementsAre(0, 1, 10, 11, 2, 3, 4, 5, 6, 7, 8, 9));
  order.clear();
  for (const Value& v : normal.strategy->ExperimentalLocalResults(Value(ids))) {
    order.push_back(v.tensor().AsDouble(0));
  }
  EXPECT_THAT(order, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
}

TEST(LocalResultsTest, MirroredVariableGivesComponentsOutsideAndItselfInside) {
  auto f = MakeStrategy();
  MirroredVariable* v = nullptr;
  {
    auto scope = f.strategy->Scope();
    v = *CreateVariable(F32(1), {"v"});
  }
  std::vector<Value> outside = f.strategy->ExperimentalLocalResults(Value(v));
  ASSERT_EQ(outside.size(), 8u);
  EXPECT_EQ(outside[3], Value(v, 3));
  size_t inside_size = 0;
  StepFunction step([&](ReplicaContext&,
                        const TracedNest&) -> absl::StatusOr<TracedNest> {
    std::vector<Value> inside = f.strategy->ExperimentalLocalResults(Value(v));
    inside_size = inside.size();
    EXPECT_EQ(inside[0], Value(v));
    return TracedNest();
  });
  ASSERT_THAT(f.strategy->Run(step), IsOk());
  EXPECT_EQ(inside_size, 1u);
}

}  // namespace
}  // namespace tpusim::strategy
