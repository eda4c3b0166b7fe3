#include "strategy/runtime/pjrt/xla_tpu_compiler.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "strategy/runtime/pjrt/compile_options.h"
#include "strategy/runtime/pjrt/pjrt_plugin.h"

#ifndef TPUSIM_LIBTPU_DEFAULT_PATH
#define TPUSIM_LIBTPU_DEFAULT_PATH ""
#endif

namespace tpusim::runtime::pjrt {
namespace {

// tpusim choice: lines of a compiler error kept (its out-of-memory report
// lists every allocation).
constexpr size_t kMaxErrorLines = 40;

#define TPUSIM_REQUIRE_PJRT(plugin, fn) \
  TPUSIM_RETURN_IF_ERROR((plugin)->Require(#fn, TPUSIM_PJRT_FN_OFFSET(fn)))

void DestroyExecutable(PjrtPlugin* plugin, PJRT_Executable* executable) {
  if (executable == nullptr) return;
  PJRT_Executable_Destroy_Args d{};
  d.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
  d.executable = executable;
  plugin->api()->PJRT_Executable_Destroy(&d);
}

void DestroyTopology(PjrtPlugin* plugin, PJRT_TopologyDescription* topology) {
  if (topology == nullptr) return;
  PJRT_TopologyDescription_Destroy_Args d{};
  d.struct_size = PJRT_TopologyDescription_Destroy_Args_STRUCT_SIZE;
  d.topology = topology;
  plugin->api()->PJRT_TopologyDescription_Destroy(&d);
}

// Everything PJRT_Compile reads, owned here so that a compile that outlives
// its time limit (on a detached thread) still reads live memory.
struct CompileJob {
  PjrtPlugin* plugin = nullptr;
  PJRT_TopologyDescription* topology = nullptr;
  std::string program;
  std::string format;
  std::string options;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  absl::Status status;
  PJRT_Executable* executable = nullptr;
  double seconds = 0;

  ~CompileJob() {
    DestroyExecutable(plugin, executable);
    DestroyTopology(plugin, topology);
  }
};

void RunCompile(std::shared_ptr<CompileJob> job) {
  PJRT_Program program{};
  program.struct_size = PJRT_Program_STRUCT_SIZE;
  program.code = job->program.data();
  program.code_size = job->program.size();
  program.format = job->format.data();
  program.format_size = job->format.size();
  PJRT_Compile_Args args{};
  args.struct_size = PJRT_Compile_Args_STRUCT_SIZE;
  args.topology = job->topology;
  args.program = &program;
  args.compile_options = job->options.data();
  args.compile_options_size = job->options.size();
  const auto start = std::chrono::steady_clock::now();
  absl::Status s =
      job->plugin->ToStatus(job->plugin->api()->PJRT_Compile(&args),
                            "PJRT_Compile");
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  std::lock_guard<std::mutex> lock(job->mu);
  job->status = s;
  job->executable = args.executable;
  job->seconds = seconds;
  job->done = true;
  job->cv.notify_all();
}

absl::Status ReadOptimizedProgram(PjrtPlugin* plugin,
                                  PJRT_Executable* executable,
                                  XlaTpuCompileResult* result) {
  PJRT_Program program{};
  program.struct_size = PJRT_Program_STRUCT_SIZE;
  PJRT_Executable_OptimizedProgram_Args args{};
  args.struct_size = PJRT_Executable_OptimizedProgram_Args_STRUCT_SIZE;
  args.executable = executable;
  args.program = &program;
  // First call: code == nullptr asks for the size.
  absl::Status s = plugin->ToStatus(
      plugin->api()->PJRT_Executable_OptimizedProgram(&args),
      "PJRT_Executable_OptimizedProgram");
  if (!s.ok()) return s;
  result->optimized_program.assign(program.code_size, '\0');
  program.code = result->optimized_program.data();
  s = plugin->ToStatus(plugin->api()->PJRT_Executable_OptimizedProgram(&args),
                       "PJRT_Executable_OptimizedProgram");
  if (!s.ok()) return s;
  result->optimized_program.resize(program.code_size);
  result->optimized_format.assign(program.format, program.format_size);
  return absl::OkStatus();
}

absl::Status ReadMemoryStats(PjrtPlugin* plugin, PJRT_Executable* executable,
                             XlaTpuMemoryStats* stats) {
  PJRT_Executable_GetCompiledMemoryStats_Args args{};
  args.struct_size = PJRT_Executable_GetCompiledMemoryStats_Args_STRUCT_SIZE;
  args.executable = executable;
  absl::Status s = plugin->ToStatus(
      plugin->api()->PJRT_Executable_GetCompiledMemoryStats(&args),
      "PJRT_Executable_GetCompiledMemoryStats");
  if (!s.ok()) return s;
  stats->generated_code = args.generated_code_size_in_bytes;
  stats->arguments = args.argument_size_in_bytes;
  stats->outputs = args.output_size_in_bytes;
  stats->alias = args.alias_size_in_bytes;
  stats->temporaries = args.temp_size_in_bytes;
  stats->peak = args.peak_memory_in_bytes;
  return absl::OkStatus();
}

absl::Status ReadCostAnalysis(
    PjrtPlugin* plugin, PJRT_Executable* executable,
    std::vector<std::pair<std::string, double>>* cost) {
  PJRT_Executable_GetCostAnalysis_Args args{};
  args.struct_size = PJRT_Executable_GetCostAnalysis_Args_STRUCT_SIZE;
  args.executable = executable;
  absl::Status s = plugin->ToStatus(
      plugin->api()->PJRT_Executable_GetCostAnalysis(&args),
      "PJRT_Executable_GetCostAnalysis");
  if (!s.ok()) return s;
  for (size_t i = 0; i < args.num_properties; ++i) {
    const PJRT_NamedValue& v = args.properties[i];
    double value = 0;
    if (v.type == PJRT_NamedValue_kFloat) {
      value = v.float_value;
    } else if (v.type == PJRT_NamedValue_kInt64) {
      value = static_cast<double>(v.int64_value);
    } else {
      continue;
    }
    cost->emplace_back(std::string(v.name, v.name_size), value);
  }
  std::sort(cost->begin(), cost->end());
  return absl::OkStatus();
}

// The probe's program (LibtpuProbeProgram).
constexpr char kProbeProgram[] = R"(module @libtpu_probe attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%x: tensor<128x256xf32>, %w: tensor<256x512xf32>) -> tensor<128x512xf32> {
    %y = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<128x256xf32>, tensor<256x512xf32>) -> tensor<128x512xf32>
    %s = "stablehlo.all_reduce"(%y) <{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %c : tensor<f32>
    }) : (tensor<128x512xf32>) -> tensor<128x512xf32>
    return %s : tensor<128x512xf32>
  }
}
)";

}  // namespace

