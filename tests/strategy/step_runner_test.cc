// Tests of the TF1 steps_per_run multi-step runner (spec (i)).

#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/tpu_strategy.h"
#include "tests/strategy/strategy_testing.h"

namespace tpusim::strategy {
namespace {

using runtime::Tensor;
using ::testing::AllOf;
using ::testing::ElementsAre;
using testing::F32;
using ::testing::HasSubstr;
using testing::MakeStrategy;
using testing::ReplicaScalars;
using tpusim::testing::IsOk;
using tpusim::testing::StatusIs;

// Step s gives replica r the value 10*s + r.
VectorInputIterator Steps(int num_steps, int num_replicas) {
  std::vector<PerReplica<ReplicaElement>> steps;
  for (int s = 0; s < num_steps; ++s) {
    steps.push_back(PerReplica<ReplicaElement>::FromFn(
        num_replicas,
        [&](int r) { return ReplicaElement(F32(10.f * s + r)); }));
  }
  return VectorInputIterator(std::move(steps));
}

struct Fixture {
  testing::StrategyFixture f;
  MirroredVariable* total = nullptr;
};

Fixture Make(int steps_per_run) {
  TPUStrategyOptions options;
  options.steps_per_run = steps_per_run;
  Fixture x{MakeStrategy("plain:1x2", options)};
  auto scope = x.f.strategy->Scope();
  x.total = *CreateVariable(F32(0), {"total"});
  return x;
}

// Adds the all-reduced input to `total` every step; registers the raw input (no
// reduce op) and its SUM (reduce op) as last-step outputs.
MultiStepFn Body(MirroredVariable* total) {
  return [total](ReplicaContext& ctx, MultiStepContext& steps,
                 const TracedNest& inputs) -> absl::Status {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue sum,
                            ctx.AllReduce(ReduceOp::kSum, inputs.leaf()));
    TPUSIM_RETURN_IF_ERROR(ctx.AssignAddVariable(*total, sum).status());
    TPUSIM_RETURN_IF_ERROR(steps.SetLastStepOutput("x", inputs.leaf()));
    TPUSIM_RETURN_IF_ERROR(
        steps.SetLastStepOutput("x_sum", inputs.leaf(), ReduceOp::kSum));
    return steps.SetLastStepOutput("x_mean", inputs.leaf(), "mean");
  };
}

TEST(StepsPerRunTest, DefaultIsOneAndRunsExactlyOneStepIgnoringIterations) {
  Fixture x = Make(1);
  EXPECT_EQ(x.f.strategy->steps_per_run(), 1);
  VectorInputIterator it = Steps(5, 2);
  absl::StatusOr<MultiStepResult> r =
      x.f.strategy->ExperimentalRunStepsOnIterator(Body(x.total), it,
                                                   /*iterations=*/5);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->steps_run, 1);
  EXPECT_EQ(x.total->Read()->scalar<float>(), 1.0f);  // step 0: 0 + 1
  // Only one element was consumed: the next call starts at step 1.
  r = x.f.strategy->ExperimentalRunStepsOnIterator(Body(x.total), it, 5);
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(ReplicaScalars(r->last_step_outputs.at("x")),
              ElementsAre(10, 11));
}

TEST(StepsPerRunTest,
     LoopRunsIterationsStepsInOneCallAndReturnsLastStepOutputs) {
  Fixture x = Make(4);
  EXPECT_EQ(x.f.strategy->steps_per_run(), 4);
  VectorInputIterator it = Steps(5, 2);
  const int64_t executions_before =
      x.f.backend->CollectProfile()->devices(0).executions();
  // The caller passes iterations (normally = steps_per_run); 3 here: 3 steps
  // run.
  absl::StatusOr<MultiStepResult> r =
      x.f.strategy->ExperimentalRunStepsOnIterator(Body(x.total), it,
                                                   /*iterations=*/3);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->steps_run, 3);
  EXPECT_EQ(
      x.f.backend->CollectProfile()->devices(0).executions() - executions_before,
      1);
  // total = (0+1) + (10+11) + (20+21) = 63.
  EXPECT_EQ(x.total->Read()->scalar<float>(), 63.0f);
  // Without a reduce op: the list of N per-replica values of the LAST step.
  EXPECT_THAT(ReplicaScalars(r->last_step_outputs.at("x")),
              ElementsAre(20, 21));
  // With a reduce op: the reduced value.
  ASSERT_TRUE(r->last_step_outputs.at("x_sum").is_tensor());
  EXPECT_EQ(r->last_step_outputs.at("x_sum").tensor().scalar<float>(), 41.0f);
  EXPECT_EQ(r->last_step_outputs.at("x_mean").tensor().scalar<float>(), 20.5f);
}

