#include "tools/compare_command.h"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "tools/compare_report.h"
#include "tools/out_dir.h"

namespace tpusim::tools {
namespace {

// stats.json is small; a larger file is not one (chosen: 64 MiB).
constexpr int64_t kMaxStatsBytes = int64_t{64} << 20;

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The absolute, symlink-free form of an existing directory ("" if none).
std::string RealDir(const std::string& dir) {
  char buf[PATH_MAX];
  return realpath(dir.c_str(), buf) != nullptr ? std::string(buf) : "";
}

// `target` (an absolute path) relative to the directory `from` (absolute).
std::string Relative(const std::string& from, const std::string& target) {
  std::vector<std::string> a = absl::StrSplit(from, '/', absl::SkipEmpty());
  std::vector<std::string> b = absl::StrSplit(target, '/', absl::SkipEmpty());
  size_t common = 0;
  while (common < a.size() && common + 1 < b.size() && a[common] == b[common]) {
    ++common;
  }
  std::vector<std::string> parts(a.size() - common, "..");
  for (size_t i = common; i < b.size(); ++i) parts.push_back(b[i]);
  return absl::StrJoin(parts, "/");
}

absl::Status RunCompare(const ParsedArgs& args, std::ostream& out) {
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "json" && format != "csv") {
    return UsageError(
        absl::StrCat("--format=", format, " must be text, json or csv"));
  }
  std::string out_file;
  std::string out_dir;
  if (args.Has("out")) {
    // Checked before anything is read: a directory that is not there, or a
    // FILE that is a directory, is an error up front.
    out_file = args.Get("out");
    if (out_file.empty() || IsDirectory(out_file)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--out=", out_file,
          ": give the comparison page's file name (compare.html), not a "
          "directory"));
    }
    out_dir = RealDir(DirName(out_file));
    if (out_dir.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--out=", out_file, ": directory ", DirName(out_file),
                       " does not exist"));
    }
  }
  std::vector<ComparedRun> runs;
  for (const std::string& arg : args.positional()) {
    const std::string path =
        IsDirectory(arg) ? absl::StrCat(arg, "/stats.json") : arg;
    TPUSIM_ASSIGN_OR_RETURN(
        std::string text,
        common::ReadRegularFile(path, "stats file", kMaxStatsBytes));
    ComparedRun run;
    run.label = arg;
    TPUSIM_ASSIGN_OR_RETURN(run.stats, ReadStatsJson(text, path));
    const std::string report = absl::StrCat(DirName(path), "/report.html");
    struct stat st;
    if (!out_dir.empty() && stat(report.c_str(), &st) == 0) {
      run.report_href =
          Relative(out_dir, absl::StrCat(RealDir(DirName(path)), "/report.html"));
    }
    runs.push_back(std::move(run));
  }
  if (format == "text") out << CompareText(runs);
  if (format == "csv") out << CompareCsv(runs);
  if (format == "json") out << CompareJson(runs, {}).Dump() << "\n";
  if (!out_file.empty()) {
    TPUSIM_RETURN_IF_ERROR(common::WriteFile(
        out_file,
        CompareHtml(absl::StrCat("tpusim compare ",
                                 absl::StrJoin(args.positional(), " ")),
                    runs)));
  }
  return absl::OkStatus();
}

}  // namespace

Subcommand CompareCommand() {
  Subcommand s;
  s.name = "compare";
  s.summary = "put runs side by side from their stats.json";
  s.usage =
      "tpusim compare A/stats.json B/stats.json [...] [--format=text|json|csv] "
      "[--out FILE.html]";
  s.flags = {
      {"format", true, "text (default), json or csv: the same table as sweep"},
      {"out", true,
       "FILE.html: the comparison page (breakdown bars on one time scale, "
       "per-chip throughput, HBM, busiest links)"},
  };
  s.min_positional = 2;
  s.max_positional = 64;
  s.run = &RunCompare;
  s.description =
      "Each argument is a stats.json that `tpusim run --out DIR` wrote (or "
      "DIR itself). The text form has a header row, then per run: chips, "
      "replicas, per-replica batch, mean step time, examples/s overall and "
      "per chip, MFU, the breakdown of the mean step (% per category), peak "
      "HBM of capacity and the bottleneck. Nothing is simulated.";
  return s;
}

}  // namespace tpusim::tools
