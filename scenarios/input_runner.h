// scenarios/input_runner.h
//
// Runs a scenario's input side: builds the pipeline, distributes it over the
// scenario's input workers the way TPUStrategy does
// (strategy/data/distribute.h) and records what every replica receives, step
// by step, until the data ends, an error occurs, or a step limit is reached.
// `tpusim inspect-input` prints the result (tools/inspect_input_report.h).
//
//   TPUSIM_ASSIGN_OR_RETURN(LoadedScenario s, LoadScenarioFile(path));
//   RunInputOptions options;
//   options.max_steps = 3;
//   TPUSIM_ASSIGN_OR_RETURN(InputListing listing,
//                           RunInputScenario(s, options));
//   listing.steps[0].replicas[2].element  // replica 2's element at step 0
//
// The first error of the run (TF raising in experimental_distribute_dataset or
// in get_next) ends the listing and is recorded in `end`; it is not a failure
// of RunInputScenario, which fails only for problems of the scenario itself
// (see pipeline_builder.h) or of writing its synthetic files.

#ifndef TPUSIM_SCENARIOS_INPUT_RUNNER_H_
#define TPUSIM_SCENARIOS_INPUT_RUNNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "scenarios/pipeline_builder.h"
#include "scenarios/scenario_loader.h"
#include "strategy/data/dataset.h"
#include "strategy/data/distribute.h"
#include "strategy/data/sparse.h"
#include "strategy/tpu_strategy.h"

namespace tpusim::scenarios {

struct ReplicaInput {
  int replica = 0;
  int worker = 0;
  data::Element element;
  // The element's sparse components (their spec has TensorSpec::sparse) as
  // SparseTensors, by tf.nest path in flattening order: what TF's iterator
  // hands out (DeserializeSparse of the boxes that `element` holds).
  std::vector<std::pair<std::string, data::SparseTensor>> sparse;
};

struct InputStep {
  int64_t step = 0;
  std::vector<ReplicaInput> replicas;  // replica order
};

struct InputListing {
  std::string name;          // the scenario's name ("" when unset)
  std::string semantics;     // "2.2" / "2.4" / "2.21"
  std::string shard_policy;  // "AUTO", ...
  std::string api;           // "DISTRIBUTE_DATASET", ...
  int workers = 0;
  int replicas = 0;
  std::vector<int> replica_workers;  // worker of replica r
  std::vector<InputStep> steps;
  // How the listing ended: OutOfRange at the end of data; the error that ended
  // it; OK when the step limit stopped it (message "stopped after K steps").
  absl::Status end;
  int64_t end_at_step = 0;  // the step at which it ended (= steps.size())
  std::vector<std::string> warnings;
  // With RunInputOptions::explain: why each worker got its pipeline (worker
  // order; empty when the dataset could not be distributed).
  std::vector<data::WorkerExplanation> explain;
};

struct RunInputOptions {
  // At most this many steps are listed; reaching it ends the listing with OK
  // (without fetching step max_steps, so nothing past the limit is evaluated).
  int64_t max_steps = 1000;
  // Where synthetic file sets are written (pipeline_builder.h,
  // DefaultDataDir()). Resolved to an absolute, normalized path; messages
  // name it "<data-dir>" (only where it appears as that path).
  std::string data_dir;
  // The memory budget of each input buffer (data::Options::max_memory).
  common::Bytes max_memory = data::kDefaultMaxMemory;
  // Fill InputListing::explain (before the header goes to the sink).
  bool explain = false;
};

// Receives a listing while it is made, so that a caller can print step by
// step (a long run shows progress; a killed run keeps what was printed).
class ListingSink {
 public:
  virtual ~ListingSink() = default;
  // Called once, before the first step: every field of `header` but `steps`,
  // `end` and `end_at_step` is set (warnings included).
  virtual absl::Status Begin(const InputListing& header) = 0;
  // Called for every step, in order. An error stops the run: RunInputScenario
  // returns it.
  virtual absl::Status Step(const InputStep& step) = 0;
};

// Runs the input side of `scenario`. Errors: the cluster's and pipeline
// builder's (InvalidArgument naming the field), the file system's when writing
// file sets.
absl::StatusOr<InputListing> RunInputScenario(const LoadedScenario& scenario,
                                              const RunInputOptions& options);
// The same, handing the header and every step to `sink` as they are made; the
// returned listing then has no `steps` (its other fields are set), so memory
// stays bounded by one step.
absl::StatusOr<InputListing> RunInputScenario(const LoadedScenario& scenario,
                                              const RunInputOptions& options,
                                              ListingSink& sink);

// Builds the scenario's pipeline and distributes it through `tpu` as the
// scenario says: experimental_distribute_dataset (the shard policy is the
// dataset option BuildPipeline attaches), or
// experimental_distribute_datasets_from_function with each input worker's
// InputContext; every input buffer gets the `max_memory` budget. The outer
// Status is a problem of the scenario itself (BuildPipeline's); the inner one
// is what TF raises while distributing. `tpusim run` feeds workloads from it.
absl::StatusOr<absl::StatusOr<data::DistributedDataset>>
DistributeScenarioPipeline(const LoadedScenario& scenario,
                           const FileSetPaths& files,
                           strategy::TPUStrategy& tpu,
                           common::Bytes max_memory);

}  // namespace tpusim::scenarios

#endif  // TPUSIM_SCENARIOS_INPUT_RUNNER_H_
