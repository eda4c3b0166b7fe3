// tests/strategy/data/input_context_test.cc

#include "strategy/data/input_context.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

TEST(InputContextTest, DefaultsAreOnePipelineIdZeroOneReplica) {
  InputContext ctx;
  EXPECT_EQ(ctx.num_input_pipelines(), 1);
  EXPECT_EQ(ctx.input_pipeline_id(), 0);
  EXPECT_EQ(ctx.num_replicas_in_sync(), 1);
  EXPECT_EQ(*ctx.GetPerReplicaBatchSize(7), 7);
}

TEST(InputContextTest, PerReplicaBatchSizeDividesExactly) {
  InputContext ctx(2, 1, 4);
  EXPECT_EQ(*ctx.GetPerReplicaBatchSize(8), 2);
  EXPECT_EQ(*ctx.GetPerReplicaBatchSize(0), 0);
}

TEST(InputContextTest, NonDivisibleGlobalBatchIsAnErrorNamingBothNumbers) {
  EXPECT_THAT(InputContext(1, 0, 2).GetPerReplicaBatchSize(7),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("global_batch_size 7 is not divisible by "
                                 "num_replicas_in_sync 2")));
}

TEST(InputContextTest, MakeInputContextsFollowsWorkerOrder) {
  std::vector<InputContext> contexts =
      MakeInputContexts(InputWorkers::Uniform(3, 2));
  ASSERT_EQ(contexts.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(contexts[i].num_input_pipelines(), 3);
    EXPECT_EQ(contexts[i].input_pipeline_id(), i);
    EXPECT_EQ(contexts[i].num_replicas_in_sync(), 6);
  }
}

TEST(InputWorkersTest, UniformNumbersReplicasWorkerMajor) {
  InputWorkers w = InputWorkers::Uniform(2, 3);
  EXPECT_THAT(w.replicas_per_worker[1], ElementsAre(3, 4, 5));
  EXPECT_EQ(w.worker_devices[1], "/job:worker/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(w.num_replicas(), 6);
  EXPECT_THAT(w.Validate(), IsOk());
}

TEST(InputWorkersTest, ValidateRejectsBadLayouts) {
  EXPECT_THAT(InputWorkers{}.Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT((InputWorkers{{{0}}, {}}).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("worker_devices has 0")));
  EXPECT_THAT(
      (InputWorkers{{{0}, {}}, {"a", "b"}}).Validate(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("worker 1 (b)")));
  EXPECT_THAT(
      (InputWorkers{{{0, 2}}, {"a"}}).Validate(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("replica 2")));
  EXPECT_THAT(
      (InputWorkers{{{0}, {0}}, {"a", "b"}}).Validate(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("replica 0 is fed by worker 0 and by worker 1")));
}

}  // namespace
}  // namespace tpusim::data
