#include "tools/report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/units.h"
#include "sim/chip/chip.h"

namespace tpusim::tools {
namespace {

const char* const kCategories[] = {"mxu",   "vector", "memory", "collective",
                                   "infeed", "input", "host"};
static_assert(sizeof(kCategories) / sizeof(kCategories[0]) ==
                  sim::kNumSpanCategories,
              "the report's categories are the simulator's span categories");


}  // namespace

std::string HtmlEscape(absl::string_view text) {
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

const std::vector<std::string>& BreakdownCategories() {
  static const std::vector<std::string>* categories = [] {
    auto* v = new std::vector<std::string>(sim::kSpanCategories,
                                           sim::kSpanCategories +
                                               sim::kNumSpanCategories);
    v->push_back("idle");
    return v;
  }();
  return *categories;
}

std::string CategoryColour(const std::string& category) {
  // Chosen: Tableau 10, one colour per category in BreakdownCategories()
  // order; distinct from each other and from the page's white and text.
  static const std::map<std::string, std::string>* colour =
      new std::map<std::string, std::string>{
          {"mxu", "#4e79a7"},        {"vector", "#76b7b2"},
          {"memory", "#f28e2b"},     {"collective", "#e15759"},
          {"infeed", "#edc948"},     {"input", "#b07aa1"},
          {"host", "#9c755f"},       {"idle", "#bab0ac"}};
  auto it = colour->find(category);
  return it == colour->end() ? "#808080" : it->second;
}

double BreakdownPercent(const RunStats& s, double ms) {
  return s.breakdown_step_ms > 0 ? 100 * ms / s.breakdown_step_ms : 0.0;
}

// Right-aligns `text` in `width` columns, counting UTF-8 characters (the
// "µ" of µs is two bytes, one column).
std::string PadLeft(const std::string& text, int width) {
  int columns = 0;
  for (char c : text) columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return std::string(std::max(0, width - columns), ' ') + text;
}

std::string LinkName(const LinkUse& l) {
  const char* axes = "xyzc";
  return absl::StrCat("chip ", l.chip, " (", absl::StrJoin(l.coords, ","),
                      ") ", l.direction > 0 ? "+" : "-",
                      std::string(1, axes[std::min(std::max(l.dim, 0), 3)]));
}

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
  // Warm-up: the first device call, all its steps_per_run steps. The step
  // statistics count the later calls when there are any, else every step.
  std::vector<double> all_steps, counted;
  double total_ps = 0;
  const bool has_steady = p.steps_size() > 1;
  for (int i = 0; i < p.steps_size(); ++i) {
    const runtime::StepProfile& st = p.steps(i);
    const double call = static_cast<double>(st.end_ps() - st.start_ps());
    total_ps += call;
    for (int64_t k = 0; k < st.steps(); ++k) {
      all_steps.push_back(call / st.steps() * 1e-9);
      if (i > 0 || !has_steady) counted.push_back(call / st.steps() * 1e-9);
    }
  }
  s.warmup_steps = p.steps(0).steps();
  s.warmup_excluded = has_steady;
  std::sort(counted.begin(), counted.end());
  const double n_all = static_cast<double>(all_steps.size());
  const double n = static_cast<double>(counted.size());
  double sum = 0, sum_all = 0;
  for (double v : counted) sum += v;
  for (double v : all_steps) sum_all += v;
  s.steps_counted = static_cast<int64_t>(counted.size());
  s.step_ms_mean = sum / n;
  s.breakdown_step_ms = sum_all / n_all;
  s.has_percentiles = counted.size() >= 3;
  if (s.has_percentiles) {
    s.step_ms_p50 = counted[static_cast<size_t>((n - 1) * 0.5)];
    s.step_ms_p99 = counted[static_cast<size_t>(std::ceil((n - 1) * 0.99))];
  } else {
    s.counted_steps_ms = counted;
  }
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
    const double ms =
        static_cast<double>(by_category[c]) / devices / n_all * 1e-9;
    s.breakdown_ms[c] = ms;
    accounted += ms;
  }
  s.breakdown_ms["idle"] = std::max(0.0, s.breakdown_step_ms - accounted);
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
    u.utilization = l.busy_ps() / total_ps;
    links.push_back(std::move(u));
  }
  std::stable_sort(links.begin(), links.end(),
                   [](const LinkUse& a, const LinkUse& b) {
                     return a.utilization > b.utilization;
                   });
  if (links.size() > 5) links.resize(5);
  s.busiest_links = links;
  // The bottleneck: the largest share of the step on its critical path.
  // Where the backend walked each call's path (StepProfile's
  // critical_path_ps: back from the device that finished last, through the
  // latest member of each collective it waited for), its categories as they
  // are. Otherwise, per call, the device that finished last waited for its
  // input, its infeed and exposed collectives and paid the host-loop
  // overhead, and the rest of its time is split among mxu, vector, memory
  // and idle as in the mean breakdown.
  std::map<std::string, double> critical;
  bool walked = true;
  for (int i = has_steady ? 1 : 0; i < p.steps_size(); ++i) {
    walked = walked && p.steps(i).critical_path_ps_size() > 0;
  }
  double waits_ps = 0;
  double counted_ps = 0;
  for (int i = has_steady ? 1 : 0; i < p.steps_size(); ++i) {
    const runtime::StepProfile& st = p.steps(i);
    if (walked) {
      for (const auto& [c, ps] : st.critical_path_ps()) {
        critical[c] += static_cast<double>(ps);
      }
      continue;
    }
    counted_ps += static_cast<double>(st.end_ps() - st.start_ps());
    critical["input"] += st.input_wait_ps();
    critical["infeed"] += st.infeed_wait_ps();
    critical["collective"] += st.exposed_collective_ps();
    critical["host"] += st.host_overhead_ps();
    waits_ps += st.input_wait_ps() + st.infeed_wait_ps() +
                st.exposed_collective_ps() + st.host_overhead_ps();
  }
  const double rest_ps = std::max(0.0, counted_ps - waits_ps);
  double compute_ms = 0;
  for (const char* c : {"mxu", "vector", "memory", "idle"}) {
    compute_ms += s.breakdown_ms[c];
  }
  for (const char* c : {"mxu", "vector", "memory", "idle"}) {
    if (walked) break;
    critical[c] = compute_ms > 0 ? rest_ps * s.breakdown_ms[c] / compute_ms
                  : std::string(c) == "idle" ? rest_ps
                                             : 0.0;
  }
  std::string worst = "idle";
  for (const auto& [c, ps] : critical) {
    if (ps > critical[worst]) worst = c;
  }
  for (const auto& [c, ps] : critical) s.critical_path_ms[c] = ps / n * 1e-9;
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
  s.bottleneck_category = worst;
  s.bottleneck_share = worst_ms / s.step_ms_mean;
  s.bottleneck = absl::StrFormat(
      "The step is %s: on its critical path %s takes %.1f%% of it (%s of %s).",
      what->at(worst), worst, share, common::HumanSeconds(worst_ms * 1e-3),
      common::HumanSeconds(s.step_ms_mean * 1e-3));
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
        "%s, of which "
        "%s over ICI (cores of a replica at most %d chip hops apart)\n",
        s.cores_per_replica, common::HumanBytes(s.cross_core_bytes),
        common::HumanBytes(s.cross_core_ici_bytes),
        s.max_pair_chip_distance);
  }
  if (!s.timed) return out + s.bottleneck + "\n";
  // Step statistics: warm-up excluded when there is more; p50/p99 from 3
  // counted steps.
  const std::string counted =
      s.warmup_excluded
          ? absl::StrFormat("over %d step%s after the warm-up (the first device "
                            "call, %d step%s, is left out)",
                            s.steps_counted, s.steps_counted == 1 ? "" : "s",
                            s.warmup_steps,
                            s.warmup_steps == 1 ? "" : "s")
          : absl::StrFormat("over %d step%s, includes warm-up (one device "
                            "call)",
                            s.steps_counted, s.steps_counted == 1 ? "" : "s");
  if (s.has_percentiles) {
    absl::StrAppendFormat(
        &out, "step time: mean %s, p50 %s, p99 %s %s\n",
        common::HumanSeconds(s.step_ms_mean * 1e-3),
        common::HumanSeconds(s.step_ms_p50 * 1e-3),
        common::HumanSeconds(s.step_ms_p99 * 1e-3), counted);
  } else {
    std::vector<std::string> each;
    for (double ms : s.counted_steps_ms) {
      each.push_back(common::HumanSeconds(ms * 1e-3));
    }
    absl::StrAppendFormat(&out,
                          "step time: mean %s %s (each: %s; p50 and p99 need "
                          "3 steps)\n",
                          common::HumanSeconds(s.step_ms_mean * 1e-3), counted,
                          absl::StrJoin(each, ", "));
  }
  absl::StrAppendFormat(&out, "throughput: %.1f examples/s, %.1f per chip\n",
                        s.examples_per_second,
                        s.examples_per_second / std::max(1, s.num_chips));
  if (s.wall_time_only) {
    absl::StrAppend(&out,
                    "breakdown of a step, MFU, HBM, ICI links: not measured\n"
                    "bottleneck: ", s.bottleneck, "\n");
    return out;
  }
  absl::StrAppendFormat(&out,
                        "breakdown of a step: mean per device (all %d steps, "
                        "warm-up included; step %s) | critical path (back "
                        "from the device that finished each call last, "
                        "through each collective's latest member%s)\n",
                        s.steps,
                        common::HumanSeconds(s.breakdown_step_ms * 1e-3),
                        s.warmup_excluded ? ", after the warm-up" : "");
  std::string table_top = "idle";
  std::string path_top = "idle";
  for (const std::string& c : BreakdownCategories()) {
    const double ms = s.breakdown_ms.at(c);
    const auto it = s.critical_path_ms.find(c);
    const double path_ms = it == s.critical_path_ms.end() ? 0 : it->second;
    if (ms > s.breakdown_ms.at(table_top)) table_top = c;
    if (path_ms > s.critical_path_ms.at(path_top)) path_top = c;
    absl::StrAppendFormat(&out, "  %-10s %s %6.1f%%  | %s %6.1f%%\n", c,
                          PadLeft(common::HumanSeconds(ms * 1e-3), 9),
                          BreakdownPercent(s, ms),
                          PadLeft(common::HumanSeconds(path_ms * 1e-3), 9),
                          100 * path_ms / s.step_ms_mean);
  }
  if (table_top != path_top) {
    absl::StrAppendFormat(
        &out,
        "note: the mean per device is led by %s, the critical path by %s: the "
        "step waits for %s on its critical path, while the devices off it "
        "spend that time in %s\n",
        table_top, path_top, path_top, table_top);
  }
  absl::StrAppendFormat(&out,
                        "MFU %.1f%%; HBM %.1f GB/s per chip; peak HBM %s of "
                        "%s per device\n",
                        100 * s.mfu, s.hbm_gbps_per_chip,
                        common::HumanBytes(s.peak_hbm_bytes),
                        common::HumanBytes(s.hbm_capacity_bytes));
  absl::StrAppend(&out, "busiest ICI links:\n");
  if (s.busiest_links.empty()) absl::StrAppend(&out, "  (none used)\n");
  for (const LinkUse& l : s.busiest_links) {
    absl::StrAppendFormat(&out, "  %-24s %5.1f%% busy, %s\n", LinkName(l),
                          100 * l.utilization, common::HumanBytes(l.bytes));
  }
  absl::StrAppend(&out, "bottleneck: ", s.bottleneck, "\n");
  return out;
}

