// tests/strategy/data/auto_shard_test.cc
//
// Auto-shard policies over TFRecord files the test writes: FILE (round-robin
// file assignment, shuffle moved after the shard, readers inside
// flat_map/interleave), fewer files than workers, DATA, AUTO's fallback and its
// double sharding, FILE after a Case-2/fallback rebatch.

#include "strategy/data/auto_shard.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/data/dataset.h"
#include "strategy/data/dataset_nodes.h"
#include "strategy/data/distribute.h"
#include "strategy/data/tfrecord.h"
#include "tests/strategy/data/distribute_test_util.h"

namespace tpusim::data {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

// Writes `num_files` TFRecord files "f<k>.tfrecord" with records "f<k>r<j>", j
// < records_per_file, into a fresh directory; returns their paths in order.
std::vector<std::string> WriteFiles(const std::string& tag, int num_files,
                                    int records_per_file) {
  std::string dir = absl::StrCat(::testing::TempDir(), "/auto_shard_", tag);
  std::string cmd = absl::StrCat("mkdir -p ", dir);
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::vector<std::string> paths;
  for (int k = 0; k < num_files; ++k) {
    std::vector<std::string> records;
    for (int j = 0; j < records_per_file; ++j)
      records.push_back(absl::StrCat("f", k, "r", j));
    std::string path = absl::StrCat(dir, "/f", k, ".tfrecord");
    EXPECT_THAT(WriteTFRecordFile(path, records), IsOk());
    paths.push_back(path);
  }
  return paths;
}

// Every string of every element (flattened), in order.
std::vector<std::string> Strings(const Dataset& ds,
                                 absl::Status* status = nullptr) {
  std::vector<std::string> out;
  absl::StatusOr<IteratorPtr> it = ds.MakeIterator();
  if (!it.ok()) {
    if (status) *status = it.status();
    return out;
  }
  while (true) {
    absl::StatusOr<std::optional<Element>> e = (*it)->GetNext();
    if (!e.ok()) {
      if (status) *status = e.status();
      return out;
    }
    if (!e->has_value()) break;
    for (const Tensor* t : (*e)->Flatten()) {
      if (t->dtype() != DType::kBytes) continue;
      for (const std::string& s : t->values<std::string>()) out.push_back(s);
    }
  }
  if (status) *status = absl::OkStatus();
  return out;
}

std::vector<std::string> RecordsOf(std::vector<int> files,
                                   int records_per_file) {
  std::vector<std::string> out;
  for (int k : files) {
    for (int j = 0; j < records_per_file; ++j)
      out.push_back(absl::StrCat("f", k, "r", j));
  }
  return out;
}

Options Policy(AutoShardPolicy p) {
  Options o;
  o.auto_shard_policy = p;
  return o;
}

int CountOps(const NodePtr& root, absl::string_view op) {
  int n = 0;
  for (const NodePtr& node : TopologicalOrder(root))
    n += node->op() == op ? 1 : 0;
  return n;
}

TEST(AutoShardTest, FileAssignsFilesRoundRobinByPosition) {
  std::vector<std::string> files = WriteFiles("rr", 5, 2);
  Dataset ds = Dataset::TFRecord(files);
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<NodePtr> sharded = ShardByFile(ds.node(), 2, i);
    ASSERT_THAT(sharded, IsOk());
    EXPECT_EQ(
        Strings(Dataset(*sharded)),
        RecordsOf(i == 0 ? std::vector<int>{0, 2, 4} : std::vector<int>{1, 3},
                  2));
  }
  // The shard sits on the flat_map's file-name input and is require-non-empty.
  absl::StatusOr<NodePtr> sharded = ShardByFile(ds.node(), 2, 1);
  ASSERT_THAT(sharded, IsOk());
  ASSERT_EQ((*sharded)->op(), FlatMapNode::kOp);
  EXPECT_EQ((*sharded)->inputs()[0]->ShortString(),
            "ShardDataset(num_shards=2, index=1, require_non_empty=true)");
}

