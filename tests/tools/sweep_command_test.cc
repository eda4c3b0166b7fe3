// tpusim sweep: splitting value lists (the processes are covered by the
// SweepBinary.* CLI tests).

#include "tools/sweep_command.h"

#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/cli.h"

namespace tpusim::tools {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(SweepCommandTest, ValuesSplitAtTopLevelCommasOnly) {
  EXPECT_THAT(ExpandSetList("a.b=1,2,3"), ElementsAre("a.b=1", "a.b=2", "a.b=3"));
  EXPECT_THAT(ExpandSetList("x=[1,2],[3]"), ElementsAre("x=[1,2]", "x=[3]"));
  EXPECT_THAT(ExpandSetList("m={a: [1, 2] b: 3},{a: []}"),
              ElementsAre("m={a: [1, 2] b: 3}", "m={a: []}"));
  EXPECT_THAT(ExpandSetList("s=v"), ElementsAre("s=v"));
  EXPECT_THAT(ExpandSetList("novalue="), IsEmpty());
  EXPECT_THAT(ExpandSetList("noequals"), IsEmpty());
}

int RunCli(const std::vector<std::string>& args, std::string* out,
           std::string* err) {
  Cli cli({SweepCommand()});
  std::ostringstream o, e;
  const int code = cli.Run(args, o, e);
  *out = o.str();
  *err = e.str();
  return code;
}

// Issue 22: what every point shares is checked once, before any child runs:
// one error line, not one failing row per point.
TEST(SweepCommandTest, ScenarioPathAndBackendAreCheckedOnceUpFront) {
  std::string out, err;
  EXPECT_EQ(RunCli({"sweep", "/nonexistent/s.textproto",
                    "--set=global_batch_size=8,16,32"},
                   &out, &err),
            1);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err,
            "tpusim sweep: NOT_FOUND: cannot read scenario file "
            "\"/nonexistent/s.textproto\": No such file or directory\n");
  EXPECT_EQ(RunCli({"sweep", "/nonexistent/s.textproto", "--backend=tpu",
                    "--set=global_batch_size=8,16,32"},
                   &out, &err),
            2);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err,
            "tpusim sweep: INVALID_ARGUMENT: --backend=tpu must be sim, host "
            "or pjrt\n");
}

// Issue 21: every point's scenario is loaded before any runs (these fail
// before a child process would start, so they run in this process).
TEST(SweepCommandTest, EveryPointIsCheckedBeforeAnyRuns) {
  const std::string scenario =
      std::string(TPUSIM_SOURCE_DIR) + "/scenarios/run/input_bound.textproto";
  std::string out, err;
  EXPECT_EQ(RunCli({"sweep", scenario, "--set=cluster.slice=v4-8,v4-12"}, &out,
                   &err),
            1);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "tpusim sweep: INVALID_ARGUMENT: point 1 (--set "
                 "cluster.slice=v4-12): " +
                     scenario +
                     ":10: cluster.slice=\"v4-12\": slice name \"v4-12\": 12 "
                     "TensorCores has no tpusim chip mesh for v4; allowed: "
                     "v4-8, v4-16, v4-32, v4-64, v4-128, v4-256, v4-512, "
                     "v4-1024, v4-2048, v4-4096, v4-8192 (no point was run)\n");
  EXPECT_EQ(RunCli({"sweep", scenario, "--set=cluster.slice=v4-8,v4-16",
                    "--set=run.pod.slice=v4-8"},
                   &out, &err),
            1);
  EXPECT_EQ(out, "");
  EXPECT_THAT(err, ::testing::StartsWith(
                       "tpusim sweep: INVALID_ARGUMENT: point 1 (--set "
                       "cluster.slice=v4-16 --set run.pod.slice=v4-8): "));
  EXPECT_THAT(err, ::testing::HasSubstr(
                       "run.pod.slice=\"v4-8\": names 4 v4 chips (2x2x1) but "
                       "cluster.slice=\"v4-16\" names 8 v4 chips (2x2x2)"));
}

TEST(SweepCommandTest, ScaleBatchPerReplicaWithAGlobalBatchSetIsAUsageError) {
  std::string out, err;
  EXPECT_EQ(RunCli({"sweep", "/nonexistent/s.textproto",
                    "--scale-batch=per-replica",
                    "--set=global_batch_size=8,16"},
                   &out, &err),
            2);
  EXPECT_EQ(err,
            "tpusim sweep: INVALID_ARGUMENT: --scale-batch=per-replica sets "
            "global_batch_size itself (the file's per-replica batch times the "
            "replicas); drop --set global_batch_size=8,16 or use "
            "--scale-batch=global\n");
  EXPECT_EQ(RunCli({"sweep", "/nonexistent/s.textproto", "--scale-batch=both",
                    "--set=global_batch_size=8,16"},
                   &out, &err),
            2);
  EXPECT_EQ(err,
            "tpusim sweep: INVALID_ARGUMENT: --scale-batch=both must be "
            "per-replica or global\n");
}

TEST(SweepCommandTest, OutThatIsNotEmptyIsAnErrorBeforeAnythingRuns) {
  const std::string scenario =
      std::string(TPUSIM_SOURCE_DIR) + "/scenarios/run/input_bound.textproto";
  // The source directory exists and is not empty.
  const std::string dir = std::string(TPUSIM_SOURCE_DIR) + "/scenarios/run";
  std::string out, err;
  EXPECT_EQ(RunCli({"sweep", scenario, "--out", dir,
                    "--set=cluster.slice=v4-8,v4-16"},
                   &out, &err),
            1);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "tpusim sweep: INVALID_ARGUMENT: --out=" + dir +
                     ": exists and is not empty; give a new or empty directory "
                     "(nothing was run)\n");
  EXPECT_EQ(RunCli({"sweep", scenario, "--out", scenario,
                    "--set=cluster.slice=v4-8,v4-16"},
                   &out, &err),
            1);
  EXPECT_EQ(err, "tpusim sweep: INVALID_ARGUMENT: --out=" + scenario +
                     ": exists and is not a directory; give a new or empty "
                     "directory\n");
}

}  // namespace
}  // namespace tpusim::tools
