// common/check.h
//
// TPUSIM_CHECK(cond) << "context";  aborts with the file, line, condition and
// message when `cond` is false. For programming errors only (a violated
// precondition the caller controls); bad input is reported through
// absl::Status, never through a CHECK. Debian's Abseil has no absl/log, hence
// this macro. It stays on in Release builds.

#ifndef TPUSIM_COMMON_CHECK_H_
#define TPUSIM_COMMON_CHECK_H_

#include <sstream>

namespace tpusim::common::internal {

// Collects the streamed message and aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Lets `TPUSIM_CHECK(c) << x` compile as a void expression in both ternary
// branches.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace tpusim::common::internal

#define TPUSIM_CHECK(condition)                               \
  (condition) ? (void)0                                       \
              : ::tpusim::common::internal::Voidify() &       \
                    ::tpusim::common::internal::CheckFailure( \
                        __FILE__, __LINE__, #condition)       \
                        .stream()

#define TPUSIM_CHECK_EQ(a, b) \
  TPUSIM_CHECK((a) == (b)) << (a) << " vs " << (b) << " "
#define TPUSIM_CHECK_GE(a, b) \
  TPUSIM_CHECK((a) >= (b)) << (a) << " vs " << (b) << " "
#define TPUSIM_CHECK_LT(a, b) \
  TPUSIM_CHECK((a) < (b)) << (a) << " vs " << (b) << " "

#endif  // TPUSIM_COMMON_CHECK_H_
