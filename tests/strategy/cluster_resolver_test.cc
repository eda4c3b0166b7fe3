#include "strategy/cluster_resolver.h"

#include <map>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/device_assignment.h"
#include "strategy/runtime/host_backend.h"
#include "strategy/runtime/slice.h"

namespace tpusim::strategy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

std::vector<int> Range(int begin, int end) {
  std::vector<int> v;
  for (int i = begin; i < end; ++i) v.push_back(i);
  return v;
}

std::vector<int> Concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(TPUClusterResolverTest, V3_32ExposesTheVirtualCluster) {
  absl::StatusOr<TPUClusterResolver> r = TPUClusterResolver::Create("v3-32");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->tpu(), "v3-32");
  EXPECT_EQ(r->master(), "grpc://tpu-worker-0:8470");
  EXPECT_EQ(r->cluster_spec(),
            (ClusterSpec{{"worker",
                          {"tpu-worker-0:8470", "tpu-worker-1:8470",
                           "tpu-worker-2:8470", "tpu-worker-3:8470"}}}));
  EXPECT_EQ(r->num_accelerators(), (std::map<std::string, int>{{"TPU", 8}}));
  EXPECT_EQ(r->task_type(), "worker");
  EXPECT_EQ(r->task_id(), 0);
  EXPECT_EQ(r->rpc_layer(), "grpc");
  EXPECT_EQ(r->environment(), "");
  EXPECT_EQ(r->job_name(), "worker");
  EXPECT_FALSE(r->is_local());
  EXPECT_EQ(r->num_hosts(), 4);
  EXPECT_EQ(r->devices_per_host(), 8);
  EXPECT_EQ(r->num_devices(), 32);
  EXPECT_EQ(r->topology().mesh_shape(), (std::vector<int>{4, 4, 2}));
  EXPECT_EQ(r->layout().chip_mesh, (std::array<int, 3>{4, 4, 1}));
  const std::vector<std::string> tpus = r->TpuDeviceNames();
  ASSERT_EQ(tpus.size(), 32u);
  EXPECT_EQ(tpus[0], "/job:worker/replica:0/task:0/device:TPU:0");
  EXPECT_EQ(tpus[9], "/job:worker/replica:0/task:1/device:TPU:1");
  EXPECT_EQ(tpus[31], "/job:worker/replica:0/task:3/device:TPU:7");
  EXPECT_THAT(r->HostDeviceNames(),
              ElementsAre("/job:worker/replica:0/task:0/device:CPU:0",
                          "/job:worker/replica:0/task:1/device:CPU:0",
                          "/job:worker/replica:0/task:2/device:CPU:0",
                          "/job:worker/replica:0/task:3/device:CPU:0"));
}

TEST(TPUClusterResolverTest, WithoutDeviceAssignmentEachHostFeedsItsOwnCores) {
  absl::StatusOr<TPUClusterResolver> r = TPUClusterResolver::Create("v3-32");
  ASSERT_THAT(r, IsOk());
  absl::StatusOr<InputWorkerMapping> m = r->InputWorkers();
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->num_replicas_in_sync, 32);
  EXPECT_EQ(m->num_hosts, 4);
  EXPECT_EQ(m->num_replicas_per_host, 8);
  EXPECT_EQ(m->replica_devices, r->TpuDeviceNames());
  ASSERT_EQ(m->replica_device_ids.size(), 32u);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(m->replica_device_ids[i], std::vector<int>{i});
  EXPECT_EQ(m->worker_tasks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(m->worker_devices, r->HostDeviceNames());
  EXPECT_EQ(m->replicas_per_worker,
            (std::vector<std::vector<int>>{Range(0, 8), Range(8, 16),
                                           Range(16, 24), Range(24, 32)}));
}

