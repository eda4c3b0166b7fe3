#include "strategy/runtime/backend.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tpusim::runtime {

std::string Device::DebugString() const {
  return absl::StrCat("device ", id(), " (task ", task(), ", TPU:", ordinal(),
                      ", coords (", absl::StrJoin(coords(), ","), "), ", kind(),
                      ")");
}

absl::Status ValidateTransferOptions(const TransferOptions& options) {
  if (options.host_cost.count() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TransferToDevice: host_cost=", options.host_cost.count(),
        "ps: the host CPU time of a value must be >= 0"));
  }
  return absl::OkStatus();
}

absl::Status CheckSpmdCall(
    const Backend& backend, const Program& program, int replicas, int cores,
    const SpmdAssignment& assignment,
    absl::Span<const std::vector<Buffer*>> per_replica_args,
    const std::function<absl::Status(const Buffer&)>& owned) {
  const std::string where = absl::StrCat("ExecuteSpmd ", program.name());
  const int num_devices = static_cast<int>(backend.devices().size());
  if (assignment.num_replicas() != replicas) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": the assignment has ", assignment.num_replicas(),
        " replicas, the executable needs ", replicas));
  }
  std::vector<bool> used(num_devices, false);
  for (int r = 0; r < replicas; ++r) {
    const std::vector<int>& devs = assignment.replica_devices[r];
    if (static_cast<int>(devs.size()) != cores) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": replica ", r, " has ", devs.size(),
                       " devices, needs ", cores, " (num_cores_per_replica)"));
    }
    for (int d : devs) {
      if (d < 0 || d >= num_devices) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": replica ", r, ": device ", d, " does not exist; the ",
            backend.name(), " backend has ", num_devices, " devices"));
      }
      if (used[d]) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": device ", d, " is assigned twice (replica ", r, ")"));
      }
      used[d] = true;
    }
  }
  const std::vector<Value>& params = program.parameters();
  if (static_cast<int>(per_replica_args.size()) != replicas) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": got arguments for ", per_replica_args.size(),
                     " replicas, needs ", replicas));
  }
  for (int r = 0; r < replicas; ++r) {
    const std::vector<Buffer*>& args = per_replica_args[r];
    if (args.size() != params.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": replica ", r, " passes ", args.size(),
          " arguments, the program has ", params.size(), " parameters"));
    }
    for (size_t p = 0; p < params.size(); ++p) {
      if (args[p] == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": replica ", r, " argument ", p, " is null"));
      }
      const Buffer& b = *args[p];
      if (absl::Status s = owned(b); !s.ok()) {
        return absl::Status(s.code(), absl::StrCat(where, ": replica ", r,
                                                   " argument ", p, ": ",
                                                   s.message()));
      }
      const ValueType& want = program.type(params[p]);
      const TensorSpec& got = b.spec();
      bool ok = got.dtype == want.dtype && got.shape.rank() == want.rank();
      for (int d = 0; ok && d < want.rank(); ++d) {
        ok = want.is_dynamic(d) ? got.shape.dim(d) <= want.shape.dim(d)
                                : got.shape.dim(d) == want.shape.dim(d);
      }
      if (!ok) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": replica ", r, " argument ", p, " is ",
                         got.ToString(), ", the parameter is ", want.ToString(),
                         " (dynamic dims may be smaller)"));
      }
      const int core = program.op(params[p]).logical_core;
      const int want_dev = assignment.replica_devices[r][core];
      if (b.device().id() != want_dev) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": replica ", r, " argument ", p, " lives on device ",
            b.device().id(), ", the parameter runs on device ", want_dev,
            " (logical core ", core, ")"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SpmdOutputs> Backend::ExecuteSpmdLoop(
    const Executable& executable, const SpmdAssignment& assignment,
    absl::Span<const std::vector<std::vector<Buffer*>>> per_iteration_args) {
  if (per_iteration_args.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name(), ": ExecuteSpmdLoop of program ", executable.program().name(),
        " needs at least one iteration"));
  }
  SpmdOutputs last;
  for (size_t k = 0; k < per_iteration_args.size(); ++k) {
    absl::StatusOr<SpmdOutputs> out =
        ExecuteSpmd(executable, assignment, per_iteration_args[k]);
    if (!out.ok()) {
      return absl::Status(out.status().code(),
                          absl::StrCat("iteration ", k, ": ",
                                       out.status().message()));
    }
    last = std::move(*out);
  }
  return last;
}

}  // namespace tpusim::runtime
