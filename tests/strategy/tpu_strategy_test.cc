// Tests of TPUStrategy construction and run / experimental_run (spec (a), (d),
// (h), (j), (l)) and of the ReplicaContext operations used inside replica
// functions.

#include "strategy/tpu_strategy.h"

#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/device_assignment.h"
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

TracedValue Arg(const TracedNest& args, int i) {
  return args.children()[i].leaf();
}

PerReplica<Tensor> Ids(int n) {
  return PerReplica<Tensor>::FromFn(n, [](int r) { return F32(r); });
}

TEST(TPUStrategyTest, DefaultsFromTheResolver) {
  auto f = MakeStrategy("v3-32");
  EXPECT_EQ(f.strategy->num_replicas_in_sync(), 32);
  EXPECT_EQ(f.strategy->num_hosts(), 4);
  EXPECT_EQ(f.strategy->num_replicas_per_host(), 8);
  EXPECT_EQ(f.strategy->steps_per_run(), 1);
  EXPECT_EQ(f.strategy->num_cores_per_replica(), 1);
  EXPECT_EQ(f.strategy->worker_devices()[9],
            "/job:worker/replica:0/task:1/device:TPU:1");
  EXPECT_EQ(f.strategy->parameter_devices(), f.strategy->worker_devices());
  EXPECT_FALSE(f.strategy->experimental_between_graph());
  EXPECT_TRUE(f.strategy->experimental_should_init());
  EXPECT_TRUE(f.strategy->require_static_shapes());
}

TEST(TPUStrategyTest, NoResolverMeansTheBackendsDevicesAsTheyAre) {
  runtime::HostBackend backend(4);
  absl::StatusOr<std::unique_ptr<TPUStrategy>> strategy =
      TPUStrategy::Create(backend);
  ASSERT_THAT(strategy, IsOk());
  EXPECT_EQ((*strategy)->num_replicas_in_sync(), 4);
  EXPECT_EQ((*strategy)->worker_devices()[3],
            "/job:worker/replica:0/task:0/device:TPU:3");
}

TEST(TPUStrategyTest, RejectsBadStepsPerRunAndForeignDeviceAssignment) {
  auto f = MakeStrategy("v3-8");
  TPUStrategyOptions bad;
  bad.steps_per_run = 0;
  EXPECT_THAT(TPUStrategy::Create(*f.backend, *f.resolver, bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("steps_per_run = 0")));
  absl::StatusOr<TPUClusterResolver> big = TPUClusterResolver::Create("v3-32");
  ASSERT_THAT(big, IsOk());
  TPUStrategyOptions foreign;
  foreign.device_assignment =
      *DeviceAssignment::Build(big->topology(), {}, {}, 16);
  EXPECT_THAT(TPUStrategy::Create(*f.backend, *f.resolver, foreign),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("mesh shape (4, 4, 2)")));
}

TEST(TPUStrategyTest, BackendWithTooFewDevicesIsInvalidArgument) {
  runtime::HostBackend small(4);
  absl::StatusOr<TPUClusterResolver> resolver =
      TPUClusterResolver::Create("v3-8");
  ASSERT_THAT(resolver, IsOk());
  EXPECT_THAT(
      TPUStrategy::Create(small, *resolver),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has 4 devices")));
}

TEST(TPUStrategyTest, DeviceAssignmentSetsReplicasAndReplicaDevices) {
  auto plain = MakeStrategy("v3-8");
  TPUStrategyOptions options;
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(plain.resolver->topology(), {}, {}, 4);
  ASSERT_THAT(da, IsOk());
  options.device_assignment = *da;
  auto f = MakeStrategy("v3-8", options);
  EXPECT_EQ(f.strategy->num_replicas_in_sync(), 4);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(f.strategy->worker_devices()[r],
              absl::StrCat("/job:worker/replica:0/task:0/device:TPU:",
                           *da->TpuOrdinal(r, 0)));
  }
  // Spec (j) table: 4 replicas on [2,2,2] take (0,0,0),(0,0,1),(0,1,0),(0,1,1).
  EXPECT_EQ(da->coordinates(3, 0), (std::vector<int>{0, 1, 1}));
  // Replica ids inside run follow the assignment's replicas.
  StepFunction step(
      [](ReplicaContext& ctx, const TracedNest&) -> absl::StatusOr<TracedNest> {
        TPUSIM_ASSIGN_OR_RETURN(TracedValue id, ctx.ReplicaIdInSyncGroup());
        return TracedNest(id);
      });
  absl::StatusOr<ValueNest> out = f.strategy->Run(step);
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(ReplicaScalars(out->leaf()), ElementsAre(0, 1, 2, 3));
}

