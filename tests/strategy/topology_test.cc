#include "strategy/topology.h"

#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/tpu_topology.pb.h"

namespace tpusim::strategy {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

// v3-8 (spec (j) layout): device D at chip D div 2 = (c mod 2, c div 2), core D
// mod 2.
Topology::DeviceCoordinates V3_8Coordinates() {
  return {{{0, 0, 0},
           {0, 0, 1},
           {1, 0, 0},
           {1, 0, 1},
           {0, 1, 0},
           {0, 1, 1},
           {1, 1, 0},
           {1, 1, 1}}};
}

TEST(TopologyTest, CreateExposesShapeAndInverseMaps) {
  absl::StatusOr<Topology> t = Topology::Create({2, 2, 2}, V3_8Coordinates());
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->mesh_shape(), (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(t->mesh_rank(), 3);
  EXPECT_EQ(t->num_tasks(), 1);
  EXPECT_EQ(t->num_tpus_per_task(), 8);
  EXPECT_EQ(t->num_devices(), 8);
  EXPECT_TRUE(t->missing_devices().empty());
  EXPECT_EQ(t->device_coordinates(), V3_8Coordinates());
  EXPECT_EQ(*t->TaskOrdinalAtCoordinates({1, 0, 1}), 0);
  EXPECT_EQ(*t->TpuDeviceOrdinalAtCoordinates({1, 0, 1}), 3);
  EXPECT_EQ(*t->TpuDeviceOrdinalAtCoordinates({0, 1, 0}), 4);
  EXPECT_EQ(*t->TpuDeviceNameAtCoordinates({1, 0, 1}, "worker"),
            "/job:worker/task:0/device:TPU:3");
  EXPECT_EQ(*t->TpuDeviceNameAtCoordinates({1, 1, 1}), "/task:0/device:TPU:7");
  EXPECT_EQ(*t->CpuDeviceNameAtCoordinates({1, 1, 1}, "tpu_worker"),
            "/job:tpu_worker/task:0/device:CPU:0");
  EXPECT_EQ(*t->CpuDeviceNameAtCoordinates({0, 0, 0}), "/task:0/device:CPU:0");
}

TEST(TopologyTest, FromDevicesGroupsByTaskAndOrdinal) {
  std::vector<runtime::DeviceDescription> devices;
  // Two tasks, two devices each, given out of order.
  devices.push_back({3, 1, 1, {1, 1, 0}, "k"});
  devices.push_back({0, 0, 0, {0, 0, 0}, "k"});
  devices.push_back({2, 1, 0, {1, 0, 0}, "k"});
  devices.push_back({1, 0, 1, {0, 1, 0}, "k"});
  absl::StatusOr<Topology> t = Topology::FromDevices({2, 2, 1}, devices);
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->device_coordinates(),
            (Topology::DeviceCoordinates{{{0, 0, 0}, {0, 1, 0}},
                                         {{1, 0, 0}, {1, 1, 0}}}));
  EXPECT_EQ(*t->TaskOrdinalAtCoordinates({1, 1, 0}), 1);
  EXPECT_EQ(*t->TpuDeviceOrdinalAtCoordinates({1, 1, 0}), 1);

  devices.pop_back();
  EXPECT_THAT(Topology::FromDevices({2, 2, 1}, devices),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("task 1 has 2 devices but task 0 has 1")));
  devices.push_back({1, 0, 2, {0, 1, 0}, "k"});
  EXPECT_THAT(Topology::FromDevices({2, 2, 1}, devices),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("task 0 has no device ordinal 1 but has 2")));
}

TEST(TopologyTest, RankFourTopology) {
  absl::StatusOr<Topology> t = Topology::Create(
      {2, 2, 1, 2}, {{{0, 0, 0, 0}, {0, 0, 0, 1}, {1, 0, 0, 0}, {1, 0, 0, 1}},
                     {{0, 1, 0, 0}, {0, 1, 0, 1}, {1, 1, 0, 0}, {1, 1, 0, 1}}});
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->mesh_rank(), 4);
  EXPECT_EQ(t->num_tasks(), 2);
  EXPECT_EQ(*t->TpuDeviceNameAtCoordinates({1, 1, 0, 1}, "worker"),
            "/job:worker/task:1/device:TPU:3");
}

