// The scale targets of `tpusim run` (issue 17), measured on the CLI as a user
// runs it: each case is a `tpusim run` child process (SystemC elaborates once
// per process), timed by wall clock, with its peak RSS from wait4 and the
// bytes its --out directory holds. Every case prints its figures next to its
// target and MET or MISSED; a missed target never fails the program.
//
//   scale_benchmark                                 # every case
//   scale_benchmark --benchmark_filter=BertV4_8192  # one case
//
// Cases (one simulation thread each, as the targets are stated):
//   BertV4_8192        BERT-large seq 512, v4-8192 (4096 chips), global batch
//                      16384, 3 steps: <= 4 GiB, <= 60 s
//   BertShipped        scenarios/run/bert_large_v4_512 as shipped (v4-512):
//                      <= 1 GiB, <= 5 s
//   TransformerV5p2048 transformer_v5p_128 on v5p-2048 (1024 chips), global
//                      batch 4096: <= 4 GiB, <= 60 s
//   GrowthPerReplica   BERT-large at v4-128 (64 replicas, batch 256) and at
//                      v4-2048 (1024, batch 4096), 1 step: (RSS at 1024 - RSS
//                      at 64) / 960 <= 256 KiB; CPU time per simulated event
//                      at 64 and at 4096 chips within 1.5x
//   ResNetOut          ResNet-50 on v3-2048 (1024 chips), batch 65536, 3
//                      steps, with --out against without: <= 1.5x the wall
//                      time, <= 100 MB written

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

extern char** environ;