TEST(RunTest, ArgsMustBeASequence) {
  auto f = MakeStrategy();
  StepFunction step(
      [](ReplicaContext&, const TracedNest&) -> absl::StatusOr<TracedNest> {
        return TracedNest();
      });
  EXPECT_THAT(f.strategy->Run(step, ValueNest(Value(F32(1)))),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("`args` must be a list or tuple")));
  EXPECT_THAT(
      f.strategy->Run(step, ValueNest::Dict({{"a", ValueNest(Value(F32(1)))}})),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("{a: *}")));
}

TEST(RunTest, ReplicaIdIsAnI32ScalarPerReplica) {
  auto f = MakeStrategy();
  StepFunction step(
      [](ReplicaContext& ctx, const TracedNest&) -> absl::StatusOr<TracedNest> {
        TPUSIM_ASSIGN_OR_RETURN(TracedValue id, ctx.ReplicaIdInSyncGroup());
        EXPECT_EQ(ctx.TypeOf(id)->ToString(), "i32[]");
        return TracedNest(id);
      });
  absl::StatusOr<ValueNest> out = f.strategy->Run(step);
  ASSERT_THAT(out, IsOk());
  ASSERT_TRUE(out->leaf().is_per_replica());
  EXPECT_EQ(out->leaf().components()[5].dtype(), DType::kI32);
  EXPECT_THAT(ReplicaScalars(out->leaf()), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
}

TEST(RunTest, PerReplicaUnwrappedAndPlainValuesBroadcast) {
  auto f = MakeStrategy();
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue s, ctx.Add(Arg(args, 0), Arg(args, 1)));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue t, ctx.Mul(s, Arg(args, 2)));
    return TracedNest(t);
  });
  absl::StatusOr<ValueNest> out = f.strategy->Run(
      step, ValueNest::Tuple({Value(Ids(8)), Value(F32(10)),
                              Value(Mirrored<Tensor>::Replicate(8, F32(2)))}));
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(ReplicaScalars(out->leaf()),
              ElementsAre(20, 22, 24, 26, 28, 30, 32, 34));
}

TEST(RunTest, NumberArgumentsBecomeConstants) {
  auto f = MakeStrategy();
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue s, ctx.Add(Arg(args, 0), Arg(args, 1)));
    return TracedNest(s);
  });
  absl::StatusOr<ValueNest> out = f.strategy->Run(
      step, ValueNest::Tuple({Value(Ids(8)), Value::Number(0.5)}));
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(ReplicaScalars(out->leaf()),
              ElementsAre(0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5));
}

TEST(RunTest, IntegerNumberArgumentsBecomeInt32LikeAPythonInt) {
  // TF converts a Python int argument to an int32 constant (int64 when it
  // does not fit), a Python float to float32. Added to int32 per-replica ids
  // and summed across replicas with axis=[], the int stays int32.
  auto f = MakeStrategy();
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue s, ctx.Add(Arg(args, 0), Arg(args, 1)));
    return TracedNest::Tuple({TracedNest(s), TracedNest(Arg(args, 1))});
  });
  const PerReplica<Tensor> ids = PerReplica<Tensor>::FromFn(
      8, [](int r) { return Tensor::Scalar<int32_t>(10 * r); });
  absl::StatusOr<ValueNest> out =
      f.strategy->Run(step, ValueNest::Tuple({Value(ids), Value::Number(3)}));
  ASSERT_THAT(out, IsOk());
  const Value& echoed = out->children()[1].leaf();
  ASSERT_TRUE(echoed.is_tensor());
  EXPECT_EQ(echoed.tensor().dtype(), DType::kI32);
  EXPECT_EQ(echoed.tensor().AsInt64(0), 3);
  absl::StatusOr<Value> sum = f.strategy->Reduce(
      ReduceOp::kSum, out->children()[0].leaf(), ReduceAxis::Sequence({}));
  ASSERT_THAT(sum, IsOk());
  ASSERT_TRUE(sum->is_tensor());
  EXPECT_EQ(sum->tensor().dtype(), DType::kI32);
  // (0 + 10 + ... + 70) + 8 * 3
  EXPECT_EQ(sum->tensor().AsInt64(0), 304);

  // An integer beyond int32 becomes int64; a float stays float32.
  EXPECT_EQ(Value::Number(int64_t{1} << 40).NumberTensor().dtype(),
            DType::kI64);
  EXPECT_EQ(Value::Number(int64_t{1} << 40).NumberTensor().AsInt64(0),
            int64_t{1} << 40);
  EXPECT_EQ(Value::Number(-2147483648LL).NumberTensor().dtype(), DType::kI32);
  EXPECT_EQ(Value::Number(2147483648LL).NumberTensor().dtype(), DType::kI64);
  EXPECT_EQ(Value::Number(3.0).NumberTensor().dtype(), DType::kF32);
  EXPECT_EQ(Value::Number(3).DebugString(), "3");
  EXPECT_NE(Value::Number(3), Value::Number(3.0));
}

