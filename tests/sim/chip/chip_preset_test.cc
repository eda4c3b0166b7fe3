#include "sim/chip/chip_preset.h"

#include <cmath>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::sim {
namespace {

using ::testing::HasSubstr;
using ::tpusim::testing::StatusIs;

// The MXU identity (sheet A) must reproduce each published peak to within 2%:
// this catches a wrong clock, MXU count or core count in a preset.
TEST(ChipPresetTest, MxuIdentityReproducesEveryPublishedPeakWithinTwoPercent) {
  ASSERT_EQ(ChipPresets().size(), 6u);
  for (const ChipPreset& p : ChipPresets()) {
    const double derived_tflops = p.PeakBf16FlopsPerSecond() / 1e12;
    EXPECT_NEAR(derived_tflops / p.datasheet_bf16_tflops, 1.0, 0.02)
        << p.name() << ": derived " << derived_tflops << " vs "
        << p.datasheet_bf16_tflops;
  }
}

TEST(ChipPresetTest, CriticalIntensityMatchesTheSheet) {
  // Sheet C.1: critical FLOP per HBM byte = peak / HBM BW: v3 137, v4 229, v5e
  // 241, v5p 166.
  auto intensity = [](absl::string_view name) {
    const ChipPreset* p = *FindChipPreset(name);
    return p->datasheet_bf16_tflops * 1e12 / (p->hbm_gbps * 1e9);
  };
  EXPECT_NEAR(intensity("v3"), 137, 1);
  EXPECT_NEAR(intensity("v4"), 229, 1);
  EXPECT_NEAR(intensity("v5e"), 241, 1);
  EXPECT_NEAR(intensity("v5p"), 166, 1);
}

TEST(ChipPresetTest, PodAllReduceIdentityMatchesCloudFigures) {
  // Sheet C.3: Cloud "all-reduce BW per pod" = chips x ports x link BW. v5e:
  // 256 x 4 x 50 = 51.2 TB/s; v6e: 256 x 4 x 100 = 102.4 TB/s.
  const ChipPreset* v5e = *FindChipPreset("v5e");
  EXPECT_DOUBLE_EQ(256 * v5e->ici_ports * v5e->ici_link_gbps, 51200);
  const ChipPreset* v6e = *FindChipPreset("v6e");
  EXPECT_DOUBLE_EQ(256 * v6e->ici_ports * v6e->ici_link_gbps, 102400);
}

TEST(ChipPresetTest, UnknownValuesStayUnset) {
  EXPECT_FALSE((*FindChipPreset("v3"))->pcie_gbps.has_value());
  EXPECT_FALSE((*FindChipPreset("v2"))->dcn_gbps.has_value());
}

TEST(ChipPresetTest, UnknownPresetListsTheValidNames) {
  EXPECT_THAT(
      FindChipPreset("v9"),
      StatusIs(
          absl::StatusCode::kNotFound,
          HasSubstr("\"v9\" is not known; valid: v2, v3, v4, v5e, v5p, v6e")));
}

}  // namespace
}  // namespace tpusim::sim