namespace {

// step_time_ms: the mean over the counted steps, p50/p99 only from 3 steps,
// the steps themselves below that, and what was counted.
Json StepTimeJson(const RunStats& s) {
  std::map<std::string, Json> m = {
      {"mean", Json::Float64(s.step_ms_mean)},
      {"steps_counted", Json::Int(s.steps_counted)},
      {"warmup_steps", Json::Int(s.warmup_steps)},
      {"warmup_excluded", Json::Bool(s.warmup_excluded)}};
  if (s.has_percentiles) {
    m["p50"] = Json::Float64(s.step_ms_p50);
    m["p99"] = Json::Float64(s.step_ms_p99);
  } else {
    std::vector<Json> each;
    for (double ms : s.counted_steps_ms) each.push_back(Json::Float64(ms));
    m["each"] = Json::Array(std::move(each));
  }
  return Json::Object(std::move(m));
}

}  // namespace

Json StatsJson(const RunStats& s) {
  std::map<std::string, Json> breakdown, critical;
  for (const auto& [c, ms] : s.breakdown_ms) breakdown[c] = Json::Float64(ms);
  for (const auto& [c, ms] : s.critical_path_ms) critical[c] = Json::Float64(ms);
  std::vector<Json> links;
  for (const LinkUse& l : s.busiest_links) {
    std::vector<Json> coords;
    for (int c : l.coords) coords.push_back(Json::Int(c));
    links.push_back(Json::Object({{"chip", Json::Int(l.chip)},
                                  {"coords", Json::Array(std::move(coords))},
                                  {"dim", Json::Int(l.dim)},
                                  {"direction", Json::Int(l.direction)},
                                  {"bytes", Json::Int(l.bytes)},
                                  {"utilization", Json::Float64(l.utilization)}}));
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
      {"schema", Json::String("tpusim.run.stats/2")},
      {"scenario", Json::String(s.scenario)},
      {"backend", Json::String(s.backend)},
      {"slice", Json::String(s.slice)},
      {"chips", Json::Int(s.num_chips)},
      {"replicas", Json::Int(s.num_replicas)},
      {"global_batch", Json::Int(s.global_batch)},
      {"steps", Json::Int(s.steps)},
      {"timed", Json::Bool(s.timed)},
      {"step_time_ms", StepTimeJson(s)},
      {"examples_per_second", Json::Float64(s.examples_per_second)},
      {"breakdown_ms", Json::Object(std::move(breakdown))},
      {"breakdown_step_ms", Json::Float64(s.breakdown_step_ms)},
      {"critical_path_ms", Json::Object(std::move(critical))},
      {"mfu", Json::Float64(s.mfu)},
      {"hbm_gbps_per_chip", Json::Float64(s.hbm_gbps_per_chip)},
      {"peak_hbm_bytes", Json::Int(s.peak_hbm_bytes)},
      {"hbm_capacity_bytes", Json::Int(s.hbm_capacity_bytes)},
      {"busiest_links", Json::Array(std::move(links))},
      {"bottleneck", Json::String(s.bottleneck)},
      {"bottleneck_category", Json::String(s.bottleneck_category)},
      {"bottleneck_share", Json::Float64(s.bottleneck_share)},
      {"last_loss", s.has_loss ? Json::Float64(s.last_loss) : Json::Null()},
  };
  // Only when not tpusim's own (the schema's earlier outputs stay as they were).
  if (s.compiler != "tpusim") members["compiler"] = Json::String(s.compiler);
  if (s.wall_time_only) {
    for (const char* k : {"breakdown_ms", "breakdown_step_ms",
                          "critical_path_ms", "mfu", "hbm_gbps_per_chip",
                          "peak_hbm_bytes", "hbm_capacity_bytes",
                          "busiest_links", "bottleneck_category",
                          "bottleneck_share"}) {
      members.erase(k);
    }
  }
  for (auto& [k, v] : extra) members[k] = std::move(v);
  return Json::Object(std::move(members));
}

