// bert and transformer_lm: transformer encoders/decoders with multi-head
// attention, GELU feed-forward and layer norm.
//
// bert (Devlin et al.): word (vocab x d), position (512 x d) and token-type
// (2 x d) embeddings summed and layer-normed; post-LN layers; the masked-LM
// head is the word embedding transposed (tied, no extra parameters) over every
// position; the pooler (dense d x d + tanh on the first token) is included and
// feeds a parameter-free next-sentence head (its first two units are the two
// logits), so the parameter count is the published BERT count, which leaves
// out the pre-training heads' own weights. loss = MLM + NSP cross-entropy.
//
// transformer_lm (GPT-style): word and learned position embeddings, pre-LN
// causal layers, a final layer norm, the tied word embedding as the output
// layer; next-token cross-entropy.

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

#define ASSIGN TPUSIM_ASSIGN_OR_RETURN
#define RETURN_IF TPUSIM_RETURN_IF_ERROR

struct Config {
  int64_t layers, d, heads, ffn, seq, vocab, positions;
  int64_t type_vocab;  // 0: no token-type embedding (transformer_lm)
  bool causal, pre_ln, bert_heads;
};

struct LayerParams {
  int qw, kw, vw, ow, ln1, ff1, ff2, ln2;  // each dense: w, then b = w + 1
};

// x[start:limit) along `axis`, with backward padding dy with zeros.
absl::StatusOr<TracedValue> SliceAxis(Tape& t, TracedValue x, int axis,
                                      int64_t start, int64_t limit) {
  ReplicaContext& c = t.ctx();
  ASSIGN(ValueType xt, c.TypeOf(x));
  std::vector<int64_t> lo(xt.rank(), 0), hi = xt.shape.dims();
  lo[axis] = start;
  hi[axis] = limit;
  ASSIGN(TracedValue y, c.Slice(x, lo, hi));
  t.Record([&t, x, y, xt, axis, start, limit]() -> absl::Status {
    ReplicaContext& c = t.ctx();
    std::optional<TracedValue> dy = t.GradOf(y);
    if (!dy.has_value()) return absl::OkStatus();
    std::vector<TracedValue> parts;
    auto zeros = [&](int64_t n) -> absl::Status {
      if (n == 0) return absl::OkStatus();
      std::vector<int64_t> dims = xt.shape.dims();
      dims[axis] = n;
      ASSIGN(TracedValue z, Zeros(c, xt.dtype, dims));
      parts.push_back(z);
      return absl::OkStatus();
    };
    RETURN_IF(zeros(start));
    parts.push_back(*dy);
    RETURN_IF(zeros(xt.shape.dim(axis) - limit));
    TracedValue dx = parts[0];
    if (parts.size() > 1) {
      ASSIGN(dx, c.Concat(parts, axis));
    }
    return t.Accumulate(x, dx);
  });
  return y;
}

// x [B, S, d] + table[0:S) (a learned position embedding).
absl::StatusOr<TracedValue> AddPositions(Tape& t, TracedValue x, int table) {
  ReplicaContext& c = t.ctx();
  ASSIGN(ValueType xt, c.TypeOf(x));
  const int64_t s = xt.shape.dim(1), d = xt.shape.dim(2);
  ASSIGN(TracedValue p, t.Param(table));
  ASSIGN(ValueType pt, c.TypeOf(p));
  ASSIGN(TracedValue rows, c.Slice(p, {0, 0}, {s, d}));
  ASSIGN(TracedValue y, c.Add(x, rows));
  t.Record([&t, x, y, pt, s, table]() -> absl::Status {
    ReplicaContext& c = t.ctx();
    ASSIGN(TracedValue dy, t.GradOf(y).has_value()
                               ? absl::StatusOr<TracedValue>(*t.GradOf(y))
                               : absl::InternalError("no gradient"));
    RETURN_IF(t.Accumulate(x, dy));
    ASSIGN(TracedValue dsum, c.ReduceSum(dy, {0}));  // [S, d]
    std::vector<int32_t> iota(s);
    for (int64_t i = 0; i < s; ++i) iota[i] = static_cast<int32_t>(i);
    ASSIGN(TracedValue ids, c.Constant(Tensor::FromVector<int32_t>(
                                Shape({s}), std::move(iota))));
    ASSIGN(TracedValue zeros, Zeros(c, pt.dtype, pt.shape.dims()));
    ASSIGN(TracedValue dp, c.ScatterAdd(zeros, ids, dsum, 0));
    return t.ParamGrad(table, dp);
  });
  return y;
}

