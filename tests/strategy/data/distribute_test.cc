// tests/strategy/data/distribute_test.cc
//
// experimental_distribute_dataset / make_dataset_iterator /
// distribute_datasets_from_function / make_input_fn_iterator /
// make_numpy_dataset: the worked examples of spec (b), (c), (d), (g) with exact
// per-replica element lists.

#include "strategy/data/distribute.h"

#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/data/dataset.h"
#include "strategy/data/dataset_nodes.h"
#include "strategy/data/numpy_dataset.h"
#include "tests/strategy/data/distribute_test_util.h"

namespace tpusim::data {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::RunResult;
using testing::RunToEnd;
using testing::Step;
using testing::StepsToString;
using testing::Values;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

DistributeOptions Version(const std::string& v) {
  DistributeOptions o;
  o.semantics_version = v;
  return o;
}

// ---- the single-worker worked table of spec (b) ----

struct TableRow {
  int64_t size;
  int64_t batch;
  bool drop_remainder;
  int n;
  std::vector<Step> steps;
  bool same_in_2_4;
};

const std::vector<TableRow>& WorkedTable() {
  static const auto* rows = new std::vector<TableRow>{
      {10, 8, false, 2, {{{0, 1, 2, 3}, {4, 5, 6, 7}}, {{8, 9}, {}}}, true},
      {10,
       8,
       false,
       4,
       {{{0, 1}, {2, 3}, {4, 5}, {6, 7}}, {{8, 9}, {}, {}, {}}},
       true},
      {14,
       8,
       false,
       2,
       {{{0, 1, 2, 3}, {4, 5, 6, 7}}, {{8, 9, 10, 11}, {12, 13}}},
       true},
      {6, 8, false, 2, {{{0, 1, 2, 3}, {4, 5}}}, true},
      {13,
       8,
       false,
       4,
       {{{0, 1}, {2, 3}, {4, 5}, {6, 7}}, {{8, 9}, {10, 11}, {12}, {}}},
       true},
      {9, 8, false, 2, {{{0, 1, 2, 3}, {4, 5, 6, 7}}, {{8}, {}}}, true},
      {8, 8, false, 2, {{{0, 1, 2, 3}, {4, 5, 6, 7}}}, true},
      {9,
       2,
       false,
       2,
       {{{0}, {1}}, {{2}, {3}}, {{4}, {5}}, {{6}, {7}}, {{8}, {}}},
       true},
      {10, 5, false, 2, {{{0, 1, 2}, {3, 4}}, {{5, 6, 7}, {8, 9}}}, true},
      {7, 5, false, 2, {{{0, 1, 2}, {3, 4}}, {{5, 6}, {}}}, true},
      {10, 8, true, 2, {{{0, 1, 2, 3}, {4, 5, 6, 7}}}, true},
      {8, 4, false, 3, {{{0, 1}, {2, 3}, {4, 5}}, {{6, 7}, {}, {}}}, false},
  };
  return *rows;
}

RunResult RunRow(const TableRow& row, const std::string& version) {
  InputWorkers workers = InputWorkers::Uniform(1, row.n);
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Range(row.size).Batch(row.batch, row.drop_remainder), workers,
      Version(version));
  if (!dist.ok()) return RunResult{{}, dist.status()};
  return RunToEnd(*dist);
}

TEST(DistributeDatasetTest, WorkedTableSingleWorker22) {
  for (const TableRow& row : WorkedTable()) {
    SCOPED_TRACE(absl::StrCat("range(", row.size, ").batch(", row.batch, ", ",
                              row.drop_remainder, ") N=", row.n));
    RunResult r = RunRow(row, "2.2");
    EXPECT_EQ(r.steps, row.steps) << StepsToString(r.steps);
    EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kOutOfRange,
                                HasSubstr("End of sequence")));
  }
}

TEST(DistributeDatasetTest, WorkedTableSingleWorker24SameRows) {
  for (const TableRow& row : WorkedTable()) {
    if (!row.same_in_2_4) continue;
    SCOPED_TRACE(absl::StrCat("range(", row.size, ").batch(", row.batch, ", ",
                              row.drop_remainder, ") N=", row.n));
    RunResult r = RunRow(row, "2.4");
    EXPECT_EQ(r.steps, row.steps) << StepsToString(r.steps);
    EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
  }
}

TEST(DistributeDatasetTest, WorkedTableBalancedSizes24) {
  // range(8).batch(4), N=3: 2.4 sizes [2,1,1].
  RunResult r = RunRow({8, 4, false, 3, {}, false}, "2.4");
  EXPECT_EQ(r.steps,
            (std::vector<Step>{{{0, 1}, {2}, {3}}, {{4, 5}, {6}, {7}}}))
      << StepsToString(r.steps);
  EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
}

TEST(DistributeDatasetTest, RewriteKindsOfTheTable) {
  InputWorkers w2 = InputWorkers::Uniform(1, 2);
  auto kind = [&](const Dataset& ds, const InputWorkers& w) {
    absl::StatusOr<DistributedDataset> d = DistributeDataset(ds, w);
    EXPECT_THAT(d, IsOk());
    return *d->rebatch_kind();
  };
  EXPECT_EQ(kind(Dataset::Range(10).Batch(8), w2), RebatchKind::kCase1);
  EXPECT_EQ(kind(Dataset::Range(10).Batch(5), w2), RebatchKind::kCase2);
  EXPECT_EQ(kind(Dataset::Range(10).Batch(8, true), w2), RebatchKind::kCase2);
  EXPECT_EQ(kind(Dataset::Range(8).Batch(4), InputWorkers::Uniform(1, 3)),
            RebatchKind::kCase2);
}

