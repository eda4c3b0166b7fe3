#include "tools/validate_command.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "scenarios/scenario_loader.h"
#include "scenarios/train_runner.h"
#include "sim/chip/model_constants.h"
#include "sim/validation.h"
#include "tools/child_process.h"
#ifdef TPUSIM_HAVE_XLA_TPU
#include "tools/xla_tpu_compile.h"
#endif
#include "tools/json_writer.h"

namespace tpusim::tools {
namespace {

// One validation target. Its tolerance is fixed (issue 18) and never widened
// to make a row pass: the sheet's band where it gives one, else ±10 % for step
// and op times, ±15 % for collectives.
struct Row {
  const char* id;
  const char* what;
  double published;  // in `unit` (the C.4 rows: the ratio 1)
  const char* unit;  // "ms", "us" or "ratio"
  const char* source;
  const char* generation;  // the preset it runs on ("v4")
  // The sheet's band [lo, hi] in `unit`, or {0, 0}: `relative` applies.
  double band_lo = 0, band_hi = 0;
  double relative = 0;  // 0.10 or 0.15
  // Simulated value in the row's unit; empty when not expressible.
  std::function<absl::StatusOr<double>()> run;
  const char* not_expressible = "";
};

// Sheet B.2 in steady state: `run` of its configuration (global batch 32768,
// bf16) for 4 device calls of one step each; the first call is the warm-up
// (as `run` defines it), the step is the median of the other three. The
// sheet does not give the published setup's steps_per_run; tpusim runs 1, so
// each step pays the host loop.
// Child mode with --compiler xla-tpu: the compiler the rows that compile a
// program use (null: sim/compile).
const sim::ExternalCompiler* g_compiler = nullptr;

// The rows that compile a program (and so have an xla-tpu value).
bool CompilesAProgram(absl::string_view id) {
  return absl::StartsWith(id, "C.4") || id == "B.2";
}

absl::StatusOr<double> B2SteadyStepMs() {
  TPUSIM_ASSIGN_OR_RETURN(
      scenarios::LoadedScenario s,
      scenarios::ParseScenario(
          "name: \"B.2\" cluster { slice: \"v4-8192\" } "
          "global_batch_size: 32768 run { workload { name: "
          "\"resnet50\" params { key: \"dtype\" value: "
          "\"bfloat16\" } } steps: 4 steps_per_run: 1 }",
          "B.2", ""));
  scenarios::TrainOptions options;
  if (g_compiler != nullptr) {
    options.sim_compiler = *g_compiler;
    options.compiler = "xla-tpu";
  }
  TPUSIM_ASSIGN_OR_RETURN(scenarios::TrainResult r,
                          scenarios::RunTraining(s, options));
  if (r.profile.steps_size() != 4) {
    return absl::InternalError(absl::StrCat(
        "B.2: expected 4 device calls, got ", r.profile.steps_size()));
  }
  std::vector<double> ms;
  for (int c = 1; c < r.profile.steps_size(); ++c) {
    const auto& step = r.profile.steps(c);
    ms.push_back((step.end_ps() - step.start_ps()) * 1e-9 / step.steps());
  }
  std::sort(ms.begin(), ms.end());
  return ms[1];
}

const std::vector<Row>& Rows() {
  static const auto* rows = new std::vector<Row>{
      {"B.6-matmul",
       "v2-8 FFW matmul [32,1024,8192]x[8192,32768] bf16, 4 DP x 2 MP, per "
       "core (single op)",
       96, "ms", "sheet B.6 (scaling book, profile)", "v2", 0, 0, 0.10,
       []() -> absl::StatusOr<double> {
         TPUSIM_ASSIGN_OR_RETURN(double s, sim::B6FfwMatmulSeconds());
         return s * 1e3;
       }},
      {"B.6-reduce-scatter",
       "v2 reduce-scatter of 134 MB between neighbouring chips (single op)",
       1.13, "ms", "sheet B.6 (scaling book, profile)", "v2", 0, 0, 0.15,
       []() -> absl::StatusOr<double> {
         TPUSIM_ASSIGN_OR_RETURN(double s, sim::B6ReduceScatterSeconds());
         return s * 1e3;
       }},
      {"B.5-all-gather",
       "v5e 8x4 all_gather over Y, bf16[2048,8192] (single op)", 680, "us",
       "sheet B.5 (scaling book)", "v5e", 560, 680, 0,
       []() -> absl::StatusOr<double> {
         TPUSIM_ASSIGN_OR_RETURN(double s,
                                 sim::B5AllGatherSeconds(2048LL * 8192 * 2));
         return s * 1e6;
       }},
      {"B.5-all-gather-small",
       "v5e 8x4 all_gather over Y, bf16[256,256] (single op)", 8, "us",
       "sheet B.5 (scaling book)", "v5e", 0, 0, 0.15,
       []() -> absl::StatusOr<double> {
         TPUSIM_ASSIGN_OR_RETURN(double s,
                                 sim::B5AllGatherSeconds(256 * 256 * 2));
         return s * 1e6;
       }},
      {"C.4-v3-32",
       "data-parallel MLP step (steady) / the C.4 analytic model, v3-32", 1,
       "ratio", "sheet C.4 with C.1 rooflines and C.3's all-reduce", "v3",
       0, 0,
       0.10,
       []() -> absl::StatusOr<double> {
         TPUSIM_ASSIGN_OR_RETURN(sim::C4Result r,
                                 sim::C4DataParallelStep("v3-32", g_compiler));
         return r.simulated / r.model;
       }},
      {"C.4-v4-32",
       "data-parallel MLP step (steady) / the C.4 analytic model, v4-32", 1,
       "ratio", "sheet C.4 with C.1 rooflines and C.3's all-reduce", "v4",
       0, 0,
       0.10,
       []() -> absl::StatusOr<double> {
         TPUSIM_ASSIGN_OR_RETURN(sim::C4Result r,
                                 sim::C4DataParallelStep("v4-32", g_compiler));
         return r.simulated / r.model;
       }},
      {"B.2",
       "MLPerf v2.0 ResNet-50 step on v4-8192, batch 8/chip (steady: median "
       "of 3 after a warm-up call)",
       4.3, "ms", "sheet B.2 (MLPerf v2.0 result log)", "v4", 0, 0, 0.10,
       &B2SteadyStepMs},
      {"B.7", "MaxText MFU on v5p (32B on v5p-128: 67.8%)", 67.8, "%MFU",
       "sheet B.7 (MaxText README)", "v5p", 0, 0, 0, nullptr,
       "not expressible: MaxText's v5p 32B config (global_parameter_scale=32: 32 layers, d_model 8192, 64 heads, gated MLP 28672, seq 2048, 7 sequences per chip, FSDP x tensor 4, remat minimal, flash attention) run as transformer_lm with FSDP needs 449 GB of HBM per chip (the [7,64,2048,2048] attention scores of every layer stay live for the backward pass); the workload has neither rematerialisation, flash attention nor tensor parallelism"},
      {"B.9", "v4 480B dense transformer, 63% computational efficiency", 63,
       "%", "sheet B.9 (Google blog, secondary)", "v4", 0, 0, 0, nullptr,
       "a 480B dense model on 2048 chips needs pipeline or tensor parallelism and rematerialisation, which the workloads do not express"},
  };
  return *rows;
}

std::string ToleranceText(const Row& row) {
  if (row.band_hi > 0) {
    return absl::StrFormat("%g-%g %s", row.band_lo, row.band_hi, row.unit);
  }
  return absl::StrFormat("+-%g%%", row.relative * 100);
}

bool Passes(const Row& row, double value) {
  if (row.band_hi > 0) return value >= row.band_lo && value <= row.band_hi;
  return std::abs(value / row.published - 1) <= row.relative + 1e-12;
}

// Runs each (row, scales) case in a child process; the values in the row's
// unit, or the child's error.
struct Outcome {
  bool ok = false;
  double value = 0;
  std::string error;
};
std::vector<Outcome> RunChildren(
    const std::vector<std::pair<size_t, std::string>>& cases, int jobs,
    const std::vector<std::string>& extra = {}) {
  std::vector<std::vector<std::string>> commands;
  for (const auto& [row, scale] : cases) {
    std::vector<std::string> c = {"validate",
                                  absl::StrCat("--row=", Rows()[row].id)};
    if (!scale.empty()) c.push_back(absl::StrCat("--scale=", scale));
    for (const std::string& e : extra) c.push_back(e);
    commands.push_back(std::move(c));
  }
  const std::vector<ChildResult> results = RunSelf(commands, jobs);
  std::vector<Outcome> out(cases.size());
  for (size_t k = 0; k < cases.size(); ++k) {
    const ChildResult& r = results[k];
    double v = 0;
    if (r.exit_code == 0 &&
        absl::SimpleAtod(absl::StripAsciiWhitespace(r.out), &v)) {
      out[k].ok = true;
      out[k].value = v;
    } else {
      out[k].error = std::string(absl::StripTrailingAsciiWhitespace(r.err));
      if (out[k].error.empty()) out[k].error = "failed";
    }
  }
  return out;
}

std::string MarkdownCell(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"|", "\\|"}});
}

