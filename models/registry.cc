#include "models/models.h"
#include "models/workload.h"

namespace tpusim::models {
namespace {

// Upper bounds of the int parameters (all chosen): far above published models
// (PaLM: 118 layers, d_model 18432, 48 heads; vocabularies up to 256k;
// ResNet-50 widths 64) and low enough that no tensor's element count can
// overflow int64 and that tracing stays within seconds (transformer_lm with
// 256 layers traces in about 2 s).
constexpr int64_t kMaxFeatures = int64_t{1} << 20;
constexpr int64_t kMaxImageSize = 4096;
constexpr int64_t kMaxResNetWidth = 4096;
constexpr int64_t kMaxVocab = int64_t{1} << 20;
constexpr int64_t kMaxLayers = 256;
constexpr int64_t kMaxModelWidth = 65536;
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxFfn = 262144;
constexpr int64_t kMaxSeq = 32768;

std::vector<ParamDef> WithCommon(std::vector<ParamDef> defs,
                                 const std::string& dtype) {
  defs.push_back({"bucket_mib", ParamType::kFloat, 25.0,
                  "gradient all-reduce bucket size in MiB"});
  defs.push_back({"learning_rate", ParamType::kFloat, 0.01, "SGD step size"});
  defs.push_back({"shard_update", ParamType::kBool, false,
                  "reduce-scatter, update the shard, all-gather"});
  defs.push_back({"dtype", ParamType::kString, dtype,
                  "compute dtype: float32 or bfloat16 (parameters stay f32)"});
  return defs;
}

}  // namespace

const std::vector<WorkloadEntry>& Registry() {
  static const std::vector<WorkloadEntry>* registry =
      new std::vector<WorkloadEntry>{
          {"mlp", "two dense layers with ReLU, mean squared error",
           WithCommon({{"in", ParamType::kInt, int64_t{4}, "input features", 1, kMaxFeatures},
                       {"hidden", ParamType::kInt, int64_t{8}, "hidden units", 1,
                        kMaxFeatures},
                       {"out", ParamType::kInt, int64_t{1}, "outputs", 1, kMaxFeatures}},
                      "float32"),
           MakeMlp},
          {"resnet50", "ResNet-50 v1.5, NHWC, batch norm",
           WithCommon(
               {{"image_size", ParamType::kInt, int64_t{224}, "H = W", 1,
                 kMaxImageSize},
                {"width", ParamType::kInt, int64_t{64}, "first stage width", 1,
                 kMaxResNetWidth},
                {"num_classes", ParamType::kInt, int64_t{1000}, "classes", 1,
                 kMaxVocab}},
               "bfloat16"),
           MakeResNet50},
          {"bert", "BERT pre-training (MLM + NSP)",
           WithCommon(
               {{"size", ParamType::kString, std::string("base"),
                 "base, large or custom"},
                {"seq_len", ParamType::kInt, int64_t{128}, "sequence length", 1,
                 512},
                {"vocab", ParamType::kInt, int64_t{30522}, "vocabulary", 1,
                 kMaxVocab},
                {"layers", ParamType::kInt, int64_t{12}, "custom only", 1,
                 kMaxLayers},
                {"d_model", ParamType::kInt, int64_t{768}, "custom only", 1,
                 kMaxModelWidth},
                {"heads", ParamType::kInt, int64_t{12}, "custom only", 1,
                 kMaxHeads},
                {"ffn", ParamType::kInt, int64_t{3072}, "custom only", 1,
                 kMaxFfn}},
               "bfloat16"),
           MakeBert},
          {"transformer_lm", "decoder-only causal language model",
           WithCommon(
               {{"layers", ParamType::kInt, int64_t{12}, "layers", 1, kMaxLayers},
                {"d_model", ParamType::kInt, int64_t{768}, "model width", 1,
                 kMaxModelWidth},
                {"heads", ParamType::kInt, int64_t{12}, "attention heads", 1,
                 kMaxHeads},
                {"ffn", ParamType::kInt, int64_t{0}, "0 = 4 * d_model", 0,
                 kMaxFfn},
                {"seq", ParamType::kInt, int64_t{1024}, "sequence length", 1,
                 kMaxSeq},
                {"vocab", ParamType::kInt, int64_t{32000}, "vocabulary", 1,
                 kMaxVocab},
                {"fsdp", ParamType::kBool, false,
                 "shard weights, gradients and updates over the replicas"}},
               "bfloat16"),
           MakeTransformerLm},
      };
  return *registry;
}

}  // namespace tpusim::models