// logits = x W^T with W the word embedding [V, d] (tied output layer).
absl::StatusOr<TracedValue> TiedLogits(Tape& t, TracedValue x, int table) {
  ReplicaContext& c = t.ctx();
  ASSIGN(TracedValue w, t.Param(table));
  ASSIGN(TracedValue y, c.MatMul(x, w, false, /*transpose_b=*/true));
  t.Record([&t, x, w, y, table]() -> absl::Status {
    ReplicaContext& c = t.ctx();
    std::optional<TracedValue> dy = t.GradOf(y);
    if (!dy.has_value()) return absl::InternalError("no gradient of logits");
    ASSIGN(TracedValue dw, c.MatMul(*dy, x, /*transpose_a=*/true));
    RETURN_IF(t.ParamGrad(table, dw));
    ASSIGN(TracedValue dx, c.MatMul(*dy, w));
    return t.Accumulate(x, dx);
  });
  return y;
}

class Transformer : public Workload {
 public:
  Transformer(std::string name, Config cfg, TrainOptions o)
      : name_(std::move(name)), c_(cfg) {
    options_ = o;
    const float emb = 0.03f;  // chosen: uniform init of about BERT's 0.02 std
    word_ = Add("embeddings/word", Shape({c_.vocab, c_.d}), emb, 0, true);
    pos_ =
        Add("embeddings/position", Shape({c_.positions, c_.d}), emb, 0, true);
    if (c_.type_vocab > 0) {
      type_ = Add("embeddings/token_type", Shape({c_.type_vocab, c_.d}), emb, 0,
                  true);
    }
    if (!c_.pre_ln) emb_ln_ = AddLn("embeddings/layer_norm");
    for (int64_t l = 0; l < c_.layers; ++l) {
      const std::string n = absl::StrCat("layer_", l, "/");
      LayerParams p;
      p.qw = AddDense(n + "attention/query", c_.d, c_.d);
      p.kw = AddDense(n + "attention/key", c_.d, c_.d);
      p.vw = AddDense(n + "attention/value", c_.d, c_.d);
      p.ow = AddDense(n + "attention/output", c_.d, c_.d);
      p.ln1 = AddLn(n + "attention/layer_norm");
      p.ff1 = AddDense(n + "intermediate", c_.d, c_.ffn);
      p.ff2 = AddDense(n + "output", c_.ffn, c_.d);
      p.ln2 = AddLn(n + "output/layer_norm");
      layers_.push_back(p);
    }
    if (c_.pre_ln) final_ln_ = AddLn("final_layer_norm");
    if (c_.bert_heads) pooler_ = AddDense("pooler", c_.d, c_.d);
  }
  std::string name() const override { return name_; }
  std::vector<ValueType> InputTypes(int64_t b) const override {
    const ValueType tokens(DType::kI32, Shape({b, c_.seq}));
    if (c_.bert_heads) {
      return {tokens, tokens, tokens, ValueType(DType::kI32, Shape({b}))};
    }
    return {tokens, tokens};
  }
  std::vector<Tensor> SyntheticInputs(int64_t b, uint64_t seed) const override {
    auto ints = [&](int64_t n, int64_t mod, uint64_t stream, Shape shape) {
      std::vector<int32_t> v(n);
      for (int64_t i = 0; i < n; ++i)
        v[i] = static_cast<int32_t>(
            static_cast<int64_t>((Noise(seed, stream, i) + 1.0f) * 0.5f *
                                 static_cast<float>(mod)) %
            mod);
      return Tensor::FromVector<int32_t>(std::move(shape), std::move(v));
    };
    const Shape tok({b, c_.seq});
    std::vector<Tensor> out = {ints(b * c_.seq, c_.vocab, 3000, tok)};
    if (c_.bert_heads)
      out.push_back(ints(b * c_.seq, c_.type_vocab, 3001, tok));
    out.push_back(ints(b * c_.seq, c_.vocab, 3002, tok));
    if (c_.bert_heads) out.push_back(ints(b, 2, 3003, Shape({b})));
    return out;
  }

