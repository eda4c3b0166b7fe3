#include "strategy/device_assignment.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/check.h"
#include "common/status_macros.h"

namespace tpusim::strategy {
namespace {

// numpy's way of printing an int vector: "[4 1 1]".
std::string NpArray(absl::Span<const int> v) {
  return absl::StrCat("[", absl::StrJoin(v, " "), "]");
}
// numpy's way of printing a 1-D shape: "(2,)".
std::string NpShape1(size_t n) { return absl::StrCat("(", n, ",)"); }

std::string Coords(absl::Span<const int> v) {
  return absl::StrCat("(", absl::StrJoin(v, ", "), ")");
}

using Pair = std::array<int, 2>;
using Triple = std::array<int, 3>;

// TF 2.2 _ring_2d: ring order of a height x width grid as (row, column) pairs;
// the rows are the first (x) replica dimension.
std::vector<Pair> Ring2d(int height, int width) {
  std::vector<Pair> ring;
  if (height == 1) {
    for (int i = 0; i < width; ++i) ring.push_back({0, i});
    return ring;
  }
  if (width == 1) {
    for (int i = 0; i < height; ++i) ring.push_back({i, 0});
    return ring;
  }
  if (height % 2 != 0) {
    // Odd height: column-major fallback.
    for (int i = 0; i < width * height; ++i)
      ring.push_back({i % height, i / height});
    return ring;
  }
  ring.push_back({0, 0});
  for (int i = 0; i < height / 2; ++i) {
    for (int j = 1; j < width; ++j) ring.push_back({2 * i, j});
    for (int j = width - 1; j > 0; --j) ring.push_back({2 * i + 1, j});
  }
  for (int i = height - 1; i > 0; --i) ring.push_back({i, 0});
  return ring;
}

// TF 2.3+ _open_ring_2d: an x_size by y_size ring at height z without its first
// chip (0,0).
std::vector<Triple> OpenRing2d(int x_size, int y_size, int z) {
  std::vector<Triple> ring;
  for (int i = 0; i < y_size / 2; ++i) {
    for (int j = 1; j < x_size; ++j) ring.push_back({j, 2 * i, z});
    for (int j = x_size - 1; j > 0; --j) ring.push_back({j, 2 * i + 1, z});
  }
  for (int i = y_size - 1; i > 0; --i) ring.push_back({0, i, z});
  return ring;
}

// TF 2.3+ _ring_3d: ring order of an x by y by z mesh as (x, y, z) triples.
std::vector<Triple> Ring3d(int x_size, int y_size, int z_size) {
  std::vector<Triple> ring;
  if (x_size == 1 && y_size == 1) {
    for (int i = 0; i < z_size; ++i) ring.push_back({0, 0, i});
    return ring;
  }
  if (x_size == 1 && z_size == 1) {
    for (int i = 0; i < y_size; ++i) ring.push_back({0, i, 0});
    return ring;
  }
  if (y_size == 1 && z_size == 1) {
    for (int i = 0; i < x_size; ++i) ring.push_back({i, 0, 0});
    return ring;
  }
  const auto odd = [](int s) { return s > 1 && s % 2 != 0; };
  if (odd(x_size) || odd(y_size) || odd(z_size)) {
    for (int z = 0; z < z_size; ++z) {
      for (int y = 0; y < y_size; ++y) {
        for (int x = 0; x < x_size; ++x) ring.push_back({x, y, z});
      }
    }
    return ring;
  }
  ring.push_back({0, 0, 0});
  if (z_size == 1) {
    for (const Triple& t : OpenRing2d(x_size, y_size, 0)) ring.push_back(t);
    return ring;
  }
  if (y_size == 1) {
    // The 2-D ring over (x, z): its second coordinate is z.
    for (const Triple& t : OpenRing2d(x_size, z_size, 0))
      ring.push_back({t[0], 0, t[1]});
    return ring;
  }
  if (x_size == 1) {
    // The 2-D ring over (y, z).
    for (const Triple& t : OpenRing2d(y_size, z_size, 0))
      ring.push_back({0, t[0], t[1]});
    return ring;
  }
  for (int i = 0; i < z_size; ++i) {
    std::vector<Triple> plane = OpenRing2d(x_size, y_size, i);
    if (i % 2 != 0) std::reverse(plane.begin(), plane.end());
    for (const Triple& t : plane) ring.push_back(t);
  }
  for (int i = z_size - 1; i > 0; --i) ring.push_back({0, 0, i});
  return ring;
}

long long Product(absl::Span<const int> v) {
  long long p = 1;
  for (int x : v) p *= x;
  return p;
}

}  // namespace

DeviceAssignment::DeviceAssignment(Topology topology,
                                   CoreAssignment core_assignment,
                                   int num_cores_per_replica)
    : topology_(std::move(topology)),
      core_assignment_(std::move(core_assignment)),
      num_cores_per_replica_(num_cores_per_replica) {}

absl::StatusOr<DeviceAssignment> DeviceAssignment::Create(
    Topology topology, CoreAssignment core_assignment) {
  const size_t cores = core_assignment.empty() ? 0 : core_assignment[0].size();
  bool rank3 = cores > 0;
  for (const auto& replica : core_assignment)
    rank3 = rank3 && replica.size() == cores;
  if (!rank3) {
    std::string shape =
        core_assignment.empty()
            ? "(0,)"
            : absl::StrCat("(", core_assignment.size(), ", ", cores, ", ...)");
    return absl::InvalidArgumentError(absl::StrCat(
        "core_assignment must be a rank 3 numpy array, got shape ", shape,
        " (every replica needs the same number >= 1 of logical cores)"));
  }
  const size_t rank = topology.mesh_rank();
  for (size_t r = 0; r < core_assignment.size(); ++r) {
    for (size_t k = 0; k < cores; ++k) {
      if (core_assignment[r][k].size() != rank) {
        return absl::InvalidArgumentError(
            absl::StrCat("minor dimension of core_assignment must have size "
                         "equal to topology rank (",
                         rank, "), got ", core_assignment[r][k].size(),
                         " at replica ", r, " logical core ", k));
      }
    }
  }
  DeviceAssignment assignment(std::move(topology), std::move(core_assignment),
                              static_cast<int>(cores));
  TPUSIM_RETURN_IF_ERROR(assignment.Index());
  return assignment;
}

absl::Status DeviceAssignment::Index() {
  tasks_.assign(core_assignment_.size(),
                std::vector<int>(num_cores_per_replica_, -1));
  ordinals_ = tasks_;
  for (size_t r = 0; r < core_assignment_.size(); ++r) {
    for (int k = 0; k < num_cores_per_replica_; ++k) {
      const std::vector<int>& c = core_assignment_[r][k];
      absl::StatusOr<int> task = topology_.TaskOrdinalAtCoordinates(c);
      if (!task.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("core_assignment replica ", r, " logical core ", k,
                         ": ", task.status().message()));
      }
      if (*task < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "core_assignment replica ", r, " logical core ", k,
            ": no TPU device at coordinates ", Coords(c), " (missing device)"));
      }
      tasks_[r][k] = *task;
      ordinals_[r][k] = *topology_.TpuDeviceOrdinalAtCoordinates(c);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceAssignment> DeviceAssignment::Build(
    const Topology& topology, std::vector<int> computation_shape,
    std::vector<int> computation_stride, int num_replicas) {
  const int rank = topology.mesh_rank();
  const std::vector<int>& mesh = topology.mesh_shape();
  if (computation_shape.empty()) computation_shape.assign(rank, 1);
  if (computation_stride.empty()) computation_stride.assign(rank, 1);
  if (static_cast<int>(computation_shape.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("computation_shape must have shape [", rank, "]; got ",
                     NpShape1(computation_shape.size())));
  }
  if (static_cast<int>(computation_stride.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("computation_stride must have shape [", rank, "]; got ",
                     NpShape1(computation_stride.size())));
  }
  if (std::any_of(computation_shape.begin(), computation_shape.end(),
                  [](int s) { return s < 1; })) {
    return absl::InvalidArgumentError(absl::StrCat(
        "computation_shape must be positive; got computation_shape=",
        NpArray(computation_shape)));
  }
  if (std::any_of(computation_stride.begin(), computation_stride.end(),
                  [](int s) { return s < 1; })) {
    return absl::InvalidArgumentError(absl::StrCat(
        "computation_stride must be positive; got computation_stride=",
        NpArray(computation_stride)));
  }

  // The physical size of one computation instance.
  std::vector<int> footprint(rank);
  bool fits = true;
  for (int d = 0; d < rank; ++d) {
    const long long f =
        static_cast<long long>(computation_shape[d]) * computation_stride[d];
    fits = fits && f <= mesh[d];
    footprint[d] = static_cast<int>(std::min<long long>(f, 1LL << 30));
  }
  if (!fits) {
    return absl::InvalidArgumentError(
        absl::StrCat("computation footprint ", NpArray(footprint),
                     " does not fit in TPU topology shape ", NpArray(mesh)));
  }
  std::vector<int> replica_counts(rank);
  for (int d = 0; d < rank; ++d) {
    replica_counts[d] = (mesh[d] / footprint[d]) * computation_stride[d];
  }
  const long long max_replicas = Product(replica_counts);
  if (num_replicas > max_replicas) {
    return absl::InvalidArgumentError(absl::StrCat(
        "requested ", num_replicas, " replicas but only ", max_replicas,
        " replicas with shape ", NpArray(computation_shape),
        " and computation_stride ", NpArray(computation_stride),
        " fit in a TPU mesh of shape ", NpArray(mesh)));
  }
  if (num_replicas < 0) {
    // numpy: "negative dimensions are not allowed" when sizing the replica
    // offsets.
    return absl::InvalidArgumentError(
        absl::StrCat("num_replicas must be >= 0; got ", num_replicas));
  }
  const int cores_per_replica = static_cast<int>(Product(computation_shape));
  CoreAssignment assignment;
  assignment.reserve(num_replicas);

  // TF 2.3+ (rank 4): a topology with holes is assigned in task order.
  if (rank == 4 && !topology.missing_devices().empty()) {
    if (Product(computation_stride) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("computation_stride must be all ones on a topology with "
                       "missing devices; got ",
                       NpArray(computation_stride)));
    }
    const long long needed =
        static_cast<long long>(num_replicas) * cores_per_replica;
    if (needed > topology.num_devices()) {
      return absl::InvalidArgumentError(
          absl::StrCat("num_replicas (", num_replicas,
                       ") * cores per replica (", cores_per_replica,
                       ") = ", needed, " exceeds the ", topology.num_devices(),
                       " devices of a topology with missing devices"));
    }
    if (num_replicas == 0) {
      // TF 2.21 builds the empty list into a (0,)-shaped array and its
      // constructor rejects it (seen by tests/conformance/); a full mesh
      // reshapes to (0, K, rank) instead and gives an empty assignment.
      return absl::InvalidArgumentError(
          "core_assignment must be a rank 3 numpy array, got shape (0,) "
          "(num_replicas=0 on a topology with missing devices)");
    }
    const int per_task = topology.num_tpus_per_task();
    for (int r = 0; r < num_replicas; ++r) {
      std::vector<std::vector<int>> replica;
      for (int k = 0; k < cores_per_replica; ++k) {
        const int logical_id = r * cores_per_replica + k;
        replica.push_back(topology.device_coordinates()[logical_id / per_task]
                                                       [logical_id % per_task]);
      }
      assignment.push_back(std::move(replica));
    }
    DeviceAssignment result(topology, std::move(assignment), cores_per_replica);
    TPUSIM_RETURN_IF_ERROR(result.Index());
    return result;
  }

