// sim/kernel.h
//
// The one entry point through which tpusim runs a SystemC kernel. SystemC 2.3
// allows one elaboration and simulation per process (systemc-notes.md §3), so
// the first kernel claims the process and any later one returns
// FailedPrecondition instead of failing deep inside SystemC. SystemC errors
// (which SystemC throws) are caught here and returned as Status, so no SystemC
// exception leaves sim/.
//
// One-shot run:
//
//   absl::StatusOr<Picoseconds> end = RunKernel([&]() -> absl::Status {
//     pod = std::make_unique<Pod>("pod", spec);   // elaborate modules
//     return absl::OkStatus();
//   }, /*limit=*/std::nullopt);
//
// Steppable session (elaborate once, then advance in increments; no module may
// be added after the first step, which SystemC itself enforces):
//
//   TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<KernelSession> session,
//                           KernelSession::Create(elaborate));
//   ... start work from outside any process (e.g. notify events) ...
//   TPUSIM_ASSIGN_OR_RETURN(Picoseconds now, session->RunUntilIdle());
//   TPUSIM_ASSIGN_OR_RETURN(now, session->RunFor(Picoseconds(1'000'000)));

#ifndef TPUSIM_SIM_KERNEL_H_
#define TPUSIM_SIM_KERNEL_H_

#include <functional>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/units.h"

namespace tpusim::sim {

// Claims this process's SystemC kernel. FailedPrecondition when it was claimed
// before.
absl::Status ClaimKernel();

// An elaborated SystemC kernel that is advanced step by step. At most one per
// process (it claims the kernel). Not copyable; destroying it does not end the
// simulation (SystemC cannot be restarted anyway).
class KernelSession {
 public:
  // Claims the kernel, sets the time resolution to 1 ps (simulated time is
  // integer picoseconds) and runs `elaborate`, which constructs the modules.
  // Errors: FailedPrecondition if a kernel was already claimed; the status of
  // `elaborate`; Internal carrying SystemC's message if SystemC reports an
  // error while elaborating.
  static absl::StatusOr<std::unique_ptr<KernelSession>> Create(
      const std::function<absl::Status()>& elaborate);

  KernelSession(const KernelSession&) = delete;
  KernelSession& operator=(const KernelSession&) = delete;

  // Simulated time now.
  common::Picoseconds Now() const;
  // True while some event is scheduled (sc_pending_activity).
  bool HasPendingActivity() const;

  // Simulates `duration` more picoseconds (>= 0); time advances by exactly
  // `duration` even when nothing happens. Returns the time at the end.
  // InvalidArgument for a negative duration; Internal for a SystemC error
  // (the session is then unusable and every later call returns it again).
  absl::StatusOr<common::Picoseconds> RunFor(common::Picoseconds duration);
  // Simulates until no event is pending, and returns the time of the last
  // activity (time does not advance past it). Same errors as RunFor.
  absl::StatusOr<common::Picoseconds> RunUntilIdle();

  // Called from inside the simulation (a process or a callback it runs): the
  // current RunFor / RunUntilIdle returns at the end of this delta cycle, at
  // the current time (sc_pause). The next call resumes from there.
  void Pause();

 private:
  KernelSession() = default;
  absl::StatusOr<common::Picoseconds> Run(
      std::optional<common::Picoseconds> duration);

  absl::Status failed_ = absl::OkStatus();
  bool started_ = false;
};

// Claims the kernel, elaborates with `elaborate`, then simulates until no
// event is pending or until `limit` of simulated time has passed, and returns
// the simulated time at the end. Built on KernelSession.
//
// Contract:
// - FailedPrecondition if a kernel was already claimed in this process;
// - the status of `elaborate` if it fails (nothing is simulated);
// - Internal carrying SystemC's message if SystemC reports an error while
//   elaborating or simulating.
absl::StatusOr<common::Picoseconds> RunKernel(
    const std::function<absl::Status()>& elaborate,
    std::optional<common::Picoseconds> limit);

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_KERNEL_H_
