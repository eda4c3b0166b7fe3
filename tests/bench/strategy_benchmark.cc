// Benchmarks of the strategy facade on the host backend:
//   BM_RunDispatchTrivial: run() of a trivial program (x + 1 on a scalar per
//   replica) — the
//     per-step dispatch overhead (signature, cache lookup, transfers, SPMD
//     execute, regroup).
//   BM_RunNoArguments: run() of a program returning replica_id (no input
//   transfers). BM_MlpTrainStep: one data-parallel SGD step of the test MLP.
//   BM_ReduceMeanAxis0: host-side strategy.reduce(MEAN, per_replica, axis=0).

#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/check.h"
#include "strategy/cluster_resolver.h"
#include "strategy/runtime/host_backend.h"
#include "strategy/tpu_strategy.h"
#include "tests/strategy/mlp_testing.h"

namespace tpusim::strategy {
namespace {

using runtime::Tensor;

struct Setup {
  std::unique_ptr<runtime::HostBackend> backend;
  std::unique_ptr<TPUClusterResolver> resolver;
  std::unique_ptr<TPUStrategy> strategy;
};

Setup Make(int replicas) {
  Setup s;
  absl::StatusOr<TPUClusterResolver> r =
      TPUClusterResolver::CreatePlain(1, replicas);
  TPUSIM_CHECK(r.ok()) << r.status();
  s.backend = std::make_unique<runtime::HostBackend>(r->devices());
  s.resolver = std::make_unique<TPUClusterResolver>(*std::move(r));
  absl::StatusOr<std::unique_ptr<TPUStrategy>> strategy =
      TPUStrategy::Create(*s.backend, *s.resolver);
  TPUSIM_CHECK(strategy.ok()) << strategy.status();
  s.strategy = *std::move(strategy);
  return s;
}

void BM_RunDispatchTrivial(benchmark::State& state) {
  const int replicas = static_cast<int>(state.range(0));
  Setup s = Make(replicas);
  StepFunction step([](ReplicaContext& ctx,
                       const TracedNest& args) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue one, ctx.ScalarConstant(1));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue y,
                            ctx.Add(args.children()[0].leaf(), one));
    return TracedNest(y);
  });
  const ValueNest args =
      ValueNest::Tuple({Value(PerReplica<Tensor>::FromFn(replicas, [](int r) {
        return Tensor::Scalar<float>(static_cast<float>(r));
      }))});
  for (auto _ : state) {
    absl::StatusOr<ValueNest> out = s.strategy->Run(step, args);
    TPUSIM_CHECK(out.ok()) << out.status();
    benchmark::DoNotOptimize(out);
  }
  state.counters["traces"] = s.strategy->num_traces();
}
BENCHMARK(BM_RunDispatchTrivial)
    ->Arg(8)
    ->Arg(32)
    ->Unit(benchmark::kMicrosecond);

void BM_RunNoArguments(benchmark::State& state) {
  Setup s = Make(8);
  StepFunction step(
      [](ReplicaContext& ctx, const TracedNest&) -> absl::StatusOr<TracedNest> {
        TPUSIM_ASSIGN_OR_RETURN(TracedValue id, ctx.ReplicaIdInSyncGroup());
        return TracedNest(id);
      });
  for (auto _ : state) {
    absl::StatusOr<ValueNest> out = s.strategy->Run(step);
    TPUSIM_CHECK(out.ok()) << out.status();
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_RunNoArguments)->Unit(benchmark::kMicrosecond);

void BM_MlpTrainStep(benchmark::State& state) {
  const int replicas = 8;
  const int global_batch = static_cast<int>(state.range(0));
  Setup s = Make(replicas);
  testing::MlpConfig config;
  config.in = 32;
  config.hidden = 64;
  testing::MlpVariables vars;
  {
    absl::StatusOr<StrategyScope> scope = s.strategy->Scope();
    TPUSIM_CHECK(scope.ok());
    absl::StatusOr<testing::MlpVariables> created =
        testing::CreateMlpVariables(config);
    TPUSIM_CHECK(created.ok()) << created.status();
    vars = *created;
  }
  const StepFunction step = testing::MakeMlpTrainStep(vars, config);
  absl::StatusOr<ValueNest> args =
      testing::MlpStepArgs(0, global_batch, config.in, replicas);
  TPUSIM_CHECK(args.ok());
  for (auto _ : state) {
    absl::StatusOr<ValueNest> out = s.strategy->Run(step, *args);
    TPUSIM_CHECK(out.ok()) << out.status();
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * global_batch);
}
BENCHMARK(BM_MlpTrainStep)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);

void BM_ReduceMeanAxis0(benchmark::State& state) {
  Setup s = Make(8);
  const PerReplica<Tensor> losses = PerReplica<Tensor>::FromFn(8, [](int r) {
    return Tensor::FromVector<float>(runtime::Shape({128}),
                                     std::vector<float>(128, 0.5f * r));
  });
  for (auto _ : state) {
    absl::StatusOr<Tensor> mean =
        s.strategy->Reduce(ReduceOp::kMean, losses, 0);
    TPUSIM_CHECK(mean.ok());
    benchmark::DoNotOptimize(mean);
  }
}
BENCHMARK(BM_ReduceMeanAxis0)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tpusim::strategy
