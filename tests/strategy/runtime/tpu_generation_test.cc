#include "strategy/runtime/tpu_generation.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::runtime {
namespace {

using ::testing::HasSubstr;
using ::tpusim::testing::StatusIs;

TEST(TpuGenerationTest, ListsTheSixGenerationsOldestFirst) {
  EXPECT_EQ(TpuGenerationNames(), "v2, v3, v4, v5e, v5p, v6e");
}

TEST(TpuGenerationTest, V3HasEightDevicesPerHost) {
  const TpuGeneration* v3 = *FindTpuGeneration("v3");
  EXPECT_EQ(v3->devices_per_chip * v3->chips_per_host, 8);
  EXPECT_TRUE(v3->slice_name_counts_cores);
}

TEST(TpuGenerationTest, MegacoreGenerationsShowOneDevicePerChip) {
  EXPECT_EQ((*FindTpuGeneration("v4"))->devices_per_chip, 1);
  EXPECT_EQ((*FindTpuGeneration("v5p"))->cores_per_chip, 2);
  EXPECT_EQ((*FindTpuGeneration("v5e"))->slice_prefix,
            std::string("v5litepod"));
}

TEST(TpuGenerationTest, UnknownNameListsValidOnes) {
  EXPECT_THAT(
      FindTpuGeneration("v7"),
      StatusIs(
          absl::StatusCode::kNotFound,
          HasSubstr("\"v7\" is not known; valid: v2, v3, v4, v5e, v5p, v6e")));
}

}  // namespace
}  // namespace tpusim::runtime