TEST(AutoShardTest, FileWalksThroughPaddedBatch) {
  std::vector<std::string> files = WriteFiles("padded", 4, 2);
  Dataset ds = Dataset::TFRecord(files).PaddedBatch(2);
  ASSERT_THAT(ds.status(), IsOk());
  absl::StatusOr<NodePtr> sharded = ShardByFile(ds.node(), 2, 1);
  ASSERT_THAT(sharded, IsOk());
  EXPECT_EQ((*sharded)->op(), PaddedBatchNode::kOp);
  EXPECT_EQ(Strings(Dataset(*sharded)),
            (std::vector<std::string>{"f1r0", "f1r1", "f3r0", "f3r1"}));
}

TEST(AutoShardTest, FileWalksThroughMapAndBatch) {
  std::vector<std::string> files = WriteFiles("map_and_batch", 4, 2);
  MapFunction identity;
  identity.name = "identity";
  identity.fn = [](const Element& e) -> absl::StatusOr<Element> { return e; };
  Dataset ds = Dataset::TFRecord(files).MapAndBatch(identity, 2);
  ASSERT_THAT(ds.status(), IsOk());
  absl::StatusOr<NodePtr> sharded = ShardByFile(ds.node(), 2, 1);
  ASSERT_THAT(sharded, IsOk());
  EXPECT_EQ((*sharded)->op(), MapAndBatchNode::kOp);
  EXPECT_EQ(Strings(Dataset(*sharded)),
            (std::vector<std::string>{"f1r0", "f1r1", "f3r0", "f3r1"}));
}

TEST(AutoShardTest, WindowFlatMapOverReadersFallsBackToData) {
  // The walk meets the flat_map over windows; its body holds no reader (it
  // reads the window) and a flat_map is not a pass-through op, so FILE finds
  // nothing and AUTO shards by DATA (as TF's auto_shard.cc).
  std::vector<std::string> files = WriteFiles("window", 2, 2);
  Dataset ds = Dataset::TFRecord(files).Window(2).FlatMap(
      [](const WindowArg& w) { return w.dataset().Batch(2); });
  absl::StatusOr<AutoShardResult> r = AutoShard(
      ds.node(), 2, 1, AutoShardPolicy::kAuto, 2, SemanticsVersion::k2_2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->applied, AutoShardPolicy::kData);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_THAT(r->warnings[0], HasSubstr("FlatMapDataset"));
  EXPECT_THAT(ShardByFile(ds.node(), 2, 1).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("walked to FlatMapDataset")));
}

TEST(AutoShardTest, FileFindsReadersInsideInterleaveAndThroughPassThroughOps) {
  std::vector<std::string> files = WriteFiles("interleave", 4, 3);
  TFRecordOptions parallel;
  parallel.num_parallel_reads = 2;
  Dataset ds =
      Dataset::TFRecord(files, parallel).Shuffle(4, 7).Repeat(1).Prefetch(1);
  absl::StatusOr<NodePtr> sharded = ShardByFile(ds.node(), 2, 1);
  ASSERT_THAT(sharded, IsOk());
  std::vector<std::string> got = Strings(Dataset(*sharded));
  EXPECT_THAT(got, UnorderedElementsAreArray(RecordsOf({1, 3}, 3)));
}

TEST(AutoShardTest, FileShardsEveryZipAndConcatenateInput) {
  std::vector<std::string> a = WriteFiles("cat_a", 2, 1);
  std::vector<std::string> b = WriteFiles("cat_b", 2, 1);
  Dataset ds =
      Dataset::TFRecord(a).Concatenate(Dataset::TFRecord({b[1], b[0]}));
  absl::StatusOr<NodePtr> sharded = ShardByFile(ds.node(), 2, 0);
  ASSERT_THAT(sharded, IsOk());
  EXPECT_EQ(CountOps(*sharded, "ShardDataset"), 2);  // one per reader branch
  EXPECT_EQ(Strings(Dataset(*sharded)),
            (std::vector<std::string>{"f0r0", "f1r0"}));
}