std::string ChromeTrace(const scenarios::TrainResult& r) {
  // Processes: one per chip with a traced device (pid = chip + 1) with a
  // thread per core, one per host (pid = 100000 + task) for its input
  // pipeline and PCIe transfers, the device calls (pid 200000) and the
  // busiest ICI links' utilisation (pid 0). Times in microseconds. Every
  // process and thread is named by a metadata event (Perfetto and
  // chrome://tracing show the names).
  constexpr int kHostPid = 100000;
  constexpr int kStepsPid = 200000;
  std::vector<std::string> events;
  const runtime::Profile& p = r.profile;
  const int dpc = std::max(1, r.devices_per_chip);
  auto us = [](int64_t ps) { return ShortestFloat64(ps * 1e-6); };
  auto ms = [](int64_t ps) { return ShortestFloat64(ps * 1e-9); };
  auto name_process = [&](int pid, const std::string& name, int sort) {
    events.push_back(absl::StrFormat(
        "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": "
        "{\"name\": %s}}",
        pid, JsonQuote(name)));
    events.push_back(absl::StrFormat(
        "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": %d, "
        "\"args\": {\"sort_index\": %d}}",
        pid, sort));
  };
  auto name_thread = [&](int pid, int tid, const std::string& name) {
    events.push_back(absl::StrFormat(
        "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, "
        "\"args\": {\"name\": %s}}",
        pid, tid, JsonQuote(name)));
  };
  // The devices and hosts that have spans or collectives, in order.
  std::set<int> devices, hosts;
  for (const runtime::TimelineSpan& span : p.spans()) {
    if (span.device_id() >= 0) {
      devices.insert(span.device_id());
    } else {
      hosts.insert(span.host());
    }
  }
  for (const runtime::CollectiveSpan& c : p.collectives()) {
    devices.insert(c.device_id());
  }
  int last_chip = -1;
  for (int d : devices) {
    // Devices are numbered task-major; the chip index is only a grouping
    // for the trace (device / devices_per_chip).
    const int chip = d / dpc;
    if (chip != last_chip) {
      name_process(chip + 1,
                   dpc > 1 ? absl::StrCat("chip ", chip, " (devices ",
                                          chip * dpc, "-", chip * dpc + dpc - 1,
                                          ")")
                           : absl::StrCat("chip ", chip, " (device ", d, ")"),
                   chip + 1);
      last_chip = chip;
    }
    name_thread(chip + 1, d % dpc,
                absl::StrCat("core ", d % dpc, " (device ", d, ")"));
  }
  for (int h : hosts) {
    name_process(kHostPid + h, absl::StrCat("host ", h), kHostPid + h);
    name_thread(kHostPid + h, 0, "input pipeline and PCIe infeed");
  }
  // The step track: one slice per device call, the first marked warm-up.
  name_process(kStepsPid, "steps (device calls)", -1);
  name_thread(kStepsPid, 0, "device calls");
  for (int i = 0; i < p.steps_size(); ++i) {
    const runtime::StepProfile& st = p.steps(i);
    const std::string name =
        st.steps() == 1 ? absl::StrCat("step ", i)
                        : absl::StrCat("call ", i, " (", st.steps(), " steps)");
    events.push_back(absl::StrFormat(
        "{\"ph\": \"X\", \"name\": %s, \"cat\": \"step\", \"pid\": %d, "
        "\"tid\": 0, \"ts\": %s, \"dur\": %s, \"args\": {\"steps\": %d, "
        "\"warm_up\": %s, \"critical_path_ms\": {\"exposed_collective\": %s, "
        "\"hidden_collective\": %s, \"input_wait\": %s, \"infeed_wait\": %s, "
        "\"host_overhead\": %s}}}",
        JsonQuote(name), kStepsPid, us(st.start_ps()),
        us(st.end_ps() - st.start_ps()), st.steps(),
        i == 0 ? "true" : "false", ms(st.exposed_collective_ps()),
        ms(st.hidden_collective_ps()), ms(st.input_wait_ps()),
        ms(st.infeed_wait_ps()), ms(st.host_overhead_ps())));
  }
  for (const runtime::TimelineSpan& span : p.spans()) {
    int pid, tid;
    if (span.device_id() >= 0) {
      pid = span.device_id() / dpc + 1;
      tid = span.device_id() % dpc;
    } else {
      pid = kHostPid + span.host();
      tid = 0;
    }
    std::string args = absl::StrCat("\"category\": ", JsonQuote(span.category()));
    if (span.fused_ops() > 0) {
      absl::StrAppend(&args, ", \"flops\": ", span.flops(), ", \"bytes\": ",
                      span.bytes(), ", \"fused_ops\": ", span.fused_ops());
    }
    if (span.category() == "collective") {
      absl::StrAppend(&args, ", \"exposed\": true");
    }
    events.push_back(absl::StrFormat(
        "{\"ph\": \"X\", \"name\": %s, \"cat\": %s, \"pid\": %d, \"tid\": %d, "
        "\"ts\": %s, \"dur\": %s, \"args\": {%s}}",
        JsonQuote(span.name()), JsonQuote(span.category()), pid, tid,
        us(span.start_ps()), us(span.end_ps() - span.start_ps()), args));
  }
  // Collectives from start to done (async slices on their core's track);
  // the exposed part is the "collective" slice at the done.
  for (int i = 0; i < p.collectives_size(); ++i) {
    const runtime::CollectiveSpan& c = p.collectives(i);
    const int pid = c.device_id() / dpc + 1;
    const int tid = c.device_id() % dpc;
    const int64_t flight = c.end_ps() - c.start_ps();
    events.push_back(absl::StrFormat(
        "{\"ph\": \"b\", \"name\": %s, \"cat\": \"collective\", \"id\": "
        "\"0x%x\", \"pid\": %d, \"tid\": %d, \"ts\": %s, \"args\": {\"op\": "
        "%s, \"algorithm\": %s, \"bytes\": %d, \"exposed_us\": %s, "
        "\"hidden_us\": %s}}",
        JsonQuote(c.name()), i, pid, tid, us(c.start_ps()), JsonQuote(c.op()),
        JsonQuote(c.algorithm()), c.bytes(), us(c.exposed_ps()),
        us(std::max<int64_t>(0, flight - c.exposed_ps()))));
    events.push_back(absl::StrFormat(
        "{\"ph\": \"e\", \"name\": %s, \"cat\": \"collective\", \"id\": "
        "\"0x%x\", \"pid\": %d, \"tid\": %d, \"ts\": %s}",
        JsonQuote(c.name()), i, pid, tid, us(c.end_ps())));
  }
  // Counter tracks: the five busiest links' utilisation over time, one
  // sample per device call (their busy time at each call's end) while the
  // profile has them, else their mean over the run.
  name_process(0, "ICI links (busiest)", -2);
  std::vector<std::pair<const runtime::LinkProfile*, double>> busiest;
  const double total_ps = std::max<double>(1, p.end_ps());
  for (const runtime::LinkProfile& l : p.links()) {
    if (l.busy_ps() > 0) busiest.push_back({&l, l.busy_ps() / total_ps});
  }
  std::stable_sort(busiest.begin(), busiest.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (busiest.size() > 5) busiest.resize(5);
  for (const auto& [l, mean] : busiest) {
    LinkUse u;
    u.chip = l->chip();
    u.coords.assign(l->coords().begin(), l->coords().end());
    u.dim = l->dim();
    u.direction = l->direction();
    const std::string name = JsonQuote(absl::StrCat("link ", LinkName(u)));
    auto sample = [&](int64_t ts_ps, double utilization) {
      events.push_back(absl::StrFormat(
          "{\"ph\": \"C\", \"name\": %s, \"pid\": 0, \"ts\": %s, \"args\": "
          "{\"utilization\": %s}}",
          name, us(ts_ps), ShortestFloat64(utilization)));
    };
    int64_t from_ps = 0, busy_before = 0;
    const int samples =
        std::min(l->busy_ps_at_step_end_size(), p.steps_size());
    for (int k = 0; k < samples; ++k) {
      const int64_t to_ps = p.steps(k).end_ps();
      const int64_t busy = l->busy_ps_at_step_end(k);
      sample(from_ps, to_ps > from_ps ? static_cast<double>(busy - busy_before) /
                                            (to_ps - from_ps)
                                      : 0.0);
      from_ps = to_ps;
      busy_before = busy;
    }
    if (samples == 0) sample(0, mean);
    sample(samples == 0 ? p.end_ps() : from_ps, 0);
  }
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

namespace {

// Chosen: the report's drawing budget. Bars of the per-step chart (device
// calls beyond it are summarised in a line), bars of the per-device chart
// (more devices are binned, the 8 at either end of the sorted order kept
// alone so a straggler shows), links drawn one by one on the torus map (more
// are drawn per chip), rows of the kernel and collective tables.
constexpr int kMaxStepBars = 200;
constexpr int kMaxDeviceBars = 512;
constexpr int kMaxMapLinks = 12288;
constexpr int kMaxTableRows = 15;
constexpr double kChartWidth = 800;

// A sequential colour scale from dark purple to yellow (viridis' ends and
// three stops between; chosen: no near-white at the low end, readable for
// colour-blind readers). `t` in [0, 1].
std::string ScaleColour(double t) {
  static const int kStops[5][3] = {{68, 1, 84},
                                   {59, 82, 139},
                                   {33, 145, 140},
                                   {94, 201, 98},
                                   {253, 231, 37}};
  t = std::min(1.0, std::max(0.0, t)) * 4;
  const int i = std::min(3, static_cast<int>(t));
  const double f = t - i;
  int rgb[3];
  for (int c = 0; c < 3; ++c) {
    rgb[c] = static_cast<int>(
        std::lround(kStops[i][c] + f * (kStops[i + 1][c] - kStops[i][c])));
  }
  return absl::StrFormat("#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

std::string Ms(double ms) { return absl::StrFormat("%.3f ms", ms); }

// The legend of the 8 categories, each with its mean per device and step.
std::string Legend(const RunStats& s) {
  std::string out = "<p class=\"legend\" id=\"legend\">";
  for (const std::string& c : BreakdownCategories()) {
    const double ms = s.breakdown_ms.count(c) ? s.breakdown_ms.at(c) : 0;
    absl::StrAppendFormat(
        &out,
        "<span data-category=\"%s\"><i class=\"sw\" style=\"background:%s\">"
        "</i>%s <b class=\"value\">%s (%.1f%%)</b></span>",
        c, CategoryColour(c), c, Ms(ms), BreakdownPercent(s, ms));
  }
  return out + "</p>\n";
}

// Per device call, the mean over the traced devices of their time by
// category (from the spans), per training step; idle is the rest.
struct CallBreakdown {
  double step_ms = 0;
  bool traced = false;
  std::map<std::string, double> ms;
};

std::vector<CallBreakdown> BreakdownPerCall(const runtime::Profile& p) {
  std::vector<CallBreakdown> calls(p.steps_size());
  std::vector<int64_t> starts;
  for (const runtime::StepProfile& st : p.steps()) starts.push_back(st.start_ps());
  std::vector<std::set<int>> devices(p.steps_size());
  std::vector<std::map<std::string, int64_t>> ps(p.steps_size());
  for (const runtime::TimelineSpan& span : p.spans()) {
    if (span.device_id() < 0) continue;
    auto it = std::upper_bound(starts.begin(), starts.end(), span.start_ps());
    if (it == starts.begin()) continue;
    const size_t call = static_cast<size_t>(it - starts.begin()) - 1;
    devices[call].insert(span.device_id());
    ps[call][span.category()] += span.end_ps() - span.start_ps();
  }
  for (int i = 0; i < p.steps_size(); ++i) {
    const runtime::StepProfile& st = p.steps(i);
    CallBreakdown& b = calls[i];
    const double k = static_cast<double>(std::max<int64_t>(1, st.steps()));
    b.step_ms = (st.end_ps() - st.start_ps()) * 1e-9 / k;
    b.traced = !devices[i].empty();
    if (!b.traced) continue;
    const double n = static_cast<double>(devices[i].size());
    double sum = 0;
    for (const std::string& c : BreakdownCategories()) {
      if (c == "idle") continue;
      const double ms = ps[i][c] * 1e-9 / n / k;
      b.ms[c] = ms;
      sum += ms;
    }
    b.ms["idle"] = std::max(0.0, b.step_ms - sum);
  }
  return calls;
}

std::string StepChart(const RunStats& s, const runtime::Profile& p) {
  const std::vector<CallBreakdown> calls = BreakdownPerCall(p);
  const int shown = std::min<int>(kMaxStepBars, static_cast<int>(calls.size()));
  double top = 0;
  for (int i = 0; i < shown; ++i) top = std::max(top, calls[i].step_ms);
  if (top <= 0) return "";
  const double bar_h = 200;  // chosen
  const double gap = 2;
  const double bar_w =
      std::max(2.0, std::min(40.0, kChartWidth / std::max(1, shown) - gap));
  const double left = 70, base = 20 + bar_h;
  std::string svg = absl::StrFormat(
      "<svg id=\"steps\" class=\"chart\" width=\"%.0f\" height=\"%.0f\" "
      "role=\"img\" aria-label=\"time of each step by category\">",
      std::max(400.0, left + shown * (bar_w + gap) + 20), base + 40);
  // Axis: 0 and the largest step.
  absl::StrAppendFormat(&svg,
                        "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"20\" "
                        "stroke=\"#333\"/><text x=\"%.0f\" y=\"%.0f\" "
                        "text-anchor=\"end\">0</text><text x=\"%.0f\" y=\"25\" "
                        "text-anchor=\"end\">%s</text>",
                        left - 4, base, left - 4, left - 8, base, left - 8,
                        Ms(top));
  for (int i = 0; i < shown; ++i) {
    const CallBreakdown& b = calls[i];
    const double x = left + i * (bar_w + gap);
    const int64_t k = p.steps(i).steps();
    const std::string label =
        k == 1 ? absl::StrCat("step ", i)
               : absl::StrCat("device call ", i, " (", k, " steps, per step)");
    absl::StrAppendFormat(&svg,
                          "<g class=\"step-bar\" data-step=\"%d\"%s><title>%s%s: "
                          "%s</title>",
                          i, i == 0 ? " data-warm-up=\"true\"" : "", label,
                          i == 0 ? " (warm-up)" : "", Ms(b.step_ms));
    double y = base;
    if (!b.traced) {
      const double h = bar_h * b.step_ms / top;
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                            "height=\"%.2f\" fill=\"none\" stroke=\"#666\"/>",
                            x, y - h, bar_w, h);
    }
    for (const std::string& c : BreakdownCategories()) {
      if (!b.traced) break;
      const double h = bar_h * b.ms.at(c) / top;
      if (h <= 0) continue;
      y -= h;
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                            "height=\"%.2f\" fill=\"%s\"><title>%s: %s %s"
                            "</title></rect>",
                            x, y, bar_w, h, CategoryColour(c), label, c,
                            Ms(b.ms.at(c)));
    }
    if (i == 0) {
      // The warm-up: hatched outline and a label above.
      const double h = bar_h * b.step_ms / top;
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                            "height=\"%.2f\" fill=\"none\" stroke=\"#000\" "
                            "stroke-dasharray=\"4 2\"/><text x=\"%.2f\" "
                            "y=\"%.2f\" class=\"warm\">warm-up</text>",
                            x, base - h, bar_w, h, x, std::max(12.0, base - h - 4));
    }
    absl::StrAppend(&svg, "</g>");
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.0f\" y=\"%.0f\">steps 0..%d, left to "
                        "right</text></svg>\n",
                        left, base + 30, shown - 1);
  std::string out = svg;
  if (shown < static_cast<int>(calls.size())) {
    absl::StrAppendFormat(&out,
                          "<p>The first %d of %d device calls are drawn.</p>\n",
                          shown, calls.size());
  }
  bool untraced = false;
  for (int i = 0; i < shown; ++i) untraced = untraced || !calls[i].traced;
  if (untraced) {
    absl::StrAppend(&out,
                    "<p>Outlined bars: device calls without spans (only the "
                    "first 1000 steps are traced).</p>\n");
  }
  (void)s;
  return out;
}

std::string DeviceChart(const runtime::Profile& p, double steps) {
  struct Dev {
    int id;
    std::map<std::string, double> ms;
    double busy = 0;  // kernel time (mxu, vector, memory)
    double total = 0;
  };
  std::vector<Dev> devs;
  for (const runtime::DeviceProfile& d : p.devices()) {
    if (d.executions() == 0) continue;
    Dev v;
    v.id = d.device_id();
    for (const std::string& c : BreakdownCategories()) {
      auto it = d.category_ps().find(c);
      const double ms = it == d.category_ps().end() ? 0 : it->second * 1e-9 / steps;
      v.ms[c] = ms;
      v.total += ms;
      if (c == "mxu" || c == "vector" || c == "memory") v.busy += ms;
    }
    devs.push_back(std::move(v));
  }
  if (devs.empty()) return "";
  // The busiest first (kernel time, then all time, then id): a straggler is
  // the leftmost bar.
  std::sort(devs.begin(), devs.end(), [](const Dev& a, const Dev& b) {
    if (a.busy != b.busy) return a.busy > b.busy;
    if (a.total != b.total) return a.total > b.total;
    return a.id < b.id;
  });
  // Bars: one per device, or bins of consecutive devices (the 8 at either
  // end alone).
  struct Bar {
    std::string label;
    std::map<std::string, double> ms;
  };
  std::vector<Bar> bars;
  const int n = static_cast<int>(devs.size());
  auto add = [&](int from, int to) {  // [from, to)
    Bar b;
    b.label = to - from == 1
                  ? absl::StrCat("device ", devs[from].id)
                  : absl::StrCat(to - from, " devices (ranks ", from, "-",
                                 to - 1, " by kernel time), mean");
    for (const std::string& c : BreakdownCategories()) {
      double sum = 0;
      for (int i = from; i < to; ++i) sum += devs[i].ms.at(c);
      b.ms[c] = sum / (to - from);
    }
    bars.push_back(std::move(b));
  };
  if (n <= kMaxDeviceBars) {
    for (int i = 0; i < n; ++i) add(i, i + 1);
  } else {
    const int ends = 8;
    const int middle = kMaxDeviceBars - 2 * ends;
    for (int i = 0; i < ends; ++i) add(i, i + 1);
    for (int b = 0; b < middle; ++b) {
      const int from = ends + static_cast<int>(int64_t{b} * (n - 2 * ends) / middle);
      const int to = ends + static_cast<int>(int64_t{b + 1} * (n - 2 * ends) / middle);
      if (to > from) add(from, to);
    }
    for (int i = n - ends; i < n; ++i) add(i, i + 1);
  }
  double top = 0;
  for (const Bar& b : bars) {
    double sum = 0;
    for (const auto& [c, ms] : b.ms) sum += ms;
    top = std::max(top, sum);
  }
  if (top <= 0) return "";
  const double bar_h = 160, left = 70, base = 20 + bar_h;
  const double w = kChartWidth / bars.size();
  std::string svg = absl::StrFormat(
      "<svg id=\"devices\" class=\"chart\" width=\"%.0f\" height=\"%.0f\" "
      "role=\"img\" aria-label=\"each device's step by category, busiest "
      "first\"><line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"20\" "
      "stroke=\"#333\"/><text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0"
      "</text><text x=\"%.0f\" y=\"25\" text-anchor=\"end\">%s</text>",
      left + kChartWidth + 20, base + 40, left - 4, base, left - 4, left - 8,
      base, left - 8, Ms(top));
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double x = left + i * w;
    double y = base;
    absl::StrAppendFormat(&svg, "<g class=\"device-bar\"><title>%s</title>",
                          b.label);
    for (const std::string& c : BreakdownCategories()) {
      const double h = bar_h * b.ms.at(c) / top;
      if (h <= 0) continue;
      y -= h;
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.3f\" y=\"%.2f\" width=\"%.3f\" "
                            "height=\"%.2f\" fill=\"%s\"><title>%s: %s %s"
                            "</title></rect>",
                            x, y, std::max(0.5, w - (w > 3 ? 1 : 0)), h,
                            CategoryColour(c), b.label, c, Ms(b.ms.at(c)));
    }
    absl::StrAppend(&svg, "</g>");
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.0f\" y=\"%.0f\">%d devices, busiest "
                        "(kernel time) left%s</text></svg>\n",
                        left, base + 30, n,
                        n > kMaxDeviceBars
                            ? "; the 8 at either end alone, the others in "
                              "bins (mean)"
                            : "");
  return svg;
}

