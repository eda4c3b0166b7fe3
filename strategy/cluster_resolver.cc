#include "strategy/cluster_resolver.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace tpusim::strategy {
namespace {

// tpusim choice: the slice behind an empty name or "local" when no devices are
// given.
constexpr char kDefaultSlice[] = "v3-8";
constexpr char kLocal[] = "local";
constexpr char kWorkerJob[] = "worker";
constexpr char kLocalJob[] = "localhost";
// Bound on device coordinates of a device list (Topology caps the mesh size).
constexpr int kMaxCoordinate = 1 << 24;

std::string Coords(absl::Span<const int> v) {
  return absl::StrCat("(", absl::StrJoin(v, ", "), ")");
}

std::string Describe(const runtime::DeviceDescription& d) {
  return absl::StrCat("id ", d.id, " task ", d.task, " ordinal ", d.ordinal,
                      " coords ", Coords(d.coords));
}

// The layout of a device list used as it is (empty name / "local").
absl::StatusOr<runtime::SliceLayout> LayoutFromDevices(
    std::vector<runtime::DeviceDescription> devices, absl::string_view name) {
  if (devices.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TPUClusterResolver \"", name, "\": the device list is empty"));
  }
  std::sort(devices.begin(), devices.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  const size_t rank = devices[0].coords.size();
  if (rank != 3 && rank != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", devices[0].id, " has ", rank,
                     " coordinates; allowed: 3 (x, y, core) or 4 "
                     "(x, y, z, core)"));
  }
  std::vector<int> mesh(rank, 0);
  for (size_t i = 0; i < devices.size(); ++i) {
    const runtime::DeviceDescription& d = devices[i];
    if (d.id != static_cast<int>(i)) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ids must be 0..", devices.size() - 1, "; got ",
                       Describe(d), " at position ", i));
    }
    if (i > 0 && std::make_pair(devices[i - 1].task, devices[i - 1].ordinal) >=
                     std::make_pair(d.task, d.ordinal)) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ids must follow (task, ordinal) order; device ",
                       Describe(d), " comes after ", Describe(devices[i - 1])));
    }
    if (d.coords.size() != rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", Describe(d), " has ", d.coords.size(),
                       " coordinates; device 0 has ", rank));
    }
    for (size_t k = 0; k < rank; ++k) {
      if (d.coords[k] < 0 || d.coords[k] >= kMaxCoordinate) {
        return absl::InvalidArgumentError(absl::StrCat(
            "device ", Describe(d), " has a coordinate outside [0, ",
            kMaxCoordinate, ")"));
      }
      mesh[k] = std::max(mesh[k], d.coords[k] + 1);
    }
  }
  runtime::SliceLayout layout;
  layout.name = std::string(name);
  layout.generation = nullptr;
  layout.rank = static_cast<int>(rank);
  layout.mesh_shape = mesh;
  layout.chip_mesh = {mesh[0], mesh[1], rank == 4 ? mesh[2] : 1};
  layout.host_block = {0, 0, 0};  // Not known for a device list.
  layout.num_chips =
      layout.chip_mesh[0] * layout.chip_mesh[1] * layout.chip_mesh[2];
  layout.devices_per_chip = mesh.back();
  layout.num_hosts = devices.back().task + 1;
  layout.devices_per_host = static_cast<int>(devices.size()) / layout.num_hosts;
  layout.devices = std::move(devices);
  return layout;
}

}  // namespace

TPUClusterResolver::TPUClusterResolver(std::string tpu,
                                       runtime::SliceLayout layout,
                                       Topology topology, bool local)
    : tpu_(std::move(tpu)),
      layout_(std::move(layout)),
      topology_(std::move(topology)),
      local_(local),
      job_(local ? kLocalJob : kWorkerJob) {}

absl::StatusOr<TPUClusterResolver> TPUClusterResolver::Create(
    absl::string_view tpu, int rank) {
  const bool local = tpu == kLocal;
  const absl::string_view slice = (tpu.empty() || local) ? kDefaultSlice : tpu;
  TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                          runtime::ParseSlice(slice, rank));
  TPUSIM_ASSIGN_OR_RETURN(
      Topology topology,
      Topology::FromDevices(layout.mesh_shape, layout.devices));
  return TPUClusterResolver(std::string(tpu), std::move(layout),
                            std::move(topology), local);
}

absl::StatusOr<TPUClusterResolver> TPUClusterResolver::Create(
    std::vector<runtime::DeviceDescription> devices, absl::string_view tpu) {
  const bool local = tpu == kLocal;
  runtime::SliceLayout layout;
  if (tpu.empty() || local) {
    TPUSIM_ASSIGN_OR_RETURN(layout, LayoutFromDevices(std::move(devices), tpu));
    if (local && layout.num_hosts != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TPUClusterResolver \"local\" needs devices of a single host; got ",
          layout.num_hosts, " hosts"));
    }
  } else {
    const int rank = devices.empty()
                         ? runtime::kDefaultRank
                         : static_cast<int>(devices[0].coords.size());
    TPUSIM_ASSIGN_OR_RETURN(layout, runtime::ParseSlice(tpu, rank));
    std::sort(devices.begin(), devices.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
    if (devices.size() != layout.devices.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TPUClusterResolver \"", tpu, "\": the backend has ", devices.size(),
          " devices but the slice has ", layout.devices.size()));
    }
    for (size_t i = 0; i < devices.size(); ++i) {
      const runtime::DeviceDescription& got = devices[i];
      const runtime::DeviceDescription& want = layout.devices[i];
      if (got.id != want.id || got.task != want.task ||
          got.ordinal != want.ordinal || got.coords != want.coords) {
        return absl::InvalidArgumentError(absl::StrCat(
            "TPUClusterResolver \"", tpu, "\": backend device ", Describe(got),
            " differs from the slice's ", Describe(want)));
      }
    }
    layout.devices = std::move(devices);
  }
  TPUSIM_ASSIGN_OR_RETURN(
      Topology topology,
      Topology::FromDevices(layout.mesh_shape, layout.devices));
  return TPUClusterResolver(std::string(tpu), std::move(layout),
                            std::move(topology), local);
}