TEST(AutoShardTest, FileMovesTheListFilesShuffleAfterTheShard) {
  std::vector<std::string> files = WriteFiles("shuffle", 6, 1);
  // list_files(shuffle=true) builds from_tensor_slices(names).shuffle(#files,
  // seed).
  Dataset names = Dataset::FromTensorSlices(
                      TensorRefNest(TensorRef(
                          Tensor::FromVector<std::string>(Shape({6}), files))))
                      .Shuffle(6, 42);
  Dataset ds = Dataset::TFRecord(names);
  absl::StatusOr<NodePtr> sharded = ShardByFile(ds.node(), 2, 1);
  ASSERT_THAT(sharded, IsOk());
  const NodePtr& file_input = (*sharded)->inputs()[0];
  EXPECT_EQ(file_input->op(), ShuffleNode::kOp);
  EXPECT_EQ(file_input->inputs()[0]->op(), "ShardDataset");
  EXPECT_EQ(file_input->inputs()[0]->inputs()[0]->op(), TensorSliceNode::kOp);
  // Worker 1 gets files 1, 3, 5 (positions in the unshuffled list), in shuffled
  // order.
  std::vector<std::string> got = Strings(Dataset(*sharded));
  EXPECT_THAT(got, UnorderedElementsAreArray(RecordsOf({1, 3, 5}, 1)));
}

TEST(AutoShardTest, ListFilesShuffleIsAppliedToEachWorkersSubset) {
  std::vector<std::string> files = WriteFiles("list_files", 6, 2);
  const std::string dir = files[0].substr(0, files[0].rfind('/'));
  Dataset ds =
      Dataset::TFRecord(Dataset::ListFiles({dir + "/*.tfrecord"}, true, 3));
  ASSERT_TRUE(ds.ok()) << ds.status();
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<NodePtr> sharded = ShardByFile(ds.node(), 3, i);
    ASSERT_THAT(sharded, IsOk());
    EXPECT_EQ((*sharded)->inputs()[0]->op(), ShuffleNode::kOp);
    EXPECT_EQ((*sharded)->inputs()[0]->inputs()[0]->op(), "ShardDataset");
    // Files matched in bytewise order f0..f5; worker i gets positions i and
    // i+3.
    EXPECT_THAT(Strings(Dataset(*sharded)),
                UnorderedElementsAreArray(RecordsOf({i, i + 3}, 2)));
  }
}

TEST(AutoShardTest, AutoOverConcatenateOfReaderAndSlicesShardsTwice) {
  std::vector<std::string> files = WriteFiles("concat_auto", 2, 2);
  Dataset slices = Dataset::FromTensorSlices(TensorRefNest(TensorRef(
      Tensor::FromVector<std::string>(Shape({4}), {"s0", "s1", "s2", "s3"}))));
  Dataset cat = Dataset::TFRecord(files).Concatenate(slices);
  absl::StatusOr<AutoShardResult> r = AutoShard(
      cat.node(), 2, 1, AutoShardPolicy::kAuto, 2, SemanticsVersion::k2_2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->applied, AutoShardPolicy::kData);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_THAT(r->warnings[0], HasSubstr("TensorSliceDataset"));
  // Worker 1: file f1 (f1r0, f1r1) then s0..s3; the DATA shard keeps odd
  // positions.
  EXPECT_EQ(Strings(Dataset(r->node)),
            (std::vector<std::string>{"f1r1", "s1", "s3"}));
}

TEST(AutoShardTest, TopLevelReaderWithConstantFilesIsNotFound) {
  std::vector<std::string> files = WriteFiles("direct", 3, 2);
  Dataset ds = Dataset::TFRecordReader(
      TensorRef(Tensor::FromVector<std::string>(Shape({3}), files)));
  EXPECT_THAT(ShardByFile(ds.node(), 2, 0),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("unable to shard"),
                             HasSubstr("TFRecordDataset"))));
  // AUTO then shards by data: worker 0 keeps records 0, 2, 4 of the 6.
  absl::StatusOr<AutoShardResult> r = AutoShard(
      ds.node(), 2, 0, AutoShardPolicy::kAuto, 2, SemanticsVersion::k2_2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(Strings(Dataset(r->node)),
            (std::vector<std::string>{"f0r0", "f1r0", "f2r0"}));
}

TEST(AutoShardTest, FlatMapReadingAConstantFileIsNotAReaderFunction) {
  std::vector<std::string> files = WriteFiles("const_body", 1, 1);
  const std::string file = files[0];
  Dataset ds = Dataset::Range(2).FlatMap([file](const FunctionArg&) {
    return Dataset::TFRecordReader(
        TensorRef(Tensor::Scalar<std::string>(file)));
  });
  EXPECT_THAT(
      ShardByFile(ds.node(), 2, 0),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("FlatMapDataset")));
}

