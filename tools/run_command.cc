#include "tools/run_command.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "google/protobuf/text_format.h"
#include "scenarios/scenario_loader.h"
#include "scenarios/train_runner.h"
#include "sim/memory_estimate.h"
#include "tools/collective_command.h"
#include "tools/out_dir.h"
#include "tools/report.h"
#include "tools/scale_batch.h"
#ifdef TPUSIM_HAVE_XLA_TPU
#include "tools/xla_tpu_compile.h"
#endif

namespace tpusim::tools {
namespace {

using common::WriteFile;

// --trace-devices=all, or a comma-separated list of device ids (their range
// and repeats are checked against the slice by the backend).
absl::Status ParseTraceDevices(const std::string& value,
                               std::vector<int>* devices, bool* all) {
  if (value == "all") {
    *all = true;
    return absl::OkStatus();
  }
  if (value.empty()) {
    return absl::InvalidArgumentError(
        "--trace-devices= is empty: give device ids (0..N-1, as `tpusim "
        "topo` lists them), comma-separated, or all");
  }
  for (absl::string_view part : absl::StrSplit(value, ',')) {
    int id = 0;
    if (!ParseExactInt(part, &id)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--trace-devices=", value, ": '", part,
          "' is not a device id; give device ids (0..N-1, as `tpusim topo` "
          "lists them), comma-separated, or all"));
    }
    devices->push_back(id);
  }
  return absl::OkStatus();
}

// Creates `dir` when missing; an existing non-directory, or a directory
// tpusim cannot write into, is an error naming it.
absl::Status PrepareOutDir(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("--out= needs a directory");
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return common::ErrnoStatus("--out: cannot create", dir, errno);
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    return common::ErrnoStatus("--out: cannot inspect", dir, errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--out=", dir, " is not a directory; give a directory (created when "
        "missing) for stats.json, stats.textproto, trace.json and report.html"));
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return common::ErrnoStatus("--out: cannot write into", dir, errno);
  }
  return absl::OkStatus();
}

