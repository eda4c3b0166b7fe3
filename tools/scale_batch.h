// tools/scale_batch.h
//
// `--scale-batch=per-replica|global` of `tpusim run` and `tpusim sweep`: what
// stays fixed when a --set changes the number of replicas (a sweep over
// cluster.slice, say).
//
//   global       (default) global_batch_size stays as the file (or a --set)
//                has it; the per-replica batch changes with the replicas.
//   per-replica  the per-replica batch stays the file's: its
//                global_batch_size over its own replicas (before any --set);
//                global_batch_size becomes that times the replicas after the
//                --sets. A --set of global_batch_size with it is a usage
//                error (exit 2): the two would fight over the same field.
//
//   TPUSIM_ASSIGN_OR_RETURN(ScaleBatch mode, ParseScaleBatchFlag(args));
//   TPUSIM_ASSIGN_OR_RETURN(LoadedScenario s,
//                           LoadRunScenario(path, args.GetAll("set"), mode));

#ifndef TPUSIM_TOOLS_SCALE_BATCH_H_
#define TPUSIM_TOOLS_SCALE_BATCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scenarios/scenario_loader.h"
#include "tools/cli.h"

namespace tpusim::tools {

enum class ScaleBatch { kGlobal, kPerReplica };

// The --scale-batch flag (absent: kGlobal). A usage error for a value other
// than per-replica or global, and for per-replica together with a --set of
// global_batch_size.
absl::StatusOr<ScaleBatch> ParseScaleBatchFlag(const ParsedArgs& args);

// The replicas a scenario's run has: run.device_assignment.num_replicas (1
// when absent) with a device assignment, else every device of its slice (the
// pod's, which follows cluster.slice) or cluster layout.
absl::StatusOr<int64_t> RunReplicas(const scenarios::LoadedScenario& scenario);

// Loads `path` with `sets` applied (scenarios::LoadScenarioFile); with
// kPerReplica, then sets global_batch_size to the file's per-replica batch
// times the replicas after the sets (and validates the result again).
absl::StatusOr<scenarios::LoadedScenario> LoadRunScenario(
    const std::string& path, const std::vector<std::string>& sets,
    ScaleBatch mode);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_SCALE_BATCH_H_
