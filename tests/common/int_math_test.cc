// Issue 7: integer arithmetic wraps like TF's integer kernels, without UB;
// size products are checked.

#include "common/int_math.h"

#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace tpusim::common {
namespace {

TEST(IntMathTest, WrapsInTwosComplement) {
  constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(WrapAdd<int32_t>(kMax32, 1), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(WrapAdd<int64_t>(kMax64, 1), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(WrapSub<int64_t>(std::numeric_limits<int64_t>::min(), 1), kMax64);
  EXPECT_EQ(WrapMul<int32_t>(65536, 65536), 0);
  EXPECT_EQ(WrapMul<int32_t>(65536, 65537), 65536);
  EXPECT_EQ(WrapMul<uint8_t>(16, 17), 16);
}

TEST(IntMathTest, CheckedProductsReportOverflow) {
  EXPECT_EQ(CheckedMul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_FALSE(CheckedMul(int64_t{1} << 32, int64_t{1} << 32).has_value());
  EXPECT_FALSE(CheckedAdd(std::numeric_limits<int64_t>::max(), 1).has_value());
  EXPECT_EQ(CheckedAdd(40, 2), 42);
}

}  // namespace
}  // namespace tpusim::common