// The declared host cost survives auto-shard and rebatch, and each
// per-replica batch carries the work its worker's pipeline did for it.
TEST(DistributeDatasetTest, PerReplicaBatchesCarryTheirHostWork) {
  // 2 workers x 2 replicas; DATA sharding (range is not file based), global
  // batch 8 -> 2 rows per replica.
  Dataset ds = Dataset::Range(32)
                   .WithHostCost(common::Picoseconds(10))
                   .Batch(8)
                   .WithHostCost(common::Picoseconds(1000));
  auto dist = DistributeDataset(ds, InputWorkers::Uniform(2, 2));
  ASSERT_THAT(dist, IsOk());
  for (int w = 0; w < 2; ++w) {
    const std::string graph = dist->worker_dataset(w).node()->DebugString();
    EXPECT_THAT(graph, HasSubstr("RangeDataset(start=0, stop=32, step=1, host_cost=10 ps)"))
        << graph;
    EXPECT_THAT(graph, HasSubstr("BatchDatasetV2(batch_size=2, drop_remainder=false, host_cost=250 ps)"))
        << graph;
  }
  auto it = dist->MakeIterator();
  ASSERT_THAT(it, IsOk());
  auto step = it->GetNext();
  ASSERT_THAT(step, IsOk());
  // Each worker runs range (10 ps per row) -> batch(2) (Case 1: 1 ns / 4 =
  // 250 ps per batch) -> shard(2, w) after the batch (DATA). A batch of 2 rows
  // costs 270 ps. Replica 0 (worker 0) takes batch 0 and, as the
  // require-non-empty shard does on its first element, reads ahead over
  // batch 1; replica 1 takes batch 2. Worker 1's replicas each drop one batch
  // and take one.
  EXPECT_THAT(step->host_costs(),
              ElementsAre(common::Picoseconds(540), common::Picoseconds(270),
                          common::Picoseconds(540), common::Picoseconds(540)));
  EXPECT_EQ(testing::StepValues(*step), (Step{{0, 1}, {4, 5}, {2, 3}, {6, 7}}));
}

TEST(DistributeDatasetTest, EmptyReplicasGetDummyBatchesOfShapeZero) {
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Range(10).Batch(8), InputWorkers::Uniform(1, 4));
  ASSERT_THAT(dist, IsOk());
  EXPECT_TRUE(dist->get_next_as_optional());
  EXPECT_EQ(dist->element_spec().leaf(),
            (TensorSpec{DType::kI64, Shape({runtime::kUnknownDim})}));
  absl::StatusOr<DistributedIterator> it = dist->MakeIterator();
  ASSERT_THAT(it, IsOk());
  ASSERT_THAT(it->GetNext(), IsOk());
  absl::StatusOr<strategy::PerReplica<Element>> step2 = it->GetNext();
  ASSERT_THAT(step2, IsOk());
  EXPECT_EQ((*step2)[0].leaf(), Tensor::Vector<int64_t>({8, 9}));
  for (int r = 1; r < 4; ++r) {
    EXPECT_EQ((*step2)[r].leaf().shape(), Shape({0}));
    EXPECT_EQ((*step2)[r].leaf().dtype(), DType::kI64);
  }
  EXPECT_THAT(it->GetNext(),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("End of")));
  // The end is sticky.
  EXPECT_THAT(it->GetNext(),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("End of")));
}

TEST(DistributeDatasetTest, DummyOfMatrixBatchesKeepsInnerDims) {
  std::vector<int64_t> v(30);
  for (int i = 0; i < 30; ++i) v[i] = i;
  Dataset ds = Dataset::FromTensorSlices(
                   TensorRefNest(TensorRef(
                       Tensor::FromVector<int64_t>(Shape({10, 3}), v))))
                   .Batch(8);
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(ds, InputWorkers::Uniform(1, 2));
  ASSERT_THAT(dist, IsOk());
  EXPECT_EQ(dist->element_spec().leaf().shape,
            Shape({runtime::kUnknownDim, 3}));
  absl::StatusOr<DistributedIterator> it = dist->MakeIterator();
  ASSERT_THAT(it, IsOk());
  ASSERT_THAT(it->GetNext(), IsOk());
  absl::StatusOr<strategy::PerReplica<Element>> step2 = it->GetNext();
  ASSERT_THAT(step2, IsOk());
  EXPECT_EQ((*step2)[0].leaf().shape(), Shape({2, 3}));
  EXPECT_EQ((*step2)[1].leaf().shape(), Shape({0, 3}));
}

TEST(DistributeDatasetTest, DummyTensorRules) {
  EXPECT_EQ(DummyTensor({DType::kF32, Shape({4, 28, 28})}).shape(),
            Shape({0, 28, 28}));
  EXPECT_EQ(
      DummyTensor({DType::kI32, Shape({runtime::kUnknownDim, 5})}).shape(),
      Shape({0, 5}));
  EXPECT_EQ(
      DummyTensor({DType::kI32, Shape({4, runtime::kUnknownDim})}).shape(),
      Shape({4, 0}));
  EXPECT_EQ(DummyTensor({DType::kBytes, Shape::UnknownRank()}).shape(),
            Shape({0}));
  EXPECT_EQ(DummyTensor({DType::kBF16, Shape({2})}).dtype(), DType::kBF16);
}

TEST(DistributeDatasetTest, StaticShapesUseFastPathWithoutEmpties) {
  // batch(8, drop_remainder) → per-replica spec [2] (static); take(5) after the
  // batch counts the 2.2 Case-2 minibatches: step 2 has data for one replica
  // only → end, no dummies.
  Dataset ds = Dataset::Range(16).Batch(8, true).Take(5);
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(ds, InputWorkers::Uniform(1, 4));
  ASSERT_THAT(dist, IsOk());
  EXPECT_FALSE(dist->get_next_as_optional());
  EXPECT_EQ(dist->element_spec().leaf().shape, Shape({2}));
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0, 1}, {2, 3}, {4, 5}, {6, 7}}}));
  EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
}