TEST(AutoShardTest, NestedReaderFunctionCounts) {
  std::vector<std::string> files = WriteFiles("nested", 4, 1);
  Dataset names = Dataset::FromTensorSlices(TensorRefNest(
      TensorRef(Tensor::FromVector<std::string>(Shape({4}), files))));
  Dataset ds = names.FlatMap([](const FunctionArg& arg) {
    return Dataset::FromTensors(arg.nest())
        .FlatMap([](const FunctionArg& inner) {
          return Dataset::TFRecordReader(inner.leaf());
        });
  });
  absl::StatusOr<NodePtr> sharded = ShardByFile(ds.node(), 2, 1);
  ASSERT_THAT(sharded, IsOk());
  EXPECT_EQ(Strings(Dataset(*sharded)),
            (std::vector<std::string>{"f1r0", "f3r0"}));
}

TEST(AutoShardTest, AllUpstreamShufflesAreRemovedAndTheDeepestIsReinserted) {
  std::vector<std::string> files = WriteFiles("two_shuffles", 4, 1);
  Dataset names = Dataset::FromTensorSlices(
                      TensorRefNest(TensorRef(
                          Tensor::FromVector<std::string>(Shape({4}), files))))
                      .Shuffle(4, 1)
                      .Take(4)
                      .Shuffle(2, 2);
  absl::StatusOr<NodePtr> sharded =
      ShardByFile(Dataset::TFRecord(names).node(), 2, 0);
  ASSERT_THAT(sharded, IsOk());
  const NodePtr& shuffle = (*sharded)->inputs()[0];
  ASSERT_EQ(shuffle->op(), ShuffleNode::kOp);
  EXPECT_EQ(static_cast<const ShuffleNode&>(*shuffle).seed(), 1u);
  EXPECT_EQ(static_cast<const ShuffleNode&>(*shuffle).buffer_size(), 4);
  EXPECT_EQ(shuffle->inputs()[0]->op(), "ShardDataset");
  EXPECT_EQ(shuffle->inputs()[0]->inputs()[0]->op(), TakeNode::kOp);
  EXPECT_EQ(shuffle->inputs()[0]->inputs()[0]->inputs()[0]->op(),
            TensorSliceNode::kOp);
  EXPECT_EQ(CountOps(*sharded, ShuffleNode::kOp), 1);
  EXPECT_THAT(Strings(Dataset(*sharded)),
              UnorderedElementsAreArray(RecordsOf({0, 2}, 1)));
}

TEST(AutoShardTest, FileOnUnshardableSourcesIsNotFound) {
  EXPECT_THAT(ShardByFile(Dataset::Range(8).Batch(2).node(), 2, 0),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("unshardable source"),
                             HasSubstr("RangeDataset"))));
  EXPECT_THAT(
      ShardByFile(Dataset::FromTensorSlices(
                      TensorRefNest(TensorRef(Tensor::Vector<int64_t>({1, 2}))))
                      .node(),
                  2, 0),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("TensorSliceDataset")));
  EXPECT_THAT(
      ShardByFile(Dataset::FromTensors(
                      TensorRefNest(TensorRef(Tensor::Vector<int64_t>({1}))))
                      .node(),
                  2, 0),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("TensorDataset")));
}

TEST(AutoShardTest, FileCannotSeeThroughAFlatMapWithoutReader) {
  std::vector<std::string> files = WriteFiles("noreader", 2, 1);
  Dataset ds = Dataset::TFRecord(files).Batch(2).FlatMap(
      [](const FunctionArg& a) { return Dataset::FromTensorSlices(a.nest()); });
  EXPECT_THAT(ShardByFile(ds.node(), 2, 0),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("did not find a shardable source"),
                             HasSubstr("FlatMapDataset"))));
}

