// Speed of the pod model (issue 9).
//
// BM_MlpStep/<slice>: one training step of a deep bf16 MLP with abstract
// tensors — 50 layers of 4096x4096, forward, backward, the gradients
// all-reduced in 8 buckets, data parallel — on v4-128 (64 chips), v4-1024
// (512 chips) and v4-8192 (4096 chips, 16x16x16). Prints the simulated step
// time, the events simulated (kernels + collective member starts + network
// events), events per wall second, the wall time and the peak RSS. Targets:
// < 3 s wall and < 2 GiB RSS at 4096 chips; a constant wall time per event.
// BM_Dispatch: run() of a trivial program on 8 replicas, SimBackend vs
// HostBackend (target: within 5x).
//
// SystemC elaborates once per process, so each case runs in a child:
//   sim_benchmark                   # every case
//   sim_benchmark --sim_case=v4-8192

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/status_macros.h"
#include "tests/bench/sim_case_main.h"
#include "sim/sim_backend.h"
#include "strategy/cluster_resolver.h"
#include "strategy/runtime/host_backend.h"
#include "strategy/tpu_strategy.h"

namespace tpusim::sim {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::Value;

const char* const kCases[] = {"v4-128", "v4-1024", "v4-8192", "dispatch"};

double PeakRssMb() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

absl::Status RunMlp(const std::string& slice, benchmark::State& state) {
  const auto t0 = std::chrono::steady_clock::now();
  SimBackendOptions options;
  options.record_spans = false;
  TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<SimBackend> sim,
                          SimBackend::Create(slice, options));
  const int n = sim->layout().num_devices();
  constexpr int kLayers = 50, kWidth = 4096, kBatch = 256, kBuckets = 8;
  runtime::ProgramBuilder b("mlp50", n);
  TPUSIM_ASSIGN_OR_RETURN(Value x,
                          b.Parameter(DType::kBF16, Shape({kBatch, kWidth})));
  std::vector<Value> w, h = {x};
  for (int l = 0; l < kLayers; ++l) {
    TPUSIM_ASSIGN_OR_RETURN(Value wl,
                            b.Parameter(DType::kBF16, Shape({kWidth, kWidth})));
    w.push_back(wl);
  }
  for (int l = 0; l < kLayers; ++l) {
    TPUSIM_ASSIGN_OR_RETURN(Value y, b.MatMul(h[l], w[l]));
    TPUSIM_ASSIGN_OR_RETURN(Value a, b.Relu(y));
    h.push_back(a);
  }
  Value g = h.back();
  std::vector<Value> bucket, outputs;
  const int per_bucket = (kLayers + kBuckets - 1) / kBuckets;
  for (int l = kLayers - 1; l >= 0; --l) {
    TPUSIM_ASSIGN_OR_RETURN(Value dw, b.MatMul(h[l], g, true));
    TPUSIM_ASSIGN_OR_RETURN(Value flat, b.Reshape(dw, {-1}));
    bucket.push_back(flat);
    if (static_cast<int>(bucket.size()) == per_bucket || l == 0) {
      TPUSIM_ASSIGN_OR_RETURN(Value cat, b.Concat(bucket, 0));
      TPUSIM_ASSIGN_OR_RETURN(
          Value sum, b.AllReduce(cat, runtime::CollectiveReduce::kSum));
      outputs.push_back(sum);
      bucket.clear();
    }
    if (l > 0) {
      TPUSIM_ASSIGN_OR_RETURN(g, b.MatMul(g, w[l], false, true));
    }
  }
  TPUSIM_ASSIGN_OR_RETURN(runtime::Program p, std::move(b).Build(outputs));
  TPUSIM_ASSIGN_OR_RETURN(auto exe, sim->Compile(p, {n, 1}));
  std::vector<std::unique_ptr<runtime::Buffer>> owned;
  std::vector<std::vector<runtime::Buffer*>> args(n);
  std::vector<std::vector<int>> assignment(n);
  for (int r = 0; r < n; ++r) {
    assignment[r] = {r};
    for (Value v : p.parameters()) {
      const runtime::ValueType& t = p.type(v);
      TPUSIM_ASSIGN_OR_RETURN(
          auto buf, sim->TransferToDevice(r, Tensor::Abstract(t.dtype, t.shape)));
      args[r].push_back(buf.get());
      owned.push_back(std::move(buf));
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  TPUSIM_RETURN_IF_ERROR(sim->ExecuteSpmd(*exe, {assignment}, args).status());
  // The step is timed when the timeline is observed (SimBackend settles its
  // timing lazily): the profile belongs in the step's wall time.
  TPUSIM_ASSIGN_OR_RETURN(runtime::Profile profile, sim->CollectProfile());
  const auto t2 = std::chrono::steady_clock::now();
  const SimBackend::SimStats stats = sim->Stats();
  const double setup = std::chrono::duration<double>(t1 - t0).count();
  const double step = std::chrono::duration<double>(t2 - t1).count();
  const double events = static_cast<double>(stats.kernels + stats.collectives +
                                            stats.network_events);
  const runtime::StepProfile& st = profile.steps(profile.steps_size() - 1);
  const double sim_ms = (st.end_ps() - st.start_ps()) * 1e-9;
  state.counters["sim_step_ms"] = sim_ms;
  state.counters["wall_s"] = setup + step;
  state.counters["step_wall_s"] = step;
  state.counters["events"] = events;
  state.counters["events_per_wall_s"] = events / step;
  state.counters["peak_rss_MB"] = PeakRssMb();
  std::printf(
      "%-9s %5d chips  sim step %8.3f ms (exposed collective %.3f ms)  wall "
      "%6.2f s (setup %5.2f, step %5.2f)  events %10.0f (%lld kernels, %lld "
      "collective starts, %lld network)  %6.2f M events/s  peak RSS %7.1f "
      "MB\n",
      slice.c_str(), sim->layout().num_chips, sim_ms,
      st.exposed_collective_ps() * 1e-9, setup + step, setup, step, events,
      static_cast<long long>(stats.kernels),
      static_cast<long long>(stats.collectives),
      static_cast<long long>(stats.network_events), events / step / 1e6,
      PeakRssMb());
  std::fflush(stdout);
  return absl::OkStatus();
}

// run() dispatch of a trivial program on 8 replicas: median of many calls.
absl::Status RunDispatch(benchmark::State& state) {
  using namespace ::tpusim::strategy;  // NOLINT: benchmark brevity
  auto measure = [](runtime::Backend& backend) -> absl::StatusOr<double> {
    TPUSIM_ASSIGN_OR_RETURN(TPUClusterResolver resolver,
                            TPUClusterResolver::Create(backend, "v3-8"));
    TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<TPUStrategy> strategy,
                            TPUStrategy::Create(backend, resolver));
    StepFunction step([](ReplicaContext& ctx, const TracedNest& args)
                          -> absl::StatusOr<TracedNest> {
      TPUSIM_ASSIGN_OR_RETURN(TracedValue one, ctx.ScalarConstant(1));
      TPUSIM_ASSIGN_OR_RETURN(TracedValue y,
                              ctx.Add(args.children()[0].leaf(), one));
      return TracedNest(y);
    });
    auto ids = PerReplica<Tensor>::FromFn(
        8, [](int r) { return Tensor::Scalar<float>(r); });
    const ValueNest args = ValueNest::Tuple({strategy::Value(ids)});
    std::vector<double> times;
    for (int i = 0; i < 2000; ++i) {
      const auto a = std::chrono::steady_clock::now();
      TPUSIM_RETURN_IF_ERROR(strategy->Run(step, args).status());
      const auto z = std::chrono::steady_clock::now();
      times.push_back(std::chrono::duration<double>(z - a).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                          runtime::ParseSlice("v3-8"));
  runtime::HostBackend host(layout.devices);
  TPUSIM_ASSIGN_OR_RETURN(double host_s, measure(host));
  TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<SimBackend> sim,
                          SimBackend::Create("v3-8"));
  TPUSIM_ASSIGN_OR_RETURN(double sim_s, measure(*sim));
  state.counters["host_us"] = host_s * 1e6;
  state.counters["sim_us"] = sim_s * 1e6;
  state.counters["ratio"] = sim_s / host_s;
  std::printf("dispatch  run() 8 replicas: host %.2f us, sim %.2f us (%.2fx; "
              "target <= 5x)\n",
              host_s * 1e6, sim_s * 1e6, sim_s / host_s);
  std::fflush(stdout);
  return absl::OkStatus();
}

void BM_Case(benchmark::State& state, const char* name) {
  for (auto _ : state) {
    absl::Status s = std::string(name) == "dispatch" ? RunDispatch(state)
                                                     : RunMlp(name, state);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
  }
}

}  // namespace
}  // namespace tpusim::sim

extern "C" int sc_main(int argc, char* argv[]) {
  return tpusim::bench::RunSimCases(argc, argv, "sim_case", tpusim::sim::kCases, "BM_Sim",
                                    tpusim::sim::BM_Case);
}