TEST(DistributeDatasetTest, DynamicShapesWithTheSameTakeGiveEmpties) {
  Dataset ds = Dataset::Range(16).Batch(8).Take(5);
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(ds, InputWorkers::Uniform(1, 4));
  ASSERT_THAT(dist, IsOk());
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0, 1}, {2, 3}, {4, 5}, {6, 7}},
                                        {{8, 9}, {}, {}, {}}}));
}

TEST(DistributeDatasetTest, OpsAfterTheBatchCountMinibatches) {
  // Spec (b): range(16).batch(8).take(1) with N=2 → step 1 [0..3] / [], then
  // end.
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Range(16).Batch(8).Take(1), InputWorkers::Uniform(1, 2));
  ASSERT_THAT(dist, IsOk());
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0, 1, 2, 3}, {}}}));
  EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
}

TEST(DistributeDatasetTest, GetNextAsOptionalCanBeDisabled) {
  DistributeOptions o;
  o.enable_get_next_as_optional = false;
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Range(10).Batch(8), InputWorkers::Uniform(1, 2), o);
  ASSERT_THAT(dist, IsOk());
  EXPECT_FALSE(dist->get_next_as_optional());
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0, 1, 2, 3}, {4, 5, 6, 7}}}));
}

TEST(DistributeDatasetTest, NewIteratorStartsOver) {
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Range(10).Batch(8), InputWorkers::Uniform(1, 2));
  ASSERT_THAT(dist, IsOk());
  RunResult a = RunToEnd(*dist);
  RunResult b = RunToEnd(*dist);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.steps.size(), 2u);
}

// ---- errors ----

TEST(DistributeDatasetTest, ScalarElementsAreRejectedAtDistributeTime) {
  EXPECT_THAT(
      DistributeDataset(Dataset::Range(10), InputWorkers::Uniform(1, 2)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("rank >= 1"), HasSubstr("batch"),
                     HasSubstr("int64[]"))));
  EXPECT_THAT(
      DistributeDataset(Dataset::Range(10), InputWorkers::Uniform(1, 2),
                        Version("2.4")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank >= 1")));
}

TEST(DistributeDatasetTest, SingleReplicaIn24DoesNotRebatchOrRejectScalars) {
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Range(3), InputWorkers::Uniform(1, 1), Version("2.4"));
  ASSERT_THAT(dist, IsOk());
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0}}, {{1}}, {{2}}}));
}

TEST(DistributeDatasetTest, UnknownSemanticsVersionIsRejected) {
  EXPECT_THAT(DistributeDataset(Dataset::Range(8).Batch(4),
                                InputWorkers::Uniform(1, 2), Version("2.3")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"2.3\""), HasSubstr("\"2.2\""),
                             HasSubstr("\"2.4\""))));
}

