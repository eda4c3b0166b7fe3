// Tests of variables created under a strategy: mirrored components and names,
// cross-replica vs replica-context updates, sync-on-read aggregation (spec (a)
// "scope() and variable creation").

#include "strategy/variables.h"

#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/distribute_lib.h"
#include "tests/strategy/strategy_testing.h"

namespace tpusim::strategy {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using ::testing::ElementsAre;
using testing::F32;
using testing::F32s;
using ::testing::HasSubstr;
using testing::MakeStrategy;
using testing::ReplicaScalars;
using testing::Values;
using tpusim::testing::IsOk;
using tpusim::testing::StatusIs;

std::vector<double> ComponentScalars(const MirroredVariable& v) {
  std::vector<double> out;
  absl::StatusOr<std::vector<Tensor>> parts = v.ReadComponents();
  TPUSIM_CHECK(parts.ok()) << parts.status();
  for (const Tensor& t : *parts) out.push_back(t.AsDouble(0));
  return out;
}

TEST(VariablesTest, VariableInScopeIsMirroredWithTfNames) {
  auto f = MakeStrategy();
  auto scope = f.strategy->Scope();
  ASSERT_THAT(scope, IsOk());
  absl::StatusOr<MirroredVariable*> v = CreateVariable(F32s({1, 2}), {"v"});
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ((*v)->strategy(), f.strategy.get());
  EXPECT_EQ((*v)->num_components(), 8);
  EXPECT_EQ((*v)->name(), "v:0");
  EXPECT_EQ((*v)->component_name(0), "v:0");
  EXPECT_EQ((*v)->component_name(1), "v/replica_1:0");
  EXPECT_EQ((*v)->component_name(7), "v/replica_7:0");
  for (int i = 0; i < 8; ++i) {
    EXPECT_THAT(Values(*(*v)->ReadComponent(i)), ElementsAre(1, 2)) << i;
  }
  EXPECT_THAT((*v)->ReadComponent(8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("component 8 out of range [0, 8)")));
  EXPECT_THAT(f.strategy->variables(), ElementsAre(*v));
}

TEST(VariablesTest, VariableOutsideAnyScopeBelongsToTheDefaultStrategy) {
  absl::StatusOr<MirroredVariable*> v = CreateVariable(F32(3), {"plain"});
  ASSERT_THAT(v, IsOk());
  EXPECT_TRUE((*v)->strategy()->is_default());
  EXPECT_EQ((*v)->num_components(), 1);
  EXPECT_EQ((*v)->Read()->scalar<float>(), 3.0f);
  ASSERT_THAT((*v)->AssignAdd(F32(2)), IsOk());
  EXPECT_EQ((*v)->Read()->scalar<float>(), 5.0f);
}

TEST(VariablesTest, CrossReplicaAssignUpdatesEachComponent) {
  auto f = MakeStrategy("plain:1x4");
  auto scope = f.strategy->Scope();
  MirroredVariable* v = *CreateVariable(F32(0), {"v"});
  ASSERT_THAT(v->Assign(F32(5)), IsOk());
  EXPECT_THAT(ComponentScalars(*v), ElementsAre(5, 5, 5, 5));
  // Mirrored args: the per-device value goes to each component.
  ASSERT_THAT(v->Assign(Mirrored<Tensor>({F32(1), F32(2), F32(3), F32(4)})),
              IsOk());
  EXPECT_THAT(ComponentScalars(*v), ElementsAre(1, 2, 3, 4));
  ASSERT_THAT(v->AssignAdd(F32(10)), IsOk());
  EXPECT_THAT(ComponentScalars(*v), ElementsAre(11, 12, 13, 14));
  ASSERT_THAT(v->AssignSub(Value::Number(1)), IsOk());
  EXPECT_THAT(ComponentScalars(*v), ElementsAre(10, 11, 12, 13));
  EXPECT_EQ(v->Read()->scalar<float>(), 10.0f);  // read_value: component 0
  EXPECT_THAT(
      v->Assign(PerReplica<Tensor>({F32(1), F32(2), F32(3), F32(4)})),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("Expected value to be mirrored across replicas")));
  EXPECT_THAT(v->Assign(F32s({1, 2})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("float32[2]"), HasSubstr("float32[]"))));
}