std::string LinkMap(const runtime::Profile& p) {
  if (p.links_size() == 0) return "<p>No ICI links (one chip).</p>\n";
  const double total = std::max<double>(1, p.end_ps());
  // Chip coordinates from the links; the mesh extent.
  std::map<int, std::array<int, 3>> chips;
  std::array<int, 3> extent = {1, 1, 1};
  double top = 0;
  for (const runtime::LinkProfile& l : p.links()) {
    std::array<int, 3> xyz = {0, 0, 0};
    for (int i = 0; i < std::min(3, l.coords_size()); ++i) xyz[i] = l.coords(i);
    chips[l.chip()] = xyz;
    for (int i = 0; i < 3; ++i) extent[i] = std::max(extent[i], xyz[i] + 1);
    top = std::max(top, l.busy_ps() / total);
  }
  // The scale's top: the busiest link rounded up to 10 % (at least 10 %).
  const double scale = std::max(0.1, std::ceil(top * 10 - 1e-9) / 10);
  const bool per_link = p.links_size() <= kMaxMapLinks;
  // Planes (z) side by side, wrapping at the chart width.
  const double cell = std::max(
      6.0, std::min(48.0, (kChartWidth - 20) /
                              std::max(1, extent[0] * std::min(extent[2], 4))));
  const int per_row = std::max(
      1, static_cast<int>((kChartWidth + 20) / (extent[0] * cell + 20)));
  const double plane_w = extent[0] * cell + 20, plane_h = extent[1] * cell + 30;
  const int rows = (extent[2] + per_row - 1) / per_row;
  std::string svg = absl::StrFormat(
      "<svg id=\"linkmap\" class=\"chart\" width=\"%.0f\" height=\"%.0f\" "
      "role=\"img\" aria-label=\"ICI link utilisation on the torus\">",
      std::max(kChartWidth, per_row * plane_w) + 20, rows * plane_h + 10);
  auto origin = [&](const std::array<int, 3>& xyz) {
    const int plane = xyz[2];
    return std::make_pair(10 + (plane % per_row) * plane_w + xyz[0] * cell,
                          24 + (plane / per_row) * plane_h + xyz[1] * cell);
  };
  for (int z = 0; z < extent[2]; ++z) {
    const auto [x0, y0] = origin({0, 0, z});
    absl::StrAppendFormat(&svg,
                          "<text x=\"%.1f\" y=\"%.1f\">%s</text>", x0, y0 - 6,
                          extent[2] > 1 ? absl::StrCat("z = ", z)
                                        : std::string("x right, y down"));
  }
  // Chips: a light square each (its links drawn on its edges).
  for (const auto& [chip, xyz] : chips) {
    const auto [x, y] = origin(xyz);
    absl::StrAppendFormat(&svg,
                          "<rect class=\"chip\" x=\"%.1f\" y=\"%.1f\" "
                          "width=\"%.1f\" height=\"%.1f\" fill=\"#f0f0f0\" "
                          "stroke=\"#bbb\"><title>chip %d (%s)</title></rect>",
                          x + 1, y + 1, cell - 2, cell - 2, chip,
                          absl::StrJoin(xyz, ","));
  }
  if (per_link) {
    // Each link is a bar on its chip's edge: +x right, -x left, +y bottom,
    // -y top; z (+ and -) and the on-chip path as small squares inside.
    const double t = std::max(1.5, cell / 6);
    for (const runtime::LinkProfile& l : p.links()) {
      const auto [x, y] = origin(chips[l.chip()]);
      const double u = l.busy_ps() / total;
      double rx = x, ry = y, rw = t, rh = t;
      const bool pos = l.direction() > 0;
      switch (l.dim()) {
        case 0:
          rx = pos ? x + cell - t - 1 : x + 1;
          ry = y + t + 1;
          rh = cell - 2 * t - 2;
          break;
        case 1:
          ry = pos ? y + cell - t - 1 : y + 1;
          rx = x + t + 1;
          rw = cell - 2 * t - 2;
          break;
        case 2:
          rx = x + cell / 2 + (pos ? 0 : -t);
          ry = y + cell / 2 - t;
          break;
        default:
          rx = x + cell / 2 + (pos ? 0 : -t);
          ry = y + cell / 2;
          break;
      }
      const char* axes = "xyzc";
      absl::StrAppendFormat(
          &svg,
          "<rect class=\"link\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
          "height=\"%.2f\" fill=\"%s\"><title>chip %d (%s) %s%c: %.1f%% busy, "
          "%d bytes</title></rect>",
          rx, ry, std::max(0.5, rw), std::max(0.5, rh),
          l.bytes() == 0 ? "#d9d9d9" : ScaleColour(u / scale), l.chip(),
          absl::StrJoin(l.coords(), ","), pos ? "+" : "-",
          axes[std::min(std::max(l.dim(), 0), 3)], 100 * u, l.bytes());
    }
  } else {
    // Per chip: its busiest link.
    std::map<int, double> busiest;
    for (const runtime::LinkProfile& l : p.links()) {
      busiest[l.chip()] = std::max(busiest[l.chip()], l.busy_ps() / total);
    }
    for (const auto& [chip, u] : busiest) {
      const auto [x, y] = origin(chips[chip]);
      absl::StrAppendFormat(&svg,
                            "<rect class=\"chip-links\" x=\"%.1f\" y=\"%.1f\" "
                            "width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>"
                            "chip %d: busiest link %.1f%%</title></rect>",
                            x + 1, y + 1, cell - 2, cell - 2,
                            ScaleColour(u / scale), chip, 100 * u);
    }
  }
  absl::StrAppend(&svg, "</svg>\n");
  // The colour scale and its legend.
  std::string legend = absl::StrFormat(
      "<svg id=\"linkscale\" width=\"420\" height=\"44\" role=\"img\" "
      "aria-label=\"colour scale\">");
  for (int i = 0; i < 50; ++i) {
    absl::StrAppendFormat(&legend,
                          "<rect x=\"%d\" y=\"4\" width=\"6\" height=\"14\" "
                          "fill=\"%s\"/>",
                          10 + 6 * i, ScaleColour(i / 49.0));
  }
  absl::StrAppendFormat(
      &legend,
      "<text x=\"10\" y=\"34\">0%%</text><text x=\"160\" y=\"34\" "
      "text-anchor=\"middle\">%.0f%%</text><text x=\"310\" y=\"34\" "
      "text-anchor=\"end\">%.0f%%</text><rect x=\"330\" y=\"4\" width=\"14\" "
      "height=\"14\" fill=\"#d9d9d9\"/><text x=\"350\" y=\"16\">unused</text>"
      "</svg>\n",
      50 * scale, 100 * scale);
  return absl::StrCat(
      "<p>Busy time over the run, per link", per_link ? "" : " (per chip: its busiest link)",
      "; the colour scale runs from 0 to ", absl::StrFormat("%.0f", 100 * scale),
      "% (the busiest link rounded up). Each chip is a grey square; +x is "
      "its right edge, -x its left, +y its bottom, -y its top; z links and "
      "the path between a chip's cores are the small squares inside.</p>\n",
      legend, svg);
}

