#include "tools/report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tpusim::tools {
namespace {

const char* const kCategories[] = {"mxu",   "vector", "memory", "collective",
                                   "infeed", "input", "host"};

std::string Escape(absl::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string LinkName(const LinkUse& l) {
  const char* axes = "xyzc";
  return absl::StrCat("chip ", l.chip, " (", absl::StrJoin(l.coords, ","),
                      ") ", l.direction > 0 ? "+" : "-",
                      std::string(1, axes[std::min(l.dim, 3)]));
}

}  // namespace

RunStats ComputeRunStats(const std::string& scenario,
                         const scenarios::TrainResult& r) {
  RunStats s;
  s.scenario = scenario;
  s.backend = r.backend;
  s.compiler = r.compiler;
  s.compiler_detail = r.compiler_detail;
  s.slice = r.slice;
  s.num_chips = r.num_chips;
  s.num_replicas = r.num_replicas;
  s.global_batch = r.global_batch;
  s.steps = r.steps;
  s.has_loss = !std::isnan(r.last_loss);
  s.last_loss = s.has_loss ? r.last_loss : 0;
  s.input = r.input;
  s.cores_per_replica = r.cores_per_replica;
  s.cross_core_bytes = r.cross_core_bytes;
  s.cross_core_ici_bytes = r.cross_core_ici_bytes;
  s.max_pair_chip_distance = r.max_pair_chip_distance;
  const runtime::Profile& p = r.profile;
  s.timed = p.steps_size() > 0;
  if (!s.timed) {
    s.bottleneck = absl::StrCat("backend ", r.backend,
                                " has no timing: run with --backend=sim");
    return s;
  }
  std::vector<double> per_step;
  double total_ps = 0;
  for (const runtime::StepProfile& st : p.steps()) {
    const double call = static_cast<double>(st.end_ps() - st.start_ps());
    total_ps += call;
    for (int64_t k = 0; k < st.steps(); ++k) {
      per_step.push_back(call / st.steps() * 1e-9);
    }
  }
  std::sort(per_step.begin(), per_step.end());
  const double n = static_cast<double>(per_step.size());
  double sum = 0;
  for (double v : per_step) sum += v;
  s.step_ms_mean = sum / n;
  s.step_ms_p50 = per_step[static_cast<size_t>((n - 1) * 0.5)];
  s.step_ms_p99 = per_step[static_cast<size_t>(std::ceil((n - 1) * 0.99))];
  s.examples_per_second = s.global_batch / (s.step_ms_mean * 1e-3);
  if (r.backend == "pjrt") {
    s.wall_time_only = true;
    s.bottleneck =
        "not measured: the pjrt backend measures wall time per device call "
        "only (use the plugin's profiler for a breakdown)";
    return s;
  }
  // Breakdown: device time per span category (every device's, traced or
  // not: DeviceProfile::category_ps), averaged over the devices that ran and
  // over steps. The sums are of integer picoseconds, exact in int64.
  std::map<std::string, int64_t> by_category;
  int64_t ran = 0;
  for (const runtime::DeviceProfile& d : p.devices()) {
    if (d.executions() > 0) ++ran;
    for (const auto& [category, ps] : d.category_ps()) by_category[category] += ps;
  }
  const double devices = static_cast<double>(std::max<int64_t>(1, ran));
  double accounted = 0;
  for (const char* c : kCategories) {
    const double ms = static_cast<double>(by_category[c]) / devices / n * 1e-9;
    s.breakdown_ms[c] = ms;
    accounted += ms;
  }
  s.breakdown_ms["idle"] = std::max(0.0, s.step_ms_mean - accounted);
  const double step_s = s.step_ms_mean * 1e-3;
  s.mfu = r.model_flops_per_step /
          (step_s * r.peak_flops_per_device * std::max(1, r.num_devices));
  int64_t hbm = 0;
  for (const runtime::DeviceProfile& d : p.devices()) {
    hbm += d.hbm_bytes();
    s.peak_hbm_bytes = std::max(s.peak_hbm_bytes, d.peak_hbm_bytes());
    s.hbm_capacity_bytes = d.hbm_capacity_bytes();
  }
  s.hbm_gbps_per_chip = hbm / (total_ps * 1e-12) / std::max(1, r.num_chips) / 1e9;
  std::vector<LinkUse> links;
  for (const runtime::LinkProfile& l : p.links()) {
    if (l.busy_ps() == 0) continue;
    LinkUse u;
    u.chip = l.chip();
    u.coords.assign(l.coords().begin(), l.coords().end());
    u.dim = l.dim();
    u.direction = l.direction();
    u.bytes = l.bytes();
    u.utilisation = l.busy_ps() / total_ps;
    links.push_back(std::move(u));
  }
  std::stable_sort(links.begin(), links.end(),
                   [](const LinkUse& a, const LinkUse& b) {
                     return a.utilisation > b.utilisation;
                   });
  if (links.size() > 5) links.resize(5);
  s.busiest_links = links;
  // The bottleneck: the largest share of the step on its critical path. Per
  // call, the device that finished last (StepProfile) waited for its input,
  // its infeed and exposed collectives and paid the host-loop overhead; the
  // rest of its time is split among mxu, vector, memory and idle as in the
  // mean breakdown. (The mean breakdown alone would blame the collective when
  // the early devices wait in an all-reduce for a late one's input.)
  std::map<std::string, double> critical;
  double waits_ps = 0;
  for (const runtime::StepProfile& st : p.steps()) {
    critical["input"] += st.input_wait_ps();
    critical["infeed"] += st.infeed_wait_ps();
    critical["collective"] += st.exposed_collective_ps();
    critical["host"] += st.host_overhead_ps();
    waits_ps += st.input_wait_ps() + st.infeed_wait_ps() +
                st.exposed_collective_ps() + st.host_overhead_ps();
  }
  const double rest_ps = std::max(0.0, total_ps - waits_ps);
  double compute_ms = 0;
  for (const char* c : {"mxu", "vector", "memory", "idle"}) {
    compute_ms += s.breakdown_ms[c];
  }
  for (const char* c : {"mxu", "vector", "memory", "idle"}) {
    critical[c] = compute_ms > 0 ? rest_ps * s.breakdown_ms[c] / compute_ms
                  : std::string(c) == "idle" ? rest_ps
                                             : 0.0;
  }
  std::string worst = "idle";
  for (const auto& [c, ps] : critical) {
    if (ps > critical[worst]) worst = c;
  }
  const double worst_ms = critical[worst] / n * 1e-9;
  const double share = 100 * worst_ms / s.step_ms_mean;
  static const std::map<std::string, std::string>* what =
      new std::map<std::string, std::string>{
          {"mxu", "compute-bound on the MXU"},
          {"vector", "bound by the vector unit"},
          {"memory", "HBM-bandwidth-bound"},
          {"collective", "communication-bound (exposed collectives)"},
          {"infeed", "infeed-bound (waiting for PCIe transfers)"},
          {"input", "input-bound (the host pipeline is too slow)"},
          {"host", "host-overhead-bound (raise steps_per_run)"},
          {"idle", "mostly idle (waiting on other devices or the host)"}};
  s.bottleneck = absl::StrFormat(
      "The step is %s: on its critical path %s takes %.1f%% of it (%.3f ms "
      "of %.3f ms).",
      what->at(worst), worst, share, worst_ms, s.step_ms_mean);
  return s;
}

std::string TextReport(const RunStats& s) {
  std::string out = absl::StrFormat(
      "scenario %s: backend %s, slice %s (%d chips), %d replicas, global "
      "batch %d, %d steps\n",
      s.scenario, s.backend, s.slice, s.num_chips, s.num_replicas,
      s.global_batch, s.steps);
  if (s.compiler != "tpusim") {
    absl::StrAppendFormat(&out,
                          "compiler: %s (%s): the simulator times the "
                          "compiler's optimized, scheduled module\n",
                          s.compiler, s.compiler_detail);
  }
  const scenarios::InputSummary& in = s.input;
  if (in.pipeline) {
    absl::StrAppendFormat(&out,
                          "input: the scenario pipeline via %s (semantics %s), "
                          "%d input workers, shard policy %s\n",
                          in.api, in.semantics, in.workers,
                          in.requested_policy);
    for (size_t w = 0; w < in.applied_policy.size(); ++w) {
      absl::StrAppendFormat(&out, "  worker %d: %s (%s)\n", w,
                            in.applied_policy[w], in.shard_reason[w]);
    }
    int64_t total = 0;
    for (int64_t e : in.examples_per_replica) total += e;
    absl::StrAppendFormat(&out,
                          "  %d steps run%s; examples per replica: [%s] (%d in "
                          "all; %d in the last step)\n",
                          in.steps_run, in.ended ? " (end of data)" : "",
                          absl::StrJoin(in.examples_per_replica, ", "), total,
                          in.examples_last_step);
  }
  if (s.has_loss) {
    if (in.per_example_loss) {
      absl::StrAppendFormat(&out,
                            "loss after the last step (strategy.reduce MEAN "
                            "over its %d examples, axis=0): %.6g\n",
                            in.examples_last_step, s.last_loss);
    } else {
      absl::StrAppendFormat(
          &out, "loss after the last step (mean over replicas): %.6g\n",
          s.last_loss);
    }
  }
  if (s.cores_per_replica > 1) {
    absl::StrAppendFormat(
        &out,
        "model parallel: %d cores per replica; cross-core bytes over the run "
        "%d, of which "
        "%d over ICI (cores of a replica at most %d chip hops apart)\n",
        s.cores_per_replica, s.cross_core_bytes, s.cross_core_ici_bytes,
        s.max_pair_chip_distance);
  }
  if (!s.timed) return out + s.bottleneck + "\n";
  absl::StrAppendFormat(&out,
                        "step time: mean %.3f ms, p50 %.3f ms, p99 %.3f ms; "
                        "%.1f examples/s\n",
                        s.step_ms_mean, s.step_ms_p50, s.step_ms_p99,
                        s.examples_per_second);
  if (s.wall_time_only) {
    absl::StrAppend(&out,
                    "breakdown of a step, MFU, HBM, ICI links: not measured\n"
                    "bottleneck: ", s.bottleneck, "\n");
    return out;
  }
  absl::StrAppend(&out, "breakdown of a step (mean per device):\n");
  for (const char* c : {"input", "infeed", "mxu", "vector", "memory",
                        "collective", "host", "idle"}) {
    const double ms = s.breakdown_ms.at(c);
    absl::StrAppendFormat(&out, "  %-10s %9.3f ms  %5.1f%%\n", c, ms,
                          100 * ms / s.step_ms_mean);
  }
  absl::StrAppendFormat(&out,
                        "MFU %.1f%%; HBM %.1f GB/s per chip; peak HBM %.3f GiB "
                        "of %.3f GiB per device\n",
                        100 * s.mfu, s.hbm_gbps_per_chip,
                        s.peak_hbm_bytes / double(int64_t{1} << 30),
                        s.hbm_capacity_bytes / double(int64_t{1} << 30));
  absl::StrAppend(&out, "busiest ICI links:\n");
  if (s.busiest_links.empty()) absl::StrAppend(&out, "  (none used)\n");
  for (const LinkUse& l : s.busiest_links) {
    absl::StrAppendFormat(&out, "  %-24s %5.1f%% busy, %d bytes\n", LinkName(l),
                          100 * l.utilisation, l.bytes);
  }
  absl::StrAppend(&out, "bottleneck: ", s.bottleneck, "\n");
  return out;
}

Json StatsJson(const RunStats& s) {
  std::map<std::string, Json> breakdown;
  for (const auto& [c, ms] : s.breakdown_ms) breakdown[c] = Json::Float64(ms);
  std::vector<Json> links;
  for (const LinkUse& l : s.busiest_links) {
    std::vector<Json> coords;
    for (int c : l.coords) coords.push_back(Json::Int(c));
    links.push_back(Json::Object({{"chip", Json::Int(l.chip)},
                                  {"coords", Json::Array(std::move(coords))},
                                  {"dim", Json::Int(l.dim)},
                                  {"direction", Json::Int(l.direction)},
                                  {"bytes", Json::Int(l.bytes)},
                                  {"utilisation", Json::Float64(l.utilisation)}}));
  }
  std::map<std::string, Json> extra;
  if (s.input.pipeline) {
    const scenarios::InputSummary& in = s.input;
    std::vector<Json> applied, examples;
    for (const std::string& p : in.applied_policy)
      applied.push_back(Json::String(p));
    for (int64_t e : in.examples_per_replica) examples.push_back(Json::Int(e));
    extra["input"] = Json::Object(
        {{"api", Json::String(in.api)},
         {"semantics", Json::String(in.semantics)},
         {"shard_policy", Json::String(in.requested_policy)},
         {"applied_shard_policy", Json::Array(std::move(applied))},
         {"workers", Json::Int(in.workers)},
         {"steps_run", Json::Int(in.steps_run)},
         {"end_of_data", Json::Bool(in.ended)},
         {"examples_per_replica", Json::Array(std::move(examples))},
         {"examples_last_step", Json::Int(in.examples_last_step)},
         {"per_example_loss", Json::Bool(in.per_example_loss)}});
  }
  if (s.cores_per_replica > 1) {
    extra["model_parallel"] = Json::Object(
        {{"cores_per_replica", Json::Int(s.cores_per_replica)},
         {"cross_core_bytes", Json::Int(s.cross_core_bytes)},
         {"cross_core_ici_bytes", Json::Int(s.cross_core_ici_bytes)},
         {"max_pair_chip_distance", Json::Int(s.max_pair_chip_distance)}});
  }
  std::map<std::string, Json> members = {
      {"schema", Json::String("tpusim.run.stats/1")},
      {"scenario", Json::String(s.scenario)},
      {"backend", Json::String(s.backend)},
      {"slice", Json::String(s.slice)},
      {"chips", Json::Int(s.num_chips)},
      {"replicas", Json::Int(s.num_replicas)},
      {"global_batch", Json::Int(s.global_batch)},
      {"steps", Json::Int(s.steps)},
      {"timed", Json::Bool(s.timed)},
      {"step_time_ms", Json::Object({{"mean", Json::Float64(s.step_ms_mean)},
                                     {"p50", Json::Float64(s.step_ms_p50)},
                                     {"p99", Json::Float64(s.step_ms_p99)}})},
      {"examples_per_second", Json::Float64(s.examples_per_second)},
      {"breakdown_ms", Json::Object(std::move(breakdown))},
      {"mfu", Json::Float64(s.mfu)},
      {"hbm_gbps_per_chip", Json::Float64(s.hbm_gbps_per_chip)},
      {"peak_hbm_bytes", Json::Int(s.peak_hbm_bytes)},
      {"hbm_capacity_bytes", Json::Int(s.hbm_capacity_bytes)},
      {"busiest_links", Json::Array(std::move(links))},
      {"bottleneck", Json::String(s.bottleneck)},
      {"last_loss", s.has_loss ? Json::Float64(s.last_loss) : Json::Null()},
  };
  // Only when not tpusim's own (the schema's earlier outputs stay as they were).
  if (s.compiler != "tpusim") members["compiler"] = Json::String(s.compiler);
  if (s.wall_time_only) {
    for (const char* k : {"breakdown_ms", "mfu", "hbm_gbps_per_chip",
                          "peak_hbm_bytes", "hbm_capacity_bytes",
                          "busiest_links"}) {
      members.erase(k);
    }
  }
  for (auto& [k, v] : extra) members[k] = std::move(v);
  return Json::Object(std::move(members));
}

std::string ChromeTrace(const scenarios::TrainResult& r) {
  // Processes: one per chip (pid = chip + 1) with a thread per core, one per
  // host (pid = 100000 + task) for its PCIe transfers; times in microseconds.
  std::vector<std::string> events;
  const runtime::Profile& p = r.profile;
  const int dpc = std::max(1, r.devices_per_chip);
  auto chip_of = [&](int device) { return device / dpc; };
  std::vector<bool> named_chip(std::max(1, r.num_chips), false);
  for (const runtime::TimelineSpan& span : p.spans()) {
    int pid, tid;
    if (span.device_id() >= 0) {
      // Devices are numbered task-major; the chip index is only a grouping
      // for the trace (device / devices_per_chip).
      pid = chip_of(span.device_id()) + 1;
      tid = span.device_id() % dpc;
      if (pid - 1 < static_cast<int>(named_chip.size()) && !named_chip[pid - 1]) {
        named_chip[pid - 1] = true;
        events.push_back(absl::StrFormat(
            "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, "
            "\"args\": {\"name\": \"chip of devices %d-%d\"}}",
            pid, (pid - 1) * dpc, (pid - 1) * dpc + dpc - 1));
      }
    } else {
      pid = 100000 + span.host();
      tid = 0;
    }
    events.push_back(absl::StrFormat(
        "{\"ph\": \"X\", \"name\": %s, \"cat\": %s, \"pid\": %d, \"tid\": %d, "
        "\"ts\": %s, \"dur\": %s}",
        JsonQuote(span.name()), JsonQuote(span.category()), pid, tid,
        ShortestFloat64(span.start_ps() * 1e-6),
        ShortestFloat64((span.end_ps() - span.start_ps()) * 1e-6)));
  }
  // Counter tracks: the five busiest links' utilisation over the run.
  RunStats stats = ComputeRunStats("", r);
  for (const LinkUse& l : stats.busiest_links) {
    events.push_back(absl::StrFormat(
        "{\"ph\": \"C\", \"name\": %s, \"pid\": 0, \"ts\": 0, \"args\": "
        "{\"utilisation\": %s}}",
        JsonQuote(absl::StrCat("link ", LinkName(l))),
        ShortestFloat64(l.utilisation)));
    events.push_back(absl::StrFormat(
        "{\"ph\": \"C\", \"name\": %s, \"pid\": 0, \"ts\": %s, \"args\": "
        "{\"utilisation\": 0}}",
        JsonQuote(absl::StrCat("link ", LinkName(l))),
        ShortestFloat64(p.end_ps() * 1e-6)));
  }
  events.push_back(
      "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"args\": "
      "{\"name\": \"ICI links (busiest)\"}}");
  // A pod with more devices than the trace keeps says which it keeps.
  std::vector<std::string> other_data;
  if (p.traced_devices_size() > 0 &&
      p.traced_devices_size() < p.devices_size()) {
    other_data.push_back(absl::StrCat(
        "\"traced_devices\": ",
        JsonQuote(absl::StrCat(
            absl::StrJoin(p.traced_devices(), ","), " of ", p.devices_size(),
            " devices: device 0, those of --trace-devices and each step's "
            "critical-path, slowest and fastest devices (16 at most by "
            "default); the others are in stats.textproto's per-device "
            "counters"))));
  }
  if (p.untraced_steps() > 0) {
    other_data.push_back(absl::StrCat(
        "\"untraced_steps\": ",
        JsonQuote(absl::StrCat("the last ", p.untraced_steps(),
                               " steps have no spans (the first 1000 steps "
                               "are traced)"))));
  }
  const std::string other =
      other_data.empty()
          ? ""
          : absl::StrCat(", \"otherData\": {",
                         absl::StrJoin(other_data, ", "), "}");
  return absl::StrCat("{\"traceEvents\": [\n", absl::StrJoin(events, ",\n"),
                      "\n], \"displayTimeUnit\": \"ms\"", other, "}\n");
}

std::string HtmlReport(const RunStats& s, const scenarios::TrainResult& r,
                       const std::string& scenario_text) {
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tpusim ",
      Escape(s.scenario),
      "</title><style>body{font-family:sans-serif;margin:2em}pre{background:"
      "#f4f4f4;padding:1em}</style></head><body>\n<h1>",
      Escape(s.scenario), "</h1>\n<pre>", Escape(TextReport(s)), "</pre>\n");
  if (s.timed) {
    // Step breakdown bar.
    absl::StrAppend(&html, "<h2>Step breakdown</h2>\n<svg width=\"820\" "
                           "height=\"60\" xmlns=\"http://www.w3.org/2000/svg\">");
    static const std::map<std::string, std::string>* colour =
        new std::map<std::string, std::string>{
            {"mxu", "#4e79a7"},   {"vector", "#76b7b2"}, {"memory", "#f28e2b"},
            {"collective", "#e15759"}, {"infeed", "#edc948"},
            {"input", "#b07aa1"}, {"host", "#9c755f"},   {"idle", "#bab0ac"}};
    double x = 10;
    for (const char* c : {"mxu", "vector", "memory", "collective", "infeed",
                          "input", "host", "idle"}) {
      const double w = 800 * s.breakdown_ms.at(c) / s.step_ms_mean;
      if (w <= 0) continue;
      absl::StrAppendFormat(
          &html,
          "<rect x=\"%.2f\" y=\"10\" width=\"%.2f\" height=\"30\" "
          "fill=\"%s\"><title>%s %.3f ms</title></rect>",
          x, w, colour->at(c), c, s.breakdown_ms.at(c));
      x += w;
    }
    absl::StrAppend(&html, "</svg>\n");
    // Per-chip utilisation: busy time over the run.
    absl::StrAppend(&html, "<h2>Per-device busy time</h2>\n");
    const int n = r.profile.devices_size();
    const double end = std::max<double>(1, r.profile.end_ps());
    absl::StrAppendFormat(&html,
                          "<svg width=\"820\" height=\"%d\" "
                          "xmlns=\"http://www.w3.org/2000/svg\">",
                          std::min(n, 512) * 4 + 20);
    for (int d = 0; d < n && d < 512; ++d) {
      const double util = r.profile.devices(d).busy_ps() / end;
      absl::StrAppendFormat(&html,
                            "<rect x=\"10\" y=\"%d\" width=\"%.2f\" height=\"3\" "
                            "fill=\"#4e79a7\"><title>device %d: %.1f%%</title>"
                            "</rect>",
                            10 + 4 * d, 800 * util, d, 100 * util);
    }
    absl::StrAppend(&html, "</svg>\n");
    // Link heat map: every link by chip, coloured by utilisation.
    absl::StrAppend(&html, "<h2>ICI link utilisation</h2>\n");
    const double total = std::max<double>(1, end);
    int count = 0;
    std::string cells;
    for (const runtime::LinkProfile& l : r.profile.links()) {
      const double u = l.busy_ps() / total;
      const int shade = 255 - static_cast<int>(std::min(1.0, u) * 200);
      absl::StrAppendFormat(
          &cells,
          "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" "
          "fill=\"rgb(255,%d,%d)\"><title>chip %d (%s) dim %d dir %d: "
          "%.1f%%</title></rect>",
          10 + (count % 64) * 12, 10 + (count / 64) * 12, shade, shade,
          l.chip(), absl::StrJoin(l.coords(), ","), l.dim(), l.direction(),
          100 * u);
      ++count;
    }
    absl::StrAppendFormat(&html,
                          "<svg width=\"800\" height=\"%d\" "
                          "xmlns=\"http://www.w3.org/2000/svg\">%s</svg>\n",
                          20 + (count / 64 + 1) * 12, cells);
  }
  absl::StrAppend(&html, "<h2>Scenario</h2>\n<pre>", Escape(scenario_text),
                  "</pre>\n</body></html>\n");
  return html;
}

}  // namespace tpusim::tools
