// scenarios/backend_registry.h
//
// The composition root of backends (architecture.md "Ownership and
// construction"): the one place that knows every concrete Backend.
//
//   TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Backend> backend,
//                           CreateBackend("sim", "v4-32"));
//
// "host": HostBackend on the slice's devices (functional, no timing).
// "sim":  SimBackend on the simulated slice (values + timing; one per process).

#ifndef TPUSIM_SCENARIOS_BACKEND_REGISTRY_H_
#define TPUSIM_SCENARIOS_BACKEND_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/runtime/backend.h"

namespace tpusim::scenarios {

// The registered names, in order: "host", "sim".
std::vector<std::string> BackendNames();

// A backend `name` for slice `slice` (a slice name, runtime::ParseSlice).
// InvalidArgument for an unknown name (listing the known ones) or a bad slice;
// the backend's own errors (FailedPrecondition for a second "sim").
absl::StatusOr<std::unique_ptr<runtime::Backend>> CreateBackend(
    absl::string_view name, absl::string_view slice);

}  // namespace tpusim::scenarios

#endif  // TPUSIM_SCENARIOS_BACKEND_REGISTRY_H_