  absl::StatusOr<TracedValue> ForwardBackward(
      StepContext& s, absl::Span<const TracedValue> in) const override {
    Tape t(s);
    ReplicaContext& c = s.ctx();
    for (TracedValue v : in) t.MarkInput(v);
    ASSIGN(ValueType it, c.TypeOf(in[0]));
    const int64_t b = it.shape.dim(0), sq = c_.seq, d = c_.d;
    ASSIGN(TracedValue x, Embed(t, word_, in[0]));  // [B, S, d]
    ASSIGN(x, AddPositions(t, x, pos_));
    if (c_.bert_heads) {
      ASSIGN(TracedValue ty, Embed(t, type_, in[1]));
      ASSIGN(x, models::Add(t, x, ty));
    }
    ASSIGN(x, Reshape(t, x, {b * sq, d}));
    if (!c_.pre_ln) {
      ASSIGN(x, Norm(t, x, emb_ln_, emb_ln_ + 1, {-1}, 1e-12));
    }
    for (const LayerParams& p : layers_) {
      ASSIGN(x, Layer(t, x, p, b));
    }
    if (c_.pre_ln) {
      ASSIGN(x, Norm(t, x, final_ln_, final_ln_ + 1, {-1}, 1e-5));
    }
    ASSIGN(TracedValue logits, TiedLogits(t, x, word_));
    const TracedValue labels = c_.bert_heads ? in[2] : in[1];
    ASSIGN(TracedValue flat_labels, c.Reshape(labels, {b * sq}));
    ASSIGN(TracedValue loss, SoftmaxCrossEntropy(t, logits, flat_labels));
    if (c_.bert_heads) {
      ASSIGN(TracedValue x3, Reshape(t, x, {b, sq, d}));
      ASSIGN(TracedValue cls3, SliceAxis(t, x3, 1, 0, 1));
      ASSIGN(TracedValue cls, Reshape(t, cls3, {b, d}));
      ASSIGN(TracedValue pz, Dense(t, cls, pooler_, pooler_ + 1));
      ASSIGN(TracedValue pooled, Tanh(t, pz));
      ASSIGN(TracedValue nsp, SliceAxis(t, pooled, 1, 0, 2));
      ASSIGN(TracedValue nsp_loss, SoftmaxCrossEntropy(t, nsp, in[3]));
      ASSIGN(loss, c.Add(loss, nsp_loss));
    }
    RETURN_IF(t.Backward());
    return loss;
  }

 private:
  int Add(std::string name, Shape shape, float scale, float value,
          bool embedding) {
    params_.push_back(
        {std::move(name), std::move(shape), scale, value, embedding});
    return static_cast<int>(params_.size()) - 1;
  }
  int AddDense(const std::string& name, int64_t in, int64_t out) {
    const int w =
        Add(name + "/kernel", Shape({in, out}),
            static_cast<float>(std::sqrt(3.0 / double(in))), 0, false);
    Add(name + "/bias", Shape({out}), 0, 0, false);
    return w;
  }
  int AddLn(const std::string& name) {
    const int g = Add(name + "/gamma", Shape({c_.d}), 0, 1, false);
    Add(name + "/beta", Shape({c_.d}), 0, 0, false);
    return g;
  }