TEST(AutoShardTest, FewerFilesThanWorkersFailsAtIterationNamingBothNumbers) {
  std::vector<std::string> files = WriteFiles("few", 2, 2);
  Dataset ds = Dataset::TFRecord(files).Batch(3).WithOptions(
      Policy(AutoShardPolicy::kFile));
  // N = 3 replicas (W=3, R=1): batch(3) → Case 1 batch(1), so FILE applies.
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(ds, InputWorkers::Uniform(3, 1));
  ASSERT_THAT(dist, IsOk());
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(dist->applied_policy(i), AutoShardPolicy::kFile);
  absl::Status s0, s1, s2;
  EXPECT_TRUE(Strings(dist->worker_dataset(0), &s0).empty());
  EXPECT_TRUE(Strings(dist->worker_dataset(1), &s1).empty());
  EXPECT_TRUE(Strings(dist->worker_dataset(2), &s2).empty());
  EXPECT_THAT(
      s0, StatusIs(absl::StatusCode::kInvalidArgument,
                   AllOf(HasSubstr("# elems = 2"), HasSubstr("# shards = 3"),
                         HasSubstr("DATA or OFF"))));
  EXPECT_THAT(s1, StatusIs(absl::StatusCode::kInvalidArgument,
                           HasSubstr("# elems = 2")));
  EXPECT_THAT(s2, IsOk());  // worker 2 >= F: an empty stream
  // Through the distributed iterator the first step fails.
  testing::RunResult r = testing::RunToEnd(*dist);
  EXPECT_TRUE(r.steps.empty());
  EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kInvalidArgument,
                              HasSubstr("# shards = 3")));
}

TEST(AutoShardTest, AutoDoesNotFallBackForFewerFiles) {
  std::vector<std::string> files = WriteFiles("few_auto", 1, 2);
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::TFRecord(files).Batch(2), InputWorkers::Uniform(2, 1));
  ASSERT_THAT(dist, IsOk());
  EXPECT_EQ(dist->applied_policy(0), AutoShardPolicy::kFile);
  EXPECT_TRUE(dist->warnings().empty());
  testing::RunResult r = testing::RunToEnd(*dist);
  EXPECT_THAT(r.end, StatusIs(absl::StatusCode::kInvalidArgument,
                              AllOf(HasSubstr("# elems = 1"),
                                    HasSubstr("# shards = 2"))));
}

TEST(AutoShardTest, FileShardedDistributionDeliversEachWorkersFiles) {
  std::vector<std::string> files = WriteFiles("dist", 4, 2);
  // W=2, R=1, batch(2) → Case 1 batch(1): worker 0 reads f0, f2; worker 1 reads
  // f1, f3.
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::TFRecord(files).Batch(2), InputWorkers::Uniform(2, 1));
  ASSERT_THAT(dist, IsOk());
  EXPECT_TRUE(dist->warnings().empty());
  EXPECT_EQ(Strings(dist->worker_dataset(0)), RecordsOf({0, 2}, 2));
  EXPECT_EQ(Strings(dist->worker_dataset(1)), RecordsOf({1, 3}, 2));
  absl::StatusOr<DistributedIterator> it = dist->MakeIterator();
  ASSERT_THAT(it, IsOk());
  absl::StatusOr<strategy::PerReplica<Element>> step = it->GetNext();
  ASSERT_THAT(step, IsOk());
  EXPECT_EQ((*step)[0].leaf(), Tensor::Vector<std::string>({"f0r0"}));
  EXPECT_EQ((*step)[1].leaf(), Tensor::Vector<std::string>({"f1r0"}));
}

TEST(AutoShardTest, FileAfterCase2RebatchIsNotFoundAndAutoFallsBackToData) {
  std::vector<std::string> files = WriteFiles("case2", 4, 3);
  Dataset ds = Dataset::TFRecord(files).Batch(3);  // 3 % 2 != 0 → Case 2
  EXPECT_THAT(
      DistributeDataset(ds.WithOptions(Policy(AutoShardPolicy::kFile)),
                        InputWorkers::Uniform(2, 1)),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("FlatMapDataset")));
  Dataset dropped = Dataset::TFRecord(files).Batch(4, /*drop_remainder=*/true);
  EXPECT_THAT(
      DistributeDataset(dropped.WithOptions(Policy(AutoShardPolicy::kFile)),
                        InputWorkers::Uniform(2, 1)),
      StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(ds, InputWorkers::Uniform(2, 1));
  ASSERT_THAT(dist, IsOk());
  EXPECT_EQ(dist->applied_policy(0), AutoShardPolicy::kData);
  ASSERT_EQ(dist->warnings().size(), 2u);
  EXPECT_THAT(dist->warnings()[1],
              AllOf(HasSubstr("worker 1 of 2"),
                    HasSubstr("switching to DATA-based sharding")));
  // DATA over minibatches: batches of 3 records split into [2],[1] pieces;
  // worker 0 keeps even minibatches.
  EXPECT_EQ(Strings(dist->worker_dataset(0)),
            (std::vector<std::string>{"f0r0", "f0r1", "f1r0", "f1r1", "f2r0",
                                      "f2r1", "f3r0", "f3r1"}));
}

