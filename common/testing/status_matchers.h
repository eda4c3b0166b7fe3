// common/testing/status_matchers.h
//
// gMock matchers for absl::Status and absl::StatusOr<T> (Debian's Abseil
// 20220623 has no absl/status/status_matchers.h):
//
//   EXPECT_THAT(ParseScenario(text), IsOk());
//   EXPECT_THAT(strategy.Reduce(...),
//   StatusIs(absl::StatusCode::kInvalidArgument,
//                                              HasSubstr("out of range")));

#ifndef TPUSIM_COMMON_TESTING_STATUS_MATCHERS_H_
#define TPUSIM_COMMON_TESTING_STATUS_MATCHERS_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace tpusim::testing {
namespace internal {

inline const absl::Status& GetStatus(const absl::Status& status) {
  return status;
}
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace internal

MATCHER(IsOk, "is OK") {
  const absl::Status& status = internal::GetStatus(arg);
  if (!status.ok()) *result_listener << "whose status is " << status;
  return status.ok();
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has code " + absl::StatusCodeToString(code) +
               " and a message that " +
               ::testing::DescribeMatcher<std::string>(message_matcher)) {
  const absl::Status& status = internal::GetStatus(arg);
  *result_listener << "whose status is " << status;
  return status.code() == code &&
         ::testing::Matches(::testing::Matcher<std::string>(message_matcher))(
             std::string(status.message()));
}

}  // namespace tpusim::testing

#endif  // TPUSIM_COMMON_TESTING_STATUS_MATCHERS_H_
