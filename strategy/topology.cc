#include "strategy/topology.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "strategy/tpu_topology.pb.h"

namespace tpusim::strategy {
namespace {

// tpusim limit on mesh positions (the inverse maps are dense): 2^24, far
// above any real slice.
constexpr long long kMaxMeshPositions = 1LL << 24;

std::string Vec(absl::Span<const int> v) {
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}

absl::Status ValidateMeshShape(const std::vector<int>& mesh_shape,
                               absl::string_view what) {
  bool ok = mesh_shape.size() == 3 || mesh_shape.size() == 4;
  for (int s : mesh_shape) ok = ok && s >= 1;
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "`mesh_shape` must be a ", what,
        " of 3 positive entries (or 4 for a rank-4 topology); got ",
        Vec(mesh_shape)));
  }
  long long positions = 1;
  for (int s : mesh_shape) positions *= s;
  if (positions > kMaxMeshPositions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "`mesh_shape` ", Vec(mesh_shape), " has ", positions,
        " positions; at most ", kMaxMeshPositions, " are supported"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string TpuDeviceName(absl::string_view job, int task, int device) {
  if (job.empty()) return absl::StrCat("/task:", task, "/device:TPU:", device);
  return absl::StrCat("/job:", job, "/task:", task, "/device:TPU:", device);
}

std::string HostDeviceName(absl::string_view job, int task) {
  if (job.empty()) return absl::StrCat("/task:", task, "/device:CPU:0");
  return absl::StrCat("/job:", job, "/task:", task, "/device:CPU:0");
}

std::string CanonicalTpuDeviceName(absl::string_view job, int task,
                                   int device) {
  return absl::StrCat("/job:", job, "/replica:0/task:", task,
                      "/device:TPU:", device);
}

std::string CanonicalHostDeviceName(absl::string_view job, int task) {
  return absl::StrCat("/job:", job, "/replica:0/task:", task, "/device:CPU:0");
}

absl::StatusOr<Topology> Topology::Create(
    std::vector<int> mesh_shape, DeviceCoordinates device_coordinates) {
  TPUSIM_RETURN_IF_ERROR(ValidateMeshShape(mesh_shape, "sequence"));
  const size_t rank = mesh_shape.size();
  const size_t per_task =
      device_coordinates.empty() ? 0 : device_coordinates[0].size();
  for (size_t t = 0; t < device_coordinates.size(); ++t) {
    bool ok = device_coordinates[t].size() == per_task;
    for (const std::vector<int>& c : device_coordinates[t])
      ok = ok && c.size() == rank;
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("`device_coordinates` must be a rank 3 int32 array with "
                       "minor dimension equal to the "
                       "mesh shape rank (",
                       rank, "); task ", t, " has ",
                       device_coordinates[t].size(), " devices (task 0 has ",
                       per_task, ") or a coordinate of another length"));
    }
  }
  Topology topology;
  topology.mesh_shape_ = std::move(mesh_shape);
  topology.device_coordinates_ = std::move(device_coordinates);
  topology.num_tpus_per_task_ = static_cast<int>(per_task);
  TPUSIM_RETURN_IF_ERROR(topology.Invert());
  return topology;
}

absl::StatusOr<Topology> Topology::FromDevices(
    std::vector<int> mesh_shape,
    absl::Span<const runtime::DeviceDescription> devices) {
  std::map<int, std::map<int, const runtime::DeviceDescription*>> by_task;
  for (const runtime::DeviceDescription& d : devices) {
    if (d.task < 0 || d.ordinal < 0 ||
        !by_task[d.task].emplace(d.ordinal, &d).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", d.id, " has task ", d.task, " and ordinal ",
                       d.ordinal, ": negative or already used"));
    }
  }
  DeviceCoordinates coords;
  int expected_task = 0;
  for (const auto& [task, ordinals] : by_task) {
    if (task != expected_task) {
      return absl::InvalidArgumentError(
          absl::StrCat("devices have no task ", expected_task,
                       " but have task ", task, "; tasks must be 0..n-1"));
    }
    ++expected_task;
    std::vector<std::vector<int>> task_coords;
    int expected_ordinal = 0;
    for (const auto& [ordinal, device] : ordinals) {
      if (ordinal != expected_ordinal) {
        return absl::InvalidArgumentError(absl::StrCat(
            "task ", task, " has no device ordinal ", expected_ordinal,
            " but has ", ordinal, "; ordinals must be 0..n-1"));
      }
      ++expected_ordinal;
      task_coords.push_back(device->coords);
    }
    if (!coords.empty() && task_coords.size() != coords[0].size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", task, " has ", task_coords.size(),
                       " devices but task 0 has ", coords[0].size(),
                       "; every task needs the same count"));
    }
    coords.push_back(std::move(task_coords));
  }
  return Create(std::move(mesh_shape), std::move(coords));
}

