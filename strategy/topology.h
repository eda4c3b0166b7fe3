// strategy/topology.h
//
// Topology: TensorFlow's tf.tpu.experimental.Topology — the shape of the
// physical TPU mesh and where each TensorFlow TPU device (task T, device D)
// sits in it (spec (j)).
//
//   TPUSIM_ASSIGN_OR_RETURN(
//       Topology topology, Topology::Create({2, 2, 2}, device_coordinates));
//   int task = *topology.TaskOrdinalAtCoordinates({1, 0, 1});
//   std::string name =
//       *topology.TpuDeviceNameAtCoordinates({1, 0, 1}, "worker");
//   // "/job:worker/task:0/device:TPU:3"
//
// Rank: TF 2.2 topologies are rank 3 (x, y, core); tpusim also accepts rank 4
// (x, y, z, core) as TF 2.3+ does (spec "tpusim conventions", topology rank).

#ifndef TPUSIM_STRATEGY_TOPOLOGY_H_
#define TPUSIM_STRATEGY_TOPOLOGY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "strategy/runtime/device_description.h"

namespace tpusim::strategy {

class Topology {
 public:
  // [num_tasks][num_tpus_per_task][mesh_rank].
  using DeviceCoordinates = std::vector<std::vector<std::vector<int>>>;

  // Builds a topology from a mesh shape and the coordinates of each task's
  // devices. InvalidArgument (TF ValueError) when: mesh_shape does not have 3
  // (or 4) entries or one is < 1 ("`mesh_shape` must be a sequence of 3
  // positive entries"); device_coordinates is not a rectangular
  // [tasks][devices][rank] array whose minor dimension equals the mesh rank
  // ("`device_coordinates` must be a rank 3 int32 array with minor dimension
  // equal to the mesh shape rank"). tpusim additions (TF would raise IndexError
  // or silently overwrite): a coordinate outside the mesh, and two devices at
  // the same coordinates, are InvalidArgument naming the task, device and
  // coordinates.
  static absl::StatusOr<Topology> Create(std::vector<int> mesh_shape,
                                         DeviceCoordinates device_coordinates);

  // Builds a topology from backend devices (e.g. a SliceLayout's). Devices are
  // grouped by task and ordered by ordinal; every task must have the same
  // number of devices with ordinals 0..n-1, else InvalidArgument. Then as
  // Create.
  static absl::StatusOr<Topology> FromDevices(
      std::vector<int> mesh_shape,
      absl::Span<const runtime::DeviceDescription> devices);

  // Parses a serialized tensorflow.tpu.TopologyProto (mesh_shape = 1, num_tasks
  // = 2, num_tpu_devices_per_task = 3, device_coordinates = 4). InvalidArgument
  // when the bytes do not parse, mesh_shape is bad (as Create, "must be a
  // vector of size 3 with positive entries"), num_tasks or
  // num_tpu_devices_per_task < 0 ("must be >= 0; got N"), the coordinate count
  // differs from num_tasks * num_tpu_devices_per_task * rank ("must have shape
  // num_tasks (T) * num_tpu_devices_per_task (D) * len(mesh_shape) ..."), or a
  // coordinate is negative ("`device_coordinates` must be >= 0"); then as
  // Create.
  static absl::StatusOr<Topology> FromSerialized(absl::string_view serialized);

  // The serialized TopologyProto (packed repeated fields, as TF writes it).
  std::string Serialized() const;

  const std::vector<int>& mesh_shape() const { return mesh_shape_; }
  int mesh_rank() const { return static_cast<int>(mesh_shape_.size()); }
  const DeviceCoordinates& device_coordinates() const {
    return device_coordinates_;
  }
  int num_tasks() const { return static_cast<int>(device_coordinates_.size()); }
  int num_tpus_per_task() const { return num_tpus_per_task_; }
  // Total TPU devices: num_tasks * num_tpus_per_task.
  int num_devices() const { return num_tasks() * num_tpus_per_task_; }

  // Coordinates of every mesh position without a device, in row-major order
  // (last dimension fastest), like TF 2.3's np.argwhere(tasks < 0). Empty for a
  // full mesh.
  const std::vector<std::vector<int>>& missing_devices() const {
    return missing_devices_;
  }

  // Task owning the device at `coordinates`, or -1 for a missing device.
  // InvalidArgument when `coordinates` has the wrong length or lies outside the
  // mesh.
  absl::StatusOr<int> TaskOrdinalAtCoordinates(
      absl::Span<const int> coordinates) const;
  // Device ordinal (TPU:D) at `coordinates`, or -1 for a missing device. Errors
  // as above.
  absl::StatusOr<int> TpuDeviceOrdinalAtCoordinates(
      absl::Span<const int> coordinates) const;

  // "/job:J/task:T/device:CPU:0", or "/task:T/device:CPU:0" when `job` is empty
  // (TF's job=None). InvalidArgument as above, and (tpusim choice; TF would
  // print task -1) when no device sits at `coordinates`.
  absl::StatusOr<std::string> CpuDeviceNameAtCoordinates(
      absl::Span<const int> coordinates, absl::string_view job = "") const;
  // "/job:J/task:T/device:TPU:D", or "/task:T/device:TPU:D" when `job` is
  // empty. Errors as CpuDeviceNameAtCoordinates.
  absl::StatusOr<std::string> TpuDeviceNameAtCoordinates(
      absl::Span<const int> coordinates, absl::string_view job = "") const;

  // Row-major index of `coordinates` in the mesh; InvalidArgument when out of
  // range.
  absl::StatusOr<int> FlatIndex(absl::Span<const int> coordinates) const;

 private:
  Topology() = default;
  absl::Status Invert();

  std::vector<int> mesh_shape_;
  DeviceCoordinates device_coordinates_;
  int num_tpus_per_task_ = 0;
  // Row-major over mesh_shape_: task / device ordinal at each position, -1
  // where missing.
  std::vector<int> tasks_;
  std::vector<int> devices_;
  std::vector<std::vector<int>> missing_devices_;
};

// "/job:J/task:T/device:TPU:D" ("/task:T/..." when job is empty), as
// topology.py names them.
std::string TpuDeviceName(absl::string_view job, int task, int device);
// "/job:J/task:T/device:CPU:0" ("/task:T/..." when job is empty).
std::string HostDeviceName(absl::string_view job, int task);
// The strategy's canonical names: "/job:worker/replica:0/task:T/device:TPU:D"
// and
// "/job:worker/replica:0/task:T/device:CPU:0" (spec (a) and (j)).
std::string CanonicalTpuDeviceName(absl::string_view job, int task, int device);
std::string CanonicalHostDeviceName(absl::string_view job, int task);

}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_TOPOLOGY_H_
