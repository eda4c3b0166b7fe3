#include "scenarios/backend_registry.h"

#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "sim/sim_backend.h"
#include "strategy/runtime/host_backend.h"
#include "strategy/runtime/slice.h"
#ifdef TPUSIM_HAVE_PJRT
#include "absl/strings/match.h"
#include "strategy/runtime/pjrt/pjrt_backend.h"
#endif

namespace tpusim::scenarios {
namespace {

using Factory = std::function<absl::StatusOr<std::unique_ptr<runtime::Backend>>(
    absl::string_view slice, const BackendOptions& options)>;

const std::vector<std::pair<std::string, Factory>>& Registry() {
  static const auto* registry = new std::vector<std::pair<std::string, Factory>>{
      {"host",
       [](absl::string_view slice, const BackendOptions&)
           -> absl::StatusOr<std::unique_ptr<runtime::Backend>> {
         TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                                 runtime::ParseSlice(slice));
         return std::unique_ptr<runtime::Backend>(
             new runtime::HostBackend(std::move(layout.devices)));
       }},
      {"sim",
       [](absl::string_view slice, const BackendOptions&)
           -> absl::StatusOr<std::unique_ptr<runtime::Backend>> {
         TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<sim::SimBackend> b,
                                 sim::SimBackend::Create(slice));
         return std::unique_ptr<runtime::Backend>(std::move(b));
       }},
#ifdef TPUSIM_HAVE_PJRT
      {"pjrt",
       [](absl::string_view slice, const BackendOptions& options)
           -> absl::StatusOr<std::unique_ptr<runtime::Backend>> {
         TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                                 runtime::ParseSlice(slice));
         runtime::pjrt::PjrtBackendOptions o;
         o.plugin_path = options.pjrt_plugin.empty()
                             ? runtime::pjrt::DefaultPjrtPluginPath()
                             : options.pjrt_plugin;
         const size_t slash = o.plugin_path.find_last_of('/');
         const std::string base = slash == std::string::npos
                                      ? o.plugin_path
                                      : o.plugin_path.substr(slash + 1);
         if (absl::StartsWith(base, "libtpu")) {
           o.requires_tpu = true;
         } else {
           o.cpu_device_count = static_cast<int64_t>(layout.devices.size());
         }
         o.devices = std::move(layout.devices);
         TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<runtime::pjrt::PjrtBackend> b,
                                 runtime::pjrt::PjrtBackend::Create(std::move(o)));
         return std::unique_ptr<runtime::Backend>(std::move(b));
       }},
#endif
  };
  return *registry;
}

}  // namespace

std::vector<std::string> BackendNames() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Registry()) names.push_back(name);
  return names;
}

absl::StatusOr<std::unique_ptr<runtime::Backend>> CreateBackend(
    absl::string_view name, absl::string_view slice) {
  return CreateBackend(name, slice, BackendOptions{});
}

absl::StatusOr<std::unique_ptr<runtime::Backend>> CreateBackend(
    absl::string_view name, absl::string_view slice,
    const BackendOptions& options) {
  for (const auto& [n, factory] : Registry()) {
    if (n == name) return factory(slice, options);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("backend \"", name, "\" is unknown; known backends: ",
                   absl::StrJoin(BackendNames(), ", ")));
}

}  // namespace tpusim::scenarios
