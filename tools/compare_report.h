// tools/compare_report.h
//
// Runs side by side, for `tpusim sweep` (one column per point) and `tpusim
// compare` (one per stats.json): a table for people (a header row, then per
// run chips, replicas, per-replica batch, step time, examples/s overall and
// per chip, MFU, the 8-category breakdown in % of the mean step, peak HBM
// against capacity and the bottleneck), the same rows as JSON and CSV, and
// compare.html (self-contained: breakdown bars on one time scale, per-chip
// throughput, HBM, busiest links).
//
//   std::vector<ComparedRun> runs = ...;  // label + stats or error
//   out << CompareText(runs);
//   WriteFile("compare.html", CompareHtml("sweep of x.textproto", runs));

#ifndef TPUSIM_TOOLS_COMPARE_REPORT_H_
#define TPUSIM_TOOLS_COMPARE_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/json_writer.h"
#include "tools/report.h"

namespace tpusim::tools {

struct ComparedRun {
  std::string label;  // "cluster.slice=v4-8", or the stats.json path
  // The run's own page, relative to compare.html ("point-0/report.html");
  // empty: none.
  std::string report_href;
  bool ok = true;
  std::string error;  // when !ok: one line
  RunStats stats;     // when ok
};

// Reads a `tpusim run --format=json` / stats.json text back (schema
// tpusim.run.stats/N). InvalidArgument naming `source` when it is not JSON,
// not a run's stats, or lacks a key the comparison needs.
absl::StatusOr<RunStats> ReadStatsJson(absl::string_view text,
                                       absl::string_view source);

// Per-replica batch (global batch / replicas; 0 without replicas) and
// examples/s per chip (0 without chips).
int64_t PerReplicaBatch(const RunStats& s);
double ExamplesPerSecondPerChip(const RunStats& s);

// The table for people: a header row, then one row per run (`index` is the
// first column: the point number of a sweep).
std::string CompareText(const std::vector<ComparedRun>& runs);
// One object per run: point, set (the label's parts when `sets` is given),
// ok, error or the figures.
Json CompareJson(const std::vector<ComparedRun>& runs,
                 const std::vector<std::vector<std::string>>& sets);
// A header line, then one line per run.
std::string CompareCsv(const std::vector<ComparedRun>& runs);
// compare.html: no script, no network; inline SVG.
std::string CompareHtml(const std::string& title,
                        const std::vector<ComparedRun>& runs);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_COMPARE_REPORT_H_
