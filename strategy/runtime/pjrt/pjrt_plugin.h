// strategy/runtime/pjrt/pjrt_plugin.h
//
// Loading a PJRT C API plugin (a shared object exporting GetPjrtApi: XLA's CPU
// plugin, libtpu, ...) and calling into it safely.
//
//   TPUSIM_ASSIGN_OR_RETURN(PjrtPlugin* plugin, PjrtPlugin::Load(path));
//   TPUSIM_RETURN_IF_ERROR(plugin->Require("PJRT_Client_Create",
//                                          TPUSIM_PJRT_FN_OFFSET(PJRT_Client_Create)));
//
// Contract:
//  * Load dlopens the file with RTLD_LOCAL (a plugin carries its own Abseil and
//    protobuf), calls GetPjrtApi and checks the API version: the major version
//    must equal the header's (else FailedPrecondition naming both); any minor
//    version loads, and Require() checks, before each call, that the function
//    is inside the plugin's PJRT_Api (PJRT_Api.struct_size) and set.
//  * Before the first load, TF_CPP_MIN_LOG_LEVEL is set to 1 unless the user
//    set it (XLA's plugins would print INFO lines on stderr).
//  * A plugin is loaded and initialised (PJRT_Plugin_Initialize) once per
//    process per path and never unloaded (XLA plugins do not support
//    dlclose); Load returns the same object for the same path.
//  * Errors: NotFound for a missing file; InvalidArgument for a file that is
//    not a loadable shared object or has no GetPjrtApi; every PJRT_Error
//    becomes an absl::Status with the plugin's code and message (ToStatus),
//    and a plugin's rejection of an argument struct's size names both API
//    versions and says "install a matching plugin or header".
//  * Live-object counters (clients, buffers, executables, events) let tests
//    check that every object the plugin made was destroyed: ASan cannot see
//    inside the plugin.
//
// Only this file and the backend's .cc include pjrt_c_api.h (found at configure
// time in the installed xla-cpu-pjrt wheel; never copied into the repository).

#ifndef TPUSIM_STRATEGY_RUNTIME_PJRT_PJRT_PLUGIN_H_
#define TPUSIM_STRATEGY_RUNTIME_PJRT_PJRT_PLUGIN_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pjrt_c_api.h"  // the installed wheel's header (TPUSIM_PJRT_INCLUDE_DIR)

namespace tpusim::runtime::pjrt {

// The byte offset of function `name` in PJRT_Api (for PjrtPlugin::Require).
#define TPUSIM_PJRT_FN_OFFSET(name) offsetof(PJRT_Api, name)

// The PJRT C API version this build was compiled against (the header's).
int HeaderApiMajor();
int HeaderApiMinor();

class PjrtPlugin {
 public:
  PjrtPlugin(const PjrtPlugin&) = delete;
  PjrtPlugin& operator=(const PjrtPlugin&) = delete;

  // See the file comment. The returned pointer lives for the process.
  static absl::StatusOr<PjrtPlugin*> Load(const std::string& path);

  const PJRT_Api* api() const { return api_; }
  const std::string& path() const { return path_; }
  int major_version() const { return major_; }
  int minor_version() const { return minor_; }
  // The plugin's attributes (PJRT_Plugin_Attributes), as text: "xla_version",
  // "stablehlo_current_version" ("1.8.0"), ... Empty when the plugin has none.
  const std::map<std::string, std::string>& attributes() const {
    return attributes_;
  }

  // OK when the function at byte `offset` of PJRT_Api is inside the plugin's
  // table and set; otherwise Unimplemented naming the function and both API
  // versions.
  absl::Status Require(absl::string_view name, size_t offset) const;

  // Converts (and destroys) `error`: OK for nullptr; otherwise a status with
  // the plugin's code and "<what>: <plugin message>".
  absl::Status ToStatus(PJRT_Error* error, absl::string_view what) const;

  // Awaits and destroys `event` (nullptr: OK).
  absl::Status AwaitAndDestroy(PJRT_Event* event, absl::string_view what);

  // Live objects made by this plugin through tpusim (created minus destroyed).
  std::atomic<int64_t> live_clients{0};
  std::atomic<int64_t> live_buffers{0};
  std::atomic<int64_t> live_executables{0};
  std::atomic<int64_t> live_events{0};

  // "PJRT C API 0.81 (plugin) / 0.81 (tpusim's header)".
  std::string VersionString() const;

 private:
  PjrtPlugin() = default;
  std::string path_;
  const PJRT_Api* api_ = nullptr;
  int major_ = 0;
  int minor_ = 0;
  std::map<std::string, std::string> attributes_;
};

}  // namespace tpusim::runtime::pjrt

#endif  // TPUSIM_STRATEGY_RUNTIME_PJRT_PJRT_PLUGIN_H_
