#include "tools/compile_command.h"

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/file_io.h"
#include "common/units.h"
#include "common/status_macros.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "scenarios/train_runner.h"
#include "sim/compile/compile.h"
#include "strategy/runtime/program.h"
#include "strategy/runtime/program.pb.h"
#ifdef TPUSIM_HAVE_XLA_TPU
#include "tools/xla_tpu_compile.h"
#endif

namespace tpusim::tools {
namespace {

// Keeps the parser's first error (line and column, 1-based) instead of
// letting protobuf log it.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (error_.empty()) {
      error_ = absl::StrCat(line + 1, ":", column + 1, ": ", message);
    }
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

// tpusim choice: a program file larger than this is refused unread.
constexpr int64_t kMaxProgramFileBytes = int64_t{256} << 20;

absl::Status RunCompileProgram(const ParsedArgs& args, std::ostream& out) {
  const std::string path = args.Get("program");
  if (path.empty()) {
    return UsageError("--program= needs a ProgramProto file");
  }
  TPUSIM_ASSIGN_OR_RETURN(
      std::string bytes,
      common::ReadRegularFile(path, "program file", kMaxProgramFileBytes));
  proto::ProgramProto pb;
  if (absl::EndsWith(path, ".pb")) {
    if (!pb.ParseFromString(bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "program file \"", path, "\" is not a binary ProgramProto"));
    }
  } else {
    google::protobuf::TextFormat::Parser parser;
    FirstError errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(bytes, &pb)) {
      return absl::InvalidArgumentError(
          absl::StrCat("program file \"", path,
                       "\" is not a text-format ProgramProto: ", errors.error()));
    }
  }
  TPUSIM_ASSIGN_OR_RETURN(runtime::Program program,
                          runtime::Program::FromProto(pb));
  sim::CompileOptions options;
  options.fusion = !args.Has("no-fusion");
  TPUSIM_ASSIGN_OR_RETURN(int64_t depth, args.GetInt("infeed-depth", 1, 0));
  if (depth > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--infeed-depth=", depth, " is more than the limit of 1024"));
  }
  options.infeed_depth = static_cast<int>(depth);
  TPUSIM_ASSIGN_OR_RETURN(sim::CompiledProgram compiled,
                          sim::CompileProgram(program, options));
  out << compiled.FusionText(program);
  return absl::OkStatus();
}

absl::Status RunCompile(const ParsedArgs& args, std::ostream& out) {
  const std::string compiler = args.Get("compiler", "tpusim");
  if (compiler == "xla-tpu") {
    if (args.Has("program")) {
      return UsageError(
          "--compiler xla-tpu compiles a SCENARIO's step, not --program");
    }
#ifdef TPUSIM_HAVE_XLA_TPU
    return RunXlaTpuCompile(args, out);
#else
    return absl::FailedPreconditionError(
        "--compiler xla-tpu: this tpusim was built without the PJRT C API "
        "header that libtpu needs (TPUSIM_PJRT=OFF, or tools/setup.sh not run)");
#endif
  }
  if (compiler != "tpusim") {
    return UsageError(absl::StrCat("--compiler=", compiler,
                                   ": must be tpusim or xla-tpu"));
  }
  for (const char* flag : {"libtpu", "compile-time-limit", "save-optimized"}) {
    if (args.Has(flag)) {
      return UsageError(absl::StrCat("--", flag, " needs --compiler xla-tpu"));
    }
  }
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "json") {
    return UsageError(absl::StrCat("--format=", format, " must be text or json"));
  }
  if (args.Has("program")) {
    if (!args.positional().empty() || args.Has("set") || args.Has("format")) {
      return UsageError(
          "--program FILE compiles a hand-written program: give no SCENARIO, "
          "--set or --format with it");
    }
    return RunCompileProgram(args, out);
  }
  if (args.positional().size() != 1) {
    return UsageError(absl::StrCat(
        "expected 1 argument (SCENARIO), got ", args.positional().size(),
        "; usage: tpusim compile SCENARIO [--set PATH=VALUE]... "
        "[--format=text|json], or tpusim compile --program FILE"));
  }
  if (args.Has("no-fusion") || args.Has("infeed-depth")) {
    return UsageError(
        "--no-fusion and --infeed-depth go with --program FILE; a scenario "
        "is compiled as the simulator compiles it");
  }
  TPUSIM_ASSIGN_OR_RETURN(
      scenarios::LoadedScenario scenario,
      scenarios::LoadScenarioFile(args.positional()[0], args.GetAll("set")));
  TPUSIM_ASSIGN_OR_RETURN(StepCompileView view, CompileScenarioStep(scenario));
  if (format == "json") {
    out << StepCompileViewJson(view).Dump() << "\n";
  } else {
    out << StepCompileViewText(view);
  }
  if (!view.fits) {
    out.flush();
    return absl::ResourceExhaustedError(absl::StrCat(
        "the step of ", view.scenario, " does not fit in HBM on ", view.slice,
        ": it needs ", common::HumanBytes(view.plan_total_bytes),
        " per device, the chip has ",
        common::HumanBytes(view.hbm_capacity_bytes)));
  }
  return absl::OkStatus();
}