TEST(StepsPerRunTest, ShortIteratorIsOutOfRangeAndRunsNothing) {
  Fixture x = Make(4);
  VectorInputIterator it = Steps(2, 2);
  EXPECT_THAT(
      x.f.strategy->ExperimentalRunStepsOnIterator(Body(x.total), it, 4),
      StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("End of sequence")));
  EXPECT_EQ(x.total->Read()->scalar<float>(), 0.0f);
}

TEST(StepsPerRunTest, BadIterationsAndBadBodiesReturnStatus) {
  Fixture x = Make(4);
  VectorInputIterator it = Steps(4, 2);
  EXPECT_THAT(
      x.f.strategy->ExperimentalRunStepsOnIterator(Body(x.total), it, 0),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("iterations = 0")));
  MultiStepFn int_mean = [](ReplicaContext& ctx, MultiStepContext& steps,
                            const TracedNest&) -> absl::Status {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue id, ctx.ReplicaIdInSyncGroup());
    return steps.SetLastStepOutput("id", id, ReduceOp::kMean);
  };
  EXPECT_THAT(x.f.strategy->ExperimentalRunStepsOnIterator(int_mean, it, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("all_reduce MEAN")));
}

// The loop body is traced once per (function, signature), not once per step
// or per call: the same MultiStepFn reuses its trace.
TEST(StepsPerRunTest, BodyIsTracedOncePerFunctionAndSignature) {
  Fixture x = Make(3);
  VectorInputIterator it = Steps(9, 2);
  const MultiStepFn body = Body(x.total);
  const int before = x.f.strategy->num_traces();
  for (int call = 0; call < 3; ++call) {
    ASSERT_THAT(x.f.strategy->ExperimentalRunStepsOnIterator(body, it, 3),
                IsOk());
  }
  EXPECT_EQ(x.f.strategy->num_traces() - before, 1);
  // The program is the body once (one all_reduce), not three copies.
  int all_reduces = 0;
  for (const runtime::Op& op : x.f.strategy->last_traced_program()->ops()) {
    all_reduces += op.code == runtime::OpCode::kAllReduce;
  }
  EXPECT_EQ(all_reduces, 3);  // the body's, x_sum's and x_mean's
  // total = sum over steps s = 0..8 of (10 s + 0) + (10 s + 1) = 729.
  EXPECT_EQ(x.total->Read()->scalar<float>(), 729.0f);
}

// A TPU loop has static shapes: a step whose input signature differs from
// step 0's is InvalidArgument naming the step, and nothing runs.
TEST(StepsPerRunTest, StepWithAnotherSignatureIsInvalidArgumentNamingIt) {
  Fixture x = Make(3);
  std::vector<PerReplica<ReplicaElement>> steps;
  for (int s = 0; s < 3; ++s) {
    steps.push_back(PerReplica<ReplicaElement>::FromFn(2, [&](int r) {
      return s == 2 ? ReplicaElement(testing::F32s({1, 2}))
                    : ReplicaElement(F32(10.f * s + r));
    }));
  }
  VectorInputIterator it(std::move(steps));
  EXPECT_THAT(
      x.f.strategy->ExperimentalRunStepsOnIterator(Body(x.total), it, 3),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("experimental_run_steps_on_iterator: step 2 "
                               "has the input signature"),
                     HasSubstr("(f32[2]) but step 0 has * (f32[])"),
                     HasSubstr("the steps of one device loop must have the "
                               "same static shapes"))));
  EXPECT_EQ(x.total->Read()->scalar<float>(), 0.0f);
}

}  // namespace
}  // namespace tpusim::strategy
