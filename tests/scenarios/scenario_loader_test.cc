#include "scenarios/scenario_loader.h"

#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::scenarios {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

constexpr char kCluster[] = "cluster { workers: 2 replicas_per_worker: 2 }\n";

absl::StatusOr<LoadedScenario> Parse(const std::string& text) {
  return ParseScenario(text, "s.textproto", "/base");
}

absl::Status ErrorOf(const std::string& text) { return Parse(text).status(); }

TEST(ScenarioLoaderTest, ParsesAValidScenarioWithDefaults) {
  absl::StatusOr<LoadedScenario> s =
      Parse(std::string(kCluster) +
            "pipeline { range { stop: 16 } }\n"
            "pipeline { batch { batch_size: 8 } }\n");
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->base_dir, "/base");
  EXPECT_EQ(s->proto.pipeline_size(), 2);
  EXPECT_EQ(SemanticsOf(s->proto), "2.2");
  EXPECT_EQ(ShardPolicyName(s->proto.shard_policy()), "AUTO");
  absl::StatusOr<ClusterLayout> cluster = ResolveCluster(*s);
  ASSERT_THAT(cluster, IsOk());
  EXPECT_EQ(cluster->workers, 2);
  EXPECT_EQ(cluster->replicas_per_worker, 2);
  EXPECT_EQ(cluster->num_replicas(), 4);
}

TEST(ScenarioLoaderTest, ParallelMapCallsMustBePositiveOrAutotune) {
  const std::string base =
      "cluster { workers: 1 replicas_per_worker: 1 }\n"
      "pipeline { range { stop: 4 } }\n";
  EXPECT_THAT(Parse(base + "pipeline { map { fn: \"square\" num_parallel_calls: -1 "
                           "deterministic: false } }\n"),
              IsOk());
  EXPECT_THAT(Parse(base + "pipeline { map { fn: \"square\" num_parallel_calls: 0 } }\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "s.textproto:3: pipeline[1].map.num_parallel_calls=0: must "
                       "be >= 1 or -1 (AUTOTUNE)"));
}

TEST(ScenarioLoaderTest, HostCostsMustBeNonNegativeNanoseconds) {
  const std::string base =
      "cluster { workers: 1 replicas_per_worker: 1 }\n"
      "pipeline { range { stop: 4 } host_cost_ns: 30 }\n";
  EXPECT_THAT(Parse(base + "pipeline { batch { batch_size: 2 } host_cost_ns: 0 }\n"),
              IsOk());
  EXPECT_THAT(
      Parse(base + "pipeline { batch { batch_size: 2 } host_cost_ns: -4 }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:3: pipeline[1].host_cost_ns=-4: must be in [0, "
               "9223372036854775] (nanoseconds of host CPU per element)"));
  EXPECT_THAT(
      Parse(base + "pipeline { map { fn: \"square\" cpu_cost_ns: -1 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:3: pipeline[1].map.cpu_cost_ns=-1: must be in [0, "
               "9223372036854775] (nanoseconds of host CPU per element)"));
  EXPECT_THAT(
      Parse(base + "pipeline { map { fn: \"square\" cpu_cost_ns: 1 } "
                   "host_cost_ns: 2 }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:3: pipeline[1].host_cost_ns=2: a map stage sets "
               "host_cost_ns or map.cpu_cost_ns, not both"));
}

TEST(ScenarioLoaderTest, AFunctionBodyStagesHostCostIsCheckedToo) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 16 } }\n"
              "pipeline { window { size: 4 flat_map { batch { batch_size: 4 } "
              "host_cost_ns: -3 } } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("host_cost_ns=-3: must be in [0, 9223372036854775] "
                         "(nanoseconds of host CPU per element)")));
}

TEST(ScenarioLoaderTest, UnknownFieldNamesLineColumnAndField) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) + "pipeline { range { stp: 16 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:2:20: Message type \"tpusim.scenarios.RangeStage\" "
               "has no "
               "field named \"stp\"."));
}

TEST(ScenarioLoaderTest, UnknownEnumValueNamesItsOwnLine) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) + "shard_policy: FOO\n"
                                      "pipeline { range { stop: 16 } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:2:15: Unknown enumeration value of \"FOO\" for field "
          "\"shard_policy\"."));
}