// "12.3 T": FLOPs with a decimal prefix.
std::string HumanFlops(int64_t flops) {
  const double f = static_cast<double>(flops);
  if (f >= 1e15) return absl::StrFormat("%.3g P", f / 1e15);
  if (f >= 1e12) return absl::StrFormat("%.3g T", f / 1e12);
  if (f >= 1e9) return absl::StrFormat("%.3g G", f / 1e9);
  if (f >= 1e6) return absl::StrFormat("%.3g M", f / 1e6);
  return absl::StrCat(flops, " ");
}

}  // namespace

absl::StatusOr<StepCompileView> CompileScenarioStep(
    const scenarios::LoadedScenario& scenario) {
  const scenarios::Scenario& sc = scenario.proto;
  if (!sc.has_run()) {
    return absl::InvalidArgumentError(absl::StrCat(
        scenario.source_name,
        ": the scenario has no `run` section; `tpusim compile` compiles a "
        "run's training step (run { workload { name: \"mlp\" } }); "
        "inspect-input lists input-only scenarios"));
  }
  scenarios::TrainOptions options;
  options.plan_only = true;
  TPUSIM_ASSIGN_OR_RETURN(scenarios::TrainResult traced,
                          scenarios::RunTraining(scenario, options));
  const runtime::Program& program = *traced.step_program;
  // As SimBackend::Compile compiles it.
  TPUSIM_ASSIGN_OR_RETURN(sim::CompiledProgram compiled,
                          sim::CompileProgram(program, sim::CompileOptions{}));
  StepCompileView v;
  v.compiler = "tpusim";
  v.scenario = sc.has_name() ? sc.name() : scenario.source_name;
  v.workload = sc.run().workload().name();
  v.slice = traced.slice;
  v.generation = traced.generation;
  v.chips = traced.num_chips;
  v.devices = traced.num_devices;
  v.replicas = traced.num_replicas;
  v.cores_per_replica = program.num_cores_per_replica();
  v.global_batch = traced.global_batch;
  v.hbm_capacity_bytes = traced.hbm_capacity_per_device;
  v.program_ops = static_cast<int64_t>(program.ops().size());
  for (const sim::Kernel& k : compiled.kernels) {
    ++v.kernels;
    switch (k.kind) {
      case sim::CompiledKernelKind::kMxu:
        ++v.mxu_kernels;
        v.fused_ops += static_cast<int64_t>(k.op_ids.size());
        break;
      case sim::CompiledKernelKind::kVector:
        ++v.vector_kernels;
        v.fused_ops += static_cast<int64_t>(k.op_ids.size());
        break;
      case sim::CompiledKernelKind::kCollectiveStart:
        ++v.collectives;
        break;
      case sim::CompiledKernelKind::kCollectiveDone:
        break;
      case sim::CompiledKernelKind::kCopy:
        ++v.copies;
        break;
    }
  }
  v.flops = compiled.total_flops();
  v.hbm_traffic_bytes = compiled.total_hbm_bytes();
  for (size_t c = 0; c < compiled.memory.size(); ++c) {
    const int64_t total = compiled.memory[c].total();
    if (c == 0 || total > v.plan_total_bytes) {
      v.plan_core = static_cast<int>(c);
      v.plan = compiled.memory[c];
      v.plan_total_bytes = total;
    }
  }
  v.fits = v.plan_total_bytes <= v.hbm_capacity_bytes;
  return v;
}

