#include "tools/devices_command.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "scenarios/backend_registry.h"
#ifdef TPUSIM_HAVE_PJRT
#include "strategy/runtime/pjrt/pjrt_backend.h"
#include "strategy/runtime/pjrt/pjrt_plugin.h"
#endif

namespace tpusim::tools {
namespace {

absl::Status RunDevices(const ParsedArgs& args, std::ostream& out) {
  const std::string backend_name = args.Get("backend", "host");
  bool known = false;
  for (const std::string& n : scenarios::BackendNames()) known |= n == backend_name;
  if (!known) {
    return UsageError(absl::StrCat("--backend=", backend_name, " must be one of ",
                                   absl::StrJoin(scenarios::BackendNames(), ", ")));
  }
  const std::string slice = args.Get("slice", "v3-8");
  scenarios::BackendOptions options;
  options.pjrt_plugin = args.Get("pjrt-plugin");
  TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Backend> backend,
                          scenarios::CreateBackend(backend_name, slice, options));
  out << "backend " << backend->name() << ", slice " << slice << ": "
      << backend->devices().size() << " devices\n";
#ifdef TPUSIM_HAVE_PJRT
  const auto* pjrt = dynamic_cast<const runtime::pjrt::PjrtBackend*>(backend.get());
  if (pjrt != nullptr) {
    const runtime::pjrt::PjrtPlugin& plugin = pjrt->plugin();
    out << "plugin " << plugin.path() << "\n  " << plugin.VersionString() << "\n";
    for (const auto& [key, value] : plugin.attributes()) {
      out << "  " << key << ": " << value << "\n";
    }
  }
#endif
  for (size_t i = 0; i < backend->devices().size(); ++i) {
    out << "  " << backend->devices()[i]->DebugString();
#ifdef TPUSIM_HAVE_PJRT
    if (pjrt != nullptr) {
      const runtime::pjrt::PluginDeviceInfo& d = pjrt->plugin_devices()[i];
      out << " -> plugin device " << d.id << " (" << d.kind << ", "
          << d.debug_string << ")";
    }
#endif
    out << "\n";
  }
  return absl::OkStatus();
}

}  // namespace

Subcommand DevicesCommand() {
  Subcommand s;
  s.name = "devices";
  s.summary = "list the devices a backend shows for a slice (pjrt: what the plugin sees)";
  s.usage =
      "tpusim devices [--backend=host|sim|pjrt] [--slice NAME] [--pjrt-plugin PATH]";
  s.flags = {
      {"backend", true, "host (default), sim or pjrt"},
      {"slice", true, "the slice name (default v3-8)"},
      {"pjrt-plugin", true,
       "the PJRT plugin for --backend=pjrt (default: $TPUSIM_PJRT_PLUGIN, else "
       "XLA's CPU plugin found at configure time)"},
  };
  s.run = &RunDevices;
  return s;
}

}  // namespace tpusim::tools