TEST(ScenarioLoaderTest, TwoKindsInOneStageIsASyntaxError) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 16 } batch { batch_size: 2 } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          AllOf(StartsWith("s.textproto:2:"),
                HasSubstr("Field \"batch\" is specified along with field "
                          "\"range\", another member of oneof \"kind\""))));
}

TEST(ScenarioLoaderTest, BatchSizeZeroNamesLineAndFieldPath) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) + "pipeline { range { stop: 16 } }\n"
                                      "pipeline {\n"
                                      "  batch { batch_size: 0 }\n"
                                      "}\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:4: pipeline[1].batch.batch_size=0: must be >= 1"));
}

TEST(ScenarioLoaderTest, NestedSubPipelineErrorsNameTheFullPath) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { zip {\n"
              "  input { pipeline { range { stop: 4 } } }\n"
              "  input { pipeline { range { stop: 4 } }\n"
              "          pipeline { batch { batch_size: -1 } } }\n"
              "} }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:5: "
               "pipeline[0].zip.input[1].pipeline[1].batch.batch_size=-1: must "
               "be >= 1"));
}

TEST(ScenarioLoaderTest, MissingClusterIsAnError) {
  EXPECT_THAT(
      ErrorOf("pipeline { range { stop: 16 } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("s.textproto: cluster: missing; set cluster { slice:")));
}

TEST(ScenarioLoaderTest, SliceAndWorkersContradict) {
  EXPECT_THAT(
      ErrorOf("cluster { slice: \"v3-32\" workers: 2 }\n"
              "pipeline { range { stop: 16 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:1: cluster.workers=2: contradicts "
               "cluster.slice=\"v3-32\"; "
               "give a slice or workers and replicas_per_worker, not both"));
}

TEST(ScenarioLoaderTest, WorkersWithoutReplicasPerWorkerIsMissingAField) {
  EXPECT_THAT(
      ErrorOf("cluster { workers: 2 }\npipeline { range { stop: 16 } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:1: cluster.replicas_per_worker: missing; must be >= 1"));
}

TEST(ScenarioLoaderTest, ZeroWorkersIsRejected) {
  EXPECT_THAT(
      ErrorOf("cluster { workers: 0 replicas_per_worker: 2 }\n"
              "pipeline { range { stop: 16 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:1: cluster.workers=0: must be in [1, 4096]"));
}

TEST(ScenarioLoaderTest, BadSliceNameNamesTheField) {
  EXPECT_THAT(
      ErrorOf("cluster { slice: \"v3-7\" }\npipeline { range { stop: 4 } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "s.textproto:1: cluster.slice=\"v3-7\": slice name \"v3-7\": "
              "7 TensorCores has no tpusim chip mesh for v3; allowed: v3-8")));
}

TEST(ScenarioLoaderTest, EmptyPipelineIsAnError) {
  EXPECT_THAT(ErrorOf(kCluster),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("s.textproto: pipeline: missing; at least "
                                 "one stage is required")));
}

TEST(ScenarioLoaderTest, PipelineMustStartWithASource) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) + "pipeline { batch { batch_size: 2 } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("s.textproto:2: pipeline[0]: stage 0 is \"batch\" but a "
                    "pipeline must start with a source")));
}

TEST(ScenarioLoaderTest, ASourceAfterStageZeroIsRejected) {
  EXPECT_THAT(
      ErrorOf(
          std::string(kCluster) +
          "pipeline { range { stop: 4 } }\npipeline { range { stop: 4 } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:3: pipeline[1]: \"range\" is a source and can only be "
          "stage 0"));
}

TEST(ScenarioLoaderTest, EmptyStageIsRejected) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 4 } }\npipeline { }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "s.textproto:3: pipeline[1]: empty stage; set exactly one of "
              "range, from_tensor_slices")));
}

TEST(ScenarioLoaderTest, RangeNeedsStopAndANonZeroStep) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) + "pipeline { range { start: 1 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:2: pipeline[0].range.stop: missing"));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 4 step: 0 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:2: pipeline[0].range.step=0: must not be 0"));
}

TEST(ScenarioLoaderTest, UnknownMapFunctionListsTheKnownOnes) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) + "pipeline { range { stop: 4 } "
                                      "}\npipeline { map { fn: \"cube\" } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:3: pipeline[1].map.fn=\"cube\": unknown; one of "
               "identity, "
               "square, negate, add_one, parse_example"));
}

