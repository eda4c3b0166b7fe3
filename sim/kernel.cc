#include "sim/kernel.h"

#include <exception>
#include <systemc>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tpusim::sim {

absl::Status ClaimKernel() {
  static bool claimed = false;  // one elaboration per process (SystemC 2.3)
  if (claimed) {
    return absl::FailedPreconditionError(
        "a SystemC kernel was already elaborated in this process; run one pod "
        "per process");
  }
  claimed = true;
  return absl::OkStatus();
}

absl::StatusOr<common::Picoseconds> RunKernel(
    const std::function<absl::Status()>& elaborate,
    std::optional<common::Picoseconds> limit) {
  TPUSIM_RETURN_IF_ERROR(ClaimKernel());
  try {
    sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
    TPUSIM_RETURN_IF_ERROR(elaborate());
    if (limit.has_value()) {
      sc_core::sc_start(sc_core::sc_time(static_cast<double>(limit->count()),
                                         sc_core::SC_PS));
    } else {
      sc_core::sc_start();
    }
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    return common::Picoseconds(static_cast<int64_t>(now.value()));
  } catch (const sc_core::sc_report& report) {
    return absl::InternalError(absl::StrCat("SystemC error: ", report.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("exception in the SystemC kernel: ", e.what()));
  }
}

}  // namespace tpusim::sim
