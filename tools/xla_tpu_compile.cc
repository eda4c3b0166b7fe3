#include "tools/xla_tpu_compile.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "scenarios/scenario_loader.h"
#include "scenarios/xla_tpu_step.h"
#include "tools/json_writer.h"

namespace tpusim::tools {
namespace {

using sim::xla::HloKernel;
using sim::xla::HloKernelKind;

// tpusim choice: how many fusions each "largest" list shows.
constexpr int kTopFusions = 5;
// tpusim choice: the default limit on one compile.
constexpr double kDefaultTimeLimitSeconds = 600;

std::string Human(int64_t bytes) { return common::Bytes(bytes).ToString(); }

// "{0,1,2,3}" groups, at most 4 shown: "{0,1},{2,3} (2 groups of 2)".
std::string Groups(const HloKernel& k) {
  if (!k.source_target_pairs.empty()) {
    std::vector<std::string> pairs;
    for (size_t i = 0; i < k.source_target_pairs.size() && i < 4; ++i) {
      pairs.push_back(absl::StrCat(k.source_target_pairs[i].first, "->",
                                   k.source_target_pairs[i].second));
    }
    return absl::StrCat(absl::StrJoin(pairs, ","),
                        k.source_target_pairs.size() > 4 ? ",..." : "", " (",
                        k.source_target_pairs.size(), " pairs)");
  }
  if (k.replica_groups.empty()) return "all replicas (one group)";
  std::vector<std::string> shown;
  for (size_t i = 0; i < k.replica_groups.size() && i < 4; ++i) {
    const auto& g = k.replica_groups[i];
    if (g.size() > 8) {
      shown.push_back(absl::StrCat("{", absl::StrJoin(g.begin(), g.begin() + 4, ","),
                                   ",...,", g.back(), "}"));
    } else {
      shown.push_back(absl::StrCat("{", absl::StrJoin(g, ","), "}"));
    }
  }
  return absl::StrCat(absl::StrJoin(shown, ","),
                      k.replica_groups.size() > 4 ? ",..." : "", " (",
                      k.replica_groups.size(), " group",
                      k.replica_groups.size() == 1 ? "" : "s", " of ",
                      k.replica_groups[0].size(), ")");
}

std::vector<const HloKernel*> Largest(
    const sim::xla::HloSchedule& s,
    bool (*less)(const HloKernel*, const HloKernel*)) {
  std::vector<const HloKernel*> fusions;
  for (const HloKernel& k : s.kernels) {
    if (k.kind == HloKernelKind::kFusion) fusions.push_back(&k);
  }
  std::stable_sort(fusions.begin(), fusions.end(),
                   [&](const HloKernel* a, const HloKernel* b) {
                     return less(b, a);
                   });
  if (fusions.size() > kTopFusions) fusions.resize(kTopFusions);
  return fusions;
}

bool ByBytes(const HloKernel* a, const HloKernel* b) {
  return a->hbm_bytes() < b->hbm_bytes();
}
bool ByFlops(const HloKernel* a, const HloKernel* b) {
  return a->flops < b->flops;
}

Json KernelJson(const HloKernel& k, int index) {
  return Json::Object({{"index", Json::Int(index)},
                       {"name", Json::String(k.name)},
                       {"fusion_kind", Json::String(k.fusion_kind)},
                       {"flops", Json::Float64(k.flops)},
                       {"hbm_bytes", Json::Int(k.hbm_bytes())}});
}

}  // namespace

absl::StatusOr<scenarios::XlaTpuStepOptions> XlaTpuOptionsFromArgs(
    const ParsedArgs& args) {
  scenarios::XlaTpuStepOptions options;
  options.libtpu = args.Get("libtpu", "");
  options.time_limit_seconds = kDefaultTimeLimitSeconds;
  if (args.Has("compile-time-limit")) {
    const std::string text = args.Get("compile-time-limit", "");
    double seconds = 0;
    if (!absl::SimpleAtod(text, &seconds) || !(seconds > 0) ||
        seconds > 86400) {
      return UsageError(absl::StrCat(
          "--compile-time-limit=", text,
          ": must be a number of seconds above 0 and at most 86400"));
    }
    options.time_limit_seconds = seconds;
  }
  return options;
}

absl::Status RunXlaTpuCompile(const ParsedArgs& args, std::ostream& out) {
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "json") {
    return UsageError(absl::StrCat("--format=", format,
                                   ": must be text or json"));
  }
  TPUSIM_ASSIGN_OR_RETURN(scenarios::XlaTpuStepOptions options,
                          XlaTpuOptionsFromArgs(args));
  TPUSIM_ASSIGN_OR_RETURN(
      scenarios::LoadedScenario scenario,
      scenarios::LoadScenarioFile(args.positional()[0], args.GetAll("set")));
  TPUSIM_ASSIGN_OR_RETURN(scenarios::XlaTpuStep step,
                          scenarios::CompileStepForTpu(scenario, options));
  if (args.Has("save-optimized")) {
    TPUSIM_RETURN_IF_ERROR(common::WriteFile(
        args.Get("save-optimized", ""), step.compiled.optimized_program));
  }
  const runtime::pjrt::XlaTpuMemoryStats& m = step.compiled.memory;
  const int64_t total = m.Total();
  const bool fits = total <= step.hbm_capacity_per_device;
  const sim::xla::HloSchedule& s = step.schedule;
  int collectives = 0, copies = 0;
  for (const HloKernel& k : s.kernels) {
    if (k.kind == HloKernelKind::kCollective ||
        k.kind == HloKernelKind::kCollectiveStart) {
      ++collectives;
    }
    if (k.kind == HloKernelKind::kCopy) ++copies;
  }
  const auto by_bytes = Largest(s, &ByBytes);
  const auto by_flops = Largest(s, &ByFlops);
  auto index_of = [&](const HloKernel* k) {
    return static_cast<int>(k - s.kernels.data());
  };

