#include "scenarios/xla_tpu_step.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scenarios/train_runner.h"
#include "sim/chip/chip_preset.h"
#include "sim/chip/kernel_timing.h"
#include "sim/xla/hlo_import.h"
#include "strategy/runtime/pjrt/stablehlo_emitter.h"

namespace tpusim::scenarios {

absl::StatusOr<XlaTpuStep> CompileStepForTpu(const LoadedScenario& scenario,
                                            const XlaTpuStepOptions& options) {
  const Scenario& sc = scenario.proto;
  std::string slice = sc.run().pod().slice();
  if (slice.empty() && !sc.run().pod().has_generation() &&
      sc.run().pod().shape_size() == 0) {
    slice = sc.cluster().slice();
  }
  if (slice.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        scenario.source_name,
        ": --compiler xla-tpu needs a named slice (run.pod.slice or "
        "cluster.slice): the compiler compiles for its topology"));
  }
  XlaTpuStep step;
  step.scenario = sc.name();
  TPUSIM_ASSIGN_OR_RETURN(step.layout, runtime::ParseSlice(slice));

  // Trace the step as `tpusim run` does; stop at its compile.
  std::optional<runtime::Program> program;
  const absl::Status captured = absl::CancelledError("tpusim: step captured");
  TrainOptions train;
  train.backend = "host";
  train.on_compile = [&](const runtime::Program& p,
                         const runtime::CompileOptions&) {
    program = p;
    return captured;
  };
  LoadedScenario abstract = scenario;
  abstract.proto.mutable_run()->set_real_values(false);
  abstract.proto.mutable_run()->mutable_pod()->set_slice(slice);
  absl::StatusOr<TrainResult> ran = RunTraining(abstract, train);
  if (!program.has_value()) {
    if (!ran.ok()) return ran.status();
    return absl::InternalError(absl::StrCat(
        scenario.source_name, ": the run compiled no program to take"));
  }
  TPUSIM_ASSIGN_OR_RETURN(XlaTpuStep step_of_program,
                          CompileProgramForTpu(*program, step.layout, options));
  step_of_program.scenario = step.scenario;
  return step_of_program;
}

absl::StatusOr<XlaTpuStep> CompileProgramForTpu(
    const runtime::Program& program, const runtime::SliceLayout& layout,
    const XlaTpuStepOptions& options) {
  XlaTpuStep step;
  step.layout = layout;
  if (layout.generation == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--compiler xla-tpu needs a TPU slice; \"", layout.name,
        "\" is a plain layout without a generation"));
  }
  const runtime::TpuGeneration& gen = *layout.generation;
  step.topology = runtime::pjrt::TpuTopologyName(
      gen.name, layout.chip_mesh[0], layout.chip_mesh[1], layout.chip_mesh[2]);
  TPUSIM_ASSIGN_OR_RETURN(const sim::ChipPreset* preset,
                          sim::FindChipPreset(gen.name));
  step.hbm_capacity_per_device =
      sim::DeviceRates::FromPreset(*preset).hbm_capacity.count();
  const std::string& slice = layout.name;
  step.program_name = program.name();
  step.num_replicas = program.num_replicas();
  step.cores_per_replica = program.num_cores_per_replica();

  TPUSIM_ASSIGN_OR_RETURN(runtime::pjrt::EmittedModule emitted,
                          runtime::pjrt::EmitStableHlo(program));
  step.stablehlo_bytes = static_cast<int64_t>(emitted.text.size());
  for (runtime::Value p : program.parameters()) {
    const runtime::ValueType& t = program.type(p);
    TPUSIM_ASSIGN_OR_RETURN(int64_t bytes,
                            runtime::CheckedByteSize(t.dtype, t.shape));
    step.input_argument_bytes += bytes;
  }
  for (const runtime::pjrt::VariableArg& v : emitted.variable_inputs) {
    const runtime::VariableDecl* decl = program.FindVariable(v.slot);
    if (decl == nullptr) continue;
    TPUSIM_ASSIGN_OR_RETURN(int64_t bytes,
                            runtime::CheckedByteSize(decl->dtype, decl->shape));
    step.variable_argument_bytes += bytes;
  }

  runtime::pjrt::XlaTpuCompileRequest request;
  request.topology = step.topology;
  request.topology_options = runtime::pjrt::TopologyOptionsFor(gen.name);
  request.program = std::move(emitted.text);
  request.format = "mlir";
  request.time_limit_seconds = options.time_limit_seconds;
  // XLA replica k = r * C + c on slice device k.
  const int xla_replicas = step.num_replicas * step.cores_per_replica;
  if (xla_replicas > step.layout.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the step spans ", xla_replicas, " devices, slice ", slice, " has ",
        step.layout.num_devices()));
  }
  for (int k = 0; k < xla_replicas; ++k) {
    const runtime::DeviceDescription& d = step.layout.devices[k];
    const std::array<int, 3> xyz = step.layout.ChipCoords(d.chip);
    const int core = d.coords.empty() ? 0 : d.coords.back();
    request.device_coords.push_back({{xyz[0], xyz[1], xyz[2], core}});
  }
  step.libtpu = options.libtpu.empty() ? runtime::pjrt::DefaultLibtpuPath()
                                       : options.libtpu;
  TPUSIM_ASSIGN_OR_RETURN(step.compiled,
                          runtime::pjrt::CompileForTpu(step.libtpu, request));
  TPUSIM_ASSIGN_OR_RETURN(
      step.module, sim::xla::ParseHloModule(step.compiled.optimized_program,
                                            step.compiled.optimized_format));
  TPUSIM_ASSIGN_OR_RETURN(step.schedule,
                          sim::xla::AnalyzeHloModule(step.module));
  return step;
}

sim::ExternalCompiler XlaTpuSimCompiler(
    XlaTpuStepOptions options,
    std::function<void(const XlaTpuStep&)> on_compiled) {
  return [options, on_compiled](const runtime::Program& program,
                                const runtime::SliceLayout& layout)
             -> absl::StatusOr<sim::ExternalCompiledProgram> {
    if (program.num_cores_per_replica() != 1) {
      return absl::UnimplementedError(absl::StrCat(
          "program ", program.name(), " has ",
          program.num_cores_per_replica(),
          " cores per replica: --compiler xla-tpu times data-parallel "
          "programs (one core per replica) only"));
    }
    TPUSIM_ASSIGN_OR_RETURN(XlaTpuStep step,
                            CompileProgramForTpu(program, layout, options));
    if (on_compiled) on_compiled(step);
    const runtime::pjrt::XlaTpuMemoryStats& m = step.compiled.memory;
    sim::CoreMemory memory;
    memory.variables = std::min(step.variable_argument_bytes, m.arguments);
    memory.parameters = m.arguments - memory.variables;
    memory.live_peak = m.outputs - m.alias + m.temporaries + m.generated_code;
    memory.largest_at_peak = {absl::StrCat(
        "the XLA:TPU compiler's numbers: arguments ", m.arguments,
        ", outputs ", m.outputs, ", aliased ", m.alias, ", temporaries ",
        m.temporaries, ", generated code ", m.generated_code)};
    return sim::xla::ImportSchedule(
        step.schedule, static_cast<int>(program.parameters().size()), memory);
  };
}

}  // namespace tpusim::scenarios
