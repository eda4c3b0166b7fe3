// tests/fuzz/harnesses.h
//
// The bodies of the libFuzzer targets, one per hostile-input entry point. Each
// feeds `input` to the entry point and checks the entry point's documented
// contract; a broken contract prints what broke on stderr and aborts, which
// libFuzzer (and the corpus replay test) reports as a crash. Crashes,
// sanitizer reports and hangs inside the entry point are found by the
// sanitizers and libFuzzer themselves.
//
//   fuzz target        input                         entry point
//   scenario_fuzzer    scenario text proto           scenarios::ParseScenario
//   tfrecord_fuzzer    bytes of a TFRecord file      data::ReadTFRecordFile
//   example_fuzzer     a serialized tf.train.Example data::ParseSingleExample,
//                                                    data::ParseExample
//   program_fuzzer     ProgramProto text proto runtime::Program::FromProto
//
// tests/fuzz/fuzz_main.cc wraps one of them as LLVMFuzzerTestOneInput;
// tests/fuzz/corpus_replay_test.cc runs the seed corpus and every saved crash
// input through them in the ordinary (g++) build.

#ifndef TPUSIM_TESTS_FUZZ_HARNESSES_H_
#define TPUSIM_TESTS_FUZZ_HARNESSES_H_

#include "absl/strings/string_view.h"

namespace tpusim::fuzz {

void FuzzScenario(absl::string_view input);
void FuzzTFRecord(absl::string_view input);
void FuzzExample(absl::string_view input);
void FuzzProgram(absl::string_view input);

}  // namespace tpusim::fuzz

#endif  // TPUSIM_TESTS_FUZZ_HARNESSES_H_