absl::Status RunRun(const ParsedArgs& args, std::ostream& out) {
  TPUSIM_RETURN_IF_ERROR(CheckRunBackendFlag(args));
  const std::string backend = args.Get("backend");
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "json") {
    return UsageError(absl::StrCat("--format=", format, " must be text or json"));
  }
  TPUSIM_ASSIGN_OR_RETURN(const ScaleBatch scale_batch,
                          ParseScaleBatchFlag(args));
  scenarios::TrainOptions options;
  TPUSIM_ASSIGN_OR_RETURN(options.memory_limit_bytes, MemoryLimitFlag(args));
  if (args.Has("trace-devices")) {
    TPUSIM_RETURN_IF_ERROR(ParseTraceDevices(args.Get("trace-devices"),
                                             &options.trace_devices,
                                             &options.trace_all_devices));
  }
  // --out is checked (and created) before the run, so that a file or an
  // unwritable place fails in a moment rather than after the simulation.
  if (args.Has("out")) TPUSIM_RETURN_IF_ERROR(PrepareOutDir(args.Get("out")));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string& path = args.positional()[0];
  std::vector<std::string> sets = args.GetAll("set");
  // --check-invariants: the pod's physical invariants after every call.
  if (args.Has("check-invariants")) {
    sets.push_back("run.pod.options.check_invariants=true");
  }
  TPUSIM_ASSIGN_OR_RETURN(scenarios::LoadedScenario scenario,
                          LoadRunScenario(path, sets, scale_batch));
  options.backend = backend;
  options.pjrt_plugin = args.Get("pjrt-plugin");
  // --compiler xla-tpu: the sim backend times what libtpu compiled
  // (tools/xla_tpu_compile.h, docs/xla-tpu.md).
  const std::string compiler = args.Get("compiler", "tpusim");
  if (compiler == "xla-tpu") {
#ifdef TPUSIM_HAVE_XLA_TPU
    TPUSIM_ASSIGN_OR_RETURN(scenarios::XlaTpuStepOptions xla,
                            XlaTpuOptionsFromArgs(args));
    const std::string libtpu = xla.libtpu.empty()
                                   ? runtime::pjrt::DefaultLibtpuPath()
                                   : xla.libtpu;
    // Each compile's wall time goes to stderr (it differs from run to run).
    auto report_compile = [](const scenarios::XlaTpuStep& step) {
      std::fprintf(stderr,
                   "tpusim run: xla-tpu compiled %s for %s in %.2f s\n",
                   step.module_path.empty() ? step.program_name.c_str()
                                            : step.module_path.c_str(),
                   step.topology.c_str(), step.compiled.compile_seconds);
    };
    options.sim_compiler = scenarios::XlaTpuSimCompiler(xla, report_compile);
    options.compile_module =
        scenarios::XlaTpuModuleCompiler(xla, report_compile);
    options.compiler = "xla-tpu";
    options.compiler_detail = absl::StrCat("libtpu ", libtpu);
#else
    return absl::FailedPreconditionError(
        "--compiler xla-tpu: this tpusim was built without the PJRT C API "
        "header that libtpu needs (TPUSIM_PJRT=OFF, or tools/setup.sh not run)");
#endif
  } else if (compiler != "tpusim") {
    return UsageError(absl::StrCat("--compiler=", compiler,
                                   ": must be tpusim or xla-tpu"));
  } else if (args.Has("libtpu") || args.Has("compile-time-limit")) {
    return UsageError("--libtpu and --compile-time-limit need --compiler xla-tpu");
  }
  // A progress bar on stderr when it is a terminal and the run takes more
  // than 2 s (never in the outputs, which stay deterministic).
  const bool tty = isatty(STDERR_FILENO) != 0;
  bool drew = false;
  if (tty) {
    options.progress = [&](int64_t done, int64_t total) {
      const double elapsed = std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - t0)
                                 .count();
      if (elapsed < 2.0 && !drew) return;
      drew = true;
      const int width = 30;
      const int filled = static_cast<int>(width * done / std::max<int64_t>(1, total));
      std::fprintf(stderr, "\r[%s%s] step %lld/%lld  %.1f s", std::string(filled, '=').c_str(),
                   std::string(width - filled, ' ').c_str(),
                   static_cast<long long>(done), static_cast<long long>(total),
                   elapsed);
      if (done == total) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    };
  }
  TPUSIM_ASSIGN_OR_RETURN(scenarios::TrainResult result,
                          scenarios::RunTraining(scenario, options));
  const std::string name = scenario.proto.has_name() ? scenario.proto.name()
                                                     : path;
  const RunStats stats = ComputeRunStats(name, result);
  if (format == "json") {
    out << StatsJson(stats).Dump() << "\n";
  } else {
    out << TextReport(stats);
  }
  if (args.Has("out")) {
    const std::string dir = args.Get("out");
    std::string scenario_text;
    google::protobuf::TextFormat::PrintToString(scenario.proto, &scenario_text);
    // The summary: every counter, step and link; the spans, collectives and
    // link samples are the trace's.
    std::string profile_text;
    {
      runtime::Profile summary = result.profile;
      summary.clear_spans();
      summary.clear_collectives();
      for (runtime::LinkProfile& l : *summary.mutable_links()) {
        l.clear_busy_ps_at_step_end();
      }
      google::protobuf::TextFormat::PrintToString(summary, &profile_text);
    }
    TPUSIM_RETURN_IF_ERROR(
        WriteFile(dir + "/stats.json", StatsJson(stats).Dump() + "\n"));
    TPUSIM_RETURN_IF_ERROR(WriteFile(dir + "/stats.textproto", profile_text));
    TPUSIM_RETURN_IF_ERROR(WriteFile(dir + "/trace.json", ChromeTrace(result)));
    TPUSIM_RETURN_IF_ERROR(WriteFile(dir + "/report.html",
                                     HtmlReport(stats, result, scenario_text)));
  }
  const double wall = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
  // Wall time and memory go to stderr: they differ from run to run.
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  // The estimate is the simulator's (sim/memory_estimate.h): other backends
  // only have its pod part, and a PJRT plugin's own memory is not in it.
  if (result.backend == "sim") {
    std::fprintf(stderr,
                 "tpusim run: %.2f s wall, peak RSS %.0f MiB (estimated %.0f "
                 "MiB), %lld simulated events\n",
                 wall, usage.ru_maxrss / 1024.0,
                 result.memory_estimate_bytes / 1048576.0,
                 static_cast<long long>(result.sim_kernels +
                                        result.sim_collectives +
                                        result.sim_network_events));
  } else {
    std::fprintf(stderr, "tpusim run: %.2f s wall, peak RSS %.0f MiB\n", wall,
                 usage.ru_maxrss / 1024.0);
  }
  return absl::OkStatus();
}

}  // namespace

