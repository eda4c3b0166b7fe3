#include "strategy/runtime/pjrt/pjrt_backend.h"

#include <dirent.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <cstdlib>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "strategy/runtime/pjrt/compile_options.h"
#include "strategy/runtime/pjrt/pjrt_plugin.h"
#include "strategy/runtime/pjrt/stablehlo_emitter.h"

#ifndef TPUSIM_PJRT_DEFAULT_PLUGIN
#define TPUSIM_PJRT_DEFAULT_PLUGIN ""
#endif

namespace tpusim::runtime::pjrt {

std::string DefaultPjrtPluginPath() {
  const char* env = std::getenv("TPUSIM_PJRT_PLUGIN");
  if (env != nullptr && env[0] != '\0') return env;
  return TPUSIM_PJRT_DEFAULT_PLUGIN;
}

namespace {

PJRT_Buffer_Type BufferType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return PJRT_Buffer_Type_F32;
    case DType::kF64:
      return PJRT_Buffer_Type_F64;
    case DType::kBF16:
      return PJRT_Buffer_Type_BF16;
    case DType::kI32:
      return PJRT_Buffer_Type_S32;
    case DType::kI64:
      return PJRT_Buffer_Type_S64;
    case DType::kU8:
      return PJRT_Buffer_Type_U8;
    case DType::kBytes:
      break;
  }
  return PJRT_Buffer_Type_INVALID;
}

// The bytes of a freshly made (so unshared) tensor, for the plugin to fill.
uint8_t* FreshBytes(Tensor& fresh) {
  return const_cast<uint8_t*>(fresh.raw_bytes().data());
}

// `src` copied into a zero tensor of shape `to` (the overlapping box): pads a
// true-size value to its bound or crops a padded one to its true size.
Tensor PadOrCrop(const Tensor& src, const Shape& to) {
  Tensor out = Tensor::Zeros(src.dtype(), to);
  const int rank = to.rank();
  const int64_t esize = DTypeSize(src.dtype());
  if (out.num_elements() == 0 || src.num_elements() == 0) return out;
  if (rank == 0) {
    std::memcpy(FreshBytes(out), src.raw_bytes().data(), esize);
    return out;
  }
  std::vector<int64_t> box(rank);
  for (int d = 0; d < rank; ++d)
    box[d] = std::min(src.shape().dim(d), to.dim(d));
  for (int64_t b : box)
    if (b == 0) return out;
  // Copy rows of the last dim.
  const int64_t row = box[rank - 1] * esize;
  std::vector<int64_t> idx(rank, 0);
  const uint8_t* in = src.raw_bytes().data();
  uint8_t* o = FreshBytes(out);
  while (true) {
    int64_t si = 0, oi = 0;
    for (int d = 0; d < rank; ++d) {
      si = si * src.shape().dim(d) + idx[d];
      oi = oi * to.dim(d) + idx[d];
    }
    std::memcpy(o + oi * esize, in + si * esize, row);
    int d = rank - 2;
    while (d >= 0 && ++idx[d] == box[d]) idx[d--] = 0;
    if (d < 0) break;
  }
  return out;
}

// The plugin's MLIR diagnostics point at "<file>:LINE:COL"; the status gets
// that line of the emitted text appended ("emitted line 7: %v3 = ...").
absl::Status WithEmittedLine(const absl::Status& s, const std::string& text) {
  const std::string message(s.message());
  for (size_t at = message.find(':'); at != std::string::npos;
       at = message.find(':', at + 1)) {
    size_t end = at + 1;
    while (end < message.size() && std::isdigit(static_cast<unsigned char>(message[end])))
      ++end;
    if (end == at + 1 || end >= message.size() || message[end] != ':') continue;
    if (end + 1 >= message.size() ||
        !std::isdigit(static_cast<unsigned char>(message[end + 1])))
      continue;
    const int line = std::atoi(message.substr(at + 1, end - at - 1).c_str());
    std::vector<std::string> lines = absl::StrSplit(text, '\n');
    if (line < 1 || line > static_cast<int>(lines.size())) break;
    return absl::Status(s.code(),
                        absl::StrCat(message, "; emitted line ", line, ": ",
                                     absl::StripAsciiWhitespace(lines[line - 1])));
  }
  return s;
}