  absl::StatusOr<TracedValue> Attn(Tape& t, TracedValue x, const LayerParams& p,
                                   int64_t b) const {
    ASSIGN(TracedValue q, Dense(t, x, p.qw, p.qw + 1));
    ASSIGN(TracedValue k, Dense(t, x, p.kw, p.kw + 1));
    ASSIGN(TracedValue v, Dense(t, x, p.vw, p.vw + 1));
    ASSIGN(TracedValue a,
           Attention(t, q, k, v, b, c_.seq, c_.heads, c_.causal));
    return Dense(t, a, p.ow, p.ow + 1);
  }
  absl::StatusOr<TracedValue> Ffn(Tape& t, TracedValue x,
                                  const LayerParams& p) const {
    ASSIGN(TracedValue h, Dense(t, x, p.ff1, p.ff1 + 1));
    ASSIGN(h, Gelu(t, h));
    return Dense(t, h, p.ff2, p.ff2 + 1);
  }
  absl::StatusOr<TracedValue> Layer(Tape& t, TracedValue x,
                                    const LayerParams& p, int64_t b) const {
    const double eps = c_.pre_ln ? 1e-5 : 1e-12;
    if (c_.pre_ln) {
      ASSIGN(TracedValue n1, Norm(t, x, p.ln1, p.ln1 + 1, {-1}, eps));
      ASSIGN(TracedValue a, Attn(t, n1, p, b));
      ASSIGN(x, models::Add(t, x, a));
      ASSIGN(TracedValue n2, Norm(t, x, p.ln2, p.ln2 + 1, {-1}, eps));
      ASSIGN(TracedValue f, Ffn(t, n2, p));
      return models::Add(t, x, f);
    }
    ASSIGN(TracedValue a, Attn(t, x, p, b));
    ASSIGN(TracedValue r1, models::Add(t, x, a));
    ASSIGN(x, Norm(t, r1, p.ln1, p.ln1 + 1, {-1}, eps));
    ASSIGN(TracedValue f, Ffn(t, x, p));
    ASSIGN(TracedValue r2, models::Add(t, x, f));
    return Norm(t, r2, p.ln2, p.ln2 + 1, {-1}, eps);
  }

  std::string name_;
  Config c_;
  int word_ = -1, pos_ = -1, type_ = -1, emb_ln_ = -1, final_ln_ = -1,
      pooler_ = -1;
  std::vector<LayerParams> layers_;
};

absl::Status Positive(const std::string& workload, const WorkloadParams& p,
                      std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (p.Int(k) < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload ", workload, ": parameter ", k, "=", p.Int(k),
                       " must be >= 1"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckHeads(const std::string& workload, int64_t d, int64_t h) {
  if (d % h != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload ", workload, ": d_model=", d,
                     " is not divisible by heads=", h));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Workload>> MakeBert(const WorkloadParams& p) {
  TPUSIM_ASSIGN_OR_RETURN(TrainOptions o, CommonOptions(p));
  RETURN_IF(Positive(
      "bert", p, {"seq_len", "vocab", "layers", "d_model", "heads", "ffn"}));
  Config c;
  const std::string& size = p.String("size");
  if (size == "base") {
    c = {12, 768, 12, 3072, 0, 0, 512, 2, false, false, true};
  } else if (size == "large") {
    c = {24, 1024, 16, 4096, 0, 0, 512, 2, false, false, true};
  } else if (size == "custom") {
    c = {p.Int("layers"),
         p.Int("d_model"),
         p.Int("heads"),
         p.Int("ffn"),
         0,
         0,
         512,
         2,
         false,
         false,
         true};
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("workload bert: parameter size=\"", size,
                     "\" is not allowed; allowed base, large, custom"));
  }
  c.seq = p.Int("seq_len");
  c.vocab = p.Int("vocab");
  if (c.seq > c.positions) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload bert: parameter seq_len=", c.seq,
                     " exceeds the 512 position embeddings"));
  }
  RETURN_IF(CheckHeads("bert", c.d, c.heads));
  return std::unique_ptr<Workload>(new Transformer("bert", c, o));
}

absl::StatusOr<std::unique_ptr<Workload>> MakeTransformerLm(
    const WorkloadParams& p) {
  TPUSIM_ASSIGN_OR_RETURN(TrainOptions o, CommonOptions(p));
  RETURN_IF(Positive("transformer_lm", p,
                     {"layers", "d_model", "heads", "seq", "vocab"}));
  Config c;
  c.layers = p.Int("layers");
  c.d = p.Int("d_model");
  c.heads = p.Int("heads");
  c.ffn = p.Int("ffn") > 0 ? p.Int("ffn") : 4 * c.d;
  c.seq = p.Int("seq");
  c.vocab = p.Int("vocab");
  c.positions = c.seq;
  c.type_vocab = 0;
  c.causal = true;
  c.pre_ln = true;
  c.bert_heads = false;
  RETURN_IF(CheckHeads("transformer_lm", c.d, c.heads));
  return std::unique_ptr<Workload>(new Transformer("transformer_lm", c, o));
}

}  // namespace tpusim::models
