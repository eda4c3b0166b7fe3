#include "tools/inspect_input_command.h"

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "scenarios/input_runner.h"
#include "scenarios/scenario_loader.h"
#include "strategy/data/dataset.h"
#include "tools/inspect_input_report.h"
#include "tools/json_writer.h"

namespace tpusim::tools {
namespace {

// tpusim choice: without --steps the listing stops after this many steps (end
// code "OK"), so that a repeating pipeline still terminates.
constexpr int64_t kDefaultMaxSteps = 1000;

// tpusim choice: a golden file larger than this is refused (it could only
// be a wrong path, e.g. a device).
constexpr int64_t kMaxGoldenFileBytes = int64_t{256} << 20;

// --max-memory=N with an optional binary suffix (KiB, MiB, GiB, TiB); default
// data::kDefaultMaxMemory (2 GiB).
absl::StatusOr<common::Bytes> ParseMaxMemory(const ParsedArgs& args) {
  if (!args.Has("max-memory")) return data::kDefaultMaxMemory;
  const std::string text = args.Get("max-memory");
  absl::string_view digits = text;
  int shift = 0;
  for (const auto& [suffix, s] : {std::pair<absl::string_view, int>{"KiB", 10},
                                  {"MiB", 20},
                                  {"GiB", 30},
                                  {"TiB", 40}}) {
    if (absl::ConsumeSuffix(&digits, suffix)) {
      shift = s;
      break;
    }
  }
  int64_t value = 0;
  if (!ParseExactInt(digits, &value) || value < 1 ||
      value > (std::numeric_limits<int64_t>::max() >> shift)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-memory=", text,
        " is not allowed; expected a positive number of bytes, optionally "
        "with a suffix KiB, MiB, GiB or TiB (e.g. 512MiB)"));
  }
  return common::Bytes(value << shift);
}

// Prints the text listing as the steps come (flushed, so that a long or killed
// run shows what was listed) and/or collects them for the JSON document.
class CommandSink final : public scenarios::ListingSink {
 public:
  CommandSink(std::ostream* text, JsonListingCollector* json)
      : text_(text), json_(json) {}
  absl::Status Begin(const scenarios::InputListing& header) override {
    if (json_ != nullptr) TPUSIM_RETURN_IF_ERROR(json_->Begin(header));
    if (text_ != nullptr)
      *text_ << FormatListingHeaderText(header) << std::flush;
    return absl::OkStatus();
  }
  absl::Status Step(const scenarios::InputStep& step) override {
    if (json_ != nullptr) TPUSIM_RETURN_IF_ERROR(json_->Step(step));
    if (text_ != nullptr) *text_ << FormatStepText(step) << std::flush;
    return absl::OkStatus();
  }

 private:
  std::ostream* text_;
  JsonListingCollector* json_;
};

// tpusim choice: a --batch list file larger than this is refused, and so is
// a list of more scenarios than kMaxBatchScenarios.
constexpr int64_t kMaxBatchListBytes = int64_t{16} << 20;
constexpr int64_t kMaxBatchScenarios = 100000;

