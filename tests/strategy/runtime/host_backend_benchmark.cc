// HostBackend::ExecuteSpmd cost for small programs (the run() dispatch budget
// is < 50 us per step for a trivial program on 8 replicas).

#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "strategy/runtime/host_backend.h"

namespace tpusim::runtime {
namespace {

// x * 2, all_reduce(sum): the shape of a trivial training step.
void BM_TrivialStepEightReplicas(benchmark::State& state) {
  ProgramBuilder b("trivial", 8);
  Value x = *b.Parameter(DType::kF32, Shape({4}));
  Value y = *b.Mul(x, *b.Constant(Tensor::Scalar<float>(2.0f)));
  Value s = *b.AllReduce(y, CollectiveReduce::kSum);
  Program p = *std::move(b).Build({s});
  HostBackend backend(8);
  std::unique_ptr<Executable> exe = *backend.Compile(p, {8, 1});
  SpmdAssignment assignment;
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<std::vector<Buffer*>> args(8);
  for (int r = 0; r < 8; ++r) {
    assignment.replica_devices.push_back({r});
    owned.push_back(
        *backend.TransferToDevice(r, Tensor::Vector<float>({1, 2, 3, 4})));
    args[r].push_back(owned.back().get());
  }
  for (auto _ : state) {
    absl::StatusOr<SpmdOutputs> out =
        backend.ExecuteSpmd(*exe, assignment, args);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_TrivialStepEightReplicas);

// A 256x256 matmul per replica: big enough to use the worker pool.
void BM_MatmulStepEightReplicas(benchmark::State& state) {
  ProgramBuilder b("mm", 8);
  Value x = *b.Parameter(DType::kF32, Shape({64, 64}));
  Value y = *b.MatMul(x, x);
  Program p = *std::move(b).Build({*b.AllReduce(y, CollectiveReduce::kSum)});
  HostBackendOptions options;
  options.num_threads = static_cast<int>(state.range(0));
  HostBackend backend(8, options);
  std::unique_ptr<Executable> exe = *backend.Compile(p, {8, 1});
  SpmdAssignment assignment;
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<std::vector<Buffer*>> args(8);
  for (int r = 0; r < 8; ++r) {
    assignment.replica_devices.push_back({r});
    owned.push_back(*backend.TransferToDevice(
        r, Tensor::Zeros(DType::kF32, Shape({64, 64}))));
    args[r].push_back(owned.back().get());
  }
  for (auto _ : state) {
    absl::StatusOr<SpmdOutputs> out =
        backend.ExecuteSpmd(*exe, assignment, args);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_MatmulStepEightReplicas)->Arg(0)->Arg(2);

}  // namespace
}  // namespace tpusim::runtime