// True when some PCI device under `dir` has Google's vendor id (TPUs).
bool HasTpuPciDevice(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream vendor(dir + "/" + e->d_name + "/vendor");
    std::string id;
    if (vendor >> id && id == "0x1ae0") {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

}  // namespace

// ---- buffers ----

class PjrtBuffer final : public Buffer {
 public:
  PjrtBuffer(const PjrtBackend* owner, const Device* device, TensorSpec spec,
             PJRT_Buffer* buffer, Shape device_shape,
             std::optional<Tensor> host)
      : owner_(owner),
        device_(device),
        spec_(std::move(spec)),
        buffer_(buffer),
        device_shape_(std::move(device_shape)),
        host_(std::move(host)) {}
  ~PjrtBuffer() override { owner_->DestroyBuffer(buffer_); }
  // Gives up the plugin buffer (another PjrtBuffer owns it now).
  void Release() { buffer_ = nullptr; }

  const Device& device() const override { return *device_; }
  const TensorSpec& spec() const override { return spec_; }
  bool has_data() const override { return true; }

  const PjrtBackend* owner() const { return owner_; }
  PJRT_Buffer* buffer() const { return buffer_; }
  // The shape of the plugin buffer: spec().shape, or its bound when padded.
  const Shape& device_shape() const { return device_shape_; }
  // The value, when it came from the host (saves a download to re-pad it).
  const std::optional<Tensor>& host() const { return host_; }

 private:
  const PjrtBackend* owner_;
  const Device* device_;
  TensorSpec spec_;
  PJRT_Buffer* buffer_;
  Shape device_shape_;
  std::optional<Tensor> host_;
};

// ---- executables ----

class PjrtExecutable final : public Executable {
 public:
  PjrtExecutable(PjrtBackend* owner, Program program, CompileOptions options,
                 EmittedModule module)
      : owner_(owner),
        program_(std::move(program)),
        options_(options),
        module_(std::move(module)) {}
  ~PjrtExecutable() override {
    for (auto& [devices, exe] : loaded_) owner_->DestroyLoadedExecutable(exe);
  }
  const Program& program() const override { return program_; }
  const CompileOptions& options() const override { return options_; }
  OpCost cost() const override { return program_.TotalCost(); }

  PjrtBackend* owner_;
  Program program_;
  CompileOptions options_;
  EmittedModule module_;
  // One loaded executable per device assignment (replica -> slice device).
  mutable std::map<std::vector<int>, void*> loaded_;
};

// ---- backend ----

#define TPUSIM_PJRT_REQUIRE(plugin, name) \
  TPUSIM_RETURN_IF_ERROR((plugin)->Require(#name, TPUSIM_PJRT_FN_OFFSET(name)))

absl::StatusOr<std::unique_ptr<PjrtBackend>> PjrtBackend::Create(
    PjrtBackendOptions options) {
  if (options.devices.empty()) {
    return absl::InvalidArgumentError("pjrt: the slice has no devices");
  }
  if (options.requires_tpu && ::access(options.plugin_path.c_str(), F_OK) == 0 &&
      !HasTpuPciDevice(options.pci_devices_dir)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "pjrt plugin \"", options.plugin_path,
        "\" is a TPU plugin, but this machine has no TPU (no PCI device of "
        "vendor 0x1ae0 under ", options.pci_devices_dir,
        "); run on a TPU VM, or use XLA's CPU plugin"));
  }
  TPUSIM_ASSIGN_OR_RETURN(PjrtPlugin * plugin,
                          PjrtPlugin::Load(options.plugin_path));
  const PJRT_Api* api = plugin->api();
  std::unique_ptr<PjrtBackend> b(new PjrtBackend);
  b->plugin_ = plugin;
  b->epoch_ = std::chrono::steady_clock::now();
  if (auto it = plugin->attributes().find("stablehlo_current_version");
      it != plugin->attributes().end() &&
      std::atoi(it->second.c_str()) < kMinStableHloMajor) {
    return absl::FailedPreconditionError(absl::StrCat(
        "pjrt plugin \"", plugin->path(), "\" reads StableHLO up to ",
        it->second, "; tpusim emits StableHLO ", kMinStableHloMajor,
        ".x: install a newer plugin"));
  }
  TPUSIM_PJRT_REQUIRE(plugin, PJRT_Client_Create);
  PJRT_NamedValue count{};
  count.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  static const char kCount[] = "cpu_device_count";
  count.name = kCount;
  count.name_size = sizeof(kCount) - 1;
  count.type = PJRT_NamedValue_kInt64;
  count.int64_value = options.cpu_device_count.value_or(0);
  count.value_size = 1;
  PJRT_Client_Create_Args create{};
  create.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
  if (options.cpu_device_count.has_value()) {
    create.create_options = &count;
    create.num_options = 1;
  }
  TPUSIM_RETURN_IF_ERROR(plugin->ToStatus(
      api->PJRT_Client_Create(&create),
      absl::StrCat("pjrt plugin \"", plugin->path(), "\": PJRT_Client_Create")));
  b->client_ = create.client;
  ++plugin->live_clients;

  TPUSIM_PJRT_REQUIRE(plugin, PJRT_Client_AddressableDevices);
  PJRT_Client_AddressableDevices_Args devs{};
  devs.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE;
  devs.client = b->client_;
  TPUSIM_RETURN_IF_ERROR(plugin->ToStatus(
      api->PJRT_Client_AddressableDevices(&devs),
      "PJRT_Client_AddressableDevices"));
  if (devs.num_addressable_devices != options.devices.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "pjrt plugin \"", plugin->path(), "\" has ",
        devs.num_addressable_devices, " addressable devices, the slice has ",
        options.devices.size(),
        "; the pjrt backend maps slice device i to plugin device i and needs "
        "as many"));
  }
  TPUSIM_PJRT_REQUIRE(plugin, PJRT_Device_GetDescription);
  TPUSIM_PJRT_REQUIRE(plugin, PJRT_DeviceDescription_Id);
  TPUSIM_PJRT_REQUIRE(plugin, PJRT_DeviceDescription_Kind);
  TPUSIM_PJRT_REQUIRE(plugin, PJRT_DeviceDescription_DebugString);
  for (size_t i = 0; i < devs.num_addressable_devices; ++i) {
    PJRT_Device* d = devs.addressable_devices[i];
    b->pjrt_devices_.push_back(d);
    PJRT_Device_GetDescription_Args g{};
    g.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE;
    g.device = d;
    TPUSIM_RETURN_IF_ERROR(plugin->ToStatus(api->PJRT_Device_GetDescription(&g),
                                            "PJRT_Device_GetDescription"));
    PluginDeviceInfo info;
    PJRT_DeviceDescription_Id_Args id{};
    id.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE;
    id.device_description = g.device_description;
    TPUSIM_RETURN_IF_ERROR(plugin->ToStatus(
        api->PJRT_DeviceDescription_Id(&id), "PJRT_DeviceDescription_Id"));
    info.id = id.id;
    PJRT_DeviceDescription_Kind_Args k{};
    k.struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE;
    k.device_description = g.device_description;
    TPUSIM_RETURN_IF_ERROR(plugin->ToStatus(
        api->PJRT_DeviceDescription_Kind(&k), "PJRT_DeviceDescription_Kind"));
    info.kind.assign(k.device_kind, k.device_kind_size);
    PJRT_DeviceDescription_DebugString_Args s{};
    s.struct_size = PJRT_DeviceDescription_DebugString_Args_STRUCT_SIZE;
    s.device_description = g.device_description;
    TPUSIM_RETURN_IF_ERROR(
        plugin->ToStatus(api->PJRT_DeviceDescription_DebugString(&s),
                         "PJRT_DeviceDescription_DebugString"));
    info.debug_string.assign(s.debug_string, s.debug_string_size);
    // Coordinates, where the plugin gives them (libtpu does; XLA's CPU
    // plugin does not). A plugin without the function gives none.
    if (plugin
            ->Require("PJRT_DeviceDescription_Attributes",
                      TPUSIM_PJRT_FN_OFFSET(PJRT_DeviceDescription_Attributes))
            .ok()) {
      PJRT_DeviceDescription_Attributes_Args at{};
      at.struct_size = PJRT_DeviceDescription_Attributes_Args_STRUCT_SIZE;
      at.device_description = g.device_description;
      TPUSIM_RETURN_IF_ERROR(plugin->ToStatus(
          api->PJRT_DeviceDescription_Attributes(&at),
          "PJRT_DeviceDescription_Attributes"));
      for (size_t a = 0; a < at.num_attributes; ++a) {
        const PJRT_NamedValue& v = at.attributes[a];
        const absl::string_view name(v.name, v.name_size);
        if (name == "coords" && v.type == PJRT_NamedValue_kInt64List) {
          info.coords.assign(v.int64_array_value,
                             v.int64_array_value + v.value_size);
        } else if (name == "core_on_chip" && v.type == PJRT_NamedValue_kInt64) {
          info.core_on_chip = v.int64_value;
        }
      }
    }
    b->plugin_devices_.push_back(std::move(info));
  }
  // Slice device i runs on plugin device i, unless the plugin gives
  // coordinates: then on the plugin device at the slice device's coordinates
  // (x, y[, z] and its core), so TPUClusterResolver, Topology and
  // DeviceAssignment see the real devices where they are.
  bool with_coords = true;
  for (const PluginDeviceInfo& info : b->plugin_devices_) {
    with_coords = with_coords && !info.coords.empty();
  }
  if (with_coords) {
    std::vector<PJRT_Device*> by_slice(options.devices.size(), nullptr);
    std::vector<PluginDeviceInfo> infos(options.devices.size());
    for (size_t i = 0; i < options.devices.size(); ++i) {
      // Slice coordinates: (x, y, core) or (x, y, z, core).
      const std::vector<int>& c = options.devices[i].coords;
      std::vector<int64_t> chip(c.begin(), c.end() - 1);
      while (chip.size() < 3) chip.push_back(0);
      const int64_t core = c.back();
      for (size_t j = 0; j < b->plugin_devices_.size(); ++j) {
        std::vector<int64_t> theirs = b->plugin_devices_[j].coords;
        while (theirs.size() < 3) theirs.push_back(0);
        const int64_t their_core =
            std::max<int64_t>(0, b->plugin_devices_[j].core_on_chip);
        if (theirs == chip && their_core == core) {
          by_slice[i] = b->pjrt_devices_[j];
          infos[i] = b->plugin_devices_[j];
        }
      }
      if (by_slice[i] == nullptr) {
        std::vector<std::string> have;
        for (const PluginDeviceInfo& info : b->plugin_devices_) {
          have.push_back(absl::StrCat("(", absl::StrJoin(info.coords, ","),
                                      ") core ", info.core_on_chip));
        }
        return absl::FailedPreconditionError(absl::StrCat(
            "pjrt plugin "", plugin->path(), "": slice device ", i,
            " is at (", absl::StrJoin(chip, ","), ") core ", core,
            ", where the plugin has no device; the plugin's devices: ",
            absl::StrJoin(have, ", "),
            " (name the slice the plugin's devices form)"));
      }
    }
    b->pjrt_devices_ = std::move(by_slice);
    b->plugin_devices_ = std::move(infos);
  }
  for (size_t i = 0; i < options.devices.size(); ++i) {
    b->devices_.push_back(std::make_unique<Device>(options.devices[i]));
    b->device_ptrs_.push_back(b->devices_.back().get());
  }
  b->tally_.resize(options.devices.size());
  return b;
}

