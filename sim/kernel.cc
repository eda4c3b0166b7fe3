#include "sim/kernel.h"

#include <exception>
#include <systemc>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tpusim::sim {
namespace {

// Runs `body`, turning SystemC reports and other exceptions into Internal.
absl::Status CatchSystemC(const std::function<absl::Status()>& body) {
  try {
    return body();
  } catch (const sc_core::sc_report& report) {
    return absl::InternalError(absl::StrCat("SystemC error: ", report.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("exception in the SystemC kernel: ", e.what()));
  }
}

}  // namespace

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

absl::StatusOr<std::unique_ptr<KernelSession>> KernelSession::Create(
    const std::function<absl::Status()>& elaborate) {
  TPUSIM_RETURN_IF_ERROR(ClaimKernel());
  TPUSIM_RETURN_IF_ERROR(CatchSystemC([&]() -> absl::Status {
    sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
    return elaborate();
  }));
  return std::unique_ptr<KernelSession>(new KernelSession());
}

common::Picoseconds KernelSession::Now() const {
  return common::Picoseconds(
      static_cast<int64_t>(sc_core::sc_time_stamp().value()));
}

bool KernelSession::HasPendingActivity() const {
  return sc_core::sc_pending_activity();
}

absl::StatusOr<common::Picoseconds> KernelSession::RunFor(
    common::Picoseconds duration) {
  if (duration.count() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel step of ", duration.count(), " ps: must be >= 0"));
  }
  return Run(duration);
}

void KernelSession::Pause() { sc_core::sc_pause(); }

absl::StatusOr<common::Picoseconds> KernelSession::RunUntilIdle() {
  return Run(std::nullopt);
}

absl::StatusOr<common::Picoseconds> KernelSession::Run(
    std::optional<common::Picoseconds> duration) {
  TPUSIM_RETURN_IF_ERROR(failed_);
  // SystemC warns (W571) about a run with nothing to do; after the first run
  // (which also initializes the processes) an idle kernel simply stays put.
  if (started_ && !duration.has_value() && !sc_core::sc_pending_activity()) {
    return Now();
  }
  started_ = true;
  absl::Status status = CatchSystemC([&]() -> absl::Status {
    if (duration.has_value()) {
      sc_core::sc_start(sc_core::sc_time::from_value(
          static_cast<sc_dt::uint64>(duration->count())));
    } else {
      sc_core::sc_start();
    }
    return absl::OkStatus();
  });
  if (!status.ok()) {
    failed_ = status;
    return status;
  }
  return Now();
}

absl::StatusOr<common::Picoseconds> RunKernel(
    const std::function<absl::Status()>& elaborate,
    std::optional<common::Picoseconds> limit) {
  TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<KernelSession> session,
                          KernelSession::Create(elaborate));
  if (limit.has_value()) return session->RunFor(*limit);
  return session->RunUntilIdle();
}

}  // namespace tpusim::sim
