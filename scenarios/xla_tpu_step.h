// scenarios/xla_tpu_step.h
//
// A scenario's training step compiled by the real XLA:TPU compiler (libtpu,
// strategy/runtime/pjrt/xla_tpu_compiler.h) for the scenario's slice, and the
// compiled module read back (sim/xla): what `tpusim compile SCENARIO
// --compiler xla-tpu` prints and what `tpusim run --compiler xla-tpu` times.
//
//   TPUSIM_ASSIGN_OR_RETURN(LoadedScenario s, LoadScenarioFile(path));
//   TPUSIM_ASSIGN_OR_RETURN(XlaTpuStep step, CompileStepForTpu(s, {}));
//   step.compiled.memory.temporaries ...; step.schedule.kernels ...
//
// How: the scenario is traced exactly as `tpusim run` traces it (RunTraining
// on the host backend, abstract values) and stopped at the first program the
// strategy compiles, the training step. The step is emitted as StableHLO
// (pjrt/stablehlo_emitter.h: R replicas x C cores = R*C XLA replicas, one
// partition) and compiled for libtpu's topology of the slice
// (TpuTopologyName of its generation and chip mesh); XLA replica k runs on
// the slice's device k, matched to libtpu's device at the same chip
// coordinates and core.
//
// A scenario with run.program compiles its module instead
// (CompileModuleForTpu).
//
// Errors: a scenario without a named slice (run.pod.slice or cluster.slice)
// is InvalidArgument; the tracing errors of `tpusim run`; the compiler's
// (xla_tpu_compiler.h); the importer's (sim/xla).

#ifndef TPUSIM_SCENARIOS_XLA_TPU_STEP_H_
#define TPUSIM_SCENARIOS_XLA_TPU_STEP_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "scenarios/scenario_loader.h"
#include "scenarios/train_runner.h"
#include "sim/xla/hlo_analysis.h"
#include "sim/sim_backend.h"
#include "sim/xla/hlo_module.h"
#include "strategy/runtime/pjrt/xla_tpu_compiler.h"
#include "strategy/runtime/slice.h"

namespace tpusim::scenarios {

struct XlaTpuStepOptions {
  // libtpu.so; "" = runtime::pjrt::DefaultLibtpuPath().
  std::string libtpu;
  // A compile running longer is DeadlineExceeded (<= 0: no limit).
  double time_limit_seconds = 600;
};

struct XlaTpuStep {
  std::string scenario;  // the scenario's name
  runtime::SliceLayout layout;
  std::string libtpu;    // the libtpu.so used
  std::string topology;  // libtpu's topology name ("v4:2x2x1")
  std::string program_name;
  int num_replicas = 0;
  int cores_per_replica = 1;
  // run.program (CompileModuleForTpu): the module's path and format ("mlir":
  // StableHLO text or bytecode; "hlo": a serialized HloModuleProto), and
  // whether it was SPMD-partitioned (it has shardings: num_replicas 1,
  // num_partitions = the slice's devices) or replicated (num_replicas = the
  // slice's devices, num_partitions 1). Empty path: a traced step.
  std::string module_path;
  std::string module_format;
  bool spmd = false;
  int num_partitions = 1;
  // The emitted StableHLO text's size, and the bytes of the module's
  // arguments split by kind (per XLA replica): the program's parameters (the
  // step's inputs: the batch) and the variables it reads (model parameters
  // and optimizer state).
  int64_t stablehlo_bytes = 0;
  int64_t input_argument_bytes = 0;
  int64_t variable_argument_bytes = 0;
  // HBM capacity of one device of the slice's chip preset.
  int64_t hbm_capacity_per_device = 0;
  runtime::pjrt::XlaTpuCompileResult compiled;
  sim::xla::HloModule module;
  sim::xla::HloSchedule schedule;
};

absl::StatusOr<XlaTpuStep> CompileStepForTpu(const LoadedScenario& scenario,
                                            const XlaTpuStepOptions& options);

// The same for one traced program on `layout` (a named TPU slice).
absl::StatusOr<XlaTpuStep> CompileProgramForTpu(
    const runtime::Program& program, const runtime::SliceLayout& layout,
    const XlaTpuStepOptions& options);

// A user's module (run.program: `path` as given, after resolving against the
// scenario's directory) compiled for `layout` (a named TPU slice) over all
// its devices: XLA replica or partition k on the slice's device k. The
// format: ".mlir" (or content starting with MLIR's bytecode magic, or text
// with a `module` and `func.func`) is StableHLO ("mlir"); ".pb", ".hlo.pb",
// ".hlopb", ".binpb" (or content that decodes as an HloModuleProto) is a
// serialized HloModuleProto ("hlo"). Shardings (`mhlo.sharding`,
// `sdy.sharding` in StableHLO; HloInstructionProto.sharding) select SPMD
// partitioning. Errors: the file's (NotFound / PermissionDenied /
// InvalidArgument naming the path: ReadRegularFile); HLO text (content
// starting "HloModule "; InvalidArgument: libtpu's PJRT compile takes HLO as
// a serialized proto only); an unknown format
// (InvalidArgument naming the path, its extension and first bytes); libtpu's
// (its message, prefixed with the path); the importer's.
absl::StatusOr<XlaTpuStep> CompileModuleForTpu(
    const std::string& path, const runtime::SliceLayout& layout,
    const XlaTpuStepOptions& options);

// The per-device HBM of a compiled step in SimBackend's categories
// (XlaTpuSimCompiler's mapping, below).
sim::CoreMemory XlaTpuCoreMemory(const XlaTpuStep& step);

// SimBackend's compiler for `tpusim run --compiler xla-tpu`
// (SimBackend::SetCompiler): each program compiled by libtpu for the
// backend's slice and imported (sim/xla/hlo_import.h). The HBM footprint is
// the compiler's: variables = the variables' argument bytes, parameters = the
// rest of the arguments, live peak = outputs - aliased + temporaries +
// generated code (so the capacity check compares the compiler's total).
// A program with C > 1 cores per replica is emitted as R * C XLA replicas
// that each run the whole module (pjrt/stablehlo_emitter.h) and timed so
// (ExternalCompiledProgram::xla_replicas_per_replica). `on_compiled`
// (may be empty) sees each compile's result.
sim::ExternalCompiler XlaTpuSimCompiler(
    XlaTpuStepOptions options,
    std::function<void(const XlaTpuStep&)> on_compiled = nullptr);

// TrainOptions::compile_module for `tpusim run --compiler xla-tpu` with
// run.program: CompileModuleForTpu, imported with no program parameters (no
// infeed), the compiler's HBM numbers (XlaTpuCoreMemory: every argument a
// resident parameter) and the cost analysis's "flops" per device.
// `on_compiled` (may be empty) sees the compile's result.
std::function<absl::StatusOr<ModuleProgram>(const std::string&,
                                            const runtime::SliceLayout&)>
XlaTpuModuleCompiler(
    XlaTpuStepOptions options,
    std::function<void(const XlaTpuStep&)> on_compiled = nullptr);

}  // namespace tpusim::scenarios

#endif  // TPUSIM_SCENARIOS_XLA_TPU_STEP_H_