TEST(RunTest, TrailingNoneArgumentsAreStripped) {
  auto f = MakeStrategy();
  size_t seen = 0;
  StepFunction step([&](ReplicaContext&,
                        const TracedNest& args) -> absl::StatusOr<TracedNest> {
    seen = args.children().size();
    return TracedNest(Arg(args, 0));
  });
  ASSERT_THAT(
      f.strategy->Run(step, ValueNest::Tuple({Value(Ids(8)), ValueNest::None(),
                                              ValueNest::None()})),
      IsOk());
  EXPECT_EQ(seen, 1u);
}

TEST(RunTest, ReplicaIndependentOutputsAreReturnedUnwrapped) {
  auto f = MakeStrategy();
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue c, ctx.Constant(F32(4)));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue c2, ctx.Add(c, Arg(args, 1)));
    return TracedNest::Tuple({TracedNest(Arg(args, 0)),
                              TracedNest(Arg(args, 1)), TracedNest(c),
                              TracedNest(c2)});
  });
  absl::StatusOr<ValueNest> out =
      f.strategy->Run(step, ValueNest::Tuple({Value(Ids(8)), Value(F32(3))}));
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->children().size(), 4u);
  EXPECT_TRUE(
      out->children()[0].leaf().is_per_replica());  // a distributed input
  EXPECT_EQ(out->children()[1].leaf(),
            Value(F32(3)));  // non-distributed passed through
  EXPECT_EQ(out->children()[2].leaf(), Value(F32(4)));  // a constant
  EXPECT_EQ(out->children()[3].leaf(), Value(F32(7)));  // computed from both
}

TEST(RunTest, OneReplicaResultsAreReturnedUnwrapped) {
  auto f = MakeStrategy("plain:1x1");
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue id, ctx.ReplicaIdInSyncGroup());
    return TracedNest::Tuple({TracedNest(id), args.children()[0]});
  });
  absl::StatusOr<ValueNest> out = f.strategy->Run(
      step, ValueNest::Tuple({Value(PerReplica<Tensor>({F32(9)}))}));
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(out->children()[0].leaf(), Value(Tensor::Scalar<int32_t>(0)));
  EXPECT_EQ(out->children()[1].leaf(), Value(F32(9)));
}

TEST(RunTest, FunctionReturningNoneGivesNone) {
  auto f = MakeStrategy();
  StepFunction step(
      [](ReplicaContext&, const TracedNest&) -> absl::StatusOr<TracedNest> {
        return TracedNest::None();
      });
  absl::StatusOr<ValueNest> out =
      f.strategy->Run(step, ValueNest::Tuple({Value(Ids(8))}));
  ASSERT_THAT(out, IsOk());
  EXPECT_TRUE(out->is_none());
}

TEST(RunTest, ResultStructureIsKept) {
  auto f = MakeStrategy("plain:1x2");
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue id, ctx.ReplicaIdInSyncGroup());
    return TracedNest::Dict(
        {{"id", TracedNest(id)}, {"x", TracedNest(Arg(args, 0))}});
  });
  absl::StatusOr<ValueNest> out = f.strategy->Run(
      step, ValueNest::Tuple({Value(PerReplica<Tensor>({F32(5), F32(6)}))}));
  ASSERT_THAT(out, IsOk());
  ASSERT_TRUE(out->is_dict());
  EXPECT_THAT(out->keys(), ElementsAre("id", "x"));
  EXPECT_THAT(ReplicaScalars(out->children()[1].leaf()), ElementsAre(5, 6));
}

TEST(RunTest, DistributedValueWithWrongComponentCountIsInvalidArgument) {
  auto f = MakeStrategy();
  StepFunction step([](ReplicaContext&,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    return TracedNest(Arg(args, 0));
  });
  EXPECT_THAT(
      f.strategy->Run(step, ValueNest::Tuple({Value(Ids(3))})),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("3 components, but the strategy has 8 replicas")));
}