const char* LibtpuProbeProgram() { return kProbeProgram; }

absl::StatusOr<std::array<int, 4>> ParseTpuDeviceCoords(
    absl::string_view text) {
  std::array<int, 4> c = {0, 0, 0, 0};
  const size_t at = text.find("coords=(");
  const size_t core = text.find("core_on_chip=");
  if (at == absl::string_view::npos || core == absl::string_view::npos ||
      std::sscanf(std::string(text.substr(at)).c_str(), "coords=(%d,%d,%d)",
                  &c[0], &c[1], &c[2]) != 3 ||
      std::sscanf(std::string(text.substr(core)).c_str(), "core_on_chip=%d",
                  &c[3]) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "libtpu device description \"", text,
        "\" has no coords=(x,y,z) and core_on_chip=c"));
  }
  return c;
}

std::string DefaultLibtpuPath() {
  const char* env = ::getenv("TPUSIM_LIBTPU_PATH");
  if (env != nullptr && env[0] != '\0') return env;
  return TPUSIM_LIBTPU_DEFAULT_PATH;
}

std::string TpuTopologyName(absl::string_view generation, int x, int y,
                            int z) {
  const bool three_d = generation == "v4" || generation == "v5p";
  if (three_d) return absl::StrFormat("%s:%dx%dx%d", generation, x, y, z);
  return absl::StrFormat("%s:%dx%d", generation, x, y);
}

std::vector<std::pair<std::string, std::string>> TopologyOptionsFor(
    absl::string_view generation) {
  if (generation == "v4" || generation == "v5p") {
    return {{"chip_config_name", "megacore"}};
  }
  return {};
}

