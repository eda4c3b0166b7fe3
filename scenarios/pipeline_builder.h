// scenarios/pipeline_builder.h
//
// Turns a validated scenario's `pipeline` into a tf.data graph
// (strategy/data/dataset.h), and writes the synthetic TFRecord file sets the
// scenario declares.
//
//   TPUSIM_ASSIGN_OR_RETURN(LoadedScenario s, LoadScenarioFile(path));
//   TPUSIM_ASSIGN_OR_RETURN(FileSetPaths files,
//                           MaterializeFileSets(s, DefaultDataDir()));
//   TPUSIM_ASSIGN_OR_RETURN(data::Dataset ds,
//                           BuildPipeline(s, files, std::nullopt));
//   if (!ds.ok()) ...  // TF would have raised while building the dataset
//
// Two kinds of errors: a Status from BuildPipeline is a problem of the
// scenario itself (a glob that matches nothing, an unknown file set) and names
// the field path; a Dataset that is not ok() is what TensorFlow would raise
// while building that pipeline (e.g. no file matched a list_files pattern),
// and the caller reports it as the run's outcome.

#ifndef TPUSIM_SCENARIOS_PIPELINE_BUILDER_H_
#define TPUSIM_SCENARIOS_PIPELINE_BUILDER_H_

#include <cstdint>
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

// tpusim choice: the file sets a pipeline reads may take at most this many
// bytes in all (1 GiB), bounded before anything is written.
inline constexpr int64_t kMaxFileSetBytes = int64_t{1} << 30;

// Writes the file sets the scenario's pipeline reads (a file_set no stage
// names is never written) under `data_dir` (created if missing) and returns
// their paths. File set `name` lives in "<data_dir>/<name>-<16 hex digits of a
// fingerprint of the set's definition>/" as
// "<name>-<f:05d>-of-<n:05d>.tfrecord" with a MANIFEST written last (the
// definition, then every file with its size). A directory whose MANIFEST
// matches the definition and whose files all have the listed sizes is reused as
// it is; otherwise the set is written again (each file to a temporary name,
// then renamed, so concurrent runs never see a partial file; the records carry
// CRCs, so a corrupted byte is DataLoss when read). Their bytes depend only on
// the definition. Errors: InvalidArgument naming the file_set (file:LINE) when
// the sets read would take more than kMaxFileSetBytes; the file system's
// (naming the path).
absl::StatusOr<FileSetPaths> MaterializeFileSets(const LoadedScenario& scenario,
                                                 const std::string& data_dir);

// An upper bound of the bytes `set` takes on disk: every record counted at
// the size of the last one (the largest).
int64_t FileSetMaxBytes(const FileSet& set);

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