std::string StepCompileViewText(const StepCompileView& v) {
  using common::HumanBytes;
  std::string out = absl::StrFormat(
      "scenario %s: workload %s, slice %s (%d chips, %d devices), %d "
      "replicas x %d core%s, global batch %d (%d per replica)\n",
      v.scenario, v.workload, v.slice, v.chips, v.devices, v.replicas,
      v.cores_per_replica, v.cores_per_replica == 1 ? "" : "s", v.global_batch,
      v.global_batch / std::max(1, v.replicas));
  absl::StrAppendFormat(
      &out,
      "compiled step (%s's compiler, not simulated): %d kernels from %d ops: "
      "%d MXU, %d vector (%d ops fused into them), %d collectives "
      "(start/done pairs), %d cross-core copies\n",
      v.compiler, v.kernels, v.program_ops, v.mxu_kernels, v.vector_kernels,
      v.fused_ops, v.collectives, v.copies);
  absl::StrAppendFormat(&out,
                        "  per replica and step: %sFLOP, %s of HBM traffic\n",
                        HumanFlops(v.flops), HumanBytes(v.hbm_traffic_bytes));
  const sim::CoreMemory& m = v.plan;
  absl::StrAppendFormat(
      &out, "HBM plan per device (logical core %d%s), at the schedule's peak:\n",
      v.plan_core, v.cores_per_replica > 1 ? ", the largest" : "");
  auto row = [&](absl::string_view what, int64_t bytes, absl::string_view note) {
    absl::StrAppendFormat(&out, "  %-28s %10s %5.1f%%%s%s\n", what,
                          HumanBytes(bytes),
                          v.hbm_capacity_bytes > 0
                              ? 100.0 * bytes / v.hbm_capacity_bytes
                              : 0.0,
                          note.empty() ? "" : "  ", note);
  };
  row("parameters (variables)", m.variables, "");
  row("optimizer state", m.optimizer_state,
      m.optimizer_state == 0 ? "(the step's optimizer keeps none)" : "");
  row("activations + temporaries", m.live_peak,
      "(values live at the peak; tpusim does not tell them apart)");
  row("step inputs", m.parameters, "(the per-replica batch)");
  row("infeed buffers", m.infeed, "(the next batch, prefetched)");
  row("constants", m.constants, "");
  row("total", v.plan_total_bytes, "");
  absl::StrAppendFormat(&out, "  %-28s %10s\n", "capacity (per device)",
                        HumanBytes(v.hbm_capacity_bytes));
  if (!m.largest_at_peak.empty()) {
    absl::StrAppend(&out, "largest values live at the peak: ",
                    absl::StrJoin(m.largest_at_peak, "; "), "\n");
  }
  if (v.fits) {
    absl::StrAppendFormat(&out, "verdict: fits, %s of %s per device (%s free)\n",
                          HumanBytes(v.plan_total_bytes),
                          HumanBytes(v.hbm_capacity_bytes),
                          HumanBytes(v.hbm_capacity_bytes - v.plan_total_bytes));
  } else {
    absl::StrAppendFormat(
        &out,
        "verdict: does NOT fit, %s of %s per device (%s over): lower the "
        "per-replica batch, use more chips, or shard the variables (fsdp)\n",
        HumanBytes(v.plan_total_bytes), HumanBytes(v.hbm_capacity_bytes),
        HumanBytes(v.plan_total_bytes - v.hbm_capacity_bytes));
  }
  return out;
}