TEST(TopologyTest, MeshShapeMustHaveThreePositiveEntries) {
  for (const std::vector<int>& mesh :
       {std::vector<int>{2, 2}, std::vector<int>{2, 0, 2},
        std::vector<int>{1, 1, 1, 1, 1}}) {
    EXPECT_THAT(
        Topology::Create(mesh, {}),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 HasSubstr(
                     "`mesh_shape` must be a sequence of 3 positive entries")));
  }
  EXPECT_THAT(Topology::Create({2, -1, 2}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("got [2, -1, 2]")));
  EXPECT_THAT(
      Topology::Create({4096, 4096, 2}, {}),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "`mesh_shape` [4096, 4096, 2] has 33554432 positions; at most "
              "16777216 are supported")));
}

TEST(TopologyTest, DeviceCoordinatesMustBeRankThreeWithMeshRankMinor) {
  EXPECT_THAT(
      Topology::Create({2, 2, 2}, {{{0, 0}}}),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "`device_coordinates` must be a rank 3 int32 array with minor "
              "dimension equal to the mesh shape rank")));
  EXPECT_THAT(
      Topology::Create({2, 2, 2}, {{{0, 0, 0}, {0, 0, 1}}, {{1, 0, 0}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("task 1 has 1 devices (task 0 has 2)")));
}

TEST(TopologyTest, CoordinatesOutsideTheMeshOrReusedAreRejected) {
  EXPECT_THAT(
      Topology::Create({2, 2, 2}, {{{0, 0, 0}, {2, 0, 0}}}),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("`device_coordinates` of task 0 device 1: coordinates "
                    "[2, 0, 0] are outside the TPU mesh of shape [2, 2, 2]")));
  EXPECT_THAT(
      Topology::Create({2, 2, 2}, {{{0, 0, 0}, {0, -1, 0}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[0, -1, 0]")));
  EXPECT_THAT(
      Topology::Create({2, 2, 2}, {{{0, 1, 0}}, {{0, 1, 0}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(
                   "task 1 device 0: coordinates [0, 1, 0] are already used by "
                   "task 0 device 0")));
}

TEST(TopologyTest, MissingDevicesAreMinusOne) {
  absl::StatusOr<Topology> t =
      Topology::Create({2, 2, 2}, {{{0, 0, 0}, {0, 0, 1}, {1, 1, 0}}});
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->missing_devices(),
            (std::vector<std::vector<int>>{
                {0, 1, 0}, {0, 1, 1}, {1, 0, 0}, {1, 0, 1}, {1, 1, 1}}));
  EXPECT_EQ(*t->TaskOrdinalAtCoordinates({1, 0, 0}), -1);
  EXPECT_EQ(*t->TpuDeviceOrdinalAtCoordinates({1, 0, 0}), -1);
  EXPECT_EQ(*t->TpuDeviceOrdinalAtCoordinates({1, 1, 0}), 2);
  EXPECT_THAT(
      t->TpuDeviceNameAtCoordinates({1, 0, 0}, "worker"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(
                   "no TPU device at coordinates [1, 0, 0] (missing device)")));
  EXPECT_THAT(t->CpuDeviceNameAtCoordinates({1, 1, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("missing device")));
}

TEST(TopologyTest, LookupsValidateCoordinates) {
  absl::StatusOr<Topology> t = Topology::Create({2, 2, 2}, V3_8Coordinates());
  ASSERT_THAT(t, IsOk());
  EXPECT_THAT(t->TaskOrdinalAtCoordinates({0, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("coordinates [0, 0] are outside the TPU mesh "
                                 "of shape [2, 2, 2]")));
  EXPECT_THAT(
      t->TpuDeviceOrdinalAtCoordinates({0, 2, 0}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[0, 2, 0]")));
}

TEST(TopologyTest, SerializedIsPackedTopologyProto) {
  absl::StatusOr<Topology> t =
      Topology::Create({1, 1, 2}, {{{0, 0, 0}, {0, 0, 1}}});
  ASSERT_THAT(t, IsOk());
  const std::string expected(
      "\x0a\x03\x01\x01\x02"               // mesh_shape = 1, packed [1, 1, 2]
      "\x10\x01"                           // num_tasks = 2: 1
      "\x18\x02"                           // num_tpu_devices_per_task = 3: 2
      "\x22\x06\x00\x00\x00\x00\x00\x01",  // device_coordinates = 4, packed
      17);
  EXPECT_EQ(t->Serialized(), expected);
  absl::StatusOr<Topology> back = Topology::FromSerialized(expected);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->mesh_shape(), t->mesh_shape());
  EXPECT_EQ(back->device_coordinates(), t->device_coordinates());
}

TEST(TopologyTest, SerializedRoundTripOfAMultiHostTopology) {
  Topology::DeviceCoordinates coords = {{{0, 0, 0}, {0, 0, 1}},
                                        {{1, 0, 0}, {1, 0, 1}}};
  absl::StatusOr<Topology> t = Topology::Create({2, 1, 2}, coords);
  ASSERT_THAT(t, IsOk());
  absl::StatusOr<Topology> back = Topology::FromSerialized(t->Serialized());
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->num_tasks(), 2);
  EXPECT_EQ(back->num_tpus_per_task(), 2);
  EXPECT_EQ(back->device_coordinates(), coords);
}

std::string Bytes(const tensorflow::tpu::TopologyProto& proto) {
  return proto.SerializeAsString();
}

TEST(TopologyTest, FromSerializedValidatesTheProto) {
  tensorflow::tpu::TopologyProto proto;
  proto.add_mesh_shape(2);
  proto.add_mesh_shape(2);
  EXPECT_THAT(
      Topology::FromSerialized(Bytes(proto)),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("`mesh_shape` must be a vector of 3 positive entries")));
  proto.add_mesh_shape(2);
  proto.set_num_tasks(-1);
  EXPECT_THAT(Topology::FromSerialized(Bytes(proto)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("`num_tasks` must be >= 0; got -1")));
  proto.set_num_tasks(1);
  proto.set_num_tpu_devices_per_task(-2);
  EXPECT_THAT(
      Topology::FromSerialized(Bytes(proto)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("`num_tpu_devices_per_task` must be >= 0; got -2")));
  proto.set_num_tpu_devices_per_task(1);
  proto.add_device_coordinates(0);
  proto.add_device_coordinates(0);
  EXPECT_THAT(
      Topology::FromSerialized(Bytes(proto)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr(
                         "`device_coordinates` must have shape num_tasks (1) * "
                         "num_tpu_devices_per_task (1) * len(mesh_shape) (3)"),
                     HasSubstr("got shape 2"))));
  proto.add_device_coordinates(-1);
  EXPECT_THAT(Topology::FromSerialized(Bytes(proto)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("`device_coordinates` must be >= 0; got -1")));
  EXPECT_THAT(Topology::FromSerialized(std::string("\xff\xff", 2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("does not parse")));
}

TEST(TopologyTest, DeviceNameHelpers) {
  EXPECT_EQ(TpuDeviceName("worker", 1, 3), "/job:worker/task:1/device:TPU:3");
  EXPECT_EQ(TpuDeviceName("", 1, 3), "/task:1/device:TPU:3");
  EXPECT_EQ(HostDeviceName("worker", 2), "/job:worker/task:2/device:CPU:0");
  EXPECT_EQ(HostDeviceName("", 2), "/task:2/device:CPU:0");
  EXPECT_EQ(CanonicalTpuDeviceName("worker", 1, 3),
            "/job:worker/replica:0/task:1/device:TPU:3");
  EXPECT_EQ(CanonicalHostDeviceName("worker", 1),
            "/job:worker/replica:0/task:1/device:CPU:0");
}

}  // namespace
}  // namespace tpusim::strategy
