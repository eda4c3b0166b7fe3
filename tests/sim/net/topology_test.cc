// Topology, wraparound rules, routing, request validation and lower bounds
// (no SystemC kernel).

#include "sim/net/topology.h"

#include <array>
#include <cmath>
#include <memory>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/net/collective.h"
#include "strategy/runtime/slice.h"
#include "tests/sim/net/net_test_util.h"

namespace tpusim::sim::net {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeTopology;
using testing::TestConfig;
using ::tpusim::testing::StatusIs;

std::array<bool, 3> Wraps(const Topology& t) {
  return {t.wraps(0), t.wraps(1), t.wraps(2)};
}

absl::StatusOr<Topology> Slice(absl::string_view name,
                               WrapMode wrap = WrapMode::kGeneration) {
  TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                          runtime::ParseSlice(name));
  return Topology::Create(layout, wrap);
}

TEST(TopologyTest, V5eAndV6eWrapOnlyAnAxisOfLength16) {
  ASSERT_OK_AND_ASSIGN(Topology pod, Slice("v5litepod-256"));  // 16x16
  EXPECT_EQ(Wraps(pod), (std::array<bool, 3>{true, true, false}));
  ASSERT_OK_AND_ASSIGN(Topology half, Slice("v6e-128"));  // 16x8
  EXPECT_EQ(half.dims(), (std::array<int, 3>{16, 8, 1}));
  EXPECT_EQ(Wraps(half), (std::array<bool, 3>{true, false, false}));
  ASSERT_OK_AND_ASSIGN(Topology small, Slice("v5litepod-16"));  // 4x4
  EXPECT_EQ(Wraps(small), (std::array<bool, 3>{false, false, false}));
}

TEST(TopologyTest, V4AndV5pWrapOnlyWholeCubes) {
  ASSERT_OK_AND_ASSIGN(Topology cube, Slice("v4-128"));  // 4x4x4
  EXPECT_EQ(Wraps(cube), (std::array<bool, 3>{true, true, true}));
  ASSERT_OK_AND_ASSIGN(Topology two, Slice("v5p-256"));  // 4x4x8
  EXPECT_EQ(Wraps(two), (std::array<bool, 3>{true, true, true}));
  ASSERT_OK_AND_ASSIGN(Topology sub, Slice("v4-32"));  // 2x2x4
  EXPECT_EQ(Wraps(sub), (std::array<bool, 3>{false, false, false}));
}

TEST(TopologyTest, V2AndV3WrapOnlyThePodsFullAxis) {
  // tpusim choice (topology.h): v2 pod axis 16, v3 pod axis 32.
  ASSERT_OK_AND_ASSIGN(Topology v2pod, Slice("v2-512"));  // 16x16
  EXPECT_EQ(Wraps(v2pod), (std::array<bool, 3>{true, true, false}));
  ASSERT_OK_AND_ASSIGN(Topology v3pod, Slice("v3-2048"));  // 32x32
  EXPECT_EQ(Wraps(v3pod), (std::array<bool, 3>{true, true, false}));
  ASSERT_OK_AND_ASSIGN(Topology v3, Slice("v3-512"));  // 16x16, not the pod
  EXPECT_EQ(Wraps(v3), (std::array<bool, 3>{false, false, false}));
  // v2-8 is 2x2: one link per direction between the two chips of an axis.
  ASSERT_OK_AND_ASSIGN(Topology v2, Slice("v2-8", WrapMode::kOn));
  EXPECT_EQ(Wraps(v2), (std::array<bool, 3>{false, false, false}));
  EXPECT_EQ(v2.NumLinks(0), 2);
  EXPECT_EQ(v2.Neighbor(0, 0), 1);   // +x
  EXPECT_EQ(v2.Neighbor(0, 1), -1);  // no -x link from x = 0
  EXPECT_EQ(v2.devices_per_chip(), 2);
}