TEST(VariablesTest, ReplicaContextAssignAppliesOnceToTheLogicalVariable) {
  auto f = MakeStrategy();
  MirroredVariable* v = nullptr;
  {
    auto scope = f.strategy->Scope();
    v = *CreateVariable(F32(1), {"counter"});
  }
  StepFunction step([&](ReplicaContext& ctx,
                        const TracedNest&) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue one, ctx.ScalarConstant(1));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue updated,
                            ctx.AssignAddVariable(*v, one));
    // A host-side assign inside a replica function is refused.
    EXPECT_THAT(v->Assign(F32(0)),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         HasSubstr("ReplicaContext::AssignVariable")));
    return TracedNest(updated);
  });
  absl::StatusOr<ValueNest> out = f.strategy->Run(step);
  ASSERT_THAT(out, IsOk());
  // +1 once per logical variable, not +8.
  EXPECT_THAT(ReplicaScalars(out->leaf()), ElementsAre(2, 2, 2, 2, 2, 2, 2, 2));
  EXPECT_THAT(ComponentScalars(*v), ElementsAre(2, 2, 2, 2, 2, 2, 2, 2));
  ASSERT_THAT(f.strategy->Run(step), IsOk());
  EXPECT_EQ(v->Read()->scalar<float>(), 3.0f);
  // Reduce of a mirrored variable reduces its components.
  EXPECT_EQ(
      f.strategy->Reduce(ReduceOp::kSum, Value(v))->tensor().scalar<float>(),
      24.0f);
}

TEST(VariablesTest, ReadAndAssignInsideTheProgramCheckShapesAndOwnership) {
  auto f = MakeStrategy("plain:1x2");
  MirroredVariable* v = nullptr;
  {
    auto scope = f.strategy->Scope();
    v = *CreateVariable(F32s({1, 2}), {"w"});
  }
  MirroredVariable* foreign =
      *CreateVariable(F32(0), {"foreign"});  // default strategy
  absl::Status wrong_shape, wrong_owner;
  StepFunction step([&](ReplicaContext& ctx,
                        const TracedNest&) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue scalar, ctx.ScalarConstant(1));
    wrong_shape = ctx.AssignVariable(*v, scalar).status();
    wrong_owner = ctx.ReadVariable(*foreign).status();
    TPUSIM_ASSIGN_OR_RETURN(TracedValue w, ctx.ReadVariable(*v));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue twice, ctx.Add(w, w));
    TPUSIM_RETURN_IF_ERROR(ctx.AssignVariable(*v, twice).status());
    return TracedNest(w);
  });
  absl::StatusOr<ValueNest> out = f.strategy->Run(step);
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(wrong_shape,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("w:0")));
  EXPECT_THAT(
      wrong_owner,
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("foreign:0 was created under DefaultStrategy")));
  EXPECT_THAT(Values(*v->Read()), ElementsAre(2, 4));
}

TEST(VariablesTest, SyncOnReadSumAggregatesOnCrossReplicaRead) {
  auto f = MakeStrategy("plain:1x4");
  MirroredVariable* v = nullptr;
  {
    auto scope = f.strategy->Scope();
    VariableOptions options;
    options.name = "total";
    options.synchronization = VariableSynchronization::kOnRead;
    options.aggregation = VariableAggregation::kSum;
    v = *CreateVariable(F32(0), options);
  }
  EXPECT_TRUE(v->is_sync_on_read());
  // In replica context each replica writes its local component.
  StepFunction step([&](ReplicaContext& ctx,
                        const TracedNest&) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue id, ctx.ReplicaIdInSyncGroup());
    TPUSIM_ASSIGN_OR_RETURN(TracedValue idf, ctx.Cast(id, DType::kF32));
    TPUSIM_RETURN_IF_ERROR(ctx.AssignVariable(*v, idf).status());
    return TracedNest();
  });
  ASSERT_THAT(f.strategy->Run(step), IsOk());
  EXPECT_THAT(ComponentScalars(*v), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(v->Read()->scalar<float>(), 6.0f);
  // A cross-replica assign of a SUM variable stores value / N in each
  // component.
  ASSERT_THAT(v->Assign(F32(8)), IsOk());
  EXPECT_THAT(ComponentScalars(*v), ElementsAre(2, 2, 2, 2));
  EXPECT_EQ(v->Read()->scalar<float>(), 8.0f);
}

