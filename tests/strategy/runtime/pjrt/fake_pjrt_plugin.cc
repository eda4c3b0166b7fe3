// A fake PJRT C API plugin for the loader's error tests, built as a shared
// object. $TPUSIM_FAKE_PJRT_MODE (read by GetPjrtApi) picks its defect:
//   "major"     : reports API major version 99.
//   "small"     : a table that ends before PJRT_Client_Create.
//   "nodevices" : a client with no addressable devices.
//   "argsize"   : PJRT_Client_Create rejects its argument struct's size, as
//                 XLA's plugins word it.
//   "oldhlo"    : reads StableHLO up to 0.19.0 only.
//   "tpu"       : four devices with TPU coordinates (a v4 2x2x1 slice), listed
//                 out of order: plugin device j is at kTpuCoords[j].
//   "tpuelse"   : the same, one of them at (5,5,0), outside a 2x2x1 slice.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "pjrt_c_api.h"

struct PJRT_Error {
  PJRT_Error_Code code;
  std::string message;
};
struct PJRT_Client {
  int unused;
};
struct PJRT_DeviceDescription {
  int id;
};
struct PJRT_Device {
  PJRT_DeviceDescription description;
};

namespace {

void ErrorDestroy(PJRT_Error_Destroy_Args* a) { delete a->error; }
void ErrorMessage(PJRT_Error_Message_Args* a) {
  a->message = a->error->message.data();
  a->message_size = a->error->message.size();
}
PJRT_Error* ErrorGetCode(PJRT_Error_GetCode_Args* a) {
  a->code = a->error->code;
  return nullptr;
}
PJRT_Error* PluginInitialize(PJRT_Plugin_Initialize_Args*) { return nullptr; }
PJRT_Error* PluginAttributes(PJRT_Plugin_Attributes_Args* a) {
  static PJRT_NamedValue version = [] {
    PJRT_NamedValue v;
    std::memset(&v, 0, sizeof(v));
    v.struct_size = PJRT_NamedValue_STRUCT_SIZE;
    v.name = "stablehlo_current_version";
    v.name_size = std::strlen(v.name);
    v.type = PJRT_NamedValue_kString;
    v.string_value = "0.19.0";
    v.value_size = 6;
    return v;
  }();
  const char* mode = std::getenv("TPUSIM_FAKE_PJRT_MODE");
  const bool old = mode != nullptr && std::strcmp(mode, "oldhlo") == 0;
  a->attributes = old ? &version : nullptr;
  a->num_attributes = old ? 1 : 0;
  return nullptr;
}
PJRT_Error* ClientCreate(PJRT_Client_Create_Args* a) {
  const char* mode = std::getenv("TPUSIM_FAKE_PJRT_MODE");
  if (mode != nullptr && std::strcmp(mode, "argsize") == 0) {
    return new PJRT_Error{
        PJRT_Error_Code_INVALID_ARGUMENT,
        "Unexpected PJRT_Client_Create_Args size: expected 120, got 88. Check "
        "installed software versions."};
  }
  a->client = new PJRT_Client{0};
  return nullptr;
}
PJRT_Error* ClientDestroy(PJRT_Client_Destroy_Args* a) {
  delete a->client;
  return nullptr;
}
bool Mode(const char* want) {
  const char* mode = std::getenv("TPUSIM_FAKE_PJRT_MODE");
  return mode != nullptr && std::strcmp(mode, want) == 0;
}

constexpr int kTpuDevices = 4;
int64_t kTpuCoords[kTpuDevices][3] = {{1, 1, 0}, {0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
int64_t kTpuCoordsElse[kTpuDevices][3] = {{1, 1, 0}, {0, 0, 0}, {5, 5, 0}, {0, 1, 0}};

PJRT_Error* ClientAddressableDevices(PJRT_Client_AddressableDevices_Args* a) {
  static PJRT_Device devices[kTpuDevices] = {{{0}}, {{1}}, {{2}}, {{3}}};
  static PJRT_Device* list[kTpuDevices] = {&devices[0], &devices[1],
                                           &devices[2], &devices[3]};
  const bool tpu = Mode("tpu") || Mode("tpuelse");
  a->addressable_devices = tpu ? list : nullptr;
  a->num_addressable_devices = tpu ? kTpuDevices : 0;
  return nullptr;
}
PJRT_Error* DeviceGetDescription(PJRT_Device_GetDescription_Args* a) {
  a->device_description = &a->device->description;
  return nullptr;
}
PJRT_Error* DescriptionId(PJRT_DeviceDescription_Id_Args* a) {
  a->id = a->device_description->id;
  return nullptr;
}
PJRT_Error* DescriptionKind(PJRT_DeviceDescription_Kind_Args* a) {
  static const char kKind[] = "TPU v4";
  a->device_kind = kKind;
  a->device_kind_size = sizeof(kKind) - 1;
  return nullptr;
}
PJRT_Error* DescriptionDebugString(PJRT_DeviceDescription_DebugString_Args* a) {
  static const char kText[] = "fake TPU";
  a->debug_string = kText;
  a->debug_string_size = sizeof(kText) - 1;
  return nullptr;
}
PJRT_Error* DescriptionAttributes(PJRT_DeviceDescription_Attributes_Args* a) {
  static PJRT_NamedValue attrs[kTpuDevices][2];
  static const int64_t zero = 0;
  const int id = a->device_description->id;
  PJRT_NamedValue* v = attrs[id];
  std::memset(v, 0, sizeof(attrs[id]));
  v[0].struct_size = PJRT_NamedValue_STRUCT_SIZE;
  v[0].name = "coords";
  v[0].name_size = 6;
  v[0].type = PJRT_NamedValue_kInt64List;
  v[0].int64_array_value = Mode("tpuelse") ? kTpuCoordsElse[id] : kTpuCoords[id];
  v[0].value_size = 3;
  v[1].struct_size = PJRT_NamedValue_STRUCT_SIZE;
  v[1].name = "core_on_chip";
  v[1].name_size = 12;
  v[1].type = PJRT_NamedValue_kInt64;
  v[1].int64_value = zero;
  v[1].value_size = 1;
  a->attributes = v;
  a->num_attributes = 2;
  return nullptr;
}

PJRT_Api MakeApi() {
  PJRT_Api api;
  std::memset(&api, 0, sizeof(api));
  api.struct_size = PJRT_Api_STRUCT_SIZE;
  api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
  api.pjrt_api_version.major_version = PJRT_API_MAJOR;
  api.pjrt_api_version.minor_version = 1;
  api.PJRT_Error_Destroy = ErrorDestroy;
  api.PJRT_Error_Message = ErrorMessage;
  api.PJRT_Error_GetCode = ErrorGetCode;
  api.PJRT_Plugin_Initialize = PluginInitialize;
  api.PJRT_Plugin_Attributes = PluginAttributes;
  api.PJRT_Client_Create = ClientCreate;
  api.PJRT_Client_Destroy = ClientDestroy;
  api.PJRT_Client_AddressableDevices = ClientAddressableDevices;
  api.PJRT_Device_GetDescription = DeviceGetDescription;
  api.PJRT_DeviceDescription_Id = DescriptionId;
  api.PJRT_DeviceDescription_Kind = DescriptionKind;
  api.PJRT_DeviceDescription_DebugString = DescriptionDebugString;
  api.PJRT_DeviceDescription_Attributes = DescriptionAttributes;
  const char* mode = std::getenv("TPUSIM_FAKE_PJRT_MODE");
  const std::string m = mode != nullptr ? mode : "";
  if (m == "major") api.pjrt_api_version.major_version = 99;
  if (m == "small") api.struct_size = offsetof(PJRT_Api, PJRT_Client_Create);
  return api;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const PJRT_Api* GetPjrtApi() {
  static PJRT_Api api = MakeApi();
  return &api;
}