Subcommand RunCommand() {
  Subcommand s;
  s.name = "run";
  s.summary = "train a scenario's workload and report where the step time goes";
  s.usage =
      "tpusim run SCENARIO [--backend=host|sim|pjrt] [--pjrt-plugin PATH] "
      "[--out DIR] [--set PATH=VALUE]... [--scale-batch=global|per-replica] "
      "[--format=text|json] "
      "[--trace-devices=ID,...|all] [--memory-limit=SIZE] "
      "[--check-invariants] "
      "[--compiler=tpusim|xla-tpu] [--libtpu PATH] [--compile-time-limit S]";
  s.flags = {
      {"backend", true,
       "sim (default: the simulated pod), host (values only) or pjrt (a real "
       "PJRT plugin: values and measured wall time)"},
      {"pjrt-plugin", true,
       "the PJRT plugin for --backend=pjrt (default: $TPUSIM_PJRT_PLUGIN, else "
       "XLA's CPU plugin found at configure time)"},
      {"out", true,
       "write stats.json, stats.textproto, trace.json and report.html there"},
      {"memory-limit", true,
       "SIZE (e.g. 4GiB): fail before the work when the run's estimated "
       "memory is above it (default 16GiB, fixed)"},
      {"trace-devices", true,
       "ID,... or all: devices whose per-kernel spans the trace keeps, besides "
       "device 0 and each step's critical-path, slowest and fastest devices "
       "(16 devices at most by default)"},
      {"set", true, "PATH=VALUE: change one scenario field (repeatable)"},
      {"scale-batch", true,
       "global (default: global_batch_size as given) or per-replica (keep "
       "the file's global batch over its own replicas per replica when a "
       "--set changes the replicas)"},
      {"format", true, "text (default: the report) or json (stats.json)"},
      {"check-invariants", false,
       "sim: check the pod's physical invariants after every call (link busy "
       "<= elapsed, chip injection, HBM bytes and rate, kernel rooflines, "
       "collective lower bounds); a violation fails the run naming the "
       "device or link, the bound and the excess"},
      {"compiler", true,
       "tpusim (default: sim/compile) or xla-tpu: the sim backend times the "
       "module the XLA:TPU compiler in libtpu made of each program"},
      {"libtpu", true,
       "libtpu.so for --compiler xla-tpu (default: $TPUSIM_LIBTPU_PATH or the "
       "pinned wheel's)"},
      {"compile-time-limit", true,
       "seconds one xla-tpu compile may take (default 600)"},
  };
  s.min_positional = 1;
  s.max_positional = 1;
  s.run = &RunRun;
  s.description = absl::StrCat(
      "The scenario's `run` section names the workload (",
      absl::StrJoin(scenarios::WorkloadNames(), ", "),
      "), the pod, steps_per_run, a device assignment and the steps; the "
      "scenario's pipeline (distributed as inspect-input does) feeds the "
      "workload, else the input is synthetic. The text report gives the step "
      "time (mean, p50, p99), "
      "examples/s, the breakdown of a step by category, MFU, HBM use, the "
      "busiest ICI links and the bottleneck.");
  return s;
}

}  // namespace tpusim::tools