// docs/model.md's opening: what tpusim models (the README's opening
// paragraph) and, part by part, whether the pod model simulates it as a
// mechanism, computes it with a formula, or ignores it.
constexpr char kWhatIsModelled[] = R"md(# The pod model

**What tpusim models.** tpusim runs TensorFlow's `TPUStrategy`, re-implemented in C++, on virtual TPU slices: a functional host backend gives the values, and a simulated pod gives the values and the time. The pod model times each TensorCore's fused kernels in closed form (MXU tile schedule, vector unit, HBM traffic), shares each device's HBM bandwidth between its kernels, its collectives' DMA and the infeed on one timeline, models the hosts' input pipelines and PCIe infeed, and runs collectives as real algorithms (ring, bidirectional ring, torus, multi-axis, direct) on a transaction-level SystemC model of the ICI links with routing and contention. Only the ICI network is a SystemC process; cores, HBM, DMA and hosts are plain C++ advanced by one documented walk. It is not cycle-accurate, and it checks its own physical limits on demand (`tpusim run --check-invariants`). The table below says, part by part, what is simulated, what is a formula and what is ignored.

## What is modelled

| part | how | what it rests on | ignored |
|---|---|---|---|
| MXU | formula per kernel | weight-stationary tile schedule: ceil(tiles / MXUs) x (M + 2n - 2) cycles x passes (1 bf16, 3 or 6 for f32 HIGH/HIGHEST); sheet C.2 | weight-load stalls beyond double buffering, MXU result FIFOs |
| vector unit | formula per kernel | elements / (lanes x sublanes x ALUs per lane) per cycle; transcendentals one lane row per cycle (chosen) | the scalar unit, instruction issue, VMEM |
| a kernel | formula | max(MXU, vector, HBM time) + the issue overhead (chosen 1 us); kernels are sim/compile's fusions (or XLA's, imported) | overlap inside a kernel is perfect (the max) |
| HBM bandwidth | mechanism: one reservation timeline per device (`sim/chip/chip.h`) | first reserved, first served; at no instant above the device's rate x the achievable fraction (chosen 1); a kernel streams its bytes at the pace of its compute, a memory-bound one at the full rate; the infeed keeps the chip's PCIe rate of it; collective chunks reserve their reads and writes as the network moves them, and a chunk the HBM slows leaves that much later (the network waits for the DMA) | banks, rows, refresh, read/write turnaround; a proportional share (the walk reserves a device's kernels before the network's chunks that overlap them, so collectives beside memory-bound kernels get what those leave) |
| HBM capacity | check | variables, arguments and the program's peak live set per device; over it is an error naming the five largest values | fragmentation, XLA's buffer reuse beyond the live set |
| v2/v3 chips | mechanism | two devices (TensorCores) per chip, each with half the chip's HBM; both use the chip's ICI links (shared, so the chip's injection is charged once by the links) and an on-chip path between them (2x a raw link, 0.1 us: chosen) | megacore on v4 and later is one device: no split between its cores |
| DMA engines | mechanism (HBM side) | a device's sends are read one after another at up to its injection rate (its chip's links x B, plus the on-chip path on v2/v3); received chunks are written (and read when reduced) from their first byte on | descriptor and queue limits; the send queue itself delays nothing (the links queue the chunks) |
| ICI links | mechanism: SystemC network (`sim/net`) | per link and direction: achieved bandwidth B (sheet; v2/v3 0.9 x raw, chosen), 1 us per hop (sheet), dimension-order routing, wraparound by the slice's shape (sheet C.3), contention on each link, messages (or packets) | link-level flow control, credits, errors and retries; DCN between slices |
| collectives | mechanism | real algorithms on the links (ring, bidirectional ring, torus, multi-axis, direct for all-to-all), pipelined in 64 KiB granules (chosen), reductions on the vector unit (4 bytes per ALU per cycle, chosen); `auto` as in docs/collectives.md; each collective at least its lower bound (checked) | XLA's exact algorithm choice on a real TPU |
| cross-core copies | mechanism: SystemC network (`sim/net`) | a value used on another logical core of its replica: a point-to-point transfer (a permute pair) from the value's device, started when the copy is ready on the receiving core, over the links (or the on-chip path between the cores of a v2/v3 chip) with contention and in the link counters; its HBM read and write on the devices' HBM timelines as collective chunks'; the receiving core waits for its arrival | the sender's side of the copy does not occupy the sending core (a DMA) |
| host input pipeline | formula per batch | the batch's declared CPU work over the input threads, a prefetch depth per device, running free from time 0 | the host's other work, the tf.data runtime's own costs |
| PCIe infeed | formula per batch | bytes / the chip's PCIe rate (sheet A.8; v3 unpublished: 16 GB/s, chosen), queued per link; written into HBM in the infeed's share | outfeed, PCIe latency |
| host loop | formula | a fixed overhead per device call (chosen 100 us), once per call (what steps_per_run amortises) | the Python/TF runtime around it |
| the step walk | plain C++, documented order | each (replica, core) runs its kernels in program order until it blocks on another core's kernel or a collective's (or a copy's) end; the network runs only when all are finished or blocked, and only to the first end one waits for, so no collective or copy starts behind the network's clock (never clamped); the critical path of a call goes back from the device that finished last through the latest member of each collective it waited for | |
| invariants | check (`--check-invariants`; on in debug builds) | link busy <= elapsed; chip ICI bytes <= links x B x elapsed; device HBM bytes <= rate x elapsed and its use at no instant above the rate; kernels >= their roofline; collectives >= their lower bound | |
| everything else | ignored | | power and thermal limits, clock changes, SparseCores, VMEM/CMEM capacity, ECC, multi-slice DCN |

)md";

