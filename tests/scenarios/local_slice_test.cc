#include "scenarios/local_slice.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::scenarios {
namespace {

using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

void ExpectLayout(const char* slice, int chips, int hosts,
                  int devices_per_host) {
  absl::StatusOr<LocalSliceLayout> l = ResolveSliceNameLocally(slice);
  ASSERT_THAT(l, IsOk()) << slice;
  EXPECT_EQ(l->chips, chips) << slice;
  EXPECT_EQ(l->hosts, hosts) << slice;
  EXPECT_EQ(l->devices_per_host, devices_per_host) << slice;
}

TEST(LocalSliceTest, V2AndV3CountTensorCoresWithTwoDevicesPerChip) {
  ExpectLayout("v2-8", 4, 1, 8);
  ExpectLayout("v3-8", 4, 1, 8);
  ExpectLayout("v3-32", 16, 4, 8);
}

TEST(LocalSliceTest, V4AndV5pCountCoresButHaveOneMegacoreDevicePerChip) {
  ExpectLayout("v4-8", 4, 1, 4);
  ExpectLayout("v4-16", 8, 2, 4);
  ExpectLayout("v5p-32", 16, 4, 4);
}

TEST(LocalSliceTest, V5eAndV6eCountChips) {
  ExpectLayout("v5litepod-16", 16, 2, 8);
  ExpectLayout("v5litepod-4", 4, 1, 4);
  ExpectLayout("v6e-8", 8, 1, 8);
}

TEST(LocalSliceTest, RejectsUnknownGenerations) {
  EXPECT_THAT(
      ResolveSliceNameLocally("v9-8"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "slice \"v9-8\" is not <generation>-<count>; generations: v2, "
              "v3, v4, v5litepod, v5p, v6e")));
  EXPECT_THAT(
      ResolveSliceNameLocally("v5e-8"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("v5litepod")));
}

TEST(LocalSliceTest, RejectsBadCounts) {
  EXPECT_THAT(
      ResolveSliceNameLocally("v3-x"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "slice \"v3-x\": the count after '-' must be a positive integer"));
  EXPECT_THAT(ResolveSliceNameLocally("v3-0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("positive integer")));
  EXPECT_THAT(
      ResolveSliceNameLocally("v3-7"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "slice \"v3-7\": 7 TensorCores is not a whole number of v3 chips (2 "
          "cores per chip)"));
  EXPECT_THAT(ResolveSliceNameLocally("v3-20"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "slice \"v3-20\": 10 chips is not a whole number of v3 "
                       "hosts (4 chips "
                       "per host)"));
  EXPECT_THAT(ResolveSliceNameLocally("v2-1024"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "slice \"v2-1024\": 512 chips exceed the largest v2 "
                       "slice (256 chips)"));
}

}  // namespace
}  // namespace tpusim::scenarios