TEST(RunTest, TracesAreCachedByInputSignature) {
  auto f = MakeStrategy("plain:1x2");
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue s, ctx.Add(Arg(args, 0), Arg(args, 0)));
    return TracedNest(s);
  });
  auto pr = [](Tensor a, Tensor b) {
    return ValueNest::Tuple({Value(PerReplica<Tensor>({a, b}))});
  };
  ASSERT_THAT(f.strategy->Run(step, pr(F32(1), F32(2))), IsOk());
  ASSERT_THAT(f.strategy->Run(step, pr(F32(3), F32(4))), IsOk());
  EXPECT_EQ(f.strategy->num_traces(), 1);
  ASSERT_THAT(f.strategy->Run(step, pr(F32s({1, 2}), F32s({3, 4}))),
              IsOk());  // new shape
  EXPECT_EQ(f.strategy->num_traces(), 2);
  ASSERT_THAT(f.strategy->Run(step, pr(Tensor::Scalar<int32_t>(1),
                                       Tensor::Scalar<int32_t>(2))),
              IsOk());  // new dtype
  EXPECT_EQ(f.strategy->num_traces(), 3);
  // New structure (a second argument).
  ASSERT_THAT(
      f.strategy->Run(
          step, ValueNest::Tuple({Value(PerReplica<Tensor>({F32(1), F32(2)})),
                                  Value(F32(0))})),
      IsOk());
  EXPECT_EQ(f.strategy->num_traces(), 4);
  absl::StatusOr<ValueNest> out = f.strategy->Run(step, pr(F32(5), F32(6)));
  EXPECT_EQ(f.strategy->num_traces(), 4);
  EXPECT_THAT(ReplicaScalars(out->leaf()), ElementsAre(10, 12));
  StepFunction other = step;  // a copy shares the identity
  ASSERT_THAT(f.strategy->Run(other, pr(F32(5), F32(6))), IsOk());
  EXPECT_EQ(f.strategy->num_traces(), 4);
  StepFunction fresh([](ReplicaContext&,
                        const TracedNest& args) -> absl::StatusOr<TracedNest> {
    return TracedNest(Arg(args, 0));
  });
  ASSERT_THAT(f.strategy->Run(fresh, pr(F32(5), F32(6))), IsOk());
  EXPECT_EQ(f.strategy->num_traces(), 5);
}

TEST(RunTest, DynamicBatchIsPaddedToTheStepMaximumButFunctionSeesTrueShapes) {
  auto f = MakeStrategy("plain:1x2");
  std::string traced_type;
  StepFunction step([&](ReplicaContext& ctx,
                        const TracedNest& args) -> absl::StatusOr<TracedNest> {
    traced_type = ctx.TypeOf(Arg(args, 0))->ToString();
    TPUSIM_ASSIGN_OR_RETURN(TracedValue s, ctx.ReduceSum(Arg(args, 0), {0}));
    return TracedNest::Tuple({TracedNest(Arg(args, 0)), TracedNest(s)});
  });
  absl::StatusOr<ValueNest> out = f.strategy->Run(
      step, ValueNest::Tuple({Value(
                PerReplica<Tensor>({F32s({0, 1, 2, 3}), F32s({4, 5})}))}));
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(traced_type, "f32[<=4]");
  const Value& echoed = out->children()[0].leaf();
  EXPECT_EQ(echoed.components()[0].shape(), Shape({4}));
  EXPECT_EQ(echoed.components()[1].shape(),
            Shape({2}));  // true shape, no padding visible
  EXPECT_THAT(Values(echoed.components()[1]), ElementsAre(4, 5));
  EXPECT_THAT(ReplicaScalars(out->children()[1].leaf()), ElementsAre(6, 9));
  // Reductions of the result stay exact (spec (f) example 2).
  EXPECT_EQ(
      f.strategy->Reduce(ReduceOp::kMean, echoed, 0)->tensor().AsDouble(0),
      2.5);
  // Padding shows only in cost: the program is costed at the bound.
  ASSERT_NE(f.strategy->last_traced_program(), nullptr);
  EXPECT_EQ(f.strategy->last_traced_program()->TotalCost().flops, 4);
  // An empty replica is fine too.
  out = f.strategy->Run(
      step,
      ValueNest::Tuple({Value(PerReplica<Tensor>({F32s({8, 9}), F32s({})}))}));
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(ReplicaScalars(out->children()[1].leaf()), ElementsAre(17, 0));
}

TEST(RunTest, DynamicBatchDisabledRejectsUnequalShapes) {
  TPUStrategyOptions options;
  options.enable_dynamic_batch_size = false;
  auto f = MakeStrategy("plain:1x2", options);
  StepFunction step([](ReplicaContext&,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    return TracedNest(Arg(args, 0));
  });
  EXPECT_THAT(f.strategy->Run(step, ValueNest::Tuple({Value(PerReplica<Tensor>(
                                        {F32s({0, 1}), F32s({4})}))})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("dynamic batch size is disabled")));
}