// `validate --constants`: the table of sim/chip/model_constants.h.
std::string ConstantsText(bool markdown) {
  std::string s;
  if (markdown) {
    s = "<!-- Generated by `tpusim validate --constants --format=markdown`; do "
        "not edit (ValidateBinary.ModelDocMatchesTheTool checks it). -->\n";
    s += kWhatIsModelled;
    s += "## The model's constants\n\n"
        "Every time-scaling constant of the pod model that is not a "
        "per-generation datasheet figure of a chip preset, as the code reads "
        "it (`sim/chip/model_constants.h`). A constant with a source cites "
        "its entry in the hardware reference sheet; a *chosen* one is "
        "tpusim's choice, and `tpusim validate --sensitivity` reruns every "
        "validation row with it scaled (additive: 0, 1/2, 1, 2x; rates and "
        "efficiencies: 1/2, 1, 2x, an efficiency capped at 1).\n\n"
        "| name | value | unit | kind | chosen | read for | source or reason |\n"
        "|---|---|---|---|---|---|---|\n";
    for (const sim::ModelConstant& c : sim::ModelConstants()) {
      absl::StrAppendFormat(
          &s, "| `%s` | %g | %s | %s | %s | %s | %s |\n", c.name, c.value,
          c.unit, sim::ConstantKindName(c.kind), c.chosen ? "yes" : "no",
          *c.generations ? c.generations : "all", MarkdownCell(c.source));
    }
    return s;
  }
  s = absl::StrFormat("%-38s %8s %-12s %-10s %-6s %-14s %s\n", "constant",
                      "value", "unit", "kind", "chosen", "read for", "source");
  for (const sim::ModelConstant& c : sim::ModelConstants()) {
    absl::StrAppendFormat(&s, "%-38s %8g %-12s %-10s %-6s %-14s %s\n", c.name,
                          c.value, c.unit, sim::ConstantKindName(c.kind),
                          c.chosen ? "yes" : "no",
                          *c.generations ? c.generations : "all", c.source);
  }
  return s;
}

