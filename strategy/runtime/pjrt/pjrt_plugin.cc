#include "strategy/runtime/pjrt/pjrt_plugin.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tpusim::runtime::pjrt {

int HeaderApiMajor() { return PJRT_API_MAJOR; }
int HeaderApiMinor() { return PJRT_API_MINOR; }

namespace {

absl::StatusCode CodeOf(PJRT_Error_Code code) {
  // PJRT's codes are Abseil's canonical codes (pjrt_c_api.h, "Codes are based
  // on https://abseil.io/docs/cpp/guides/status-codes").
  const int c = static_cast<int>(code);
  if (c <= 0 || c > 16) return absl::StatusCode::kUnknown;
  return static_cast<absl::StatusCode>(c);
}

}  // namespace

std::string PjrtPlugin::VersionString() const {
  return absl::StrCat("PJRT C API ", major_, ".", minor_, " (plugin) / ",
                      PJRT_API_MAJOR, ".", PJRT_API_MINOR,
                      " (tpusim's header)");
}

absl::StatusOr<PjrtPlugin*> PjrtPlugin::Load(const std::string& path) {
  static std::mutex* mu = new std::mutex;
  static auto* loaded = new std::map<std::string, PjrtPlugin*>;
  std::lock_guard<std::mutex> lock(*mu);
  if (auto it = loaded->find(path); it != loaded->end()) return it->second;

  struct stat st;
  if (path.empty() || ::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(
        "pjrt plugin \"", path,
        "\" does not exist; install it (tools/setup.sh installs XLA's CPU "
        "plugin) or pass --pjrt-plugin PATH / set TPUSIM_PJRT_PLUGIN"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pjrt plugin \"", path, "\" is not a regular file (a shared object)"));
  }
  // XLA's plugins log INFO lines to stderr; the CLI's stderr is for errors.
  // Warnings and errors stay; a value the user set wins.
  ::setenv("TF_CPP_MIN_LOG_LEVEL", "1", /*overwrite=*/0);
  // RTLD_LOCAL: the plugin carries its own Abseil and protobuf, which must not
  // resolve against (or override) tpusim's.
  // A bare file name is the file checked above, not a library search.
  const std::string open_path =
      path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = ::dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return absl::InvalidArgumentError(
        absl::StrCat("pjrt plugin \"", path,
                     "\" is not a loadable shared object: ",
                     why != nullptr ? why : "dlopen failed"));
  }
  using GetApiFn = const PJRT_Api* (*)();
  auto get_api = reinterpret_cast<GetApiFn>(::dlsym(handle, "GetPjrtApi"));
  if (get_api == nullptr) {
    ::dlclose(handle);
    return absl::InvalidArgumentError(absl::StrCat(
        "pjrt plugin \"", path,
        "\" has no GetPjrtApi symbol: not a PJRT C API plugin"));
  }
  const PJRT_Api* api = get_api();
  if (api == nullptr ||
      api->struct_size < offsetof(PJRT_Api, pjrt_api_version) +
                             sizeof(PJRT_Api_Version)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pjrt plugin \"", path, "\": GetPjrtApi returned ",
        api == nullptr ? "null" : "a table too small to hold its version"));
  }
  std::unique_ptr<PjrtPlugin> plugin(new PjrtPlugin);
  plugin->path_ = path;
  plugin->api_ = api;
  plugin->major_ = api->pjrt_api_version.major_version;
  plugin->minor_ = api->pjrt_api_version.minor_version;
  if (plugin->major_ != PJRT_API_MAJOR) {
    // Not dlclosed: GetPjrtApi may have started threads.
    return absl::FailedPreconditionError(absl::StrCat(
        "pjrt plugin \"", path, "\" has an incompatible API version: ",
        plugin->VersionString(),
        "; the major versions must match: install a matching plugin or "
        "header"));
  }
  if (api->struct_size >= offsetof(PJRT_Api, PJRT_Plugin_Initialize) +
                              sizeof(void*) &&
      api->PJRT_Plugin_Initialize != nullptr) {
    PJRT_Plugin_Initialize_Args args{};
    args.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE;
    if (absl::Status s = plugin->ToStatus(api->PJRT_Plugin_Initialize(&args),
                                          "PJRT_Plugin_Initialize");
        !s.ok()) {
      return s;
    }
  }
  if (plugin->Require("PJRT_Plugin_Attributes",
                      TPUSIM_PJRT_FN_OFFSET(PJRT_Plugin_Attributes))
          .ok()) {
    PJRT_Plugin_Attributes_Args args{};
    args.struct_size = PJRT_Plugin_Attributes_Args_STRUCT_SIZE;
    if (plugin
            ->ToStatus(api->PJRT_Plugin_Attributes(&args),
                       "PJRT_Plugin_Attributes")
            .ok()) {
      for (size_t i = 0; i < args.num_attributes; ++i) {
        const PJRT_NamedValue& v = args.attributes[i];
        std::string name(v.name, v.name_size);
        std::string text;
        switch (v.type) {
          case PJRT_NamedValue_kString:
            text.assign(v.string_value, v.value_size);
            break;
          case PJRT_NamedValue_kInt64:
            text = absl::StrCat(v.int64_value);
            break;
          case PJRT_NamedValue_kInt64List:
            for (size_t j = 0; j < v.value_size; ++j) {
              absl::StrAppend(&text, j > 0 ? "." : "", v.int64_array_value[j]);
            }
            break;
          case PJRT_NamedValue_kFloat:
            text = absl::StrCat(v.float_value);
            break;
          case PJRT_NamedValue_kBool:
            text = v.bool_value ? "true" : "false";
            break;
        }
        plugin->attributes_[name] = text;
      }
    }
  }
  PjrtPlugin* out = plugin.release();
  (*loaded)[path] = out;
  return out;
}

