#include "scenarios/input_runner.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenarios/scenario_loader.h"

namespace tpusim::scenarios {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

InputListing MustRun(const std::string& text, int64_t max_steps = 1000) {
  absl::StatusOr<LoadedScenario> s = ParseScenario(text, "t", "");
  EXPECT_THAT(s, IsOk());
  RunInputOptions options;
  options.max_steps = max_steps;
  options.data_dir = ::testing::TempDir() + "/input_runner_test";
  absl::StatusOr<InputListing> listing = RunInputScenario(*s, options);
  EXPECT_THAT(listing, IsOk());
  return listing.ok() ? *listing : InputListing();
}

// Replica r's element at a step, as int64 values (single-tensor elements).
std::vector<int64_t> Values(const InputListing& l, int step, int replica) {
  const data::Element& e = l.steps.at(step).replicas.at(replica).element;
  auto v = e.leaf().values<int64_t>();
  return std::vector<int64_t>(v.begin(), v.end());
}

std::vector<std::vector<int64_t>> StepValues(const InputListing& l, int step) {
  std::vector<std::vector<int64_t>> out;
  for (size_t r = 0; r < l.steps.at(step).replicas.size(); ++r)
    out.push_back(Values(l, step, r));
  return out;
}

constexpr char kWorkedExample[] =
    "cluster { workers: 2 replicas_per_worker: 2 }\n"
    "pipeline { range { stop: 16 } }\npipeline { batch { batch_size: 8 } }\n";

TEST(InputRunnerTest, MultiWorkerWorkedExampleAutoFallsBackToData) {
  const InputListing l = MustRun(kWorkedExample);
  EXPECT_EQ(l.workers, 2);
  EXPECT_EQ(l.replicas, 4);
  EXPECT_THAT(l.replica_workers, ElementsAre(0, 0, 1, 1));
  EXPECT_EQ(l.semantics, "2.2");
  EXPECT_EQ(l.shard_policy, "AUTO");
  ASSERT_EQ(l.steps.size(), 2u);
  // Spec (b): step 1 r0=[0,1] r1=[4,5] r2=[2,3] r3=[6,7]; step 2 r0=[8,9]
  // r1=[12,13] r2=[10,11] r3=[14,15].
  EXPECT_THAT(StepValues(l, 0),
              ElementsAre(ElementsAre(0, 1), ElementsAre(4, 5),
                          ElementsAre(2, 3), ElementsAre(6, 7)));
  EXPECT_THAT(StepValues(l, 1),
              ElementsAre(ElementsAre(8, 9), ElementsAre(12, 13),
                          ElementsAre(10, 11), ElementsAre(14, 15)));
  EXPECT_EQ(l.steps[1].step, 1);
  EXPECT_EQ(l.steps[1].replicas[2].worker, 1);
  EXPECT_EQ(l.steps[1].replicas[2].replica, 2);
  EXPECT_THAT(l.end, StatusIs(absl::StatusCode::kOutOfRange,
                              HasSubstr("End of sequence")));
  EXPECT_EQ(l.end_at_step, 2);
  ASSERT_EQ(l.warnings.size(), 2u);
  EXPECT_THAT(l.warnings[0], HasSubstr("switching to DATA-based sharding"));
}

TEST(InputRunnerTest, MaxStepsStopsTheListingWithOk) {
  const InputListing l = MustRun(kWorkedExample, /*max_steps=*/1);
  ASSERT_EQ(l.steps.size(), 1u);
  EXPECT_THAT(l.end, IsOk());
  EXPECT_EQ(l.end_at_step, 1);
}

TEST(InputRunnerTest, PartialBatchGivesEmptyDummies) {
  const InputListing l = MustRun(
      "cluster { workers: 2 replicas_per_worker: 2 }\nshard_policy: DATA\n"
      "pipeline { range { stop: 10 } }\npipeline { batch { batch_size: 8 } "
      "}\n");
  ASSERT_EQ(l.steps.size(), 2u);
  EXPECT_THAT(StepValues(l, 1), ElementsAre(ElementsAre(8, 9), ElementsAre(),
                                            ElementsAre(), ElementsAre()));
  EXPECT_EQ(l.steps[1].replicas[3].element.leaf().shape(), runtime::Shape({0}));
  EXPECT_TRUE(l.warnings.empty());
}

TEST(InputRunnerTest, FileShardingAssignsFilesRoundRobin) {
  const InputListing l = MustRun(
      "cluster { workers: 2 replicas_per_worker: 1 }\nshard_policy: FILE\n"
      "file_set { name: \"t\" num_files: 4 records_per_file: 2 }\n"
      "pipeline { tfrecord { file_set: \"t\" } }\n"
      "pipeline { map { fn: \"parse_example\" feature { name: \"file\" } } }\n"
      "pipeline { batch { batch_size: 2 } }\n");
  // Worker 0 reads files 0 and 2, worker 1 files 1 and 3; minibatches of 1.
  std::vector<std::vector<int64_t>> files;
  for (size_t s = 0; s < l.steps.size(); ++s) {
    for (const ReplicaInput& r : l.steps[s].replicas) {
      auto v = r.element.children()[0].leaf().values<int64_t>();
      files.emplace_back(v.begin(), v.end());
    }
  }
  EXPECT_THAT(files, ElementsAre(ElementsAre(0), ElementsAre(1), ElementsAre(0),
                                 ElementsAre(1), ElementsAre(2), ElementsAre(3),
                                 ElementsAre(2), ElementsAre(3)));
  EXPECT_THAT(l.end, StatusIs(absl::StatusCode::kOutOfRange,
                              HasSubstr("End of sequence")));
}

TEST(InputRunnerTest, FewerFilesThanWorkersEndsAtStepZero) {
  const InputListing l = MustRun(
      "cluster { workers: 2 replicas_per_worker: 1 }\nshard_policy: FILE\n"
      "file_set { name: \"t\" num_files: 1 records_per_file: 4 }\n"
      "pipeline { tfrecord { file_set: \"t\" } }\npipeline { batch { "
      "batch_size: 2 } }\n");
  EXPECT_TRUE(l.steps.empty());
  EXPECT_EQ(l.end_at_step, 0);
  EXPECT_THAT(l.end, StatusIs(absl::StatusCode::kInvalidArgument,
                              HasSubstr("# elems = 1, # shards = 2")));
}

TEST(InputRunnerTest, FilePolicyOnRangeEndsWithNotFoundAtStepZero) {
  const InputListing l = MustRun(
      "cluster { workers: 2 replicas_per_worker: 1 }\nshard_policy: FILE\n"
      "pipeline { range { stop: 8 } }\npipeline { batch { batch_size: 2 } }\n");
  EXPECT_TRUE(l.steps.empty());
  EXPECT_THAT(l.end,
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("RangeDataset")));
}