TEST(ScenarioLoaderTest, FeaturesOnlyForParseExample) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 4 } }\n"
              "pipeline { map { fn: \"square\" feature { name: \"x\" } } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "pipeline[1].map.feature: only parse_example takes features")));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 4 } }\n"
              "pipeline { map { fn: \"parse_example\" } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("pipeline[1].map.feature: missing; parse_example needs")));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 4 } }\n"
              "pipeline { map { fn: \"parse_example\"\n"
              "  feature { name: \"x\" dtype: \"int8\" } } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:4: pipeline[1].map.feature[0].dtype=\"int8\": must be "
          "int64, float32 or string"));
}

TEST(ScenarioLoaderTest, FeatureKindsAreCheckedWithTheirFields) {
  auto with = [](const std::string& feature) {
    return ErrorOf(std::string(kCluster) +
                   "pipeline { range { stop: 4 } }\n"
                   "pipeline { map { fn: \"parse_example\"\n"
                   "  feature { name: \"x\" " +
                   feature + " } } }\n");
  };
  EXPECT_THAT(with("kind: \"ragged\""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "s.textproto:4: pipeline[1].map.feature[0].kind="
                       "\"ragged\": must be fixed_len, var_len or "
                       "fixed_len_sequence"));
  EXPECT_THAT(with("kind: \"var_len\" shape: 2"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "s.textproto:4: pipeline[1].map.feature[0].shape: "
                       "var_len takes no shape"));
  EXPECT_THAT(with("allow_missing: true"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "s.textproto:4: pipeline[1].map.feature[0]."
                       "allow_missing: only fixed_len_sequence takes "
                       "allow_missing"));
  EXPECT_THAT(with("kind: \"var_len\""), IsOk());
  EXPECT_THAT(with("kind: \"fixed_len_sequence\" allow_missing: true"), IsOk());
}

TEST(ScenarioLoaderTest, UnknownFilterPredicate) {
  EXPECT_THAT(ErrorOf(std::string(kCluster) +
                      "pipeline { range { stop: 4 } }\n"
                      "pipeline { filter { predicate: \"prime\" } }\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "s.textproto:3: pipeline[1].filter.predicate=\"prime\": "
                       "unknown; one of "
                       "even, odd, positive"));
}

TEST(ScenarioLoaderTest, ShardIndexMustBeBelowNumShards) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 4 } }\n"
              "pipeline { shard { num_shards: 2 index: 2 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:3: pipeline[1].shard.index=2: must be in [0, 1]"));
}

TEST(ScenarioLoaderTest, ShardByInputContextNeedsTheFromFunctionApi) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 4 } }\n"
              "pipeline { shard { by_input_context: true } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "s.textproto:3: pipeline[1].shard.by_input_context=true: needs "
              "api: DISTRIBUTE_DATASETS_FROM_FUNCTION")));
}

TEST(ScenarioLoaderTest, UseGlobalBatchNeedsGlobalBatchSize) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 4 } }\n"
              "pipeline { batch { use_global_batch: true } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:3: pipeline[1].batch.use_global_batch=true: needs the "
          "scenario's global_batch_size, which is not set"));
}

TEST(ScenarioLoaderTest, BatchSizeAndUseGlobalBatchContradict) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "global_batch_size: 8\n"
              "pipeline { range { stop: 4 } }\n"
              "pipeline { batch { batch_size: 8 use_global_batch: true } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:4: pipeline[1].batch.use_global_batch=true: contradicts "
          "batch_size=8; set only one"));
}

TEST(ScenarioLoaderTest, GlobalBatchSizeMustMatchTheLastBatchStage) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) + "global_batch_size: 16\n"
                                      "pipeline { range { stop: 64 } }\n"
                                      "pipeline { batch { batch_size: 8 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(
                   "s.textproto:4: pipeline[1].batch.batch_size=8: contradicts "
                   "global_batch_size=16")));
}

TEST(ScenarioLoaderTest, WindowSizesMustBePositive) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) + "pipeline { range { stop: 16 } }\n"
                                      "pipeline {\n"
                                      "  window { size: -4 }\n"
                                      "}\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:4: pipeline[1].window.size=-4: must be >= 1"));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) + "pipeline { range { stop: 16 } }\n"
                                      "pipeline { window { } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:3: pipeline[1].window.size: missing; must be >= 1"));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 16 } }\n"
              "pipeline { window { size: 2 shift: 0 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:3: pipeline[1].window.shift=0: must be >= 1"));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 16 } }\n"
              "pipeline { window { size: 2 stride: -1 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:3: pipeline[1].window.stride=-1: must be >= 1"));
}