Json StepCompileViewJson(const StepCompileView& v) {
  const sim::CoreMemory& m = v.plan;
  std::vector<Json> largest;
  for (const std::string& l : m.largest_at_peak) largest.push_back(Json::String(l));
  return Json::Object({
      {"schema", Json::String("tpusim.compile.step/1")},
      {"compiler", Json::String(v.compiler)},
      {"scenario", Json::String(v.scenario)},
      {"workload", Json::String(v.workload)},
      {"slice", Json::String(v.slice)},
      {"generation", Json::String(v.generation)},
      {"chips", Json::Int(v.chips)},
      {"devices", Json::Int(v.devices)},
      {"replicas", Json::Int(v.replicas)},
      {"cores_per_replica", Json::Int(v.cores_per_replica)},
      {"global_batch", Json::Int(v.global_batch)},
      {"kernels", Json::Object({{"total", Json::Int(v.kernels)},
                                {"mxu", Json::Int(v.mxu_kernels)},
                                {"vector", Json::Int(v.vector_kernels)},
                                {"collectives", Json::Int(v.collectives)},
                                {"copies", Json::Int(v.copies)},
                                {"fused_ops", Json::Int(v.fused_ops)},
                                {"program_ops", Json::Int(v.program_ops)}})},
      {"flops_per_replica_step", Json::Int(v.flops)},
      {"hbm_traffic_bytes_per_replica_step", Json::Int(v.hbm_traffic_bytes)},
      {"hbm_plan_bytes",
       Json::Object({{"core", Json::Int(v.plan_core)},
                     {"parameters", Json::Int(m.variables)},
                     {"optimizer_state", Json::Int(m.optimizer_state)},
                     {"activations_and_temporaries", Json::Int(m.live_peak)},
                     {"step_inputs", Json::Int(m.parameters)},
                     {"infeed", Json::Int(m.infeed)},
                     {"constants", Json::Int(m.constants)},
                     {"total", Json::Int(v.plan_total_bytes)}})},
      {"hbm_capacity_bytes", Json::Int(v.hbm_capacity_bytes)},
      {"largest_live_values", Json::Array(std::move(largest))},
      {"fits", Json::Bool(v.fits)},
  });
}

Subcommand CompileCommand() {
  Subcommand s;
  s.name = "compile";
  s.summary =
      "compile a scenario's step for its slice: fused kernels, HBM plan, fit "
      "verdict";
  s.usage =
      "tpusim compile SCENARIO [--set PATH=VALUE]... [--format=text|json] "
      "[--compiler=tpusim|xla-tpu [--libtpu PATH] [--compile-time-limit "
      "SECONDS] [--save-optimized FILE]] | "
      "tpusim compile --program FILE [--no-fusion] [--infeed-depth=N]";
  s.flags = {{"set", true, "PATH=VALUE: change one scenario field (repeatable)"},
             {"format", true, "text (default) or json (schema "
                              "tpusim.compile.step/1)"},
             {"program", true,
              "a hand-written tpusim.proto.ProgramProto (text, or binary when "
              "the name ends in .pb) instead of a scenario"},
             {"no-fusion", false,
              "with --program: one kernel per op (the unfused baseline)"},
             {"infeed-depth", true,
              "with --program: batches prefetched into HBM (default 1, at "
              "most 1024)"},
             // --compiler xla-tpu (tools/xla_tpu_compile.h, docs/xla-tpu.md).
             {"compiler", true,
              "tpusim (default) or xla-tpu: the XLA:TPU compiler in libtpu "
              "compiles the training step of SCENARIO for its slice"},
             {"libtpu", true,
              "libtpu.so for --compiler xla-tpu (default: $TPUSIM_LIBTPU_PATH "
              "or the pinned wheel's)"},
             {"compile-time-limit", true,
              "seconds one xla-tpu compile may take (default 600)"},
             {"save-optimized", true,
              "FILE: write the compiler's optimized module there (--compiler "
              "xla-tpu; a serialized HloModuleProtoWithConfig)"}};
  s.min_positional = 0;
  s.max_positional = 1;
  s.out_of_memory_hint =
      "its memory grows with the shapes and the op count of the program and "
      "with --infeed-depth: lower them";
  s.description =
      "SCENARIO: its run section's training step, traced by TPUStrategy for "
      "the scenario's slice and\n"
      "compiled as the simulator compiles it, without simulating. Prints the "
      "kernels in summary and the\n"
      "per-device HBM plan against the chip's capacity with a verdict; exit 1 "
      "when it does not fit.\n"
      "--program FILE: prints the program text, the kernels in issue order "
      "(fusions, collective\n"
      "start/done, cross-core copies, HBM bytes read and written) and each "
      "logical core's peak HBM.";
  s.run = &RunCompile;
  return s;
}

}  // namespace tpusim::tools
