// models/layers.h
//
// The layers the workloads are built from, each with its forward and its
// hand-written backward. A Tape records each layer's backward function during
// the forward pass and runs them in reverse order; parameter gradients go to
// the StepContext (bucketed all-reduce) as soon as backward produces them. A
// parameter used twice (tied embeddings) is handed over once both
// contributions have been added.

#ifndef TPUSIM_MODELS_LAYERS_H_
#define TPUSIM_MODELS_LAYERS_H_

#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "models/workload.h"

namespace tpusim::models {

// Zeros of `dims` as a broadcast scalar (cheap to trace at any size).
absl::StatusOr<TracedValue> Zeros(ReplicaContext& ctx, runtime::DType dtype,
                                  std::vector<int64_t> dims);

class Tape {
 public:
  explicit Tape(StepContext& s) : s_(s) {}
  StepContext& s() { return s_; }
  ReplicaContext& ctx() { return s_.ctx(); }
  // Values that need no gradient (the step's inputs).
  void MarkInput(TracedValue v) { inputs_.push_back(v.id); }
  bool NeedsGrad(TracedValue v) const;
  // Parameter `index` in the compute dtype; counts the use.
  absl::StatusOr<TracedValue> Param(int index);
  void Record(std::function<absl::Status()> backward) {
    backward_.push_back(std::move(backward));
  }
  // The accumulated gradient of `v` (zeros-free: nullopt when none arrived).
  std::optional<TracedValue> GradOf(TracedValue v) const;
  absl::Status Accumulate(TracedValue v, TracedValue g);
  absl::Status ParamGrad(int index, TracedValue g);
  // Runs the recorded backward functions in reverse (the losses seeded their
  // gradients already).
  absl::Status Backward();

 private:
  StepContext& s_;
  std::vector<int> inputs_;
  std::vector<std::function<absl::Status()>> backward_;
  std::map<int, TracedValue> grads_;
  std::map<int, int> param_uses_;
  std::map<int, TracedValue> param_grads_;
};

// y = x W (+ b); x [M, in], W [in, out], b [out] (b_index < 0: no bias).
absl::StatusOr<TracedValue> Dense(Tape& t, TracedValue x, int w_index,
                                  int b_index);
// ReLU; backward selects dy where x > 0.
absl::StatusOr<TracedValue> Relu(Tape& t, TracedValue x);
// tanh-approximation GELU.
absl::StatusOr<TracedValue> Gelu(Tape& t, TracedValue x);
absl::StatusOr<TracedValue> Tanh(Tape& t, TracedValue x);
absl::StatusOr<TracedValue> Add(Tape& t, TracedValue a, TracedValue b);
// Normalizes over `axes` and scales/shifts along the last dimension: batch norm
// (axes {0,1,2} of NHWC, training-mode batch statistics) and layer norm (axes
// {-1}). eps 1e-5 (BN) / 1e-12 (LN) is the caller's choice.
absl::StatusOr<TracedValue> Norm(Tape& t, TracedValue x, int gamma_index,
                                 int beta_index, std::vector<int64_t> axes,
                                 double eps);
// NHWC conv with an HWIO filter parameter, SAME padding.
absl::StatusOr<TracedValue> Conv(Tape& t, TracedValue x, int w_index,
                                 int64_t stride);
absl::StatusOr<TracedValue> MaxPool(Tape& t, TracedValue x, int64_t window,
                                    int64_t stride);
// Mean over H and W: [N, H, W, C] -> [N, C].
absl::StatusOr<TracedValue> GlobalAvgPool(Tape& t, TracedValue x);
// Rows of an embedding parameter: table [V, d], ids int32 [...] -> [..., d].
absl::StatusOr<TracedValue> Embed(Tape& t, int table_index, TracedValue ids);
// Generic reshape / transpose with their backward.
absl::StatusOr<TracedValue> Reshape(Tape& t, TracedValue x,
                                    std::vector<int64_t> shape);
// Multi-head attention core on q, k, v [B*S, d] -> [B*S, d].
absl::StatusOr<TracedValue> Attention(Tape& t, TracedValue q, TracedValue k,
                                      TracedValue v, int64_t batch, int64_t seq,
                                      int64_t heads, bool causal);
// Mean softmax cross-entropy of logits [M, V] against int32 labels [M]
// (computed in f32); returns the f32 scalar loss and seeds the logits'
// gradient (softmax - onehot) / M.
absl::StatusOr<TracedValue> SoftmaxCrossEntropy(Tape& t, TracedValue logits,
                                                TracedValue labels);

}  // namespace tpusim::models

#endif  // TPUSIM_MODELS_LAYERS_H_