TEST(ScenarioLoaderTest, WindowBodyStagesAreCheckedWithTheirPath) {
  EXPECT_THAT(ErrorOf(std::string(kCluster) +
                      "pipeline { range { stop: 16 } }\n"
                      "pipeline { window { size: 4\n"
                      "  flat_map { batch { batch_size: 0 } } } }\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "s.textproto:4: pipeline[1].window.flat_map[0].batch."
                       "batch_size=0: must be >= 1"));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) + "pipeline { range { stop: 16 } }\n"
                                      "pipeline { window { size: 4\n"
                                      "  flat_map { range { stop: 3 } } } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:4: pipeline[1].window.flat_map[0]: \"range\" is a "
               "source; a function body transforms the function's dataset"));
}

TEST(ScenarioLoaderTest, MapAndBatchNeedsAMapAndABatchSize) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 16 } }\n"
              "pipeline { map_and_batch { map { fn: \"square\" } "
              "batch_size: 0 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:3: pipeline[1].map_and_batch.batch_size=0: must "
               "be >= 1"));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 16 } }\n"
              "pipeline { map_and_batch { batch_size: 4 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:3: pipeline[1].map_and_batch.map: missing; the "
               "map function (map { fn })"));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 16 } }\n"
              "pipeline { map_and_batch { map { fn: \"cube\" } "
              "batch_size: 4 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("s.textproto:3: pipeline[1].map_and_batch.map.fn="
                         "\"cube\": unknown; one of")));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "global_batch_size: 16\n"
              "pipeline { range { stop: 64 } }\n"
              "pipeline { map_and_batch { map { fn: \"square\" } "
              "batch_size: 8 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("s.textproto:4: pipeline[1].map_and_batch."
                         "batch_size=8: contradicts global_batch_size=16")));
}

TEST(ScenarioLoaderTest, UnknownSemanticsVersion) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) + "semantics: \"2.3\"\n"
                                      "pipeline { range { stop: 4 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:2: semantics=\"2.3\": must be \"2.2\", \"2.4\" or \"2.21\""));
}

TEST(ScenarioLoaderTest, UnknownFileSetIsRejected) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "file_set { name: \"train\" num_files: 2 records_per_file: 2 }\n"
              "pipeline { tfrecord { file_set: \"eval\" } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:3: pipeline[0].tfrecord.file_set=\"eval\": no "
               "file_set with "
               "this name; defined: train"));
}

TEST(ScenarioLoaderTest, FileSetNeedsAtLeastOneFile) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "file_set { name: \"train\" num_files: 0 records_per_file: 2 }\n"
              "pipeline { tfrecord { file_set: \"train\" } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:2: file_set[0].num_files=0: must be in [1, 10000]"));
}

TEST(ScenarioLoaderTest, CompressionTypeMustBeTFsSpelling) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "file_set { name: \"train\" num_files: 1 records_per_file: 2 "
              "compression_type: \"gzip\" }\n"
              "pipeline { tfrecord { file_set: \"train\" } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:2: file_set[0].compression_type=\"gzip\": "
               "allowed: \"\" (uncompressed), \"ZLIB\" or \"GZIP\""));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { tfrecord { file: \"a\" compression_type: \"BZIP2\" "
              "} }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:2: pipeline[0].tfrecord.compression_type=\"BZIP2\": "
          "allowed: \"\" (uncompressed), \"ZLIB\" or \"GZIP\""));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { text_line { file: \"a\" compression_type: \"GZIP\" "
              "} }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:2: pipeline[0].text_line.compression_type=\"GZIP\": "
          "only tfrecord readers take a compression_type"));
}

TEST(ScenarioLoaderTest, ReaderAtStageZeroNeedsExactlyOneFileSource) {
  EXPECT_THAT(ErrorOf(std::string(kCluster) + "pipeline { tfrecord { } }\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "s.textproto:2: pipeline[0].tfrecord: missing the "
                       "files; set file, glob "
                       "or file_set"));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { tfrecord { file: \"a\" glob: \"*.tfrecord\" } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:2: pipeline[0].tfrecord: set only one of file, glob and "
          "file_set"));
}

