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
#include "tools/json_writer.h"

namespace tpusim::tools {
namespace {

struct Point {
  std::vector<std::string> sets;
  int exit_code = -1;
  std::string error;
  std::string stats;  // the point's stats.json
};

// The value after "key": in our own flat stats.json text.
std::string JsonField(const std::string& json, const std::string& key) {
  const std::string needle = absl::StrCat("\"", key, "\": ");
  const size_t at = json.find(needle);
  if (at == std::string::npos) return "";
  size_t end = at + needle.size();
  if (end < json.size() && json[end] == '"') {
    const size_t close = json.find('"', end + 1);
    return json.substr(end + 1, close - end - 1);
  }
  while (end < json.size() && json[end] != ',' && json[end] != '}') ++end;
  return json.substr(at + needle.size(), end - at - needle.size());
}

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
  // failing child per point: --backend (as `tpusim run` checks it) and that
  // the scenario file can be read.
  TPUSIM_RETURN_IF_ERROR(CheckRunBackendFlag(args));
  TPUSIM_RETURN_IF_ERROR(common::ReadRegularFile(args.positional()[0],
                                                 "scenario file",
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
  std::vector<std::vector<std::string>> commands;
  for (const Point& p : points) {
    std::vector<std::string> argv = {"run", args.positional()[0],
                                     "--format=json"};
    // `run`'s own flags go to every point as given.
    for (const char* flag :
         {"backend", "pjrt-plugin", "trace-devices", "memory-limit",
          "compiler", "libtpu", "compile-time-limit"}) {
      if (args.Has(flag)) {
        argv.push_back(absl::StrCat("--", flag, "=", args.Get(flag)));
      }
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
  for (size_t i = 0; i < points.size(); ++i) {
    Point& p = points[i];
    p.exit_code = results[i].exit_code;
    if (p.exit_code == 0) {
      p.stats = results[i].out;
    } else {
      std::string err(absl::StripTrailingAsciiWhitespace(results[i].err));
      const size_t nl = err.find('\n');
      p.error = nl == std::string::npos ? err : err.substr(0, nl);
      if (p.error.empty()) p.error = absl::StrCat("exit ", p.exit_code);
    }
  }
  // The table, in point order.
  bool all_ok = true;
  std::vector<Json> rows;
  std::string text;
  std::string csv = "point,set,step_ms,examples_per_s,mfu,bottleneck,error\n";
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const std::string set = absl::StrJoin(p.sets, " ");
    if (p.exit_code != 0) all_ok = false;
    std::string step = JsonField(p.stats, "mean");
    std::string eps = JsonField(p.stats, "examples_per_second");
    std::string mfu = JsonField(p.stats, "mfu");
    std::string bottleneck = JsonField(p.stats, "bottleneck");
    if (format == "text") {
      if (p.exit_code == 0) {
        double st = 0, ex = 0, mf = 0;
        (void)absl::SimpleAtod(step, &st);
        (void)absl::SimpleAtod(eps, &ex);
        (void)absl::SimpleAtod(mfu, &mf);
        absl::StrAppendFormat(&text,
                              "%3d  %-40s  step %10.3f ms  %12.1f ex/s  MFU "
                              "%5.1f%%  %s\n",
                              i, set, st, ex, 100 * mf, bottleneck);
      } else {
        absl::StrAppendFormat(&text, "%3d  %-40s  FAILED: %s\n", i, set, p.error);
      }
    } else if (format == "csv") {
      auto q = [](const std::string& v) {
        std::string o = "\"";
        for (char c : v) o += c == '"' ? std::string("\"\"") : std::string(1, c);
        return o + "\"";
      };
      absl::StrAppend(&csv, i, ",", q(set), ",", step, ",", eps, ",", mfu, ",",
                      q(bottleneck), ",", q(p.error), "\n");
    } else {
      std::vector<Json> set_items;
      for (const std::string& s : p.sets) set_items.push_back(Json::String(s));
      std::map<std::string, Json> row = {
          {"point", Json::Int(static_cast<int64_t>(i))},
          {"set", Json::Array(std::move(set_items))},
          {"ok", Json::Bool(p.exit_code == 0)}};
      if (p.exit_code == 0) {
        double v = 0;
        if (absl::SimpleAtod(step, &v)) row["step_ms"] = Json::Float64(v);
        if (absl::SimpleAtod(eps, &v)) row["examples_per_second"] = Json::Float64(v);
        if (absl::SimpleAtod(mfu, &v)) row["mfu"] = Json::Float64(v);
        row["bottleneck"] = Json::String(bottleneck);
      } else {
        row["error"] = Json::String(p.error);
      }
      rows.push_back(Json::Object(std::move(row)));
    }
  }
  if (format == "text") out << text;
  if (format == "csv") out << csv;
  if (format == "json") out << Json::Array(std::move(rows)).Dump() << "\n";
  if (!all_ok) {
    int failed = 0;
    for (const Point& p : points) failed += p.exit_code != 0;
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
      "[--format=text|json|csv] [--backend=host|sim|pjrt] [--pjrt-plugin PATH] "
      "[--trace-devices=ID,...|all] [--memory-limit=SIZE] "
      "[--compiler=tpusim|xla-tpu] [--libtpu PATH] [--compile-time-limit S]";
  s.flags = {
      {"set", true, "PATH=V1,V2,...: the values of one field (repeatable: the "
                    "points are the cartesian product)"},
      {"jobs", true, "points run at once (default: every core)"},
      {"format", true, "text (default), json or csv"},
      {"backend", true, "passed to each `tpusim run`"},
      {"pjrt-plugin", true, "passed to each `tpusim run`"},
      {"trace-devices", true, "passed to each `tpusim run`"},
      {"memory-limit", true, "passed to each `tpusim run`"},
      {"compiler", true, "passed to each `tpusim run` (xla-tpu: docs/xla-tpu.md)"},
      {"libtpu", true, "passed to each `tpusim run`"},
      {"compile-time-limit", true, "passed to each `tpusim run`"},
  };
  s.min_positional = 1;
  s.max_positional = 1;
  s.run = &RunSweep;
  return s;
}

}  // namespace tpusim::tools