TEST(RunTest, RunInsideAReplicaFunctionIsFailedPrecondition) {
  auto f = MakeStrategy("plain:1x2");
  absl::Status inner;
  StepFunction step([&](ReplicaContext&,
                        const TracedNest&) -> absl::StatusOr<TracedNest> {
    StepFunction nested(
        [](ReplicaContext&, const TracedNest&) -> absl::StatusOr<TracedNest> {
          return TracedNest();
        });
    inner = f.strategy->Run(nested).status();
    return TracedNest();
  });
  ASSERT_THAT(f.strategy->Run(step), IsOk());
  EXPECT_THAT(inner,
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("requires being in cross-replica context")));
}

TEST(RunTest, BadShapesAndForeignValuesReturnStatus) {
  auto f = MakeStrategy("plain:1x2");
  StepFunction bad_matmul(
      [](ReplicaContext& ctx,
         const TracedNest& args) -> absl::StatusOr<TracedNest> {
        TPUSIM_ASSIGN_OR_RETURN(TracedValue y,
                                ctx.MatMul(Arg(args, 0), Arg(args, 0)));
        return TracedNest(y);
      });
  Tensor m = Tensor::Zeros(DType::kF32, Shape({2, 3}));
  EXPECT_THAT(
      f.strategy->Run(bad_matmul, ValueNest::Tuple({Value(m)})),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("f32[2,3]")));
  StepFunction foreign(
      [](ReplicaContext&, const TracedNest&) -> absl::StatusOr<TracedNest> {
        return TracedNest(TracedValue{42});
      });
  EXPECT_THAT(f.strategy->Run(foreign),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("%42")));
  StepFunction strings(
      [](ReplicaContext&,
         const TracedNest& args) -> absl::StatusOr<TracedNest> {
        return TracedNest(Arg(args, 0));
      });
  EXPECT_THAT(
      f.strategy->Run(
          strings, ValueNest::Tuple({Value(Tensor::Scalar<std::string>("a"))})),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("string tensor")));
}

TEST(AllReduceTest, SumAndMeanOfReplicaIdPlusOneOnFourReplicas) {
  auto f = MakeStrategy("plain:1x4");
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest&) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue id, ctx.ReplicaIdInSyncGroup());
    TPUSIM_ASSIGN_OR_RETURN(TracedValue idf, ctx.Cast(id, DType::kF32));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue one, ctx.ScalarConstant(1));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue v, ctx.Add(idf, one));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue sum, ctx.AllReduce(ReduceOp::kSum, v));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue mean, ctx.AllReduce("mean", v));
    return TracedNest::Tuple({TracedNest(sum), TracedNest(mean)});
  });
  absl::StatusOr<ValueNest> out = f.strategy->Run(step);
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(ReplicaScalars(out->children()[0].leaf()),
              ElementsAre(10, 10, 10, 10));
  EXPECT_THAT(ReplicaScalars(out->children()[1].leaf()),
              ElementsAre(2.5, 2.5, 2.5, 2.5));
}

TEST(AllReduceTest, MeanOfIntegersAndUnknownOpAreInvalidArgument) {
  auto f = MakeStrategy("plain:1x4");
  absl::Status mean_int, max_op;
  StepFunction step([&](ReplicaContext& ctx,
                        const TracedNest&) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue id, ctx.ReplicaIdInSyncGroup());
    mean_int = ctx.AllReduce(ReduceOp::kMean, id).status();
    max_op = ctx.AllReduce("max", id).status();
    TPUSIM_ASSIGN_OR_RETURN(TracedValue sum, ctx.AllReduce("SUM", id));
    return TracedNest(sum);
  });
  absl::StatusOr<ValueNest> out = f.strategy->Run(step);
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(ReplicaScalars(out->leaf()), ElementsAre(6, 6, 6, 6));
  EXPECT_THAT(mean_int, StatusIs(absl::StatusCode::kInvalidArgument,
                                 AllOf(HasSubstr("1/4"), HasSubstr("i32[]"))));
  EXPECT_THAT(max_op, StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("'MAX' is not a valid ReduceOp")));
}

TEST(AllReduceTest, NestIsReducedLeafByLeaf) {
  auto f = MakeStrategy("plain:1x2");
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    return ctx.AllReduce(
        ReduceOp::kSum,
        TracedNest::Tuple({args.children()[0], args.children()[1]}));
  });
  absl::StatusOr<ValueNest> out = f.strategy->Run(
      step, ValueNest::Tuple(
                {Value(PerReplica<Tensor>({F32(1), F32(2)})),
                 Value(PerReplica<Tensor>({F32s({1, 2}), F32s({3, 4})}))}));
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(ReplicaScalars(out->children()[0].leaf()), ElementsAre(3, 3));
  EXPECT_THAT(Values(out->children()[1].leaf().components()[1]),
              ElementsAre(4, 6));
}