std::string KernelTable(const runtime::Profile& p, double steps) {
  struct Row {
    double ps = 0;
    int64_t count = 0, flops = 0, bytes = 0;
    std::map<std::string, int64_t> by;
  };
  std::map<std::string, Row> rows;
  std::set<int> devices;
  for (const runtime::TimelineSpan& span : p.spans()) {
    if (span.device_id() < 0) continue;
    const std::string& c = span.category();
    if (c != "mxu" && c != "vector" && c != "memory") continue;
    devices.insert(span.device_id());
    Row& r = rows[span.name()];
    r.ps += span.end_ps() - span.start_ps();
    ++r.count;
    r.flops = span.flops();
    r.bytes = span.bytes();
    r.by[c] += span.end_ps() - span.start_ps();
  }
  if (rows.empty()) return "<p>No kernel spans.</p>\n";
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.ps > b.second.ps;
  });
  const double n = static_cast<double>(devices.size());
  std::string out =
      "<table id=\"kernels\"><tr><th class=\"l\">kernel</th><th>time per "
      "step</th><th>per run</th><th>FLOPs</th><th>FLOP rate</th><th>HBM "
      "bytes</th><th class=\"l\">bound by</th></tr>\n";
  for (size_t i = 0; i < sorted.size() && i < kMaxTableRows; ++i) {
    const auto& [name, r] = sorted[i];
    std::string by;
    int64_t by_ps = -1;
    for (const auto& [c, ps] : r.by) {
      if (ps > by_ps) {
        by = c;
        by_ps = ps;
      }
    }
    const double per_run_us = r.ps / r.count * 1e-6;
    absl::StrAppendFormat(
        &out,
        "<tr><td class=\"l\">%s</td><td>%s</td><td>%.3f us</td><td>%.4g</td>"
        "<td>%.4g TFLOP/s</td><td>%s</td><td class=\"l\">%s</td></tr>\n",
        HtmlEscape(name), Ms(r.ps / n / steps * 1e-9), per_run_us,
        static_cast<double>(r.flops),
        per_run_us > 0 ? r.flops / (per_run_us * 1e-6) / 1e12 : 0.0,
        common::Bytes(r.bytes).ToString(), by);
  }
  absl::StrAppendFormat(&out,
                        "</table>\n<p>The %d kernels with the most time, of "
                        "%d; per step: mean over the %d traced devices.</p>\n",
                        std::min<int>(kMaxTableRows, sorted.size()),
                        sorted.size(), devices.size());
  return out;
}

