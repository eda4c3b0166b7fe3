#include "strategy/runtime/slice.h"

#include <array>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

using Coords = std::vector<std::vector<int>>;

Coords TaskCoords(const SliceLayout& layout, int task) {
  Coords coords;
  for (const DeviceDescription& d : layout.devices) {
    if (d.task == task) coords.push_back(d.coords);
  }
  return coords;
}

TEST(SliceTest, V3_8IsOneHostWithTwoByTwoChips) {
  absl::StatusOr<SliceLayout> layout = ParseSlice("v3-8");
  ASSERT_THAT(layout, IsOk());
  EXPECT_EQ(layout->name, "v3-8");
  EXPECT_STREQ(layout->generation->name, "v3");
  EXPECT_EQ(layout->chip_mesh, (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(layout->host_block, (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(layout->num_chips, 4);
  EXPECT_EQ(layout->num_hosts, 1);
  EXPECT_EQ(layout->devices_per_chip, 2);
  EXPECT_EQ(layout->devices_per_host, 8);
  EXPECT_EQ(layout->rank, 3);
  EXPECT_EQ(layout->mesh_shape, (std::vector<int>{2, 2, 2}));
  // Spec (j): device D -> chip D div 2, core D mod 2; chip c -> (c mod 2, c div
  // 2).
  EXPECT_EQ(TaskCoords(*layout, 0), (Coords{{0, 0, 0},
                                            {0, 0, 1},
                                            {1, 0, 0},
                                            {1, 0, 1},
                                            {0, 1, 0},
                                            {0, 1, 1},
                                            {1, 1, 0},
                                            {1, 1, 1}}));
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(layout->devices[i].id, i);
    EXPECT_EQ(layout->devices[i].task, 0);
    EXPECT_EQ(layout->devices[i].ordinal, i);
    EXPECT_EQ(layout->devices[i].kind, "TPU v3 core");
  }
}

TEST(SliceTest, V2_8MatchesV3_8Layout) {
  absl::StatusOr<SliceLayout> layout = ParseSlice("v2-8");
  ASSERT_THAT(layout, IsOk());
  EXPECT_EQ(layout->mesh_shape, (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(layout->num_hosts, 1);
  EXPECT_EQ(layout->devices[3].coords, (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(layout->devices[0].kind, "TPU v2 core");
}

TEST(SliceTest, V3_32IsFourHostsOnFourByFourChips) {
  absl::StatusOr<SliceLayout> layout = ParseSlice("v3-32");
  ASSERT_THAT(layout, IsOk());
  EXPECT_EQ(layout->chip_mesh, (std::array<int, 3>{4, 4, 1}));
  EXPECT_EQ(layout->num_chips, 16);
  EXPECT_EQ(layout->num_hosts, 4);
  EXPECT_EQ(layout->devices_per_host, 8);
  EXPECT_EQ(layout->mesh_shape, (std::vector<int>{4, 4, 2}));
  ASSERT_EQ(layout->num_devices(), 32);
  // Spec (j) example: task 1 owns x in {2, 3}, y in {0, 1}.
  EXPECT_EQ(TaskCoords(*layout, 1), (Coords{{2, 0, 0},
                                            {2, 0, 1},
                                            {3, 0, 0},
                                            {3, 0, 1},
                                            {2, 1, 0},
                                            {2, 1, 1},
                                            {3, 1, 0},
                                            {3, 1, 1}}));
  // x-block fastest, then y: task 2 at (0, 2), task 3 at (2, 2).
  EXPECT_EQ(TaskCoords(*layout, 2)[0], (std::vector<int>{0, 2, 0}));
  EXPECT_EQ(TaskCoords(*layout, 3)[7], (std::vector<int>{3, 3, 1}));
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(layout->devices[i].id, i);
    EXPECT_EQ(layout->devices[i].task, i / 8);
    EXPECT_EQ(layout->devices[i].ordinal, i % 8);
  }
}

TEST(SliceTest, V3_64IsEightByFourWithXBlocksFastest) {
  absl::StatusOr<SliceLayout> layout = ParseSlice("v3-64");
  ASSERT_THAT(layout, IsOk());
  EXPECT_EQ(layout->chip_mesh, (std::array<int, 3>{8, 4, 1}));
  EXPECT_EQ(layout->num_hosts, 8);
  // Task 5: x-block 5 mod 4 = 1, y-block 5 div 4 = 1 -> chips x in {2, 3}, y in
  // {2, 3}.
  EXPECT_EQ(TaskCoords(*layout, 5).front(), (std::vector<int>{2, 2, 0}));
  EXPECT_EQ(TaskCoords(*layout, 5).back(), (std::vector<int>{3, 3, 1}));
}

TEST(SliceTest, TypicalTwoDimensionalMeshShapes) {
  EXPECT_EQ(*SliceChipMesh("v3-128"), (std::array<int, 3>{8, 8, 1}));
  EXPECT_EQ(*SliceChipMesh("v2-512"), (std::array<int, 3>{16, 16, 1}));
  EXPECT_EQ(*SliceChipMesh("v3-2048"), (std::array<int, 3>{32, 32, 1}));
  EXPECT_EQ(*SliceChipMesh("v3-16"), (std::array<int, 3>{4, 2, 1}));
  EXPECT_EQ(ParseSlice("v3-2048")->num_hosts, 256);
}

TEST(SliceTest, V4_32IsSixteenChipsTwoByTwoByFourAtRankFour) {
  absl::StatusOr<SliceLayout> layout = ParseSlice("v4-32");
  ASSERT_THAT(layout, IsOk());
  EXPECT_EQ(layout->chip_mesh, (std::array<int, 3>{2, 2, 4}));
  EXPECT_EQ(layout->num_chips, 16);
  EXPECT_EQ(layout->num_hosts, 4);
  EXPECT_EQ(layout->devices_per_chip, 1);
  EXPECT_EQ(layout->devices_per_host, 4);
  EXPECT_EQ(layout->rank, 4);
  EXPECT_EQ(layout->mesh_shape, (std::vector<int>{2, 2, 4, 1}));
  // Each host owns one z plane.
  EXPECT_EQ(TaskCoords(*layout, 2),
            (Coords{{0, 0, 2, 0}, {1, 0, 2, 0}, {0, 1, 2, 0}, {1, 1, 2, 0}}));
  EXPECT_EQ(layout->devices[0].kind, "TPU v4 (megacore)");
}

TEST(SliceTest, ThreeDimensionalShapesFollowTheV4Sequence) {
  EXPECT_EQ(*SliceChipMesh("v4-8"), (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(*SliceChipMesh("v4-16"), (std::array<int, 3>{2, 2, 2}));
  EXPECT_EQ(*SliceChipMesh("v4-32"), (std::array<int, 3>{2, 2, 4}));
  EXPECT_EQ(*SliceChipMesh("v4-64"), (std::array<int, 3>{2, 4, 4}));
  EXPECT_EQ(*SliceChipMesh("v4-128"), (std::array<int, 3>{4, 4, 4}));
  EXPECT_EQ(*SliceChipMesh("v4-256"), (std::array<int, 3>{4, 4, 8}));
  EXPECT_EQ(*SliceChipMesh("v4-512"), (std::array<int, 3>{4, 8, 8}));
  EXPECT_EQ(*SliceChipMesh("v4-1024"), (std::array<int, 3>{8, 8, 8}));
  EXPECT_EQ(*SliceChipMesh("v4-8192"), (std::array<int, 3>{16, 16, 16}));
  EXPECT_EQ(*SliceChipMesh("v5p-8"), (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(*SliceChipMesh("v5p-128"), (std::array<int, 3>{4, 4, 4}));
}

TEST(SliceTest, ChipCountingGenerationsUseFourByTwoHostBlocks) {
  absl::StatusOr<SliceLayout> layout = ParseSlice("v5litepod-16");
  ASSERT_THAT(layout, IsOk());
  EXPECT_EQ(layout->chip_mesh, (std::array<int, 3>{4, 4, 1}));
  EXPECT_EQ(layout->host_block, (std::array<int, 3>{4, 2, 1}));
  EXPECT_EQ(layout->num_hosts, 2);
  EXPECT_EQ(layout->devices_per_host, 8);
  EXPECT_EQ(layout->mesh_shape, (std::vector<int>{4, 4, 1}));
  EXPECT_EQ(TaskCoords(*layout, 1), (Coords{{0, 2, 0},
                                            {1, 2, 0},
                                            {2, 2, 0},
                                            {3, 2, 0},
                                            {0, 3, 0},
                                            {1, 3, 0},
                                            {2, 3, 0},
                                            {3, 3, 0}}));
  EXPECT_EQ(layout->devices[0].kind, "TPU v5e core");

  absl::StatusOr<SliceLayout> v6e = ParseSlice("v6e-16");
  ASSERT_THAT(v6e, IsOk());
  EXPECT_EQ(v6e->num_chips, 16);
  EXPECT_EQ(v6e->num_hosts, 2);
  EXPECT_EQ(*SliceChipMesh("v6e-8"), (std::array<int, 3>{4, 2, 1}));
  EXPECT_EQ(ParseSlice("v6e-8")->num_hosts, 1);
}

// Issue 21: "v5e-N" names the same slice as "v5litepod-N" (Cloud's name), and
// the layout always carries the Cloud name.
TEST(SliceTest, V5eIsAcceptedForV5litepodAndPrintedAsV5litepod) {
  absl::StatusOr<SliceLayout> e = ParseSlice("v5e-8");
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->name, "v5litepod-8");
  EXPECT_EQ(e->chip_mesh, ParseSlice("v5litepod-8")->chip_mesh);
  EXPECT_EQ(std::string((*FindTpuGeneration("v5litepod"))->name), "v5e");
  EXPECT_THAT(ParseSlice("v5lightpod-8"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown generation \"v5lightpod\"; did you mean "
                                 "\"v5litepod\"?")));
}

TEST(SliceTest, SlicesSmallerThanAHostBlockShrinkTheBlock) {
  absl::StatusOr<SliceLayout> four = ParseSlice("v5litepod-4");
  ASSERT_THAT(four, IsOk());
  EXPECT_EQ(four->chip_mesh, (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(four->host_block, (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(four->num_hosts, 1);
  EXPECT_EQ(four->devices_per_host, 4);
  EXPECT_EQ(four->devices[2].coords, (std::vector<int>{0, 1, 0}));

  absl::StatusOr<SliceLayout> one = ParseSlice("v6e-1");
  ASSERT_THAT(one, IsOk());
  EXPECT_EQ(one->host_block, (std::array<int, 3>{1, 1, 1}));
  EXPECT_EQ(one->num_devices(), 1);
  EXPECT_EQ(one->devices[0].coords, (std::vector<int>{0, 0, 0}));
}

TEST(SliceTest, OddMeshDimensionGetsABlockOneWide) {
  const TpuGeneration& v3 = **FindTpuGeneration("v3");
  absl::StatusOr<SliceLayout> layout = LayoutChipMesh(v3, {3, 2, 1});
  ASSERT_THAT(layout, IsOk());
  EXPECT_EQ(layout->host_block, (std::array<int, 3>{1, 2, 1}));
  EXPECT_EQ(layout->num_hosts, 3);
  EXPECT_EQ(layout->devices_per_host, 4);
  EXPECT_EQ(TaskCoords(*layout, 2),
            (Coords{{2, 0, 0}, {2, 0, 1}, {2, 1, 0}, {2, 1, 1}}));
}

TEST(SliceTest, RankFourIsAvailableForTwoDimensionalGenerations) {
  absl::StatusOr<SliceLayout> layout = ParseSlice("v3-8", 4);
  ASSERT_THAT(layout, IsOk());
  EXPECT_EQ(layout->rank, 4);
  EXPECT_EQ(layout->mesh_shape, (std::vector<int>{2, 2, 1, 2}));
  EXPECT_EQ(layout->devices[5].coords, (std::vector<int>{0, 1, 0, 1}));
}

TEST(SliceTest, RankThreeIsRejectedForThreeDimensionalGenerations) {
  EXPECT_THAT(
      ParseSlice("v4-8", 3),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("rank 3 is not available for the 3-D generation v4")));
  EXPECT_THAT(ParseSlice("v3-8", 5),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("topology rank 5 is not supported")));
}

TEST(SliceTest, NamesWithoutAShapeListTheAllowedNames) {
  EXPECT_THAT(
      ParseSlice("v3-24"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          AllOf(HasSubstr("\"v3-24\""), HasSubstr("no tpusim chip mesh for v3"),
                HasSubstr("allowed: v3-8, v3-16, v3-32, v3-64, v3-128, v3-256, "
                          "v3-512, v3-1024, v3-2048"))));
  EXPECT_THAT(ParseSlice("v3-7"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("7 TensorCores has no tpusim chip mesh")));
  EXPECT_THAT(
      ParseSlice("v3-4096"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("v3-4096")));
  EXPECT_THAT(ParseSlice("v4-4"), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("allowed: v4-8, v4-16")));
  EXPECT_THAT(ParseSlice("v6e-12"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("12 chips has no tpusim chip mesh")));
}

TEST(SliceTest, MalformedNamesAreInvalidArgument) {
  for (const char* name : {"v3", "v3-", "v3-x", "v3-+8", ""}) {
    EXPECT_THAT(ParseSlice(name), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("<generation>-<count>")))
        << name;
  }
  EXPECT_THAT(ParseSlice("-8"), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("unknown generation \"\"")));
  EXPECT_THAT(ParseSlice("v7-8"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("unknown generation \"v7\""),
                             HasSubstr("v2, v3, v4, v5litepod, v5p, v6e"))));
}

TEST(SliceTest, AllowedSliceNamesPerGeneration) {
  EXPECT_EQ(AllowedSliceNames(**FindTpuGeneration("v4")),
            "v4-8, v4-16, v4-32, v4-64, v4-128, v4-256, v4-512, v4-1024, "
            "v4-2048, v4-4096, "
            "v4-8192");
  EXPECT_EQ(AllowedSliceNames(**FindTpuGeneration("v2")),
            "v2-8, v2-16, v2-32, v2-64, v2-128, v2-256, v2-512");
  EXPECT_EQ(AllowedSliceNames(**FindTpuGeneration("v5e")),
            "v5litepod-1, v5litepod-2, v5litepod-4, v5litepod-8, v5litepod-16, "
            "v5litepod-32, "
            "v5litepod-64, v5litepod-128, v5litepod-256");
}

TEST(SliceTest, LayoutChipMeshRejectsBadMeshes) {
  const TpuGeneration& v3 = **FindTpuGeneration("v3");
  const TpuGeneration& v5e = **FindTpuGeneration("v5e");
  EXPECT_THAT(LayoutChipMesh(v3, {0, 2, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("x=0 must be in [1, 32]")));
  EXPECT_THAT(LayoutChipMesh(v3, {2, 2, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("z=2 must be in [1, 1]")));
  EXPECT_THAT(
      LayoutChipMesh(v5e, {6, 2, 1}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("x=6 is not a multiple of the host block width 4")));
}

TEST(SliceTest, PlainLayoutIsWorkersByDevices) {
  absl::StatusOr<SliceLayout> layout = PlainSliceLayout(2, 4);
  ASSERT_THAT(layout, IsOk());
  EXPECT_EQ(layout->name, "2x4");
  EXPECT_EQ(layout->generation, nullptr);
  EXPECT_EQ(layout->num_hosts, 2);
  EXPECT_EQ(layout->devices_per_host, 4);
  EXPECT_EQ(layout->rank, 3);
  EXPECT_EQ(layout->mesh_shape, (std::vector<int>{4, 2, 1}));
  ASSERT_EQ(layout->num_devices(), 8);
  EXPECT_EQ(layout->devices[5].id, 5);
  EXPECT_EQ(layout->devices[5].task, 1);
  EXPECT_EQ(layout->devices[5].ordinal, 1);
  EXPECT_EQ(layout->devices[5].coords, (std::vector<int>{1, 1, 0}));
  EXPECT_EQ(layout->devices[5].kind, "virtual TPU device");
}

TEST(SliceTest, PlainLayoutRejectsBadCounts) {
  EXPECT_THAT(
      PlainSliceLayout(0, 4),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_workers=0")));
  EXPECT_THAT(PlainSliceLayout(2, -1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("devices_per_worker=-1")));
  EXPECT_THAT(
      PlainSliceLayout(1 << 20, 2),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("<= 1048576")));
}

}  // namespace
}  // namespace tpusim::runtime
