// The structure-aware mutator of scenario_fuzzer (tests/fuzz/proto_mutator.h).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/scenario.pb.h"
#include "tests/fuzz/proto_mutator.h"

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size,
                                          size_t max_size, unsigned seed) {
  static const auto* prototype = new tpusim::scenarios::Scenario;
  // Names the validator knows (and a few it must reject).
  static const auto* words = new std::vector<std::string>{
      "2.2",     "2.4",        "2.21",     "float32",  "float64",       "bfloat16",
      "int32",   "int64",      "uint8",    "string",        "identity",
      "square",  "negate",     "add_one",  "parse_example", "even",
      "odd",     "positive",   "tfrecord", "text_line",     "fixed_length",
      "v2-8",    "v3-32",      "v4-16",    "v5litepod-16",  "v6e-8",
      "v4-4096", "data/*.txt", "../x",     "a/b",           "x"};
  return tpusim::fuzz::MutateTextProto(*prototype, *words, data, size, max_size,
                                       seed);
}
