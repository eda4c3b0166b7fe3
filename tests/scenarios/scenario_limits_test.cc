// Issue 7 (hardening) for scenario files: nesting and stage limits, checked
// sizes, file_set names, special files — each an error with file:LINE (or the
// file's name), never a crash or a hang.

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenarios/scenario_loader.h"

namespace tpusim::scenarios {
namespace {

using ::tpusim::testing::StatusIs;

constexpr char kCluster[] = "cluster { workers: 1 replicas_per_worker: 1 }\n";

absl::Status Parse(const std::string& text) {
  return ParseScenario(std::string(kCluster) + text, "t", "").status();
}

TEST(ScenarioLimitsTest, DeepNestingIsAParserErrorWithTheLine) {
  std::string text = "pipeline { range { stop: 1 } }\n";
  const int depth = 3000;
  for (int i = 0; i < depth; ++i) text += "pipeline { concatenate { ";
  text += "pipeline { range { stop: 1 } }";
  for (int i = 0; i < depth; ++i) text += " } }";
  // The parser stops on line 3 where the nesting passes 64 levels.
  EXPECT_THAT(Parse(text + "\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "t:3:810: Message is too deep, the parser exceeded the "
                       "configured recursion limit of 64."));
}

TEST(ScenarioLimitsTest, ThousandsOfStagesAreAValidationErrorWithTheLine) {
  std::string text = "pipeline { range { stop: 4 } }\n";
  for (int i = 1; i < 1200; ++i)
    text += "pipeline { map { fn: \"identity\" } }\n";
  // Stage 1000 (0-based) is the 1001st, on line 1 + 1001.
  EXPECT_THAT(Parse(text),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "t:1002: pipeline[1000]: the scenario has more than "
                       "1000 stages (counting nested pipelines); tpusim's "
                       "limit keeps deep pipelines from exhausting the stack"));
  // Nested stages count too.
  std::string nested = "pipeline { range { stop: 4 } }\n";
  nested += "pipeline { concatenate {\n";
  nested += "pipeline { range { stop: 1 } }\n";
  for (int i = 0; i < 1000; ++i)
    nested += "pipeline { map { fn: \"identity\" } }\n";
  nested += "} }\n";
  EXPECT_THAT(Parse(nested),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "t:1002: pipeline[1].concatenate.pipeline[998]: the "
                       "scenario has more than 1000 stages (counting nested "
                       "pipelines); tpusim's limit keeps deep pipelines from "
                       "exhausting the stack"));
}

TEST(ScenarioLimitsTest, ShapeProductsAreChecked) {
  EXPECT_THAT(
      Parse("pipeline { from_tensors { component {\n"
            "  shape: [4294967296, 4294967296] } } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "t:3: pipeline[0].from_tensors.component[0].shape=[4294967296,"
               "4294967296]: shape [4294967296,4294967296] has more than "
               "2^63-1 elements (the product of its dimensions overflows "
               "int64)"));
  EXPECT_THAT(
      Parse("pipeline { from_tensors { component { dtype: \"string\"\n"
            "  string_values: \"a\"} } }\n"
            "pipeline { map { fn: \"parse_example\"\n"
            "  feature { name: \"x\" shape: [1099511627776, 1099511627776] } "
            "} }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "t:5: pipeline[1].map.feature[0].shape=[1099511627776,"
               "1099511627776]: shape [1099511627776,1099511627776] has more "
               "than 2^63-1 elements (the product of its dimensions "
               "overflows int64)"));
  // tests/fuzz/regressions/scenario/literal_shape_overflow.
  EXPECT_THAT(
      Parse(
          "pipeline { from_tensor_slices {\n"
          "  component { dtype: \"uint8\" shape: [2, 2, 4611686018427387904]\n"
          "  int_values: [0, 255, 7, 8] } } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "t:3: pipeline[0].from_tensor_slices.component[0].shape=[2,2,"
               "4611686018427387904]: shape [2,2,4611686018427387904] has "
               "more than 2^63-1 elements (the product of its dimensions "
               "overflows int64)"));
}

TEST(ScenarioLimitsTest, IntegerRangeErrorsCarryTheLine) {
  EXPECT_THAT(
      Parse("pipeline { from_tensors { component { dtype: \"int32\" "
            "int_values: [1, 5000000000] } } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "t:2: pipeline[0].from_tensors.component[0].int_values[1]="
               "5000000000: out of range for int32 [-2147483648, 2147483647]"));
}

TEST(ScenarioLimitsTest, FileSetNamesAreRestricted) {
  const std::string rule =
      ": must be 1 to 64 characters from [A-Za-z0-9_.-], not starting with "
      "'.' (the name becomes a directory under the data directory)";
  for (const std::string& name :
       {std::string("../.."), std::string("a/b"), std::string(".hidden"),
        std::string(65, 'n'), std::string("sp ace")}) {
    EXPECT_THAT(Parse("file_set { name: \"" + name +
                      "\" num_files: 1 records_per_file: 1 }\n"
                      "pipeline { range { stop: 1 } }\n"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "t:2: file_set[0].name=\"" + name + "\"" + rule))
        << name;
  }
  EXPECT_THAT(Parse("file_set { name: \"train-v1.2_x\" num_files: 1 "
                    "records_per_file: 1 }\npipeline { range { stop: 1 } }\n"),
              ::tpusim::testing::IsOk());
}

TEST(ScenarioLimitsTest, NumParallelReadsIsBounded) {
  EXPECT_THAT(
      Parse("pipeline { tfrecord { file: \"a\"\n num_parallel_reads: "
            "2097152 } }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "t:3: pipeline[0].tfrecord.num_parallel_reads=2097152: must be "
               "in [1, 1048576]"));
}

TEST(ScenarioLimitsTest, SpecialFilesAreRefusedNotRead) {
  EXPECT_THAT(LoadScenarioFile("/dev/zero"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "scenario file \"/dev/zero\" is a character device, not "
                       "a regular file"));
  const std::string dir = ::testing::TempDir() + "/scenario_limits_test_fifo";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/s.textproto";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(
      LoadScenarioFile(fifo),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "scenario file \"" + fifo + "\" is a FIFO, not a regular file"));
  const std::string big = dir + "/big.textproto";
  {
    std::ofstream out(big);
    out << std::string(kMaxScenarioFileBytes + 1, '#');
  }
  EXPECT_THAT(LoadScenarioFile(big),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "scenario file \"" + big +
                           "\" has 16777217 bytes, more than the limit of "
                           "16777216 bytes"));
  std::filesystem::remove_all(dir);
}

TEST(ScenarioErrorTest, LocatesNestedFieldPaths) {
  absl::StatusOr<LoadedScenario> s =
      ParseScenario(std::string(kCluster) +
                        "pipeline { range { stop: 1 } }\n"
                        "pipeline { concatenate {\n"
                        "  pipeline {\n"
                        "    text_line { glob: \"x*\" } } } }\n",
                    "t", "");
  ASSERT_THAT(s, ::tpusim::testing::IsOk());
  EXPECT_THAT(
      ScenarioError(*s, "pipeline[1].concatenate.pipeline[0].text_line.glob",
                    "\"x*\"", "no file matches"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "t:5: pipeline[1].concatenate.pipeline[0].text_line."
               "glob=\"x*\": no file matches"));
}

}  // namespace
}  // namespace tpusim::scenarios