absl::Status RunSensitivity(int jobs, std::ostream& out) {
  std::vector<size_t> runnable;
  for (size_t i = 0; i < Rows().size(); ++i) {
    if (Rows()[i].run) runnable.push_back(i);
  }
  std::vector<std::pair<size_t, std::string>> cases;
  for (size_t i : runnable) cases.push_back({i, ""});
  // A case that cannot differ from the baseline is not run: a constant its
  // row's generation does not read, or a factor whose value equals the
  // baseline's (an efficiency capped at 1).
  auto same_as_baseline = [](const sim::ModelConstant& c, const Row& row,
                             double f) {
    return f == 1 || !sim::ConstantApplies(c, row.generation) ||
           sim::ScaledValue(c, f) == c.value;
  };
  for (const sim::ModelConstant& c : sim::ModelConstants()) {
    if (!c.chosen) continue;
    for (double f : sim::SensitivityFactors(c)) {
      for (size_t i : runnable) {
        if (same_as_baseline(c, Rows()[i], f)) continue;
        cases.push_back({i, absl::StrCat(c.name, "=", f)});
      }
    }
  }
  const std::vector<Outcome> results = RunChildren(cases, jobs);
  std::map<std::pair<size_t, std::string>, Outcome> by_case;
  for (size_t k = 0; k < cases.size(); ++k) by_case[cases[k]] = results[k];
  out << "# each row with each chosen constant scaled (sim/chip/model_constants.h)\n";
  out << absl::StrFormat("%-38s %-22s %s\n", "constant", "row",
                         "value at each scale (row unit)");
  bool all_ran = true;
  for (const sim::ModelConstant& c : sim::ModelConstants()) {
    if (!c.chosen) continue;
    for (size_t i : runnable) {
      const Row& row = Rows()[i];
      std::string line = absl::StrFormat("%-38s %-22s", c.name, row.id);
      for (double f : sim::SensitivityFactors(c)) {
        const Outcome& o =
            by_case[{i, same_as_baseline(c, row, f)
                            ? ""
                            : absl::StrCat(c.name, "=", f)}];
        if (!o.ok) {
          all_ran = false;
          absl::StrAppendFormat(&line, "  x%g: FAILED (%s)", f, o.error);
        } else {
          absl::StrAppendFormat(&line, "  x%g: %.6g", f, o.value);
        }
      }
      absl::StrAppend(&line, " ", row.unit);
      if (!sim::ConstantApplies(c, row.generation)) {
        absl::StrAppend(&line, "  (not read on ", row.generation, ")");
      } else if (c.kind == sim::ConstantKind::kEfficiency) {
        absl::StrAppend(&line, "  (capped at 1)");
      }
      absl::StrAppend(&line, "\n");
      out << line;
    }
  }
  if (!all_ran) return absl::AbortedError("validate: a case could not run");
  return absl::OkStatus();
}

