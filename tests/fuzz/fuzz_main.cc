// tests/fuzz/fuzz_main.cc
//
// The libFuzzer entry point of one fuzz target: TPUSIM_FUZZ_ENTRY names the
// harness (tests/fuzz/harnesses.h), set per target by
// tests/fuzz/CMakeLists.txt.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/stubs/logging.h"
#include "tests/fuzz/harnesses.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // protobuf logs (for example) invalid UTF-8 in a string field it is parsing;
  // at millions of inputs that is noise that slows the run. FATAL messages
  // still abort.
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ::tpusim::fuzz::TPUSIM_FUZZ_ENTRY(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