std::string CollectiveTable(const runtime::Profile& p) {
  struct Row {
    std::string op, algorithm;
    int64_t bytes = 0, count = 0, ps = 0, exposed = 0;
  };
  std::map<std::string, Row> rows;
  for (const runtime::CollectiveSpan& c : p.collectives()) {
    Row& r = rows[c.name()];
    r.op = c.op();
    r.algorithm = c.algorithm();
    r.bytes = c.bytes();
    ++r.count;
    r.ps += c.end_ps() - c.start_ps();
    r.exposed += c.exposed_ps();
  }
  if (rows.empty()) return "<p>No collectives.</p>\n";
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.ps > b.second.ps;
  });
  std::string out =
      "<table id=\"collectives\"><tr><th class=\"l\">collective</th><th "
      "class=\"l\">op</th><th>bytes per device</th><th class=\"l\">"
      "algorithm</th><th>start to done</th><th>exposed</th><th>hidden</th>"
      "</tr>\n";
  for (size_t i = 0; i < sorted.size() && i < kMaxTableRows; ++i) {
    const auto& [name, r] = sorted[i];
    const double mean_us = r.ps * 1e-6 / r.count;
    const double exposed_us = r.exposed * 1e-6 / r.count;
    absl::StrAppendFormat(
        &out,
        "<tr><td class=\"l\">%s</td><td class=\"l\">%s</td><td>%s</td><td "
        "class=\"l\">%s</td><td>%.3f us</td><td>%.3f us</td><td>%.3f us</td>"
        "</tr>\n",
        HtmlEscape(name), r.op, common::Bytes(r.bytes).ToString(), r.algorithm,
        mean_us, exposed_us, std::max(0.0, mean_us - exposed_us));
  }
  absl::StrAppendFormat(&out,
                        "</table>\n<p>The %d collectives with the most time, "
                        "of %d; times are means over the traced devices and "
                        "steps. Exposed: the device waited at the done; "
                        "hidden: overlapped by its compute.</p>\n",
                        std::min<int>(kMaxTableRows, sorted.size()),
                        sorted.size());
  return out;
}