absl::Status RunValidate(const ParsedArgs& args, std::ostream& out) {
  if (args.Has("row")) {
    // Child mode: one case in this process, with the constants it scales.
    for (const std::string& scale : args.GetAll("scale")) {
      std::vector<std::string> kv = absl::StrSplit(scale, '=');
      double factor = 0;
      if (kv.size() != 2 || !absl::SimpleAtod(kv[1], &factor)) {
        return UsageError(absl::StrCat("--scale=", scale,
                                       " must be NAME=FACTOR (a number)"));
      }
      TPUSIM_RETURN_IF_ERROR(sim::ScaleModelConstant(kv[0], factor));
    }
    const std::string id = args.Get("row");
#ifdef TPUSIM_HAVE_XLA_TPU
    static sim::ExternalCompiler* xla = nullptr;
    if (args.Get("compiler", "tpusim") == "xla-tpu") {
      TPUSIM_ASSIGN_OR_RETURN(scenarios::XlaTpuStepOptions o,
                              XlaTpuOptionsFromArgs(args));
      xla = new sim::ExternalCompiler(scenarios::XlaTpuSimCompiler(o));
      g_compiler = xla;
    }
#endif
    for (const Row& row : Rows()) {
      if (id != row.id) continue;
      if (!row.run) {
        return absl::InvalidArgumentError(
            absl::StrCat("--row=", id, ": not expressible: ", row.not_expressible));
      }
      TPUSIM_ASSIGN_OR_RETURN(double v, row.run());
      out << absl::StrFormat("%.17g\n", v);
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat("--row=", id, ": unknown row"));
  }
  if (args.Has("scale")) {
    return UsageError("--scale applies to one --row (internal)");
  }
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "json" && format != "markdown") {
    return UsageError(
        absl::StrCat("--format=", format, " must be text, json or markdown"));
  }
  if (args.Has("constants")) {
    if (format == "json") return UsageError("--constants prints text or markdown");
    out << ConstantsText(format == "markdown");
    return absl::OkStatus();
  }
  TPUSIM_ASSIGN_OR_RETURN(int64_t jobs, args.GetInt("jobs", 2, 1));
  if (args.Has("sensitivity")) {
    if (format != "text") return UsageError("--sensitivity prints text");
    return RunSensitivity(static_cast<int>(jobs), out);
  }
  const std::string compiler = args.Get("compiler", "tpusim");
  if (compiler != "tpusim" && compiler != "xla-tpu") {
    return UsageError(absl::StrCat("--compiler=", compiler,
                                   ": must be tpusim or xla-tpu"));
  }
  const bool xla = compiler == "xla-tpu";
