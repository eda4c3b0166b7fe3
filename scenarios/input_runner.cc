#include "scenarios/input_runner.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scenarios/pipeline_builder.h"
#include "strategy/data/distribute.h"
#include "strategy/data/input_context.h"

namespace tpusim::scenarios {

absl::StatusOr<InputListing> RunInputScenario(const LoadedScenario& scenario,
                                              const RunInputOptions& options) {
  const Scenario& sc = scenario.proto;
  TPUSIM_ASSIGN_OR_RETURN(ClusterLayout cluster, ResolveCluster(scenario));
  InputListing listing;
  listing.name = sc.name();
  listing.semantics = SemanticsOf(sc);
  listing.shard_policy = ShardPolicyName(sc.shard_policy());
  listing.api = Scenario::Api_Name(sc.api());
  listing.workers = cluster.workers;
  listing.replicas = cluster.num_replicas();
  const data::InputWorkers workers =
      data::InputWorkers::Uniform(cluster.workers, cluster.replicas_per_worker);
  listing.replica_workers.assign(listing.replicas, 0);
  for (int w = 0; w < workers.num_workers(); ++w) {
    for (int r : workers.replicas_per_worker[w]) listing.replica_workers[r] = w;
  }

  const std::string data_dir =
      options.data_dir.empty() ? DefaultDataDir() : options.data_dir;
  TPUSIM_ASSIGN_OR_RETURN(FileSetPaths files,
                          MaterializeFileSets(scenario, data_dir));
  data::DistributeOptions distribute_options;
  distribute_options.semantics_version = listing.semantics;

  absl::StatusOr<data::DistributedDataset> dist =
      absl::UnknownError("not distributed");
  if (sc.api() == Scenario::DISTRIBUTE_DATASETS_FROM_FUNCTION) {
    // Build once for worker 0 first, so that problems of the scenario itself
    // (not TF errors) fail the run instead of ending the listing.
    const std::vector<data::InputContext> contexts =
        data::MakeInputContexts(workers);
    TPUSIM_RETURN_IF_ERROR(
        BuildPipeline(scenario, files, contexts[0]).status());
    dist = data::DistributeDatasetsFromFunction(
        [&](const data::InputContext& ctx) {
          absl::StatusOr<data::Dataset> ds =
              BuildPipeline(scenario, files, ctx);
          return ds.ok() ? *std::move(ds)
                         : data::Dataset::FromError(ds.status());
        },
        workers, distribute_options);
  } else {
    TPUSIM_ASSIGN_OR_RETURN(data::Dataset dataset,
                            BuildPipeline(scenario, files, std::nullopt));
    dist = data::DistributeDataset(dataset, workers, distribute_options);
  }
  if (!dist.ok()) {
    listing.end = dist.status();
    return listing;
  }
  listing.warnings = dist->warnings();
  absl::StatusOr<data::DistributedIterator> it = dist->MakeIterator();
  if (!it.ok()) {
    listing.end = it.status();
    return listing;
  }
  for (int64_t step = 0;; ++step) {
    listing.end_at_step = step;
    if (step >= options.max_steps) {
      listing.end = absl::OkStatus();
      break;
    }
    absl::StatusOr<strategy::PerReplica<data::Element>> next = it->GetNext();
    if (!next.ok()) {
      listing.end = next.status();
      break;
    }
    InputStep s;
    s.step = step;
    for (int r = 0; r < next->num_replicas(); ++r) {
      s.replicas.push_back({r, listing.replica_workers[r], (*next)[r]});
    }
    listing.steps.push_back(std::move(s));
  }
  return listing;
}

}  // namespace tpusim::scenarios