TEST(VariablesTest, SyncOnReadMeanOnlyFirstAndNone) {
  auto f = MakeStrategy("plain:1x2");
  auto scope = f.strategy->Scope();
  auto make = [](const std::string& name, VariableAggregation aggregation) {
    VariableOptions options;
    options.name = name;
    options.synchronization = VariableSynchronization::kOnRead;
    options.aggregation = aggregation;
    return *CreateVariable(F32(0), options);
  };
  MirroredVariable* mean = make("mean", VariableAggregation::kMean);
  MirroredVariable* first =
      make("first", VariableAggregation::kOnlyFirstReplica);
  MirroredVariable* none = make("none", VariableAggregation::kNone);
  Mirrored<Tensor> parts({F32(1), F32(4)});
  ASSERT_THAT(mean->Assign(parts), IsOk());
  ASSERT_THAT(first->Assign(parts), IsOk());
  ASSERT_THAT(none->Assign(parts), IsOk());
  EXPECT_EQ(mean->Read()->scalar<float>(), 2.5f);
  EXPECT_EQ(first->Read()->scalar<float>(), 1.0f);
  EXPECT_THAT(
      none->Read(),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("Could not convert from `tf.VariableAggregation` NONE")));
}

// An abstract initial value (shape, no data) makes an abstract variable, as
// pod-scale simulated workloads use: its components are abstract too.
TEST(VariablesTest, AbstractInitialValueMakesAnAbstractVariable) {
  auto f = MakeStrategy("plain:1x2");
  auto scope = f.strategy->Scope();
  absl::StatusOr<MirroredVariable*> v =
      CreateVariable(Tensor::Abstract(DType::kF32, Shape({2})), {"a"});
  ASSERT_THAT(v, IsOk());
  absl::StatusOr<std::vector<Tensor>> parts = (*v)->ReadComponents();
  ASSERT_THAT(parts, IsOk());
  ASSERT_EQ(parts->size(), 2u);
  for (const Tensor& t : *parts) {
    EXPECT_FALSE(t.has_data());
    EXPECT_EQ(t.shape(), Shape({2}));
  }
}

TEST(VariablesTest, BadInitialValuesAreInvalidArgument) {
  auto f = MakeStrategy("plain:1x2");
  auto scope = f.strategy->Scope();
  EXPECT_THAT(
      CreateVariable(Tensor::Scalar<std::string>("s"), {"s"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("string")));
  EXPECT_THAT(CreateVariable(F32(1), {""}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name")));
}

TEST(VariablesTest, VariableCreatedInsideAReplicaFunctionIsMirrored) {
  auto f = MakeStrategy("plain:1x2");
  MirroredVariable* v = nullptr;
  StepFunction step([&](ReplicaContext& ctx,
                        const TracedNest&) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(v, CreateVariable(F32(5), {"inner"}));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue read, ctx.ReadVariable(*v));
    return TracedNest(read);
  });
  absl::StatusOr<ValueNest> out = f.strategy->Run(step);
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(v->strategy(), f.strategy.get());
  EXPECT_EQ(v->num_components(), 2);
  EXPECT_THAT(ReplicaScalars(out->leaf()), ElementsAre(5, 5));
}

TEST(VariablesTest, VariablesCanBeRunArguments) {
  auto f = MakeStrategy("plain:1x2");
  MirroredVariable* v = nullptr;
  {
    auto scope = f.strategy->Scope();
    v = *CreateVariable(F32(7), {"v"});
  }
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue y, ctx.Add(args.children()[0].leaf(),
                                                   args.children()[0].leaf()));
    return TracedNest(y);
  });
  absl::StatusOr<ValueNest> out =
      f.strategy->Run(step, ValueNest::Tuple({Value(v)}));
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(ReplicaScalars(out->leaf()), ElementsAre(14, 14));
  // A single component (from local results) is a plain value broadcast to every
  // replica.
  ASSERT_THAT(v->Assign(Mirrored<Tensor>({F32(1), F32(2)})), IsOk());
  out = f.strategy->Run(step, ValueNest::Tuple({Value(v, 1)}));
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(out->leaf(), Value(F32(4)));
}

}  // namespace
}  // namespace tpusim::strategy
