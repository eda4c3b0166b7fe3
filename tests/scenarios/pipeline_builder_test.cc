#include "scenarios/pipeline_builder.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenarios/scenario_loader.h"
#include "strategy/data/example.pb.h"
#include "strategy/data/sparse.h"
#include "strategy/data/tfrecord.h"

namespace tpusim::scenarios {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

constexpr char kCluster[] = "cluster { workers: 1 replicas_per_worker: 1 }\n";

std::string TestDir() {
  return ::testing::TempDir() + "/pipeline_builder_test";
}

LoadedScenario MustParse(const std::string& text,
                         const std::string& base_dir = "") {
  absl::StatusOr<LoadedScenario> s =
      ParseScenario(std::string(kCluster) + text, "t", base_dir);
  EXPECT_THAT(s, IsOk());
  return *s;
}

absl::StatusOr<data::Dataset> Build(
    const LoadedScenario& s,
    std::optional<data::InputContext> ctx = std::nullopt) {
  absl::StatusOr<FileSetPaths> files = MaterializeFileSets(s, TestDir());
  if (!files.ok()) return files.status();
  return BuildPipeline(s, *files, ctx);
}

// The elements of a dataset whose elements are one int64 tensor each, as
// vectors.
std::vector<std::vector<int64_t>> IntElements(const data::Dataset& ds) {
  absl::StatusOr<std::vector<data::Element>> all = ds.Collect();
  EXPECT_THAT(all, IsOk());
  std::vector<std::vector<int64_t>> out;
  if (!all.ok()) return out;
  for (const data::Element& e : *all) {
    auto v = e.leaf().values<int64_t>();
    out.emplace_back(v.begin(), v.end());
  }
  return out;
}

std::vector<int64_t> IntScalars(const data::Dataset& ds) {
  std::vector<int64_t> out;
  for (const auto& v : IntElements(ds)) out.push_back(v.at(0));
  return out;
}

TEST(PipelineBuilderTest, RangeThenBatchKeepsThePartialBatch) {
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("pipeline { range { stop: 5 } }\npipeline { batch { "
                      "batch_size: 2 } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntElements(*ds), ElementsAre(ElementsAre(0, 1),
                                            ElementsAre(2, 3), ElementsAre(4)));
}

