// tests/bench/large_cluster_benchmark.cc
//
// One step of `tpusim inspect-input` on the largest real slice layouts: W hosts
// x R devices, a global batch of 2 rows per replica from range(), shard policy
// AUTO (which falls back to DATA sharding for a range: every worker's pipeline
// reads the whole global batch and keeps its share). The target (issue 7): the
// largest real slices (1024-1536 hosts x 4-8 devices) list one step in under
// 2 s. Each iteration builds the strategy, distributes the dataset (rebatch,
// per-worker clone, auto-shard) and lists step 0, as the CLI does.
//
//   build/release/tests/bench/large_cluster_benchmark
//
// Before the fix (shard read and dropped every other worker's rows, O(W^2)
// per step), 4096 x 8 took 31 s of CPU for one step; 1024 x 8 about 2 s.

#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "common/check.h"
#include "scenarios/input_runner.h"
#include "scenarios/scenario_loader.h"

namespace tpusim::scenarios {
namespace {

void BM_ListOneStep(benchmark::State& state) {
  const int64_t workers = state.range(0);
  const int64_t replicas = state.range(1);
  const int64_t global_batch = 2 * workers * replicas;
  const std::string text = absl::StrCat(
      "cluster { workers: ", workers, " replicas_per_worker: ", replicas,
      " }\n", "pipeline { range { stop: ", 4 * global_batch, " } }\n",
      "pipeline { batch { batch_size: ", global_batch, " } }\n",
      "global_batch_size: ", global_batch, "\n");
  absl::StatusOr<LoadedScenario> scenario =
      ParseScenario(text, "large_cluster", "");
  TPUSIM_CHECK(scenario.ok()) << scenario.status();
  RunInputOptions options;
  options.max_steps = 1;
  for (auto _ : state) {
    absl::StatusOr<InputListing> listing = RunInputScenario(*scenario, options);
    TPUSIM_CHECK(listing.ok()) << listing.status();
    TPUSIM_CHECK(listing->steps.size() == 1 &&
                 listing->steps[0].replicas.size() ==
                     static_cast<size_t>(workers * replicas));
    benchmark::DoNotOptimize(listing->steps[0].replicas.back());
  }
  state.counters["replicas"] = static_cast<double>(workers * replicas);
}
BENCHMARK(BM_ListOneStep)
    ->ArgNames({"workers", "replicas_per_worker"})
    ->Args({1024, 4})
    ->Args({1024, 8})
    ->Args({1536, 4})
    ->Args({1536, 8})
    ->Args({4096, 8})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim::scenarios
