// scenarios/scenario_loader.h
//
// Loads and validates scenario text protos (scenarios/scenario.proto).
//
//   TPUSIM_ASSIGN_OR_RETURN(LoadedScenario s,
//   LoadScenarioFile("scenarios/default.textproto"));
//   TPUSIM_ASSIGN_OR_RETURN(ClusterLayout cluster, ResolveCluster(s));
//
// Every error is InvalidArgument (NotFound for an unreadable file) with one
// line that names the file, the LINE and the FIELD:
//   "default.textproto:4:11: Message type \"tpusim.scenarios.RangeStage\" has
//   no field named
//    \"stp\"."                                        (a syntax error from
//    protobuf's parser)
//   "default.textproto:5: pipeline[1].batch.batch_size=0: must be >= 1"   (a
//   semantic error)
// Semantic errors locate the field with the parser's ParseInfoTree; a missing
// field is reported at the line of the message that should hold it.

#ifndef TPUSIM_SCENARIOS_SCENARIO_LOADER_H_
#define TPUSIM_SCENARIOS_SCENARIO_LOADER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/text_format.h"
#include "scenarios/scenario.pb.h"

namespace tpusim::scenarios {

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
absl::StatusOr<LoadedScenario> ParseScenario(absl::string_view text,
                                             absl::string_view source_name,
                                             absl::string_view base_dir);

// Reads `path` and parses it with ParseScenario (base_dir = the file's
// directory). NotFound when the file cannot be read.
absl::StatusOr<LoadedScenario> LoadScenarioFile(const std::string& path);

// Validates an already built scenario (ParseScenario calls it). Errors as
// above, without line numbers when `scenario.locations` is null.
absl::Status ValidateScenario(const LoadedScenario& scenario);

// The cluster a scenario runs on.
struct ClusterLayout {
  int workers = 0;
  int replicas_per_worker = 0;
  std::string slice;  // "" for an explicit workers x replicas_per_worker layout
  int num_replicas() const { return workers * replicas_per_worker; }
};

// Resolves `cluster` (slice names through scenarios/local_slice.h).
// InvalidArgument names the field (cluster.slice) and the problem.
absl::StatusOr<ClusterLayout> ResolveCluster(const LoadedScenario& scenario);

// "2.2" unless the scenario says otherwise.
std::string SemanticsOf(const Scenario& scenario);

// "AUTO", "FILE", "DATA", "OFF".
std::string ShardPolicyName(Scenario::ShardPolicy policy);

}  // namespace tpusim::scenarios

#endif  // TPUSIM_SCENARIOS_SCENARIO_LOADER_H_
