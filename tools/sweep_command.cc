#include "tools/sweep_command.h"

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "scenarios/scenario_loader.h"
#include "tools/child_process.h"
#include "tools/compare_report.h"
#include "tools/json_writer.h"
#include "tools/out_dir.h"
#include "tools/scale_batch.h"

namespace tpusim::tools {
namespace {

struct Point {
  std::vector<std::string> sets;
  int exit_code = -1;
};

absl::Status RunSweep(const ParsedArgs& args, std::ostream& out) {
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "json" && format != "csv") {
    return UsageError(
        absl::StrCat("--format=", format, " must be text, json or csv"));
  }
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  TPUSIM_ASSIGN_OR_RETURN(int64_t jobs, args.GetInt("jobs", cores, 1));
  const std::vector<std::string> sets = args.GetAll("set");
  if (sets.empty()) {
    return UsageError("sweep needs at least one --set PATH=V1,V2,...");
  }
  // What is the same for every point is checked once here, not by one
  // failing child per point: --backend (as `tpusim run` checks it),
  // --scale-batch, --out and that the scenario file can be read.
  TPUSIM_RETURN_IF_ERROR(CheckRunBackendFlag(args));
  TPUSIM_ASSIGN_OR_RETURN(const ScaleBatch scale_batch,
                          ParseScaleBatchFlag(args));
  const std::string out_dir = args.Get("out");
  if (args.Has("out")) TPUSIM_RETURN_IF_ERROR(CheckFreshDirectory("out", out_dir));
  const std::string& path = args.positional()[0];
  TPUSIM_RETURN_IF_ERROR(common::ReadRegularFile(path, "scenario file",
                                                 scenarios::kMaxScenarioFileBytes)
                             .status());
  std::vector<std::vector<std::string>> axes;
  for (const std::string& s : sets) {
    std::vector<std::string> values = ExpandSetList(s);
    if (values.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--set ", s, ": want PATH=V1,V2,... (at least one value)"));
    }
    axes.push_back(std::move(values));
  }
  std::vector<Point> points(1);
  for (const auto& axis : axes) {
    std::vector<Point> next;
    for (const Point& p : points) {
      for (const std::string& v : axis) {
        Point q = p;
        q.sets.push_back(v);
        next.push_back(std::move(q));
      }
    }
    points = std::move(next);
  }
  // Every point's scenario is loaded and validated before any runs (issue
  // 21): a bad --set path or value, or a slice clash, is one error naming
  // the point, not a failed row per point after the others ran.
  for (size_t i = 0; i < points.size(); ++i) {
    absl::StatusOr<scenarios::LoadedScenario> loaded =
        LoadRunScenario(path, points[i].sets, scale_batch);
    if (!loaded.ok()) {
      return absl::Status(
          loaded.status().code(),
          absl::StrCat("point ", i, " (--set ",
                       absl::StrJoin(points[i].sets, " --set "),
                       "): ", loaded.status().message(),
                       " (no point was run)"));
    }
  }
  if (args.Has("out")) TPUSIM_RETURN_IF_ERROR(MakeDirectory(out_dir));
  std::vector<std::vector<std::string>> commands;
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    std::vector<std::string> argv = {"run", path, "--format=json"};
    // `run`'s own flags go to every point as given.
    for (const char* flag :
         {"backend", "pjrt-plugin", "trace-devices", "memory-limit",
          "scale-batch", "compiler", "libtpu", "compile-time-limit"}) {
      if (args.Has(flag)) {
        argv.push_back(absl::StrCat("--", flag, "=", args.Get(flag)));
      }
    }
    if (args.Has("check-invariants")) argv.push_back("--check-invariants");
    if (args.Has("out")) {
      argv.push_back(absl::StrCat("--out=", out_dir, "/point-", i));
    }
    // The points running at once share the cores: each network model gets
    // its part (a --set of the user's, coming later, still wins).
    argv.push_back(absl::StrCat(
        "--set=run.pod.options.sim_threads=",
        std::max<int64_t>(1, cores / std::min<int64_t>(
                                         jobs, static_cast<int64_t>(
                                                   points.size())))));
    for (const std::string& s : p.sets) argv.push_back("--set=" + s);
    commands.push_back(std::move(argv));
  }
  const std::vector<ChildResult> results =
      RunSelf(commands, static_cast<int>(jobs));
  std::vector<ComparedRun> runs(points.size());
  std::vector<std::vector<std::string>> point_sets;
  int failed = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    Point& p = points[i];
    ComparedRun& r = runs[i];
    r.label = absl::StrJoin(p.sets, " ");
    point_sets.push_back(p.sets);
    p.exit_code = results[i].exit_code;
    if (p.exit_code == 0) {
      absl::StatusOr<RunStats> stats =
          ReadStatsJson(results[i].out, absl::StrCat("point ", i));
      if (stats.ok()) {
        r.stats = *std::move(stats);
        if (args.Has("out")) {
          r.report_href = absl::StrCat("point-", i, "/report.html");
        }
      } else {
        r.ok = false;
        r.error = std::string(stats.status().message());
      }
    } else {
      std::string err(absl::StripTrailingAsciiWhitespace(results[i].err));
      const size_t nl = err.find('\n');
      r.ok = false;
      r.error = nl == std::string::npos ? err : err.substr(0, nl);
      if (r.error.empty()) r.error = absl::StrCat("exit ", p.exit_code);
    }
    failed += r.ok ? 0 : 1;
  }
  if (format == "text") out << CompareText(runs);
  if (format == "csv") out << CompareCsv(runs);
  if (format == "json") out << CompareJson(runs, point_sets).Dump() << "\n";
  if (args.Has("out")) {
    TPUSIM_RETURN_IF_ERROR(common::WriteFile(
        out_dir + "/compare.html",
        CompareHtml(absl::StrCat("tpusim sweep ", path), runs)));
  }
  if (failed > 0) {
    return absl::AbortedError(absl::StrCat("sweep: ", failed, " of ",
                                           points.size(),
                                           " points failed (their rows say why)"));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> ExpandSetList(absl::string_view assignment) {
  const size_t eq = assignment.find('=');
  if (eq == absl::string_view::npos || eq + 1 >= assignment.size()) return {};
  const std::string path(assignment.substr(0, eq));
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  for (char c : assignment.substr(eq + 1)) {
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(path + "=" + current);
      current.clear();
      continue;
    }
    current.push_back(c);
  }
  out.push_back(path + "=" + current);
  return out;
}