TEST(ScenarioLoaderTest, ReaderAfterStageZeroMustNotNameFiles) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { list_files { pattern: \"*.txt\" } }\n"
              "pipeline { text_line { file: \"a.txt\" } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("s.textproto:3: pipeline[1].text_line.file: a reader after "
                    "stage 0 reads the file names its input yields")));
}

TEST(ScenarioLoaderTest, FixedLengthNeedsRecordBytesAndOthersRejectThem) {
  EXPECT_THAT(ErrorOf(std::string(kCluster) +
                      "pipeline { fixed_length { file: \"a\" } }\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "s.textproto:2: pipeline[0].fixed_length.record_bytes: "
                       "missing; must be "
                       ">= 1"));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { tfrecord { file: \"a\" record_bytes: 4 } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:2: pipeline[0].tfrecord.record_bytes: only fixed_length "
          "readers take record sizes"));
}

TEST(ScenarioLoaderTest, InterleaveChecksReaderAndLengths) {
  const std::string head =
      std::string(kCluster) + "pipeline { list_files { pattern: \"*\" } }\n";
  EXPECT_THAT(ErrorOf(head + "pipeline { interleave { reader: \"csv\" } }\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "s.textproto:3: pipeline[1].interleave.reader=\"csv\": "
                       "unknown; one of "
                       "tfrecord, text_line, fixed_length"));
  EXPECT_THAT(
      ErrorOf(
          head +
          "pipeline { interleave { reader: \"tfrecord\" cycle_length: 0 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:3: pipeline[1].interleave.cycle_length=0: must be "
               ">= 1 or "
               "-1 (AUTOTUNE)"));
  EXPECT_THAT(
      ErrorOf(
          head +
          "pipeline { flat_map { reader: \"tfrecord\" cycle_length: 2 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("pipeline[1].flat_map.cycle_length: flat_map takes no "
                         "cycle_length")));
}

TEST(ScenarioLoaderTest, TensorLiteralValuesMustMatchDtypeAndShape) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { from_tensor_slices { component { dtype: \"float32\" "
              "int_values: [1, 2] } } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:2: "
               "pipeline[0].from_tensor_slices.component[0].int_values: "
               "do not match dtype \"float32\"; use float_values"));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { from_tensor_slices { component { shape: [2, 2] "
              "int_values: [1, 2, 3] } } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:2: "
               "pipeline[0].from_tensor_slices.component[0].int_values: "
               "has 3 value(s) but the shape needs 4"));
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { from_tensors { component { dtype: \"int4\" } } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("pipeline[0].from_tensors.component[0].dtype=\"int4\": ")));
}

TEST(ScenarioLoaderTest, ComponentKeysAreAllOrNone) {
  EXPECT_THAT(ErrorOf(std::string(kCluster) +
                      "pipeline { from_tensor_slices {\n"
                      "  component { key: \"a\" int_values: [1] }\n"
                      "  component { int_values: [2] } } }\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "s.textproto:3: "
                       "pipeline[0].from_tensor_slices.component: either every "
                       "component has a key (a dict element) or none does"));
}

TEST(ScenarioLoaderTest, TakeNeedsACount) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) + "pipeline { range { stop: 4 } }\n"
                                      "pipeline { take { } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:3: pipeline[1].take.count: missing; -1 means all"));
}

TEST(ScenarioLoaderTest, ShuffleNeedsAPositiveBuffer) {
  EXPECT_THAT(
      ErrorOf(std::string(kCluster) +
              "pipeline { range { stop: 4 } }\n"
              "pipeline { shuffle { buffer_size: 0 } }\n"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "s.textproto:3: pipeline[1].shuffle.buffer_size=0: must be >= 1"));
}

// Slice name -> (input workers, replicas per worker), through
// strategy/runtime/slice.h.
void ExpectSlice(const std::string& slice, int workers,
                 int replicas_per_worker) {
  absl::StatusOr<LoadedScenario> s = Parse(
      "cluster { slice: \"" + slice + "\" }\npipeline { range { stop: 4 } }\n");
  ASSERT_THAT(s, IsOk()) << slice;
  absl::StatusOr<ClusterLayout> cluster = ResolveCluster(*s);
  ASSERT_THAT(cluster, IsOk()) << slice;
  EXPECT_EQ(cluster->workers, workers) << slice;
  EXPECT_EQ(cluster->replicas_per_worker, replicas_per_worker) << slice;
  EXPECT_EQ(cluster->slice, slice);
}