PjrtBackend::~PjrtBackend() {
  variables_.clear();
  if (client_ != nullptr) {
    PJRT_Client_Destroy_Args d{};
    d.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE;
    d.client = client_;
    plugin_->ToStatus(plugin_->api()->PJRT_Client_Destroy(&d),
                      "PJRT_Client_Destroy")
        .IgnoreError();
    --plugin_->live_clients;
  }
}

int64_t PjrtBackend::live_objects() const {
  return plugin_->live_clients + plugin_->live_buffers +
         plugin_->live_executables + plugin_->live_events;
}

void PjrtBackend::DestroyBuffer(PJRT_Buffer* buffer) const {
  if (buffer == nullptr) return;
  PJRT_Buffer_Destroy_Args d{};
  d.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE;
  d.buffer = buffer;
  plugin_->ToStatus(plugin_->api()->PJRT_Buffer_Destroy(&d),
                    "PJRT_Buffer_Destroy")
      .IgnoreError();
  --plugin_->live_buffers;
}

void PjrtBackend::DestroyLoadedExecutable(void* executable) const {
  if (executable == nullptr) return;
  PJRT_LoadedExecutable_Destroy_Args d{};
  d.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE;
  d.executable = static_cast<PJRT_LoadedExecutable*>(executable);
  plugin_->ToStatus(plugin_->api()->PJRT_LoadedExecutable_Destroy(&d),
                    "PJRT_LoadedExecutable_Destroy")
      .IgnoreError();
  --plugin_->live_executables;
}

