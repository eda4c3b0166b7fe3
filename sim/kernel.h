// sim/kernel.h
//
// The one entry point through which tpusim runs a SystemC kernel. SystemC 2.3
// allows one elaboration and simulation per process (systemc-notes.md §3), so
// the first RunKernel claims the process's kernel and any later one returns
// FailedPrecondition instead of failing deep inside SystemC. SystemC errors
// (which SystemC throws) are caught here and returned as Status, so no SystemC
// exception leaves sim/.
//
//   absl::StatusOr<Picoseconds> end = RunKernel([&]() -> absl::Status {
//     pod = std::make_unique<Pod>("pod", spec);   // elaborate modules
//     return absl::OkStatus();
//   }, /*limit=*/std::nullopt);

#ifndef TPUSIM_SIM_KERNEL_H_
#define TPUSIM_SIM_KERNEL_H_

#include <functional>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/units.h"

namespace tpusim::sim {

// Claims this process's SystemC kernel. FailedPrecondition when it was claimed
// before.
absl::Status ClaimKernel();

// Claims the kernel, sets the time resolution to 1 ps (simulated time is
// integer picoseconds), runs `elaborate` (which constructs the modules and may
// fail), then simulates until no event is pending or until `limit` of simulated
// time has passed. Returns the simulated time at the end.
//
// Contract:
// - FailedPrecondition if a kernel was already claimed in this process;
// - the status of `elaborate` if it fails (nothing is simulated);
// - Internal carrying SystemC's message if SystemC reports an error while
// elaborating or
//   simulating.
absl::StatusOr<common::Picoseconds> RunKernel(
    const std::function<absl::Status()>& elaborate,
    std::optional<common::Picoseconds> limit);

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_KERNEL_H_