TEST(ScenarioLoaderTest, SliceNamesCountCoresOnV2V3WithTwoDevicesPerChip) {
  ExpectSlice("v2-8", 1, 8);
  ExpectSlice("v3-8", 1, 8);
  ExpectSlice("v3-32", 4, 8);
}

TEST(ScenarioLoaderTest, SliceNamesOnV4V5pHaveOneMegacoreDevicePerChip) {
  ExpectSlice("v4-8", 1, 4);
  ExpectSlice("v4-16", 2, 4);
  ExpectSlice("v5p-16", 2, 4);
}

TEST(ScenarioLoaderTest, SliceNamesCountChipsOnV5eV6e) {
  ExpectSlice("v5litepod-16", 2, 8);
  ExpectSlice("v6e-8", 1, 8);
}

TEST(ScenarioLoaderTest, UnknownSliceGenerationNamesTheField) {
  EXPECT_THAT(
      ErrorOf("cluster { slice: \"v9-8\" }\npipeline { range { stop: 4 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               StartsWith("s.textproto:1: cluster.slice=\"v9-8\": ")));
}

TEST(ScenarioLoaderTest, LoadScenarioFileUsesTheFilesDirectory) {
  const std::string dir = TPUSIM_SOURCE_DIR;
  absl::StatusOr<LoadedScenario> s =
      LoadScenarioFile(dir + "/scenarios/default.textproto");
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->base_dir, dir + "/scenarios");
  EXPECT_EQ(s->proto.name(), "default");
}

TEST(ScenarioLoaderTest, DirectoryIsNotAScenario) {
  EXPECT_THAT(LoadScenarioFile("/tmp"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "scenario file \"/tmp\" is a directory"));
}

TEST(ScenarioLoaderTest, MissingFileIsNotFound) {
  EXPECT_THAT(
      LoadScenarioFile("/nonexistent/x.textproto"),
      StatusIs(absl::StatusCode::kNotFound,
               "cannot read scenario file \"/nonexistent/x.textproto\": No "
               "such file or directory"));
}

// Issue 21: the pod follows cluster.slice; a run.pod naming other chips (a
// slice, or a generation and shape) is an error naming both fields, after
// every --set, so a sweep over cluster.slice cannot silently run one slice.
TEST(ScenarioLoaderTest, RunPodMustNameTheClusterSlicesChips) {
  const std::string base =
      "cluster { slice: \"v4-8\" }\n"
      "global_batch_size: 64\n"
      "run {\n"
      "  workload { name: \"mlp\" }\n";
  EXPECT_THAT(Parse(base + "}\n"), IsOk());
  EXPECT_THAT(Parse(base + "  pod { options { input_threads: 2 } }\n}\n"), IsOk());
  EXPECT_THAT(Parse(base + "  pod { slice: \"v4-8\" }\n}\n"), IsOk());
  EXPECT_THAT(Parse(base + "  pod { generation: \"v4\" shape: [2, 2, 1] }\n}\n"),
              IsOk());
  EXPECT_THAT(
      Parse(base + "  pod { slice: \"v4-16\" }\n}\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "s.textproto:5: run.pod.slice=\"v4-16\": names 8 v4 chips "
               "(2x2x2) but cluster.slice=\"v4-8\" names 4 v4 chips (2x2x1); "
               "the pod follows cluster.slice: drop run.pod's slice (or "
               "generation and shape), or make it name the same chips"));
  EXPECT_THAT(
      Parse(base + "  pod { generation: \"v5p\" shape: [2, 2, 1] }\n}\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("run.pod.generation=\"v5p\" shape [2, 2, 1]: names "
                         "4 v5p chips (2x2x1) but cluster.slice=\"v4-8\" names "
                         "4 v4 chips (2x2x1)")));
  // A --set of cluster.slice alone moves the pod with it; one that makes
  // them clash is the same error.
  EXPECT_THAT(ParseScenario(base + "}\n", "s.textproto", "/base",
                            {"cluster.slice=v4-16"}),
              IsOk());
  EXPECT_THAT(ParseScenario(base + "  pod { slice: \"v4-8\" }\n}\n",
                            "s.textproto", "/base", {"cluster.slice=v4-32"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("run.pod.slice=\"v4-8\": names 4 v4 chips "
                                 "(2x2x1) but cluster.slice=\"v4-32\" names "
                                 "16 v4 chips (2x2x4)")));
}

}  // namespace
}  // namespace tpusim::scenarios