TEST(TopologyTest, ForcingWraparoundOnAndOff) {
  ASSERT_OK_AND_ASSIGN(Topology on, Slice("v5litepod-16", WrapMode::kOn));
  EXPECT_EQ(Wraps(on), (std::array<bool, 3>{true, true, false}));
  EXPECT_EQ(on.NumLinks(0), 4);
  ASSERT_OK_AND_ASSIGN(Topology off, Slice("v4-128", WrapMode::kOff));
  EXPECT_EQ(Wraps(off), (std::array<bool, 3>{false, false, false}));
  EXPECT_EQ(off.NumLinks(0), 3);  // a corner of a 4x4x4 mesh
  EXPECT_EQ(off.NumLinks(off.chip_at({1, 1, 1})), 6);
  EXPECT_THAT(ParseWrapMode("maybe"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "wraparound \"maybe\" is not allowed; expected "
                       "generation, on or off"));
}

TEST(TopologyTest, RoutingIsDimensionOrderAndShortestWayRound) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v5e", {8, 8, 1}, WrapMode::kOn));
  const int from = t.chip_at({1, 1, 0});
  EXPECT_EQ(t.NextDirection(from, t.chip_at({3, 6, 0})), 0);  // +x first
  EXPECT_EQ(t.NextDirection(from, t.chip_at({1, 6, 0})), 3);  // -y: 3 hops
  EXPECT_EQ(t.Hops(from, t.chip_at({1, 6, 0})), 3);
  EXPECT_EQ(t.NextDirection(from, t.chip_at({7, 1, 0})), 1);  // -x wrap
  // Tie (4 either way on a ring of 8): the + direction.
  EXPECT_EQ(t.NextDirection(from, t.chip_at({5, 1, 0})), 0);
  EXPECT_EQ(t.NextDirection(from, from), -1);
  ASSERT_OK_AND_ASSIGN(Topology mesh,
                       MakeTopology("v5e", {8, 8, 1}, WrapMode::kOff));
  EXPECT_EQ(mesh.NextDirection(from, mesh.chip_at({7, 1, 0})), 0);
  EXPECT_EQ(mesh.Hops(from, mesh.chip_at({7, 7, 0})), 12);
}

TEST(TopologyTest, ChipsAndDevicesComeFromTheSliceLayout) {
  ASSERT_OK_AND_ASSIGN(runtime::SliceLayout layout,
                       runtime::ParseSlice("v3-32"));
  ASSERT_OK_AND_ASSIGN(Topology t,
                       Topology::Create(layout, WrapMode::kGeneration));
  ASSERT_EQ(t.num_devices(), 32);
  for (const runtime::DeviceDescription& d : layout.devices) {
    const std::array<int, 3> xyz = {d.coords[0], d.coords[1], 0};
    EXPECT_EQ(d.chip, layout.ChipId(xyz));
    EXPECT_EQ(t.chip_of_device(d.id), d.chip);
    EXPECT_EQ(t.coords(d.chip), xyz);
    EXPECT_EQ(t.core_of_device(d.id), d.coords[2]);
    EXPECT_EQ(t.device_at(d.chip, d.coords[2]), d.id);
  }
  runtime::SliceLayout plain = *runtime::PlainSliceLayout(2, 4);
  EXPECT_THAT(Topology::Create(plain, WrapMode::kGeneration),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("has no TPU generation")));
}