int64_t PjrtBackend::NowPs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now() - epoch_)
             .count() *
         1000;
}

absl::Status PjrtBackend::CheckDevice(int device_id,
                                      absl::string_view what) const {
  if (device_id < 0 || device_id >= static_cast<int>(devices_.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": device ", device_id, " is not a device of the ",
                     "pjrt backend (0..", devices_.size() - 1, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PJRT_Buffer*> PjrtBackend::Upload(int device_id,
                                                 const Tensor& value) const {
  if (!value.has_data()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pjrt: ", value.spec().ToString(),
        " is an abstract tensor (no values); the pjrt backend runs real "
        "values only"));
  }
  const PJRT_Buffer_Type type = BufferType(value.dtype());
  if (type == PJRT_Buffer_Type_INVALID) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pjrt: ", value.spec().ToString(),
        " is a string tensor; devices take numeric tensors only"));
  }
  TPUSIM_PJRT_REQUIRE(plugin_, PJRT_Client_BufferFromHostBuffer);
  const std::vector<int64_t> dims = value.shape().dims();
  PJRT_Client_BufferFromHostBuffer_Args a{};
  a.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE;
  a.client = client_;
  static const uint8_t kEmpty[8] = {};
  a.data = value.num_elements() > 0 ? value.raw_bytes().data() : kEmpty;
  a.type = type;
  a.dims = dims.data();
  a.num_dims = dims.size();
  a.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  a.device = pjrt_devices_[device_id];
  TPUSIM_RETURN_IF_ERROR(plugin_->ToStatus(
      plugin_->api()->PJRT_Client_BufferFromHostBuffer(&a),
      absl::StrCat("PJRT_Client_BufferFromHostBuffer of ",
                   value.spec().ToString(), " to device ", device_id)));
  ++plugin_->live_buffers;
  if (a.done_with_host_buffer != nullptr) {
    ++plugin_->live_events;
    absl::Status s =
        plugin_->AwaitAndDestroy(a.done_with_host_buffer, "host transfer");
    if (!s.ok()) {
      DestroyBuffer(a.buffer);
      return s;
    }
  }
  tally_[device_id].host_to_device_bytes += value.byte_size();
  return a.buffer;
}

absl::StatusOr<Tensor> PjrtBackend::Download(PJRT_Buffer* buffer, DType dtype,
                                             const Shape& device_shape) const {
  TPUSIM_PJRT_REQUIRE(plugin_, PJRT_Buffer_ToHostBuffer);
  Tensor out = Tensor::Zeros(dtype, device_shape);
  if (out.num_elements() == 0) return out;
  PJRT_Buffer_ToHostBuffer_Args a{};
  a.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE;
  a.src = buffer;
  a.dst = FreshBytes(out);
  a.dst_size = out.byte_size();
  TPUSIM_RETURN_IF_ERROR(
      plugin_->ToStatus(plugin_->api()->PJRT_Buffer_ToHostBuffer(&a),
                        "PJRT_Buffer_ToHostBuffer"));
  ++plugin_->live_events;
  TPUSIM_RETURN_IF_ERROR(plugin_->AwaitAndDestroy(a.event, "device transfer"));
  return out;
}

