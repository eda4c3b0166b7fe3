#include "tools/compare_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/units.h"
#include "tools/json_reader.h"

namespace tpusim::tools {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Short labels for the table's breakdown columns, BreakdownCategories()
// order.
std::string ShortCategory(const std::string& c) {
  if (c == "collective") return "coll";
  if (c == "memory") return "mem";
  if (c == "vector") return "vec";
  return c;
}

// "input 77.0% of the critical path" from the stats' bottleneck category and
// share.
std::string ShortBottleneck(const RunStats& s) {
  if (s.bottleneck_category.empty()) return s.bottleneck;
  return absl::StrFormat("%s %.1f%% of the critical path",
                         s.bottleneck_category, 100 * s.bottleneck_share);
}

}  // namespace

absl::StatusOr<RunStats> ReadStatsJson(absl::string_view text,
                                       absl::string_view source) {
  absl::StatusOr<JsonValue> parsed = ParseJson(text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not JSON: ", parsed.status().message()));
  }
  const JsonValue& v = *parsed;
  const std::string schema = v.Get("schema").string;
  if (!absl::StartsWith(schema, "tpusim.run.stats/")) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": schema=\"", schema,
        "\": not a run's stats (want tpusim.run.stats/N, as `tpusim run "
        "--out DIR` writes DIR/stats.json)"));
  }
  RunStats s;
  auto number = [&](const JsonValue& n, const std::string& key,
                    double* out) -> absl::Status {
    if (n.kind != JsonValue::Kind::kNumber) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": ", key, " is missing or not a number"));
    }
    *out = n.number;
    return absl::OkStatus();
  };
  double d = 0;
  s.scenario = v.Get("scenario").string;
  s.backend = v.Get("backend").string;
  s.slice = v.Get("slice").string;
  if (absl::Status st = number(v.Get("chips"), "chips", &d); !st.ok()) return st;
  s.num_chips = static_cast<int>(d);
  if (absl::Status st = number(v.Get("replicas"), "replicas", &d); !st.ok()) {
    return st;
  }
  s.num_replicas = static_cast<int>(d);
  if (absl::Status st = number(v.Get("global_batch"), "global_batch", &d);
      !st.ok()) {
    return st;
  }
  s.global_batch = static_cast<int64_t>(d);
  s.steps = static_cast<int64_t>(v.Get("steps").number);
  s.timed = v.Get("timed").boolean;
  s.bottleneck = v.Get("bottleneck").string;
  if (!s.timed) return s;
  const JsonValue& step = v.Get("step_time_ms");
  if (absl::Status st = number(step.Get("mean"), "step_time_ms.mean",
                               &s.step_ms_mean);
      !st.ok()) {
    return st;
  }
  s.step_ms_p50 = step.Get("p50").number;
  s.step_ms_p99 = step.Get("p99").number;
  s.examples_per_second = v.Get("examples_per_second").number;
  if (!v.Has("breakdown_ms")) {
    s.wall_time_only = true;
    return s;
  }
  for (const std::string& c : BreakdownCategories()) {
    if (absl::Status st = number(v.Get("breakdown_ms").Get(c),
                                 absl::StrCat("breakdown_ms.", c), &d);
        !st.ok()) {
      return st;
    }
    s.breakdown_ms[c] = d;
  }
  // The step the breakdown is a mean over (stats.json /2; a /1 file's
  // breakdown is over its step mean).
  s.breakdown_step_ms = v.Has("breakdown_step_ms")
                            ? v.Get("breakdown_step_ms").number
                            : s.step_ms_mean;
  s.mfu = v.Get("mfu").number;
  s.hbm_gbps_per_chip = v.Get("hbm_gbps_per_chip").number;
  s.peak_hbm_bytes = static_cast<int64_t>(v.Get("peak_hbm_bytes").number);
  s.hbm_capacity_bytes =
      static_cast<int64_t>(v.Get("hbm_capacity_bytes").number);
  s.bottleneck_category = v.Get("bottleneck_category").string;
  s.bottleneck_share = v.Get("bottleneck_share").number;
  for (const JsonValue& l : v.Get("busiest_links").items) {
    LinkUse u;
    u.chip = static_cast<int>(l.Get("chip").number);
    for (const JsonValue& c : l.Get("coords").items) {
      u.coords.push_back(static_cast<int>(c.number));
    }
    u.dim = static_cast<int>(l.Get("dim").number);
    u.direction = static_cast<int>(l.Get("direction").number);
    u.bytes = static_cast<int64_t>(l.Get("bytes").number);
    // Either spelling (tpusim.run.stats/1 before issue 21 wrote utilisation).
    u.utilization = l.Has("utilization") ? l.Get("utilization").number
                                         : l.Get("utilisation").number;
    s.busiest_links.push_back(std::move(u));
  }
  return s;
}

