// scenarios/pipeline_builder.h
//
// Turns a validated scenario's `pipeline` into a tf.data graph
// (strategy/data/dataset.h), and writes the synthetic TFRecord file sets the
// scenario declares.
//
//   TPUSIM_ASSIGN_OR_RETURN(LoadedScenario s, LoadScenarioFile(path));
//   TPUSIM_ASSIGN_OR_RETURN(FileSetPaths files, MaterializeFileSets(s,
//   DefaultDataDir())); TPUSIM_ASSIGN_OR_RETURN(data::Dataset ds,
//   BuildPipeline(s, files, std::nullopt)); if (!ds.ok()) ...  // TF would have
//   raised while building the dataset (e.g. no file matched
//                      // a list_files pattern): ds.status()
//
// Two kinds of errors: a Status from BuildPipeline is a problem of the scenario
// itself (a glob that matches nothing, an unknown file set) and names the field
// path; a Dataset that is not ok() is what TensorFlow would raise while
// building that pipeline, and the caller reports it as the run's outcome.

#ifndef TPUSIM_SCENARIOS_PIPELINE_BUILDER_H_
#define TPUSIM_SCENARIOS_PIPELINE_BUILDER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scenarios/scenario_loader.h"
#include "strategy/data/dataset.h"
#include "strategy/data/input_context.h"

namespace tpusim::scenarios {

// File set name → the paths of its files, in file order.
using FileSetPaths = std::map<std::string, std::vector<std::string>>;

// $TPUSIM_DATA_DIR if set, else "$TMPDIR/tpusim-data" (TMPDIR defaults to
// /tmp).
std::string DefaultDataDir();

// Writes every file_set of the scenario under `data_dir` (created if missing)
// and returns their paths. File set `name` lives in "<data_dir>/<name>-<16 hex
// digits of a fingerprint of the set's definition>/" as
// "<name>-<f:05d>-of-<n:05d>.tfrecord". The files are rewritten on every call
// (write to a temporary name, then rename, so concurrent runs never see a
// partial file); their bytes depend only on the definition. Errors: the file
// system's (naming the path).
absl::StatusOr<FileSetPaths> MaterializeFileSets(const LoadedScenario& scenario,
                                                 const std::string& data_dir);

// The serialized tf.train.Example of record `record` of file `file` in `set`
// (see scenario.proto, FileSet).
std::string SyntheticExample(const FileSet& set, int file, int record);

// Builds the scenario's main pipeline with its shard policy attached as the
// dataset option. `input_context` is the worker's context with
// DISTRIBUTE_DATASETS_FROM_FUNCTION (used by use_global_batch and shard
// by_input_context), nullopt otherwise. Errors: see above.
absl::StatusOr<data::Dataset> BuildPipeline(
    const LoadedScenario& scenario, const FileSetPaths& file_sets,
    const std::optional<data::InputContext>& input_context);

// tf.data AutoShardPolicy of the scenario (AUTO when unset).
data::AutoShardPolicy ShardPolicyOf(const Scenario& scenario);

}  // namespace tpusim::scenarios

#endif  // TPUSIM_SCENARIOS_PIPELINE_BUILDER_H_