absl::StatusOr<std::unique_ptr<Buffer>> PjrtBackend::TransferToDevice(
    int device_id, const Tensor& value, const TransferOptions& options) {
  TPUSIM_RETURN_IF_ERROR(CheckDevice(device_id, "TransferToDevice"));
  TPUSIM_RETURN_IF_ERROR(ValidateTransferOptions(options));
  TPUSIM_ASSIGN_OR_RETURN(PJRT_Buffer * b, Upload(device_id, value));
  return std::unique_ptr<Buffer>(new PjrtBuffer(
      this, devices_[device_id].get(), value.spec(), b, value.shape(), value));
}

absl::StatusOr<Tensor> PjrtBackend::TransferFromDevice(const Buffer& buffer) {
  const auto* b = dynamic_cast<const PjrtBuffer*>(&buffer);
  if (b == nullptr || b->owner() != this) {
    return absl::InvalidArgumentError(
        "TransferFromDevice: the buffer was not made by this pjrt backend");
  }
  if (b->host().has_value()) return *b->host();
  TPUSIM_ASSIGN_OR_RETURN(
      Tensor t, Download(b->buffer(), b->spec().dtype, b->device_shape()));
  tally_[b->device().id()].device_to_host_bytes += t.byte_size();
  if (b->device_shape() != b->spec().shape) return PadOrCrop(t, b->spec().shape);
  return t;
}

absl::Status PjrtBackend::WriteVariable(int device_id, int slot,
                                        const Tensor& value) {
  TPUSIM_RETURN_IF_ERROR(CheckDevice(device_id, "WriteVariable"));
  TPUSIM_ASSIGN_OR_RETURN(PJRT_Buffer * b, Upload(device_id, value));
  variables_[{device_id, slot}] = std::make_unique<PjrtBuffer>(
      this, devices_[device_id].get(), value.spec(), b, value.shape(),
      std::nullopt);
  return absl::OkStatus();
}

absl::StatusOr<Tensor> PjrtBackend::ReadVariable(int device_id,
                                                 int slot) const {
  TPUSIM_RETURN_IF_ERROR(CheckDevice(device_id, "ReadVariable"));
  auto it = variables_.find({device_id, slot});
  if (it == variables_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "variable slot ", slot, " was never written on device ", device_id));
  }
  TPUSIM_ASSIGN_OR_RETURN(Tensor t,
                          Download(it->second->buffer(), it->second->spec().dtype,
                                   it->second->device_shape()));
  tally_[device_id].device_to_host_bytes += t.byte_size();
  return t;
}

absl::StatusOr<void*> PjrtBackend::CompileFor(
    const std::string& text, const std::vector<int>& replica_devices,
    const std::string& program_name) {
  TPUSIM_PJRT_REQUIRE(plugin_, PJRT_Client_Compile);
  std::vector<std::vector<int64_t>> ids;
  for (int d : replica_devices) ids.push_back({plugin_devices_[d].id});
  const std::string options = EncodeCompileOptions(ids);
  static const char kFormat[] = "mlir";
  PJRT_Program program{};
  program.struct_size = PJRT_Program_STRUCT_SIZE;
  program.code = const_cast<char*>(text.data());
  program.code_size = text.size();
  program.format = kFormat;
  program.format_size = sizeof(kFormat) - 1;
  PJRT_Client_Compile_Args a{};
  a.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE;
  a.client = client_;
  a.program = &program;
  a.compile_options = options.data();
  a.compile_options_size = options.size();
  absl::Status s = plugin_->ToStatus(
      plugin_->api()->PJRT_Client_Compile(&a),
      absl::StrCat("pjrt: compiling program ", program_name));
  if (!s.ok()) return WithEmittedLine(s, text);
  ++plugin_->live_executables;
  return static_cast<void*>(a.executable);
}