int64_t PerReplicaBatch(const RunStats& s) {
  return s.num_replicas > 0 ? s.global_batch / s.num_replicas : 0;
}

double ExamplesPerSecondPerChip(const RunStats& s) {
  return s.num_chips > 0 ? s.examples_per_second / s.num_chips : 0;
}

std::string CompareText(const std::vector<ComparedRun>& runs) {
  size_t label_width = 3;
  for (const ComparedRun& r : runs) {
    label_width = std::max(label_width, r.label.size());
  }
  const int lw = static_cast<int>(std::min<size_t>(label_width, 48));
  std::string out = absl::StrFormat("%3s  %-*s  %5s %8s %9s %11s %11s %10s %6s",
                                    "#", lw, "run", "chips", "replicas",
                                    "batch/rep", "step ms", "examples/s",
                                    "ex/s/chip", "MFU");
  for (const std::string& c : BreakdownCategories()) {
    absl::StrAppendFormat(&out, " %6s", absl::StrCat(ShortCategory(c), "%"));
  }
  absl::StrAppend(&out, "  peak HBM of capacity  bottleneck\n");
  for (size_t i = 0; i < runs.size(); ++i) {
    const ComparedRun& r = runs[i];
    absl::StrAppendFormat(&out, "%3d  %-*s  ", i, lw, r.label);
    if (!r.ok) {
      absl::StrAppend(&out, "FAILED: ", r.error, "\n");
      continue;
    }
    const RunStats& s = r.stats;
    absl::StrAppendFormat(&out, "%5d %8d %9d ", s.num_chips, s.num_replicas,
                          PerReplicaBatch(s));
    if (!s.timed) {
      absl::StrAppend(&out, s.bottleneck, "\n");
      continue;
    }
    absl::StrAppendFormat(&out, "%11.3f %11.1f %10.1f", s.step_ms_mean,
                          s.examples_per_second, ExamplesPerSecondPerChip(s));
    if (s.wall_time_only) {
      absl::StrAppend(&out, "  (breakdown not measured)\n");
      continue;
    }
    absl::StrAppendFormat(&out, " %5.1f%%", 100 * s.mfu);
    for (const std::string& c : BreakdownCategories()) {
      auto it = s.breakdown_ms.find(c);
      const double ms = it == s.breakdown_ms.end() ? 0 : it->second;
      absl::StrAppendFormat(&out, " %6.1f", BreakdownPercent(s, ms));
    }
    absl::StrAppendFormat(&out, "  %8.2f of %6.2f GiB  %s\n",
                          s.peak_hbm_bytes / kGiB, s.hbm_capacity_bytes / kGiB,
                          ShortBottleneck(s));
  }
  return out;
}