// --batch: the positional argument is a file listing scenario paths, one per
// line (blank lines skipped). Each scenario is loaded and listed in this
// process; the output is one JSON array with one object per scenario, in list
// order: {"listing": <the --format=json document>, "scenario": PATH} or, when
// the scenario cannot be loaded or run, {"error": {"code": "...", "message":
// "..."}, "scenario": PATH}. An error that ends a listing is its "end", as in
// the single-scenario document. Exit 0 unless the list itself cannot be read.
// (The differential suite against TensorFlow, tests/conformance/, lists
// thousands of scenarios this way with few processes.)
absl::Status RunInspectInputBatch(const ParsedArgs& args, std::ostream& out,
                                  const scenarios::RunInputOptions& options) {
  for (const char* flag : {"golden", "update-golden", "explain"}) {
    if (args.Has(flag)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, " is not allowed with --batch (one listing per scenario "
          "in a JSON array)"));
    }
  }
  if (args.Get("format", "text") != "json") {
    return absl::InvalidArgumentError(
        "--batch needs --format=json (the output is a JSON array)");
  }
  const std::string& list_path = args.positional()[0];
  TPUSIM_ASSIGN_OR_RETURN(
      const std::string list,
      common::ReadRegularFile(list_path, "scenario list", kMaxBatchListBytes));
  std::vector<std::string> paths;
  for (absl::string_view line : absl::StrSplit(list, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (static_cast<int64_t>(paths.size()) == kMaxBatchScenarios) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--batch list ", list_path, " names more than ", kMaxBatchScenarios,
          " scenarios (tpusim's cap); split it"));
    }
    paths.emplace_back(line);
  }
  out << "[";
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    out << (i == 0 ? "\n" : ",\n") << "{\"scenario\": " << JsonQuote(path)
        << ", ";
    absl::Status status;
    absl::StatusOr<scenarios::LoadedScenario> scenario =
        scenarios::LoadScenarioFile(path, args.GetAll("set"));
    if (scenario.ok()) {
      JsonListingCollector collector;
      CommandSink sink(nullptr, &collector);
      absl::StatusOr<scenarios::InputListing> listing =
          scenarios::RunInputScenario(*scenario, options, sink);
      if (listing.ok()) {
        out << "\"listing\": "
            << FormatListingJson(collector.Finish(*listing)) << "}";
        continue;
      }
      status = listing.status();
    } else {
      status = scenario.status();
    }
    out << "\"error\": {\"code\": "
        << JsonQuote(absl::StatusCodeToString(status.code()))
        << ", \"message\": " << JsonQuote(status.message()) << "}}";
  }
  out << "\n]\n";
  return absl::OkStatus();
}

absl::Status RunInspectInput(const ParsedArgs& args, std::ostream& out) {
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "json") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--format=", format, " is not allowed; expected text or json"));
  }
  TPUSIM_ASSIGN_OR_RETURN(const int64_t steps,
                          args.GetInt("steps", kDefaultMaxSteps, 1));
  TPUSIM_ASSIGN_OR_RETURN(const common::Bytes max_memory, ParseMaxMemory(args));
  if (args.Has("update-golden") && !args.Has("golden")) {
    return absl::InvalidArgumentError(
        "--update-golden needs --golden FILE (the file to rewrite)");
  }
  if (args.Has("golden") && args.Get("golden").empty()) {
    return absl::InvalidArgumentError(
        "--golden= is not allowed; expected a file name");
  }
  const std::string& path = args.positional()[0];
  scenarios::RunInputOptions options;
  options.max_steps = steps;
  options.data_dir = args.Get("data-dir");
  options.max_memory = max_memory;
  options.explain = args.Has("explain");
  if (args.Has("batch")) return RunInspectInputBatch(args, out, options);
  TPUSIM_ASSIGN_OR_RETURN(scenarios::LoadedScenario scenario,
                          scenarios::LoadScenarioFile(path, args.GetAll("set")));
  // The text listing is printed step by step; the JSON document (also what a
  // golden compares) is held until complete, within a bounded size.
  const bool text = format == "text";
  const bool need_json = !text || args.Has("golden");
  JsonListingCollector collector;
  CommandSink sink(text ? &out : nullptr, need_json ? &collector : nullptr);
  TPUSIM_ASSIGN_OR_RETURN(scenarios::InputListing listing,
                          scenarios::RunInputScenario(scenario, options, sink));
  if (text) out << FormatListingEndText(listing);
  std::string json;
  if (need_json) {
    listing = collector.Finish(listing);
    json = FormatListingJson(listing);
    if (!text) out << json;
  }

  // Without a golden, an error that ended the listing (what TensorFlow would
  // raise, e.g. fewer files than workers) is the run's result: the listing is
  // printed up to it, then the CLI prints the status and exits 1. With a
  // golden, the golden decides: it records the expected end, error or not.
  if (!args.Has("golden")) {
    if (listing.end.ok() || absl::IsOutOfRange(listing.end)) {
      return absl::OkStatus();
    }
    return absl::Status(
        listing.end.code(),
        absl::StrCat("the listing ended at step ", listing.end_at_step, ": ",
                     listing.end.message()));
  }
  const std::string golden = args.Get("golden");
  if (args.Has("update-golden")) {
    errno = 0;
    std::ofstream o(golden, std::ios::binary | std::ios::trunc);
    o << json;
    o.flush();
    if (!o) {
      // The OS reason (EACCES, EISDIR, ENOSPC, ...), not a guess.
      const absl::Status os = common::ErrnoStatus(
          "cannot write golden file", golden, errno != 0 ? errno : EIO);
      return absl::Status(
          os.code(), absl::StrCat("--golden=", golden, ": ", os.message()));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> expected =
      common::ReadRegularFile(golden, "golden file", kMaxGoldenFileBytes);
  if (!expected.ok()) {
    return absl::Status(
        expected.status().code(),
        absl::StrCat("--golden=", golden, ": cannot read the file (",
                     expected.status().message(),
                     absl::IsNotFound(expected.status())
                         ? "; run with --update-golden to create it)"
                         : ")"));
  }
  const std::string diff = GoldenDiff(*expected, json, golden);
  if (diff.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the JSON output of ", path, " differs from golden ", golden, "; ", diff,
      "(review the change, then rerun with --update-golden to accept it)"));
}

}  // namespace

