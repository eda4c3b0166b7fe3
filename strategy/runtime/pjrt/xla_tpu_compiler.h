// strategy/runtime/pjrt/xla_tpu_compiler.h
//
// The real XLA:TPU compiler, without a TPU: libtpu (the PJRT plugin of the
// pinned PyPI package `libtpu`) compiles a program for a named TPU topology
// ("v4:2x2x1", "v5e:2x2") through the PJRT C API:
//   PJRT_TopologyDescription_Create -> PJRT_Compile (topology, no client) ->
//   PJRT_Executable_OptimizedProgram, PJRT_Executable_GetCompiledMemoryStats,
//   PJRT_Executable_GetCostAnalysis.
//
//   XlaTpuCompileRequest request;
//   request.topology = "v4:2x2x1";
//   request.program = stablehlo_text;  // format "mlir"
//   request.device_assignment = {{0}, {1}, {2}, {3}};  // 4 replicas
//   TPUSIM_ASSIGN_OR_RETURN(XlaTpuCompileResult r,
//                           CompileForTpu(DefaultLibtpuPath(), request));
//
// Contract:
//  * The plugin is loaded by PjrtPlugin::Load (API major version checked; the
//    functions used are checked with Require, so a libtpu whose PJRT_Api lacks
//    one is Unimplemented naming it and both API versions).
//  * Before the first load, TPU_SKIP_MDS_QUERY=1 is set unless the user set
//    it: libtpu would otherwise ask the GCE metadata server for the machine's
//    TPU configuration, which a machine without TPUs does not have; and
//    TPU_WORKER_HOSTNAMES=localhost, TPU_HOST_BOUNDS=1,1,1 unless set (libtpu
//    logs errors at load without them); ALLOW_MULTIPLE_LIBTPU_LOAD=1 unless
//    set (without it a second process using libtpu fails on libtpu's
//    lockfile). TPU_ACCELERATOR_TYPE set is
//    FailedPrecondition (with it, libtpu 0.0.30 aborts in its cost analysis).
//  * The topology's options: chip_config_name=megacore for v4 and v5p (one
//    device per chip, as TensorFlow and tpusim see those generations), none
//    otherwise (TopologyOptionsFor).
//  * Errors: a topology name libtpu rejects is InvalidArgument with libtpu's
//    message; a program it rejects is libtpu's code and message prefixed
//    "PJRT_Compile"; a compile that runs longer than time_limit_seconds is
//    DeadlineExceeded naming the limit (the compile keeps running on a
//    detached thread; its result is dropped).
//  * Every PJRT object made here is destroyed before return (except after a
//    time-out, where the detached thread destroys them).

#ifndef TPUSIM_STRATEGY_RUNTIME_PJRT_XLA_TPU_COMPILER_H_
#define TPUSIM_STRATEGY_RUNTIME_PJRT_XLA_TPU_COMPILER_H_

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tpusim::runtime::pjrt {

// The default libtpu.so: $TPUSIM_LIBTPU_PATH when set, else the one found in the
// pinned wheel at configure time (empty when none was found).
std::string DefaultLibtpuPath();

// libtpu's topology name for a chip generation ("v4") and chip mesh: "v4:2x2x1"
// (3-D generations), "v5e:2x2" (2-D generations; z must be 1).
std::string TpuTopologyName(absl::string_view generation,
                            int x, int y, int z);

// The topology options tpusim passes for `generation` (see the file comment).
std::vector<std::pair<std::string, std::string>> TopologyOptionsFor(
    absl::string_view generation);

struct XlaTpuCompileRequest {
  // libtpu's topology name (TpuTopologyName).
  std::string topology;
  // String-valued topology options (TopologyOptionsFor).
  std::vector<std::pair<std::string, std::string>> topology_options;
  // The program: StableHLO text or bytecode ("mlir") or a serialized
  // HloModuleProto ("hlo").
  std::string program;
  std::string format = "mlir";
  // device_assignment[r][p]: the topology's device id of replica r, partition
  // p. Non-empty; every row the same length.
  std::vector<std::vector<int64_t>> device_assignment;
  // Instead of ids (when not empty): device_coords[r][p] = (x, y, z, core on
  // chip) of the device of replica r, partition p, matched against the
  // coordinates in libtpu's device descriptions (InvalidArgument naming a
  // coordinate the topology does not have).
  std::vector<std::vector<std::array<int, 4>>> device_coords;
  // Partition the module by its shardings over the partitions (SPMD).
  bool use_spmd_partitioning = false;
  // The module's shardings are Shardy's (sdy dialect): XLA partitions it
  // with Shardy (without, libtpu fails on its `xla.sdy.*` custom calls).
  bool use_shardy_partitioner = false;
  // A compile running longer is DeadlineExceeded; <= 0: no limit.
  double time_limit_seconds = 0;
};

// PJRT_Executable_GetCompiledMemoryStats, per device, in bytes.
struct XlaTpuMemoryStats {
  int64_t generated_code = 0;
  int64_t arguments = 0;
  int64_t outputs = 0;
  // Argument bytes reused for outputs (donation).
  int64_t alias = 0;
  int64_t temporaries = 0;
  // The compiler's peak (0 when the plugin does not report it).
  int64_t peak = 0;
  // arguments + outputs - alias + temporaries + generated_code.
  int64_t Total() const {
    return arguments + outputs - alias + temporaries + generated_code;
  }
};

// (x, y, z, core) of a libtpu device description
// ("TpuDevice(id=3, process_index=0, coords=(1,1,0), core_on_chip=0)");
// InvalidArgument when the text has no such coordinates.
absl::StatusOr<std::array<int, 4>> ParseTpuDeviceCoords(absl::string_view text);

struct XlaTpuCompileResult {
  // "PJRT C API 0.81 (plugin) / 0.81 (tpusim's header)".
  std::string plugin_version;
  // The plugin's attributes ("xla_version", "stablehlo_current_version").
  std::vector<std::pair<std::string, std::string>> plugin_attributes;
  // The device assignment used (ids of the topology's devices).
  std::vector<std::vector<int64_t>> device_assignment;
  // The topology's devices as libtpu describes them
  // ("TpuDevice(id=0, process_index=0, coords=(0,0,0), core_on_chip=0)").
  std::vector<std::string> devices;
  // The optimized, scheduled module and its format ("hlo_with_config": a
  // serialized HloModuleProtoWithConfig; "hlo": a serialized HloModuleProto).
  std::string optimized_program;
  std::string optimized_format;
  XlaTpuMemoryStats memory;
  // PJRT_Executable_GetCostAnalysis, sorted by name ("flops", "bytes
  // accessed", "optimal_seconds", ...).
  std::vector<std::pair<std::string, double>> cost_analysis;
  // Wall time of PJRT_Compile.
  double compile_seconds = 0;
};

// The libtpu probe's program (tools/libtpu_probe.cc), StableHLO text for 4
// replicas: y = x . w (f32 128x256 . 256x512), then an all-reduce (sum) of y
// over all 4.
const char* LibtpuProbeProgram();

// See the file comment. `libtpu_path` empty: FailedPrecondition saying how to
// install libtpu.
absl::StatusOr<XlaTpuCompileResult> CompileForTpu(
    const std::string& libtpu_path, const XlaTpuCompileRequest& request);

}  // namespace tpusim::runtime::pjrt

#endif  // TPUSIM_STRATEGY_RUNTIME_PJRT_XLA_TPU_COMPILER_H_
