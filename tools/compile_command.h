// tools/compile_command.h
//
// `tpusim compile SCENARIO [--set PATH=VALUE]... [--format=text|json]`: the
// scenario's training step traced by TPUStrategy for its slice and compiled
// by tpusim's compiler (sim/compile), without simulating: the fused kernels
// in summary and the per-device HBM plan (model parameters, optimizer state,
// live activations and temporaries, the step's inputs, infeed buffers) against
// the chip's capacity, with a verdict. Exit 1 when the step does not fit.
//
// `tpusim compile --program FILE [--no-fusion] [--infeed-depth=N]`: a
// serialized Program (tpusim.proto.ProgramProto, text format, or binary when
// the file name ends in .pb): the program text, then the kernels in issue
// order with their fused ops, HBM bytes, collective start/done pairs and
// copies, then each logical core's peak HBM footprint.
//
// The seam for other compilers: CompileScenarioStep computes one compiler's
// view (a StepCompileView); the text and JSON writers print any view.

#ifndef TPUSIM_TOOLS_COMPILE_COMMAND_H_
#define TPUSIM_TOOLS_COMPILE_COMMAND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scenarios/scenario_loader.h"
#include "sim/compile/compile.h"
#include "strategy/runtime/program.h"
#include "tools/cli.h"
#include "tools/json_writer.h"

namespace tpusim::tools {

// One compiler's view of a scenario's step on its slice.
struct StepCompileView {
  std::string compiler;  // "tpusim" (sim/compile)
  std::string scenario;
  std::string workload;
  std::string slice;
  std::string generation;
  int chips = 0;
  int devices = 0;
  int replicas = 0;
  int cores_per_replica = 1;
  int64_t global_batch = 0;
  int64_t hbm_capacity_bytes = 0;  // per device
  // The kernels: counts by kind, ops fused into compute kernels, FLOPs and
  // HBM bytes of one replica's step.
  int64_t kernels = 0;
  int64_t mxu_kernels = 0;
  int64_t vector_kernels = 0;
  int64_t collectives = 0;  // start/done pairs
  int64_t copies = 0;
  int64_t fused_ops = 0;    // ops evaluated by compute kernels
  int64_t program_ops = 0;
  int64_t flops = 0;
  int64_t hbm_traffic_bytes = 0;
  // The HBM plan of the device with the largest footprint (its logical core).
  int plan_core = 0;
  sim::CoreMemory plan;
  int64_t plan_total_bytes = 0;
  bool fits = false;
};

// tpusim's own compiler: the scenario's step traced by TPUStrategy on a host
// backend laid out as its slice (abstract values, nothing runs) and compiled
// as SimBackend compiles it. InvalidArgument for a scenario without `run`.
absl::StatusOr<StepCompileView> CompileScenarioStep(
    const scenarios::LoadedScenario& scenario);

std::string StepCompileViewText(const StepCompileView& view);
Json StepCompileViewJson(const StepCompileView& view);

Subcommand CompileCommand();

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_COMPILE_COMMAND_H_
