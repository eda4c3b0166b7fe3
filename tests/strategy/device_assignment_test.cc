#include "strategy/device_assignment.h"

#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/runtime/slice.h"
#include "strategy/topology.h"

namespace tpusim::strategy {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

using CA = DeviceAssignment::CoreAssignment;

// The topology of a named slice (spec (j) host-block layout).
Topology SliceTopology(const char* name, int rank = runtime::kDefaultRank) {
  absl::StatusOr<runtime::SliceLayout> layout = runtime::ParseSlice(name, rank);
  EXPECT_THAT(layout, IsOk());
  absl::StatusOr<Topology> topology =
      Topology::FromDevices(layout->mesh_shape, layout->devices);
  EXPECT_THAT(topology, IsOk());
  return *topology;
}

// One task owning every position of `mesh`, devices in row-major order.
Topology FullTopology(std::vector<int> mesh) {
  std::vector<std::vector<int>> devices;
  std::vector<int> c(mesh.size(), 0);
  while (true) {
    devices.push_back(c);
    int d = static_cast<int>(mesh.size()) - 1;
    for (; d >= 0; --d) {
      if (++c[d] < mesh[d]) break;
      c[d] = 0;
    }
    if (d < 0) break;
  }
  absl::StatusOr<Topology> topology = Topology::Create(mesh, {devices});
  EXPECT_THAT(topology, IsOk());
  return *topology;
}

// Single-core replicas: the coordinates of logical core 0, one per replica.
CA Single(std::vector<std::vector<int>> coords) {
  CA ca;
  for (auto& c : coords) ca.push_back({c});
  return ca;
}

absl::StatusOr<CA> BuildCA(const Topology& t, std::vector<int> shape,
                           std::vector<int> stride, int n) {
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(t, shape, stride, n);
  if (!da.ok()) return da.status();
  return da->core_assignment();
}

// ---- Spec (j) worked table, mesh [2, 2, 2] (v3-8).
// -------------------------------------------

TEST(DeviceAssignmentTest, TableEightReplicasCoverTheMeshCoreFastest) {
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(SliceTopology("v3-8"), {}, {}, 8);
  ASSERT_THAT(da, IsOk());
  EXPECT_EQ(da->num_replicas(), 8);
  EXPECT_EQ(da->num_cores_per_replica(), 1);
  EXPECT_EQ(da->core_assignment(), Single({{0, 0, 0},
                                           {0, 0, 1},
                                           {0, 1, 0},
                                           {0, 1, 1},
                                           {1, 0, 0},
                                           {1, 0, 1},
                                           {1, 1, 0},
                                           {1, 1, 1}}));
}

TEST(DeviceAssignmentTest, TableOneReplicaIsTheOrigin) {
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(SliceTopology("v3-8"));
  ASSERT_THAT(da, IsOk());
  EXPECT_EQ(da->core_assignment(), Single({{0, 0, 0}}));
}

TEST(DeviceAssignmentTest, TableTwoReplicasPreferBothCoresOfOneChip) {
  EXPECT_EQ(*BuildCA(SliceTopology("v3-8"), {}, {}, 2),
            Single({{0, 0, 0}, {0, 0, 1}}));
}

TEST(DeviceAssignmentTest, TableFourReplicas) {
  EXPECT_EQ(*BuildCA(SliceTopology("v3-8"), {}, {}, 4),
            Single({{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1}}));
}

TEST(DeviceAssignmentTest, TableTwoCoreReplicasFullReplicationFollowTheRing) {
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(SliceTopology("v3-8"), {1, 1, 2}, {}, 4);
  ASSERT_THAT(da, IsOk());
  EXPECT_EQ(da->num_cores_per_replica(), 2);
  EXPECT_EQ(da->core_assignment(), (CA{{{0, 0, 0}, {0, 0, 1}},
                                       {{0, 1, 0}, {0, 1, 1}},
                                       {{1, 1, 0}, {1, 1, 1}},
                                       {{1, 0, 0}, {1, 0, 1}}}));
}

TEST(DeviceAssignmentTest, TableTwoCoreReplicasTwoReplicas) {
  EXPECT_EQ(*BuildCA(SliceTopology("v3-8"), {1, 1, 2}, {}, 2),
            (CA{{{0, 0, 0}, {0, 0, 1}}, {{0, 1, 0}, {0, 1, 1}}}));
}

TEST(DeviceAssignmentTest, TableNineReplicasDoNotFit) {
  EXPECT_THAT(
      DeviceAssignment::Build(SliceTopology("v3-8"), {}, {}, 9),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "requested 9 replicas but only 8 replicas with shape [1 1 1] "
              "and computation_stride [1 1 1] fit in a TPU mesh of shape "
              "[2 2 2]")));
}

