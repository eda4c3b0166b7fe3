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

}  // namespace
}  // namespace tpusim::tools
