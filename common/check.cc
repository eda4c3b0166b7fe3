#include "common/check.h"

#include <cstdio>
#include <cstdlib>

namespace tpusim::common::internal {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << file << ":" << line << ": TPUSIM_CHECK failed: " << condition
          << " ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", stream_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace tpusim::common::internal
