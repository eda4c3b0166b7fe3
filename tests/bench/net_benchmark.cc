// Speed of the ICI model (issue 8): a 64 MiB all-reduce with contention
// modelled on 2-D tori 4x4 ... 64x64, a 16x16x16 3-D torus and a ring of
// 1024, v5e/v4 links (B from the presets), wraparound forced on.
//
// SystemC elaborates once per process, so each case runs in a child process:
//   net_benchmark                      # every case, one child each
//   net_benchmark --net_case=64x64     # one case in this process
//   net_benchmark --net_threads=2      # NetworkOptions::threads (default 1)
// Each prints the simulated time, the wall time (elaboration + run), the peak
// RSS of its process, the messages the algorithm sent and messages per wall
// second. Targets (issue 8): 64x64 < 2.3 s and < 290 MB; ring-1024 < 1 s;
// constant wall time per message.

#include <sys/resource.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "tests/bench/sim_case_main.h"
#include "common/status_macros.h"
#include "sim/chip/chip_preset.h"
#include "sim/kernel.h"
#include "sim/net/collective_runner.h"
#include "sim/net/network.h"
#include "sim/net_preset.h"
#include "strategy/runtime/slice.h"

namespace tpusim::sim::net {
namespace {

struct Case {
  const char* name;
  const char* generation;
  std::array<int, 3> mesh;
  Algorithm algorithm;
};

// --net_threads=N (kept in argv: the children get it too).
int g_threads = 1;

const Case kCases[] = {
    {"4x4", "v5e", {4, 4, 1}, Algorithm::kAuto},
    {"8x8", "v5e", {8, 8, 1}, Algorithm::kAuto},
    {"16x16", "v5e", {16, 16, 1}, Algorithm::kAuto},
    {"32x32", "v5e", {32, 32, 1}, Algorithm::kAuto},
    {"64x64", "v5e", {64, 64, 1}, Algorithm::kAuto},
    {"16x16x16", "v4", {16, 16, 16}, Algorithm::kAuto},
    {"ring-1024", "v5e", {1024, 1, 1}, Algorithm::kRing},
    {"ring-1024-bidir", "v5e", {1024, 1, 1}, Algorithm::kAuto},
};

double PeakRssMb() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // KiB on Linux
}

absl::Status RunCase(const Case& c, benchmark::State& state) {
  const auto t0 = std::chrono::steady_clock::now();
  TPUSIM_ASSIGN_OR_RETURN(const runtime::TpuGeneration* g,
                          runtime::FindTpuGeneration(c.generation));
  TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                          runtime::LayoutCustomChipMesh(*g, c.mesh));
  TPUSIM_ASSIGN_OR_RETURN(Topology topology,
                          Topology::Create(layout, WrapMode::kOn));
  TPUSIM_ASSIGN_OR_RETURN(const ChipPreset* preset,
                          FindChipPreset(c.generation));
  TPUSIM_ASSIGN_OR_RETURN(NetConfig config, NetConfigFromPreset(*preset));
  std::unique_ptr<Network> network;
  TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<KernelSession> session,
                          KernelSession::Create([&]() -> absl::Status {
                            NetworkOptions options;
                            options.threads = g_threads;
                            TPUSIM_ASSIGN_OR_RETURN(
                                network,
                                Network::Create(topology, config, options));
                            return absl::OkStatus();
                          }));
  TPUSIM_ASSIGN_OR_RETURN(
      auto groups, GroupPartition::Create(topology, {AllDevices(topology)}));
  CollectiveRequest r;
  r.op = CollectiveOp::kAllReduce;
  r.bytes = 64 << 20;
  r.algorithm = c.algorithm;
  r.groups = groups;
  const auto t1 = std::chrono::steady_clock::now();
  TPUSIM_ASSIGN_OR_RETURN(
      std::vector<JobResult> res,
      RunCollectives(*session, *network, {{r, AllDevices(topology)}}));
  const auto t2 = std::chrono::steady_clock::now();
  int64_t messages = 0;
  for (int d = 0; d < topology.num_devices(); ++d) {
    messages += network->endpoint(d).stats().messages_sent;
  }
  const double elab = std::chrono::duration<double>(t1 - t0).count();
  const double run = std::chrono::duration<double>(t2 - t1).count();
  const double sim_s = (res[0].end - res[0].start).seconds();
  state.counters["sim_time_us"] = sim_s * 1e6;
  state.counters["wall_s"] = elab + run;
  state.counters["elab_s"] = elab;
  state.counters["peak_rss_MB"] = PeakRssMb();
  state.counters["messages"] = static_cast<double>(messages);
  state.counters["msgs_per_wall_s"] = messages / (elab + run);
  state.counters["events"] = static_cast<double>(network->events());
  state.counters["activations"] = static_cast<double>(network->activations());
  state.counters["threads"] = network->threads();
  state.counters["chip_runs"] = static_cast<double>(network->chip_runs());
  state.counters["parallel_batches"] =
      static_cast<double>(network->parallel_batches());
  std::printf(
      "%-16s %-9s sim %10.2f us  wall %6.3f s (elab %5.3f)  peak RSS %7.1f MB  "
      "messages %9lld  %6.2f M msg/s  threads %d\n",
      c.name, AlgorithmName(res[0].algorithm), sim_s * 1e6, elab + run, elab,
      PeakRssMb(), static_cast<long long>(messages),
      messages / (elab + run) / 1e6, network->threads());
  std::fflush(stdout);
  return absl::OkStatus();
}

void BM_AllReduce64MiB(benchmark::State& state, const Case* c) {
  for (auto _ : state) {
    absl::Status s = RunCase(*c, state);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
  }
}

}  // namespace
}  // namespace tpusim::sim::net

extern "C" int sc_main(int argc, char* argv[]) {
  using tpusim::sim::net::kCases;
  constexpr char kThreads[] = "--net_threads=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], kThreads, sizeof(kThreads) - 1) == 0) {
      char* end = nullptr;
      const long v = std::strtol(argv[i] + sizeof(kThreads) - 1, &end, 10);
      if (end == argv[i] + sizeof(kThreads) - 1 || *end != '\0' || v < 0 ||
          v > 1024) {
        std::fprintf(stderr, "%s: expected an integer 0..1024\n", argv[i]);
        return 2;
      }
      tpusim::sim::net::g_threads = static_cast<int>(v);
    }
  }
  std::vector<const char*> names;
  for (const auto& c : kCases) names.push_back(c.name);
  return tpusim::bench::RunSimCases(
      argc, argv, "net_case", names, "BM_AllReduce64MiB",
      [](benchmark::State& state, const char* name) {
        for (const auto& c : kCases) {
          if (std::string(name) == c.name) {
            tpusim::sim::net::BM_AllReduce64MiB(state, &c);
          }
        }
      });
}