TEST(MergeCallTest, RunsOnceInCrossReplicaContextWithTheTracedReplicasValues) {
  auto f = MakeStrategy();
  int calls = 0;
  StepFunction step([&](ReplicaContext& ctx,
                        const TracedNest& args) -> absl::StatusOr<TracedNest> {
    return ctx.MergeCall(
        [&](MergeContext& merge,
            const TracedNest& merge_args) -> absl::StatusOr<TracedNest> {
          ++calls;
          EXPECT_EQ(GetReplicaContext(), nullptr);
          EXPECT_TRUE(InCrossReplicaContext());
          EXPECT_EQ(&merge.strategy(), f.strategy.get());
          // The single traced replica's value (not a PerReplica of 8 values).
          EXPECT_EQ(merge.tracer().TypeOf(merge_args.leaf())->ToString(),
                    "f32[]");
          TPUSIM_ASSIGN_OR_RETURN(
              TracedValue s, merge.ReduceTo(ReduceOp::kSum, merge_args.leaf()));
          return TracedNest(s);
        },
        TracedNest(Arg(args, 0)));
  });
  absl::StatusOr<ValueNest> out =
      f.strategy->Run(step, ValueNest::Tuple({Value(Ids(8))}));
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(ReplicaScalars(out->leaf()),
              ElementsAre(28, 28, 28, 28, 28, 28, 28, 28));
  // Cached: the merge function does not run again.
  ASSERT_THAT(f.strategy->Run(step, ValueNest::Tuple({Value(Ids(8))})), IsOk());
  EXPECT_EQ(calls, 1);
}

TEST(ExperimentalRunTest, TakesOneElementPerCallFromTheIterator) {
  auto f = MakeStrategy("plain:1x2");
  auto element = [](float a, float b) {
    return PerReplica<ReplicaElement>(
        {ReplicaElement(F32(a)), ReplicaElement(F32(b))});
  };
  VectorInputIterator it({element(1, 2), element(3, 4)});
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue y, ctx.Mul(Arg(args, 0), Arg(args, 0)));
    return TracedNest(y);
  });
  absl::StatusOr<ValueNest> a = f.strategy->ExperimentalRun(step, &it);
  ASSERT_THAT(a, IsOk());
  EXPECT_THAT(ReplicaScalars(a->leaf()), ElementsAre(1, 4));
  absl::StatusOr<ValueNest> b = f.strategy->ExperimentalRun(step, &it);
  EXPECT_THAT(ReplicaScalars(b->leaf()), ElementsAre(9, 16));
  EXPECT_THAT(
      f.strategy->ExperimentalRun(step, &it),
      StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("End of sequence")));
  EXPECT_EQ(f.strategy->num_traces(), 1);
  // Without an iterator the function gets no arguments.
  StepFunction no_args(
      [](ReplicaContext&,
         const TracedNest& args) -> absl::StatusOr<TracedNest> {
        EXPECT_TRUE(args.children().empty());
        return TracedNest();
      });
  EXPECT_THAT(f.strategy->ExperimentalRun(no_args), IsOk());
  EXPECT_THAT(f.strategy->ExperimentalRunV2(no_args), IsOk());
}

TEST(ExperimentalRunTest,
     StructuresThatDifferAcrossReplicasAreInvalidArgument) {
  auto f = MakeStrategy("plain:1x2");
  VectorInputIterator it({PerReplica<ReplicaElement>(
      {ReplicaElement(F32(1)),
       ReplicaElement::Tuple({ReplicaElement(F32(2))})})});
  StepFunction step(
      [](ReplicaContext&, const TracedNest&) -> absl::StatusOr<TracedNest> {
        return TracedNest();
      });
  EXPECT_THAT(f.strategy->ExperimentalRun(step, &it),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("replica 1 has (*,)")));
}