TEST(CustomShapeTest, TheExplicitOverrideAllowsShapesBeyondTheLargestSlice) {
  const runtime::TpuGeneration* v5e = *runtime::FindTpuGeneration("v5e");
  EXPECT_THAT(runtime::LayoutChipMesh(*v5e, {64, 64, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("x=64 must be in [1, 16]")));
  ASSERT_OK_AND_ASSIGN(runtime::SliceLayout big,
                       runtime::LayoutCustomChipMesh(*v5e, {64, 64, 1}));
  EXPECT_EQ(big.num_chips, 4096);
  EXPECT_EQ(big.devices[4095].chip, 4095 - 0);  // ids cover every chip
  ASSERT_OK_AND_ASSIGN(runtime::SliceLayout ring,
                       runtime::LayoutCustomChipMesh(*v5e, {1024, 1, 1}));
  EXPECT_EQ(ring.num_chips, 1024);
  EXPECT_THAT(runtime::LayoutCustomChipMesh(*v5e, {4, 4, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "custom chip mesh 4x4x2 of v5e: z=2 must be 1 on a 2-D "
                       "generation"));
  EXPECT_THAT(runtime::LayoutCustomChipMesh(*v5e, {512, 256, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "custom chip mesh 512x256x1 of v5e has 131072 chips; at "
                       "most 65536 are allowed"));
  EXPECT_THAT(runtime::LayoutCustomChipMesh(*v5e, {0, 4, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "custom chip mesh 0x4x1 of v5e: x=0 must be >= 1"));
}

TEST(NetConfigTest, BadNumbersNameTheFieldAndWhatIsAllowed) {
  NetConfig c = TestConfig();
  EXPECT_TRUE(ValidateNetConfig(c, 2).ok());
  c.hop_latency = common::Picoseconds(0);
  EXPECT_THAT(ValidateNetConfig(c, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "net config hop_latency=0 ps: must be > 0 (links need a "
                       "minimum latency)"));
  c = TestConfig();
  c.link_bytes_per_second = -1;
  EXPECT_THAT(ValidateNetConfig(c, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "net config link_bytes_per_second=-1: must be a finite "
                       "rate > 0"));
  c = TestConfig();
  c.on_chip_bytes_per_second = 0;
  EXPECT_TRUE(ValidateNetConfig(c, 1).ok());  // unused with one device per chip
  EXPECT_THAT(ValidateNetConfig(c, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("on_chip_bytes_per_second=0")));
  c = TestConfig();
  c.packet_bytes = -4;
  EXPECT_THAT(ValidateNetConfig(c, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "net config packet_bytes=-4: must be >= 0 (0 = one "
                       "packet per message)"));
}

class RequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    t_ = std::make_unique<Topology>(
        *MakeTopology("v5e", {4, 4, 1}, WrapMode::kOn));
  }
  std::unique_ptr<Topology> t_;
};

TEST_F(RequestTest, GroupsMustBeAPartition) {
  std::vector<int> all;
  for (int d = 0; d < 16; ++d) all.push_back(d);
  EXPECT_TRUE(GroupPartition::Create(*t_, {all}).ok());
  std::vector<int> missing(all.begin(), all.end() - 1);
  EXPECT_THAT(GroupPartition::Create(*t_, {missing}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "replica groups are not a partition: device 15 is in no "
                       "group; the groups must cover all 16 devices of v5e "
                       "4x4x1"));
  EXPECT_THAT(GroupPartition::Create(*t_, {all, {3}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "replica groups are not a partition: device 3 is in "
                       "group 0 and in group 1"));
  EXPECT_THAT(GroupPartition::Create(*t_, {all, {16}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "replica group 1: device 16 is not a device of v5e "
                       "4x4x1; allowed: 0..15"));
  EXPECT_THAT(GroupPartition::Create(*t_, {all, {}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "replica group 1 is empty; every group needs >= 1 "
                       "device"));
}

TEST_F(RequestTest, AlignedGroupsAreFullAxes) {
  ASSERT_OK_AND_ASSIGN(
      auto rows, GroupPartition::Create(*t_, testing::AxisGroups(*t_, 0)));
  EXPECT_TRUE(rows->aligned(0));
  EXPECT_THAT(rows->span_axes(0), ElementsAre(0));
  std::vector<std::vector<int>> halves = {{0, 1, 4, 5, 8, 9, 12, 13},
                                          {2, 3, 6, 7, 10, 11, 14, 15}};
  ASSERT_OK_AND_ASSIGN(auto scattered, GroupPartition::Create(*t_, halves));
  EXPECT_FALSE(scattered->aligned(0));
  EXPECT_TRUE(scattered->span_axes(0).empty());
}

TEST_F(RequestTest, BadRequestsNameTheValueAndWhatIsAllowed) {
  std::vector<std::vector<int>> halves = {{0, 1, 4, 5, 8, 9, 12, 13},
                                          {2, 3, 6, 7, 10, 11, 14, 15}};
  auto groups = *GroupPartition::Create(*t_, halves);
  CollectiveRequest r;
  r.groups = groups;
  r.bytes = 0;
  EXPECT_THAT(ResolveAlgorithm(*t_, r, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "all_reduce of 0 bytes: bytes must be > 0"));
  r.bytes = -8;
  EXPECT_THAT(ResolveAlgorithm(*t_, r, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "all_reduce of -8 bytes: bytes must be > 0"));
  r.bytes = 100;
  EXPECT_THAT(ResolveAlgorithm(*t_, r, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "all_reduce of 100 bytes over group 1 {2,3,6,7,10,11,14,"
                       "15}: bytes must be a multiple of the group size 8"));
  r.bytes = 800;
  r.algorithm = Algorithm::kTorus;
  EXPECT_THAT(ResolveAlgorithm(*t_, r, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "algorithm torus cannot run all_reduce on group 0 "
                       "{0,1,4,5,8,9,12,13}: it is not an aligned sub-torus "
                       "(all devices of some full axes); allowed: auto, ring, "
                       "bidir_ring"));
  r.algorithm = Algorithm::kDirect;
  EXPECT_THAT(ResolveAlgorithm(*t_, r, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "algorithm direct cannot run all_reduce; allowed: auto, "
                       "ring, bidir_ring, torus, multi_axis"));
  r.op = CollectiveOp::kAllToAll;
  r.algorithm = Algorithm::kRing;
  EXPECT_THAT(ResolveAlgorithm(*t_, r, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "algorithm ring cannot run all_to_all; allowed: auto, "
                       "direct"));
  r.op = CollectiveOp::kAllReduce;
  r.algorithm = Algorithm::kAuto;
  EXPECT_EQ(ResolveAlgorithm(*t_, r, 0).value(), Algorithm::kBidirRing);
  auto rows = *GroupPartition::Create(*t_, testing::AxisGroups(*t_, 0));
  r.groups = rows;
  r.bytes = 64;
  EXPECT_EQ(ResolveAlgorithm(*t_, r, 0).value(), Algorithm::kTorus);
  EXPECT_THAT(
      ParseAlgorithm("tree"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "algorithm \"tree\" is not allowed; expected auto, ring, "
               "bidir_ring, torus, multi_axis or direct"));
}

TEST_F(RequestTest, PermutePairsAreChecked) {
  EXPECT_THAT(PermutePairs::Create(*t_, {{0, 1}, {0, 2}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "permute pair 0->2: device 0 is already the source of a "
                       "pair"));
  EXPECT_THAT(PermutePairs::Create(*t_, {{0, 1}, {2, 1}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "permute pair 2->1: device 1 is already the target of a "
                       "pair"));
  EXPECT_THAT(PermutePairs::Create(*t_, {{3, 3}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sends a device to itself")));
}

TEST_F(RequestTest, LowerBoundsFollowTheFormulas) {
  const NetConfig c = TestConfig();
  auto all = *GroupPartition::Create(
      *t_, {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}});
  CollectiveRequest r;
  r.groups = all;
  r.bytes = 45 << 20;
  const double s = 45 << 20;
  // all_reduce: 2(N-1)/N·S/(L·B) with L = 4.
  LowerBound b = CollectiveLowerBound(*t_, c, r, 0);
  EXPECT_EQ(
      b.bandwidth.count(),
      static_cast<int64_t>(std::floor(2 * 15.0 / 16 * s / (4 * 45e9) * 1e12)));
  EXPECT_EQ(b.latency.count(), 4'000'000);  // 2 + 2 hops across a 4x4 torus
  r.op = CollectiveOp::kAllGather;
  EXPECT_EQ(
      CollectiveLowerBound(*t_, c, r, 0).bandwidth.count(),
      static_cast<int64_t>(std::floor(15.0 / 16 * s / (4 * 45e9) * 1e12)));
  // all_to_all: the middle cut of x carries 8·8·S/16 per direction over 8
  // links (4 rows, two cuts each), above the injection bound.
  r.op = CollectiveOp::kAllToAll;
  EXPECT_EQ(
      CollectiveLowerBound(*t_, c, r, 0).bandwidth.count(),
      static_cast<int64_t>(std::floor(8.0 * 8 * s / 16 / (8 * 45e9) * 1e12)));
}

TEST(ByteParsingTest, ParsesFlagNames) {
  EXPECT_EQ(ParseCollectiveOp("permute").value(),
            CollectiveOp::kCollectivePermute);
  EXPECT_THAT(ParseCollectiveOp("broadcast"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"broadcast\" is not allowed")));
}

}  // namespace
}  // namespace tpusim::sim::net
