#include "models/models.h"
#include "models/workload.h"

namespace tpusim::models {
namespace {

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
           WithCommon({{"in", ParamType::kInt, int64_t{4}, "input features"},
                       {"hidden", ParamType::kInt, int64_t{8}, "hidden units"},
                       {"out", ParamType::kInt, int64_t{1}, "outputs"}},
                      "float32"),
           MakeMlp},
          {"resnet50", "ResNet-50 v1.5, NHWC, batch norm",
           WithCommon(
               {{"image_size", ParamType::kInt, int64_t{224}, "H = W"},
                {"width", ParamType::kInt, int64_t{64}, "first stage width"},
                {"num_classes", ParamType::kInt, int64_t{1000}, "classes"}},
               "bfloat16"),
           MakeResNet50},
          {"bert", "BERT pre-training (MLM + NSP)",
           WithCommon(
               {{"size", ParamType::kString, std::string("base"),
                 "base, large or custom"},
                {"seq_len", ParamType::kInt, int64_t{128}, "sequence length"},
                {"vocab", ParamType::kInt, int64_t{30522}, "vocabulary"},
                {"layers", ParamType::kInt, int64_t{12}, "custom only"},
                {"d_model", ParamType::kInt, int64_t{768}, "custom only"},
                {"heads", ParamType::kInt, int64_t{12}, "custom only"},
                {"ffn", ParamType::kInt, int64_t{3072}, "custom only"}},
               "bfloat16"),
           MakeBert},
          {"transformer_lm", "decoder-only causal language model",
           WithCommon(
               {{"layers", ParamType::kInt, int64_t{12}, "layers"},
                {"d_model", ParamType::kInt, int64_t{768}, "model width"},
                {"heads", ParamType::kInt, int64_t{12}, "attention heads"},
                {"ffn", ParamType::kInt, int64_t{0}, "0 = 4 * d_model"},
                {"seq", ParamType::kInt, int64_t{1024}, "sequence length"},
                {"vocab", ParamType::kInt, int64_t{32000}, "vocabulary"},
                {"fsdp", ParamType::kBool, false,
                 "shard weights, gradients and updates over the replicas"}},
               "bfloat16"),
           MakeTransformerLm},
      };
  return *registry;
}

}  // namespace tpusim::models