TEST(ModelParallelTest, TwoLogicalCoresPerReplicaRunEndToEnd) {
  auto plain = MakeStrategy("v3-8");
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(plain.resolver->topology(), {1, 1, 2}, {}, 4);
  ASSERT_THAT(da, IsOk());
  TPUStrategyOptions options;
  options.device_assignment = *da;
  auto f = MakeStrategy("v3-8", options);
  EXPECT_EQ(f.strategy->num_replicas_in_sync(), 4);
  EXPECT_EQ(f.strategy->num_cores_per_replica(), 2);
  // TF 2.1: min(num_replicas, cores_per_host div num_cores_per_replica) =
  // min(4, 8 / 2).
  EXPECT_EQ(f.strategy->num_replicas_per_host(), 4);
  absl::Status bad_core;
  StepFunction step([&](ReplicaContext& ctx,
                        const TracedNest& args) -> absl::StatusOr<TracedNest> {
    bad_core = ctx.AssignToLogicalCore(2).status();
    TracedValue doubled;
    {
      TPUSIM_ASSIGN_OR_RETURN(LogicalCoreScope on_core1,
                              ctx.AssignToLogicalCore(1));
      TPUSIM_ASSIGN_OR_RETURN(doubled, ctx.Add(Arg(args, 0), Arg(args, 0)));
    }
    TPUSIM_ASSIGN_OR_RETURN(TracedValue one, ctx.ScalarConstant(1));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue out,
                            ctx.Add(doubled, one));  // back on core 0
    return TracedNest(out);
  });
  absl::StatusOr<ValueNest> out =
      f.strategy->Run(step, ValueNest::Tuple({Value(Ids(4))}));
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(ReplicaScalars(out->leaf()), ElementsAre(1, 3, 5, 7));
  EXPECT_THAT(bad_core, StatusIs(absl::StatusCode::kInvalidArgument,
                                 HasSubstr("logical core 2")));
  const runtime::Program* program = f.strategy->last_traced_program();
  ASSERT_NE(program, nullptr);
  int on_core1 = 0;
  for (const runtime::Op& op : program->ops()) on_core1 += op.logical_core == 1;
  EXPECT_EQ(on_core1, 1);
  // Core 1 of replica 0 is device TPU:1 (the second core of chip (0,0)): it
  // received the operand from core 0.
  absl::StatusOr<runtime::Profile> profile = f.backend->CollectProfile();
  ASSERT_THAT(profile, IsOk());
  const int core1_device = f.strategy->input_workers().replica_device_ids[0][1];
  EXPECT_GT(profile->devices(core1_device).cross_core_bytes(), 0);
}

TEST(UpdateConfigProtoTest, DelegatesToTheResolversClusterSpec) {
  auto f = MakeStrategy("v3-32");
  tensorflow::ConfigProto config;
  tensorflow::ConfigProto updated = f.strategy->UpdateConfigProto(config);
  EXPECT_FALSE(config.isolate_session_state());
  EXPECT_TRUE(updated.isolate_session_state());
  ASSERT_EQ(updated.cluster_def().job_size(), 1);
  EXPECT_EQ(updated.cluster_def().job(0).name(), "worker");
  EXPECT_EQ(updated.cluster_def().job(0).tasks().size(), 4u);
  EXPECT_EQ(updated.cluster_def().job(0).tasks().at(3), "tpu-worker-3:8470");
}

// Spec (b)/(l): range(10).batch(8) on 2 replicas gives [0,1,2,3] / [4,5,6,7],
// then [8,9] / [] (an empty dummy batch); run pads to the step maximum and
// reduce(axis=0) stays exact.
TEST(ExperimentalRunTest, PartialFinalBatchWithAnEmptyReplicaReducesExactly) {
  auto f = MakeStrategy("plain:1x2");
  auto element = [](std::vector<float> a, std::vector<float> b) {
    return PerReplica<ReplicaElement>({ReplicaElement(F32s(std::move(a))),
                                       ReplicaElement(F32s(std::move(b)))});
  };
  VectorInputIterator it(
      {element({0, 1, 2, 3}, {4, 5, 6, 7}), element({8, 9}, {})});
  std::vector<std::string> traced_types;
  StepFunction square([&](ReplicaContext& ctx, const TracedNest& args)
                          -> absl::StatusOr<TracedNest> {
    traced_types.push_back(ctx.TypeOf(Arg(args, 0))->ToString());
    TPUSIM_ASSIGN_OR_RETURN(TracedValue y, ctx.Mul(Arg(args, 0), Arg(args, 0)));
    return TracedNest(y);
  });
  absl::StatusOr<ValueNest> step1 = f.strategy->ExperimentalRun(square, &it);
  ASSERT_THAT(step1, IsOk());
  EXPECT_EQ(f.strategy->Reduce(ReduceOp::kSum, step1->leaf(), 0)
                ->tensor()
                .AsDouble(0),
            140.0);
  EXPECT_EQ(f.strategy->Reduce(ReduceOp::kMean, step1->leaf(), 0)
                ->tensor()
                .AsDouble(0),
            17.5);
  absl::StatusOr<ValueNest> step2 = f.strategy->ExperimentalRun(square, &it);
  ASSERT_THAT(step2, IsOk());
  EXPECT_THAT(Values(step2->leaf().components()[0]), ElementsAre(64, 81));
  EXPECT_EQ(step2->leaf().components()[1].shape(), Shape({0}));
  EXPECT_EQ(f.strategy->Reduce(ReduceOp::kSum, step2->leaf(), 0)
                ->tensor()
                .AsDouble(0),
            145.0);
  EXPECT_EQ(f.strategy->Reduce(ReduceOp::kMean, step2->leaf(), 0)
                ->tensor()
                .AsDouble(0),
            72.5);
  EXPECT_THAT(traced_types, ElementsAre("f32[4]", "f32[<=2]"));
  EXPECT_THAT(
      f.strategy->ExperimentalRun(square, &it),
      StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("End of sequence")));
}