TEST(AutoShardTest, FileAfterFallbackRebatchIsNotFound) {
  std::vector<std::string> files = WriteFiles("fallback", 2, 1);
  MapFunction pair;
  pair.fn = [](const Element& e) -> absl::StatusOr<Element> {
    const std::string& s = e.leaf().scalar<std::string>();
    return Element(Tensor::Vector<std::string>({s, s}));
  };
  pair.output_spec = ElementSpec(TensorSpec{DType::kBytes, Shape({2})});
  Dataset ds = Dataset::TFRecord(files).Map(pair);  // no batch op → fallback
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(ds.WithOptions(Policy(AutoShardPolicy::kAuto)),
                        InputWorkers::Uniform(2, 1));
  ASSERT_THAT(dist, IsOk());
  EXPECT_EQ(*dist->rebatch_kind(), RebatchKind::kFallback);
  EXPECT_EQ(dist->applied_policy(0), AutoShardPolicy::kData);
  EXPECT_THAT(DistributeDataset(ds.WithOptions(Policy(AutoShardPolicy::kFile)),
                                InputWorkers::Uniform(2, 1)),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST(AutoShardTest, AutoOverZipOfReaderAndRangeShardsTwice) {
  std::vector<std::string> files = WriteFiles("zip", 4, 2);
  Dataset zip = Dataset::Zip({Dataset::TFRecord(files), Dataset::Range(100)});
  absl::StatusOr<AutoShardResult> r = AutoShard(
      zip.node(), 2, 0, AutoShardPolicy::kAuto, 2, SemanticsVersion::k2_2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->applied, AutoShardPolicy::kData);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_THAT(r->warnings[0], HasSubstr("RangeDataset"));
  EXPECT_EQ(r->node->op(), "ShardDataset");  // the DATA shard at the end
  // The file list was sharded too: worker 0 reads f0, f2 (4 records) zipped
  // with 0..3, and the DATA shard keeps elements 0 and 2 of that.
  absl::StatusOr<std::vector<Element>> all = Dataset(r->node).Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].children()[0].leaf().scalar<std::string>(), "f0r0");
  EXPECT_EQ((*all)[0].children()[1].leaf().scalar<int64_t>(), 0);
  EXPECT_EQ((*all)[1].children()[0].leaf().scalar<std::string>(), "f2r0");
  EXPECT_EQ((*all)[1].children()[1].leaf().scalar<int64_t>(), 2);
}

TEST(AutoShardTest, AutoOverZipWithRangeFirstOnlyShardsByData) {
  std::vector<std::string> files = WriteFiles("zip_range_first", 4, 1);
  Dataset zip = Dataset::Zip({Dataset::Range(100), Dataset::TFRecord(files)});
  absl::StatusOr<AutoShardResult> r = AutoShard(
      zip.node(), 2, 1, AutoShardPolicy::kAuto, 2, SemanticsVersion::k2_2);
  ASSERT_THAT(r, IsOk());
  // The walk stops at the range (first input), so the reader is not sharded.
  absl::StatusOr<std::vector<Element>> all = Dataset(r->node).Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].children()[1].leaf().scalar<std::string>(), "f1r0");
  EXPECT_EQ((*all)[1].children()[1].leaf().scalar<std::string>(), "f3r0");
}

TEST(AutoShardTest, DataAppendsARequireNonEmptyShardAtTheEnd) {
  absl::StatusOr<AutoShardResult> r =
      AutoShard(Dataset::Range(10).Batch(2).node(), 3, 1,
                AutoShardPolicy::kData, 3, SemanticsVersion::k2_2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->node->ShortString(),
            "ShardDataset(num_shards=3, index=1, require_non_empty=true)");
  EXPECT_EQ(testing::DatasetValues(Dataset(r->node)),
            (std::vector<testing::Values>{{2, 3}, {8, 9}}));
  EXPECT_TRUE(r->warnings.empty());
}