absl::StatusOr<XlaTpuCompileResult> CompileForTpu(
    const std::string& libtpu_path, const XlaTpuCompileRequest& request) {
  if (libtpu_path.empty()) {
    return absl::FailedPreconditionError(
        "libtpu is not installed: run tools/setup.sh (it installs the pinned "
        "libtpu wheel of tools/requirements.txt) and reconfigure, or set "
        "TPUSIM_LIBTPU_PATH to a libtpu.so");
  }
  struct stat st;
  if (::stat(libtpu_path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(
        "libtpu \"", libtpu_path,
        "\" does not exist: run tools/setup.sh (it installs the pinned libtpu "
        "wheel of tools/requirements.txt) or pass --libtpu PATH / set "
        "TPUSIM_LIBTPU_PATH"));
  }
  if ((request.device_assignment.empty() ||
       request.device_assignment[0].empty()) &&
      (request.device_coords.empty() || request.device_coords[0].empty())) {
    return absl::InvalidArgumentError(
        "xla-tpu compile: the device assignment is empty");
  }
  // libtpu asks the GCE metadata server for the machine's TPU unless told not
  // to; a machine without TPUs has none to describe. Without a worker host
  // name it logs an error at load; this process is its only worker.
  ::setenv("TPU_SKIP_MDS_QUERY", "1", /*overwrite=*/0);
  ::setenv("TPU_WORKER_HOSTNAMES", "localhost", /*overwrite=*/0);
  // Without host bounds libtpu prints a warning at load; the topology (and
  // its hosts) comes from the topology name either way (a v4:2x2x2 step
  // compiles to the same module with and without).
  ::setenv("TPU_HOST_BOUNDS", "1,1,1", /*overwrite=*/0);
  // libtpu takes /tmp/libtpu_lockfile so that one process owns the TPU; a
  // compiler-only process owns none, and tests and sweeps run several.
  ::setenv("ALLOW_MULTIPLE_LIBTPU_LOAD", "1", /*overwrite=*/0);
  // Found by the probe: with TPU_ACCELERATOR_TYPE set, libtpu 0.0.30 aborts
  // the process in PJRT_Executable_GetCostAnalysis for a megacore topology
  // (it looks for a chip config file that only a TPU VM has).
  if (const char* type = ::getenv("TPU_ACCELERATOR_TYPE");
      type != nullptr && type[0] != '\0') {
    return absl::FailedPreconditionError(absl::StrCat(
        "TPU_ACCELERATOR_TYPE=", type,
        " is set: unset it for --compiler xla-tpu (the topology comes from the "
        "slice; with it set, libtpu aborts in its cost analysis on a machine "
        "without TPUs)"));
  }
  absl::StatusOr<PjrtPlugin*> loaded = PjrtPlugin::Load(libtpu_path);
  if (!loaded.ok()) {
    return absl::Status(loaded.status().code(),
                        absl::StrCat("libtpu: ", loaded.status().message()));
  }
  PjrtPlugin* plugin = *loaded;
  TPUSIM_REQUIRE_PJRT(plugin, PJRT_TopologyDescription_Create);
  TPUSIM_REQUIRE_PJRT(plugin, PJRT_TopologyDescription_Destroy);
  TPUSIM_REQUIRE_PJRT(plugin, PJRT_TopologyDescription_GetDeviceDescriptions);
  TPUSIM_REQUIRE_PJRT(plugin, PJRT_DeviceDescription_ToString);
  TPUSIM_REQUIRE_PJRT(plugin, PJRT_Compile);
  TPUSIM_REQUIRE_PJRT(plugin, PJRT_Executable_Destroy);
  TPUSIM_REQUIRE_PJRT(plugin, PJRT_Executable_OptimizedProgram);
  TPUSIM_REQUIRE_PJRT(plugin, PJRT_Executable_GetCompiledMemoryStats);
  TPUSIM_REQUIRE_PJRT(plugin, PJRT_Executable_GetCostAnalysis);
  const PJRT_Api* api = plugin->api();

  XlaTpuCompileResult result;
  result.plugin_version = plugin->VersionString();
  for (const auto& [k, v] : plugin->attributes()) {
    result.plugin_attributes.emplace_back(k, v);
  }

  auto job = std::make_shared<CompileJob>();
  job->plugin = plugin;
  std::vector<PJRT_NamedValue> options;
  for (const auto& [name, value] : request.topology_options) {
    PJRT_NamedValue v{};
    v.struct_size = PJRT_NamedValue_STRUCT_SIZE;
    v.name = name.data();
    v.name_size = name.size();
    v.type = PJRT_NamedValue_kString;
    v.string_value = value.data();
    v.value_size = value.size();
    options.push_back(v);
  }
  PJRT_TopologyDescription_Create_Args create{};
  create.struct_size = PJRT_TopologyDescription_Create_Args_STRUCT_SIZE;
  create.topology_name = request.topology.data();
  create.topology_name_size = request.topology.size();
  create.create_options = options.data();
  create.num_options = options.size();
  absl::Status s = plugin->ToStatus(
      api->PJRT_TopologyDescription_Create(&create),
      absl::StrCat("libtpu rejects topology \"", request.topology, "\""));
  if (!s.ok()) return s;
  job->topology = create.topology;

  PJRT_TopologyDescription_GetDeviceDescriptions_Args devices{};
  devices.struct_size =
      PJRT_TopologyDescription_GetDeviceDescriptions_Args_STRUCT_SIZE;
  devices.topology = job->topology;
  s = plugin->ToStatus(
      api->PJRT_TopologyDescription_GetDeviceDescriptions(&devices),
      "PJRT_TopologyDescription_GetDeviceDescriptions");
  if (!s.ok()) return s;
  for (size_t i = 0; i < devices.num_descriptions; ++i) {
    PJRT_DeviceDescription_ToString_Args text{};
    text.struct_size = PJRT_DeviceDescription_ToString_Args_STRUCT_SIZE;
    text.device_description = devices.descriptions[i];
    s = plugin->ToStatus(api->PJRT_DeviceDescription_ToString(&text),
                         "PJRT_DeviceDescription_ToString");
    if (!s.ok()) return s;
    result.devices.emplace_back(text.to_string, text.to_string_size);
  }
  result.device_assignment = request.device_assignment;
  if (!request.device_coords.empty()) {
    std::map<std::array<int, 4>, int64_t> by_coords;
    for (size_t i = 0; i < result.devices.size(); ++i) {
      using Coords = std::array<int, 4>;
      TPUSIM_ASSIGN_OR_RETURN(Coords c, ParseTpuDeviceCoords(result.devices[i]));
      by_coords[c] = static_cast<int64_t>(i);
    }
    result.device_assignment.clear();
    for (const auto& row : request.device_coords) {
      result.device_assignment.emplace_back();
      for (const std::array<int, 4>& c : row) {
        auto it = by_coords.find(c);
        if (it == by_coords.end()) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "xla-tpu compile: topology \"%s\" has no device at coords "
              "(%d,%d,%d) core %d",
              request.topology, c[0], c[1], c[2], c[3]));
        }
        result.device_assignment.back().push_back(it->second);
      }
    }
  }
  for (const auto& row : result.device_assignment) {
    for (int64_t id : row) {
      if (id < 0 || id >= static_cast<int64_t>(result.devices.size())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "xla-tpu compile: device ", id, " is not in topology \"",
            request.topology, "\", which has ", result.devices.size(),
            " devices (0..", result.devices.size() - 1, ")"));
      }
    }
  }

  job->program = request.program;
  job->format = request.format;
  job->options = EncodeCompileOptions(result.device_assignment,
                                      request.use_spmd_partitioning,
                                      request.use_shardy_partitioner);
  std::thread worker(RunCompile, job);
  {
    std::unique_lock<std::mutex> lock(job->mu);
    if (request.time_limit_seconds > 0) {
      const bool finished = job->cv.wait_for(
          lock, std::chrono::duration<double>(request.time_limit_seconds),
          [&] { return job->done; });
      if (!finished) {
        lock.unlock();
        worker.detach();
        return absl::DeadlineExceededError(absl::StrFormat(
            "xla-tpu compile for topology \"%s\" exceeded its time limit of "
            "%g s (--compile-time-limit)",
            request.topology, request.time_limit_seconds));
      }
    } else {
      job->cv.wait(lock, [&] { return job->done; });
    }
  }
  worker.join();
  if (!job->status.ok()) {
    // XLA:TPU's out-of-memory report lists every large allocation; the
    // summary (the first lines) names the totals and the largest ones.
    const std::vector<std::string> lines =
        absl::StrSplit(job->status.message(), '\n');
    if (lines.size() > kMaxErrorLines) {
      return absl::Status(
          job->status.code(),
          absl::StrCat(absl::StrJoin(lines.begin(),
                                     lines.begin() + kMaxErrorLines, "\n"),
                       "\n(", lines.size() - kMaxErrorLines,
                       " more lines of the compiler's report)"));
    }
    return job->status;
  }
  ++plugin->live_executables;
  result.compile_seconds = job->seconds;
  s = ReadOptimizedProgram(plugin, job->executable, &result);
  if (s.ok()) s = ReadMemoryStats(plugin, job->executable, &result.memory);
  if (s.ok()) s = ReadCostAnalysis(plugin, job->executable, &result.cost_analysis);
  --plugin->live_executables;
  if (!s.ok()) return s;
  return result;
}

}  // namespace tpusim::runtime::pjrt