absl::Status PjrtPlugin::Require(absl::string_view name, size_t offset) const {
  if (offset + sizeof(void*) > api_->struct_size) {
    return absl::UnimplementedError(absl::StrCat(
        "pjrt plugin \"", path_, "\" does not provide ", name, " (",
        VersionString(), "); install a matching plugin or header"));
  }
  void* fn = nullptr;
  std::memcpy(&fn, reinterpret_cast<const char*>(api_) + offset, sizeof(fn));
  if (fn == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        "pjrt plugin \"", path_, "\" does not implement ", name));
  }
  return absl::OkStatus();
}

absl::Status PjrtPlugin::ToStatus(PJRT_Error* error,
                                  absl::string_view what) const {
  if (error == nullptr) return absl::OkStatus();
  PJRT_Error_Message_Args m{};
  m.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  m.error = error;
  api_->PJRT_Error_Message(&m);
  std::string message(m.message, m.message_size);
  PJRT_Error_GetCode_Args c{};
  c.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE;
  c.error = error;
  absl::StatusCode code = absl::StatusCode::kUnknown;
  if (api_->PJRT_Error_GetCode(&c) == nullptr) code = CodeOf(c.code);
  PJRT_Error_Destroy_Args d{};
  d.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  d.error = error;
  api_->PJRT_Error_Destroy(&d);
  std::string text = absl::StrCat(what, ": ", message);
  // The plugin checks every argument struct's struct_size against the size it
  // knows ("Unexpected PJRT_..._Args size: expected X, got Y").
  if (absl::StrContains(message, "_Args size") ||
      absl::StrContains(message, "struct_size")) {
    absl::StrAppend(&text, " (", VersionString(),
                    "; install a matching plugin or header)");
  }
  return absl::Status(code, text);
}

absl::Status PjrtPlugin::AwaitAndDestroy(PJRT_Event* event,
                                         absl::string_view what) {
  if (event == nullptr) return absl::OkStatus();
  PJRT_Event_Await_Args a{};
  a.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE;
  a.event = event;
  absl::Status s = ToStatus(api_->PJRT_Event_Await(&a), what);
  PJRT_Event_Destroy_Args d{};
  d.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE;
  d.event = event;
  api_->PJRT_Event_Destroy(&d);
  --live_events;
  return s;
}

}  // namespace tpusim::runtime::pjrt
