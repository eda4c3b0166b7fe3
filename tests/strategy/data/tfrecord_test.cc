#include "strategy/data/tfrecord.h"

#include <cstdint>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/data/crc32c.h"
#include "tests/strategy/data/test_files.h"

namespace tpusim::data {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::data::testing::FreshTempDir;
using ::tpusim::data::testing::ReadFile;
using ::tpusim::data::testing::WriteFile;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

uint32_t U32At(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[at + i]);
  return v;
}

TEST(TFRecordTest, EncodedRecordHasTheDocumentedLayout) {
  const std::string rec = EncodeTFRecord("abc");
  ASSERT_EQ(rec.size(), 8u + 4u + 3u + 4u);
  EXPECT_EQ(rec.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(U32At(rec, 8), MaskCrc32c(Crc32c(rec.data(), 8)));
  EXPECT_EQ(rec.substr(12, 3), "abc");
  EXPECT_EQ(U32At(rec, 15), MaskCrc32c(Crc32c("abc")));
}

TEST(TFRecordTest, WriterOutputIsTheConcatenatedRecords) {
  const std::string path = FreshTempDir() + "/a.tfrecord";
  ASSERT_THAT(WriteTFRecordFile(path, {"x", "", "yz"}), IsOk());
  EXPECT_EQ(ReadFile(path),
            EncodeTFRecord("x") + EncodeTFRecord("") + EncodeTFRecord("yz"));
}

TEST(TFRecordTest, RoundTripsRecordsIncludingEmptyAndLarge) {
  const std::string path = FreshTempDir() + "/a.tfrecord";
  std::string big(100000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  ASSERT_THAT(WriteTFRecordFile(path, {"first", "", big}), IsOk());
  absl::StatusOr<std::vector<std::string>> records = ReadTFRecordFile(path);
  ASSERT_THAT(records, IsOk());
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0], "first");
  EXPECT_EQ((*records)[1], "");
  EXPECT_EQ((*records)[2], big);
}

TEST(TFRecordTest, ReaderReportsOffsets) {
  const std::string path = FreshTempDir() + "/a.tfrecord";
  ASSERT_THAT(WriteTFRecordFile(path, {"ab", "c"}), IsOk());
  auto reader = TFRecordFileReader::Open(path);
  ASSERT_THAT(reader, IsOk());
  EXPECT_EQ((*reader)->offset(), 0);
  ASSERT_THAT((*reader)->ReadNext(), IsOk());
  EXPECT_EQ((*reader)->offset(), 18);
  ASSERT_THAT((*reader)->ReadNext(), IsOk());
  EXPECT_EQ((*reader)->offset(), 35);
  absl::StatusOr<std::optional<std::string>> end = (*reader)->ReadNext();
  ASSERT_THAT(end, IsOk());
  EXPECT_FALSE(end->has_value());
}

TEST(TFRecordTest, CorruptDataIsDataLossNamingFileAndOffset) {
  const std::string path = FreshTempDir() + "/corrupt.tfrecord";
  std::string bytes = EncodeTFRecord("hello") + EncodeTFRecord("world");
  bytes[21 + 12 + 1] ^= 0x01;  // a payload byte of the second record
  WriteFile(path, bytes);
  auto reader = TFRecordFileReader::Open(path);
  ASSERT_THAT(reader, IsOk());
  absl::StatusOr<std::optional<std::string>> first = (*reader)->ReadNext();
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(**first, "hello");
  EXPECT_THAT((*reader)->ReadNext(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path),
                             HasSubstr("corrupted record at byte offset 21"),
                             HasSubstr("data checksum mismatch"))));
}

TEST(TFRecordTest, CorruptLengthIsDataLoss) {
  const std::string path = FreshTempDir() + "/corrupt.tfrecord";
  std::string bytes = EncodeTFRecord("hello");
  bytes[0] ^= 0x40;
  WriteFile(path, bytes);
  EXPECT_THAT(ReadTFRecordFile(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path),
                             HasSubstr("corrupted record at byte offset 0"),
                             HasSubstr("length checksum mismatch"))));
}

TEST(TFRecordTest, TruncatedPayloadIsDataLossNamingFileAndOffset) {
  const std::string path = FreshTempDir() + "/short.tfrecord";
  std::string bytes = EncodeTFRecord("hello") + EncodeTFRecord("world");
  WriteFile(path, bytes.substr(0, bytes.size() - 3));
  EXPECT_THAT(ReadTFRecordFile(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path),
                             HasSubstr("truncated record at byte offset 21"))));
}

TEST(TFRecordTest, PartialHeaderAtEndIsTruncatedRecord) {
  const std::string path = FreshTempDir() + "/short.tfrecord";
  WriteFile(path, EncodeTFRecord("hello") + std::string("\x05\0\0", 3));
  EXPECT_THAT(ReadTFRecordFile(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("truncated record at byte offset 21")));
}

TEST(TFRecordTest, HugeLengthWithValidChecksumIsTruncatedNotAnAllocation) {
  const std::string path = FreshTempDir() + "/huge.tfrecord";
  std::string header("\0\0\0\0\0\0\0\x7f", 8);
  char crc[4];
  const uint32_t m = MaskCrc32c(Crc32c(header));
  for (int i = 0; i < 4; ++i) crc[i] = static_cast<char>((m >> (8 * i)) & 0xff);
  WriteFile(path, header + std::string(crc, 4) + "abc");
  EXPECT_THAT(ReadTFRecordFile(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("truncated record at byte offset 0")));
}

TEST(TFRecordTest, MissingFileIsNotFoundNamingThePath) {
  const std::string path = FreshTempDir() + "/missing.tfrecord";
  EXPECT_THAT(ReadTFRecordFile(path),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(path)));
}

TEST(TFRecordTest, WriterAfterCloseFailsWithFailedPrecondition) {
  const std::string path = FreshTempDir() + "/w.tfrecord";
  auto w = TFRecordWriter::Open(path);
  ASSERT_THAT(w, IsOk());
  ASSERT_THAT((*w)->Write("a"), IsOk());
  ASSERT_THAT((*w)->Close(), IsOk());
  EXPECT_THAT((*w)->Write("b"), StatusIs(absl::StatusCode::kFailedPrecondition,
                                         HasSubstr("closed")));
  EXPECT_THAT(ReadTFRecordFile(path), IsOk());
}

}  // namespace
}  // namespace tpusim::data