TEST(PipelineBuilderTest, RangeStartStopStep) {
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("pipeline { range { start: 10 stop: 0 step: -3 } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntScalars(*ds), ElementsAre(10, 7, 4, 1));
}

TEST(PipelineBuilderTest, ShardPolicyBecomesTheDatasetOption) {
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("shard_policy: FILE\npipeline { range { stop: 5 } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(ds->options().auto_shard_policy, data::AutoShardPolicy::kFile);
  ds = Build(MustParse("pipeline { range { stop: 5 } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(ds->options().auto_shard_policy, data::AutoShardPolicy::kAuto);
  ds = Build(MustParse("shard_policy: OFF\npipeline { range { stop: 5 } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(ds->options().auto_shard_policy, data::AutoShardPolicy::kOff);
}

TEST(PipelineBuilderTest, KeyedComponentsGiveDictElements) {
  absl::StatusOr<data::Dataset> ds = Build(
      MustParse("pipeline { from_tensor_slices {\n"
                "  component { key: \"x\" dtype: \"float32\" shape: [2, 2] "
                "float_values: [1, 2, 3, 4] }\n"
                "  component { key: \"label\" int_values: [7, 8] } } }\n"));
  ASSERT_THAT(ds, IsOk());
  absl::StatusOr<std::vector<data::Element>> all = ds->Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 2u);
  const data::Element& e = (*all)[1];
  ASSERT_TRUE(e.is_dict());
  EXPECT_THAT(e.keys(), ElementsAre("label", "x"));
  EXPECT_THAT(e.children()[0].leaf().values<int64_t>(), ElementsAre(8));
  EXPECT_THAT(e.children()[1].leaf().values<float>(), ElementsAre(3.0f, 4.0f));
  EXPECT_EQ(e.children()[1].leaf().shape(), runtime::Shape({2}));
}

TEST(PipelineBuilderTest, UnkeyedComponentsGiveATupleAndOneGivesATensor) {
  absl::StatusOr<data::Dataset> ds = Build(MustParse(
      "pipeline { from_tensors { component { int_values: [1, 2] }\n"
      "                          component { dtype: \"string\" scalar: true "
      "string_values: [\"s\"] } } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(data::ElementSpecToString(ds->element_spec()),
            "(int64[2], string[])");
  ds =
      Build(MustParse("pipeline { from_tensors { component { dtype: \"int32\" "
                      "int_values: [1, 2] } } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(data::ElementSpecToString(ds->element_spec()), "int32[2]");
}

// Issue 7: a range error is a validation error with file:LINE (it used to
// come from the builder without a line).
TEST(PipelineBuilderTest, OutOfRangeLiteralNamesTheValue) {
  EXPECT_THAT(
      ParseScenario(std::string(kCluster) +
                        "pipeline { from_tensors { component { dtype: "
                        "\"uint8\" int_values: [1, 256] } } }\n",
                    "t", ""),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "t:2: pipeline[0].from_tensors.component[0].int_values[1]=256: "
               "out of range for uint8 [0, 255]"));
}

TEST(PipelineBuilderTest, BuiltinMapFunctionsComputeElementwise) {
  const std::string src = "pipeline { range { start: -1 stop: 3 } }\n";
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse(src + "pipeline { map { fn: \"square\" } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntScalars(*ds), ElementsAre(1, 0, 1, 4));
  ds = Build(MustParse(src + "pipeline { map { fn: \"negate\" } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntScalars(*ds), ElementsAre(1, 0, -1, -2));
  ds = Build(MustParse(
      src + "pipeline { map { fn: \"add_one\" cpu_cost_ns: 50 } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntScalars(*ds), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(ds->node()->host_cost_per_element(), common::Picoseconds(50000));
  // Any stage can declare a host cost per element.
  ds = Build(MustParse("pipeline { range { stop: 4 } host_cost_ns: 7 }\n"
                       "pipeline { batch { batch_size: 2 } host_cost_ns: 90 }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(ds->node()->host_cost_per_element(), common::Picoseconds(90000));
  EXPECT_EQ(ds->node()->inputs()[0]->host_cost_per_element(),
            common::Picoseconds(7000));
  ds = Build(MustParse(src + "pipeline { map { fn: \"identity\" } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntScalars(*ds), ElementsAre(-1, 0, 1, 2));
}

TEST(PipelineBuilderTest, SquareOfFloatsKeepsTheDtype) {
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("pipeline { from_tensor_slices { component { dtype: "
                      "\"float64\" float_values: [1.5, -2] "
                      "} } }\npipeline { map { fn: \"square\" } }\n"));
  ASSERT_THAT(ds, IsOk());
  absl::StatusOr<std::vector<data::Element>> all = ds->Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].leaf().scalar<double>(), 2.25);
  EXPECT_EQ((*all)[1].leaf().scalar<double>(), 4.0);
}

TEST(PipelineBuilderTest, SquareOfStringsFailsWhenIterated) {
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("pipeline { from_tensor_slices { component { dtype: "
                      "\"string\" string_values: [\"a\"] } "
                      "} }\npipeline { map { fn: \"square\" } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(
      ds->Collect(),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("map fn \"square\": component \"0\" has dtype string")));
}

TEST(PipelineBuilderTest, FilterPredicates) {
  const std::string src = "pipeline { range { start: -2 stop: 4 } }\n";
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse(src + "pipeline { filter { predicate: \"even\" } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntScalars(*ds), ElementsAre(-2, 0, 2));
  ds = Build(MustParse(src + "pipeline { filter { predicate: \"odd\" } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntScalars(*ds), ElementsAre(-1, 1, 3));
  ds = Build(
      MustParse(src + "pipeline { filter { predicate: \"positive\" } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntScalars(*ds), ElementsAre(1, 2, 3));
}

TEST(PipelineBuilderTest, FilterOnBatchesFailsNamingTheSpec) {
  absl::StatusOr<data::Dataset> ds = Build(MustParse(
      "pipeline { range { stop: 4 } }\npipeline { batch { batch_size: 2 } }\n"
      "pipeline { filter { predicate: \"even\" } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(
      ds->Collect(),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "filter predicate \"even\" needs elements that are one integer "
              "scalar, got int64[2]")));
}

TEST(PipelineBuilderTest, TakeSkipRepeatShardShuffleCachePrefetch) {
  absl::StatusOr<data::Dataset> ds = Build(MustParse(
      "pipeline { range { stop: 10 } }\npipeline { skip { count: 1 } }\n"
      "pipeline { take { count: 3 } }\npipeline { cache { } }\npipeline { "
      "repeat { count: 2 } }\n"
      "pipeline { prefetch { buffer_size: 2 } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntScalars(*ds), ElementsAre(1, 2, 3, 1, 2, 3));
  ds =
      Build(MustParse("pipeline { range { stop: 10 } }\n"
                      "pipeline { shard { num_shards: 3 index: 1 } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntScalars(*ds), ElementsAre(1, 4, 7));
  // Shuffle is a permutation, and the same seed gives the same order.
  const std::string shuffled =
      "pipeline { range { stop: 8 } }\npipeline { shuffle { buffer_size: 8 "
      "seed: 5 } }\n";
  ds = Build(MustParse(shuffled));
  ASSERT_THAT(ds, IsOk());
  std::vector<int64_t> order = IntScalars(*ds);
  EXPECT_THAT(order, ::testing::UnorderedElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  ds = Build(MustParse(shuffled));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(IntScalars(*ds), order);
}

TEST(PipelineBuilderTest, ZipWithKeysGivesADictAndWithoutATuple) {
  const std::string inputs =
      "  input { key: \"a\" pipeline { range { stop: 3 } } }\n"
      "  input { key: \"b\" pipeline { range { start: 10 stop: 20 } } } } }\n";
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("pipeline { zip {\n" + inputs));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(data::ElementSpecToString(ds->element_spec()),
            "{a: int64[], b: int64[]}");
  absl::StatusOr<std::vector<data::Element>> all = ds->Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[2].children()[1].leaf().scalar<int64_t>(), 12);
  ds = Build(MustParse(
      "pipeline { zip { input { pipeline { range { stop: 3 } } }\n"
      "                 input { pipeline { range { stop: 2 } } } } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(data::ElementSpecToString(ds->element_spec()),
            "(int64[], int64[])");
}

TEST(PipelineBuilderTest, ConcatenateAppendsASubPipeline) {
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("pipeline { range { stop: 2 } }\n"
                      "pipeline { concatenate { pipeline { range { start: 10 "
                      "stop: 12 } } } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntScalars(*ds), ElementsAre(0, 1, 10, 11));
}

TEST(PipelineBuilderTest, IncompatibleConcatenateGivesADatasetError) {
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("pipeline { range { stop: 2 } }\n"
                      "pipeline { concatenate { pipeline { from_tensors { "
                      "component { dtype: \"string\" "
                      "string_values: [\"a\"] } } } } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_FALSE(ds->ok());
  EXPECT_EQ(ds->status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PipelineBuilderTest, SyntheticExamplesAreDeterministicAndParseBack) {
  FileSet set;
  set.set_name("s");
  set.set_num_files(2);
  set.set_records_per_file(3);
  set.set_float_feature(true);
  const std::string bytes = SyntheticExample(set, 1, 2);
  EXPECT_EQ(bytes, SyntheticExample(set, 1, 2));
  tensorflow::Example example;
  ASSERT_TRUE(example.ParseFromString(bytes));
  const auto& f = example.features().feature();
  EXPECT_EQ(f.at("id").int64_list().value(0), 5);
  EXPECT_EQ(f.at("file").int64_list().value(0), 1);
  EXPECT_EQ(f.at("x").float_list().value(0), 2.5f);
}

TEST(PipelineBuilderTest, VarLenFileSetParsesToSparseAndMapsItsValues) {
  // Record id has "tokens" = [10 id, ...] with id % 4 values; square maps a
  // SparseTensor's values and keeps its indices and dense_shape.
  LoadedScenario s = MustParse(
      "file_set { name: \"v\" num_files: 1 records_per_file: 4 "
      "varlen_feature: true }\n"
      "pipeline { tfrecord { file_set: \"v\" } }\n"
      "pipeline { map { fn: \"parse_example\"\n"
      "  feature { name: \"tokens\" kind: \"var_len\" } } }\n"
      "pipeline { map { fn: \"square\" } }\n"
      "pipeline { batch { batch_size: 4 } }\n");
  absl::StatusOr<data::Dataset> ds = Build(s);
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(data::ElementSpecToString(ds->element_spec()),
            "{tokens: SparseTensor(int64[?,?])}");
  absl::StatusOr<std::vector<data::Element>> all = ds->Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 1u);
  absl::StatusOr<data::SparseTensor> st = data::UnboxSparse(
      *(*all)[0].Flatten()[0], *ds->element_spec().Flatten()[0], "tokens");
  ASSERT_THAT(st, IsOk());
  EXPECT_EQ(st->DebugString(),
            "SparseTensor(indices=[[1, 0], [2, 0], [2, 1], [3, 0], [3, 1], "
            "[3, 2]], values=[100, 400, 441, 900, 961, 1024], "
            "dense_shape=[4, 3])");
}

TEST(PipelineBuilderTest, FileSetsAreWrittenUnderAFingerprintedDirectory) {
  const LoadedScenario s = MustParse(
      "file_set { name: \"train\" num_files: 2 records_per_file: 1 }\n"
      "pipeline { tfrecord { file_set: \"train\" } }\n");
  absl::StatusOr<FileSetPaths> files = MaterializeFileSets(s, TestDir());
  ASSERT_THAT(files, IsOk());
  ASSERT_EQ(files->at("train").size(), 2u);
  const std::string& second = files->at("train")[1];
  EXPECT_THAT(second, ::testing::StartsWith(TestDir() + "/train-"));
  EXPECT_THAT(second, ::testing::EndsWith("/train-00001-of-00002.tfrecord"));
  std::ifstream in(second, std::ios::binary);
  std::stringstream first_bytes;
  first_bytes << in.rdbuf();
  absl::StatusOr<FileSetPaths> again = MaterializeFileSets(s, TestDir());
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(*again, *files);
  std::ifstream in2(second, std::ios::binary);
  std::stringstream second_bytes;
  second_bytes << in2.rdbuf();
  EXPECT_EQ(first_bytes.str(), second_bytes.str());
  EXPECT_FALSE(first_bytes.str().empty());
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Overwrite(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// A data directory of its own for the test.
std::string FreshDir(const std::string& name) {
  const std::string dir = TestDir() + "_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(PipelineBuilderTest, OnlyTheFileSetsAStageReadsAreWritten) {
  const std::string dir = FreshDir("only_read");
  const LoadedScenario s = MustParse(
      "file_set { name: \"unused\" num_files: 3 records_per_file: 2 }\n"
      "file_set { name: \"nested\" num_files: 1 records_per_file: 1 }\n"
      "pipeline { range { stop: 2 } }\n"
      "pipeline { concatenate { pipeline { list_files { file_set: "
      "\"nested\" shuffle: false } } } }\n");
  absl::StatusOr<FileSetPaths> files = MaterializeFileSets(s, dir);
  ASSERT_THAT(files, IsOk());
  EXPECT_EQ(files->count("unused"), 0u);
  ASSERT_EQ(files->count("nested"), 1u);
  const std::vector<std::string> entries = Entries(dir);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_THAT(entries[0], ::testing::StartsWith("nested-"));
  EXPECT_EQ(
      Entries(dir + "/" + entries[0]),
      (std::vector<std::string>{"MANIFEST", "nested-00000-of-00001.tfrecord"}));
}

TEST(PipelineBuilderTest,
     CompressedFileSetsAreOneStreamPerFileOfTheSameRecords) {
  const std::string dir = FreshDir("compressed");
  const LoadedScenario plain = MustParse(
      "file_set { name: \"train\" num_files: 2 records_per_file: 3 }\n"
      "pipeline { tfrecord { file_set: \"train\" } }\n");
  const LoadedScenario gzip = MustParse(
      "file_set { name: \"train\" num_files: 2 records_per_file: 3 "
      "compression_type: \"GZIP\" }\n"
      "pipeline { tfrecord { file_set: \"train\" compression_type: \"GZIP\" "
      "} }\n");
  absl::StatusOr<FileSetPaths> a = MaterializeFileSets(plain, dir);
  absl::StatusOr<FileSetPaths> b = MaterializeFileSets(gzip, dir);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  // The compression is part of the fingerprint: another directory.
  EXPECT_NE(a->at("train")[1], b->at("train")[1]);
  for (int f = 0; f < 2; ++f) {
    const std::string raw = Slurp(a->at("train")[f]);
    const std::string packed = Slurp(b->at("train")[f]);
    EXPECT_EQ(packed, data::CompressAll(data::Compression::kGzip, raw));
    absl::StatusOr<std::vector<std::string>> records =
        data::ReadTFRecordFile(b->at("train")[f], data::Compression::kGzip);
    ASSERT_THAT(records, IsOk());
    EXPECT_EQ(*records, *data::ReadTFRecordFile(a->at("train")[f]));
  }
}

TEST(PipelineBuilderTest, ACompleteFileSetIsReusedAndABrokenOneRewritten) {
  const std::string dir = FreshDir("reuse");
  const LoadedScenario s = MustParse(
      "file_set { name: \"train\" num_files: 2 records_per_file: 3 }\n"
      "pipeline { tfrecord { file_set: \"train\" } }\n");
  absl::StatusOr<FileSetPaths> files = MaterializeFileSets(s, dir);
  ASSERT_THAT(files, IsOk());
  const std::string first = files->at("train")[0];
  const std::string good = Slurp(first);
  ASSERT_FALSE(good.empty());
  const std::string manifest_path =
      first.substr(0, first.rfind('/')) + "/MANIFEST";
  const std::string manifest = Slurp(manifest_path);
  EXPECT_EQ(manifest,
            absl::StrCat("tpusim-fileset-v1\nname=train\nnum_files=2\n"
                         "records_per_file=3\nfloat_feature=0\n"
                         "train-00000-of-00002.tfrecord ",
                         good.size(), "\ntrain-00001-of-00002.tfrecord ",
                         Slurp(files->at("train")[1]).size(), "\n"));
  // Same size, other bytes: the manifest still matches, so the set is reused
  // (not rewritten); reading it would report the CRC mismatch.
  Overwrite(first, std::string(good.size(), 'x'));
  ASSERT_THAT(MaterializeFileSets(s, dir), IsOk());
  EXPECT_EQ(Slurp(first), std::string(good.size(), 'x'));
  // A truncated file does not match the manifest: the set is written again.
  Overwrite(first, "short");
  ASSERT_THAT(MaterializeFileSets(s, dir), IsOk());
  EXPECT_EQ(Slurp(first), good);
  // Without the manifest (a run killed half-way) it is written again too.
  Overwrite(first, std::string(good.size(), 'y'));
  std::filesystem::remove(manifest_path);
  ASSERT_THAT(MaterializeFileSets(s, dir), IsOk());
  EXPECT_EQ(Slurp(first), good);
  EXPECT_EQ(Slurp(manifest_path), manifest);
}

TEST(PipelineBuilderTest, FileSetsReadAreCappedInTotalBytes) {
  const std::string dir = FreshDir("cap");
  // 10000 x 1000000 records: the validator allows it, the byte cap does not.
  const std::string big =
      "file_set { name: \"big\" num_files: 10000 records_per_file: 1000000 "
      "}\n";
  const LoadedScenario read =
      MustParse(big + "pipeline { tfrecord { file_set: \"big\" } }\n");
  const int64_t bytes = FileSetMaxBytes(read.proto.file_set(0));
  // Every record is at most 16 bytes of framing plus its example.
  EXPECT_EQ(
      bytes,
      int64_t{10000} * 1000000 *
          (16 +
           static_cast<int64_t>(
               SyntheticExample(read.proto.file_set(0), 9999, 999999).size())));
  EXPECT_THAT(
      MaterializeFileSets(read, dir),
      StatusIs(absl::StatusCode::kInvalidArgument,
               absl::StrCat("t:2: file_set[0] \"big\" (num_files=10000, "
                            "records_per_file=1000000) takes up to ",
                            bytes,
                            " bytes, and the file sets the pipeline reads "
                            "would total up to ",
                            bytes,
                            "; allowed: at most 1073741824 bytes in all "
                            "(tpusim's cap)")));
  EXPECT_FALSE(std::filesystem::exists(dir));
  // Not read by any stage: not written, so not counted.
  const LoadedScenario unread =
      MustParse(big + "pipeline { range { stop: 1 } }\n");
  absl::StatusOr<FileSetPaths> files = MaterializeFileSets(unread, dir);
  ASSERT_THAT(files, IsOk());
  EXPECT_TRUE(files->empty());
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(PipelineBuilderTest, TFRecordFileSetParsedAsExamples) {
  absl::StatusOr<data::Dataset> ds = Build(MustParse(
      "file_set { name: \"t\" num_files: 2 records_per_file: 2 }\n"
      "pipeline { tfrecord { file_set: \"t\" } }\n"
      "pipeline { map { fn: \"parse_example\" feature { name: \"id\" } } }\n"));
  ASSERT_THAT(ds, IsOk());
  absl::StatusOr<std::vector<data::Element>> all = ds->Collect();
  ASSERT_THAT(all, IsOk());
  std::vector<int64_t> ids;
  for (const data::Element& e : *all)
    ids.push_back(e.children()[0].leaf().scalar<int64_t>());
  EXPECT_THAT(ids, ElementsAre(0, 1, 2, 3));
}

TEST(PipelineBuilderTest, ParseExampleAfterBatchParsesVectors) {
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("file_set { name: \"t\" num_files: 1 records_per_file: 3 "
                      "float_feature: true }\n"
                      "pipeline { tfrecord { file_set: \"t\" } }\npipeline { "
                      "batch { batch_size: 2 } }\n"
                      "pipeline { map { fn: \"parse_example\" feature { name: "
                      "\"x\" dtype: \"float32\" } } }\n"));
  ASSERT_THAT(ds, IsOk());
  absl::StatusOr<std::vector<data::Element>> all = ds->Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_THAT((*all)[0].children()[0].leaf().values<float>(),
              ElementsAre(0.0f, 0.5f));
  EXPECT_THAT((*all)[1].children()[0].leaf().values<float>(),
              ElementsAre(1.0f));
}

TEST(PipelineBuilderTest, ParseExampleOnNumbersIsADatasetError) {
  absl::StatusOr<data::Dataset> ds = Build(MustParse(
      "pipeline { range { stop: 3 } }\n"
      "pipeline { map { fn: \"parse_example\" feature { name: \"id\" } } }\n"));
  ASSERT_THAT(ds, IsOk());
  ASSERT_FALSE(ds->ok());
  EXPECT_THAT(
      ds->status(),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "pipeline[1].map.fn=\"parse_example\": the input elements must "
              "be serialized examples")));
}

TEST(PipelineBuilderTest, ListFilesThenInterleaveReadsFilesInCycles) {
  absl::StatusOr<data::Dataset> ds = Build(MustParse(
      "file_set { name: \"t\" num_files: 2 records_per_file: 2 }\n"
      "pipeline { list_files { file_set: \"t\" shuffle: false } }\n"
      "pipeline { interleave { reader: \"tfrecord\" cycle_length: 2 "
      "block_length: 1 } }\n"
      "pipeline { map { fn: \"parse_example\" feature { name: \"id\" } } }\n"));
  ASSERT_THAT(ds, IsOk());
  absl::StatusOr<std::vector<data::Element>> all = ds->Collect();
  ASSERT_THAT(all, IsOk());
  std::vector<int64_t> ids;
  for (const data::Element& e : *all)
    ids.push_back(e.children()[0].leaf().scalar<int64_t>());
  EXPECT_THAT(ids, ElementsAre(0, 2, 1, 3));
}

TEST(PipelineBuilderTest, ReaderAfterListFilesReadsItsInput) {
  absl::StatusOr<data::Dataset> ds = Build(MustParse(
      "file_set { name: \"t\" num_files: 2 records_per_file: 2 }\n"
      "pipeline { list_files { file_set: \"t\" shuffle: false } }\n"
      "pipeline { tfrecord { } }\n"
      "pipeline { map { fn: \"parse_example\" feature { name: \"id\" } } }\n"));
  ASSERT_THAT(ds, IsOk());
  absl::StatusOr<std::vector<data::Element>> all = ds->Collect();
  ASSERT_THAT(all, IsOk());
  EXPECT_EQ(all->size(), 4u);
}

TEST(PipelineBuilderTest, InterleaveOverNumbersIsADatasetError) {
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("pipeline { range { stop: 3 } }\npipeline { flat_map { "
                      "reader: \"text_line\" } }\n"));
  ASSERT_THAT(ds, IsOk());
  ASSERT_FALSE(ds->ok());
  EXPECT_THAT(
      ds->status(),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "pipeline[1].flat_map: the text_line reader needs file names (string "
          "scalars) as input, got int64[]"));
}

TEST(PipelineBuilderTest,
     RelativeFilesAndGlobsResolveAgainstTheScenarioDirectory) {
  const std::string dir = TestDir() + "/text";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/b.txt") << "b1\nb2\n";
  std::ofstream(dir + "/a.txt") << "a1\n";
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("pipeline { text_line { glob: \"*.txt\" } }\n", dir));
  ASSERT_THAT(ds, IsOk());
  absl::StatusOr<std::vector<data::Element>> all = ds->Collect();
  ASSERT_THAT(all, IsOk());
  std::vector<std::string> lines;
  for (const data::Element& e : *all)
    lines.push_back(e.leaf().scalar<std::string>());
  EXPECT_THAT(lines, ElementsAre("a1", "b1", "b2"));
  ds = Build(MustParse("pipeline { text_line { file: \"b.txt\" } }\n", dir));
  ASSERT_THAT(ds, IsOk());
  ASSERT_THAT(ds->Collect(), IsOk());
}

TEST(PipelineBuilderTest, GlobWithoutMatchIsAScenarioError) {
  EXPECT_THAT(
      Build(MustParse("pipeline { tfrecord { glob: \"none-*.tfrecord\" } }\n",
                      "/nodir")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "t:2: pipeline[0].tfrecord.glob=\"none-*.tfrecord\": no file "
               "matches \"/nodir/none-*.tfrecord\""));
}

TEST(PipelineBuilderTest, ListFilesWithoutMatchIsADatasetError) {
  absl::StatusOr<data::Dataset> ds = Build(
      MustParse("pipeline { list_files { pattern: \"none-*\" } }\n", "/nodir"));
  ASSERT_THAT(ds, IsOk());
  ASSERT_FALSE(ds->ok());
  EXPECT_THAT(ds->status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("No files matched pattern")));
}

TEST(PipelineBuilderTest, UseGlobalBatchIsPerReplicaWithAnInputContext) {
  const LoadedScenario s = MustParse(
      "api: DISTRIBUTE_DATASETS_FROM_FUNCTION\nglobal_batch_size: 8\n"
      "pipeline { range { stop: 16 } }\npipeline { batch { use_global_batch: "
      "true } }\n"
      "pipeline { shard { by_input_context: true } }\n");
  absl::StatusOr<data::Dataset> ds = Build(s, data::InputContext(2, 1, 4));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntElements(*ds),
              ElementsAre(ElementsAre(2, 3), ElementsAre(6, 7),
                          ElementsAre(10, 11), ElementsAre(14, 15)));
  // 8 is not divisible by 3 replicas: TF's ValueError, as a dataset error.
  ds = Build(s, data::InputContext(1, 0, 3));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(ds->status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("global_batch_size 8 is not divisible by "
                                 "num_replicas_in_sync 3")));
}

TEST(PipelineBuilderTest, UseGlobalBatchIsTheGlobalBatchWithoutAContext) {
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("global_batch_size: 3\npipeline { range { stop: 4 } }\n"
                      "pipeline { batch { use_global_batch: true } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_THAT(IntElements(*ds),
              ElementsAre(ElementsAre(0, 1, 2), ElementsAre(3)));
}

TEST(PipelineBuilderTest, WindowRunsItsFlatMapStagesOnEachWindow) {
  absl::StatusOr<data::Dataset> ds =
      Build(MustParse("pipeline { range { stop: 7 } }\n"
                      "pipeline { window { size: 3 shift: 2 drop_remainder: "
                      "true flat_map { batch { batch_size: 3 } } } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(IntElements(*ds), (std::vector<std::vector<int64_t>>{
                                  {0, 1, 2}, {2, 3, 4}, {4, 5, 6}}));
  // Without body stages: the window's elements as they are. Stride 2, shift
  // = size = 2: windows [0, 2], [2, 4], [4].
  ds =
      Build(MustParse("pipeline { range { stop: 5 } }\n"
                      "pipeline { window { size: 2 stride: 2 } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(IntScalars(*ds), (std::vector<int64_t>{0, 2, 2, 4, 4}));
}

TEST(PipelineBuilderTest, WindowOverTuplesZipsTheWindowDatasets) {
  absl::StatusOr<data::Dataset> ds = Build(
      MustParse("pipeline { zip { input { pipeline { range { stop: 4 } } }\n"
                "                 input { pipeline { range { start: 10 stop: "
                "14 } } } } }\n"
                "pipeline { window { size: 2 flat_map { batch { batch_size: 2 "
                "} } } }\n"));
  ASSERT_THAT(ds, IsOk());
  absl::StatusOr<std::vector<data::Element>> all = ds->Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].children()[0].leaf().DebugString(), "int64[2]{2, 3}");
  EXPECT_EQ((*all)[1].children()[1].leaf().DebugString(), "int64[2]{12, 13}");
}

TEST(PipelineBuilderTest, MapAndBatchIsMapThenBatch) {
  absl::StatusOr<data::Dataset> ds = Build(MustParse(
      "pipeline { range { stop: 5 } }\n"
      "pipeline { map_and_batch { map { fn: \"square\" } batch_size: 2 } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(IntElements(*ds),
            (std::vector<std::vector<int64_t>>{{0, 1}, {4, 9}, {16}}));
  EXPECT_EQ(ds->node()->ShortString(),
            "MapAndBatchDataset(f=square, batch_size=2, num_parallel_calls=2, "
            "drop_remainder=false)");
  ds = Build(MustParse(
      "pipeline { range { stop: 5 } }\n"
      "pipeline { map_and_batch { map { fn: \"negate\" num_parallel_calls: -1 }"
      " batch_size: 2 drop_remainder: true } }\n"));
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(IntElements(*ds),
            (std::vector<std::vector<int64_t>>{{0, -1}, {-2, -3}}));
  EXPECT_EQ(ds->node()->ShortString(),
            "MapAndBatchDataset(f=negate, batch_size=2, "
            "num_parallel_calls=AUTOTUNE, drop_remainder=true)");
}

}  // namespace
}  // namespace tpusim::scenarios