TEST(InputRunnerTest, ScalarElementsAreRejectedAtDistributeTime) {
  const InputListing l = MustRun(
      "cluster { workers: 1 replicas_per_worker: 2 }\npipeline { range { stop: "
      "8 } }\n");
  EXPECT_TRUE(l.steps.empty());
  EXPECT_THAT(l.end,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank")));
}

TEST(InputRunnerTest, Semantics24BalancesTheRebatch) {
  const InputListing l = MustRun(
      "cluster { workers: 1 replicas_per_worker: 3 }\nsemantics: \"2.4\"\n"
      "pipeline { range { stop: 8 } }\npipeline { batch { batch_size: 4 } }\n");
  EXPECT_EQ(l.semantics, "2.4");
  ASSERT_EQ(l.steps.size(), 2u);
  EXPECT_THAT(StepValues(l, 0),
              ElementsAre(ElementsAre(0, 1), ElementsAre(2), ElementsAre(3)));
  EXPECT_THAT(StepValues(l, 1),
              ElementsAre(ElementsAre(4, 5), ElementsAre(6), ElementsAre(7)));
}

TEST(InputRunnerTest, Semantics22SplitsIntoPiecesOfCeilBOverN) {
  const InputListing l = MustRun(
      "cluster { workers: 1 replicas_per_worker: 3 }\n"
      "pipeline { range { stop: 8 } }\npipeline { batch { batch_size: 4 } }\n");
  ASSERT_EQ(l.steps.size(), 2u);
  EXPECT_THAT(
      StepValues(l, 0),
      ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3), ElementsAre(4, 5)));
  EXPECT_THAT(StepValues(l, 1),
              ElementsAre(ElementsAre(6, 7), ElementsAre(), ElementsAre()));
}