  if (format == "json") {
    std::vector<Json> bytes_list, flops_list, coll_list;
    for (const HloKernel* k : by_bytes) bytes_list.push_back(KernelJson(*k, index_of(k)));
    for (const HloKernel* k : by_flops) flops_list.push_back(KernelJson(*k, index_of(k)));
    for (size_t i = 0; i < s.kernels.size(); ++i) {
      const HloKernel& k = s.kernels[i];
      if (k.kind != HloKernelKind::kCollective &&
          k.kind != HloKernelKind::kCollectiveStart) {
        continue;
      }
      std::vector<Json> groups;
      for (const auto& g : k.replica_groups) {
        std::vector<Json> ids;
        for (int64_t id : g) ids.push_back(Json::Int(id));
        groups.push_back(Json::Array(std::move(ids)));
      }
      coll_list.push_back(Json::Object(
          {{"name", Json::String(k.name)},
           {"collective", Json::String(k.collective)},
           {"async", Json::Bool(k.kind == HloKernelKind::kCollectiveStart)},
           {"bytes", Json::Int(k.collective_bytes)},
           {"replica_groups", Json::Array(std::move(groups))},
           {"start_index", Json::Int(static_cast<int64_t>(i))},
           {"done_index", Json::Int(k.partner >= 0 ? k.partner
                                                   : static_cast<int64_t>(i))}}));
    }
    Json report = Json::Object({
        {"scenario", Json::String(step.scenario)},
        {"slice", Json::String(step.layout.name)},
        {"compiler", Json::String("xla-tpu")},
        {"libtpu", Json::String(step.libtpu)},
        {"pjrt_api", Json::String(step.compiled.plugin_version)},
        {"topology", Json::String(step.topology)},
        {"program", Json::String(step.program_name)},
        {"xla_replicas", Json::Int(step.num_replicas * step.cores_per_replica)},
        {"xla_partitions", Json::Int(step.num_partitions)},
        {"module", Json::String(step.module_path)},
        {"module_format", Json::String(step.module_format)},
        {"spmd", Json::Bool(step.spmd)},
        {"compile_seconds", Json::Float64(step.compiled.compile_seconds)},
        {"hbm_per_device",
         Json::Object({{"arguments", Json::Int(m.arguments)},
                       {"arguments_variables", Json::Int(step.variable_argument_bytes)},
                       {"arguments_inputs", Json::Int(step.input_argument_bytes)},
                       {"outputs", Json::Int(m.outputs)},
                       {"alias", Json::Int(m.alias)},
                       {"temporaries", Json::Int(m.temporaries)},
                       {"generated_code", Json::Int(m.generated_code)},
                       {"total", Json::Int(total)},
                       {"capacity", Json::Int(step.hbm_capacity_per_device)},
                       {"fits", Json::Bool(fits)}})},
        {"schedule_from_module", Json::Bool(s.from_module_schedule)},
        {"kernels", Json::Int(static_cast<int64_t>(s.kernels.size()))},
        {"fusions", Json::Int(s.num_fusions)},
        {"flops", Json::Float64(s.total_flops)},
        {"hbm_bytes", Json::Int(s.total_hbm_bytes)},
        {"largest_fusions_by_bytes", Json::Array(std::move(bytes_list))},
        {"largest_fusions_by_flops", Json::Array(std::move(flops_list))},
        {"collectives", Json::Array(std::move(coll_list))},
    });
    out << report.Dump() << "\n";
  } else {
    out << absl::StrFormat(
        "scenario %s on %s (%d chips, %d devices), compiler xla-tpu\n",
        step.scenario, step.layout.name, step.layout.num_chips,
        step.layout.num_devices());
    out << "libtpu: " << step.libtpu << " (" << step.compiled.plugin_version
        << ")\n";
    if (!step.module_path.empty()) {
      out << absl::StrFormat(
          "module %s (run.program, %s, %s): %s, %d XLA replicas x %d "
          "partitions on topology %s\n",
          step.module_path,
          step.module_format == "mlir" ? "StableHLO" : "HloModuleProto",
          Human(step.stablehlo_bytes),
          step.spmd ? "SPMD-partitioned by its shardings"
                    : "no shardings: replicated",
          step.num_replicas, step.num_partitions, step.topology);
    } else {
      out << absl::StrFormat(
          "program %s: %d replicas x %d cores = %d XLA replicas on topology "
          "%s; StableHLO %s\n",
          step.program_name, step.num_replicas, step.cores_per_replica,
          step.num_replicas * step.cores_per_replica, step.topology,
          Human(step.stablehlo_bytes));
    }
    out << absl::StrFormat("compile time: %.3f s\n",
                           step.compiled.compile_seconds);
    out << "HBM per device (the compiler's memory stats):\n";
    if (!step.module_path.empty()) {
      out << absl::StrFormat(
          "  arguments       %12s  (the module's parameters: abstract and "
          "resident, no infeed)\n",
          Human(m.arguments));
    } else {
      out << absl::StrFormat(
          "  arguments       %12s  (variables: parameters + optimizer state "
          "%s; inputs: the infeed batch %s)\n",
          Human(m.arguments), Human(step.variable_argument_bytes),
          Human(step.input_argument_bytes));
    }
    out << absl::StrFormat("  outputs         %12s\n", Human(m.outputs));
    out << absl::StrFormat(
        "  aliased         %12s  (arguments reused as outputs)\n",
        Human(m.alias));
    out << absl::StrFormat(
        "  temporaries     %12s  (activations and temporaries)\n",
        Human(m.temporaries));
    out << absl::StrFormat("  generated code  %12s\n",
                           Human(m.generated_code));
    out << absl::StrFormat(
        "  total           %12s  of %s HBM (%.1f%%): %s\n", Human(total),
        Human(step.hbm_capacity_per_device),
        100.0 * static_cast<double>(total) /
            static_cast<double>(step.hbm_capacity_per_device),
        fits ? "fits" : "DOES NOT FIT");
    out << absl::StrFormat(
        "schedule (%s): %d kernels: %d fusions, %d collectives, %d copies; "
        "%.6g FLOPs, %s HBM traffic per device\n",
        s.from_module_schedule ? "the module's schedule"
                               : "instruction order: the module has no "
                                 "schedule",
        static_cast<int>(s.kernels.size()), s.num_fusions, collectives,
        copies, s.total_flops, Human(s.total_hbm_bytes));
    out << "largest fusions by HBM bytes:\n";
    for (const HloKernel* k : by_bytes) {
      out << absl::StrFormat("  #%-5d %-40s %12s  %.6g FLOPs\n", index_of(k),
                             k->name, Human(k->hbm_bytes()), k->flops);
    }
    out << "largest fusions by FLOPs:\n";
    for (const HloKernel* k : by_flops) {
      out << absl::StrFormat("  #%-5d %-40s %.6g FLOPs  %12s\n", index_of(k),
                             k->name, k->flops, Human(k->hbm_bytes()));
    }
    out << "collectives (#index in the schedule):\n";
    if (collectives == 0) out << "  none\n";
    for (size_t i = 0; i < s.kernels.size(); ++i) {
      const HloKernel& k = s.kernels[i];
      if (k.kind == HloKernelKind::kCollective) {
        out << absl::StrFormat("  #%-5d %s %s: %s, groups %s, synchronous\n",
                               static_cast<int>(i), k.collective, k.name,
                               Human(k.collective_bytes), Groups(k));
      } else if (k.kind == HloKernelKind::kCollectiveStart) {
        out << absl::StrFormat(
            "  #%-5d %s %s: %s, groups %s, start #%d, done #%d (%d kernels "
            "between)\n",
            static_cast<int>(i), k.collective, k.name,
            Human(k.collective_bytes), Groups(k), static_cast<int>(i),
            k.partner, k.partner - static_cast<int>(i) - 1);
      }
    }
    if (!s.custom_calls.empty()) {
      out << "custom calls (timed by their HBM bytes only): "
          << absl::StrJoin(s.custom_calls, ", ") << "\n";
    }
  }
  if (!fits) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the step does not fit in HBM on ", step.layout.name, ": the XLA:TPU "
        "compiler needs ", Human(total), " per device (arguments ",
        Human(m.arguments), ", outputs ", Human(m.outputs), ", temporaries ",
        Human(m.temporaries), ", code ", Human(m.generated_code),
        ") and a device has ", Human(step.hbm_capacity_per_device)));
  }
  return absl::OkStatus();
}

}  // namespace tpusim::tools