Subcommand InspectInputCommand() {
  Subcommand s;
  s.name = "inspect-input";
  s.summary =
      "print the elements every replica receives, per step, for a scenario";
  s.usage =
      "tpusim inspect-input SCENARIO [--format=text|json] [--steps K] "
      "[--golden FILE] "
      "[--update-golden] [--data-dir DIR] [--max-memory BYTES] "
      "[--set PATH=VALUE]... [--explain] [--batch]";
  s.flags = {
      {"format", true, "text (default) or json"},
      {"steps", true, "list at most K steps (K >= 1; default 1000)"},
      {"golden", true,
       "compare the JSON output with FILE; exit 1 with a diff if it differs"},
      {"update-golden", false,
       "with --golden: rewrite FILE with the JSON output"},
      {"max-memory", true,
       "memory budget of each input buffer (batch, shuffle, cache, one "
       "record), e.g. 512MiB (default 2GiB)"},
      {"data-dir", true,
       "where synthetic file sets are written (default $TPUSIM_DATA_DIR or "
       "$TMPDIR/tpusim-data)"},
      {"explain", false,
       "also print, per worker, the pipeline before and after the auto-shard "
       "and rebatch rewrites, the shard policy applied and why, and the "
       "rebatch case with its numbers (JSON: an \"explain\" object)"},
      {"batch", false,
       "SCENARIO is a file listing scenario paths, one per line; with "
       "--format=json prints one JSON array of {\"scenario\", \"listing\"} "
       "(or {\"scenario\", \"error\"}) objects, one per scenario, in "
       "order"},
      {"set", true,
       "PATH=VALUE: change one scenario field before validation, e.g. "
       "global_batch_size=64 or pipeline[1].batch.drop_remainder=true "
       "(repeatable)"},
  };
  s.min_positional = 1;
  s.max_positional = 1;
  s.out_of_memory_hint =
      "lower --max-memory, the batch or shuffle buffer sizes, or "
      "--steps";
  s.description =
      "SCENARIO is a text proto (scenarios/scenario.proto): the cluster (a "
      "slice name or\n"
      "workers x replicas_per_worker), the dataset pipeline stage by stage, "
      "the shard policy,\n"
      "the semantics version (2.2, 2.4 or 2.21) and the distribution API. The "
      "pipeline is\n"
      "distributed as TPUStrategy does (rebatch, per-worker clone, auto-shard, "
      "round-robin\n"
      "to replicas) and every step lists each replica's element. The first "
      "error ends the\n"
      "listing and is reported as its end; it then exits 1 with that error "
      "(with --golden,\n"
      "the comparison decides the exit code). Scenario errors exit 1 naming "
      "the line and\n"
      "field. The JSON schema is documented in README.md.";
  s.run = &RunInspectInput;
  return s;
}

}  // namespace tpusim::tools