#ifndef TPUSIM_HAVE_XLA_TPU
  if (xla) {
    return absl::FailedPreconditionError(
        "--compiler xla-tpu: this tpusim was built without the PJRT C API "
        "header that libtpu needs (TPUSIM_PJRT=OFF, or tools/setup.sh not run)");
  }
#endif
  // --rows=ID,...: only those rows (e.g. without B.2's v4-8192 run).
  std::vector<std::string> only;
  if (args.Has("rows")) only = absl::StrSplit(args.Get("rows"), ',');
  auto selected = [&](const Row& row) {
    return only.empty() ||
           std::find(only.begin(), only.end(), row.id) != only.end();
  };
  std::vector<std::pair<size_t, std::string>> cases, xla_cases;
  for (size_t i = 0; i < Rows().size(); ++i) {
    if (!Rows()[i].run || !selected(Rows()[i])) continue;
    cases.push_back({i, ""});
    if (xla && CompilesAProgram(Rows()[i].id)) xla_cases.push_back({i, ""});
  }
  const std::vector<Outcome> results =
      RunChildren(cases, static_cast<int>(jobs));
  std::vector<const Outcome*> outcome(Rows().size(), nullptr);
  for (size_t k = 0; k < cases.size(); ++k) outcome[cases[k].first] = &results[k];
  std::vector<std::string> xla_args = {"--compiler=xla-tpu"};
  for (const char* flag : {"libtpu", "compile-time-limit"}) {
    if (args.Has(flag)) {
      xla_args.push_back(absl::StrCat("--", flag, "=", args.Get(flag)));
    }
  }
  const std::vector<Outcome> xla_results =
      xla ? RunChildren(xla_cases, static_cast<int>(jobs), xla_args)
          : std::vector<Outcome>{};
  std::vector<const Outcome*> xla_outcome(Rows().size(), nullptr);
  for (size_t k = 0; k < xla_cases.size(); ++k) {
    xla_outcome[xla_cases[k].first] = &xla_results[k];
  }
  // The xla-tpu column: the value in the row's unit and its error, or why
  // there is none.
  auto xla_cell = [&](size_t i, const Row& row) -> std::string {
    const Outcome* o = xla_outcome[i];
    if (o == nullptr) return "-";
    if (!o->ok) return absl::StrCat("could not run: ", o->error);
    return absl::StrFormat("%.4g %s (%+.1f%%)", o->value, row.unit,
                           100 * (o->value / row.published - 1));
  };

  std::vector<Json> rows;
  std::string text = absl::StrFormat("%-22s %-90s %12s %12s %8s %14s %s\n",
                                     "target", "what", "predicted", "published",
                                     "error", "tolerance", "result");
  std::string md =
      "<!-- Generated by `tpusim validate --format=markdown`; do not edit "
      "(ValidateBinary.DocsTableMatchesTheTool checks it). -->\n"
      "# Validation\n\n"
      "`tpusim validate` runs each published target of the hardware reference "
      "sheet (section B) and the C.4 step model in its own process and prints "
      "this table. Step rows (B.2, C.4) run in steady state: four device "
      "calls, the first a warm-up (as `run` defines it), the median of the "
      "other three; single-op rows (B.5, B.6) time the one op. Tolerances are "
      "fixed: the sheet's band where it gives one, else +-10 % for step and "
      "op times and +-15 % for collectives. `validate` exits 0 unless "
      "`--strict` is given (then 1 on any FAIL). C.4 divides the simulated "
      "step by an independent analytic model (C.1 rooflines in program "
      "order, C.3's all-reduce time overlapping the backward pass; "
      "`sim/validation.h`).\n\n"
      "| target | what | predicted | published | error | tolerance | result |\n"
      "|---|---|---|---|---|---|---|\n";
  bool all_ran = true;
  std::vector<std::string> failed;
  for (size_t i = 0; i < Rows().size(); ++i) {
    const Row& row = Rows()[i];
    if (!selected(row)) continue;
    std::map<std::string, Json> j = {{"id", Json::String(row.id)},
                                     {"what", Json::String(row.what)},
                                     {"source", Json::String(row.source)},
                                     {"unit", Json::String(row.unit)},
                                     {"published", Json::Float64(row.published)}};
    if (!row.run) {
      absl::StrAppendFormat(&text, "%-22s %-90s %12s %9.4g %-2s %8s %14s %s  (%s)\n",
                            row.id, row.what, "-", row.published, row.unit,
                            "-", "-", "n/a", row.not_expressible);
      absl::StrAppendFormat(&md, "| %s | %s | - | %g %s | - | - | n/a: %s |\n",
                            row.id, MarkdownCell(row.what), row.published,
                            row.unit, MarkdownCell(row.not_expressible));
      j["not_expressible"] = Json::String(row.not_expressible);
      rows.push_back(Json::Object(std::move(j)));
      continue;
    }
    const std::string tolerance = ToleranceText(row);
    j["tolerance"] = Json::String(tolerance);
    const Outcome& o = *outcome[i];
    if (!o.ok) {
      all_ran = false;
      absl::StrAppendFormat(&text, "%-22s %-90s FAILED: %s\n", row.id, row.what,
                            o.error);
      absl::StrAppendFormat(&md, "| %s | %s | could not run: %s | | | | |\n",
                            row.id, MarkdownCell(row.what), MarkdownCell(o.error));
      j["error"] = Json::String(o.error);
      rows.push_back(Json::Object(std::move(j)));
      continue;
    }
    const double err = o.value / row.published - 1;
    const bool pass = Passes(row, o.value);
    if (!pass) failed.push_back(row.id);
    absl::StrAppendFormat(&text, "%-22s %-90s %9.4g %-2s %9.4g %-2s %+7.1f%% %14s %s\n",
                          row.id, row.what, o.value, row.unit, row.published,
                          row.unit, 100 * err, tolerance, pass ? "PASS" : "FAIL");
    absl::StrAppendFormat(&md, "| %s | %s | %.4g %s | %g %s | %+.1f %% | %s | %s |\n",
                          row.id, MarkdownCell(row.what), o.value, row.unit,
                          row.published, row.unit, 100 * err, tolerance,
                          pass ? "PASS" : "**FAIL**");
    j["predicted"] = Json::Float64(o.value);
    j["error"] = Json::Float64(err);
    j["result"] = Json::String(pass ? "PASS" : "FAIL");
    if (xla) {
      absl::StrAppendFormat(&text, "%-22s   with --compiler xla-tpu: %s\n", "",
                            xla_cell(i, row));
      absl::StrAppendFormat(&md, "| %s (xla-tpu) | the same, compiled by XLA:TPU | %s | | | | |\n",
                            row.id, MarkdownCell(xla_cell(i, row)));
      if (const Outcome* xo = xla_outcome[i]) {
        j["xla_tpu"] = xo->ok ? Json::Float64(xo->value) : Json::String(xo->error);
      }
    }
    rows.push_back(Json::Object(std::move(j)));
  }
  if (format == "json") {
    out << Json::Array(std::move(rows)).Dump() << "\n";
  } else if (format == "markdown") {
    out << md;
  } else {
    out << text;
  }
  if (!all_ran) return absl::AbortedError("validate: a case could not run");
  if (args.Has("strict") && !failed.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("validate --strict: ", failed.size(),
                     " row(s) outside their tolerance: ",
                     absl::StrJoin(failed, ", ")));
  }
  return absl::OkStatus();
}

}  // namespace