TEST(DistributeDatasetTest, DatasetConstructionErrorPropagates) {
  EXPECT_THAT(DistributeDataset(Dataset::Range(8).Batch(0),
                                InputWorkers::Uniform(1, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(DistributeDatasetTest, InvalidWorkersAreRejected) {
  InputWorkers w{{{0, 1}, {1, 2}}, {"a", "b"}};
  EXPECT_THAT(
      DistributeDataset(Dataset::Range(8).Batch(4), w),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("replica 1")));
}

TEST(DistributeDatasetTest, NonUniformWorkersAreRejectedIn24) {
  InputWorkers w{{{0, 1}, {2}}, {"a", "b"}};
  EXPECT_THAT(DistributeDataset(Dataset::Range(8).Batch(4), w, Version("2.4")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("worker 0 has 2"),
                             HasSubstr("worker 1 has 1"))));
}

TEST(DistributeDatasetTest, MakeDatasetIteratorSplitsLikeDistributeDataset) {
  absl::StatusOr<DistributedIterator> it = MakeDatasetIterator(
      Dataset::Range(10).Batch(5), InputWorkers::Uniform(1, 2));
  ASSERT_THAT(it, IsOk());
  RunResult r = RunToEnd(*it);
  EXPECT_EQ(r.steps,
            (std::vector<Step>{{{0, 1, 2}, {3, 4}}, {{5, 6, 7}, {8, 9}}}));
  EXPECT_THAT(it->Initialize(), IsOk());
  EXPECT_EQ(RunToEnd(*it).steps, r.steps);
  Dataset hidden = Dataset::Range(8).Batch(4).FlatMap(
      [](const FunctionArg& arg) { return Dataset::FromTensors(arg.nest()); });
  EXPECT_THAT(MakeDatasetIterator(hidden, InputWorkers::Uniform(1, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cannot use rebatching fallback")));
  EXPECT_THAT(
      MakeDatasetIterator(Dataset::Range(10), InputWorkers::Uniform(1, 2)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank >= 1")));
}

// ---- multiple workers ----

TEST(DistributeDatasetTest, MultiWorkerWorkedExampleAutoFallsBackToData) {
  for (const std::string version : {"2.2", "2.4"}) {
    SCOPED_TRACE(version);
    absl::StatusOr<DistributedDataset> dist =
        DistributeDataset(Dataset::Range(16).Batch(8),
                          InputWorkers::Uniform(2, 2), Version(version));
    ASSERT_THAT(dist, IsOk());
    EXPECT_EQ(dist->applied_policy(0), AutoShardPolicy::kData);
    EXPECT_EQ(dist->applied_policy(1), AutoShardPolicy::kData);
    ASSERT_EQ(dist->warnings().size(), 2u);
    EXPECT_THAT(dist->warnings()[0],
                HasSubstr("switching to DATA-based sharding"));
    RunResult r = RunToEnd(*dist);
    EXPECT_EQ(r.steps,
              (std::vector<Step>{{{0, 1}, {4, 5}, {2, 3}, {6, 7}},
                                 {{8, 9}, {12, 13}, {10, 11}, {14, 15}}}))
        << StepsToString(r.steps);
    EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
  }
}

TEST(DistributeDatasetTest, WorkerReplicaListsDecideTheReplicaOrder) {
  // Worker 0 feeds replicas 2,3 and worker 1 feeds 0,1: the PerReplica is in
  // replica order.
  InputWorkers w{{{2, 3}, {0, 1}}, {"h0", "h1"}};
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(Dataset::Range(16).Batch(8), w);
  ASSERT_THAT(dist, IsOk());
  RunResult r = RunToEnd(*dist);
  ASSERT_FALSE(r.steps.empty());
  EXPECT_EQ(r.steps[0], (Step{{2, 3}, {6, 7}, {0, 1}, {4, 5}}));
}

TEST(DistributeDatasetTest, OffPolicyDuplicatesDataOnEveryWorker) {
  Options off;
  off.auto_shard_policy = AutoShardPolicy::kOff;
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Range(8).Batch(4).WithOptions(off), InputWorkers::Uniform(2, 1));
  ASSERT_THAT(dist, IsOk());
  EXPECT_TRUE(dist->warnings().empty());
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0, 1}, {0, 1}},
                                        {{2, 3}, {2, 3}},
                                        {{4, 5}, {4, 5}},
                                        {{6, 7}, {6, 7}}}));
}

TEST(DistributeDatasetTest,
     DataPolicyWithFewerMinibatchesThanWorkersFailsOnFirstStep) {
  Options data;
  data.auto_shard_policy = AutoShardPolicy::kData;
  // range(4).batch(6), N=3 → Case 1 batch(2) → M=2 minibatches for W=3 workers.
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(Dataset::Range(4).Batch(6).WithOptions(data),
                        InputWorkers::Uniform(3, 1));
  ASSERT_THAT(dist, IsOk());
  RunResult r = RunToEnd(*dist);
  EXPECT_TRUE(r.steps.empty());
  EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kInvalidArgument,
                              AllOf(HasSubstr("# elems = 2"),
                                    HasSubstr("# shards = 3"))));
  // Per worker: i < M fail, i >= M see a clean end.
  absl::Status s0, s1, s2;
  EXPECT_TRUE(testing::DatasetValues(dist->worker_dataset(0), &s0).empty());
  EXPECT_TRUE(testing::DatasetValues(dist->worker_dataset(1), &s1).empty());
  EXPECT_TRUE(testing::DatasetValues(dist->worker_dataset(2), &s2).empty());
  EXPECT_THAT(s0, StatusIs(absl::StatusCode::kInvalidArgument,
                           HasSubstr("# elems = 2")));
  EXPECT_THAT(s1, StatusIs(absl::StatusCode::kInvalidArgument,
                           HasSubstr("# elems = 2")));
  EXPECT_THAT(s2, IsOk());
}

TEST(DistributeDatasetTest, DataPolicyWithNoMinibatchIsACleanEnd) {
  Options data;
  data.auto_shard_policy = AutoShardPolicy::kData;
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(Dataset::Range(0).Batch(6).WithOptions(data),
                        InputWorkers::Uniform(3, 1));
  ASSERT_THAT(dist, IsOk());
  RunResult r = RunToEnd(*dist);
  EXPECT_TRUE(r.steps.empty());
  EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
}

TEST(DistributeDatasetTest, SingleWorkerIgnoresThePolicy) {
  Options file;
  file.auto_shard_policy = AutoShardPolicy::kFile;
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(Dataset::Range(4).Batch(2).WithOptions(file),
                        InputWorkers::Uniform(1, 2));
  ASSERT_THAT(dist, IsOk());
  EXPECT_EQ(dist->applied_policy(0), AutoShardPolicy::kOff);
  EXPECT_EQ(RunToEnd(*dist).steps, (std::vector<Step>{{{0}, {1}}, {{2}, {3}}}));
}

TEST(DistributeDatasetTest, FilePolicyOnRangeIsNotFound) {
  Options file;
  file.auto_shard_policy = AutoShardPolicy::kFile;
  EXPECT_THAT(DistributeDataset(Dataset::Range(8).Batch(4).WithOptions(file),
                                InputWorkers::Uniform(2, 1)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("RangeDataset")));
}

TEST(DistributeDatasetTest, WorkerDatasetsCarryStatelessOptions) {
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Range(8).Batch(4), InputWorkers::Uniform(2, 1));
  ASSERT_THAT(dist, IsOk());
  EXPECT_TRUE(dist->worker_dataset(1).options().make_stateless);
  EXPECT_EQ(dist->worker_dataset(1).node()->op(), "ShardDataset");
}

TEST(DistributeDatasetTest, TwoFourBalancedSizesAcrossWorkers) {
  // 2.4, W=2, R=2, B=7, FILE impossible (range) → AUTO → DATA, which turns V2
  // back into the legacy 4-piece split: batch [0..6] → [0,1],[2,3],[4,5],[6];
  // worker 0 keeps pieces 0,2.
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Range(7).Batch(7), InputWorkers::Uniform(2, 2), Version("2.4"));
  ASSERT_THAT(dist, IsOk());
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0, 1}, {4, 5}, {2, 3}, {6}}}))
      << StepsToString(r.steps);
  // With OFF the V2 sizes stay: worker 0 [2,2,2,1], worker 1 [2,1,2,2].
  Options off;
  off.auto_shard_policy = AutoShardPolicy::kOff;
  dist = DistributeDataset(Dataset::Range(7).Batch(7).WithOptions(off),
                           InputWorkers::Uniform(2, 2), Version("2.4"));
  ASSERT_THAT(dist, IsOk());
  EXPECT_EQ(testing::DatasetValues(dist->worker_dataset(0)),
            (std::vector<Values>{{0, 1}, {2, 3}, {4, 5}, {6}}));
  EXPECT_EQ(testing::DatasetValues(dist->worker_dataset(1)),
            (std::vector<Values>{{0, 1}, {2}, {3, 4}, {5, 6}}));
}