  // Replica grid: as close to an equal cube as possible, most constrained
  // dimension first.
  std::vector<int> replica_shape(rank, 0);
  if (num_replicas > 0) {
    // Visit order: replica count ascending; ties: TF 2.2 (rank 3) visits the
    // higher dimension index first, TF 2.3+ (rank 4) visits the core dimension
    // first, then x, y, z.
    std::vector<std::pair<int, int>>
        order;  // (count, tie key); the key maps back to a dim
    for (int d = 0; d < rank; ++d) {
      order.push_back({replica_counts[d], rank == 4 ? (d + 1) % rank : -d});
    }
    std::sort(order.begin(), order.end());
    long long remaining = num_replicas;
    int remaining_dims = rank;
    for (const auto& [count, key] : order) {
      const int d = rank == 4 ? (key + rank - 1) % rank : -key;
      // Python: int(math.ceil(remaining ** (1.0 / remaining_dims))) in IEEE
      // doubles.
      const double root =
          std::pow(static_cast<double>(remaining), 1.0 / remaining_dims);
      const long long target = static_cast<long long>(std::ceil(root));
      replica_shape[d] = static_cast<int>(std::min<long long>(target, count));
      remaining = (remaining + replica_shape[d] - 1) / replica_shape[d];
      --remaining_dims;
    }
    if (remaining != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "replica grid search left ", remaining, " replicas unplaced for ",
          num_replicas, " replicas in replica counts ",
          NpArray(replica_counts)));
    }
  }

  const bool full_unit =
      Product(computation_stride) == 1 && num_replicas == max_replicas;
  if (rank == 3 && computation_shape[2] == 2 && full_unit) {
    // TF 2.2 2-D tiling: replicas along a ring over the (x, y) replica grid.
    const std::vector<Pair> inner =
        Ring2d(computation_shape[0], computation_shape[1]);
    const std::vector<Pair> outer = Ring2d(replica_shape[0], replica_shape[1]);
    if (static_cast<size_t>(num_replicas) > outer.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "2-D tiling ring has ", outer.size(), " positions for ", num_replicas,
          " replicas (replica shape ", NpArray(replica_shape), ")"));
    }
    for (int r = 0; r < num_replicas; ++r) {
      std::vector<std::vector<int>> replica;
      for (int k = 0; k < cores_per_replica; ++k) {
        const Pair& in = inner[k / 2];
        replica.push_back({outer[r][0] * computation_shape[0] + in[0],
                           outer[r][1] * computation_shape[1] + in[1], k % 2});
      }
      assignment.push_back(std::move(replica));
    }
  } else if (rank == 4 && computation_shape[3] == mesh[3] && full_unit) {
    // TF 2.3+ 3-D tiling: replicas along a ring over the (x, y, z) replica
    // grid. The condition is TF's `computation_shape[-1] == mesh_shape[-1]`
    // (the whole core dimension; read in TF 2.21's device_assignment.py and
    // checked by tests/conformance/): on a megacore mesh (core dimension 1,
    // v4/v5p) full replication takes the ring too. Logical core k sits at
    // inner ring position k div mesh[3], core k mod mesh[3].
    const std::vector<Triple> inner = Ring3d(
        computation_shape[0], computation_shape[1], computation_shape[2]);
    const std::vector<Triple> outer =
        Ring3d(replica_shape[0], replica_shape[1], replica_shape[2]);
    if (static_cast<size_t>(num_replicas) > outer.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "3-D tiling ring has ", outer.size(), " positions for ", num_replicas,
          " replicas (replica shape ", NpArray(replica_shape), ")"));
    }
    for (int r = 0; r < num_replicas; ++r) {
      std::vector<std::vector<int>> replica;
      for (int k = 0; k < cores_per_replica; ++k) {
        const Triple& in = inner[k / mesh[3]];
        replica.push_back({outer[r][0] * computation_shape[0] + in[0],
                           outer[r][1] * computation_shape[1] + in[1],
                           outer[r][2] * computation_shape[2] + in[2],
                           k % mesh[3]});
      }
      assignment.push_back(std::move(replica));
    }
  } else {
    // General branch. The logical cores of one replica: the block {0, stride,
    // 2*stride, ...} per dimension, row-major (last dimension fastest).
    std::vector<std::vector<int>> block;
    std::vector<int> index(rank, 0);
    for (int k = 0; k < cores_per_replica; ++k) {
      std::vector<int> c(rank);
      for (int d = 0; d < rank; ++d) c[d] = index[d] * computation_stride[d];
      block.push_back(std::move(c));
      for (int d = rank - 1; d >= 0; --d) {
        if (++index[d] < computation_shape[d]) break;
        index[d] = 0;
      }
    }
    // Digit order of the replica number, least significant first: TF 2.2 the
    // last dimension (core) up to x; TF 2.3+ the core, then x, y, z.
    std::vector<int> digit_dims;
    if (rank == 4) {
      digit_dims = {3, 0, 1, 2};
    } else {
      for (int d = rank - 1; d >= 0; --d) digit_dims.push_back(d);
    }
    for (int r = 0; r < num_replicas; ++r) {
      std::vector<int> pos(rank);
      int t = r;
      for (int d : digit_dims) {
        pos[d] = t % replica_shape[d];
        t /= replica_shape[d];
      }
      std::vector<int> offset(rank);
      for (int d = 0; d < rank; ++d) {
        offset[d] = (pos[d] / computation_stride[d]) * footprint[d] +
                    pos[d] % computation_stride[d];
      }
      std::vector<std::vector<int>> replica;
      for (const std::vector<int>& b : block) {
        std::vector<int> c(rank);
        for (int d = 0; d < rank; ++d) c[d] = b[d] + offset[d];
        replica.push_back(std::move(c));
      }
      assignment.push_back(std::move(replica));
    }
  }
  DeviceAssignment result(topology, std::move(assignment), cores_per_replica);
  TPUSIM_RETURN_IF_ERROR(result.Index());
  return result;
}

