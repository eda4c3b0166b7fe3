#include "common/status_macros.h"

#include "common/check.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim {
namespace {

using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0)
    return absl::InvalidArgumentError(absl::StrCat("x=", x, " is odd"));
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  TPUSIM_ASSIGN_OR_RETURN(int half, Half(x));
  TPUSIM_ASSIGN_OR_RETURN(half, Half(half));
  return half;
}

absl::Status CheckEven(int x) {
  TPUSIM_RETURN_IF_ERROR(Half(x).status());
  return absl::OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_THAT(Quarter(6),
              StatusIs(absl::StatusCode::kInvalidArgument, "x=3 is odd"));
}

TEST(StatusMacrosTest, ReturnIfErrorReturnsTheStatusUnchanged) {
  EXPECT_THAT(CheckEven(4), IsOk());
  EXPECT_THAT(CheckEven(5),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("odd")));
}

TEST(StatusMacrosTest, MatchersRejectTheWrongCode) {
  EXPECT_THAT(CheckEven(5), ::testing::Not(IsOk()));
  EXPECT_THAT(CheckEven(5), ::testing::Not(StatusIs(absl::StatusCode::kNotFound,
                                                    HasSubstr("odd"))));
}

TEST(CheckDeathTest, FailedCheckAbortsWithConditionAndMessage) {
  EXPECT_DEATH({ TPUSIM_CHECK(1 + 1 == 3) << "arithmetic " << 42; },
               "TPUSIM_CHECK failed: 1 \\+ 1 == 3 arithmetic 42");
}

}  // namespace
}  // namespace tpusim