std::string HbmSection(const runtime::Profile& p) {
  const runtime::DeviceProfile* peak = nullptr;
  for (const runtime::DeviceProfile& d : p.devices()) {
    if (peak == nullptr || d.peak_hbm_bytes() > peak->peak_hbm_bytes()) peak = &d;
  }
  if (peak == nullptr || peak->peak_hbm_bytes() == 0) return "";
  const int64_t capacity = peak->hbm_capacity_bytes();
  const runtime::HbmSplit& h = peak->peak_hbm_split();
  // Chosen colours, distinct from each other and from the free part.
  const std::pair<const char*, int64_t> parts[] = {
      {"weights", h.weights()},     {"optimizer state", h.optimizer_state()},
      {"arguments", h.arguments()}, {"infeed buffers", h.infeed()},
      {"constants", h.constants()}, {"activations and temporaries", h.live_peak()}};
  const char* colours[] = {"#4e79a7", "#f28e2b", "#59a14f",
                           "#edc948", "#9c755f", "#e15759"};
  const double top = static_cast<double>(std::max(capacity, peak->peak_hbm_bytes()));
  std::string svg = absl::StrFormat(
      "<svg id=\"hbm\" class=\"chart\" width=\"%.0f\" height=\"60\" "
      "role=\"img\" aria-label=\"HBM use of the fullest device\"><rect "
      "x=\"0\" y=\"4\" width=\"%.2f\" height=\"26\" fill=\"#eeeeee\" "
      "stroke=\"#999\"><title>capacity %s</title></rect>",
      kChartWidth + 20, kChartWidth * capacity / top,
      common::Bytes(capacity).ToString());
  std::string rows;
  double x = 0;
  for (int i = 0; i < 6; ++i) {
    const double w = kChartWidth * parts[i].second / top;
    if (w > 0) {
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.2f\" y=\"4\" width=\"%.2f\" "
                            "height=\"26\" fill=\"%s\"><title>%s %s</title>"
                            "</rect>",
                            x, w, colours[i], parts[i].first,
                            common::Bytes(parts[i].second).ToString());
      x += w;
    }
    absl::StrAppendFormat(&rows,
                          "<tr><td class=\"l\"><i class=\"sw\" "
                          "style=\"background:%s\"></i>%s</td><td>%s</td>"
                          "<td>%.1f%%</td></tr>\n",
                          colours[i], parts[i].first,
                          common::Bytes(parts[i].second).ToString(),
                          capacity > 0 ? 100.0 * parts[i].second / capacity : 0.0);
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"0\" y=\"48\">0</text><text x=\"%.2f\" "
                        "y=\"48\" text-anchor=\"end\">capacity %s</text>"
                        "</svg>\n",
                        kChartWidth * capacity / top,
                        common::Bytes(capacity).ToString());
  return absl::StrCat(
      "<p>Device ", peak->device_id(), " (the fullest) at its peak: ",
      common::Bytes(peak->peak_hbm_bytes()).ToString(), " of ",
      common::Bytes(capacity).ToString(), ".</p>\n", svg,
      "<table id=\"hbm-split\"><tr><th class=\"l\">kind</th><th>bytes</th>"
      "<th>of capacity</th></tr>\n",
      rows, "</table>\n");
}