TEST(TPUClusterResolverTest,
     DeviceAssignmentDefinesReplicaDevicesAndWorkerOrder) {
  absl::StatusOr<TPUClusterResolver> r = TPUClusterResolver::Create("v3-32");
  ASSERT_THAT(r, IsOk());
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(r->topology(), {}, {}, 32);
  ASSERT_THAT(da, IsOk());
  absl::StatusOr<InputWorkerMapping> m = r->InputWorkers(&*da);
  ASSERT_THAT(m, IsOk());
  // Replica r at (r div 8, (r div 2) mod 4, r mod 2): replica 4 is the first on
  // task 2 and replica 16 the first on task 1.
  EXPECT_EQ(m->worker_tasks, (std::vector<int>{0, 2, 1, 3}));
  EXPECT_THAT(m->worker_devices,
              ElementsAre("/job:worker/replica:0/task:0/device:CPU:0",
                          "/job:worker/replica:0/task:2/device:CPU:0",
                          "/job:worker/replica:0/task:1/device:CPU:0",
                          "/job:worker/replica:0/task:3/device:CPU:0"));
  EXPECT_EQ(m->replicas_per_worker, (std::vector<std::vector<int>>{
                                        Concat(Range(0, 4), Range(8, 12)),
                                        Concat(Range(4, 8), Range(12, 16)),
                                        Concat(Range(16, 20), Range(24, 28)),
                                        Concat(Range(20, 24), Range(28, 32))}));
  EXPECT_EQ(m->replica_devices[4], "/job:worker/replica:0/task:2/device:TPU:0");
  EXPECT_EQ(m->replica_device_ids[4], std::vector<int>{16});
  EXPECT_EQ(m->num_hosts, 4);
  EXPECT_EQ(m->num_replicas_per_host, 8);
  EXPECT_EQ(m->num_replicas_in_sync, 32);
}

TEST(TPUClusterResolverTest, ModelParallelAssignmentUsesLogicalCoreZero) {
  absl::StatusOr<TPUClusterResolver> r = TPUClusterResolver::Create("v3-8");
  ASSERT_THAT(r, IsOk());
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(r->topology(), {1, 1, 2}, {}, 4);
  ASSERT_THAT(da, IsOk());
  absl::StatusOr<InputWorkerMapping> m = r->InputWorkers(&*da);
  ASSERT_THAT(m, IsOk());
  // Ring order: chips (0,0), (0,1), (1,1), (1,0) = devices 0-1, 4-5, 6-7, 2-3.
  EXPECT_THAT(m->replica_devices,
              ElementsAre("/job:worker/replica:0/task:0/device:TPU:0",
                          "/job:worker/replica:0/task:0/device:TPU:4",
                          "/job:worker/replica:0/task:0/device:TPU:6",
                          "/job:worker/replica:0/task:0/device:TPU:2"));
  EXPECT_EQ(m->replica_device_ids,
            (std::vector<std::vector<int>>{{0, 1}, {4, 5}, {6, 7}, {2, 3}}));
  // min(num_replicas 4, 8 cores per host div 2 cores per replica).
  EXPECT_EQ(m->num_replicas_per_host, 4);
  EXPECT_EQ(m->replicas_per_worker,
            (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
}

TEST(TPUClusterResolverTest, ReplicasPerHostIsCappedByNumReplicas) {
  absl::StatusOr<TPUClusterResolver> r = TPUClusterResolver::Create("v3-8");
  ASSERT_THAT(r, IsOk());
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(r->topology(), {}, {}, 2);
  ASSERT_THAT(da, IsOk());
  absl::StatusOr<InputWorkerMapping> m = r->InputWorkers(&*da);
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->num_replicas_per_host, 2);
  EXPECT_EQ(m->num_replicas_in_sync, 2);
  EXPECT_EQ(m->num_hosts, 1);
}

TEST(TPUClusterResolverTest, DeviceAssignmentOfAnotherTopologyIsRejected) {
  absl::StatusOr<TPUClusterResolver> r = TPUClusterResolver::Create("v3-32");
  absl::StatusOr<TPUClusterResolver> small = TPUClusterResolver::Create("v3-8");
  ASSERT_THAT(r, IsOk());
  ASSERT_THAT(small, IsOk());
  absl::StatusOr<DeviceAssignment> da =
      DeviceAssignment::Build(small->topology());
  ASSERT_THAT(da, IsOk());
  EXPECT_THAT(
      r->InputWorkers(&*da),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "the device assignment's topology (mesh shape (2, 2, 2), 1 "
              "tasks) is not the resolver's (mesh shape (4, 4, 2), 4 tasks)")));
}