absl::StatusOr<DeviceAssignment> DeviceAssignment::BuildFromSerialized(
    absl::string_view serialized_topology, std::vector<int> computation_shape,
    std::vector<int> computation_stride, int num_replicas) {
  TPUSIM_ASSIGN_OR_RETURN(Topology topology,
                          Topology::FromSerialized(serialized_topology));
  return Build(topology, std::move(computation_shape),
               std::move(computation_stride), num_replicas);
}

const std::vector<int>& DeviceAssignment::coordinates(int replica,
                                                      int logical_core) const {
  TPUSIM_CHECK(replica >= 0 && replica < num_replicas() && logical_core >= 0 &&
               logical_core < num_cores_per_replica_)
      << "replica " << replica << " logical core " << logical_core;
  return core_assignment_[replica][logical_core];
}

absl::Status DeviceAssignment::CheckIndices(int replica,
                                            int logical_core) const {
  if (replica < 0 || replica >= num_replicas()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replica ", replica, " is out of range [0, ", num_replicas(), ")"));
  }
  if (logical_core < 0 || logical_core >= num_cores_per_replica_) {
    return absl::InvalidArgumentError(
        absl::StrCat("logical_core ", logical_core, " is out of range [0, ",
                     num_cores_per_replica_, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> DeviceAssignment::TpuOrdinal(int replica,
                                                 int logical_core) const {
  TPUSIM_RETURN_IF_ERROR(CheckIndices(replica, logical_core));
  return ordinals_[replica][logical_core];
}

absl::StatusOr<int> DeviceAssignment::Task(int replica,
                                           int logical_core) const {
  TPUSIM_RETURN_IF_ERROR(CheckIndices(replica, logical_core));
  return tasks_[replica][logical_core];
}

absl::StatusOr<std::string> DeviceAssignment::HostDevice(
    int replica, int logical_core, absl::string_view job) const {
  TPUSIM_RETURN_IF_ERROR(CheckIndices(replica, logical_core));
  return HostDeviceName(job, tasks_[replica][logical_core]);
}

absl::StatusOr<std::string> DeviceAssignment::TpuDevice(
    int replica, int logical_core, absl::string_view job) const {
  TPUSIM_RETURN_IF_ERROR(CheckIndices(replica, logical_core));
  return TpuDeviceName(job, tasks_[replica][logical_core],
                       ordinals_[replica][logical_core]);
}

absl::StatusOr<std::vector<int>> DeviceAssignment::LookupReplicas(
    int task_id, int logical_core) const {
  std::vector<int> replicas;
  if (logical_core >= 0 && logical_core < num_cores_per_replica_) {
    for (int r = 0; r < num_replicas(); ++r) {
      if (tasks_[r][logical_core] == task_id) replicas.push_back(r);
    }
  }
  if (replicas.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Can not find any replica in task: ", task_id,
                     " contains logical_core: ", logical_core));
  }
  return replicas;
}

absl::StatusOr<std::vector<std::vector<int>>>
DeviceAssignment::ReplicaDeviceIds(
    absl::Span<const runtime::DeviceDescription> devices) const {
  std::map<std::vector<int>, const runtime::DeviceDescription*> by_coords;
  for (const runtime::DeviceDescription& d : devices)
    by_coords.emplace(d.coords, &d);
  std::vector<std::vector<int>> ids(num_replicas());
  for (int r = 0; r < num_replicas(); ++r) {
    for (int k = 0; k < num_cores_per_replica_; ++k) {
      const std::vector<int>& c = core_assignment_[r][k];
      auto it = by_coords.find(c);
      if (it == by_coords.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("replica ", r, " logical core ", k,
                         ": no backend device at coordinates ", Coords(c)));
      }
      const runtime::DeviceDescription& d = *it->second;
      if (d.task != tasks_[r][k] || d.ordinal != ordinals_[r][k]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "replica ", r, " logical core ", k, ": backend device ", d.id,
            " at ", Coords(c), " is task ", d.task, " ordinal ", d.ordinal,
            " but the topology says task ", tasks_[r][k], " ordinal ",
            ordinals_[r][k]));
      }
      ids[r].push_back(d.id);
    }
  }
  return ids;
}

}  // namespace tpusim::strategy