namespace {

struct Measured {
  bool ok = false;
  double wall_s = 0;
  double cpu_s = 0;  // user + system
  double peak_rss_mib = 0;
  double events = 0;  // from the run's stderr line
  int64_t written_bytes = 0;
};

std::string Scenario(const char* name) {
  return std::string(TPUSIM_SOURCE_DIR) + "/scenarios/run/" + name + ".textproto";
}

// Runs `tpusim run ARGS...`, its outputs to files under a fresh directory.
Measured RunTpusim(std::vector<std::string> args, bool with_out) {
  Measured m;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("tpusim-scale-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  args.insert(args.begin(), {TPUSIM_CLI, "run"});
  if (with_out) args.push_back("--out=" + (dir / "out").string());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  const std::string err = (dir / "stderr").string();
  posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, 2, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid;
  if (posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ) != 0) {
    posix_spawn_file_actions_destroy(&files);
    return m;
  }
  posix_spawn_file_actions_destroy(&files);
  int status = 0;
  struct rusage usage;
  wait4(pid, &status, 0, &usage);
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                 .count();
  m.cpu_s = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 +
            usage.ru_stime.tv_sec + usage.ru_stime.tv_usec * 1e-6;
  m.peak_rss_mib = usage.ru_maxrss / 1024.0;
  m.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::ifstream in(err);
  std::stringstream text;
  text << in.rdbuf();
  const std::string line = text.str();
  const size_t at = line.find(" simulated events");
  if (at != std::string::npos) {
    const size_t start = line.rfind(' ', at - 1);
    m.events = std::stod(line.substr(start + 1, at - start - 1));
  }
  if (!m.ok) std::fprintf(stderr, "tpusim run failed: %s\n", line.c_str());
  if (with_out) {
    for (const auto& f : std::filesystem::directory_iterator(dir / "out")) {
      m.written_bytes += static_cast<int64_t>(f.file_size());
    }
  }
  std::filesystem::remove_all(dir);
  return m;
}

const char* Verdict(bool met) { return met ? "MET" : "MISSED"; }

void Report(benchmark::State& state, const char* what, const Measured& m,
            double max_gib, double max_s) {
  const bool mem = m.peak_rss_mib <= max_gib * 1024;
  const bool time = m.wall_s <= max_s;
  state.counters["wall_s"] = m.wall_s;
  state.counters["cpu_s"] = m.cpu_s;
  state.counters["peak_rss_MiB"] = m.peak_rss_mib;
  state.counters["events"] = m.events;
  std::printf(
      "%-22s %s: peak RSS %.0f MiB (target <= %.0f GiB: %s), wall %.1f s, CPU "
      "%.1f s (target <= %.0f s: %s), %.0f simulated events\n",
      what, m.ok ? "ran" : "FAILED", m.peak_rss_mib, max_gib, Verdict(mem),
      m.wall_s, m.cpu_s, max_s, Verdict(time), m.events);
}

const std::vector<std::string> kOneThread = {"--set",
                                             "run.pod.options.sim_threads=1"};

std::vector<std::string> Bert(const char* slice, int batch, int steps) {
  std::vector<std::string> a = {Scenario("bert_large_v4_512"),
                                "--set", std::string("cluster.slice=") + slice,
                                "--set", "global_batch_size=" + std::to_string(batch),
                                "--set", "run.steps=" + std::to_string(steps)};
  a.insert(a.end(), kOneThread.begin(), kOneThread.end());
  return a;
}

void BM_BertV4_8192(benchmark::State& state) {
  for (auto _ : state) {
    Report(state, "BERT-large v4-8192", RunTpusim(Bert("v4-8192", 16384, 3), false),
           4, 60);
  }
}
BENCHMARK(BM_BertV4_8192)->Unit(benchmark::kSecond)->Iterations(1);

void BM_BertShipped(benchmark::State& state) {
  std::vector<std::string> a = {Scenario("bert_large_v4_512")};
  a.insert(a.end(), kOneThread.begin(), kOneThread.end());
  for (auto _ : state) Report(state, "bert_large_v4_512", RunTpusim(a, false), 1, 5);
}
BENCHMARK(BM_BertShipped)->Unit(benchmark::kSecond)->Iterations(1);

void BM_TransformerV5p2048(benchmark::State& state) {
  std::vector<std::string> a = {Scenario("transformer_v5p_128"), "--set",
                                "cluster.slice=v5p-2048", "--set",
                                "global_batch_size=4096"};
  a.insert(a.end(), kOneThread.begin(), kOneThread.end());
  for (auto _ : state) {
    Report(state, "transformer v5p-2048", RunTpusim(a, false), 4, 60);
  }
}
BENCHMARK(BM_TransformerV5p2048)->Unit(benchmark::kSecond)->Iterations(1);

void BM_GrowthPerReplica(benchmark::State& state) {
  for (auto _ : state) {
    const Measured small = RunTpusim(Bert("v4-128", 256, 1), false);
    const Measured large = RunTpusim(Bert("v4-2048", 4096, 1), false);
    const Measured pod = RunTpusim(Bert("v4-8192", 16384, 1), false);
    const double kib = (large.peak_rss_mib - small.peak_rss_mib) * 1024 / 960;
    const double per_event_small = small.cpu_s / small.events;
    const double per_event_pod = pod.cpu_s / pod.events;
    const double ratio = per_event_pod / per_event_small;
    state.counters["KiB_per_replica"] = kib;
    state.counters["cpu_per_event_ratio"] = ratio;
    std::printf(
        "growth per replica     RSS %.0f MiB at 64 replicas, %.0f MiB at 1024: "
        "%.1f KiB per replica (target <= 256 KiB: %s)\n",
        small.peak_rss_mib, large.peak_rss_mib, kib, Verdict(kib <= 256));
    std::printf(
        "CPU per event          %.3f us at 64 chips (%.0f events), %.3f us at "
        "4096 (%.0f events): %.2fx (target <= 1.5x: %s)\n",
        per_event_small * 1e6, small.events, per_event_pod * 1e6, pod.events,
        ratio, Verdict(ratio <= 1.5));
  }
}
BENCHMARK(BM_GrowthPerReplica)->Unit(benchmark::kSecond)->Iterations(1);

void BM_ResNetOut(benchmark::State& state) {
  std::vector<std::string> a = {Scenario("resnet50_v3_32"), "--set",
                                "cluster.slice=v3-2048", "--set",
                                "global_batch_size=65536", "--set", "run.steps=3"};
  for (auto _ : state) {
    const Measured without = RunTpusim(a, false);
    const Measured with = RunTpusim(a, true);
    const double ratio = with.wall_s / without.wall_s;
    state.counters["out_wall_ratio"] = ratio;
    state.counters["written_MB"] = with.written_bytes / 1e6;
    std::printf(
        "ResNet-50 v3-2048 --out wall %.1f s against %.1f s: %.2fx (target <= "
        "1.5x: %s); wrote %.1f MB (target <= 100 MB: %s); peak RSS %.0f MiB "
        "against %.0f\n",
        with.wall_s, without.wall_s, ratio, Verdict(ratio <= 1.5),
        with.written_bytes / 1e6, Verdict(with.written_bytes <= 100'000'000),
        with.peak_rss_mib, without.peak_rss_mib);
  }
}
BENCHMARK(BM_ResNetOut)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
