#include "scenarios/input_runner.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scenarios/pipeline_builder.h"
#include "strategy/cluster_resolver.h"
#include "strategy/data/distribute.h"
#include "strategy/data/input_context.h"
#include "strategy/runtime/host_backend.h"
#include "strategy/tpu_strategy.h"

namespace tpusim::scenarios {
namespace {

// True for the characters of a path component ("data", "set-01.tfrecord").
bool IsPathChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '-' || c == '.';
}

// `text` with the data directory replaced by "<data-dir>" where it appears as
// a path: at a boundary (not inside a longer name) and followed by '/' or the
// end of the path. `data_dir` is the resolved (absolute, normalized)
// directory, so "dataset" in a message never matches "--data-dir data".
std::string HideDataDirPath(absl::string_view text,
                            const std::string& data_dir) {
  if (data_dir.empty()) return std::string(text);
  std::string out;
  size_t from = 0;
  while (true) {
    const size_t at = text.find(data_dir, from);
    if (at == absl::string_view::npos) break;
    const size_t end = at + data_dir.size();
    const bool starts =
        at == 0 || (!IsPathChar(text[at - 1]) && text[at - 1] != '/');
    const bool ends =
        end == text.size() || text[end] == '/' || !IsPathChar(text[end]);
    if (starts && ends) {
      absl::StrAppend(&out, text.substr(from, at - from), "<data-dir>");
    } else {
      absl::StrAppend(&out, text.substr(from, end - from));
    }
    from = end;
  }
  absl::StrAppend(&out, text.substr(from));
  return out;
}

// The data directory as resolved (absolute, normalized: where the files are
// written) and as given (a scenario may name files under it as the user spelled
// it, e.g. "/tmp//d/x").
struct DataDirNames {
  std::string resolved;
  std::string given;
};

std::string HideDataDir(absl::string_view text, const DataDirNames& dir) {
  std::string out = HideDataDirPath(text, dir.resolved);
  if (dir.given != dir.resolved) out = HideDataDirPath(out, dir.given);
  return out;
}

// `status` with the data directory hidden (HideDataDir), so that messages
// naming synthetic files do not depend on where they were written (goldens
// stay machine-independent).
absl::Status WithoutDataDir(const absl::Status& status,
                            const DataDirNames& data_dir) {
  if (status.ok()) return status;
  return absl::Status(status.code(), HideDataDir(status.message(), data_dir));
}

// The data directory as an absolute, normalized path without a trailing '/'
// (the files are written under exactly this path, so it is what messages
// contain).
std::string ResolveDataDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir, ec);
  if (ec) p = dir;
  std::string out = p.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// A TPUStrategy on a HostBackend with the scenario's devices. The backend and
// resolver must outlive the strategy, so the three travel together.
struct HostStrategy {
  std::unique_ptr<runtime::HostBackend> backend;
  std::unique_ptr<strategy::TPUClusterResolver> resolver;
  std::unique_ptr<strategy::TPUStrategy> strategy;
};

absl::StatusOr<HostStrategy> MakeHostStrategy(const ClusterLayout& cluster,
                                              const std::string& semantics) {
  // The resolver lays out the devices (a slice name or plain workers x
  // replicas); the backend is built from exactly those devices.
  TPUSIM_ASSIGN_OR_RETURN(
      strategy::TPUClusterResolver resolver,
      cluster.slice.empty()
          ? strategy::TPUClusterResolver::CreatePlain(
                cluster.workers, cluster.replicas_per_worker)
          : strategy::TPUClusterResolver::Create(cluster.slice));
  HostStrategy h;
  h.backend = std::make_unique<runtime::HostBackend>(resolver.devices());
  h.resolver =
      std::make_unique<strategy::TPUClusterResolver>(std::move(resolver));
  strategy::TPUStrategyOptions options;
  options.semantics_version = semantics;
  TPUSIM_ASSIGN_OR_RETURN(h.strategy, strategy::TPUStrategy::Create(
                                          *h.backend, *h.resolver, options));
  return h;
}

// `ds` with its Options::max_memory set to `budget`.
data::Dataset WithMaxMemory(data::Dataset ds, common::Bytes budget) {
  if (!ds.ok()) return ds;
  data::Options options = ds.options();
  options.max_memory = budget;
  return ds.WithOptions(options);
}

// Keeps every step in the listing (RunInputScenario without a sink).
class KeepingSink final : public ListingSink {
 public:
  absl::Status Begin(const InputListing&) override { return absl::OkStatus(); }
  absl::Status Step(const InputStep& step) override {
    steps.push_back(step);
    return absl::OkStatus();
  }
  std::vector<InputStep> steps;
};

}  // namespace

absl::StatusOr<absl::StatusOr<data::DistributedDataset>>
DistributeScenarioPipeline(const LoadedScenario& scenario,
                           const FileSetPaths& files,
                           strategy::TPUStrategy& tpu,
                           common::Bytes max_memory) {
  const Scenario& sc = scenario.proto;
  const data::InputWorkers workers = tpu.data_input_workers();
  if (sc.api() == Scenario::DISTRIBUTE_DATASETS_FROM_FUNCTION) {
    // Build once for worker 0 first, so that problems of the scenario itself
    // (not TF errors) fail the run instead of ending the listing.
    const std::vector<data::InputContext> contexts =
        data::MakeInputContexts(workers);
    TPUSIM_RETURN_IF_ERROR(
        BuildPipeline(scenario, files, contexts[0]).status());
    return tpu.ExperimentalDistributeDatasetsFromFunction(
        // `scenario` and `files` must outlive the distributed dataset.
        [&scenario, &files, max_memory](const data::InputContext& ctx) {
          absl::StatusOr<data::Dataset> ds =
              BuildPipeline(scenario, files, ctx);
          return ds.ok() ? WithMaxMemory(*std::move(ds), max_memory)
                         : data::Dataset::FromError(ds.status());
        });
  }
  TPUSIM_ASSIGN_OR_RETURN(data::Dataset dataset,
                          BuildPipeline(scenario, files, std::nullopt));
  return tpu.ExperimentalDistributeDataset(
      WithMaxMemory(std::move(dataset), max_memory));
}

