// tools/report.h
//
// What `tpusim run` writes, computed from a run's Profile and nothing else
// (architecture.md: every report, trace and chart is drawn from the Profile):
//
//   RunStats stats = ComputeRunStats(result);
//   out << TextReport(stats);                 // people
//   files: StatsJson(stats)                   // stats.json (schema: README)
//          ChromeTrace(result)                // trace.json (Perfetto, chrome://tracing)
//          HtmlReport(stats, result, text)    // report.html (self-contained)
//
// Everything here is deterministic: the same run gives the same bytes (no wall
// clock; the CLI prints wall time on stderr only).

#ifndef TPUSIM_TOOLS_REPORT_H_
#define TPUSIM_TOOLS_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "scenarios/train_runner.h"
#include "tools/json_writer.h"

namespace tpusim::tools {

struct LinkUse {
  int chip = 0;
  std::vector<int> coords;
  int dim = 0;
  int direction = 1;
  int64_t bytes = 0;
  double utilization = 0;  // busy time over the run's time
};

struct RunStats {
  std::string scenario;
  std::string backend;
  std::string compiler = "tpusim";  // TrainResult::compiler
  std::string compiler_detail;
  std::string slice;
  int num_chips = 0;
  int num_replicas = 0;
  int64_t global_batch = 0;
  int64_t steps = 0;
  // Only the step time is known (backend "pjrt": measured wall time per
  // device call); the breakdown, MFU, HBM and link figures are not measured:
  // the text report says so and stats.json leaves their keys out.
  bool wall_time_only = false;
  // Per training step (a device call of K steps counts K steps of 1/K of its
  // time), in milliseconds. The warm-up is the first device call (all its
  // steps_per_run steps): the statistics leave it out when later calls exist
  // (warmup_excluded) and else count every step ("includes warm-up"). p50
  // and p99 need 3 counted steps (has_percentiles); with fewer only the mean
  // and the steps themselves (counted_steps_ms) are printed.
  double step_ms_mean = 0;
  double step_ms_p50 = 0;
  double step_ms_p99 = 0;
  int64_t steps_counted = 0;
  int64_t warmup_steps = 0;
  bool warmup_excluded = false;
  bool has_percentiles = false;
  std::vector<double> counted_steps_ms;  // sorted; only when fewer than 3
  double examples_per_second = 0;
  // Mean per device and step over every step (warm-up included: the
  // devices' counters cover the whole run), in milliseconds, by span category
  // ("mxu", "vector", "memory", "collective", "infeed", "input", "host"),
  // plus "idle" (the rest of breakdown_step_ms, the mean over every step).
  std::map<std::string, double> breakdown_ms;
  double breakdown_step_ms = 0;
  // The critical path: per counted call, back from the device that finished
  // last through the latest member of each collective it waited for (the
  // backend's StepProfile::critical_path_ps; without it, the last device's
  // waits and its compute split as in the breakdown); ms per counted step by
  // the same categories. The bottleneck is its largest entry.
  std::map<std::string, double> critical_path_ms;
  // Model FLOPs over (step time x peak FLOP/s of all devices).
  double mfu = 0;
  // HBM bytes moved by kernels per second, per chip (GB/s), and the largest
  // footprint of any device (bytes) against its capacity.
  double hbm_gbps_per_chip = 0;
  int64_t peak_hbm_bytes = 0;
  int64_t hbm_capacity_bytes = 0;
  std::vector<LinkUse> busiest_links;  // at most five, busiest first
  std::string bottleneck;              // one sentence with its number
  // The bottleneck's category (one of BreakdownCategories()) and its share of
  // the critical path (0..1); empty and 0 when there is no breakdown.
  std::string bottleneck_category;
  double bottleneck_share = 0;
  double last_loss = 0;                // real-valued runs only
  bool has_loss = false;
  bool timed = false;                  // false on backends without timing
  // The input (TrainResult::input): only reported when a pipeline fed it.
  scenarios::InputSummary input;
  // Model parallelism (cores_per_replica > 1 only): cross-core bytes, the part
  // over ICI, the largest chip distance within a replica.
  int cores_per_replica = 1;
  int64_t cross_core_bytes = 0;
  int64_t cross_core_ici_bytes = 0;
  int max_pair_chip_distance = 0;
};

// The 8 breakdown categories in the one order every table, chart and legend
// uses: the device span categories (sim/chip/chip.h kSpanCategories: mxu,
// vector, memory, collective, infeed, input, host), then idle.
const std::vector<std::string>& BreakdownCategories();
// The category's colour in every chart ("#rrggbb"; grey for an unknown one).
std::string CategoryColour(const std::string& category);
// A category's breakdown_ms as a percentage of the step it is a mean over
// (breakdown_step_ms, every step: the warm-up included), so that the eight
// shares add up to 100; 0 when there is no step.
double BreakdownPercent(const RunStats& s, double ms);
// "chip 3 (1,1,0) +x": a link as the reports name it.
std::string LinkName(const LinkUse& link);
// `text` with <, >, &, " escaped for HTML.
std::string HtmlEscape(absl::string_view text);

RunStats ComputeRunStats(const std::string& scenario,
                         const scenarios::TrainResult& result);

std::string TextReport(const RunStats& stats);
Json StatsJson(const RunStats& stats);
std::string ChromeTrace(const scenarios::TrainResult& result);
std::string HtmlReport(const RunStats& stats,
                       const scenarios::TrainResult& result,
                       const std::string& scenario_text);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_REPORT_H_