absl::StatusOr<Topology> Topology::FromSerialized(
    absl::string_view serialized) {
  tensorflow::tpu::TopologyProto proto;
  if (!proto.ParseFromArray(serialized.data(),
                            static_cast<int>(serialized.size()))) {
    return absl::InvalidArgumentError(absl::StrCat("serialized TopologyProto (",
                                                   serialized.size(),
                                                   " bytes) does not parse"));
  }
  std::vector<int> mesh_shape(proto.mesh_shape().begin(),
                              proto.mesh_shape().end());
  TPUSIM_RETURN_IF_ERROR(ValidateMeshShape(mesh_shape, "vector"));
  if (proto.num_tasks() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("`num_tasks` must be >= 0; got ", proto.num_tasks()));
  }
  if (proto.num_tpu_devices_per_task() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("`num_tpu_devices_per_task` must be >= 0; got ",
                     proto.num_tpu_devices_per_task()));
  }
  const long long expected = static_cast<long long>(proto.num_tasks()) *
                             proto.num_tpu_devices_per_task() *
                             static_cast<long long>(mesh_shape.size());
  if (proto.device_coordinates_size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "`device_coordinates` must have shape num_tasks (", proto.num_tasks(),
        ") * num_tpu_devices_per_task (", proto.num_tpu_devices_per_task(),
        ") * len(mesh_shape) (", mesh_shape.size(), "); got shape ",
        proto.device_coordinates_size()));
  }
  for (int c : proto.device_coordinates()) {
    if (c < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("`device_coordinates` must be >= 0; got ", c));
    }
  }
  const int rank = static_cast<int>(mesh_shape.size());
  DeviceCoordinates coords(proto.num_tasks());
  int i = 0;
  for (int t = 0; t < proto.num_tasks(); ++t) {
    coords[t].resize(proto.num_tpu_devices_per_task());
    for (int d = 0; d < proto.num_tpu_devices_per_task(); ++d) {
      for (int k = 0; k < rank; ++k)
        coords[t][d].push_back(proto.device_coordinates(i++));
    }
  }
  return Create(std::move(mesh_shape), std::move(coords));
}

std::string Topology::Serialized() const {
  tensorflow::tpu::TopologyProto proto;
  for (int s : mesh_shape_) proto.add_mesh_shape(s);
  proto.set_num_tasks(num_tasks());
  proto.set_num_tpu_devices_per_task(num_tpus_per_task_);
  for (const auto& task : device_coordinates_) {
    for (const auto& device : task) {
      for (int c : device) proto.add_device_coordinates(c);
    }
  }
  return proto.SerializeAsString();
}

absl::StatusOr<int> Topology::FlatIndex(
    absl::Span<const int> coordinates) const {
  bool ok = coordinates.size() == mesh_shape_.size();
  int index = 0;
  for (size_t d = 0; ok && d < mesh_shape_.size(); ++d) {
    ok = coordinates[d] >= 0 && coordinates[d] < mesh_shape_[d];
    if (ok) index = index * mesh_shape_[d] + coordinates[d];
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("coordinates ", Vec(coordinates),
                     " are outside the TPU mesh of shape ", Vec(mesh_shape_)));
  }
  return index;
}

absl::Status Topology::Invert() {
  int size = 1;
  for (int s : mesh_shape_) size *= s;
  tasks_.assign(size, -1);
  devices_.assign(size, -1);
  for (int t = 0; t < num_tasks(); ++t) {
    for (int d = 0; d < num_tpus_per_task_; ++d) {
      const std::vector<int>& c = device_coordinates_[t][d];
      absl::StatusOr<int> index = FlatIndex(c);
      if (!index.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("`device_coordinates` of task ", t, " device ", d,
                         ": ", index.status().message()));
      }
      if (tasks_[*index] != -1) {
        return absl::InvalidArgumentError(
            absl::StrCat("`device_coordinates` of task ", t, " device ", d,
                         ": coordinates ", Vec(c), " are already used by task ",
                         tasks_[*index], " device ", devices_[*index]));
      }
      tasks_[*index] = t;
      devices_[*index] = d;
    }
  }
  missing_devices_.clear();
  for (int index = 0; index < size; ++index) {
    if (tasks_[index] != -1) continue;
    std::vector<int> c(mesh_shape_.size());
    int rest = index;
    for (int d = static_cast<int>(mesh_shape_.size()) - 1; d >= 0; --d) {
      c[d] = rest % mesh_shape_[d];
      rest /= mesh_shape_[d];
    }
    missing_devices_.push_back(std::move(c));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Topology::TaskOrdinalAtCoordinates(
    absl::Span<const int> coordinates) const {
  TPUSIM_ASSIGN_OR_RETURN(const int index, FlatIndex(coordinates));
  return tasks_[index];
}

absl::StatusOr<int> Topology::TpuDeviceOrdinalAtCoordinates(
    absl::Span<const int> coordinates) const {
  TPUSIM_ASSIGN_OR_RETURN(const int index, FlatIndex(coordinates));
  return devices_[index];
}

absl::StatusOr<std::string> Topology::CpuDeviceNameAtCoordinates(
    absl::Span<const int> coordinates, absl::string_view job) const {
  TPUSIM_ASSIGN_OR_RETURN(const int index, FlatIndex(coordinates));
  if (tasks_[index] < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("no TPU device at coordinates ", Vec(coordinates),
                     " (missing device)"));
  }
  return HostDeviceName(job, tasks_[index]);
}

absl::StatusOr<std::string> Topology::TpuDeviceNameAtCoordinates(
    absl::Span<const int> coordinates, absl::string_view job) const {
  TPUSIM_ASSIGN_OR_RETURN(const int index, FlatIndex(coordinates));
  if (tasks_[index] < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("no TPU device at coordinates ", Vec(coordinates),
                     " (missing device)"));
  }
  return TpuDeviceName(job, tasks_[index], devices_[index]);
}

}  // namespace tpusim::strategy
