// scenarios/scenario_loader.h
//
// Loads and validates scenario text protos (scenarios/scenario.proto).
//
//   TPUSIM_ASSIGN_OR_RETURN(LoadedScenario s,
//                           LoadScenarioFile("scenarios/default.textproto"));
//   TPUSIM_ASSIGN_OR_RETURN(ClusterLayout cluster, ResolveCluster(s));
//
// Every error is InvalidArgument (NotFound for an unreadable file) with one
// line that names the file, the LINE and the FIELD. A syntax error comes from
// protobuf's parser, positioned at the offending token:
//   default.textproto:4:11: Message type "tpusim.scenarios.RangeStage" has no
//   field named "stp".
// A semantic error names the field path and value:
//   default.textproto:5: pipeline[1].batch.batch_size=0: must be >= 1
// Semantic errors locate the field with the parser's ParseInfoTree; a missing
// field is reported at the line of the message that should hold it.

#ifndef TPUSIM_SCENARIOS_SCENARIO_LOADER_H_
#define TPUSIM_SCENARIOS_SCENARIO_LOADER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/text_format.h"
#include "scenarios/scenario.pb.h"

namespace tpusim::scenarios {

// Limits on scenario files (tpusim choices; each violation is an error with
// file:LINE, never a crash):
// * protobuf's text parser nests messages at most this deep (a concatenate
//   stage costs 2 levels, a zip input 3): "file:LINE:COL: Message is too deep,
//   the parser exceeded the configured recursion limit of 64.";
inline constexpr int kMaxScenarioNesting = 64;
// * at most this many stages in all, nested pipelines included;
inline constexpr int kMaxScenarioStages = 1000;
// * a file_set name is 1 to 64 characters from [A-Za-z0-9_.-] and does not
//   start with '.' (it becomes a directory name: no "..", no "/");
inline constexpr size_t kMaxFileSetNameLength = 64;
// * the file is a regular file (not a directory, FIFO or device) of at most
//   16 MiB.
inline constexpr int64_t kMaxScenarioFileBytes = int64_t{16} << 20;

struct LoadedScenario {
  Scenario proto;
  // The name errors use ("scenarios/default.textproto").
  std::string source_name;
  // Relative file names and globs are resolved against this directory ("" = the
  // current one).
  std::string base_dir;
  // Where each field was written (null when the scenario was not parsed from
  // text).
  std::shared_ptr<const google::protobuf::TextFormat::ParseInfoTree> locations;
};

// Parses and validates `text`. `source_name` prefixes error messages;
// `base_dir` is stored in the result. Errors: InvalidArgument naming the line
// (1-based), column and field.
// `overrides` ("PATH=VALUE", scenarios/field_override.h) are applied in
// order after parsing and before validation, so the validator judges the
// scenario as overridden.
absl::StatusOr<LoadedScenario> ParseScenario(
    absl::string_view text, absl::string_view source_name,
    absl::string_view base_dir,
    const std::vector<std::string>& overrides = {});

// Reads `path` and parses it with ParseScenario (base_dir = the file's
// directory). NotFound when the file cannot be read.
absl::StatusOr<LoadedScenario> LoadScenarioFile(
    const std::string& path, const std::vector<std::string>& overrides = {});

// Validates an already built scenario (ParseScenario calls it). Errors as
// above, without line numbers when `scenario.locations` is null.
absl::Status ValidateScenario(const LoadedScenario& scenario);

// A file name written in the scenario (a pipeline's files, run.program):
// relative names against the scenario's base_dir, absolute ones as they are.
std::string ResolveScenarioPath(const LoadedScenario& scenario,
                                const std::string& path);

// An error about the field at `field_path` ("pipeline[2].text_line.glob",
// as the validator names fields) in the validator's format: InvalidArgument
// "source:LINE: path=value: problem" ("=value" omitted when empty; LINE is
// the line of the deepest field of the path that was written, omitted when
// unknown). For checks that need more than the file itself (a glob that
// matches nothing).
absl::Status ScenarioError(const LoadedScenario& scenario,
                           absl::string_view field_path,
                           absl::string_view value, absl::string_view problem);

// `status` (unless OK) with "source:LINE: " in front of its message, LINE
// being where the field at `field_path` (or the deepest part of it that was
// written) is; "source: " when unknown. For errors found after validation
// (`tpusim run` resolving its run section) whose message already names the
// field.
absl::Status LocateScenarioStatus(const LoadedScenario& scenario,
                                  absl::string_view field_path,
                                  const absl::Status& status);

// The cluster a scenario runs on.
struct ClusterLayout {
  int workers = 0;
  int replicas_per_worker = 0;
  std::string slice;  // "" for an explicit workers x replicas_per_worker layout
  int num_replicas() const { return workers * replicas_per_worker; }
};

// Resolves `cluster` (slice names through strategy/runtime/slice.h).
// InvalidArgument names the field (cluster.slice) and the problem.
absl::StatusOr<ClusterLayout> ResolveCluster(const LoadedScenario& scenario);

// "2.2" unless the scenario says otherwise.
std::string SemanticsOf(const Scenario& scenario);

// "AUTO", "FILE", "DATA", "OFF".
std::string ShardPolicyName(Scenario::ShardPolicy policy);

}  // namespace tpusim::scenarios

#endif  // TPUSIM_SCENARIOS_SCENARIO_LOADER_H_