TEST(DistributeDatasetTest, TwoFourUnknownBatchSizeUsesLegacySplitWithEmpties) {
  // The batch is hidden in a flat_map → compute_batch_size gives -1 → legacy
  // N=3 split.
  Dataset ds = Dataset::Range(8).Batch(4).FlatMap(
      [](const FunctionArg& arg) { return Dataset::FromTensors(arg.nest()); });
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(ds, InputWorkers::Uniform(1, 3), Version("2.4"));
  ASSERT_THAT(dist, IsOk());
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps,
            (std::vector<Step>{{{0, 1}, {2, 3}, {}}, {{4, 5}, {6, 7}, {}}}))
      << StepsToString(r.steps);
}

TEST(DistributeDatasetTest, TwoFourLegacySplitOfZipWithDifferentBatchSizes) {
  // zip of batch(4) and batch(2): compute_batch_size finds no common batch
  // size → legacy N=3 split, each component on its own dimension 0 (was
  // INVALID_ARGUMENT). Per replica: component 0 / component 1.
  Dataset ds =
      Dataset::Zip({Dataset::Range(8).Batch(4), Dataset::Range(4).Batch(2)});
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(ds, InputWorkers::Uniform(1, 3), Version("2.4"));
  ASSERT_THAT(dist, IsOk());
  absl::StatusOr<DistributedIterator> it = dist->MakeIterator();
  ASSERT_THAT(it, IsOk());
  std::vector<std::string> steps;
  while (true) {
    absl::StatusOr<strategy::PerReplica<Element>> step = it->GetNext();
    if (!step.ok()) {
      EXPECT_THAT(step.status(),
                  StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
      break;
    }
    std::vector<std::string> reps;
    for (const Element& e : step->values()) {
      std::vector<std::string> comps;
      for (const runtime::Tensor* t : e.Flatten())
        comps.push_back(
            absl::StrCat("[", absl::StrJoin(testing::ValuesOf(*t), ","), "]"));
      reps.push_back(absl::StrJoin(comps, ""));
    }
    steps.push_back(absl::StrJoin(reps, " "));
  }
  EXPECT_THAT(steps, ElementsAre("[0,1][0] [2,3][1] [][]",
                                 "[4,5][2] [6,7][3] [][]"));
}

// ---- padded_batch under experimental_distribute_dataset ----

// The int64 vectors [0], [0,1], ..., [0..count-1] from a generator.
Dataset Ragged(int64_t count) {
  return Dataset::FromGenerator(
      [count]() -> GeneratorFn {
        auto next = std::make_shared<int64_t>(1);
        return [next, count]() -> absl::StatusOr<std::optional<Element>> {
          if (*next > count) return std::optional<Element>();
          std::vector<int64_t> v;
          for (int64_t i = 0; i < *next; ++i) v.push_back(i);
          ++*next;
          return std::optional<Element>(Element(Tensor::Vector<int64_t>(v)));
        };
      },
      ElementSpec(TensorSpec{DType::kI64, Shape({runtime::kUnknownDim})}));
}

// Each step as "replica0 | replica1 ...", a replica as its components'
// DebugStrings (shape and values), the end status last.
std::vector<std::string> Listing(const Dataset& ds, int replicas,
                                 const std::string& version) {
  std::vector<std::string> out;
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(ds, InputWorkers::Uniform(1, replicas),
                        Version(version));
  if (!dist.ok()) return {dist.status().ToString()};
  absl::StatusOr<DistributedIterator> it = dist->MakeIterator();
  if (!it.ok()) return {it.status().ToString()};
  for (int step = 0; step < 100; ++step) {
    absl::StatusOr<strategy::PerReplica<Element>> next = it->GetNext();
    if (!next.ok()) {
      out.push_back(next.status().code() == absl::StatusCode::kOutOfRange
                        ? "OUT_OF_RANGE"
                        : next.status().ToString());
      break;
    }
    std::vector<std::string> reps;
    for (const Element& e : next->values()) {
      std::vector<std::string> comps;
      for (const Tensor* t : e.Flatten()) comps.push_back(t->DebugString());
      reps.push_back(absl::StrJoin(comps, " "));
    }
    out.push_back(absl::StrJoin(reps, " | "));
  }
  return out;
}

TEST(PaddedBatchDistributeTest, Case1EachReplicaPadsToItsOwnMaximum) {
  // batch(4) → padded_batch(2): each replica's batch pads to its own longest
  // row; the partial last step's empty batch has shape [0,0] (spec [?,?]).
  EXPECT_THAT(
      Listing(Ragged(6).PaddedBatch(4), 2, "2.2"),
      ElementsAre(
          "int64[2,2]{0, 0, 0, 1} | int64[2,4]{0, 1, 2, 0, 0, 1, 2, 3}",
          "int64[2,6]{0, 1, 2, 3, 4, 0, 0, 1, 2, 3, 4, 5} | int64[0,0]{}",
          "OUT_OF_RANGE"));
}

TEST(PaddedBatchDistributeTest, Case2SlicesThePaddedGlobalBatch) {
  // batch(3), N=2: pieces of 2 rows of the global batch padded to 3.
  EXPECT_THAT(
      Listing(Ragged(5).PaddedBatch(3), 2, "2.2"),
      ElementsAre("int64[2,3]{0, 0, 0, 0, 1, 0} | int64[1,3]{0, 1, 2}",
                  "int64[2,5]{0, 1, 2, 3, 0, 0, 1, 2, 3, 4} | int64[0,0]{}",
                  "OUT_OF_RANGE"));
}

TEST(PaddedBatchDistributeTest, DropRemainderPiecesKeepThePaddedShape) {
  EXPECT_THAT(Listing(Ragged(5).PaddedBatch(4, {Shape({6})},
                                            {Tensor::Scalar<int64_t>(-1)},
                                            true),
                      2, "2.2"),
              ElementsAre("int64[2,6]{0, -1, -1, -1, -1, -1, 0, 1, -1, -1, -1, "
                          "-1} | int64[2,6]{0, 1, 2, -1, -1, -1, 0, 1, 2, 3, "
                          "-1, -1}",
                          "OUT_OF_RANGE"));
}

TEST(PaddedBatchDistributeTest, FallbackReshapesThePaddedBatch) {
  Dataset ds = Dataset::Zip(
      {Ragged(5).PaddedBatch(4, {Shape({4})}, {Tensor::Scalar<int64_t>(-1)},
                             true),
       Dataset::FromTensors(Element(Tensor::Vector<int64_t>({7, 8, 9, 10})))});
  // from_tensors has no batch → the fallback: [4,4] → [2,2,4], unbatched.
  EXPECT_THAT(Listing(ds, 2, "2.2"),
              ElementsAre("int64[2,4]{0, -1, -1, -1, 0, 1, -1, -1} "
                          "int64[2]{7, 8} | int64[2,4]{0, 1, 2, -1, 0, 1, 2, "
                          "3} int64[2]{9, 10}",
                          "OUT_OF_RANGE"));
}

TEST(PaddedBatchDistributeTest, TwoFourSplitsPaddedBatches) {
  // The batch size is found on the padded batch: RebatchDatasetV2 [2,2]
  // slices the padded global batches.
  EXPECT_THAT(
      Listing(Ragged(5).PaddedBatch(4), 2, "2.4"),
      ElementsAre("int64[2,4]{0, 0, 0, 0, 0, 1, 0, 0} | int64[2,4]{0, 1, 2, "
                  "0, 0, 1, 2, 3}",
                  "int64[1,5]{0, 1, 2, 3, 4} | int64[0,0]{}", "OUT_OF_RANGE"));
  // [2,1]; the empty batch of the partial step keeps the padded width 5.
  EXPECT_THAT(
      Listing(Ragged(5).PaddedBatch(3, {Shape({5})}), 2, "2.4"),
      ElementsAre("int64[2,5]{0, 0, 0, 0, 0, 0, 1, 0, 0, 0} | int64[1,5]{0, "
                  "1, 2, 0, 0}",
                  "int64[2,5]{0, 1, 2, 3, 0, 0, 1, 2, 3, 4} | int64[0,5]{}",
                  "OUT_OF_RANGE"));
}

// ---- window + flat_map and map_and_batch under
// experimental_distribute_dataset

// range(n).window(size).flat_map(lambda w: w.batch(size)).
Dataset WindowedBatches(int64_t n, int64_t size) {
  return Dataset::Range(n).Window(size).FlatMap(
      [size](const WindowArg& w) { return w.dataset().Batch(size); });
}

MapFunction SquareFn() {
  MapFunction f;
  f.name = "square";
  f.fn = [](const Element& e) -> absl::StatusOr<Element> {
    const int64_t v = e.leaf().values<int64_t>()[0];
    return Element(Tensor::Scalar<int64_t>(v * v));
  };
  f.output_spec = ElementSpec(TensorSpec{DType::kI64, Shape()});
  return f;
}

TEST(WindowDistributeTest, Case1RewritesTheBatchInsideTheWindowFunction) {
  // TF 2.2's rewrite enters the flat_map body and halves its batch(4): every
  // window of 4 gives two per-replica batches of 2; the last window [8, 9]
  // one, so replica 1 gets the empty batch in the last step.
  EXPECT_THAT(Listing(WindowedBatches(10, 4), 2, "2.2"),
              ElementsAre("int64[2]{0, 1} | int64[2]{2, 3}",
                          "int64[2]{4, 5} | int64[2]{6, 7}",
                          "int64[2]{8, 9} | int64[0]{}", "OUT_OF_RANGE"));
}

TEST(WindowDistributeTest, Case2SplitsEachWindowBatch) {
  // batch(3) over 2 replicas: pieces of ceil(3/2) = 2 rows.
  EXPECT_THAT(Listing(WindowedBatches(10, 3), 2, "2.2"),
              ElementsAre("int64[2]{0, 1} | int64[1]{2}",
                          "int64[2]{3, 4} | int64[1]{5}",
                          "int64[2]{6, 7} | int64[1]{8}",
                          "int64[1]{9} | int64[0]{}", "OUT_OF_RANGE"));
}

TEST(WindowDistributeTest, BodyWithoutABatchTakesTheFallback) {
  // The rewrite walks into the body, not into the window's input, so the
  // batch before the window is never rewritten: the body reaches its window
  // source without a batch, and the static [4] elements are reshaped.
  Dataset ds = Dataset::Range(8)
                   .Batch(4, /*drop_remainder=*/true)
                   .Window(2)
                   .FlatMap([](const WindowArg& w) { return w.dataset(); });
  EXPECT_THAT(Listing(ds, 2, "2.2"),
              ElementsAre("int64[2]{0, 1} | int64[2]{2, 3}",
                          "int64[2]{4, 5} | int64[2]{6, 7}", "OUT_OF_RANGE"));
}

TEST(WindowDistributeTest, TwoFourSplitsEachBatchInNPieces) {
  // 2.4 finds no batch size (a flat_map, and dimension 0 unknown): the legacy
  // RebatchDataset splits every batch into N pieces.
  EXPECT_THAT(Listing(WindowedBatches(10, 4), 2, "2.4"),
              ElementsAre("int64[2]{0, 1} | int64[2]{2, 3}",
                          "int64[2]{4, 5} | int64[2]{6, 7}",
                          "int64[1]{8} | int64[1]{9}", "OUT_OF_RANGE"));
}

TEST(MapAndBatchDistributeTest, Case1DivisibleBatch) {
  EXPECT_THAT(
      Listing(Dataset::Range(8).MapAndBatch(SquareFn(), 4), 2, "2.2"),
      ElementsAre("int64[2]{0, 1} | int64[2]{4, 9}",
                  "int64[2]{16, 25} | int64[2]{36, 49}", "OUT_OF_RANGE"));
}

TEST(MapAndBatchDistributeTest, Case1PartialFinalBatch) {
  EXPECT_THAT(Listing(Dataset::Range(10).MapAndBatch(SquareFn(), 4), 2, "2.2"),
              ElementsAre("int64[2]{0, 1} | int64[2]{4, 9}",
                          "int64[2]{16, 25} | int64[2]{36, 49}",
                          "int64[2]{64, 81} | int64[0]{}", "OUT_OF_RANGE"));
}

TEST(MapAndBatchDistributeTest, Case2AndDropRemainder) {
  EXPECT_THAT(Listing(Dataset::Range(6).MapAndBatch(SquareFn(), 3), 2, "2.2"),
              ElementsAre("int64[2]{0, 1} | int64[1]{4}",
                          "int64[2]{9, 16} | int64[1]{25}", "OUT_OF_RANGE"));
  EXPECT_THAT(
      Listing(Dataset::Range(10).MapAndBatch(SquareFn(), 4, true), 2, "2.2"),
      ElementsAre("int64[2]{0, 1} | int64[2]{4, 9}",
                  "int64[2]{16, 25} | int64[2]{36, 49}", "OUT_OF_RANGE"));
}

TEST(MapAndBatchDistributeTest, TwoFourFindsTheBatchSize) {
  // Batch size 3 found on the map_and_batch: RebatchDatasetV2 [2, 1].
  EXPECT_THAT(Listing(Dataset::Range(7).MapAndBatch(SquareFn(), 3), 2, "2.4"),
              ElementsAre("int64[2]{0, 1} | int64[1]{4}",
                          "int64[2]{9, 16} | int64[1]{25}",
                          "int64[1]{36} | int64[0]{}", "OUT_OF_RANGE"));
}

// ---- (c) distribute_datasets_from_function ----

TEST(DistributeDatasetsFromFunctionTest, WorkedExample) {
  std::vector<std::string> calls;
  DatasetFunction fn = [&](const InputContext& ctx) {
    calls.push_back(ctx.DebugString());
    absl::StatusOr<int64_t> b = ctx.GetPerReplicaBatchSize(8);
    if (!b.ok()) return Dataset::FromError(b.status());
    return Dataset::Range(16).Batch(*b).Shard(ctx.num_input_pipelines(),
                                              ctx.input_pipeline_id());
  };
  absl::StatusOr<DistributedDataset> dist =
      DistributeDatasetsFromFunction(fn, InputWorkers::Uniform(2, 2));
  ASSERT_THAT(dist, IsOk());
  EXPECT_THAT(
      calls,
      ElementsAre("InputContext(num_input_pipelines=2, input_pipeline_id=0, "
                  "num_replicas_in_sync=4)",
                  "InputContext(num_input_pipelines=2, input_pipeline_id=1, "
                  "num_replicas_in_sync=4)"));
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps,
            (std::vector<Step>{{{0, 1}, {4, 5}, {2, 3}, {6, 7}},
                               {{8, 9}, {12, 13}, {10, 11}, {14, 15}}}));
  EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
  EXPECT_FALSE(dist->rebatch_kind().has_value());
}