TEST(AutoShardTest, OffAndSingleWorkerChangeNothing) {
  NodePtr node = Dataset::Range(10).Batch(2).node();
  absl::StatusOr<AutoShardResult> off =
      AutoShard(node, 3, 1, AutoShardPolicy::kOff, 3, SemanticsVersion::k2_2);
  ASSERT_THAT(off, IsOk());
  EXPECT_EQ(off->node, node);
  EXPECT_EQ(off->applied, AutoShardPolicy::kOff);
  for (AutoShardPolicy p : {AutoShardPolicy::kAuto, AutoShardPolicy::kFile,
                            AutoShardPolicy::kData}) {
    absl::StatusOr<AutoShardResult> one =
        AutoShard(node, 1, 0, p, 8, SemanticsVersion::k2_2);
    ASSERT_THAT(one, IsOk());
    EXPECT_EQ(one->node, node);
    EXPECT_TRUE(one->warnings.empty());
  }
}

TEST(AutoShardTest, InvalidArgumentsAreRejected) {
  NodePtr node = Dataset::Range(10).Batch(2).node();
  EXPECT_THAT(
      AutoShard(node, 2, 2, AutoShardPolicy::kData, 2, SemanticsVersion::k2_2),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("index=2")));
  EXPECT_THAT(
      AutoShard(node, 0, 0, AutoShardPolicy::kData, 2, SemanticsVersion::k2_2),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_workers=0")));
  EXPECT_THAT(AutoShard(node, 2, 0, static_cast<AutoShardPolicy>(7), 2,
                        SemanticsVersion::k2_2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown policy 7")));
  EXPECT_THAT(MakeRequireNonEmptyShard(node, 0, 0, SemanticsVersion::k2_2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("currently num_shards = 0")));
}

TEST(AutoShardTest, RequireNonEmptyShardErrorsOnlyOnceThenEnds) {
  absl::StatusOr<NodePtr> shard = MakeRequireNonEmptyShard(
      Dataset::Range(1).node(), 2, 0, SemanticsVersion::k2_2);
  ASSERT_THAT(shard, IsOk());
  absl::StatusOr<IteratorPtr> it = Dataset(*shard).MakeIterator();
  ASSERT_THAT(it, IsOk());
  EXPECT_THAT((*it)->GetNext(), StatusIs(absl::StatusCode::kInvalidArgument,
                                         AllOf(HasSubstr("# elems = 1"),
                                               HasSubstr("# shards = 2"))));
  absl::StatusOr<std::optional<Element>> next = (*it)->GetNext();
  ASSERT_THAT(next, IsOk());
  EXPECT_FALSE(next->has_value());
}

TEST(AutoShardTest, FileShardingWorksThroughThe24Rebatch) {
  // 2.4 has no Case-2 flat_map: FILE passes through RebatchDatasetV2.
  std::vector<std::string> files = WriteFiles("v24", 4, 3);
  DistributeOptions o;
  o.semantics_version = "2.4";
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(Dataset::TFRecord(files).Batch(3).WithOptions(
                            Policy(AutoShardPolicy::kFile)),
                        InputWorkers::Uniform(2, 1), o);
  ASSERT_THAT(dist, IsOk());
  EXPECT_EQ(Strings(dist->worker_dataset(0)), RecordsOf({0, 2}, 3));
  EXPECT_EQ(Strings(dist->worker_dataset(1)), RecordsOf({1, 3}, 3));
}

TEST(AutoShardTest, FewerFilesThanWorkersAlsoFailsUnder24) {
  std::vector<std::string> files = WriteFiles("few_v24", 1, 3);
  DistributeOptions o;
  o.semantics_version = "2.4";
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::TFRecord(files).Batch(4), InputWorkers::Uniform(2, 2), o);
  ASSERT_THAT(dist, IsOk());
  EXPECT_EQ(dist->applied_policy(1), AutoShardPolicy::kFile);
  testing::RunResult r = testing::RunToEnd(*dist);
  EXPECT_TRUE(r.steps.empty());
  EXPECT_THAT(r.end,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("Could not apply FILE based sharding"),
                             HasSubstr("only has 1 file(s)"),
                             HasSubstr("required 2 shards/workers"))));
  absl::Status s1;
  EXPECT_TRUE(Strings(dist->worker_dataset(1), &s1).empty());
  EXPECT_THAT(s1, IsOk());
}