absl::Status PjrtBackend::CheckStableHlo(const std::string& text,
                                         int num_replicas) {
  if (num_replicas < 1 || num_replicas > static_cast<int>(devices_.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("CheckStableHlo: num_replicas=", num_replicas,
                     " must be in 1..", devices_.size()));
  }
  std::vector<int> identity(num_replicas);
  for (int r = 0; r < num_replicas; ++r) identity[r] = r;
  TPUSIM_ASSIGN_OR_RETURN(void* loaded, CompileFor(text, identity, "(text)"));
  DestroyLoadedExecutable(loaded);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Executable>> PjrtBackend::Compile(
    const Program& program, const CompileOptions& options) {
  if (options.num_replicas < 1 || options.num_cores_per_replica < 1 ||
      options.num_replicas != program.num_replicas() ||
      options.num_cores_per_replica != program.num_cores_per_replica()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Compile ", program.name(), ": options ask for ", options.num_replicas,
        " replicas x ", options.num_cores_per_replica,
        " cores, the program was traced for ", program.num_replicas(), " x ",
        program.num_cores_per_replica(), " (each must be >= 1)"));
  }
  const int64_t needed = static_cast<int64_t>(options.num_replicas) *
                         options.num_cores_per_replica;
  if (needed > static_cast<int64_t>(devices_.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Compile ", program.name(), ": ", options.num_replicas, " replicas x ",
        options.num_cores_per_replica, " cores need ", needed,
        " devices, the pjrt backend has ", devices_.size()));
  }
  TPUSIM_ASSIGN_OR_RETURN(EmittedModule module, EmitStableHlo(program));
  auto exe = std::make_unique<PjrtExecutable>(this, program, options,
                                              std::move(module));
  std::vector<int> identity(needed);
  for (int k = 0; k < needed; ++k) identity[k] = k;
  TPUSIM_ASSIGN_OR_RETURN(
      void* loaded, CompileFor(exe->module_.text, identity, program.name()));
  exe->loaded_[identity] = loaded;
  return std::unique_ptr<Executable>(std::move(exe));
}

