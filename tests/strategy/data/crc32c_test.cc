#include "strategy/data/crc32c.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace tpusim::data {
namespace {

TEST(Crc32cTest, StandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
}

TEST(Crc32cTest, Rfc3720TestVectors) {
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string up, down;
  for (int i = 0; i < 32; ++i) {
    up.push_back(static_cast<char>(i));
    down.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(Crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(down), 0x113FDB5Cu);
}

TEST(Crc32cTest, EmptyInputIsZero) { EXPECT_EQ(Crc32c(""), 0u); }

TEST(Crc32cTest, PortableTablesGiveTheCheckValues) {
  EXPECT_EQ(Crc32cExtendPortable(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32cExtendPortable(0, std::string(32, '\xff').data(), 32),
            0x62A8AB43u);
}

// The hardware path (where the CPU has one) and the tables agree for every
// length 0..300 at every alignment 0..7, and when extending a running CRC.
TEST(Crc32cTest, HardwareAndTablesAgree) {
  std::string data(320, '\0');
  uint32_t x = 12345;
  for (char& c : data) {
    x = x * 1103515245u + 12345u;  // fixed LCG: deterministic bytes
    c = static_cast<char>(x >> 16);
  }
  for (size_t align = 0; align < 8; ++align) {
    for (size_t len = 0; align + len <= 308; ++len) {
      const char* p = data.data() + align;
      ASSERT_EQ(Crc32cExtend(0, p, len), Crc32cExtendPortable(0, p, len))
          << "align " << align << " length " << len;
      ASSERT_EQ(Crc32cExtend(0xDEADBEEFu, p, len),
                Crc32cExtendPortable(0xDEADBEEFu, p, len))
          << "align " << align << " length " << len;
    }
  }
}

TEST(Crc32cTest, ExtendEqualsCrcOfConcatenation) {
  const std::string a = "The quick brown fox ";
  const std::string b = "jumps over the lazy dog, 0123456789";
  for (size_t split = 0; split <= a.size() + b.size(); ++split) {
    const std::string all = a + b;
    EXPECT_EQ(Crc32cExtend(Crc32c(all.substr(0, split)), all.data() + split,
                           all.size() - split),
              Crc32c(all))
        << split;
  }
}

TEST(Crc32cTest, MaskFollowsTheTFRecordFormula) {
  EXPECT_EQ(MaskCrc32c(0), 0xa282ead8u);
  const uint32_t c = 0xE3069283u;
  EXPECT_EQ(MaskCrc32c(c),
            static_cast<uint32_t>(((c >> 15) | (c << 17)) + 0xa282ead8u));
  EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(c)), c);
}

}  // namespace
}  // namespace tpusim::data