absl::StatusOr<InputListing> RunInputScenario(const LoadedScenario& scenario,
                                              const RunInputOptions& options) {
  KeepingSink sink;
  TPUSIM_ASSIGN_OR_RETURN(InputListing listing,
                          RunInputScenario(scenario, options, sink));
  listing.steps = std::move(sink.steps);
  return listing;
}

absl::StatusOr<InputListing> RunInputScenario(const LoadedScenario& scenario,
                                              const RunInputOptions& options,
                                              ListingSink& sink) {
  const Scenario& sc = scenario.proto;
  if (sc.pipeline_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        scenario.source_name, ": the scenario has no pipeline",
        " (inspect-input lists what a dataset pipeline gives "
        "each replica)",
        sc.has_run() ? "; this scenario's run section trains on synthetic "
                       "batches: see them with `tpusim run` (the step) or "
                       "`tpusim compile` (its memory)"
                     : ""));
  }
  TPUSIM_ASSIGN_OR_RETURN(ClusterLayout cluster, ResolveCluster(scenario));
  InputListing listing;
  listing.name = sc.name();
  listing.semantics = SemanticsOf(sc);
  listing.shard_policy = ShardPolicyName(sc.shard_policy());
  listing.api = Scenario::Api_Name(sc.api());
  // The input side runs through the real facade, as a user's program would: a
  // HostBackend laid out like the slice (or plain workers x replicas), a
  // resolver bound to it and a TPUStrategy whose input workers come from the
  // resolver (spec (a)).
  TPUSIM_ASSIGN_OR_RETURN(HostStrategy host,
                          MakeHostStrategy(cluster, listing.semantics));
  strategy::TPUStrategy& tpu = *host.strategy;
  const data::InputWorkers workers = tpu.data_input_workers();
  listing.workers = workers.num_workers();
  listing.replicas = tpu.num_replicas_in_sync();
  listing.replica_workers.assign(listing.replicas, 0);
  for (int w = 0; w < workers.num_workers(); ++w) {
    for (int r : workers.replicas_per_worker[w]) listing.replica_workers[r] = w;
  }

  DataDirNames data_dir;
  data_dir.given =
      options.data_dir.empty() ? DefaultDataDir() : options.data_dir;
  while (data_dir.given.size() > 1 && data_dir.given.back() == '/')
    data_dir.given.pop_back();
  data_dir.resolved = ResolveDataDir(data_dir.given);
  TPUSIM_ASSIGN_OR_RETURN(FileSetPaths files,
                          MaterializeFileSets(scenario, data_dir.resolved));

  TPUSIM_ASSIGN_OR_RETURN(
      absl::StatusOr<data::DistributedDataset> dist,
      DistributeScenarioPipeline(scenario, files, tpu, options.max_memory));
  if (!dist.ok()) {
    TPUSIM_RETURN_IF_ERROR(sink.Begin(listing));
    listing.end = WithoutDataDir(dist.status(), data_dir);
    return listing;
  }
  for (const std::string& w : dist->warnings()) {
    listing.warnings.push_back(HideDataDir(w, data_dir));
  }
  if (options.explain) {
    for (data::WorkerExplanation e : dist->explanations()) {
      e.before = HideDataDir(e.before, data_dir);
      e.after = HideDataDir(e.after, data_dir);
      e.shard_reason = HideDataDir(e.shard_reason, data_dir);
      listing.explain.push_back(std::move(e));
    }
  }
  TPUSIM_RETURN_IF_ERROR(sink.Begin(listing));
  absl::StatusOr<data::DistributedIterator> it = dist->MakeIterator();
  if (!it.ok()) {
    listing.end = WithoutDataDir(it.status(), data_dir);
    return listing;
  }
  const bool has_sparse = data::HasSparseComponent(it->element_spec());
  for (int64_t step = 0;; ++step) {
    listing.end_at_step = step;
    if (step >= options.max_steps) {
      listing.end = absl::OkStatus();
      break;
    }
    absl::StatusOr<strategy::PerReplica<data::Element>> next = it->GetNext();
    if (!next.ok()) {
      listing.end = WithoutDataDir(next.status(), data_dir);
      break;
    }
    InputStep s;
    s.step = step;
    absl::Status unboxed = absl::OkStatus();
    for (int r = 0; r < next->num_replicas() && unboxed.ok(); ++r) {
      ReplicaInput in;
      in.replica = r;
      in.worker = listing.replica_workers[r];
      in.element = (*next)[r];
      if (has_sparse) {
        const auto specs = it->element_spec().FlattenWithPaths();
        const auto leaves = in.element.Flatten();
        for (size_t k = 0; k < specs.size() && k < leaves.size(); ++k) {
          if (!specs[k].second->sparse.has_value()) continue;
          absl::StatusOr<data::SparseTensor> st =
              data::UnboxSparse(*leaves[k], *specs[k].second, specs[k].first);
          if (!st.ok()) {
            unboxed = st.status();
            break;
          }
          in.sparse.emplace_back(specs[k].first, *std::move(st));
        }
      }
      s.replicas.push_back(std::move(in));
    }
    if (!unboxed.ok()) {
      listing.end = WithoutDataDir(unboxed, data_dir);
      break;
    }
    TPUSIM_RETURN_IF_ERROR(sink.Step(s));
  }
  return listing;
}

}  // namespace tpusim::scenarios
