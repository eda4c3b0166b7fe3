// tests/strategy/data/shard_repeat_test.cc
//
// Regression tests (issue 22): a shard over a repeat yielded nothing, because
// the repeat's Skip(0) — what shard asks for whenever its next element is the
// input's next one — ended the repetition. Expected values are TF 2.21's
// (tf.data.Dataset.range(...) with the same chain, run on a CPU).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/data/dataset.h"
#include "strategy/data/distribute.h"
#include "tests/strategy/data/distribute_test_util.h"

namespace tpusim::data {
namespace {

using ::testing::HasSubstr;
using testing::DatasetValues;
using testing::RunResult;
using testing::RunToEnd;
using testing::Step;
using testing::StepsToString;
using testing::Values;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

std::vector<Values> ValuesOrError(const Dataset& ds) {
  absl::Status status;
  std::vector<Values> out = DatasetValues(ds, &status);
  EXPECT_THAT(status, IsOk());
  return out;
}

TEST(ShardRepeatTest, RepeatSkipZeroMovesPastNothing) {
  absl::StatusOr<IteratorPtr> it = Dataset::Range(3).Repeat(2).MakeIterator();
  ASSERT_THAT(it, IsOk());
  std::vector<int64_t> got;
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<int64_t> skipped = (*it)->Skip(0);
    ASSERT_THAT(skipped, IsOk());
    EXPECT_EQ(*skipped, 0);
    absl::StatusOr<std::optional<Element>> e = (*it)->GetNext();
    ASSERT_THAT(e, IsOk());
    if (!e->has_value()) break;
    got.push_back(testing::ValuesOf(**e).at(0));
  }
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
}

TEST(ShardRepeatTest, ShardAfterRepeat) {
  // The issue's pipeline: range(3).repeat(1).shard(2, 0).batch(2) → [[0, 2]].
  EXPECT_EQ(ValuesOrError(Dataset::Range(3).Repeat(1).Shard(2, 0).Batch(2)),
            (std::vector<Values>{{0, 2}}));
}

TEST(ShardRepeatTest, ShardOfOneAfterRepeatIsTheIdentity) {
  EXPECT_EQ(ValuesOrError(Dataset::Range(3).Repeat(1).Shard(1, 0).Batch(2)),
            (std::vector<Values>{{0, 1}, {2}}));
}

TEST(ShardRepeatTest, ShardAfterPrefetchAfterRepeat) {
  EXPECT_EQ(ValuesOrError(
                Dataset::Range(3).Repeat(1).Prefetch(2).Shard(2, 0).Batch(2)),
            (std::vector<Values>{{0, 2}}));
}

TEST(ShardRepeatTest, ShardAcrossSeveralEpochs) {
  EXPECT_EQ(ValuesOrError(Dataset::Range(3).Repeat(3).Shard(2, 1)),
            (std::vector<Values>{{1}, {0}, {2}, {1}}));
  EXPECT_EQ(ValuesOrError(Dataset::Range(3).Repeat(2).Shard(2, 0).Batch(2)),
            (std::vector<Values>{{0, 2}, {1}}));
  EXPECT_EQ(ValuesOrError(Dataset::Range(5).Repeat().Shard(3, 2).Take(6)),
            (std::vector<Values>{{2}, {0}, {3}, {1}, {4}, {2}}));
}

TEST(ShardRepeatTest, EachNewIteratorIsAFullEpoch) {
  const Dataset ds = Dataset::Range(3).Repeat(2).Shard(2, 0);
  for (int epoch = 0; epoch < 3; ++epoch) {
    SCOPED_TRACE(epoch);
    EXPECT_EQ(ValuesOrError(ds), (std::vector<Values>{{0}, {2}, {1}}));
  }
}

TEST(ShardRepeatTest, IssueScenarioThroughDistributeDatasetOff) {
  Options off;
  off.auto_shard_policy = AutoShardPolicy::kOff;
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Range(3).Repeat(1).Shard(2, 0).Batch(2).WithOptions(off),
      InputWorkers::Uniform(1, 1));
  ASSERT_THAT(dist, IsOk());
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0, 2}}})) << StepsToString(r.steps);
  EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kOutOfRange,
                              HasSubstr("End of sequence")));
}

TEST(ShardRepeatTest, DataAutoShardOfARepeatAfterTheBatch22) {
  // range(1).batch(4).repeat(2) on 2 workers, DATA: each worker's
  // shard(2, w) of [[0], [0]] is [[0]] (TF: worker 0 gets [0] at step 0).
  Options data;
  data.auto_shard_policy = AutoShardPolicy::kData;
  DistributeOptions v22;
  v22.semantics_version = "2.2";
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Range(1).Batch(4).Repeat(2).WithOptions(data),
      InputWorkers::Uniform(2, 1), v22);
  ASSERT_THAT(dist, IsOk());
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0}, {0}}})) << StepsToString(r.steps);
  EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kOutOfRange,
                              HasSubstr("End of sequence")));
}

TEST(ShardRepeatTest, AutoFallingBackToDataOfARepeatAfterTheBatch22) {
  // AUTO on a range source (no files) falls back to DATA.
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Range(1).Batch(4).Repeat(2), InputWorkers::Uniform(2, 1));
  ASSERT_THAT(dist, IsOk());
  EXPECT_EQ(dist->applied_policy(0), AutoShardPolicy::kData);
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0}, {0}}})) << StepsToString(r.steps);
}

}  // namespace
}  // namespace tpusim::data
