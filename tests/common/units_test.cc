#include "common/units.h"

#include "gtest/gtest.h"

namespace tpusim::common {
namespace {

TEST(UnitsTest, BytesPrintWithBinaryPrefixes) {
  EXPECT_EQ(Bytes::GiB(32).ToString(), "32 GiB");
  EXPECT_EQ(Bytes::MiB(3).ToString(), "3 MiB");
  EXPECT_EQ(Bytes(512).ToString(), "512 B");
  EXPECT_EQ(Bytes::KiB(1).count(), 1024);
}

TEST(UnitsTest, PicosecondsConvertAndPrint) {
  EXPECT_EQ(Picoseconds::FromMicroseconds(1).count(), 1000000);
  EXPECT_EQ(Picoseconds::FromNanoseconds(1500).ToString(), "1.500 us");
  EXPECT_EQ(Picoseconds(12).ToString(), "12 ps");
  EXPECT_DOUBLE_EQ(Picoseconds::FromMicroseconds(2).seconds(), 2e-6);
}

TEST(UnitsTest, BandwidthTimeRoundsUpToWholePicoseconds) {
  // 1 GB/s moves 1 byte per nanosecond.
  EXPECT_EQ(BytesPerSecond::GBps(1).TimeFor(Bytes(3)).count(), 3000);
  // 3 bytes at 7 GB/s = 428.57 ps, rounded up.
  EXPECT_EQ(BytesPerSecond::GBps(7).TimeFor(Bytes(3)).count(), 429);
}

}  // namespace
}  // namespace tpusim::common
