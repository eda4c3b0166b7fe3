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