Json CompareJson(const std::vector<ComparedRun>& runs,
                 const std::vector<std::vector<std::string>>& sets) {
  std::vector<Json> rows;
  for (size_t i = 0; i < runs.size(); ++i) {
    const ComparedRun& r = runs[i];
    std::map<std::string, Json> row = {
        {"point", Json::Int(static_cast<int64_t>(i))},
        {"ok", Json::Bool(r.ok)}};
    if (i < sets.size()) {
      std::vector<Json> items;
      for (const std::string& s : sets[i]) items.push_back(Json::String(s));
      row["set"] = Json::Array(std::move(items));
    } else {
      row["run"] = Json::String(r.label);
    }
    if (!r.report_href.empty()) row["report"] = Json::String(r.report_href);
    if (!r.ok) {
      row["error"] = Json::String(r.error);
      rows.push_back(Json::Object(std::move(row)));
      continue;
    }
    const RunStats& s = r.stats;
    row["slice"] = Json::String(s.slice);
    row["chips"] = Json::Int(s.num_chips);
    row["replicas"] = Json::Int(s.num_replicas);
    row["global_batch"] = Json::Int(s.global_batch);
    row["per_replica_batch"] = Json::Int(PerReplicaBatch(s));
    row["bottleneck"] = Json::String(s.bottleneck);
    if (s.timed) {
      row["step_ms"] = Json::Float64(s.step_ms_mean);
      row["examples_per_second"] = Json::Float64(s.examples_per_second);
      row["examples_per_second_per_chip"] =
          Json::Float64(ExamplesPerSecondPerChip(s));
    }
    if (s.timed && !s.wall_time_only) {
      std::map<std::string, Json> breakdown;
      for (const auto& [c, ms] : s.breakdown_ms) breakdown[c] = Json::Float64(ms);
      row["breakdown_ms"] = Json::Object(std::move(breakdown));
      row["mfu"] = Json::Float64(s.mfu);
      row["peak_hbm_bytes"] = Json::Int(s.peak_hbm_bytes);
      row["hbm_capacity_bytes"] = Json::Int(s.hbm_capacity_bytes);
      row["bottleneck_category"] = Json::String(s.bottleneck_category);
      row["bottleneck_share"] = Json::Float64(s.bottleneck_share);
    }
    rows.push_back(Json::Object(std::move(row)));
  }
  return Json::Array(std::move(rows));
}

std::string CompareCsv(const std::vector<ComparedRun>& runs) {
  auto q = [](const std::string& v) {
    std::string o = "\"";
    for (char c : v) o += c == '"' ? std::string("\"\"") : std::string(1, c);
    return o + "\"";
  };
  std::string out =
      "point,set,chips,replicas,per_replica_batch,step_ms,examples_per_s,"
      "examples_per_s_per_chip,mfu";
  for (const std::string& c : BreakdownCategories()) {
    absl::StrAppend(&out, ",", c, "_ms");
  }
  absl::StrAppend(&out,
                  ",peak_hbm_bytes,hbm_capacity_bytes,bottleneck_category,"
                  "bottleneck_share,bottleneck,error\n");
  for (size_t i = 0; i < runs.size(); ++i) {
    const ComparedRun& r = runs[i];
    const RunStats& s = r.stats;
    absl::StrAppend(&out, i, ",", q(r.label), ",");
    const bool figures = r.ok && s.timed;
    const bool breakdown = figures && !s.wall_time_only;
    if (r.ok) {
      absl::StrAppend(&out, s.num_chips, ",", s.num_replicas, ",",
                      PerReplicaBatch(s));
    } else {
      absl::StrAppend(&out, ",,");
    }
    absl::StrAppend(
        &out, ",", figures ? ShortestFloat64(s.step_ms_mean) : "", ",",
        figures ? ShortestFloat64(s.examples_per_second) : "", ",",
        figures ? ShortestFloat64(ExamplesPerSecondPerChip(s)) : "", ",",
        breakdown ? ShortestFloat64(s.mfu) : "");
    for (const std::string& c : BreakdownCategories()) {
      auto it = s.breakdown_ms.find(c);
      absl::StrAppend(&out, ",",
                      breakdown && it != s.breakdown_ms.end()
                          ? ShortestFloat64(it->second)
                          : "");
    }
    absl::StrAppend(
        &out, ",", breakdown ? absl::StrCat(s.peak_hbm_bytes) : "", ",",
        breakdown ? absl::StrCat(s.hbm_capacity_bytes) : "", ",",
        q(breakdown ? s.bottleneck_category : ""), ",",
        breakdown ? ShortestFloat64(s.bottleneck_share) : "", ",",
        q(r.ok ? s.bottleneck : ""), ",", q(r.error), "\n");
  }
  return out;
}

