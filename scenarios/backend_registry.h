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
// "pjrt": PjrtBackend on a PJRT C API plugin (built when TPUSIM_PJRT found the
//         header; TPUSIM_HAVE_PJRT is then defined for dependents): the slice
//         gives the device layout, plugin device i runs slice device i.

#ifndef TPUSIM_SCENARIOS_BACKEND_REGISTRY_H_
#define TPUSIM_SCENARIOS_BACKEND_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/runtime/backend.h"

namespace tpusim::scenarios {

// The registered names, in order: "host", "sim", and "pjrt" when built.
std::vector<std::string> BackendNames();

struct BackendOptions {
  // "pjrt": the plugin; "" = pjrt::DefaultPjrtPluginPath() ($TPUSIM_PJRT_PLUGIN
  // or the CPU plugin found at configure time). A plugin whose file name
  // starts with "libtpu" is created without options, after checking that
  // the machine has a TPU (FailedPrecondition otherwise, without loading
  // it); any other gets cpu_device_count = the slice's device count (XLA's
  // CPU plugin).
  std::string pjrt_plugin;
};

// A backend `name` for slice `slice` (a slice name, runtime::ParseSlice).
// InvalidArgument for an unknown name (listing the known ones) or a bad slice;
// the backend's own errors (FailedPrecondition for a second "sim").
absl::StatusOr<std::unique_ptr<runtime::Backend>> CreateBackend(
    absl::string_view name, absl::string_view slice,
    const BackendOptions& options);
absl::StatusOr<std::unique_ptr<runtime::Backend>> CreateBackend(
    absl::string_view name, absl::string_view slice);

}  // namespace tpusim::scenarios

#endif  // TPUSIM_SCENARIOS_BACKEND_REGISTRY_H_
