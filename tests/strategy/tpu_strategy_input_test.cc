// TPUStrategy's input entry points end to end: the facade builds the input
// workers from its cluster resolver and hands them, with N and the semantics
// version, to the data layer.

#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/tpu_strategy.h"
#include "tests/strategy/strategy_testing.h"

namespace tpusim::strategy {
namespace {

using runtime::Tensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::strategy::testing::MakeStrategy;
using ::tpusim::testing::StatusIs;

std::vector<int64_t> Ints(const data::Element& e) {
  auto v = e.leaf().values<int64_t>();
  return std::vector<int64_t>(v.begin(), v.end());
}

TEST(TPUStrategyInputTest, DistributeDatasetOnTwoHostsFollowsTheWorkedExample) {
  // Spec (b) multi-worker example: W=2, R=2, range(16).batch(8), AUTO falls
  // back to DATA.
  auto f = MakeStrategy("plain:2x2");
  absl::StatusOr<data::DistributedDataset> dist =
      f.strategy->ExperimentalDistributeDataset(
          data::Dataset::Range(16).Batch(8));
  ASSERT_THAT(dist, tpusim::testing::IsOk());
  ASSERT_EQ(dist->warnings().size(), 2u);  // one per worker
  EXPECT_THAT(dist->warnings()[0],
              HasSubstr("switching to DATA-based sharding"));
  auto it = DistributedInputIterator::Create(*dist);
  ASSERT_TRUE(it.ok());
  auto s1 = (*it)->GetNext();
  ASSERT_TRUE(s1.ok());
  EXPECT_THAT(Ints((*s1)[0]), ElementsAre(0, 1));
  EXPECT_THAT(Ints((*s1)[1]), ElementsAre(4, 5));
  EXPECT_THAT(Ints((*s1)[2]), ElementsAre(2, 3));
  EXPECT_THAT(Ints((*s1)[3]), ElementsAre(6, 7));
  auto s2 = (*it)->GetNext();
  ASSERT_TRUE(s2.ok());
  EXPECT_THAT(Ints((*s2)[0]), ElementsAre(8, 9));
  EXPECT_THAT(Ints((*s2)[1]), ElementsAre(12, 13));
  EXPECT_THAT(Ints((*s2)[2]), ElementsAre(10, 11));
  EXPECT_THAT(Ints((*s2)[3]), ElementsAre(14, 15));
  EXPECT_THAT((*it)->GetNext(),
              StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
}

TEST(TPUStrategyInputTest, SliceV3_32HasFourInputWorkersOfEightReplicas) {
  auto f = MakeStrategy("v3-32");
  const data::InputWorkers workers = f.strategy->data_input_workers();
  ASSERT_EQ(workers.num_workers(), 4);
  EXPECT_THAT(workers.replicas_per_worker[1],
              ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_EQ(workers.worker_devices[3],
            "/job:worker/replica:0/task:3/device:CPU:0");
  // range(64).batch(32): Case 1 → batch(1) minibatches m0..m63; DATA keeps m_w,
  // m_{w+4}, ... on worker w, dealt round-robin to its 8 replicas: replica 8w+j
  // gets m_{w+4j}, then m_{w+32+4j}.
  auto it = f.strategy->MakeDatasetIterator(data::Dataset::Range(64).Batch(32));
  ASSERT_TRUE(it.ok()) << it.status();
  auto step = (*it)->GetNext();
  ASSERT_TRUE(step.ok());
  for (int r = 0; r < 32; ++r) {
    const int w = r / 8, j = r % 8;
    EXPECT_THAT(Ints((*step)[r]), ElementsAre(w + 4 * j)) << "replica " << r;
  }
  step = (*it)->GetNext();
  ASSERT_TRUE(step.ok());
  EXPECT_THAT(Ints((*step)[31]), ElementsAre(3 + 32 + 28));
  EXPECT_THAT((*it)->GetNext(),
              StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
  // initialize() restarts the same sequence.
  ASSERT_TRUE((*it)->Initialize().ok());
  EXPECT_THAT(Ints((*(*it)->GetNext())[9]), ElementsAre(1 + 4));
}

TEST(TPUStrategyInputTest,
     DistributeDatasetsFromFunctionGetsOneContextPerHost) {
  // Spec (c) worked example (W=2, R=2, N=4).
  auto f = MakeStrategy("plain:2x2");
  std::vector<std::string> seen;
  absl::StatusOr<data::DistributedDataset> dist =
      f.strategy->ExperimentalDistributeDatasetsFromFunction(
          [&](const data::InputContext& ctx) {
            seen.push_back(absl::StrCat(ctx.input_pipeline_id(), "/",
                                        ctx.num_input_pipelines(), "/",
                                        ctx.num_replicas_in_sync()));
            return data::Dataset::Range(16)
                .Batch(*ctx.GetPerReplicaBatchSize(8))
                .Shard(ctx.num_input_pipelines(), ctx.input_pipeline_id());
          });
  ASSERT_TRUE(dist.ok()) << dist.status();
  EXPECT_THAT(seen, ElementsAre("0/2/4", "1/2/4"));
  auto it = DistributedInputIterator::Create(*dist);
  auto s1 = (*it)->GetNext();
  ASSERT_TRUE(s1.ok());
  EXPECT_THAT(Ints((*s1)[0]), ElementsAre(0, 1));
  EXPECT_THAT(Ints((*s1)[1]), ElementsAre(4, 5));
  EXPECT_THAT(Ints((*s1)[2]), ElementsAre(2, 3));
  EXPECT_THAT(Ints((*s1)[3]), ElementsAre(6, 7));
}

TEST(TPUStrategyInputTest,
     ExperimentalRunPullsFromTheDistributedIteratorAndReducesExactly) {
  // Spec (f) example 2: a last global batch of 6 over 2 replicas gives [0..3]
  // and [4,5]; SUM over axis 0 = 15, MEAN over axis 0 = 2.5 (f64 for integer
  // input).
  auto f = MakeStrategy("plain:1x2");
  auto it = f.strategy->MakeDatasetIterator(data::Dataset::Range(6).Batch(8));
  ASSERT_TRUE(it.ok()) << it.status();
  StepFunction identity(
      [](ReplicaContext&,
         const TracedNest& args) -> absl::StatusOr<TracedNest> {
        return args.children()[0];
      });
  absl::StatusOr<ValueNest> out =
      f.strategy->ExperimentalRun(identity, it->get());
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->is_leaf());
  absl::StatusOr<Value> sum = f.strategy->Reduce("sum", out->leaf(), 0);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->tensor().AsInt64(0), 15);
  absl::StatusOr<Value> mean = f.strategy->Reduce("MEAN", out->leaf(), 0);
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_EQ(mean->tensor().dtype(), runtime::DType::kF64);
  EXPECT_EQ(mean->tensor().AsDouble(0), 2.5);
  EXPECT_THAT(f.strategy->ExperimentalRun(identity, it->get()),
              StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
}

TEST(TPUStrategyInputTest, MakeInputFnIteratorRejectsOtherResults) {
  auto f = MakeStrategy("plain:2x1");
  auto it = f.strategy->MakeInputFnIterator(
      [](const data::InputContext&) { return data::InputFnResult(); });
  EXPECT_THAT(
      it,
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("input_fn must return a tf.data.Dataset or a callable")));
}

TEST(TPUStrategyInputTest, MakeInputFnIteratorWithACallableNeverEnds) {
  auto f = MakeStrategy("plain:2x1");
  int calls = 0;
  auto it = f.strategy->MakeInputFnIterator([&](const data::InputContext&) {
    return data::InputFnResult(
        data::ElementFn([&]() -> absl::StatusOr<data::Element> {
          return data::Element(Tensor::Scalar<int64_t>(calls++));
        }));
  });
  ASSERT_TRUE(it.ok()) << it.status();
  for (int step = 0; step < 3; ++step) {
    auto s = (*it)->GetNext();
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->num_replicas(), 2);
  }
  EXPECT_EQ(calls, 6);  // once per replica per step
}

TEST(TPUStrategyInputTest, NumpyDatasetLivesOnTheHostOfReplicaZero) {
  auto f = MakeStrategy("v3-32");
  absl::StatusOr<data::NumpyDataset> np =
      f.strategy->ExperimentalMakeNumpyDataset(data::Element(
          Tensor::Zeros(runtime::DType::kF32, runtime::Shape({10}))));
  ASSERT_TRUE(np.ok()) << np.status();
  EXPECT_EQ(np->host_device, "/job:worker/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(np->dataset.element_spec().leaf().ToString(), "float32[]");
}

TEST(TPUStrategyInputTest, SemanticsVersionIsPassedToTheDataLayer) {
  // range(8).batch(4) on 3 replicas: 2.2 gives [0,1]/[2,3]/[4,5] (Case 2,
  // m=2); 2.4 gives the balanced sizes [2,1,1]: [0,1]/[2]/[3].
  TPUStrategyOptions options;
  options.semantics_version = "2.4";
  auto f = MakeStrategy("plain:1x3", options);
  auto it = f.strategy->MakeDatasetIterator(data::Dataset::Range(8).Batch(4));
  ASSERT_TRUE(it.ok()) << it.status();
  auto s = (*it)->GetNext();
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(Ints((*s)[0]), ElementsAre(0, 1));
  EXPECT_THAT(Ints((*s)[1]), ElementsAre(2));
  EXPECT_THAT(Ints((*s)[2]), ElementsAre(3));

  options.semantics_version = "2.3";
  auto g = MakeStrategy("plain:1x3", options);
  EXPECT_THAT(g.strategy->MakeDatasetIterator(data::Dataset::Range(8).Batch(4)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2.3")));
}

}  // namespace
}  // namespace tpusim::strategy