TEST(InputRunnerTest, FromFunctionWorkedExample) {
  const InputListing l = MustRun(
      "cluster { workers: 2 replicas_per_worker: 2 }\n"
      "api: DISTRIBUTE_DATASETS_FROM_FUNCTION\nglobal_batch_size: 8\n"
      "pipeline { range { stop: 16 } }\npipeline { batch { use_global_batch: "
      "true } }\n"
      "pipeline { shard { by_input_context: true } }\n");
  EXPECT_EQ(l.api, "DISTRIBUTE_DATASETS_FROM_FUNCTION");
  ASSERT_EQ(l.steps.size(), 2u);
  EXPECT_THAT(StepValues(l, 0),
              ElementsAre(ElementsAre(0, 1), ElementsAre(4, 5),
                          ElementsAre(2, 3), ElementsAre(6, 7)));
  EXPECT_THAT(StepValues(l, 1),
              ElementsAre(ElementsAre(8, 9), ElementsAre(12, 13),
                          ElementsAre(10, 11), ElementsAre(14, 15)));
  EXPECT_TRUE(l.warnings.empty());
}

TEST(InputRunnerTest, FromFunctionWithIndivisibleGlobalBatchEndsAtStepZero) {
  const InputListing l = MustRun(
      "cluster { workers: 1 replicas_per_worker: 3 }\n"
      "api: DISTRIBUTE_DATASETS_FROM_FUNCTION\nglobal_batch_size: 8\n"
      "pipeline { range { stop: 16 } }\npipeline { batch { use_global_batch: "
      "true } }\n");
  EXPECT_TRUE(l.steps.empty());
  EXPECT_THAT(l.end,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("global_batch_size 8 is not divisible by "
                                 "num_replicas_in_sync 3")));
}

TEST(InputRunnerTest, SliceNameGivesHostsAndDevices) {
  const InputListing l = MustRun(
      "cluster { slice: \"v4-16\" }\nshard_policy: DATA\n"
      "pipeline { range { stop: 32 } }\npipeline { batch { batch_size: 16 } "
      "}\n",
      /*max_steps=*/1);
  EXPECT_EQ(l.workers, 2);
  EXPECT_EQ(l.replicas, 8);
  EXPECT_THAT(l.replica_workers, ElementsAre(0, 0, 0, 0, 1, 1, 1, 1));
  EXPECT_THAT(Values(l, 0, 4), ElementsAre(2, 3));
}

TEST(InputRunnerTest, MessagesNameTheDataDirSymbolically) {
  const std::string data_dir = ::testing::TempDir() + "/input_runner_test";
  const InputListing l = MustRun(
      "cluster { workers: 1 replicas_per_worker: 1 }\n"
      "pipeline { tfrecord { file: \"" +
      data_dir +
      "/missing.tfrecord\" } }\n"
      "pipeline { batch { batch_size: 2 } }\n");
  EXPECT_TRUE(l.steps.empty());
  EXPECT_THAT(l.end, StatusIs(absl::StatusCode::kNotFound,
                              HasSubstr("<data-dir>/missing.tfrecord")));
  EXPECT_THAT(std::string(l.end.message()),
              ::testing::Not(HasSubstr(data_dir)));
}