absl::StatusOr<SpmdOutputs> PjrtBackend::ExecuteSpmd(
    const Executable& executable, const SpmdAssignment& assignment,
    absl::Span<const std::vector<Buffer*>> per_replica_args) {
  const auto* exe = dynamic_cast<const PjrtExecutable*>(&executable);
  if (exe == nullptr || exe->owner_ != this) {
    return absl::InvalidArgumentError(
        "ExecuteSpmd: the executable was not compiled by this pjrt backend");
  }
  const int64_t start_ps = NowPs();
  const Program& program = exe->program_;
  const EmittedModule& module = exe->module_;
  const int R = exe->options_.num_replicas;
  const int C = exe->options_.num_cores_per_replica;
  auto where = [&] { return absl::StrCat("ExecuteSpmd ", program.name()); };
  TPUSIM_RETURN_IF_ERROR(CheckSpmdCall(
      *this, program, R, C, assignment, per_replica_args,
      [&](const Buffer& b) -> absl::Status {
        const auto* pb = dynamic_cast<const PjrtBuffer*>(&b);
        if (pb == nullptr || pb->owner() != this) {
          return absl::InvalidArgumentError(
              "not a buffer of this pjrt backend");
        }
        return absl::OkStatus();
      }));
  // XLA replica k = r * C + c runs core c of replica r (the emitter's
  // mapping) on device xla_devices[k].
  std::vector<int> xla_devices;
  for (int r = 0; r < R; ++r) {
    for (int d : assignment.replica_devices[r]) xla_devices.push_back(d);
  }
  const std::vector<Value>& params = program.parameters();
  // Temporaries (padded arguments, sizes, zeros for other cores' arguments,
  // outputs of other cores) destroyed on every path.
  std::vector<std::unique_ptr<PjrtBuffer>> temps;
  auto temp = [&](int dev, const Tensor& value) -> absl::StatusOr<PJRT_Buffer*> {
    TPUSIM_ASSIGN_OR_RETURN(PJRT_Buffer * b, Upload(dev, value));
    temps.push_back(std::make_unique<PjrtBuffer>(
        this, devices_[dev].get(), value.spec(), b, value.shape(), std::nullopt));
    return b;
  };
  std::vector<std::vector<PJRT_Buffer*>> arg_lists(R * C);
  // True parameter types per replica (for the true output types).
  std::vector<std::vector<ValueType>> true_params(R);
  for (int r = 0; r < R; ++r) {
    const std::vector<Buffer*>& args = per_replica_args[r];
    for (size_t p = 0; p < params.size(); ++p) {
      const ValueType& want = program.type(params[p]);
      const int core = program.op(params[p]).logical_core;
      const int dev = xla_devices[r * C + core];
      // CheckSpmdCall has checked it is this backend's.
      const auto* b = static_cast<const PjrtBuffer*>(args[p]);
      const TensorSpec& s = b->spec();
      true_params[r].push_back(ValueType(s.dtype, s.shape, want.dynamic_dims));
      PJRT_Buffer* arg = b->buffer();
      if (b->device_shape() != want.shape) {
        // Pad to the bound (the emitted code masks the padding).
        Tensor value;
        if (b->host().has_value()) {
          value = *b->host();
        } else {
          TPUSIM_ASSIGN_OR_RETURN(
              Tensor full, Download(b->buffer(), s.dtype, b->device_shape()));
          value = PadOrCrop(full, s.shape);
        }
        TPUSIM_ASSIGN_OR_RETURN(arg, temp(dev, PadOrCrop(value, want.shape)));
      }
      for (int c = 0; c < C; ++c) {
        if (c == core) {
          arg_lists[r * C + c].push_back(arg);
        } else {
          TPUSIM_ASSIGN_OR_RETURN(
              PJRT_Buffer * zero,
              temp(xla_devices[r * C + c], Tensor::Zeros(want.dtype, want.shape)));
          arg_lists[r * C + c].push_back(zero);
        }
      }
    }
    for (const DynamicDimArg& da : module.dynamic_args) {
      const Tensor size = Tensor::Scalar<int32_t>(static_cast<int32_t>(
          true_params[r][da.parameter].shape.dim(da.dim)));
      for (int c = 0; c < C; ++c) {
        TPUSIM_ASSIGN_OR_RETURN(PJRT_Buffer * sb, temp(xla_devices[r * C + c], size));
        arg_lists[r * C + c].push_back(sb);
      }
    }
    for (const VariableArg& v : module.variable_inputs) {
      const VariableDecl* decl = program.FindVariable(v.slot);
      for (int c = 0; c < C; ++c) {
        const int dev = xla_devices[r * C + c];
        if (c != v.core) {
          TPUSIM_ASSIGN_OR_RETURN(
              PJRT_Buffer * zero, temp(dev, Tensor::Zeros(decl->dtype, decl->shape)));
          arg_lists[r * C + c].push_back(zero);
          continue;
        }
        auto it = variables_.find({dev, v.slot});
        if (it == variables_.end()) {
          return absl::FailedPreconditionError(absl::StrCat(
              where(), ": replica ", r, " reads variable slot ", v.slot, " (",
              decl != nullptr ? decl->name : "",
              ") that was never written on device ", dev));
        }
        arg_lists[r * C + c].push_back(it->second->buffer());
      }
    }
  }
  // Compile for this assignment on first use.
  auto loaded_it = exe->loaded_.find(xla_devices);
  if (loaded_it == exe->loaded_.end()) {
    TPUSIM_ASSIGN_OR_RETURN(void* loaded,
                            CompileFor(module.text, xla_devices, program.name()));
    loaded_it = exe->loaded_.emplace(xla_devices, loaded).first;
  }
  TPUSIM_PJRT_REQUIRE(plugin_, PJRT_LoadedExecutable_Execute);
  const int K = R * C;
  const size_t num_outputs =
      program.outputs().size() + module.variable_outputs.size();
  std::vector<std::vector<PJRT_Buffer*>> outs(
      K, std::vector<PJRT_Buffer*>(num_outputs, nullptr));
  std::vector<PJRT_Buffer* const*> arg_ptrs(K);
  std::vector<PJRT_Buffer**> out_ptrs(K);
  for (int k = 0; k < K; ++k) {
    arg_ptrs[k] = arg_lists[k].data();
    out_ptrs[k] = outs[k].data();
  }
  std::vector<PJRT_Event*> events(K, nullptr);
  PJRT_ExecuteOptions eo{};
  eo.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE;
  PJRT_LoadedExecutable_Execute_Args a{};
  a.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
  a.executable = static_cast<PJRT_LoadedExecutable*>(loaded_it->second);
  a.options = &eo;
  a.argument_lists = arg_ptrs.data();
  a.num_devices = K;
  a.num_args = arg_lists[0].size();
  a.output_lists = out_ptrs.data();
  a.device_complete_events = events.data();
  TPUSIM_RETURN_IF_ERROR(plugin_->ToStatus(
      plugin_->api()->PJRT_LoadedExecutable_Execute(&a),
      absl::StrCat(where(), ": PJRT_LoadedExecutable_Execute")));
  // Own every output and event before looking at errors.
  std::vector<std::vector<std::unique_ptr<PjrtBuffer>>> owned(K);
  absl::Status first = absl::OkStatus();
  for (int k = 0; k < K; ++k) {
    for (size_t o = 0; o < num_outputs; ++o) {
      if (outs[k][o] != nullptr) ++plugin_->live_buffers;
      owned[k].push_back(std::make_unique<PjrtBuffer>(
          this, devices_[xla_devices[k]].get(), TensorSpec(), outs[k][o],
          Shape(), std::nullopt));
    }
    if (events[k] != nullptr) {
      ++plugin_->live_events;
      absl::Status s = plugin_->AwaitAndDestroy(
          events[k], absl::StrCat(where(), ": replica ", k / C));
      if (first.ok()) first = s;
    }
  }
  // True output types (dynamic programs): the shape rules on true sizes.
  std::vector<std::vector<ValueType>> types(R);
  if (program.has_dynamic_shapes()) {
    const std::vector<Op>& ops = program.ops();
    for (int r = 0; r < R; ++r) {
      types[r].resize(ops.size());
      for (size_t i = 0; i < ops.size(); ++i) {
        const Op& op = ops[i];
        if (op.code == OpCode::kParameter) {
          types[r][i] = true_params[r][op.attrs.parameter_index];
          continue;
        }
        std::vector<const ValueType*> in;
        for (int o : op.operands) in.push_back(&types[r][o]);
        absl::StatusOr<ValueType> t =
            InferOpType(op.code, op.attrs, in, InferContext{R});
        if (!t.ok()) {
          if (first.ok()) first = absl::InvalidArgumentError(absl::StrCat(
                              where(), ": replica ", r, " op %", i, ": ",
                              t.status().message()));
          types[r][i] = op.type;
        } else {
          types[r][i] = *t;
        }
      }
    }
  }
  if (!first.ok()) return first;
  // Each value's result comes from the XLA replica of its core.
  auto take = [&](int k, size_t o, TensorSpec spec, Shape device_shape) {
    PJRT_Buffer* b = outs[k][o];
    owned[k][o]->Release();
    return std::make_unique<PjrtBuffer>(this, devices_[xla_devices[k]].get(),
                                        std::move(spec), b,
                                        std::move(device_shape), std::nullopt);
  };
  SpmdOutputs result(R);
  for (int r = 0; r < R; ++r) {
    for (size_t o = 0; o < program.outputs().size(); ++o) {
      const Value v = program.outputs()[o];
      const ValueType& bound = program.type(v);
      const ValueType& t = types[r].empty() ? bound : types[r][v.id];
      result[r].push_back(take(r * C + program.op(v).logical_core, o,
                               TensorSpec(t.dtype, t.shape), bound.shape));
    }
    for (size_t k = 0; k < module.variable_outputs.size(); ++k) {
      const VariableArg& v = module.variable_outputs[k];
      const VariableDecl* decl = program.FindVariable(v.slot);
      const int xk = r * C + v.core;
      variables_[{xla_devices[xk], v.slot}] =
          take(xk, program.outputs().size() + k,
               TensorSpec(decl->dtype, decl->shape), decl->shape);
    }
  }
  for (int dev : xla_devices) {
    DeviceTally& t = tally_[dev];
    t.executions += 1;
  }
  // The program's op counters on the device of each op's core.
  for (int r = 0; r < R; ++r) {
    for (size_t i = 0; i < program.ops().size(); ++i) {
      const Op& op = program.ops()[i];
      DeviceTally& t = tally_[xla_devices[r * C + op.logical_core]];
      const OpCost c = program.CostOf(Value{static_cast<int>(i)});
      // Bytes moved in from another core (the emitter's collective_permute)
      // and collective operands, counted as HostBackend counts them.
      for (int o : op.operands) {
        if (program.ops()[o].logical_core != op.logical_core)
          t.cross_core_bytes += program.ops()[o].type.byte_size();
      }
      if (IsCollective(op.code))
        t.collective_bytes += program.ops()[op.operands[0]].type.byte_size();
      for (OpCounters* k : {&t.total, &t.per_op[std::string(OpCodeName(op.code))]}) {
        k->set_count(k->count() + 1);
        k->set_flops(k->flops() + c.flops);
        k->set_transcendentals(k->transcendentals() + c.transcendentals);
        k->set_bytes_read(k->bytes_read() + c.bytes_read);
        k->set_bytes_written(k->bytes_written() + c.bytes_written);
      }
    }
  }
  StepProfile step;
  step.set_start_ps(start_ps);
  step.set_end_ps(NowPs());
  step.set_steps(1);
  steps_.push_back(step);
  return result;
}