std::string InputSection(const RunStats& s) {
  const scenarios::InputSummary& in = s.input;
  if (!in.pipeline) return "";
  std::string out = absl::StrFormat(
      "<p>The scenario pipeline via %s (semantics %s), %d input workers, "
      "shard policy %s; %d steps run%s.</p>\n<table id=\"input\"><tr><th>"
      "worker</th><th class=\"l\">shard policy</th><th class=\"l\">why</th>"
      "</tr>\n",
      HtmlEscape(in.api), HtmlEscape(in.semantics), in.workers,
      HtmlEscape(in.requested_policy), in.steps_run,
      in.ended ? " (end of data)" : "");
  for (size_t w = 0; w < in.applied_policy.size(); ++w) {
    absl::StrAppendFormat(&out,
                          "<tr><td>%d</td><td class=\"l\">%s</td><td "
                          "class=\"l wrap\">%s</td></tr>\n",
                          w, HtmlEscape(in.applied_policy[w]),
                          HtmlEscape(w < in.shard_reason.size() ? in.shard_reason[w]
                                                            : ""));
  }
  int64_t total = 0, lo = 0, hi = 0;
  for (size_t i = 0; i < in.examples_per_replica.size(); ++i) {
    const int64_t e = in.examples_per_replica[i];
    total += e;
    lo = i == 0 ? e : std::min(lo, e);
    hi = i == 0 ? e : std::max(hi, e);
  }
  absl::StrAppendFormat(&out,
                        "</table>\n<p>Examples per replica over the run: %d "
                        "replicas, %d to %d each, %d in all; %d in the last "
                        "step.</p>\n",
                        in.examples_per_replica.size(), lo, hi, total,
                        in.examples_last_step);
  return out;
}

}  // namespace

std::string HtmlReport(const RunStats& s, const scenarios::TrainResult& r,
                       const std::string& scenario_text) {
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>tpusim ",
      HtmlEscape(s.scenario),
      "</title><style>body{font-family:sans-serif;margin:2em;max-width:"
      "1000px}pre{background:#f4f4f4;padding:1em;white-space:pre-wrap;"
      "overflow-wrap:anywhere}table{border-collapse:collapse;font-size:13px}"
      "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td.l,th.l"
      "{text-align:left}.legend span{display:inline-block;margin-right:16px}"
      ".sw{display:inline-block;width:12px;height:12px;margin-right:4px;"
      "vertical-align:middle}td.wrap{white-space:normal;overflow-wrap:anywhere;"
      "max-width:600px}svg text{font-size:12px}svg.chart{display:"
      "block;max-width:100%;height:auto}.warm{font-size:10px}</style></head>"
      "<body>\n<h1>",
      HtmlEscape(s.scenario), "</h1>\n<h2>Summary</h2>\n<pre id=\"summary\">",
      HtmlEscape(TextReport(s)), "</pre>\n");
  if (s.timed && !s.wall_time_only) {
    const runtime::Profile& p = r.profile;
    const double steps = static_cast<double>(std::max<int64_t>(1, s.steps));
    absl::StrAppend(
        &html,
        "<h2>Each step by category</h2>\n<p>Mean over the traced devices of "
        "each device call (per training step). The first call is the "
        "warm-up (dashed outline). Legend: mean per device and step over the "
        "run.</p>\n",
        Legend(s), StepChart(s, p),
        "<h2>Each device by category</h2>\n<p>Every device's mean step "
        "(its counters, traced or not), sorted by kernel time, busiest left: "
        "a straggler is the first bar.</p>\n",
        DeviceChart(p, steps), "<h2>ICI link utilisation</h2>\n", LinkMap(p),
        "<h2>Top kernels</h2>\n", KernelTable(p, steps),
        "<h2>Collectives</h2>\n", CollectiveTable(p), "<h2>HBM</h2>\n",
        HbmSection(p));
  }
  if (s.input.pipeline) {
    absl::StrAppend(&html, "<h2>Input</h2>\n", InputSection(s));
  }
  absl::StrAppend(&html, "<h2>Scenario</h2>\n<pre id=\"scenario\">",
                  HtmlEscape(scenario_text), "</pre>\n</body></html>\n");
  return html;
}

}  // namespace tpusim::tools
