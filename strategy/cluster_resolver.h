// strategy/cluster_resolver.h
//
// TPUClusterResolver: binds a TPU slice (by name, or a backend's device list)
// to the cluster TensorFlow would see: master address, cluster spec,
// accelerators per host, the Topology that initialize_tpu_system returns, and
// the replica / input-worker mapping the strategy uses (spec (a) and (k)).
//
//   TPUSIM_ASSIGN_OR_RETURN(TPUClusterResolver resolver,
//                           TPUClusterResolver::Create(backend, "v3-32"));
//   resolver.master();        // "grpc://tpu-worker-0:8470"
//   resolver.cluster_spec();  // {"worker": {"tpu-worker-0:8470", ...}}
//   TPUSIM_ASSIGN_OR_RETURN(InputWorkerMapping m, resolver.InputWorkers());
//   m.replicas_per_worker;    // {{0..7}, {8..15}, {16..23}, {24..31}}
//
// tpusim conventions (spec "tpusim conventions", (k)):
//   * The virtual cluster has one job "worker"; host t is "tpu-worker-t:8470";
//     master() is "grpc://tpu-worker-0:8470"; task_type "worker", task_id 0,
//     rpc_layer "grpc", environment "".
//   * tpusim choice: an EMPTY name means the default TPU: the given devices
//     as they are (mesh shape = bounding box of the coordinates), or a "v3-8"
//     slice when no devices are given. It still uses the virtual "worker"
//     cluster above, so device names are uniform.
//   * tpusim choice: the name "local" is TF's local mode: master() is "",
//     cluster_spec() is empty and the job is "localhost"; it needs a single
//     host (default "v3-8").
//   * Device names are TF's canonical ones:
//     "/job:worker/replica:0/task:T/device:TPU:D" and
//     "/job:worker/replica:0/task:T/device:CPU:0".

#ifndef TPUSIM_STRATEGY_CLUSTER_RESOLVER_H_
#define TPUSIM_STRATEGY_CLUSTER_RESOLVER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/device_assignment.h"
#include "strategy/runtime/backend.h"
#include "strategy/runtime/device_description.h"
#include "strategy/runtime/slice.h"
#include "strategy/topology.h"

namespace tpusim::strategy {

// Job name -> task addresses (task index = position). An ordered map:
// deterministic output.
using ClusterSpec = std::map<std::string, std::vector<std::string>>;

// How replicas map onto devices and input workers (hosts), spec (a).
struct InputWorkerMapping {
  // Replica r's device, canonical name of tpu_device(r, logical core 0)
  // (without a device assignment: the r-th TPU device in (task, ordinal)
  // order).
  std::vector<std::string> replica_devices;
  // For each replica, the global device ids (DeviceDescription::id) of its
  // logical cores; the backend-level assignment for Backend::ExecuteSpmd.
  std::vector<std::vector<int>> replica_device_ids;
  // Input workers: the distinct hosts of replica_devices in order of first
  // appearance, as canonical host CPU names, and their task indices.
  std::vector<std::string> worker_devices;
  std::vector<int> worker_tasks;
  // replicas_per_worker[w]: replica ids living on worker w, in replica order.
  std::vector<std::vector<int>> replicas_per_worker;
  // Number of distinct hosts = worker_devices.size().
  int num_hosts = 0;
  // Without a device assignment: TPU devices per host. With one:
  // min(num_replicas, devices_per_host div num_cores_per_replica) (TF 2.1).
  int num_replicas_per_host = 0;
  // Total replicas N.
  int num_replicas_in_sync = 0;
};

class TPUClusterResolver {
 public:
  // The slice `tpu` ("v3-32"; "" = default "v3-8"; "local" = TF local mode on
  // "v3-8") laid out by runtime::ParseSlice with `rank` (kDefaultRank, 3 or 4).
  // InvalidArgument from ParseSlice for a bad name.
  static absl::StatusOr<TPUClusterResolver> Create(
      absl::string_view tpu = "", int rank = runtime::kDefaultRank);

  // Binds `tpu` to a backend's devices. For a slice name, the devices must be
  // exactly the slice's layout at the rank of the devices' coordinates (same
  // count; same id, task, ordinal and coordinates per device), else
  // InvalidArgument naming the first difference. For "" (or "local"), the
  // devices are used as given: ids 0..n-1 in (task, ordinal) order, every task
  // with the same device count, all coordinates of one rank (3 or 4); the mesh
  // is their bounding box. "local" also requires a single task.
  static absl::StatusOr<TPUClusterResolver> Create(
      std::vector<runtime::DeviceDescription> devices, absl::string_view tpu);

  // As above with the descriptions of `backend`'s devices.
  static absl::StatusOr<TPUClusterResolver> Create(
      const runtime::Backend& backend, absl::string_view tpu);

  // A plain layout: `num_workers` hosts with `devices_per_worker` devices each
  // (runtime::PlainSliceLayout). InvalidArgument when a count is < 1.
  static absl::StatusOr<TPUClusterResolver> CreatePlain(int num_workers,
                                                        int devices_per_worker);

  // The name given at construction ("" for the default, "2x4" for a plain
  // layout).
  const std::string& tpu() const { return tpu_; }
  // "grpc://tpu-worker-0:8470"; "" in local mode.
  std::string master() const;
  // {"worker": {"tpu-worker-0:8470", ...}}; empty in local mode.
  ClusterSpec cluster_spec() const;
  // {"TPU": devices per host}.
  std::map<std::string, int> num_accelerators() const;
  std::string task_type() const { return "worker"; }
  int task_id() const { return 0; }
  std::string rpc_layer() const { return "grpc"; }
  std::string environment() const { return ""; }
  // "worker", or "localhost" in local mode: the job of every device name below.
  const std::string& job_name() const { return job_; }
  bool is_local() const { return local_; }

  const runtime::SliceLayout& layout() const { return layout_; }
  const std::vector<runtime::DeviceDescription>& devices() const {
    return layout_.devices;
  }
  // The topology initialize_tpu_system would return.
  const Topology& topology() const { return topology_; }
  int num_hosts() const { return topology_.num_tasks(); }
  int devices_per_host() const { return topology_.num_tpus_per_task(); }
  int num_devices() const { return topology_.num_devices(); }

  // TPU devices in the default replica order (task asc, ordinal asc), canonical
  // names.
  std::vector<std::string> TpuDeviceNames() const;
  // Host CPU device of each task, canonical names.
  std::vector<std::string> HostDeviceNames() const;

  // The replica / input-worker mapping without a device assignment (nullptr:
  // one replica per TPU device, default order) or with one. InvalidArgument
  // when `device_assignment` was built on a different topology (mesh shape or
  // device coordinates differ).
  absl::StatusOr<InputWorkerMapping> InputWorkers(
      const DeviceAssignment* device_assignment = nullptr) const;

 private:
  TPUClusterResolver(std::string tpu, runtime::SliceLayout layout,
                     Topology topology, bool local);

  std::string tpu_;
  runtime::SliceLayout layout_;
  Topology topology_;
  bool local_ = false;
  std::string job_;
};

}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_CLUSTER_RESOLVER_H_