TEST(DistributeDatasetsFromFunctionTest,
     DatasetIsUsedAsIsWithoutRebatchOrShard) {
  // Scalars are fine here, and every worker sees the full stream (no
  // auto-shard).
  absl::StatusOr<DistributedDataset> dist = DistributeDatasetsFromFunction(
      [](const InputContext&) { return Dataset::Range(3); },
      InputWorkers::Uniform(2, 1));
  ASSERT_THAT(dist, IsOk());
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0}, {0}}, {{1}, {1}}, {{2}, {2}}}));
}

TEST(DistributeDatasetsFromFunctionTest, PartialDataGivesDummies) {
  absl::StatusOr<DistributedDataset> dist = DistributeDatasetsFromFunction(
      [](const InputContext& ctx) {
        return Dataset::Range(ctx.input_pipeline_id() == 0 ? 5 : 1).Batch(2);
      },
      InputWorkers::Uniform(2, 2));
  ASSERT_THAT(dist, IsOk());
  RunResult r = RunToEnd(*dist);
  EXPECT_EQ(r.steps,
            (std::vector<Step>{{{0, 1}, {2, 3}, {0}, {}}, {{4}, {}, {}, {}}}))
      << StepsToString(r.steps);
}

TEST(DistributeDatasetsFromFunctionTest, ContextCountMustMatchWorkers) {
  EXPECT_THAT(DistributeDatasetsFromFunctionWithContexts(
                  [](const InputContext&) { return Dataset::Range(3); },
                  InputWorkers::Uniform(2, 1), {InputContext()}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("(1)"), HasSubstr("(2)"))));
}

