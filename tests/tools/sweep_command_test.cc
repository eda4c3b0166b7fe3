// tpusim sweep: splitting value lists (the processes are covered by the
// SweepBinary.* CLI tests).

#include "tools/sweep_command.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

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

}  // namespace
}  // namespace tpusim::tools