TEST(TPUClusterResolverTest, EmptyNameIsTheDefaultV3_8) {
  absl::StatusOr<TPUClusterResolver> r = TPUClusterResolver::Create();
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->tpu(), "");
  EXPECT_EQ(r->layout().name, "v3-8");
  EXPECT_EQ(r->master(), "grpc://tpu-worker-0:8470");
  EXPECT_EQ(r->cluster_spec(),
            (ClusterSpec{{"worker", {"tpu-worker-0:8470"}}}));
  EXPECT_EQ(r->num_devices(), 8);
  EXPECT_EQ(r->topology().mesh_shape(), (std::vector<int>{2, 2, 2}));
}

TEST(TPUClusterResolverTest, LocalModeHasNoMasterAndNoClusterSpec) {
  absl::StatusOr<TPUClusterResolver> r = TPUClusterResolver::Create("local");
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->is_local());
  EXPECT_EQ(r->master(), "");
  EXPECT_TRUE(r->cluster_spec().empty());
  EXPECT_EQ(r->job_name(), "localhost");
  EXPECT_EQ(r->num_accelerators(), (std::map<std::string, int>{{"TPU", 8}}));
  EXPECT_EQ(r->TpuDeviceNames()[3],
            "/job:localhost/replica:0/task:0/device:TPU:3");
  EXPECT_EQ(r->HostDeviceNames()[0],
            "/job:localhost/replica:0/task:0/device:CPU:0");
}

TEST(TPUClusterResolverTest, RankFourOption) {
  absl::StatusOr<TPUClusterResolver> r = TPUClusterResolver::Create("v3-8", 4);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->topology().mesh_shape(), (std::vector<int>{2, 2, 1, 2}));
  absl::StatusOr<TPUClusterResolver> v4 = TPUClusterResolver::Create("v4-32");
  ASSERT_THAT(v4, IsOk());
  EXPECT_EQ(v4->topology().mesh_shape(), (std::vector<int>{2, 2, 4, 1}));
  EXPECT_EQ(v4->num_accelerators(), (std::map<std::string, int>{{"TPU", 4}}));
  EXPECT_EQ(v4->num_hosts(), 4);
}

TEST(TPUClusterResolverTest, BadSliceNamesAreInvalidArgument) {
  EXPECT_THAT(
      TPUClusterResolver::Create("v3-33"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"v3-33\"")));
  EXPECT_THAT(TPUClusterResolver::Create("tpu-node-1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown generation")));
}

TEST(TPUClusterResolverTest, BindsASliceNameToMatchingBackendDevices) {
  absl::StatusOr<runtime::SliceLayout> layout = runtime::ParseSlice("v4-32");
  ASSERT_THAT(layout, IsOk());
  std::vector<runtime::DeviceDescription> devices = layout->devices;
  std::reverse(devices.begin(),
               devices.end());  // Order of the list does not matter.
  absl::StatusOr<TPUClusterResolver> r =
      TPUClusterResolver::Create(devices, "v4-32");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->devices()[5].id, 5);
  EXPECT_EQ(r->topology().mesh_shape(), (std::vector<int>{2, 2, 4, 1}));

  devices[0].coords = {0, 0, 0, 0};
  EXPECT_THAT(
      TPUClusterResolver::Create(devices, "v4-32"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("backend device id 15 task 3 ordinal 3 coords (0, 0, 0, 0) "
                    "differs from the slice's id 15 task 3 ordinal 3 coords "
                    "(1, 1, 3, 0)")));
  devices.pop_back();
  EXPECT_THAT(
      TPUClusterResolver::Create(devices, "v4-32"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("the backend has 15 devices but the slice has 16")));
}

