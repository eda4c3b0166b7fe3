// tests/fuzz/contract.h
//
// Contract checks for the fuzz harnesses: unlike TPUSIM_CHECK they are about
// the code under test, so a failure names the target and the broken promise.
//
//   FUZZ_EXPECT(s.code() == absl::StatusCode::kInvalidArgument, "scenario", s);

#ifndef TPUSIM_TESTS_FUZZ_CONTRACT_H_
#define TPUSIM_TESTS_FUZZ_CONTRACT_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace tpusim::fuzz {

[[noreturn]] inline void ContractBroken(const char* target, const char* cond,
                                        const std::string& detail) {
  std::fprintf(stderr, "%s: contract broken: %s\n  %s\n", target, cond,
               detail.c_str());
  std::abort();
}

}  // namespace tpusim::fuzz

// Aborts with `target`, the condition's text and the StrCat of the remaining
// arguments when `cond` is false.
#define FUZZ_EXPECT(cond, target, ...)                             \
  do {                                                             \
    if (!(cond)) {                                                 \
      ::tpusim::fuzz::ContractBroken(target, #cond,                \
                                     ::absl::StrCat(__VA_ARGS__)); \
    }                                                              \
  } while (false)

#endif  // TPUSIM_TESTS_FUZZ_CONTRACT_H_