TEST(InputRunnerTest, ScenarioProblemsFailTheRun) {
  absl::StatusOr<LoadedScenario> s = ParseScenario(
      "cluster { workers: 1 replicas_per_worker: 1 }\n"
      "pipeline { tfrecord { glob: \"no-such-*.tfrecord\" } }\n",
      "t", "/nonexistent");
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(RunInputScenario(*s, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no file matches")));
}

TEST(InputRunnerTest, BatchDropRemainderThenMapUnder22) {
  // The common TPU pipeline shape: batch(B, drop_remainder=True) then map.
  // The 2.2 Case-2 rewrite cuts every batch into B/N pieces and the map
  // follows (it used to keep its [8] spec and fail at the first step).
  const InputListing l = MustRun(
      "cluster { workers: 1 replicas_per_worker: 4 }\n"
      "pipeline { range { stop: 20 } }\n"
      "pipeline { batch { batch_size: 8 drop_remainder: true } }\n"
      "pipeline { map { fn: \"add_one\" } }\n"
      "semantics: \"2.2\"\n");
  EXPECT_THAT(l.end, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
  ASSERT_EQ(l.steps.size(), 2u);
  EXPECT_THAT(StepValues(l, 0),
              ElementsAre(ElementsAre(1, 2), ElementsAre(3, 4),
                          ElementsAre(5, 6), ElementsAre(7, 8)));
  EXPECT_THAT(StepValues(l, 1),
              ElementsAre(ElementsAre(9, 10), ElementsAre(11, 12),
                          ElementsAre(13, 14), ElementsAre(15, 16)));
}

// Records what a sink receives, in order.
class RecordingSink final : public ListingSink {
 public:
  absl::Status Begin(const InputListing& header) override {
    events.push_back(absl::StrCat("begin ", header.workers, "x",
                                  header.replicas, " warnings ",
                                  header.warnings.size()));
    return absl::OkStatus();
  }
  absl::Status Step(const InputStep& step) override {
    events.push_back(absl::StrCat("step ", step.step));
    if (step.step == stop_at) return absl::ResourceExhaustedError("full");
    return absl::OkStatus();
  }
  std::vector<std::string> events;
  int64_t stop_at = -1;
};

TEST(InputRunnerTest, ASinkGetsTheHeaderThenEveryStepAndTheListingKeepsNone) {
  absl::StatusOr<LoadedScenario> s = ParseScenario(kWorkedExample, "t", "");
  ASSERT_THAT(s, IsOk());
  RunInputOptions options;
  options.data_dir = ::testing::TempDir() + "/input_runner_test";
  RecordingSink sink;
  absl::StatusOr<InputListing> l = RunInputScenario(*s, options, sink);
  ASSERT_THAT(l, IsOk());
  EXPECT_THAT(sink.events,
              ElementsAre("begin 2x4 warnings 2", "step 0", "step 1"));
  EXPECT_TRUE(l->steps.empty());
  EXPECT_EQ(l->end_at_step, 2);
  EXPECT_THAT(l->end, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
  // A sink error stops the run and is its result.
  RecordingSink stopping;
  stopping.stop_at = 0;
  EXPECT_THAT(RunInputScenario(*s, options, stopping),
              StatusIs(absl::StatusCode::kResourceExhausted, "full"));
  EXPECT_THAT(stopping.events, ElementsAre("begin 2x4 warnings 2", "step 0"));
}

}  // namespace
// Issue 7: only the data directory as a path is hidden: "--data-dir <tmp>/data"
// must not turn "<tmp>/dataset" into "<data-dir>set".
TEST(InputRunnerTest, DataDirIsHiddenOnlyWhereItIsThePath) {
  const std::string tmp = ::testing::TempDir() + "/input_runner_hide";
  absl::StatusOr<LoadedScenario> s = ParseScenario(
      "cluster { workers: 1 replicas_per_worker: 1 }\n"
      "pipeline { tfrecord { file: \"" +
          tmp +
          "/dataset/missing.tfrecord\" } }\n"
          "pipeline { batch { batch_size: 2 } }\n",
      "t", "");
  ASSERT_THAT(s, IsOk());
  RunInputOptions options;
  options.data_dir = tmp + "/data";
  absl::StatusOr<InputListing> l = RunInputScenario(*s, options);
  ASSERT_THAT(l, IsOk());
  EXPECT_THAT(l->end, StatusIs(absl::StatusCode::kNotFound,
                               "cannot open TFRecord file \"" + tmp +
                                   "/dataset/missing.tfrecord\": No such file "
                                   "or directory"));
  std::filesystem::remove_all(tmp);
}

// Issue 7: the memory budget reaches the distributed pipeline.
TEST(InputRunnerTest, MaxMemoryBoundsTheInputBuffers) {
  absl::StatusOr<LoadedScenario> s = ParseScenario(
      "cluster { workers: 1 replicas_per_worker: 1 }\n"
      "pipeline { range { stop: 100 } }\n"
      "pipeline { batch { batch_size: 8 } }\n",
      "t", "");
  ASSERT_THAT(s, IsOk());
  RunInputOptions options;
  options.data_dir = ::testing::TempDir() + "/input_runner_test";
  options.max_memory = common::Bytes(1000);
  absl::StatusOr<InputListing> l = RunInputScenario(*s, options);
  ASSERT_THAT(l, IsOk());
  EXPECT_TRUE(l->steps.empty());
  // 8 x 264 = 2112 bytes for the global batch of 8 int64 scalars.
  EXPECT_THAT(l->end,
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "batch(batch_size=8): 8 elements of int64[] need an "
                       "estimated 2112 bytes, more than the memory budget of "
                       "1000 bytes (1000 B; Options.max_memory, tpusim "
                       "--max-memory)"));
}

}  // namespace tpusim::scenarios