TEST(DistributeDatasetsFromFunctionTest, DatasetErrorPropagates) {
  EXPECT_THAT(DistributeDatasetsFromFunction(
                  [](const InputContext& ctx) {
                    absl::StatusOr<int64_t> b = ctx.GetPerReplicaBatchSize(7);
                    if (!b.ok()) return Dataset::FromError(b.status());
                    return Dataset::Range(8).Batch(*b);
                  },
                  InputWorkers::Uniform(1, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("global_batch_size 7 is not divisible by "
                                 "num_replicas_in_sync 2")));
}

// ---- (d) make_input_fn_iterator ----

TEST(MakeInputFnIteratorTest, OnlyPerWorkerModeIsSupported) {
  EXPECT_THAT(
      MakeInputFnIterator([](const InputContext&) { return InputFnResult(); },
                          InputWorkers::Uniform(1, 2),
                          static_cast<InputReplicationMode>(1)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("Input replication mode not supported")));
}

TEST(MakeInputFnIteratorTest, OtherReturnValuesAreRejected) {
  EXPECT_THAT(
      MakeInputFnIterator([](const InputContext&) { return InputFnResult(); },
                          InputWorkers::Uniform(1, 2)),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("input_fn must return a tf.data.Dataset or a callable")));
}

TEST(MakeInputFnIteratorTest, DatasetIsRoundRobinAndInitializeRestarts) {
  std::vector<int> ids;
  absl::StatusOr<DistributedIterator> it = MakeInputFnIterator(
      [&](const InputContext& ctx) -> InputFnResult {
        ids.push_back(ctx.input_pipeline_id());
        return Dataset::Range(8).Batch(2).Shard(2, ctx.input_pipeline_id());
      },
      InputWorkers::Uniform(2, 2));
  ASSERT_THAT(it, IsOk());
  EXPECT_THAT(ids, ElementsAre(0, 1));
  RunResult r = RunToEnd(*it);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0, 1}, {4, 5}, {2, 3}, {6, 7}}}));
  EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
  ASSERT_THAT(it->Initialize(), IsOk());
  EXPECT_EQ(RunToEnd(*it).steps, r.steps);
}