TEST(DeviceAssignmentTest, TableFootprintDoesNotFit) {
  EXPECT_THAT(
      DeviceAssignment::Build(SliceTopology("v3-8"), {4, 1, 1}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(
                   "computation footprint [4 1 1] does not fit in TPU topology "
                   "shape [2 2 2]")));
}

TEST(DeviceAssignmentTest, TableShapeOfWrongLength) {
  EXPECT_THAT(
      DeviceAssignment::Build(SliceTopology("v3-8"), {1, 1}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("computation_shape must have shape [3]; got (2,)")));
}

TEST(DeviceAssignmentTest, TableShapeMustBePositive) {
  EXPECT_THAT(DeviceAssignment::Build(SliceTopology("v3-8"), {0, 1, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("computation_shape must be positive; got "
                                 "computation_shape=[0 1 1]")));
}

TEST(DeviceAssignmentTest, BuildAcceptsASerializedTopology) {
  const Topology t = SliceTopology("v3-8");
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::BuildFromSerialized(t.Serialized(), {1, 1, 2}, {}, 4);
  ASSERT_THAT(da, IsOk());
  EXPECT_EQ(da->core_assignment(), *BuildCA(t, {1, 1, 2}, {}, 4));
  EXPECT_EQ(da->topology().device_coordinates(), t.device_coordinates());
  EXPECT_THAT(DeviceAssignment::BuildFromSerialized(std::string("\xff", 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("does not parse")));
}

// ---- Further validation.
// ---------------------------------------------------------------------

TEST(DeviceAssignmentTest, StrideErrors) {
  const Topology t = SliceTopology("v3-8");
  EXPECT_THAT(
      DeviceAssignment::Build(t, {}, {1, 1, 1, 1}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("computation_stride must have shape [3]; got (4,)")));
  EXPECT_THAT(DeviceAssignment::Build(t, {}, {1, -2, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("computation_stride must be positive; got "
                                 "computation_stride=[1 -2 1]")));
  EXPECT_THAT(
      DeviceAssignment::Build(t, {1, 1, 2}, {1, 1, 2}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("computation footprint [1 1 4] does not fit")));
}

TEST(DeviceAssignmentTest, ZeroReplicasIsAValidEmptyAssignment) {
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(SliceTopology("v3-8"), {1, 1, 2}, {}, 0);
  ASSERT_THAT(da, IsOk());
  EXPECT_EQ(da->num_replicas(), 0);
  EXPECT_EQ(da->num_cores_per_replica(), 2);
  EXPECT_TRUE(da->core_assignment().empty());
}

TEST(DeviceAssignmentTest, NegativeReplicasAreInvalidArgument) {
  EXPECT_THAT(DeviceAssignment::Build(SliceTopology("v3-8"), {}, {}, -1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("num_replicas must be >= 0; got -1")));
}

// ---- Larger rank-3 cases (TF 2.2 algorithm).
// -------------------------------------------------

TEST(DeviceAssignmentTest, V3_32FullReplicationUsesMixedRadixCoreFastest) {
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(SliceTopology("v3-32"), {}, {}, 32);
  ASSERT_THAT(da, IsOk());
  // Replica r -> (r div 8, (r div 2) mod 4, r mod 2).
  for (int r = 0; r < 32; ++r) {
    EXPECT_EQ(da->coordinates(r, 0),
              (std::vector<int>{r / 8, (r / 2) % 4, r % 2}))
        << r;
  }
  // Task 1 owns x in {2, 3}, y in {0, 1}.
  EXPECT_THAT(da->LookupReplicas(1, 0), IsOk());
  EXPECT_EQ(*da->LookupReplicas(1, 0),
            (std::vector<int>{16, 17, 18, 19, 24, 25, 26, 27}));
  EXPECT_EQ(*da->LookupReplicas(0, 0),
            (std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(*da->Task(5, 0), 2);  // (0, 2, 1): y-block 1.
  EXPECT_EQ(*da->TpuDevice(18, 0, "worker"), "/job:worker/task:1/device:TPU:4");
}

TEST(DeviceAssignmentTest, TwoDimensionalRingOnFourByFour) {
  EXPECT_EQ(*BuildCA(SliceTopology("v3-32"), {1, 1, 2}, {}, 16),
            (CA{{{0, 0, 0}, {0, 0, 1}},
                {{0, 1, 0}, {0, 1, 1}},
                {{0, 2, 0}, {0, 2, 1}},
                {{0, 3, 0}, {0, 3, 1}},
                {{1, 3, 0}, {1, 3, 1}},
                {{1, 2, 0}, {1, 2, 1}},
                {{1, 1, 0}, {1, 1, 1}},
                {{2, 1, 0}, {2, 1, 1}},
                {{2, 2, 0}, {2, 2, 1}},
                {{2, 3, 0}, {2, 3, 1}},
                {{3, 3, 0}, {3, 3, 1}},
                {{3, 2, 0}, {3, 2, 1}},
                {{3, 1, 0}, {3, 1, 1}},
                {{3, 0, 0}, {3, 0, 1}},
                {{2, 0, 0}, {2, 0, 1}},
                {{1, 0, 0}, {1, 0, 1}}}));
}

TEST(DeviceAssignmentTest, TwoDimensionalTilingWithAnInnerRing) {
  EXPECT_EQ(*BuildCA(SliceTopology("v3-32"), {2, 1, 2}, {}, 8),
            (CA{{{0, 0, 0}, {0, 0, 1}, {1, 0, 0}, {1, 0, 1}},
                {{0, 1, 0}, {0, 1, 1}, {1, 1, 0}, {1, 1, 1}},
                {{0, 2, 0}, {0, 2, 1}, {1, 2, 0}, {1, 2, 1}},
                {{0, 3, 0}, {0, 3, 1}, {1, 3, 0}, {1, 3, 1}},
                {{2, 3, 0}, {2, 3, 1}, {3, 3, 0}, {3, 3, 1}},
                {{2, 2, 0}, {2, 2, 1}, {3, 2, 0}, {3, 2, 1}},
                {{2, 1, 0}, {2, 1, 1}, {3, 1, 0}, {3, 1, 1}},
                {{2, 0, 0}, {2, 0, 1}, {3, 0, 0}, {3, 0, 1}}}));
}

TEST(DeviceAssignmentTest, OneReplicaOnTheWholeChipGridUsesTheInnerRing) {
  EXPECT_EQ(*BuildCA(SliceTopology("v3-8"), {2, 2, 2}, {}, 1),
            (CA{{{0, 0, 0},
                 {0, 0, 1},
                 {0, 1, 0},
                 {0, 1, 1},
                 {1, 1, 0},
                 {1, 1, 1},
                 {1, 0, 0},
                 {1, 0, 1}}}));
}

TEST(DeviceAssignmentTest, OddRingHeightFallsBackToColumnMajor) {
  EXPECT_EQ(*BuildCA(FullTopology({3, 2, 2}), {1, 1, 2}, {}, 6),
            (CA{{{0, 0, 0}, {0, 0, 1}},
                {{1, 0, 0}, {1, 0, 1}},
                {{2, 0, 0}, {2, 0, 1}},
                {{0, 1, 0}, {0, 1, 1}},
                {{1, 1, 0}, {1, 1, 1}},
                {{2, 1, 0}, {2, 1, 1}}}));
}

TEST(DeviceAssignmentTest, PartialReplicationUsesTheGeneralBranch) {
  // 5 of 16 two-core replicas: replica grid [2, 3, 1], last dimension fastest.
  EXPECT_EQ(*BuildCA(SliceTopology("v3-32"), {1, 1, 2}, {}, 5),
            (CA{{{0, 0, 0}, {0, 0, 1}},
                {{0, 1, 0}, {0, 1, 1}},
                {{0, 2, 0}, {0, 2, 1}},
                {{1, 0, 0}, {1, 0, 1}},
                {{1, 1, 0}, {1, 1, 1}}}));
  // Logical cores of a block enumerate row-major, last dimension fastest.
  EXPECT_EQ(*BuildCA(SliceTopology("v3-32"), {2, 2, 1}, {}, 3),
            (CA{{{0, 0, 0}, {0, 1, 0}, {1, 0, 0}, {1, 1, 0}},
                {{0, 0, 1}, {0, 1, 1}, {1, 0, 1}, {1, 1, 1}},
                {{0, 2, 0}, {0, 3, 0}, {1, 2, 0}, {1, 3, 0}}}));
}

TEST(DeviceAssignmentTest, StrideInterleavesReplicas) {
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(SliceTopology("v3-32"), {2, 1, 1}, {2, 1, 1}, 16);
  ASSERT_THAT(da, IsOk());
  EXPECT_EQ(da->core_assignment()[0],
            (std::vector<std::vector<int>>{{0, 0, 0}, {2, 0, 0}}));
  EXPECT_EQ(da->core_assignment()[5],
            (std::vector<std::vector<int>>{{0, 2, 1}, {2, 2, 1}}));
  // Replica 8: x position 1 -> offset (1 div 2) * 4 + 1 mod 2 = 1.
  EXPECT_EQ(da->core_assignment()[8],
            (std::vector<std::vector<int>>{{1, 0, 0}, {3, 0, 0}}));
}

TEST(DeviceAssignmentTest, ReplicaGridUsesPythonFloatCubeRoot) {
  // 27 ** (1/3) == 3.0 in IEEE doubles: replica grid [3, 3, 3]; replica 4 =
  // digits (0, 1, 1).
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(FullTopology({6, 6, 6}), {}, {}, 27);
  ASSERT_THAT(da, IsOk());
  EXPECT_EQ(da->coordinates(4, 0), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(da->coordinates(26, 0), (std::vector<int>{2, 2, 2}));
}

TEST(DeviceAssignmentTest,
     RankThreeTopologyWithHolesFailsWhereAReplicaHitsAHole) {
  // TF 2.2 has no missing-device path; tpusim rejects an assignment onto a
  // missing device.
  absl::StatusOr<Topology> t = Topology::Create(
      {2, 2, 2},
      {{{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1}, {1, 0, 0}, {1, 0, 1}}});
  ASSERT_THAT(t, IsOk());
  EXPECT_THAT(DeviceAssignment::Build(*t, {}, {}, 4), IsOk());
  EXPECT_THAT(
      DeviceAssignment::Build(*t, {}, {}, 8),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("replica 6 logical core 0: no TPU device at coordinates "
                    "(1, 1, 0) (missing device)")));
}

// ---- Rank 4 (TF 2.3+ algorithm).
// -------------------------------------------------------------

TEST(DeviceAssignmentTest, RankFourVisitsTheCoreDimensionFirst) {
  // Spec example: mesh [2, 2, 1, 2], 4 replicas -> replica shape [2, 1, 1, 2].
  EXPECT_EQ(*BuildCA(SliceTopology("v3-8", 4), {}, {}, 4),
            Single({{0, 0, 0, 0}, {0, 0, 0, 1}, {1, 0, 0, 0}, {1, 0, 0, 1}}));
}

TEST(DeviceAssignmentTest, RankFourRingGoesTheOtherWayRound) {
  // 2.3 visits (0,0), (1,0), (1,1), (0,1); 2.2 visits (0,0), (0,1), (1,1),
  // (1,0).
  EXPECT_EQ(*BuildCA(SliceTopology("v3-8", 4), {1, 1, 1, 2}, {}, 4),
            (CA{{{0, 0, 0, 0}, {0, 0, 0, 1}},
                {{1, 0, 0, 0}, {1, 0, 0, 1}},
                {{1, 1, 0, 0}, {1, 1, 0, 1}},
                {{0, 1, 0, 0}, {0, 1, 0, 1}}}));
}

TEST(DeviceAssignmentTest, RankFourThreeDimensionalRing) {
  EXPECT_EQ(*BuildCA(FullTopology({2, 2, 2, 2}), {1, 1, 1, 2}, {}, 8),
            (CA{{{0, 0, 0, 0}, {0, 0, 0, 1}},
                {{1, 0, 0, 0}, {1, 0, 0, 1}},
                {{1, 1, 0, 0}, {1, 1, 0, 1}},
                {{0, 1, 0, 0}, {0, 1, 0, 1}},
                {{0, 1, 1, 0}, {0, 1, 1, 1}},
                {{1, 1, 1, 0}, {1, 1, 1, 1}},
                {{1, 0, 1, 0}, {1, 0, 1, 1}},
                {{0, 0, 1, 0}, {0, 0, 1, 1}}}));
  // 4x4x4: the z = 0 plane as a ring, then z = 1 in reverse.
  absl::StatusOr<CA> big =
      BuildCA(FullTopology({4, 4, 4, 2}), {1, 1, 1, 2}, {}, 64);
  ASSERT_THAT(big, IsOk());
  const std::vector<std::vector<int>> first_chips = {
      {0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0}, {3, 1, 0},
      {2, 1, 0}, {1, 1, 0}, {1, 2, 0}, {2, 2, 0}, {3, 2, 0},
      {3, 3, 0}, {2, 3, 0}, {1, 3, 0}, {0, 3, 0}, {0, 2, 0},
      {0, 1, 0}, {0, 1, 1}, {0, 2, 1}, {0, 3, 1}, {1, 3, 1}};
  for (size_t r = 0; r < first_chips.size(); ++r) {
    const auto& c = first_chips[r];
    EXPECT_EQ((*big)[r][1], (std::vector<int>{c[0], c[1], c[2], 1})) << r;
  }
  EXPECT_EQ((*big)[63][0], (std::vector<int>{0, 0, 1, 0}));
}

// Full replication on a megacore mesh (core dimension 1) takes TF's 3-D ring:
// TF 2.21's condition is computation_shape[-1] == mesh_shape[-1], not == 2.
// Expected values printed by TF 2.21 (DeviceAssignment.build(Topology(
// mesh_shape=[2, 2, 4, 1], host t owning z = t), num_replicas=16)); checked
// again by tests/conformance/ (part devassign).
TEST(DeviceAssignmentTest, RankFourV4FullReplicationFollowsThe3dRing) {
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(SliceTopology("v4-32"), {}, {}, 16);
  ASSERT_THAT(da, IsOk());
  const std::vector<std::vector<int>> tf = {
      {0, 0, 0, 0}, {1, 0, 0, 0}, {1, 1, 0, 0}, {0, 1, 0, 0},
      {0, 1, 1, 0}, {1, 1, 1, 0}, {1, 0, 1, 0}, {1, 0, 2, 0},
      {1, 1, 2, 0}, {0, 1, 2, 0}, {0, 1, 3, 0}, {1, 1, 3, 0},
      {1, 0, 3, 0}, {0, 0, 3, 0}, {0, 0, 2, 0}, {0, 0, 1, 0}};
  for (int r = 0; r < 16; ++r) EXPECT_EQ(da->coordinates(r, 0), tf[r]) << r;
  EXPECT_EQ(*da->LookupReplicas(3, 0), (std::vector<int>{10, 11, 12, 13}));
}

// Below full replication the general branch numbers replicas x fastest.
TEST(DeviceAssignmentTest, RankFourV4NumbersReplicasXFastest) {
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(SliceTopology("v4-32"), {}, {}, 8);
  ASSERT_THAT(da, IsOk());
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(da->coordinates(r, 0),
              (std::vector<int>{r % 2, (r / 2) % 2, r / 4, 0}))
        << r;
  }
}

Topology RankFourWithHoles() {
  // Mesh [2, 2, 1, 2] without chip (1, 1): 6 devices on one task.
  absl::StatusOr<Topology> t = Topology::Create({2, 2, 1, 2}, {{{0, 0, 0, 0},
                                                                {0, 0, 0, 1},
                                                                {1, 0, 0, 0},
                                                                {1, 0, 0, 1},
                                                                {0, 1, 0, 0},
                                                                {0, 1, 0, 1}}});
  EXPECT_THAT(t, IsOk());
  return *t;
}

// TF 2.21: num_replicas=0 with missing devices is the constructor's rank
// error (a full mesh gives an empty assignment); tests/conformance/ found it.
TEST(DeviceAssignmentTest, ZeroReplicasWithMissingDevicesIsTfsRankError) {
  EXPECT_THAT(BuildCA(RankFourWithHoles(), {1, 1, 1, 1}, {}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("core_assignment must be a rank 3 numpy "
                                 "array, got shape (0,)")));
}

TEST(DeviceAssignmentTest, RankFourWithMissingDevicesAssignsInTaskOrder) {
  absl::StatusOr<CA> ca = BuildCA(RankFourWithHoles(), {1, 1, 1, 2}, {}, 3);
  ASSERT_THAT(ca, IsOk());
  EXPECT_EQ(*ca, (CA{{{0, 0, 0, 0}, {0, 0, 0, 1}},
                     {{1, 0, 0, 0}, {1, 0, 0, 1}},
                     {{0, 1, 0, 0}, {0, 1, 0, 1}}}));
  EXPECT_THAT(
      BuildCA(RankFourWithHoles(), {1, 1, 1, 2}, {}, 4),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "= 8 exceeds the 6 devices of a topology with missing devices")));
  EXPECT_THAT(
      BuildCA(RankFourWithHoles(), {}, {2, 1, 1, 1}, 1),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("computation_stride must be all ones on a topology with "
                    "missing devices; got [2 1 1 1]")));
}

// ---- Constructor and accessors.
// --------------------------------------------------------------

TEST(DeviceAssignmentTest, CreateAndNameDevices) {
  absl::StatusOr<DeviceAssignment> da = DeviceAssignment::Create(
      SliceTopology("v3-32"),
      CA{{{2, 0, 1}, {0, 2, 0}}, {{3, 3, 1}, {0, 0, 0}}});
  ASSERT_THAT(da, IsOk());
  EXPECT_EQ(da->num_replicas(), 2);
  EXPECT_EQ(da->num_cores_per_replica(), 2);
  EXPECT_EQ(da->coordinates(1, 0), (std::vector<int>{3, 3, 1}));
  // (2, 0, 1): task 1, chip 0, core 1 -> TPU:1. (3, 3, 1): task 3, chip 3 ->
  // TPU:7.
  EXPECT_EQ(*da->TpuOrdinal(0, 0), 1);
  EXPECT_EQ(*da->TpuOrdinal(1, 0), 7);
  EXPECT_EQ(*da->TpuDevice(0, 0, "worker"), "/job:worker/task:1/device:TPU:1");
  EXPECT_EQ(*da->TpuDevice(0, 1), "/task:2/device:TPU:0");
  EXPECT_EQ(*da->HostDevice(1, 0, "worker"), "/job:worker/task:3/device:CPU:0");
  EXPECT_EQ(*da->HostDevice(1, 1), "/task:0/device:CPU:0");
  EXPECT_EQ(*da->LookupReplicas(0, 1), (std::vector<int>{1}));
  EXPECT_THAT(
      da->LookupReplicas(0, 0),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "Can not find any replica in task: 0 contains logical_core: 0")));
  EXPECT_THAT(
      da->LookupReplicas(1, 5),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "Can not find any replica in task: 1 contains logical_core: 5")));
  EXPECT_THAT(da->TpuOrdinal(2, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("replica 2 is out of range [0, 2)")));
  EXPECT_THAT(da->TpuDevice(0, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("logical_core 2 is out of range [0, 2)")));
}