absl::StatusOr<SpmdOutputs> PjrtBackend::ExecuteSpmdLoop(
    const Executable& executable, const SpmdAssignment& assignment,
    absl::Span<const std::vector<std::vector<Buffer*>>> per_iteration_args) {
  std::vector<int64_t> before;
  for (const DeviceTally& t : tally_) before.push_back(t.executions);
  const size_t steps_before = steps_.size();
  absl::StatusOr<SpmdOutputs> out =
      Backend::ExecuteSpmdLoop(executable, assignment, per_iteration_args);
  // One device call: one execution per device that ran, one step record.
  for (size_t d = 0; d < tally_.size(); ++d) {
    if (tally_[d].executions > before[d]) tally_[d].executions = before[d] + 1;
  }
  if (steps_.size() > steps_before) {
    StepProfile merged;
    merged.set_start_ps(steps_[steps_before].start_ps());
    merged.set_end_ps(steps_.back().end_ps());
    merged.set_steps(static_cast<int64_t>(steps_.size() - steps_before));
    steps_.resize(steps_before);
    steps_.push_back(merged);
  }
  return out;
}

absl::StatusOr<Profile> PjrtBackend::CollectProfile() const {
  Profile p;
  p.set_backend("pjrt");
  for (size_t d = 0; d < tally_.size(); ++d) {
    DeviceProfile* dp = p.add_devices();
    dp->set_device_id(static_cast<int>(d));
    dp->set_executions(tally_[d].executions);
    dp->set_host_to_device_bytes(tally_[d].host_to_device_bytes);
    dp->set_device_to_host_bytes(tally_[d].device_to_host_bytes);
    dp->set_cross_core_bytes(tally_[d].cross_core_bytes);
    dp->set_collective_bytes(tally_[d].collective_bytes);
    *dp->mutable_total() = tally_[d].total;
    for (const auto& [name, c] : tally_[d].per_op) (*dp->mutable_per_op())[name] = c;
  }
  for (const StepProfile& s : steps_) *p.add_steps() = s;
  if (!steps_.empty()) p.set_end_ps(steps_.back().end_ps());
  return p;
}

void PjrtBackend::ResetProfile() {
  for (DeviceTally& t : tally_) t = DeviceTally{};
  steps_.clear();
}

}  // namespace tpusim::runtime::pjrt
