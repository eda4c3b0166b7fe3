// The table of time-scaling constants: every entry has a source or a
// "chosen" reason, the model reads its values from it, and scaling (for
// `tpusim validate --sensitivity`) is limited to chosen constants.

#include "sim/chip/model_constants.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/chip/chip_preset.h"
#include "sim/chip/kernel_timing.h"
#include "sim/net_preset.h"

namespace tpusim::sim {
namespace {

using ::testing::ElementsAre;
using ::tpusim::testing::StatusIs;

TEST(ModelConstantsTest, EveryConstantHasASourceOrIsMarkedChosen) {
  std::set<std::string> names;
  for (const ModelConstant& c : ModelConstants()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name << " twice";
    EXPECT_GT(c.value, 0) << c.name;
    EXPECT_FALSE(std::string(c.unit).empty()) << c.name;
    if (c.chosen) {
      EXPECT_TRUE(absl::StartsWith(c.source, "chosen: ")) << c.name;
    } else {
      EXPECT_TRUE(absl::StartsWith(c.source, "sheet ")) << c.name;
    }
    if (c.kind == ConstantKind::kEfficiency) EXPECT_LE(c.value, 1) << c.name;
  }
  EXPECT_EQ(names.size(), 13u);
}

// The sheet's VPU: 8 sublanes x 128 lanes with 2 ALUs each on v4 (A.4) and 4
// on v5p (A.6, C.1: 8x128 lanes x 4 ALUs x 2 cores x 1.75 GHz = 1.4e13
// FLOP/s per chip); 1 where the sheet gives no count.
TEST(ModelConstantsTest, VectorUnitsHaveTheSheetsAlus) {
  EXPECT_EQ(FindChipPreset("v4").value()->vpu_alus_per_lane, 2);
  EXPECT_EQ(FindChipPreset("v5p").value()->vpu_alus_per_lane, 4);
  EXPECT_EQ(FindChipPreset("v3").value()->vpu_alus_per_lane, 1);
  EXPECT_EQ(FindChipPreset("v5e").value()->vpu_alus_per_lane, 1);
  const DeviceRates v5p = DeviceRates::FromPreset(*FindChipPreset("v5p").value());
  EXPECT_EQ(v5p.vector_elements_per_cycle, 8 * 128 * 4 * 2);
  EXPECT_NEAR(v5p.vector_elements_per_cycle * v5p.clock_hz, 1.4e13, 0.05e13);
  EXPECT_EQ(DeviceRates::FromPreset(*FindChipPreset("v4").value())
                .vector_elements_per_cycle,
            8 * 128 * 2 * 2);
  // A collective's reduction: 4 bytes per ALU per cycle on each core.
  const net::NetConfig v4 = NetConfigFromPreset(*FindChipPreset("v4").value()).value();
  EXPECT_DOUBLE_EQ(v4.vector_reduce_bytes_per_second,
                   4.0 * 8 * 128 * 2 * 2 * 1.05e9);
  EXPECT_EQ(v4.pipeline_chunk_bytes, 64 << 10);
}

TEST(ModelConstantsTest, TheModelReadsTheTable) {
  const DeviceRates v3 = DeviceRates::FromPreset(*FindChipPreset("v3").value());
  EXPECT_EQ(v3.issue_overhead, common::Picoseconds::FromMicroseconds(1));
  EXPECT_DOUBLE_EQ(v3.hbm_bytes_per_second, 450e9);  // 900 GB/s, 2 devices
  const ChipPreset& v2 = *FindChipPreset("v2").value();
  EXPECT_DOUBLE_EQ(*v2.ici_link_achieved_gbps, 0.9 * 62);
  EXPECT_DOUBLE_EQ(*v2.on_chip_core_gbps, 2 * 62);
  EXPECT_EQ(v2.on_chip_core_latency, common::Picoseconds::FromNanoseconds(100));
  EXPECT_EQ(v2.ici_hop_latency, common::Picoseconds::FromMicroseconds(1));
}

TEST(ModelConstantsTest, ScalingIsForChosenConstantsOnly) {
  EXPECT_THAT(ScaleModelConstant("ici_hop_latency", 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr(
                           "model constant ici_hop_latency has a source")));
  EXPECT_THAT(ScaleModelConstant("warp_speed", 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr(
                           "model constant \"warp_speed\" is not known")));
  EXPECT_THAT(ScaleModelConstant("hbm_achievable_fraction", 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "scale of hbm_achievable_fraction=0: must be a finite "
                       "factor > 0"));
  EXPECT_THAT(ScaleModelConstant("host_loop_overhead", -1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "scale of host_loop_overhead=-1: must be a finite "
                       "factor >= 0"));
  // An efficiency is capped at 1; an additive constant may go to 0.
  ASSERT_TRUE(ScaleModelConstant("hbm_achievable_fraction", 2).ok());
  EXPECT_EQ(ModelConstantValue("hbm_achievable_fraction"), 1.0);
  ASSERT_TRUE(ScaleModelConstant("ici_achieved_fraction_v2_v3", 0.5).ok());
  EXPECT_EQ(ModelConstantValue("ici_achieved_fraction_v2_v3"), 0.45);
  ASSERT_TRUE(ScaleModelConstant("host_loop_overhead", 0).ok());
  EXPECT_EQ(ModelConstantTime("host_loop_overhead"), common::Picoseconds(0));
  ASSERT_TRUE(ScaleModelConstant("kernel_issue_overhead", 0.5).ok());
  EXPECT_EQ(ModelConstantTime("kernel_issue_overhead"),
            common::Picoseconds::FromNanoseconds(500));
}

TEST(ModelConstantsTest, ConstantsSayWhichGenerationsReadThem) {
  for (const ModelConstant& c : ModelConstants()) {
    const std::string name = c.name;
    if (name == "on_chip_core_rate") {
      EXPECT_TRUE(ConstantApplies(c, "v3"));
      EXPECT_FALSE(ConstantApplies(c, "v4"));
    }
    if (name == "host_loop_overhead") EXPECT_TRUE(ConstantApplies(c, "v6e"));
    if (name == "vpu_alus_per_lane_unpublished") {
      EXPECT_TRUE(ConstantApplies(c, "v5e"));
      EXPECT_FALSE(ConstantApplies(c, "v5p"));
    }
    if (name == "hbm_achievable_fraction") {
      EXPECT_EQ(ScaledValue(c, 2), 1.0);
      EXPECT_EQ(ScaledValue(c, 0.5), 0.5);
    }
  }
}

TEST(ModelConstantsTest, SensitivityFactorsFollowTheKind) {
  for (const ModelConstant& c : ModelConstants()) {
    const std::string name = c.name;
    if (name == "host_loop_overhead") {
      EXPECT_THAT(SensitivityFactors(c), ElementsAre(0, 0.5, 1, 2));
    }
    if (name == "collective_forwarding_granule" ||
        name == "hbm_achievable_fraction" || name == "on_chip_core_rate") {
      EXPECT_THAT(SensitivityFactors(c), ElementsAre(0.5, 1, 2)) << name;
    }
  }
}

}  // namespace
}  // namespace tpusim::sim
