// The scenario loader on hostile text: ParseScenario (protobuf's text parser
// and every validation rule) and, for a valid scenario, ResolveCluster.
//
// Contract (scenarios/scenario_loader.h): every error is InvalidArgument and
// its message starts with the file name.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "scenarios/scenario_loader.h"
#include "tests/fuzz/contract.h"
#include "tests/fuzz/harnesses.h"

namespace tpusim::fuzz {
namespace {

constexpr char kSource[] = "fuzz.textproto";

void ExpectLoaderError(const absl::Status& s, absl::string_view what) {
  FUZZ_EXPECT(s.code() == absl::StatusCode::kInvalidArgument, "scenario", what,
              " returned ", s.ToString());
  FUZZ_EXPECT(absl::StartsWith(s.message(), kSource), "scenario", what,
              " error does not name the file: ", s.ToString());
}

}  // namespace

void FuzzScenario(absl::string_view input) {
  // A base directory that does not exist: validation must not touch files.
  absl::StatusOr<scenarios::LoadedScenario> loaded =
      scenarios::ParseScenario(input, kSource, "/nonexistent-fuzz-dir");
  if (!loaded.ok()) {
    ExpectLoaderError(loaded.status(), "ParseScenario");
    return;
  }
  absl::StatusOr<scenarios::ClusterLayout> cluster =
      scenarios::ResolveCluster(*loaded);
  if (!cluster.ok()) {
    ExpectLoaderError(cluster.status(), "ResolveCluster");
    return;
  }
  FUZZ_EXPECT(cluster->workers >= 1 && cluster->replicas_per_worker >= 1,
              "scenario", "ResolveCluster accepted ", cluster->workers,
              " workers x ", cluster->replicas_per_worker, " replicas");
  const std::string semantics = scenarios::SemanticsOf(loaded->proto);
  FUZZ_EXPECT(semantics == "2.2" || semantics == "2.4" || semantics == "2.21",
              "scenario",
              "validation accepted semantics \"", semantics, "\"");
}

}  // namespace tpusim::fuzz