TEST(TPUClusterResolverTest, BindsABackend) {
  absl::StatusOr<runtime::SliceLayout> layout = runtime::ParseSlice("v3-32");
  ASSERT_THAT(layout, IsOk());
  runtime::HostBackend backend(layout->devices);
  absl::StatusOr<TPUClusterResolver> r =
      TPUClusterResolver::Create(backend, "v3-32");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->num_hosts(), 4);
  EXPECT_EQ(r->devices()[9].coords, (std::vector<int>{2, 0, 1}));
  EXPECT_THAT(
      TPUClusterResolver::Create(backend, "v3-8"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("the backend has 32 devices but the slice has 8")));
  runtime::HostBackend eight(8);
  absl::StatusOr<TPUClusterResolver> local =
      TPUClusterResolver::Create(eight, "");
  ASSERT_THAT(local, IsOk());
  EXPECT_EQ(local->topology().mesh_shape(), (std::vector<int>{8, 1, 1}));
  EXPECT_EQ(local->num_hosts(), 1);
  EXPECT_EQ(local->num_accelerators(),
            (std::map<std::string, int>{{"TPU", 8}}));
}

TEST(TPUClusterResolverTest, EmptyNameUsesTheBackendDevicesAsTheyAre) {
  absl::StatusOr<runtime::SliceLayout> plain = runtime::PlainSliceLayout(2, 4);
  ASSERT_THAT(plain, IsOk());
  absl::StatusOr<TPUClusterResolver> r =
      TPUClusterResolver::Create(plain->devices, "");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->topology().mesh_shape(), (std::vector<int>{4, 2, 1}));
  EXPECT_EQ(r->num_hosts(), 2);
  EXPECT_EQ(r->devices_per_host(), 4);
  EXPECT_EQ(
      r->cluster_spec(),
      (ClusterSpec{{"worker", {"tpu-worker-0:8470", "tpu-worker-1:8470"}}}));

  EXPECT_THAT(
      TPUClusterResolver::Create(plain->devices, "local"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("needs devices of a single host; got 2 hosts")));
  EXPECT_THAT(
      TPUClusterResolver::Create(std::vector<runtime::DeviceDescription>{}, ""),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("the device list is empty")));
  std::vector<runtime::DeviceDescription> bad = plain->devices;
  bad[3].id = 9;
  EXPECT_THAT(TPUClusterResolver::Create(bad, ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("device ids must be 0..7")));
  bad = plain->devices;
  bad[2].coords[0] = -1;
  EXPECT_THAT(TPUClusterResolver::Create(bad, ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("coords (-1, 0, 0) has a coordinate outside "
                                 "[0, 16777216)")));
  bad = plain->devices;
  std::swap(bad[1].ordinal, bad[2].ordinal);
  EXPECT_THAT(
      TPUClusterResolver::Create(bad, ""),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("device ids must follow (task, ordinal) order")));
}

TEST(TPUClusterResolverTest, PlainWorkersByReplicas) {
  absl::StatusOr<TPUClusterResolver> r = TPUClusterResolver::CreatePlain(2, 4);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->tpu(), "2x4");
  EXPECT_EQ(r->master(), "grpc://tpu-worker-0:8470");
  EXPECT_EQ(r->num_accelerators(), (std::map<std::string, int>{{"TPU", 4}}));
  absl::StatusOr<InputWorkerMapping> m = r->InputWorkers();
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->replicas_per_worker,
            (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_THAT(m->worker_devices,
              ElementsAre("/job:worker/replica:0/task:0/device:CPU:0",
                          "/job:worker/replica:0/task:1/device:CPU:0"));
  EXPECT_EQ(m->replica_devices[5], "/job:worker/replica:0/task:1/device:TPU:1");
  EXPECT_EQ(m->num_replicas_per_host, 4);

  EXPECT_THAT(
      TPUClusterResolver::CreatePlain(0, 4),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_workers=0")));
}

}  // namespace
}  // namespace tpusim::strategy