TEST(MergeCallTest,
     ReplicaOnlyMethodsInsideTheMergeFunctionAreFailedPrecondition) {
  auto f = MakeStrategy("plain:1x2");
  absl::Status nested_merge, all_reduce;
  StepFunction step([&](ReplicaContext& ctx,
                        const TracedNest& args) -> absl::StatusOr<TracedNest> {
    return ctx.MergeCall(
        [&](MergeContext& merge,
            const TracedNest& merge_args) -> absl::StatusOr<TracedNest> {
          all_reduce =
              ctx.AllReduce(ReduceOp::kSum, merge_args.leaf()).status();
          nested_merge =
              ctx.MergeCall([](MergeContext&, const TracedNest& a)
                                -> absl::StatusOr<TracedNest> { return a; },
                            merge_args)
                  .status();
          return merge.ReduceTo("mean", merge_args.leaf()).status().ok()
                     ? absl::StatusOr<TracedNest>(merge_args)
                     : absl::InternalError("ReduceTo failed");
        },
        TracedNest(Arg(args, 0)));
  });
  ASSERT_THAT(f.strategy->Run(step, ValueNest::Tuple({Value(Ids(2))})), IsOk());
  EXPECT_THAT(
      all_reduce,
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("Need to be inside `call_for_each_replica()`")));
  EXPECT_THAT(nested_merge, StatusIs(absl::StatusCode::kFailedPrecondition,
                                     HasSubstr("ReplicaContext::MergeCall")));
}

TEST(RunTest, TfTpuRegroupOptionKeepsReplicaIndependentResultsPerReplica) {
  TPUStrategyOptions options;
  options.unwrap_replica_independent_results = false;
  auto f = MakeStrategy("plain:1x2", options);
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue c, ctx.Constant(F32(4)));
    return TracedNest::Tuple({TracedNest(Arg(args, 0)), TracedNest(c)});
  });
  absl::StatusOr<ValueNest> out =
      f.strategy->Run(step, ValueNest::Tuple({Value(F32(3))}));
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(ReplicaScalars(out->children()[0].leaf()), ElementsAre(3, 3));
  EXPECT_THAT(ReplicaScalars(out->children()[1].leaf()), ElementsAre(4, 4));
}

// Bad run() arguments never crash: odd structures, component counts, dtypes,
// ranks, strings and abstract tensors give OK or InvalidArgument.
TEST(RunTest, SweepOfOddArgumentsNeverCrashes) {
  auto f = MakeStrategy("plain:1x2");
  StepFunction echo([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    std::vector<TracedNest> outs;
    for (const TracedValue* v : args.Flatten()) {
      TPUSIM_ASSIGN_OR_RETURN(TracedValue y, ctx.Add(*v, *v));
      outs.push_back(TracedNest(y));
    }
    return TracedNest::Tuple(std::move(outs));
  });
  const std::vector<Tensor> tensors = {
      F32(1),
      F32s({1, 2}),
      F32s({}),
      Tensor::Zeros(DType::kI32, Shape({2, 2})),
      Tensor::Scalar<std::string>("s"),
      Tensor::Abstract(DType::kF32, Shape({3})),
      Tensor::Zeros(DType::kBF16, Shape({1, 0, 2}))};
  std::vector<Value> leaves = {Value::Number(2),
                               PerReplica<Tensor>(std::vector<Tensor>{}),
                               PerReplica<Tensor>({F32(1)})};
  for (const Tensor& a : tensors) {
    leaves.push_back(Value(a));
    for (const Tensor& b : tensors) {
      leaves.push_back(PerReplica<Tensor>({a, b}));
      leaves.push_back(Mirrored<Tensor>({a, b}));
    }
  }
  int ok = 0, invalid = 0;
  for (const Value& leaf : leaves) {
    const std::vector<ValueNest> arg_lists = {
        ValueNest::Tuple({leaf}), ValueNest::Tuple({ValueNest::None(), leaf}),
        ValueNest::Tuple({ValueNest::Dict({{"k", ValueNest(leaf)}}), leaf}),
        ValueNest(leaf)};
    for (const ValueNest& args : arg_lists) {
      absl::StatusOr<ValueNest> out = f.strategy->Run(echo, args);
      if (out.ok()) {
        ++ok;
      } else {
        ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
            << out.status();
        ++invalid;
      }
    }
  }
  EXPECT_GT(ok, 50);
  EXPECT_GT(invalid, 50);
}

}  // namespace
}  // namespace tpusim::strategy