absl::StatusOr<TPUClusterResolver> TPUClusterResolver::Create(
    const runtime::Backend& backend, absl::string_view tpu) {
  std::vector<runtime::DeviceDescription> devices;
  for (const runtime::Device* device : backend.devices()) {
    devices.push_back(device->description());
  }
  return Create(std::move(devices), tpu);
}

absl::StatusOr<TPUClusterResolver> TPUClusterResolver::CreatePlain(
    int num_workers, int devices_per_worker) {
  TPUSIM_ASSIGN_OR_RETURN(
      runtime::SliceLayout layout,
      runtime::PlainSliceLayout(num_workers, devices_per_worker));
  TPUSIM_ASSIGN_OR_RETURN(
      Topology topology,
      Topology::FromDevices(layout.mesh_shape, layout.devices));
  std::string name = layout.name;
  return TPUClusterResolver(std::move(name), std::move(layout),
                            std::move(topology), false);
}

std::string TPUClusterResolver::master() const {
  if (local_) return "";
  return "grpc://tpu-worker-0:8470";
}

ClusterSpec TPUClusterResolver::cluster_spec() const {
  ClusterSpec spec;
  if (local_) return spec;
  std::vector<std::string>& tasks = spec[kWorkerJob];
  for (int t = 0; t < num_hosts(); ++t)
    tasks.push_back(absl::StrCat("tpu-worker-", t, ":8470"));
  return spec;
}

std::map<std::string, int> TPUClusterResolver::num_accelerators() const {
  return {{"TPU", devices_per_host()}};
}

std::vector<std::string> TPUClusterResolver::TpuDeviceNames() const {
  std::vector<std::string> names;
  for (const runtime::DeviceDescription& d : layout_.devices) {
    names.push_back(CanonicalTpuDeviceName(job_, d.task, d.ordinal));
  }
  return names;
}

std::vector<std::string> TPUClusterResolver::HostDeviceNames() const {
  std::vector<std::string> names;
  for (int t = 0; t < num_hosts(); ++t)
    names.push_back(CanonicalHostDeviceName(job_, t));
  return names;
}

absl::StatusOr<InputWorkerMapping> TPUClusterResolver::InputWorkers(
    const DeviceAssignment* device_assignment) const {
  InputWorkerMapping m;
  std::vector<int> replica_tasks;
  if (device_assignment == nullptr) {
    for (const runtime::DeviceDescription& d : layout_.devices) {
      m.replica_devices.push_back(
          CanonicalTpuDeviceName(job_, d.task, d.ordinal));
      m.replica_device_ids.push_back({d.id});
      replica_tasks.push_back(d.task);
    }
    m.num_replicas_per_host = devices_per_host();
  } else {
    const Topology& other = device_assignment->topology();
    if (other.mesh_shape() != topology_.mesh_shape() ||
        other.device_coordinates() != topology_.device_coordinates()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the device assignment's topology (mesh shape ",
                       Coords(other.mesh_shape()), ", ", other.num_tasks(),
                       " tasks) is not the resolver's (mesh shape ",
                       Coords(topology_.mesh_shape()), ", ",
                       topology_.num_tasks(), " tasks)"));
    }
    for (int r = 0; r < device_assignment->num_replicas(); ++r) {
      TPUSIM_ASSIGN_OR_RETURN(const int task, device_assignment->Task(r, 0));
      TPUSIM_ASSIGN_OR_RETURN(const int ordinal,
                              device_assignment->TpuOrdinal(r, 0));
      m.replica_devices.push_back(CanonicalTpuDeviceName(job_, task, ordinal));
      replica_tasks.push_back(task);
    }
    TPUSIM_ASSIGN_OR_RETURN(
        m.replica_device_ids,
        device_assignment->ReplicaDeviceIds(layout_.devices));
    m.num_replicas_per_host = std::min(
        device_assignment->num_replicas(),
        devices_per_host() / device_assignment->num_cores_per_replica());
  }
  std::map<int, int> worker_of_task;
  for (int r = 0; r < static_cast<int>(replica_tasks.size()); ++r) {
    const int task = replica_tasks[r];
    auto [it, inserted] =
        worker_of_task.emplace(task, static_cast<int>(m.worker_tasks.size()));
    if (inserted) {
      m.worker_tasks.push_back(task);
      m.worker_devices.push_back(CanonicalHostDeviceName(job_, task));
      m.replicas_per_worker.emplace_back();
    }
    m.replicas_per_worker[it->second].push_back(r);
  }
  m.num_hosts = static_cast<int>(m.worker_tasks.size());
  m.num_replicas_in_sync = static_cast<int>(replica_tasks.size());
  return m;
}

}  // namespace tpusim::strategy
