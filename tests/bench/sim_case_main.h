// tests/bench/sim_case_main.h
//
// The sc_main of a benchmark whose cases each need a SystemC kernel of their
// own (SystemC elaborates once per process): without --FLAG it re-runs itself
// once per case, each child with --FLAG=NAME, and fails if a child did; with
// it, it registers that one case as `prefix/NAME` (one iteration, seconds)
// and runs Google Benchmark on it. An unknown NAME exits 1 listing the cases.
//
//   extern "C" int sc_main(int argc, char* argv[]) {
//     return tpusim::bench::RunSimCases(argc, argv, "sim_case", kCases,
//                                       "BM_Sim", BM_Case);
//   }

#ifndef TPUSIM_TESTS_BENCH_SIM_CASE_MAIN_H_
#define TPUSIM_TESTS_BENCH_SIM_CASE_MAIN_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "benchmark/benchmark.h"

namespace tpusim::bench {

inline int RunSimCases(int argc, char* argv[], const char* flag,
                       absl::Span<const char* const> cases, const char* prefix,
                       void (*bm)(benchmark::State&, const char*)) {
  const std::string option = std::string("--") + flag + "=";
  std::string only;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], option.c_str(), option.size()) == 0) {
      only = argv[i] + option.size();
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (only.empty()) {
    int failures = 0;
    for (const char* c : cases) {
      const pid_t pid = fork();
      if (pid == 0) {
        std::string arg = option + c;
        std::vector<char*> args = rest;
        args.push_back(arg.data());
        args.push_back(nullptr);
        execv("/proc/self/exe", args.data());
        _exit(127);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
    }
    return failures == 0 ? 0 : 1;
  }
  bool known = false;
  for (const char* c : cases) {
    if (only == c) {
      known = true;
      benchmark::RegisterBenchmark((std::string(prefix) + "/" + c).c_str(), bm,
                                   c)
          ->Iterations(1)
          ->Unit(benchmark::kSecond);
    }
  }
  if (!known) {
    std::fprintf(stderr, "%s%s: not one of %s\n", option.c_str(),
                 only.c_str(), absl::StrJoin(cases, ", ").c_str());
    return 1;
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace tpusim::bench

#endif  // TPUSIM_TESTS_BENCH_SIM_CASE_MAIN_H_
