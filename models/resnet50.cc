// resnet50: ResNet-50 v1.5 in NHWC. Stem 7x7/2 conv + BN + ReLU + 3x3/2 max
// pool; bottleneck stages of 3, 4, 6, 3 blocks with widths w, 2w, 4w, 8w
// (w = 64) and 4x expansion; v1.5 puts a stage's stride 2 on the 3x3 conv (v1
// had it on the first 1x1); a projection shortcut (1x1 conv + BN) opens each
// stage; global average pool; a dense layer with bias. Convs have no bias; BN
// uses the batch statistics (training mode) with gamma and beta as parameters
// (moving statistics are not parameters and are not tracked). All convs use
// SAME padding.

#include <cmath>

#include "common/status_macros.h"
#include "models/layers.h"
#include "models/models.h"

namespace tpusim::models {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::ValueType;

struct ConvBn {
  int conv, gamma, beta;
  int64_t stride;
};
struct Block {
  ConvBn a, b, c;
  std::optional<ConvBn> shortcut;
};

class ResNet50 : public Workload {
 public:
  ResNet50(int64_t image, int64_t width, int64_t classes, TrainOptions o)
      : image_(image), classes_(classes) {
    options_ = o;
    stem_ = AddConvBn("conv1", 7, 3, width, 2);
    const int64_t blocks[4] = {3, 4, 6, 3};
    int64_t cin = width;
    for (int s = 0; s < 4; ++s) {
      const int64_t w = width << s;
      for (int64_t i = 0; i < blocks[s]; ++i) {
        const std::string n = absl::StrCat("layer", s + 1, ".", i, ".");
        const int64_t stride = (i == 0 && s > 0) ? 2 : 1;
        Block blk;
        blk.a = AddConvBn(n + "conv1", 1, cin, w, 1);
        blk.b = AddConvBn(n + "conv2", 3, w, w, stride);
        blk.c = AddConvBn(n + "conv3", 1, w, 4 * w, 1);
        if (i == 0)
          blk.shortcut = AddConvBn(n + "downsample", 1, cin, 4 * w, stride);
        blocks_.push_back(blk);
        cin = 4 * w;
      }
    }
    features_ = cin;
    fc_w_ = static_cast<int>(params_.size());
    params_.push_back({"fc/kernel", Shape({cin, classes}),
                       static_cast<float>(1.0 / std::sqrt(double(cin)))});
    params_.push_back({"fc/bias", Shape({classes}), 0.0f});
  }
  std::string name() const override { return "resnet50"; }
  std::vector<ValueType> InputTypes(int64_t b) const override {
    return {ValueType(DType::kF32, Shape({b, image_, image_, 3})),
            ValueType(DType::kI32, Shape({b}))};
  }
  std::vector<Tensor> SyntheticInputs(int64_t b, uint64_t seed) const override {
    std::vector<float> x(b * image_ * image_ * 3);
    for (size_t i = 0; i < x.size(); ++i) x[i] = Noise(seed, 2000, i);
    std::vector<int32_t> y(b);
    for (int64_t i = 0; i < b; ++i)
      y[i] = static_cast<int32_t>((Noise(seed, 2001, i) + 1.0f) * 0.5f *
                                  static_cast<float>(classes_)) %
             static_cast<int32_t>(classes_);
    return {
        Tensor::FromVector<float>(Shape({b, image_, image_, 3}), std::move(x)),
        Tensor::FromVector<int32_t>(Shape({b}), std::move(y))};
  }
  absl::StatusOr<TracedValue> ForwardBackward(
      StepContext& s, absl::Span<const TracedValue> inputs) const override {
    Tape t(s);
    ReplicaContext& c = s.ctx();
    TracedValue x = inputs[0];
    t.MarkInput(x);
    if (s.dtype() != DType::kF32) {
      TPUSIM_ASSIGN_OR_RETURN(x, c.Cast(x, s.dtype()));
      t.MarkInput(x);
    }
    TPUSIM_ASSIGN_OR_RETURN(x, ApplyConvBn(t, x, stem_, /*relu=*/true));
    TPUSIM_ASSIGN_OR_RETURN(x, MaxPool(t, x, 3, 2));
    for (const Block& b : blocks_) {
      TracedValue shortcut = x;
      if (b.shortcut.has_value()) {
        TPUSIM_ASSIGN_OR_RETURN(shortcut,
                                ApplyConvBn(t, x, *b.shortcut, false));
      }
      TPUSIM_ASSIGN_OR_RETURN(TracedValue y, ApplyConvBn(t, x, b.a, true));
      TPUSIM_ASSIGN_OR_RETURN(y, ApplyConvBn(t, y, b.b, true));
      TPUSIM_ASSIGN_OR_RETURN(y, ApplyConvBn(t, y, b.c, false));
      TPUSIM_ASSIGN_OR_RETURN(y, Add(t, y, shortcut));
      TPUSIM_ASSIGN_OR_RETURN(x, Relu(t, y));
    }
    TPUSIM_ASSIGN_OR_RETURN(TracedValue pooled, GlobalAvgPool(t, x));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue logits,
                            Dense(t, pooled, fc_w_, fc_w_ + 1));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue loss,
                            SoftmaxCrossEntropy(t, logits, inputs[1]));
    TPUSIM_RETURN_IF_ERROR(t.Backward());
    return loss;
  }

 private:
  ConvBn AddConvBn(const std::string& name, int64_t k, int64_t cin,
                   int64_t cout, int64_t stride) {
    ConvBn r;
    r.stride = stride;
    r.conv = static_cast<int>(params_.size());
    params_.push_back(
        {name + "/kernel", Shape({k, k, cin, cout}),
         static_cast<float>(std::sqrt(6.0 / double(k * k * cin)))});
    r.gamma = static_cast<int>(params_.size());
    params_.push_back({name + "/bn/gamma", Shape({cout}), 0.0f, 1.0f});
    r.beta = static_cast<int>(params_.size());
    params_.push_back({name + "/bn/beta", Shape({cout}), 0.0f, 0.0f});
    return r;
  }
  static absl::StatusOr<TracedValue> ApplyConvBn(Tape& t, TracedValue x,
                                                 const ConvBn& l, bool relu) {
    TPUSIM_ASSIGN_OR_RETURN(TracedValue y, Conv(t, x, l.conv, l.stride));
    TPUSIM_ASSIGN_OR_RETURN(y, Norm(t, y, l.gamma, l.beta, {0, 1, 2}, 1e-5));
    if (relu) return Relu(t, y);
    return y;
  }

  int64_t image_, classes_;
  int64_t features_ = 0;
  ConvBn stem_;
  std::vector<Block> blocks_;
  int fc_w_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Workload>> MakeResNet50(
    const WorkloadParams& p) {
  // image_size, width and num_classes are within their registry bounds.
  TPUSIM_ASSIGN_OR_RETURN(TrainOptions o, CommonOptions(p));
  return std::unique_ptr<Workload>(new ResNet50(
      p.Int("image_size"), p.Int("width"), p.Int("num_classes"), o));
}

}  // namespace tpusim::models
