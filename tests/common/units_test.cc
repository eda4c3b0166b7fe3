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

TEST(UnitsTest, HumanBytesKeepThreeDigitsUpToTiB) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1536), "1.50 KiB");
  EXPECT_EQ(HumanBytes(int64_t{12} << 20), "12.0 MiB");
  EXPECT_EQ(HumanBytes(10737418240), "10.0 GiB");
  EXPECT_EQ(HumanBytes(128851116040), "120 GiB");
  EXPECT_EQ(HumanBytes((int64_t{5} << 40) / 4), "1.25 TiB");
  EXPECT_EQ(HumanBytes((int64_t{1} << 20) - 1), "1.00 MiB");  // not 1024 KiB
  EXPECT_EQ(HumanBytes(-2048), "-2.00 KiB");
}

TEST(UnitsTest, HumanSecondsGoFromNanosecondsToSeconds) {
  EXPECT_EQ(HumanSeconds(0), "0 s");
  EXPECT_EQ(HumanSeconds(812e-9), "812 ns");
  EXPECT_EQ(HumanSeconds(1.5e-6), "1.50 \u00b5s");
  EXPECT_EQ(HumanSeconds(3.2e-3), "3.20 ms");
  EXPECT_EQ(HumanSeconds(0.2576), "258 ms");
  EXPECT_EQ(HumanSeconds(1.25), "1.25 s");
}

}  // namespace
}  // namespace tpusim::common
