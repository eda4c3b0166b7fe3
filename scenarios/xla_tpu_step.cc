#include "scenarios/xla_tpu_step.h"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file_io.h"
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
  if (sc.run().has_program()) {
    TPUSIM_ASSIGN_OR_RETURN(
        XlaTpuStep module,
        CompileModuleForTpu(ResolveScenarioPath(scenario, sc.run().program()),
                            step.layout, options));
    module.scenario = step.scenario;
    return module;
  }

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

namespace {

// The target of a compile for `layout`: libtpu's topology, its options, the
// chip's HBM capacity, the libtpu used.
absl::Status PrepareTarget(const runtime::SliceLayout& layout,
                           const XlaTpuStepOptions& options, XlaTpuStep* step,
                           runtime::pjrt::XlaTpuCompileRequest* request) {
  step->layout = layout;
  if (layout.generation == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--compiler xla-tpu needs a TPU slice; \"", layout.name,
        "\" is a plain layout without a generation"));
  }
  const runtime::TpuGeneration& gen = *layout.generation;
  step->topology = runtime::pjrt::TpuTopologyName(
      gen.name, layout.chip_mesh[0], layout.chip_mesh[1], layout.chip_mesh[2]);
  TPUSIM_ASSIGN_OR_RETURN(const sim::ChipPreset* preset,
                          sim::FindChipPreset(gen.name));
  step->hbm_capacity_per_device =
      sim::DeviceRates::FromPreset(*preset).hbm_capacity.count();
  step->libtpu = options.libtpu.empty() ? runtime::pjrt::DefaultLibtpuPath()
                                        : options.libtpu;
  request->topology = step->topology;
  request->topology_options = runtime::pjrt::TopologyOptionsFor(gen.name);
  request->time_limit_seconds = options.time_limit_seconds;
  return absl::OkStatus();
}

// (x, y, z, core on chip) of the slice's device k, as libtpu's device
// descriptions give them.
std::array<int, 4> TpuCoordsOf(const runtime::SliceLayout& layout, int k) {
  const runtime::DeviceDescription& d = layout.devices[k];
  const std::array<int, 3> xyz = layout.ChipCoords(d.chip);
  const int core = d.coords.empty() ? 0 : d.coords.back();
  return {xyz[0], xyz[1], xyz[2], core};
}

// Compiles `request` and reads the optimized module back into `step`.
absl::Status CompileAndImport(const runtime::pjrt::XlaTpuCompileRequest& request,
                              XlaTpuStep* step) {
  TPUSIM_ASSIGN_OR_RETURN(step->compiled,
                          runtime::pjrt::CompileForTpu(step->libtpu, request));
  TPUSIM_ASSIGN_OR_RETURN(
      step->module, sim::xla::ParseHloModule(step->compiled.optimized_program,
                                             step->compiled.optimized_format));
  TPUSIM_ASSIGN_OR_RETURN(step->schedule,
                          sim::xla::AnalyzeHloModule(step->module));
  return absl::OkStatus();
}

// tpusim choice: a module file larger than this is refused before reading
// (the example modules are kilobytes; a large model's StableHLO with its
// constants elided is megabytes).
constexpr int64_t kMaxModuleBytes = int64_t{1} << 30;

constexpr absl::string_view kMlirBytecodeMagic = "ML\xefR";

bool HasExtension(absl::string_view path, absl::string_view ext) {
  return absl::EndsWith(path, ext);
}