TEST(AutoShardTest, FileShardedWorkersFeedTheirReplicasRoundRobin) {
  // W=2, R=2, N=4, batch(4) → Case 1 batch(1); worker 0 reads f0, f2; worker 1
  // f1, f3.
  std::vector<std::string> files = WriteFiles("rr_replicas", 4, 2);
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::TFRecord(files).Batch(4), InputWorkers::Uniform(2, 2));
  ASSERT_THAT(dist, IsOk());
  absl::StatusOr<DistributedIterator> it = dist->MakeIterator();
  ASSERT_THAT(it, IsOk());
  std::vector<std::vector<std::string>> steps;
  while (true) {
    absl::StatusOr<strategy::PerReplica<Element>> step = it->GetNext();
    if (!step.ok()) {
      EXPECT_THAT(step, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
      break;
    }
    std::vector<std::string> row;
    for (const Element& e : step->values()) {
      auto v = e.leaf().values<std::string>();
      row.push_back(v.empty() ? "-" : v[0]);
    }
    steps.push_back(row);
  }
  EXPECT_EQ(steps, (std::vector<std::vector<std::string>>{
                       {"f0r0", "f0r1", "f1r0", "f1r1"},
                       {"f2r0", "f2r1", "f3r0", "f3r1"}}));
}

// A generator yielding the int64 scalars 0..count-1, restarting per iterator.
GeneratorFactory CountingGenerator(int64_t count) {
  return [count]() -> GeneratorFn {
    auto next = std::make_shared<int64_t>(0);
    return [next, count]() -> absl::StatusOr<std::optional<Element>> {
      if (*next >= count) return std::optional<Element>();
      return std::optional<Element>(Element(Tensor::Scalar<int64_t>((*next)++)));
    };
  };
}

TEST(AutoShardTest, GeneratorSourceIsNotFileShardableAutoFallsBackToData) {
  Dataset gen = Dataset::FromGenerator(
      CountingGenerator(6), ElementSpec(TensorSpec{DType::kI64, Shape()}));
  ASSERT_THAT(gen.status(), IsOk());
  // Each iterator calls the factory anew: two passes give the same elements.
  EXPECT_EQ(testing::DatasetValues(gen),
            (std::vector<testing::Values>{{0}, {1}, {2}, {3}, {4}, {5}}));
  EXPECT_EQ(testing::DatasetValues(gen).size(), 6u);
  absl::StatusOr<AutoShardResult> r = AutoShard(
      gen.node(), 2, 1, AutoShardPolicy::kAuto, 2, SemanticsVersion::k2_2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->applied, AutoShardPolicy::kData);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_THAT(r->warnings[0], HasSubstr("GeneratorDataset"));
  EXPECT_EQ(testing::DatasetValues(Dataset(r->node)),
            (std::vector<testing::Values>{{1}, {3}, {5}}));
  // FILE is an error naming the source.
  EXPECT_THAT(AutoShard(gen.node(), 2, 1, AutoShardPolicy::kFile, 2,
                        SemanticsVersion::k2_2)
                  .status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("unshardable source dataset: "
                                 "GeneratorDataset")));
}

TEST(AutoShardTest, GeneratorElementNotMatchingTheSpecIsAnError) {
  Dataset gen = Dataset::FromGenerator(
      CountingGenerator(2), ElementSpec(TensorSpec{DType::kF32, Shape()}));
  absl::Status s;
  testing::DatasetValues(gen, &s);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument,
                          HasSubstr("from_generator: element 0 has components "
                                    "[int64[]]")));
  EXPECT_THAT(Dataset::FromGenerator(nullptr,
                                     ElementSpec(TensorSpec{DType::kF32,
                                                            Shape()}))
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("factory is null")));
}

}  // namespace
}  // namespace tpusim::data
