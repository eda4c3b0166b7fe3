// The structure-aware mutator of program_fuzzer (tests/fuzz/proto_mutator.h).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "strategy/runtime/program.pb.h"
#include "tests/fuzz/proto_mutator.h"

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size,
                                          size_t max_size, unsigned seed) {
  static const auto* prototype = new tpusim::proto::ProgramProto;
  // Op, dtype, padding, precision and reduce names.
  static const auto* words = new std::vector<std::string>{"parameter",
                                                          "constant",
                                                          "replica_id",
                                                          "variable_read",
                                                          "variable_assign",
                                                          "variable_assign_add",
                                                          "neg",
                                                          "exp",
                                                          "log",
                                                          "tanh",
                                                          "relu",
                                                          "sigmoid",
                                                          "rsqrt",
                                                          "sqrt",
                                                          "cast",
                                                          "add",
                                                          "sub",
                                                          "mul",
                                                          "div",
                                                          "max",
                                                          "min",
                                                          "dot",
                                                          "conv2d",
                                                          "max_pool2d",
                                                          "reduce_sum",
                                                          "reduce_mean",
                                                          "reduce_max",
                                                          "softmax",
                                                          "reshape",
                                                          "transpose",
                                                          "broadcast",
                                                          "slice",
                                                          "concat",
                                                          "gather",
                                                          "one_hot",
                                                          "all_reduce",
                                                          "all_gather",
                                                          "reduce_scatter",
                                                          "collective_permute",
                                                          "float32",
                                                          "float64",
                                                          "bfloat16",
                                                          "int32",
                                                          "int64",
                                                          "uint8",
                                                          "string",
                                                          "VALID",
                                                          "SAME",
                                                          "DEFAULT",
                                                          "HIGH",
                                                          "HIGHEST",
                                                          "sum",
                                                          "mean"};
  return tpusim::fuzz::MutateTextProto(*prototype, *words, data, size, max_size,
                                       seed);
}
