// sim/compile speed: a deep bf16 MLP training step (forward, backward, one
// all-reduce per weight gradient traced after the backward pass, SGD
// updates) compiled with fusion, for growing depth. Compile time should grow
// about linearly with the op count (counters: ops, kernels, ns per op).

#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "sim/compile/compile.h"
#include "strategy/runtime/program.h"

namespace tpusim::sim {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Value;

runtime::Program Mlp(int layers) {
  constexpr int64_t kWidth = 4096;
  runtime::ProgramBuilder b("mlp", /*num_replicas=*/64);
  Value x = *b.Parameter(DType::kBF16, Shape({128, kWidth}));
  Value y = *b.Parameter(DType::kBF16, Shape({128, kWidth}));
  std::vector<Value> w, h = {x};
  for (int l = 0; l < layers; ++l) {
    (void)b.DeclareVariable(l, DType::kBF16, Shape({kWidth, kWidth}));
    w.push_back(*b.VariableRead(l));
    h.push_back(*b.Relu(*b.MatMul(h.back(), w.back())));
  }
  Value g = *b.Sub(h.back(), y);
  std::vector<Value> grads(layers);
  for (int l = layers - 1; l >= 0; --l) {
    Value gz = *b.Mul(g, h[l + 1]);
    grads[l] = *b.MatMul(h[l], gz, /*transpose_a=*/true);
    if (l > 0) g = *b.MatMul(gz, w[l], false, /*transpose_b=*/true);
  }
  for (int l = layers - 1; l >= 0; --l) {
    grads[l] = *b.AllReduce(grads[l], runtime::CollectiveReduce::kSum);
  }
  Value lr = *b.Cast(*b.Constant(runtime::Tensor::Scalar<float>(0.1f)),
                     DType::kBF16);
  std::vector<Value> outs;
  for (int l = 0; l < layers; ++l) {
    outs.push_back(*b.VariableAssign(
        l, *b.Sub(*b.VariableRead(l), *b.Mul(lr, grads[l]))));
  }
  return *std::move(b).Build(outs);
}

void BM_CompileMlp(benchmark::State& state) {
  const runtime::Program p = Mlp(static_cast<int>(state.range(0)));
  size_t kernels = 0;
  for (auto _ : state) {
    absl::StatusOr<CompiledProgram> c = CompileProgram(p, CompileOptions{});
    kernels = c->kernels.size();
    benchmark::DoNotOptimize(c);
  }
  state.counters["ops"] = static_cast<double>(p.ops().size());
  state.counters["kernels"] = static_cast<double>(kernels);
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(p.ops().size()),
      benchmark::Counter::kIsIterationInvariantRate |
          benchmark::Counter::kInvert);
}
BENCHMARK(BM_CompileMlp)->Arg(50)->Arg(200)->Arg(800)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim::sim