TEST(DeviceAssignmentTest, CreateRejectsMalformedCoreAssignments) {
  const Topology t = SliceTopology("v3-8");
  EXPECT_THAT(
      DeviceAssignment::Create(t, CA{}),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "core_assignment must be a rank 3 numpy array, got shape (0,)")));
  EXPECT_THAT(
      DeviceAssignment::Create(t, CA{{{0, 0, 0}}, {{0, 0, 1}, {0, 1, 0}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("core_assignment must be a rank 3 numpy array")));
  EXPECT_THAT(
      DeviceAssignment::Create(t, CA{{}, {}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("core_assignment must be a rank 3 numpy array")));
  EXPECT_THAT(
      DeviceAssignment::Create(t, CA{{{0, 0, 0, 0}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(
                   "minor dimension of core_assignment must have size equal to "
                   "topology rank (3), got 4")));
  EXPECT_THAT(
      DeviceAssignment::Create(t, CA{{{0, 0, 0}}, {{2, 0, 0}}}),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          AllOf(HasSubstr("core_assignment replica 1 logical core 0"),
                HasSubstr("coordinates [2, 0, 0] are outside the TPU mesh of "
                          "shape [2, 2, 2]"))));
}

TEST(DeviceAssignmentTest, ReplicaDeviceIdsMapCoordinatesToBackendDevices) {
  absl::StatusOr<runtime::SliceLayout> layout = runtime::ParseSlice("v3-8");
  ASSERT_THAT(layout, IsOk());
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(SliceTopology("v3-8"), {}, {}, 8);
  ASSERT_THAT(da, IsOk());
  // Replica order (x, y, core) visits chip (0, 1) = devices 4, 5 before chip
  // (1, 0) = 2, 3.
  EXPECT_THAT(*da->ReplicaDeviceIds(layout->devices),
              ElementsAre(ElementsAre(0), ElementsAre(1), ElementsAre(4),
                          ElementsAre(5), ElementsAre(2), ElementsAre(3),
                          ElementsAre(6), ElementsAre(7)));
  absl::StatusOr<DeviceAssignment> two =
      DeviceAssignment::Build(SliceTopology("v3-8"), {1, 1, 2}, {}, 4);
  EXPECT_THAT(*two->ReplicaDeviceIds(layout->devices),
              ElementsAre(ElementsAre(0, 1), ElementsAre(4, 5),
                          ElementsAre(6, 7), ElementsAre(2, 3)));

  std::vector<runtime::DeviceDescription> wrong = layout->devices;
  wrong[4].ordinal = 9;
  EXPECT_THAT(
      da->ReplicaDeviceIds(wrong),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("backend device 4 at (0, 1, 0) is task 0 ordinal 9 but the "
                    "topology says task 0 ordinal 4")));
  wrong.pop_back();
  wrong[4].ordinal = 4;
  EXPECT_THAT(
      da->ReplicaDeviceIds(wrong),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(
                   "replica 7 logical core 0: no backend device at coordinates "
                   "(1, 1, 1)")));
}

}  // namespace
}  // namespace tpusim::strategy