// The first bytes of `bytes`, printable characters as they are and the rest
// as \xNN (for an error).
std::string FirstBytes(absl::string_view bytes) {
  std::string out;
  for (char c : bytes.substr(0, 16)) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out.push_back(c);
    } else {
      out += absl::StrFormat("\\x%02x", u);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<XlaTpuStep> CompileProgramForTpu(
    const runtime::Program& program, const runtime::SliceLayout& layout,
    const XlaTpuStepOptions& options) {
  XlaTpuStep step;
  runtime::pjrt::XlaTpuCompileRequest request;
  TPUSIM_RETURN_IF_ERROR(PrepareTarget(layout, options, &step, &request));
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

  request.program = std::move(emitted.text);
  request.format = "mlir";
  // XLA replica k = r * C + c on slice device k.
  const int xla_replicas = step.num_replicas * step.cores_per_replica;
  if (xla_replicas > step.layout.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the step spans ", xla_replicas, " devices, slice ", slice, " has ",
        step.layout.num_devices()));
  }
  for (int k = 0; k < xla_replicas; ++k) {
    request.device_coords.push_back({TpuCoordsOf(step.layout, k)});
  }
  TPUSIM_RETURN_IF_ERROR(CompileAndImport(request, &step));
  return step;
}

absl::StatusOr<XlaTpuStep> CompileModuleForTpu(
    const std::string& path, const runtime::SliceLayout& layout,
    const XlaTpuStepOptions& options) {
  XlaTpuStep step;
  runtime::pjrt::XlaTpuCompileRequest request;
  TPUSIM_RETURN_IF_ERROR(PrepareTarget(layout, options, &step, &request));
  TPUSIM_ASSIGN_OR_RETURN(
      std::string bytes,
      common::ReadRegularFile(path, "run.program module", kMaxModuleBytes));
  step.module_path = path;
  const absl::string_view head = absl::string_view(bytes).substr(0, 4096);
  const bool mlir_text = absl::StrContains(bytes, "func.func") &&
                         absl::StrContains(head, "module");
  const bool hlo_text = absl::StartsWith(absl::StripLeadingAsciiWhitespace(head),
                                         "HloModule ");
  std::optional<sim::xla::HloModule> hlo;
  if (HasExtension(path, ".mlir") || absl::StartsWith(bytes, kMlirBytecodeMagic) ||
      (mlir_text && !hlo_text)) {
    step.module_format = "mlir";
    // StableHLO's sharding attributes (GSPMD's and Shardy's); MLIR bytecode
    // keeps attribute names as strings, so the search works for it too.
    request.use_shardy_partitioner = absl::StrContains(bytes, "sdy.sharding");
    step.spmd = absl::StrContains(bytes, "mhlo.sharding") ||
                request.use_shardy_partitioner;
  } else if (hlo_text) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run.program=\"", path, "\" is HLO text: libtpu's PJRT compile takes "
        "HLO as a serialized HloModuleProto (PJRT format \"hlo\") only; export "
        "it with experimental_get_compiler_ir(...)(stage='hlo_serialized') "
        "(docs/xla-tpu.md, \"Your own program\")"));
  } else {
    absl::StatusOr<sim::xla::HloModule> parsed =
        sim::xla::ParseHloModule(bytes, "hlo");
    const bool proto_extension =
        HasExtension(path, ".pb") || HasExtension(path, ".hlopb") ||
        HasExtension(path, ".binpb");
    if (!parsed.ok()) {
      if (proto_extension) {
        return absl::InvalidArgumentError(absl::StrCat(
            "run.program=\"", path, "\" is not a serialized HloModuleProto: ",
            parsed.status().message()));
      }
      const size_t dot = path.rfind('.');
      const size_t slash = path.rfind('/');
      const std::string ext =
          dot == std::string::npos || (slash != std::string::npos && dot < slash)
              ? "none"
              : path.substr(dot);
      return absl::InvalidArgumentError(absl::StrCat(
          "run.program=\"", path, "\": unknown module format (extension ", ext,
          ", first bytes \"", FirstBytes(bytes), "\"): give StableHLO (.mlir, "
          "text or bytecode) or a serialized HloModuleProto (.pb)"));
    }
    step.module_format = "hlo";
    for (const sim::xla::HloComputation& c : parsed->computations) {
      for (const sim::xla::HloInstruction& i : c.instructions) {
        step.spmd = step.spmd || i.has_sharding;
      }
    }
    hlo = *std::move(parsed);
  }
  step.program_name = hlo.has_value() ? hlo->name : path;
  step.stablehlo_bytes = static_cast<int64_t>(bytes.size());
  const int n = layout.num_devices();
  step.num_replicas = step.spmd ? 1 : n;
  step.num_partitions = step.spmd ? n : 1;
  request.use_spmd_partitioning = step.spmd;
  if (step.spmd) {
    request.device_coords.emplace_back();
    for (int k = 0; k < n; ++k) {
      request.device_coords[0].push_back(TpuCoordsOf(layout, k));
    }
  } else {
    for (int k = 0; k < n; ++k) {
      request.device_coords.push_back({TpuCoordsOf(layout, k)});
    }
  }
  request.program = std::move(bytes);
  request.format = step.module_format;
  absl::Status compiled = CompileAndImport(request, &step);
  if (!compiled.ok()) {
    return absl::Status(compiled.code(),
                        absl::StrCat("run.program=\"", path, "\": ",
                                     compiled.message()));
  }
  step.input_argument_bytes = step.compiled.memory.arguments;
  return step;
}

