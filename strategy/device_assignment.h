// strategy/device_assignment.h
//
// DeviceAssignment: TensorFlow's tf.tpu.experimental.DeviceAssignment — which
// physical TPU core runs each logical core of each replica (spec (j)).
//
//   TPUSIM_ASSIGN_OR_RETURN(
//       DeviceAssignment da,
//       DeviceAssignment::Build(topology, /*computation_shape=*/{1, 1, 2},
//                               /*computation_stride=*/{},
//                               /*num_replicas=*/4));
//   da.coordinates(2, 1);           // {1, 1, 1}
//   *da.TpuDevice(2, 0, "worker");  // "/job:worker/task:0/device:TPU:6"
//   // Global device ids per replica, for Backend::ExecuteSpmd:
//   TPUSIM_ASSIGN_OR_RETURN(auto ids, da.ReplicaDeviceIds(layout.devices));
//
// Build follows TF 2.1/2.2's device_assignment() for rank-3 topologies and
// TF 2.3+'s for rank-4 topologies (the algorithm is chosen by the topology's
// rank; see Build).

#ifndef TPUSIM_STRATEGY_DEVICE_ASSIGNMENT_H_
#define TPUSIM_STRATEGY_DEVICE_ASSIGNMENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "strategy/runtime/device_description.h"
#include "strategy/topology.h"

namespace tpusim::strategy {

class DeviceAssignment {
 public:
  // [num_replicas][num_cores_per_replica][mesh_rank].
  using CoreAssignment = std::vector<std::vector<std::vector<int>>>;

  // TF's DeviceAssignment(topology, core_assignment). InvalidArgument (TF
  // ValueError) when core_assignment is not a rectangular rank-3 array
  // ("core_assignment must be a rank 3 numpy array", also for an empty list, as
  // numpy sees shape (0,)), or its minor dimension differs from the topology
  // rank ("minor dimension of core_assignment must have size equal to topology
  // rank (R)"). tpusim additions: coordinates outside the mesh or at a missing
  // device are InvalidArgument naming replica, logical core and coordinates (TF
  // would raise IndexError or record task -1).
  static absl::StatusOr<DeviceAssignment> Create(
      Topology topology, CoreAssignment core_assignment);

  // TF's DeviceAssignment.build(topology, computation_shape,
  // computation_stride, num_replicas). Empty shape / stride mean all ones.
  // Rank-3 topology: the TF 2.1/2.2 algorithm (replica grid search with
  // Python-float ceil(r ** (1/d)), 2-D ring tiling when computation_shape[2] ==
  // 2, unit stride and full replication, else the general mixed-radix branch).
  // Rank-4 topology: the TF 2.3+ algorithm (core dimension first, 3-D ring for
  // full replication with computation_shape[3] == 2, task-order assignment when
  // the topology has missing devices). InvalidArgument (TF
  // ValueError/AssertionError) when: shape or stride length != mesh rank
  // ("computation_shape must have shape [R]; got [n]"), an entry < 1
  // ("computation_shape must be positive; got computation_shape=[...]"), the
  // footprint does not fit ("computation footprint [...] does not fit in TPU
  // topology shape
  // [...]"), num_replicas > max ("requested N replicas but only M replicas with
  // shape [...] and computation_stride [...] fit in a TPU mesh of shape
  // [...]"), num_replicas < 0
  // ("num_replicas must be >= 0"), and (missing devices) a non-unit stride or
  // too few devices. num_replicas == 0 gives a valid assignment with no
  // replicas and num_cores_per_replica = prod(computation_shape).
  // tpusim choice (TF 2.2 has no missing-device path): on a rank-3 topology
  // with missing devices the 2.2 algorithm runs unchanged and a replica that
  // lands on a missing device is InvalidArgument ("missing device").
  static absl::StatusOr<DeviceAssignment> Build(
      const Topology& topology, std::vector<int> computation_shape = {},
      std::vector<int> computation_stride = {}, int num_replicas = 1);

  // Build on a serialized TopologyProto (TF's build accepts bytes too): the
  // errors of Topology::FromSerialized, then those of Build.
  static absl::StatusOr<DeviceAssignment> BuildFromSerialized(
      absl::string_view serialized_topology,
      std::vector<int> computation_shape = {},
      std::vector<int> computation_stride = {}, int num_replicas = 1);

  const Topology& topology() const { return topology_; }
  int num_replicas() const { return static_cast<int>(core_assignment_.size()); }
  int num_cores_per_replica() const { return num_cores_per_replica_; }
  const CoreAssignment& core_assignment() const { return core_assignment_; }

  // Physical coordinates of (replica, logical_core). TPUSIM_CHECKs the indices
  // (programming error); the Status-returning methods below validate them
  // instead.
  const std::vector<int>& coordinates(int replica, int logical_core) const;

  // TPU device ordinal (TPU:D on its host). InvalidArgument for an index out of
  // range.
  absl::StatusOr<int> TpuOrdinal(int replica = 0, int logical_core = 0) const;
  // Task (host) index of (replica, logical_core). InvalidArgument for an index
  // out of range.
  absl::StatusOr<int> Task(int replica = 0, int logical_core = 0) const;
  // "/job:J/task:T/device:CPU:0" ("/task:T/..." for an empty job).
  absl::StatusOr<std::string> HostDevice(int replica = 0, int logical_core = 0,
                                         absl::string_view job = "") const;
  // "/job:J/task:T/device:TPU:D" ("/task:T/..." for an empty job).
  absl::StatusOr<std::string> TpuDevice(int replica = 0, int logical_core = 0,
                                        absl::string_view job = "") const;

  // Sorted replica ids with `logical_core` on task `task_id`. InvalidArgument
  // when there are none ("Can not find any replica in task: T contains
  // logical_core: C").
  absl::StatusOr<std::vector<int>> LookupReplicas(int task_id,
                                                  int logical_core) const;

  // The backend-level assignment: for each replica, the global device ids of
  // its logical cores, by matching coordinates against `devices` (a
  // SliceLayout's or a Backend's device descriptions). InvalidArgument when
  // some (replica, core)'s coordinates match no device or (task, ordinal)
  // disagrees with the device found there.
  absl::StatusOr<std::vector<std::vector<int>>> ReplicaDeviceIds(
      absl::Span<const runtime::DeviceDescription> devices) const;

 private:
  DeviceAssignment(Topology topology, CoreAssignment core_assignment,
                   int num_cores_per_replica);
  absl::Status Index();
  absl::Status CheckIndices(int replica, int logical_core) const;

  Topology topology_;
  CoreAssignment core_assignment_;
  int num_cores_per_replica_ = 0;
  // [replica][logical_core] -> task / ordinal.
  std::vector<std::vector<int>> tasks_;
  std::vector<std::vector<int>> ordinals_;
};

}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_DEVICE_ASSIGNMENT_H_
