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

namespace tpusim::scenarios {
namespace {

using Factory = std::function<absl::StatusOr<std::unique_ptr<runtime::Backend>>(
    absl::string_view slice)>;

const std::vector<std::pair<std::string, Factory>>& Registry() {
  static const auto* registry = new std::vector<std::pair<std::string, Factory>>{
      {"host",
       [](absl::string_view slice)
           -> absl::StatusOr<std::unique_ptr<runtime::Backend>> {
         TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                                 runtime::ParseSlice(slice));
         return std::unique_ptr<runtime::Backend>(
             new runtime::HostBackend(std::move(layout.devices)));
       }},
      {"sim",
       [](absl::string_view slice)
           -> absl::StatusOr<std::unique_ptr<runtime::Backend>> {
         TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<sim::SimBackend> b,
                                 sim::SimBackend::Create(slice));
         return std::unique_ptr<runtime::Backend>(std::move(b));
       }},
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
  for (const auto& [n, factory] : Registry()) {
    if (n == name) return factory(slice);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("backend \"", name, "\" is unknown; known backends: ",
                   absl::StrJoin(BackendNames(), ", ")));
}

}  // namespace tpusim::scenarios