std::string CompareHtml(const std::string& title,
                        const std::vector<ComparedRun>& runs) {
  const double kWidth = 640;  // chosen: the widest bar, in px
  const double kLabel = 260;  // chosen: the label column, in px
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>",
      HtmlEscape(title),
      "</title><style>body{font-family:sans-serif;margin:2em;max-width:"
      "1100px}table{border-collapse:collapse;font-size:13px}td,th{border:1px "
      "solid #ccc;padding:2px 6px;text-align:right}td.l,th.l{text-align:left}"
      "pre{white-space:pre-wrap}.legend span{display:inline-block;margin-right:"
      "14px}.sw{display:inline-block;width:12px;height:12px;margin-right:4px;"
      "vertical-align:middle}svg text{font-size:12px}</style></head><body>\n"
      "<h1>",
      HtmlEscape(title), "</h1>\n");
  // The figures as a table.
  absl::StrAppend(&html,
                  "<h2>Runs</h2>\n<table id=\"runs\"><tr><th>#</th><th "
                  "class=\"l\">run</th><th>chips</th><th>replicas</th><th>"
                  "batch/replica</th><th>step ms</th><th>examples/s</th><th>"
                  "examples/s per chip</th><th>MFU</th><th>peak HBM</th><th>"
                  "capacity</th><th class=\"l\">bottleneck (critical path)"
                  "</th></tr>\n");
  double max_step = 0, max_per_chip = 0;
  for (const ComparedRun& r : runs) {
    if (!r.ok || !r.stats.timed) continue;
    max_step = std::max(max_step, r.stats.breakdown_step_ms);
    max_per_chip = std::max(max_per_chip, ExamplesPerSecondPerChip(r.stats));
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const ComparedRun& r = runs[i];
    const std::string label =
        r.report_href.empty()
            ? HtmlEscape(r.label)
            : absl::StrCat("<a href=\"", HtmlEscape(r.report_href), "\">",
                           HtmlEscape(r.label), "</a>");
    absl::StrAppendFormat(&html, "<tr><td>%d</td><td class=\"l\">%s</td>", i,
                          label);
    if (!r.ok) {
      absl::StrAppend(&html, "<td class=\"l\" colspan=\"10\">FAILED: ",
                      HtmlEscape(r.error), "</td></tr>\n");
      continue;
    }
    const RunStats& s = r.stats;
    const bool figures = s.timed && !s.wall_time_only;
    absl::StrAppendFormat(
        &html,
        "<td>%d</td><td>%d</td><td>%d</td><td>%.3f</td><td>%.1f</td><td>%.1f"
        "</td><td>%s</td><td>%s</td><td>%s</td><td class=\"l\">%s</td></tr>\n",
        s.num_chips, s.num_replicas, PerReplicaBatch(s), s.step_ms_mean,
        s.examples_per_second, ExamplesPerSecondPerChip(s),
        figures ? absl::StrFormat("%.1f%%", 100 * s.mfu) : "-",
        figures ? absl::StrFormat("%.2f GiB", s.peak_hbm_bytes / kGiB) : "-",
        figures ? absl::StrFormat("%.2f GiB", s.hbm_capacity_bytes / kGiB)
                : "-",
        HtmlEscape(figures ? ShortBottleneck(s) : s.bottleneck));
  }
  absl::StrAppend(&html, "</table>\n");
  // Breakdown bars, one time scale for all runs.
  absl::StrAppend(&html,
                  "<h2>Mean step by category (one time scale)</h2>\n"
                  "<p>Mean per device over every step, the warm-up "
                  "included, as each run's breakdown table.</p>\n"
                  "<p class=\"legend\" id=\"legend\">");
  for (const std::string& c : BreakdownCategories()) {
    absl::StrAppend(&html, "<span data-category=\"", c,
                    "\"><i class=\"sw\" style=\"background:", CategoryColour(c),
                    "\"></i>", c, "</span>");
  }
  absl::StrAppend(&html, "</p>\n");
  const double row_h = 28;
  const int n = static_cast<int>(runs.size());
  absl::StrAppendFormat(&html,
                        "<svg id=\"breakdown\" width=\"%.0f\" height=\"%.0f\">",
                        kLabel + kWidth + 90, n * row_h + 30);
  for (int i = 0; i < n; ++i) {
    const ComparedRun& r = runs[i];
    const double y = 4 + i * row_h;
    absl::StrAppendFormat(&html,
                          "<text x=\"0\" y=\"%.0f\">%d %s</text>", y + 15, i,
                          HtmlEscape(r.label.substr(0, 36)));
    if (!r.ok || !r.stats.timed || r.stats.wall_time_only || max_step <= 0) {
      absl::StrAppendFormat(&html,
                            "<text x=\"%.0f\" y=\"%.0f\">no breakdown</text>",
                            kLabel, y + 15);
      continue;
    }
    const RunStats& s = r.stats;
    double x = kLabel;
    for (const std::string& c : BreakdownCategories()) {
      auto it = s.breakdown_ms.find(c);
      const double ms = it == s.breakdown_ms.end() ? 0 : it->second;
      const double w = kWidth * ms / max_step;
      if (w <= 0) continue;
      absl::StrAppendFormat(
          &html,
          "<rect class=\"seg\" data-run=\"%d\" data-category=\"%s\" x=\"%.2f\" "
          "y=\"%.0f\" width=\"%.2f\" height=\"20\" fill=\"%s\"><title>%s "
          "%.3f ms (%.1f%%)</title></rect>",
          i, c, x, y, w, CategoryColour(c), c, ms, BreakdownPercent(s, ms));
      x += w;
    }
    absl::StrAppendFormat(&html,
                          "<text x=\"%.2f\" y=\"%.0f\">%.3f ms</text>", x + 4,
                          y + 15, s.breakdown_step_ms);
  }
  absl::StrAppendFormat(&html,
                        "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" "
                        "stroke=\"#333\"/><text x=\"%.0f\" y=\"%.0f\">0</text>"
                        "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.3f "
                        "ms</text></svg>\n",
                        kLabel, n * row_h + 6, kLabel + kWidth, n * row_h + 6,
                        kLabel, n * row_h + 22, kLabel + kWidth,
                        n * row_h + 22, max_step);
  // The breakdown's numbers.
  absl::StrAppend(&html,
                  "<table id=\"breakdown-values\"><tr><th>#</th>");
  for (const std::string& c : BreakdownCategories()) {
    absl::StrAppend(&html, "<th>", c, " ms</th>");
  }
  absl::StrAppend(&html, "</tr>\n");
  for (int i = 0; i < n; ++i) {
    const ComparedRun& r = runs[i];
    absl::StrAppendFormat(&html, "<tr><td>%d</td>", i);
    for (const std::string& c : BreakdownCategories()) {
      auto it = r.stats.breakdown_ms.find(c);
      absl::StrAppend(
          &html, "<td>",
          r.ok && it != r.stats.breakdown_ms.end()
              ? absl::StrFormat("%.3f", it->second)
              : "-",
          "</td>");
    }
    absl::StrAppend(&html, "</tr>\n");
  }
  absl::StrAppend(&html, "</table>\n");
  // Per-chip throughput and HBM, as bars.
  auto bars = [&](const std::string& id, const std::string& heading,
                  auto value, auto capacity, auto text) {
    double top = 0;
    for (const ComparedRun& r : runs) {
      if (r.ok && r.stats.timed && !r.stats.wall_time_only) {
        top = std::max({top, value(r.stats), capacity(r.stats)});
      }
    }
    absl::StrAppendFormat(&html,
                          "<h2>%s</h2>\n<svg id=\"%s\" width=\"%.0f\" "
                          "height=\"%.0f\">",
                          heading, id, kLabel + kWidth + 200, n * row_h + 8);
    for (int i = 0; i < n; ++i) {
      const ComparedRun& r = runs[i];
      const double y = 4 + i * row_h;
      absl::StrAppendFormat(&html, "<text x=\"0\" y=\"%.0f\">%d %s</text>",
                            y + 15, i, HtmlEscape(r.label.substr(0, 36)));
      if (!r.ok || !r.stats.timed || r.stats.wall_time_only || top <= 0) {
        continue;
      }
      const double cap = capacity(r.stats);
      if (cap > 0) {
        absl::StrAppendFormat(&html,
                              "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.2f\" "
                              "height=\"20\" fill=\"#e8e8e8\" stroke=\"#999\"/>",
                              kLabel, y, kWidth * cap / top);
      }
      const double w = kWidth * value(r.stats) / top;
      absl::StrAppendFormat(&html,
                            "<rect class=\"bar\" x=\"%.0f\" y=\"%.0f\" "
                            "width=\"%.2f\" height=\"20\" fill=\"#4e79a7\"/>"
                            "<text x=\"%.2f\" y=\"%.0f\">%s</text>",
                            kLabel, y, w, kLabel + std::max(w, cap > 0 ? kWidth * cap / top : 0.0) + 4,
                            y + 15, text(r.stats));
    }
    absl::StrAppend(&html, "</svg>\n");
  };
  bars(
      "per-chip", "Examples/s per chip",
      [](const RunStats& s) { return ExamplesPerSecondPerChip(s); },
      [](const RunStats&) { return 0.0; },
      [](const RunStats& s) {
        return absl::StrFormat("%.1f examples/s per chip",
                               ExamplesPerSecondPerChip(s));
      });
  bars(
      "hbm", "Peak HBM per device (grey: capacity)",
      [](const RunStats& s) { return s.peak_hbm_bytes / kGiB; },
      [](const RunStats& s) { return s.hbm_capacity_bytes / kGiB; },
      [](const RunStats& s) {
        return absl::StrFormat("%.2f of %.2f GiB", s.peak_hbm_bytes / kGiB,
                               s.hbm_capacity_bytes / kGiB);
      });
  // Busiest links.
  absl::StrAppend(&html,
                  "<h2>Busiest ICI links</h2>\n<table id=\"links\"><tr><th>#"
                  "</th><th class=\"l\">link</th><th>busy</th><th>bytes</th>"
                  "</tr>\n");
  for (int i = 0; i < n; ++i) {
    const ComparedRun& r = runs[i];
    if (!r.ok) continue;
    if (r.stats.busiest_links.empty()) {
      absl::StrAppendFormat(&html,
                            "<tr><td>%d</td><td class=\"l\">(none used)</td>"
                            "<td></td><td></td></tr>\n",
                            i);
    }
    for (const LinkUse& l : r.stats.busiest_links) {
      absl::StrAppendFormat(&html,
                            "<tr><td>%d</td><td class=\"l\">%s</td><td>%.1f%%"
                            "</td><td>%s</td></tr>\n",
                            i, LinkName(l), 100 * l.utilization,
                            common::Bytes(l.bytes).ToString());
    }
  }
  absl::StrAppend(&html, "</table>\n</body></html>\n");
  return html;
}

}  // namespace tpusim::tools
