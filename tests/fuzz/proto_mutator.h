// tests/fuzz/proto_mutator.h
//
// A structure-aware mutator for fuzz targets whose input is a text proto
// (scenario_fuzzer, program_fuzzer). Byte-level mutations of text rarely turn
// "dims: 2" into "dims: 4294967296" or swap one op name for another; this
// parses the input, changes one field through reflection (a boundary number,
// a known name, an added, copied, removed or swapped repeated element, a
// cleared field) and prints it again. Two calls in three, and every input that
// does not parse, get libFuzzer's own byte mutations instead, so syntax errors
// stay covered.
//
//   extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size,
//                                             size_t max_size, unsigned seed) {
//     static const auto* prototype = new scenarios::Scenario;
//     return MutateTextProto(*prototype, {"float32", "int64"}, data, size,
//                            max_size, seed);
//   }

#ifndef TPUSIM_TESTS_FUZZ_PROTO_MUTATOR_H_
#define TPUSIM_TESTS_FUZZ_PROTO_MUTATOR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "google/protobuf/message.h"

namespace tpusim::fuzz {

// Mutates the text proto data[0, size) of a `prototype` message in place and
// returns its new size (<= max_size). `words` are strings worth trying in
// string fields (op names, dtype names, ...). Deterministic for a given seed.
size_t MutateTextProto(const google::protobuf::Message& prototype,
                       const std::vector<std::string>& words, uint8_t* data,
                       size_t size, size_t max_size, unsigned seed);

}  // namespace tpusim::fuzz

#endif  // TPUSIM_TESTS_FUZZ_PROTO_MUTATOR_H_