sim::CoreMemory XlaTpuCoreMemory(const XlaTpuStep& step) {
  const runtime::pjrt::XlaTpuMemoryStats& m = step.compiled.memory;
  sim::CoreMemory memory;
  memory.variables = std::min(step.variable_argument_bytes, m.arguments);
  memory.parameters = m.arguments - memory.variables;
  memory.live_peak = m.outputs - m.alias + m.temporaries + m.generated_code;
  memory.largest_at_peak = {absl::StrCat(
      "the XLA:TPU compiler's numbers: arguments ", m.arguments,
      ", outputs ", m.outputs, ", aliased ", m.alias, ", temporaries ",
      m.temporaries, ", generated code ", m.generated_code)};
  return memory;
}

sim::ExternalCompiler XlaTpuSimCompiler(
    XlaTpuStepOptions options,
    std::function<void(const XlaTpuStep&)> on_compiled) {
  return [options, on_compiled](const runtime::Program& program,
                                const runtime::SliceLayout& layout)
             -> absl::StatusOr<sim::ExternalCompiledProgram> {
    TPUSIM_ASSIGN_OR_RETURN(XlaTpuStep step,
                            CompileProgramForTpu(program, layout, options));
    if (on_compiled) on_compiled(step);
    TPUSIM_ASSIGN_OR_RETURN(
        sim::ExternalCompiledProgram imported,
        sim::xla::ImportSchedule(step.schedule,
                                 static_cast<int>(program.parameters().size()),
                                 XlaTpuCoreMemory(step)));
    // Several cores per replica: the emitted module runs on every device as
    // XLA replica r * C + c (pjrt/stablehlo_emitter.h); the simulator times
    // it so, each device with the compiler's HBM numbers.
    const int cores = program.num_cores_per_replica();
    if (cores > 1) {
      imported.xla_replicas_per_replica = cores;
      imported.compiled.memory.assign(cores, imported.compiled.memory[0]);
    }
    return imported;
  };
}

std::function<absl::StatusOr<ModuleProgram>(const std::string&,
                                            const runtime::SliceLayout&)>
XlaTpuModuleCompiler(XlaTpuStepOptions options,
                     std::function<void(const XlaTpuStep&)> on_compiled) {
  return [options, on_compiled](const std::string& path,
                                const runtime::SliceLayout& layout)
             -> absl::StatusOr<ModuleProgram> {
    TPUSIM_ASSIGN_OR_RETURN(XlaTpuStep step,
                            CompileModuleForTpu(path, layout, options));
    if (on_compiled) on_compiled(step);
    ModuleProgram out;
    TPUSIM_ASSIGN_OR_RETURN(
        out.imported, sim::xla::ImportSchedule(step.schedule,
                                               /*num_program_parameters=*/0,
                                               XlaTpuCoreMemory(step)));
    for (const auto& [name, value] : step.compiled.cost_analysis) {
      if (name == "flops") out.flops_per_device = value;
    }
    return out;
  };
}

}  // namespace tpusim::scenarios
