#include "tools/inspect_input_command.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scenarios/input_runner.h"
#include "scenarios/scenario_loader.h"
#include "tools/inspect_input_report.h"

namespace tpusim::tools {
namespace {

// tpusim choice: without --steps the listing stops after this many steps (end
// code "OK"), so that a repeating pipeline still terminates.
constexpr int64_t kDefaultMaxSteps = 1000;

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

absl::Status RunInspectInput(const ParsedArgs& args, std::ostream& out) {
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "json") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--format=", format, " is not allowed; expected text or json"));
  }
  TPUSIM_ASSIGN_OR_RETURN(const int64_t steps,
                          args.GetInt("steps", kDefaultMaxSteps, 1));
  if (args.Has("update-golden") && !args.Has("golden")) {
    return absl::InvalidArgumentError(
        "--update-golden needs --golden FILE (the file to rewrite)");
  }
  if (args.Has("golden") && args.Get("golden").empty()) {
    return absl::InvalidArgumentError(
        "--golden= is not allowed; expected a file name");
  }
  const std::string& path = args.positional()[0];
  TPUSIM_ASSIGN_OR_RETURN(scenarios::LoadedScenario scenario,
                          scenarios::LoadScenarioFile(path));
  scenarios::RunInputOptions options;
  options.max_steps = steps;
  options.data_dir = args.Get("data-dir");
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
    std::ofstream o(golden, std::ios::binary | std::ios::trunc);
    o << json;
    if (!o) {
      return absl::PermissionDeniedError(
          absl::StrCat("--golden=", golden, ": cannot write the file"));
    }
    return absl::OkStatus();
  }
  std::ifstream in(golden, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(
        "--golden=", golden,
        ": cannot read the file (run with --update-golden to create it)"));
  }
  std::stringstream expected;
  expected << in.rdbuf();
  const std::string diff = GoldenDiff(expected.str(), json, golden);
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
      "[--update-golden] [--data-dir DIR]";
  s.flags = {
      {"format", true, "text (default) or json"},
      {"steps", true, "list at most K steps (K >= 1; default 1000)"},
      {"golden", true,
       "compare the JSON output with FILE; exit 1 with a diff if it differs"},
      {"update-golden", false,
       "with --golden: rewrite FILE with the JSON output"},
      {"data-dir", true,
       "where synthetic file sets are written (default $TPUSIM_DATA_DIR or "
       "$TMPDIR/tpusim-data)"},
  };
  s.min_positional = 1;
  s.max_positional = 1;
  s.description =
      "SCENARIO is a text proto (scenarios/scenario.proto): the cluster (a "
      "slice name or\n"
      "workers x replicas_per_worker), the dataset pipeline stage by stage, "
      "the shard policy,\n"
      "the semantics version (2.2 or 2.4) and the distribution API. The "
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
