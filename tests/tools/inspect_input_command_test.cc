#include "tools/inspect_input_command.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/cli.h"

namespace tpusim::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Result {
  int code;
  std::string out;
  std::string err;
};

std::string SourceDir() { return TPUSIM_SOURCE_DIR; }

std::string Scenario(const std::string& name) {
  return SourceDir() + "/scenarios/" + name + ".textproto";
}

std::string Golden(const std::string& name) {
  return SourceDir() + "/tests/tools/golden/" + name + ".json";
}

std::string DataDir() {
  return ::testing::TempDir() + "/inspect_input_command_test";
}

Result RunCommand(std::vector<std::string> args) {
  args.insert(args.begin(), "inspect-input");
  args.push_back("--data-dir=" + DataDir());
  Cli cli({InspectInputCommand()});
  std::ostringstream out, err;
  const int code = cli.Run(args, out, err);
  return {code, out.str(), err.str()};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(InspectInputCommandTest, DefaultScenarioTextListsTheWorkedExample) {
  const Result r = RunCommand({Scenario("default"), "--steps", "3"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("step 0\n"
                               "  replica 0 (worker 0): [0, 1]\n"
                               "  replica 1 (worker 0): [4, 5]\n"
                               "  replica 2 (worker 1): [2, 3]\n"
                               "  replica 3 (worker 1): [6, 7]\n"
                               "step 1\n"
                               "  replica 0 (worker 0): [8, 9]\n"
                               "  replica 1 (worker 0): [12, 13]\n"
                               "  replica 2 (worker 1): [10, 11]\n"
                               "  replica 3 (worker 1): [14, 15]\n"
                               "end at step 2: OUT_OF_RANGE: End of sequence"));
  EXPECT_THAT(
      r.out,
      HasSubstr("warning: worker 0 of 2: AUTO sharding policy could not apply "
                "FILE-based sharding"));
}

TEST(InspectInputCommandTest, JsonMatchesTheGoldenFile) {
  const Result r = RunCommand({Scenario("default"), "--format=json"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, ReadFile(Golden("default")));
}

TEST(InspectInputCommandTest, BatchListsEveryScenarioInOneArrayInOrder) {
  const std::string list = ::testing::TempDir() + "/batch_list.txt";
  {
    std::ofstream o(list);
    o << Scenario("default") << "\n\n  " << SourceDir()
      << "/no/such.textproto\n"
      << Scenario("default") << "\n";
  }
  const Result r = RunCommand({list, "--batch", "--format=json"});
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string golden = ReadFile(Golden("default"));
  EXPECT_EQ(r.out,
            "[\n{\"scenario\": \"" + Scenario("default") + "\", \"listing\": " +
                golden + "},\n{\"scenario\": \"" + SourceDir() +
                "/no/such.textproto\", \"error\": {\"code\": \"NOT_FOUND\", "
                "\"message\": \"cannot read scenario file \\\"" +
                SourceDir() +
                "/no/such.textproto\\\": No such file or directory\"}},\n"
                "{\"scenario\": \"" +
                Scenario("default") + "\", \"listing\": " + golden + "}\n]\n");
}

TEST(InspectInputCommandTest, BatchNeedsJsonAndNoGolden) {
  const Result text = RunCommand({Scenario("default"), "--batch"});
  EXPECT_EQ(text.code, 1);
  EXPECT_THAT(text.err, HasSubstr("--batch needs --format=json"));
  const Result golden = RunCommand({Scenario("default"), "--batch",
                                    "--format=json", "--golden", "x.json"});
  EXPECT_EQ(golden.code, 1);
  EXPECT_THAT(golden.err, HasSubstr("--golden is not allowed with --batch"));
}

TEST(InspectInputCommandTest, TwoRunsGiveIdenticalBytes) {
  for (const char* name : {"default", "file_sharding", "dict_elements"}) {
    const Result a = RunCommand({Scenario(name), "--format=json"});
    const Result b = RunCommand({Scenario(name), "--format=json"});
    EXPECT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(a.out, b.out) << name;
    const Result c = RunCommand({Scenario(name)});
    const Result d = RunCommand({Scenario(name)});
    EXPECT_EQ(c.out, d.out) << name;
  }
}

TEST(InspectInputCommandTest, StepsLimitsTheListingAndSaysSoInEnd) {
  const Result r =
      RunCommand({Scenario("default"), "--format=json", "--steps=1"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(
      r.out,
      HasSubstr("\"end\": {\"at_step\": 1, \"code\": \"OK\", \"message\": "
                "\"stopped after 1 steps\"}"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("\"step\": 1}")));
}

TEST(InspectInputCommandTest, StepsBelowOneIsAnInputErrorNamingFlagAndValue) {
  Result r = RunCommand({Scenario("default"), "--steps", "0"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "tpusim inspect-input: INVALID_ARGUMENT: --steps=0 is not allowed; "
            "expected an "
            "integer >= 1\n");
  r = RunCommand({Scenario("default"), "--steps=two"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("--steps=two is not allowed"));
}

TEST(InspectInputCommandTest, UnknownFormatIsAnInputError) {
  const Result r = RunCommand({Scenario("default"), "--format=xml"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err,
              HasSubstr("--format=xml is not allowed; expected text or json"));
}

TEST(InspectInputCommandTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCommand({Scenario("default"), "--bogus"}).code, 2);
  EXPECT_EQ(RunCommand({}).code, 2);
  EXPECT_EQ(RunCommand({Scenario("default"), Scenario("default")}).code, 2);
}

TEST(InspectInputCommandTest, MalformedScenarioExitsOneNamingLineAndField) {
  const std::string path = ::testing::TempDir() + "/malformed.textproto";
  std::ofstream(path) << "cluster { workers: 2 replicas_per_worker: 2 }\n"
                         "pipeline { range { stop: 16 } }\n"
                         "pipeline { batch { batch_size: 0 } }\n";
  const Result r = RunCommand({path});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "tpusim inspect-input: INVALID_ARGUMENT: " + path +
                       ":3: pipeline[1].batch.batch_size=0: must be >= 1\n");
  EXPECT_EQ(r.out, "");
}

TEST(InspectInputCommandTest, GoldenMatchExitsZero) {
  const Result r = RunCommand(
      {Scenario("partial_batch"), "--golden", Golden("partial_batch")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST(InspectInputCommandTest, GoldenMismatchExitsOneWithADiffNamingTheLine) {
  std::string golden = ReadFile(Golden("default"));
  const size_t at = golden.find("[12, 13]");
  ASSERT_NE(at, std::string::npos);
  golden.replace(at, 8, "[12, 99]");
  const std::string path = ::testing::TempDir() + "/wrong_default.json";
  std::ofstream(path, std::ios::binary) << golden;
  const Result r = RunCommand({Scenario("default"), "--golden=" + path});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(
      r.err,
      StartsWith(
          "tpusim inspect-input: FAILED_PRECONDITION: the JSON output of "));
  EXPECT_THAT(r.err, HasSubstr("differs from golden " + path +
                               "; first difference at line 15"));
  EXPECT_THAT(r.err, HasSubstr("--- expected " + path +
                               "\n+++ actual output\n@@ line 15 @@\n"));
  EXPECT_THAT(
      r.err,
      HasSubstr("\n- "
                "      {\"components\": [{\"dtype\": \"int64\", \"path\": "
                "\"0\", \"shape\": [2], \"values\": [12, 99]}]"));
  EXPECT_THAT(
      r.err,
      HasSubstr("\n+ "
                "      {\"components\": [{\"dtype\": \"int64\", \"path\": "
                "\"0\", \"shape\": [2], \"values\": [12, 13]}]"));
  EXPECT_THAT(r.err, HasSubstr("rerun with --update-golden"));
}

TEST(InspectInputCommandTest, MissingGoldenIsNotFound) {
  const Result r =
      RunCommand({Scenario("default"), "--golden=/nonexistent/g.json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(
      r.err,
      HasSubstr(
          "NOT_FOUND: --golden=/nonexistent/g.json: cannot read the file"));
}

TEST(InspectInputCommandTest, UpdateGoldenRewritesTheFile) {
  const std::string path = ::testing::TempDir() + "/updated.json";
  std::ofstream(path) << "stale";
  Result r = RunCommand(
      {Scenario("semantics_2_4"), "--golden", path, "--update-golden"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ReadFile(path), ReadFile(Golden("semantics_2_4")));
  r = RunCommand({Scenario("semantics_2_4"), "--golden", path});
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(InspectInputCommandTest, UpdateGoldenNeedsGolden) {
  const Result r = RunCommand({Scenario("default"), "--update-golden"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("--update-golden needs --golden FILE"));
}

TEST(InspectInputCommandTest, ErrorEndingTheListingIsPrintedThenExitsOne) {
  const Result r = RunCommand({Scenario("too_few_files"), "--format=json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(
      r.out,
      HasSubstr("\"end\": {\"at_step\": 0, \"code\": \"INVALID_ARGUMENT\""));
  EXPECT_THAT(r.out, HasSubstr("\"steps\": [],"));
  EXPECT_THAT(r.err, HasSubstr("tpusim inspect-input: INVALID_ARGUMENT: the "
                               "listing ended at step 0: "));
  EXPECT_THAT(r.err, HasSubstr("# shards = 2"));
}

TEST(InspectInputCommandTest, ErrorEndingTheListingMatchingTheGoldenExitsZero) {
  const Result r = RunCommand(
      {Scenario("too_few_files"), "--golden", Golden("too_few_files")});
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(InspectInputCommandTest, EndOfDataAndStepLimitExitZero) {
  EXPECT_EQ(RunCommand({Scenario("partial_batch")}).code, 0);
  EXPECT_EQ(RunCommand({Scenario("default"), "--steps", "1"}).code, 0);
}

// A stream buffer that keeps a copy of what was written at every flush.
class SnapshotBuf final : public std::stringbuf {
 public:
  std::vector<std::string> snapshots;

 protected:
  int sync() override {
    snapshots.push_back(str());
    return 0;
  }
};

TEST(InspectInputCommandTest, TextIsPrintedStepByStep) {
  SnapshotBuf buf;
  std::ostream out(&buf);
  std::ostringstream err;
  Cli cli({InspectInputCommand()});
  const int code = cli.Run({"inspect-input", Scenario("default"), "--steps=2",
                            "--data-dir=" + DataDir()},
                           out, err);
  EXPECT_EQ(code, 0) << err.str();
  // Flushed after the header and after each step, before the run went on.
  ASSERT_GE(buf.snapshots.size(), 3u);
  EXPECT_THAT(buf.snapshots[0], ::testing::EndsWith("shard policy AUTO\n"));
  EXPECT_THAT(buf.snapshots[1],
              ::testing::EndsWith("step 0\n"
                                  "  replica 0 (worker 0): [0, 1]\n"
                                  "  replica 1 (worker 0): [4, 5]\n"
                                  "  replica 2 (worker 1): [2, 3]\n"
                                  "  replica 3 (worker 1): [6, 7]\n"));
  EXPECT_THAT(buf.snapshots[1], ::testing::Not(HasSubstr("step 1")));
  EXPECT_THAT(buf.snapshots[2],
              ::testing::EndsWith("  replica 3 (worker 1): [14, 15]\n"));
  EXPECT_THAT(buf.str(), HasSubstr("  replica 3 (worker 1): [14, 15]\n"
                                   "end at step 2: stopped after 2 steps\n"));
}

TEST(InspectInputCommandTest, JsonPastTheValueCapIsResourceExhausted) {
  // One step of 1,100,000 values: past the 1,048,576-value cap of the JSON
  // listing.
  const std::string path = ::testing::TempDir() + "/huge_step.textproto";
  std::ofstream(path) << "cluster { workers: 1 replicas_per_worker: 1 }\n"
                         "pipeline { range { stop: 1100000 } }\n"
                         "pipeline { batch { batch_size: 1100000 } }\n";
  const Result r = RunCommand({path, "--format=json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "tpusim inspect-input: RESOURCE_EXHAUSTED: --format=json (and "
            "--golden) hold the whole listing until it is complete, and step 0 "
            "would take it past 1048576 values (tpusim's cap); a single step "
            "is too large to list as JSON, or use --format=text without "
            "--golden, which prints step by step\n");
}

}  // namespace
// Issue 7: a directory passed as --golden says so.
TEST(InspectInputCommandTest, GoldenDirectorySaysSo) {
  const std::string dir = ::testing::TempDir() + "/golden_dir_test";
  std::filesystem::create_directories(dir);
  const Result r = RunCommand({Scenario("default"), "--golden", dir});
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "tpusim inspect-input: INVALID_ARGUMENT: --golden=" + dir +
                       ": cannot read the file (golden file \"" + dir +
                       "\" is a directory)\n");
}

// Issue 7: --max-memory bounds the input buffers; the error gives the estimate.
TEST(InspectInputCommandTest, MaxMemoryFailsWithTheEstimate) {
  Result r = RunCommand({Scenario("default"), "--max-memory=100"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, StartsWith("tpusim inspect-input: RESOURCE_EXHAUSTED: the "
                                "listing ended at step 0: batch(batch_size="));
  EXPECT_THAT(r.err, HasSubstr("more than the memory budget of 100 bytes (100 "
                               "B; Options.max_memory, tpusim --max-memory)"));
  r = RunCommand({Scenario("default"), "--max-memory=1MiB"});
  EXPECT_EQ(r.code, 0) << r.err;
  r = RunCommand({Scenario("default"), "--max-memory=lots"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "tpusim inspect-input: INVALID_ARGUMENT: --max-memory=lots is not "
            "allowed; expected a positive number of bytes, optionally with a "
            "suffix KiB, MiB, GiB or TiB (e.g. 512MiB)\n");
}

TEST(InspectInputCommandTest, UpdateGoldenIntoADirectoryGivesTheOsReason) {
  const std::string dir = ::testing::TempDir() + "/golden_write_dir_test";
  std::filesystem::create_directories(dir);
  const Result r =
      RunCommand({Scenario("default"), "--golden", dir, "--update-golden"});
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "tpusim inspect-input: FAILED_PRECONDITION: --golden=" + dir +
                ": cannot write golden file \"" + dir + "\": Is a directory\n");
}

}  // namespace tpusim::tools