Subcommand ValidateCommand() {
  Subcommand s;
  s.name = "validate";
  s.summary =
      "compare the model with the published targets (PASS/FAIL per row; "
      "exit 1 on a FAIL only with --strict)";
  s.usage =
      "tpusim validate [--jobs N] [--format=text|json|markdown] [--strict] "
      "[--compiler=xla-tpu] [--rows=ID,...] | "
      "--sensitivity | --constants";
  s.flags = {
      {"jobs", true, "cases run at once (default 2)"},
      {"format", true, "text (default), json or markdown (docs/validation.md)"},
      {"strict", false, "exit 1 when a row is outside its tolerance"},
      {"sensitivity", false,
       "rerun every row with each chosen model constant scaled (one line per "
       "constant and row)"},
      {"constants", false,
       "print the table of model constants (markdown: docs/model.md)"},
      {"compiler", true,
       "xla-tpu: also run every row that compiles a program (C.4, B.2) with "
       "the XLA:TPU compiler in libtpu, side by side (docs/xla-tpu.md)"},
      {"libtpu", true, "libtpu.so for --compiler xla-tpu"},
      {"compile-time-limit", true, "seconds one xla-tpu compile may take"},
      {"rows", true, "ID,...: only these rows"},
      {"row", true, "run one case in this process and print its value (internal)"},
      {"scale", true, "with --row: NAME=FACTOR scales a chosen constant (internal)"},
  };
  s.run = &RunValidate;
  return s;
}

}  // namespace tpusim::tools