Subcommand SweepCommand() {
  Subcommand s;
  s.name = "sweep";
  s.summary = "run a scenario over values of fields, one process per point";
  s.usage =
      "tpusim sweep SCENARIO --set PATH=V1,V2,... [--set ...] [--jobs N] "
      "[--format=text|json|csv] [--out DIR] [--scale-batch=global|per-replica] "
      "[--backend=host|sim|pjrt] [--pjrt-plugin PATH] "
      "[--trace-devices=ID,...|all] [--memory-limit=SIZE] "
      "[--check-invariants] "
      "[--compiler=tpusim|xla-tpu] [--libtpu PATH] [--compile-time-limit S]";
  s.flags = {
      {"set", true, "PATH=V1,V2,...: the values of one field (repeatable: the "
                    "points are the cartesian product)"},
      {"jobs", true, "points run at once (default: every core)"},
      {"format", true, "text (default), json or csv"},
      {"out", true,
       "DIR (new or empty): each point's stats.json, trace.json and "
       "report.html in DIR/point-K/, and DIR/compare.html side by side"},
      {"scale-batch", true,
       "global (default) or per-replica: keep the file's per-replica batch "
       "as the points change the replicas (passed to each `tpusim run`)"},
      {"backend", true, "passed to each `tpusim run`"},
      {"pjrt-plugin", true, "passed to each `tpusim run`"},
      {"trace-devices", true, "passed to each `tpusim run`"},
      {"memory-limit", true, "passed to each `tpusim run`"},
      {"check-invariants", false, "passed to each `tpusim run`"},
      {"compiler", true, "passed to each `tpusim run` (xla-tpu: docs/xla-tpu.md)"},
      {"libtpu", true, "passed to each `tpusim run`"},
      {"compile-time-limit", true, "passed to each `tpusim run`"},
  };
  s.min_positional = 1;
  s.max_positional = 1;
  s.run = &RunSweep;
  s.description =
      "Every point's scenario is loaded and checked before any point runs. "
      "The text form has a header row, then per point: chips, replicas, "
      "per-replica batch, mean step time, examples/s overall and per chip, "
      "MFU, the breakdown of the mean step (% per category), peak HBM of "
      "capacity and the bottleneck (its share of the critical path). "
      "docs/cli.md describes the JSON and CSV forms.";
  return s;
}

}  // namespace tpusim::tools
