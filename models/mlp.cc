// mlp: x [B, in] -> relu(x W1 + b1) -> (.) W2 + b2 -> y [B, out], mean squared
// error against targets t [B, out]. Small and with real values; the ReLU
// gradient uses compare + select.

#include "common/status_macros.h"
#include "models/layers.h"
#include "models/models.h"

namespace tpusim::models {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::ValueType;

class Mlp : public Workload {
 public:
  Mlp(int64_t in, int64_t hidden, int64_t out, TrainOptions options)
      : in_(in), hidden_(hidden), out_(out) {
    options_ = options;
    params_ = {
        {"dense/kernel", Shape({in, hidden}), 0.5f},
        {"dense/bias", Shape({hidden}), 0.0f},
        {"dense_1/kernel", Shape({hidden, out}), 0.5f},
        {"dense_1/bias", Shape({out}), 0.0f},
    };
  }
  std::string name() const override { return "mlp"; }
  std::vector<ValueType> InputTypes(int64_t b) const override {
    return {ValueType(DType::kF32, Shape({b, in_})),
            ValueType(DType::kF32, Shape({b, out_}))};
  }
  std::vector<std::string> InputNames() const override {
    return {"features", "labels"};
  }
  bool SupportsPerExampleLoss() const override { return true; }
  std::vector<Tensor> SyntheticInputs(int64_t b, uint64_t seed) const override {
    std::vector<float> x(b * in_), t(b * out_);
    for (size_t i = 0; i < x.size(); ++i) x[i] = Noise(seed, 1000, i);
    for (size_t i = 0; i < t.size(); ++i) t[i] = Noise(seed, 1001, i);
    return {Tensor::FromVector<float>(Shape({b, in_}), std::move(x)),
            Tensor::FromVector<float>(Shape({b, out_}), std::move(t))};
  }
  absl::StatusOr<TracedValue> ForwardBackward(
      StepContext& s, absl::Span<const TracedValue> inputs) const override {
    Tape t(s);
    ReplicaContext& c = s.ctx();
    TracedValue x = inputs[0];
    TracedValue target = inputs[1];
    t.MarkInput(x);
    if (s.dtype() != DType::kF32) {
      TPUSIM_ASSIGN_OR_RETURN(x, c.Cast(x, s.dtype()));
      TPUSIM_ASSIGN_OR_RETURN(target, c.Cast(target, s.dtype()));
      t.MarkInput(x);
    }
    TPUSIM_ASSIGN_OR_RETURN(runtime::ValueType xt, c.TypeOf(x));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue z1, Dense(t, x, 0, 1));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue h, Relu(t, z1));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue y, Dense(t, h, 2, 3));
    // loss = mean((y - t)^2); d loss / dy = 2 (y - t) / (B * out).
    TPUSIM_ASSIGN_OR_RETURN(TracedValue d, c.Sub(y, target));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue d2, c.Mul(d, d));
    TracedValue loss, dy;
    if (s.per_example_loss()) {
      // Per-example losses [rows]; the gradient of the GLOBAL mean: each
      // element's 2 (y - t) over the elements of all replicas (counted at run
      // time, so a partial or empty batch counts what it holds), times N to
      // undo the MEAN all-reduce's 1/N.
      TPUSIM_ASSIGN_OR_RETURN(loss, c.ReduceMean(d2, {1}));
      TPUSIM_ASSIGN_OR_RETURN(TracedValue zero, s.Scalar(0));
      TPUSIM_ASSIGN_OR_RETURN(TracedValue one, s.Scalar(1));
      TPUSIM_ASSIGN_OR_RETURN(TracedValue z, c.Mul(d, zero));
      TPUSIM_ASSIGN_OR_RETURN(TracedValue ones, c.Add(z, one));
      TPUSIM_ASSIGN_OR_RETURN(TracedValue count, c.ReduceSum(ones, {0, 1}));
      TPUSIM_ASSIGN_OR_RETURN(TracedValue total,
                              c.AllReduce(strategy::ReduceOp::kSum, count));
      TPUSIM_ASSIGN_OR_RETURN(TracedValue two_n,
                              s.Scalar(2.0 * c.num_replicas_in_sync()));
      TPUSIM_ASSIGN_OR_RETURN(TracedValue scale, c.Div(two_n, total));
      TPUSIM_ASSIGN_OR_RETURN(dy, c.Mul(d, scale));
    } else {
      TPUSIM_ASSIGN_OR_RETURN(loss, c.ReduceMean(d2, {0, 1}));
      TPUSIM_ASSIGN_OR_RETURN(
          TracedValue scale,
          s.Scalar(2.0 / static_cast<double>(xt.shape.dim(0) * out_)));
      TPUSIM_ASSIGN_OR_RETURN(dy, c.Mul(d, scale));
    }
    if (s.dtype() != DType::kF32) {
      TPUSIM_ASSIGN_OR_RETURN(loss, c.Cast(loss, DType::kF32));
    }
    TPUSIM_RETURN_IF_ERROR(t.Accumulate(y, dy));
    TPUSIM_RETURN_IF_ERROR(t.Backward());
    return loss;
  }

 private:
  int64_t in_, hidden_, out_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Workload>> MakeMlp(const WorkloadParams& p) {
  // in, hidden and out are within their registry bounds (>= 1).
  TPUSIM_ASSIGN_OR_RETURN(TrainOptions o, CommonOptions(p));
  return std::unique_ptr<Workload>(
      new Mlp(p.Int("in"), p.Int("hidden"), p.Int("out"), o));
}

}  // namespace tpusim::models
