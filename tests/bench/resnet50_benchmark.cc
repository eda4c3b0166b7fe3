// Speed of `tpusim run` on a pod (issue 10).
//
// BM_ResNet50Step/<slice>: one ResNet-50 training step (models/resnet50: bf16,
// 224x224, forward, hand-written backward, gradients all-reduced in the default
// 25 MiB buckets as backward produces them, SGD), data parallel with abstract
// tensors, 8 images per chip (the MLPerf configuration of sheet B.2 at 4096
// chips), through scenarios::RunTraining exactly as `tpusim run` does it
// (scenario, TPUStrategy, variables, tracing, compile, simulation), with spans
// off (pod.options.record_spans: false). Slices: v4-128 (64 chips), v4-1024
// (512 chips) and v4-8192 (4096 chips, 16x16x16). Prints the wall time, the
// peak RSS, the simulated step time, the events simulated (kernels + collective
// member starts + network events) and the events per wall second. Targets: < 5
// s wall and < 2 GiB RSS at 4096 chips; a constant wall time per event.
//
// SystemC elaborates once per process, so each case runs in its own child:
//   resnet50_benchmark                      # every case, one child each
//   resnet50_benchmark --sim_case=v4-8192   # one case in this process

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "common/status_macros.h"
#include "tests/bench/sim_case_main.h"
#include "scenarios/scenario_loader.h"
#include "scenarios/train_runner.h"
#include "strategy/runtime/slice.h"

namespace tpusim::scenarios {
namespace {

const char* const kCases[] = {"v4-128", "v4-1024", "v4-8192"};

double PeakRssMb() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

absl::Status RunResNet50(const std::string& slice, benchmark::State& state) {
  const auto t0 = std::chrono::steady_clock::now();
  TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                          runtime::ParseSlice(slice));
  const std::string text = absl::StrCat(
      "name: \"resnet50_bench\"\n"
      "cluster { slice: \"",
      slice, "\" }\n", "global_batch_size: ", 8 * layout.num_chips, "\n",
      "run {\n"
      "  pod { slice: \"",
      slice,
      "\" options { record_spans: false } }\n"
      "  workload { name: \"resnet50\" params { key: \"dtype\" value: "
      "\"bfloat16\" } }\n"
      "  steps: 1\n"
      "}\n");
  TPUSIM_ASSIGN_OR_RETURN(LoadedScenario scenario,
                          ParseScenario(text, "resnet50_bench", "."));
  TPUSIM_ASSIGN_OR_RETURN(TrainResult r, RunTraining(scenario, {}));
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  const runtime::StepProfile& st = r.profile.steps(r.profile.steps_size() - 1);
  const double sim_ms = (st.end_ps() - st.start_ps()) * 1e-9;
  const double events = static_cast<double>(r.sim_kernels + r.sim_collectives +
                                            r.sim_network_events);
  state.counters["sim_step_ms"] = sim_ms;
  state.counters["wall_s"] = wall;
  state.counters["events"] = events;
  state.counters["events_per_wall_s"] = events / wall;
  state.counters["peak_rss_MB"] = PeakRssMb();
  std::printf(
      "%-8s %5d chips  global batch %6lld  sim step %8.3f ms (exposed "
      "collective %.3f ms)  "
      "wall %6.2f s  events %10.0f (%lld kernels, %lld collective starts, %lld "
      "network)  "
      "%6.2f M events/s  %.3f us/event  peak RSS %7.1f MB\n",
      slice.c_str(), r.num_chips, static_cast<long long>(r.global_batch),
      sim_ms, st.exposed_collective_ps() * 1e-9, wall, events,
      static_cast<long long>(r.sim_kernels),
      static_cast<long long>(r.sim_collectives),
      static_cast<long long>(r.sim_network_events), events / wall / 1e6,
      wall / events * 1e6, PeakRssMb());
  std::fflush(stdout);
  return absl::OkStatus();
}

void BM_Case(benchmark::State& state, const char* name) {
  for (auto _ : state) {
    absl::Status s = RunResNet50(name, state);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
  }
}

}  // namespace
}  // namespace tpusim::scenarios

extern "C" int sc_main(int argc, char* argv[]) {
  return tpusim::bench::RunSimCases(argc, argv, "sim_case", tpusim::scenarios::kCases, "BM_ResNet50Step",
                                    tpusim::scenarios::BM_Case);
}