TEST(MakeInputFnIteratorTest, CallableFeedsEveryReplicaEveryStepAndNeverEnds) {
  int calls = 0;
  absl::StatusOr<DistributedIterator> it = MakeInputFnIterator(
      [&](const InputContext& ctx) -> InputFnResult {
        const int64_t base = 100 * ctx.input_pipeline_id();
        return ElementFn([&calls, base]() -> absl::StatusOr<Element> {
          return Element(Tensor::Vector<int64_t>({base + calls++}));
        });
      },
      InputWorkers::Uniform(2, 2));
  ASSERT_THAT(it, IsOk());
  RunResult r = RunToEnd(*it, /*max_steps=*/3);
  EXPECT_EQ(r.steps, (std::vector<Step>{{{0}, {1}, {102}, {103}},
                                        {{4}, {5}, {106}, {107}},
                                        {{8}, {9}, {110}, {111}}}));
  EXPECT_THAT(r.end,
              StatusIs(absl::StatusCode::kInternal, HasSubstr("max_steps")));
}

// ---- (g) experimental_make_numpy_dataset ----

TEST(MakeNumpyDatasetTest, SlicesAlongDimensionZero) {
  absl::StatusOr<NumpyDataset> np =
      MakeNumpyDataset(Element(Tensor::FromVector<float>(
                           Shape({10}), std::vector<float>(10, 1.0f))),
                       InputWorkers::Uniform(2, 4));
  ASSERT_THAT(np, IsOk());
  EXPECT_EQ(np->host_device, "/job:worker/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(np->dataset.element_spec().leaf(),
            (TensorSpec{DType::kF32, Shape()}));
  absl::StatusOr<std::vector<Element>> all = np->dataset.Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 10u);
  EXPECT_EQ((*all)[3].leaf(), Tensor::Scalar<float>(1.0f));
}

TEST(MakeNumpyDatasetTest, NestedArraysMustShareDimensionZero) {
  Element nested =
      Element::Dict({{"x", Element(Tensor::Zeros(DType::kF32, Shape({4, 2})))},
                     {"y", Element(Tensor::Zeros(DType::kI32, Shape({3})))}});
  EXPECT_THAT(MakeNumpyDataset(nested, InputWorkers::Uniform(1, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("x: 4"), HasSubstr("y: 3"))));
  Element ok =
      Element::Dict({{"x", Element(Tensor::Zeros(DType::kF32, Shape({3, 2})))},
                     {"y", Element(Tensor::Vector<int32_t>({7, 8, 9}))}});
  absl::StatusOr<NumpyDataset> np =
      MakeNumpyDataset(ok, InputWorkers::Uniform(1, 2));
  ASSERT_THAT(np, IsOk());
  absl::StatusOr<std::vector<Element>> all = np->dataset.Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[2].children()[1].leaf(), Tensor::Scalar<int32_t>(9));
  EXPECT_EQ((*all)[2].children()[0].leaf().shape(), Shape({2}));
}

TEST(MakeNumpyDatasetTest, ScalarArrayIsRejectedAndHostFollowsReplicaZero) {
  EXPECT_THAT(
      MakeNumpyDataset(Element(Tensor::Scalar<float>(1)),
                       InputWorkers::Uniform(1, 2)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank >= 1")));
  InputWorkers w{{{1}, {0}}, {"host_a", "host_b"}};
  absl::StatusOr<NumpyDataset> np =
      MakeNumpyDataset(Element(Tensor::Vector<int64_t>({1, 2})), w);
  ASSERT_THAT(np, IsOk());
  EXPECT_EQ(np->host_device, "host_b");
}

}  // namespace
}  // namespace tpusim::data
