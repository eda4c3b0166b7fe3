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

// SimBackend's compiler for `tpusim run --compiler xla-tpu`
// (SimBackend::SetCompiler): each program compiled by libtpu for the
// backend's slice and imported (sim/xla/hlo_import.h). The HBM footprint is
// the compiler's: variables = the variables' argument bytes, parameters = the
// rest of the arguments, live peak = outputs - aliased + temporaries +
// generated code (so the capacity check compares the compiler's total).
// Unimplemented for programs with several cores per replica. `on_compiled`
// (may be empty) sees each compile's result.
sim::ExternalCompiler XlaTpuSimCompiler(
    XlaTpuStepOptions options,
    std::function<void(const XlaTpuStep&)> on_compiled = nullptr);

}  // namespace tpusim::scenarios

#endif  // TPUSIM_SCENARIOS_XLA_TPU_STEP_H_
