// tests/strategy/mlp_testing.h
//
// A small MLP (x[B,in] -> tanh(x W1 + b1) -> (.) W2 + b2 -> y[B,1]) trained
// with SGD on mean squared error, written against ReplicaContext with an
// explicit backward pass. Gradients are all-reduced with MEAN, so N replicas on
// B/N rows each compute exactly the gradient of the global batch. Used by the
// data-parallel equivalence test and the strategy benchmark.

#ifndef TPUSIM_TESTS_STRATEGY_MLP_TESTING_H_
#define TPUSIM_TESTS_STRATEGY_MLP_TESTING_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "strategy/replica_context.h"
#include "strategy/tpu_strategy.h"
#include "strategy/variables.h"

namespace tpusim::strategy::testing {

struct MlpConfig {
  int in = 4;
  int hidden = 8;
  float learning_rate = 0.1f;
};

struct MlpVariables {
  MirroredVariable* w1 = nullptr;  // [in, hidden]
  MirroredVariable* b1 = nullptr;  // [hidden]
  MirroredVariable* w2 = nullptr;  // [hidden, 1]
  MirroredVariable* b2 = nullptr;  // [1]
};

// Deterministic pseudo-random value in [-1, 1) for (seed, index).
inline float MlpNoise(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index * 0xBF58476D1CE4E5B9ull + 1;
  z ^= z >> 31;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 29;
  return static_cast<float>(static_cast<double>(z >> 11) / 4503599627370496.0 -
                            1.0);
}

// Creates the variables under the current strategy (call inside Scope()).
inline absl::StatusOr<MlpVariables> CreateMlpVariables(const MlpConfig& c) {
  auto init = [](runtime::Shape shape, uint64_t seed, float scale) {
    std::vector<float> v(shape.num_elements());
    for (size_t i = 0; i < v.size(); ++i) v[i] = scale * MlpNoise(seed, i);
    return runtime::Tensor::FromVector<float>(shape, std::move(v));
  };
  MlpVariables vars;
  TPUSIM_ASSIGN_OR_RETURN(
      vars.w1, CreateVariable(init(runtime::Shape({c.in, c.hidden}), 1, 0.5f),
                              {"dense/kernel"}));
  TPUSIM_ASSIGN_OR_RETURN(
      vars.b1, CreateVariable(init(runtime::Shape({c.hidden}), 2, 0.1f),
                              {"dense/bias"}));
  TPUSIM_ASSIGN_OR_RETURN(
      vars.w2, CreateVariable(init(runtime::Shape({c.hidden, 1}), 3, 0.5f),
                              {"dense_1/kernel"}));
  TPUSIM_ASSIGN_OR_RETURN(
      vars.b2,
      CreateVariable(init(runtime::Shape({1}), 4, 0.1f), {"dense_1/bias"}));
  return vars;
}

// The global batch of training step `step`: x [batch, in] and targets t [batch,
// 1].
inline runtime::Tensor MlpBatchX(int step, int batch, int in) {
  std::vector<float> v(static_cast<size_t>(batch) * in);
  for (size_t i = 0; i < v.size(); ++i) v[i] = MlpNoise(100 + step, i);
  return runtime::Tensor::FromVector<float>(runtime::Shape({batch, in}),
                                            std::move(v));
}
inline runtime::Tensor MlpBatchT(int step, int batch) {
  std::vector<float> v(batch);
  for (int i = 0; i < batch; ++i) v[i] = MlpNoise(500 + step, i);
  return runtime::Tensor::FromVector<float>(runtime::Shape({batch, 1}),
                                            std::move(v));
}

// One SGD step on (x, t) = args; returns the replica's local mean squared
// error.
inline StepFunction MakeMlpTrainStep(MlpVariables vars, MlpConfig c) {
  return StepFunction(
      [vars, c](ReplicaContext& ctx,
                const TracedNest& args) -> absl::StatusOr<TracedNest> {
        const TracedValue x = args.children()[0].leaf();
        const TracedValue t = args.children()[1].leaf();
        TPUSIM_ASSIGN_OR_RETURN(runtime::ValueType x_type, ctx.TypeOf(x));
        const double local_batch = static_cast<double>(x_type.shape.dim(0));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue w1, ctx.ReadVariable(*vars.w1));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue b1, ctx.ReadVariable(*vars.b1));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue w2, ctx.ReadVariable(*vars.w2));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue b2, ctx.ReadVariable(*vars.b2));
        // Forward.
        TPUSIM_ASSIGN_OR_RETURN(TracedValue xw1, ctx.MatMul(x, w1));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue z1, ctx.Add(xw1, b1));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue h, ctx.Tanh(z1));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue hw2, ctx.MatMul(h, w2));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue y, ctx.Add(hw2, b2));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue d, ctx.Sub(y, t));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue d2, ctx.Mul(d, d));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue loss, ctx.ReduceMean(d2, {0, 1}));
        // Backward: dL/dy = 2 d / local_batch.
        TPUSIM_ASSIGN_OR_RETURN(TracedValue scale,
                                ctx.ScalarConstant(2.0 / local_batch));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue dy, ctx.Mul(d, scale));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue dw2,
                                ctx.MatMul(h, dy, /*transpose_a=*/true));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue db2, ctx.ReduceSum(dy, {0}));
        TPUSIM_ASSIGN_OR_RETURN(
            TracedValue dh, ctx.MatMul(dy, w2, false, /*transpose_b=*/true));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue h2, ctx.Mul(h, h));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue one, ctx.ScalarConstant(1.0));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue dtanh, ctx.Sub(one, h2));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue dz1, ctx.Mul(dh, dtanh));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue dw1,
                                ctx.MatMul(x, dz1, /*transpose_a=*/true));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue db1, ctx.ReduceSum(dz1, {0}));
        // Data parallelism: average the gradients over replicas, then SGD.
        TPUSIM_ASSIGN_OR_RETURN(TracedValue lr,
                                ctx.ScalarConstant(c.learning_rate));
        const std::pair<MirroredVariable*, TracedValue> updates[] = {
            {vars.w1, dw1}, {vars.b1, db1}, {vars.w2, dw2}, {vars.b2, db2}};
        for (const auto& [var, grad] : updates) {
          TPUSIM_ASSIGN_OR_RETURN(TracedValue g,
                                  ctx.AllReduce(ReduceOp::kMean, grad));
          TPUSIM_ASSIGN_OR_RETURN(TracedValue step, ctx.Mul(g, lr));
          TPUSIM_RETURN_IF_ERROR(ctx.AssignSubVariable(*var, step).status());
        }
        return TracedNest(loss);
      },
      "mlp_train_step");
}

// The step's arguments: replica r gets rows [r*B/N, (r+1)*B/N) of the global
// batch.
inline absl::StatusOr<ValueNest> MlpStepArgs(int step, int global_batch, int in,
                                             int replicas) {
  const runtime::Tensor x = MlpBatchX(step, global_batch, in);
  const runtime::Tensor t = MlpBatchT(step, global_batch);
  const int per = global_batch / replicas;
  std::vector<runtime::Tensor> xs, ts;
  for (int r = 0; r < replicas; ++r) {
    xs.push_back(x.Slice(r * per, per));
    ts.push_back(t.Slice(r * per, per));
  }
  return ValueNest::Tuple({Value(PerReplica<runtime::Tensor>(std::move(xs))),
                           Value(PerReplica<runtime::Tensor>(std::move(ts)))});
}

}  // namespace tpusim::strategy::testing

#endif  // TPUSIM_TESTS_STRATEGY_MLP_TESTING_H_
