#include "common/did_you_mean.h"

#include "gtest/gtest.h"

namespace tpusim::common {
namespace {

TEST(DidYouMeanTest, EditDistanceCountsInsertionsDeletionsSubstitutionsSwaps) {
  EXPECT_EQ(EditDistance("", ""), 0);
  EXPECT_EQ(EditDistance("abc", ""), 3);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("--fromat", "--format"), 1);  // a swap
  EXPECT_EQ(EditDistance("V4", "v4"), 0);               // case ignored
}

TEST(DidYouMeanTest, SuggestsTheClosestTypoOnly) {
  const std::vector<std::string> commands = {"run", "sweep", "topo",
                                             "compile", "presets"};
  EXPECT_EQ(DidYouMean("swep", commands), "; did you mean \"sweep\"?");
  EXPECT_EQ(DidYouMean("compiel", commands), "; did you mean \"compile\"?");
  EXPECT_EQ(DidYouMean("preset", commands), "; did you mean \"presets\"?");
  EXPECT_EQ(DidYouMean("banana", commands), "");
  EXPECT_EQ(DidYouMean("run", commands), "");  // an exact name is no typo
  // Ties keep the first candidate.
  EXPECT_EQ(ClosestName("abc", {"abx", "aby"}), "abx");
  // Two characters are too short to guess from.
  EXPECT_EQ(ClosestName("v9", {"v2", "v3"}), "");
  EXPECT_EQ(ClosestName("v5", {"v4", "v5e"}), "v5e");
}

}  // namespace
}  // namespace tpusim::common
