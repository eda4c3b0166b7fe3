// Compressed TFRecord files (compression_type "ZLIB" and "GZIP"): round trips,
// known-good streams made by other tools, truncation and corruption at every
// offset, and files read with the wrong compression_type.

#include <cstdint>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/data/crc32c.h"
#include "strategy/data/dataset.h"
#include "strategy/data/tfrecord.h"
#include "strategy/data/zlib_stream.h"
#include "tests/strategy/data/test_files.h"

namespace tpusim::data {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::tpusim::data::testing::FreshTempDir;
using ::tpusim::data::testing::ReadFile;
using ::tpusim::data::testing::WriteFile;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

// Known-good compressed copies of one TFRecord stream, the records "alpha",
// "" and "gamma gamma gamma gamma" (76 bytes), made at test-authoring time
// with tools other than tpusim's writer:
//   kGzipFixture: `gzip -9 -n -c fix.tfrecord` (GNU gzip 1.12, Debian 12);
//   kZlibFixture: python3 `zlib.compress(stream, 9)` (zlib 1.2.13).
// fix.tfrecord was written by a python3 script encoding each record as
// uint64 length | masked crc32c(length) | data | masked crc32c(data).
const std::string kGzipFixture(
    "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\x63\x65\x80\x80\x57\x9b\x58\xec"
    "\x12\x73\x0a\x32\x12\xbb\xee\xb4\x32\x42\xc5\x18\x34\x99\x67\xb0\xdf\x78"
    "\xd5\xb4\x48\x1c\xca\x7f\x7e\xee\x87\x5c\x7a\x62\x6e\x6e\xa2\x02\x06\x29"
    "\xe0\xb9\xe9\x24\x00\xfb\x92\xec\x14\x4c\x00\x00\x00",
    67);
const std::string kZlibFixture(
    "\x78\xda\x63\x65\x80\x80\x57\x9b\x58\xec\x12\x73\x0a\x32\x12\xbb\xee\xb4"
    "\x32\x42\xc5\x18\x34\x99\x67\xb0\xdf\x78\xd5\xb4\x48\x1c\xca\x7f\x7e\xee"
    "\x87\x5c\x7a\x62\x6e\x6e\xa2\x02\x06\x29\xe0\xb9\xe9\x24\x00\xea\x2e\x16"
    "\xa9",
    55);
const std::vector<std::string> kFixtureRecords = {"alpha", "",
                                                  "gamma gamma gamma gamma"};

std::string Stream(const std::vector<std::string>& records) {
  std::string s;
  for (const std::string& r : records) s += EncodeTFRecord(r);
  return s;
}

TEST(CompressionTypeTest, ParsesTFsSpellingsOnly) {
  EXPECT_EQ(*ParseCompressionType(""), Compression::kNone);
  EXPECT_EQ(*ParseCompressionType("ZLIB"), Compression::kZlib);
  EXPECT_EQ(*ParseCompressionType("GZIP"), Compression::kGzip);
  EXPECT_THAT(ParseCompressionType("gzip"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "compression_type \"gzip\" is not supported; allowed: "
                       "\"\" (uncompressed), \"ZLIB\" or \"GZIP\""));
  EXPECT_EQ(CompressionName(Compression::kGzip), "GZIP");
  EXPECT_EQ(SniffCompression(kGzipFixture), "GZIP");
  EXPECT_EQ(SniffCompression(kZlibFixture), "ZLIB");
  EXPECT_EQ(SniffCompression(EncodeTFRecord("alpha")), "");
}

TEST(CompressedTFRecordTest, KnownGoodStreamsFromOtherToolsDecode) {
  const std::string dir = FreshTempDir();
  // The fixtures hold exactly tpusim's encoding of the records.
  WriteFile(dir + "/a.gz", kGzipFixture);
  WriteFile(dir + "/a.zz", kZlibFixture);
  absl::StatusOr<std::vector<std::string>> gz =
      ReadTFRecordFile(dir + "/a.gz", Compression::kGzip);
  ASSERT_THAT(gz, IsOk());
  EXPECT_EQ(*gz, kFixtureRecords);
  absl::StatusOr<std::vector<std::string>> zz =
      ReadTFRecordFile(dir + "/a.zz", Compression::kZlib);
  ASSERT_THAT(zz, IsOk());
  EXPECT_EQ(*zz, kFixtureRecords);
  // tpusim's writer produces the same stream: decompressing it with the
  // reader and re-encoding gives the 76 bytes the fixtures hold.
  EXPECT_EQ(Stream(kFixtureRecords).size(), 76u);
}

TEST(CompressedTFRecordTest, RoundTripsBothTypesIncludingEmptyAndLarge) {
  std::string big(300000, '\0');  // larger than one 64 KiB read chunk
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>((i * 2654435761u) >> 13);
  const std::vector<std::string> records = {"first", "", big, "last"};
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    SCOPED_TRACE(CompressionName(c));
    const std::string path = FreshTempDir() + "/a.tfrecord";
    ASSERT_THAT(WriteTFRecordFile(path, records, c), IsOk());
    const std::string bytes = ReadFile(path);
    EXPECT_EQ(SniffCompression(bytes), CompressionName(c));
    EXPECT_EQ(bytes, CompressAll(c, Stream(records)));  // one stream
    absl::StatusOr<std::vector<std::string>> back = ReadTFRecordFile(path, c);
    ASSERT_THAT(back, IsOk());
    EXPECT_EQ(*back, records);
    // Deterministic: the same records give the same bytes.
    ASSERT_THAT(WriteTFRecordFile(path + "2", records, c), IsOk());
    EXPECT_EQ(ReadFile(path + "2"), bytes);
  }
}

TEST(CompressedTFRecordTest, EmptyFileOfRecordsIsAValidStream) {
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    const std::string path = FreshTempDir() + "/empty";
    ASSERT_THAT(WriteTFRecordFile(path, {}, c), IsOk());
    EXPECT_THAT(ReadTFRecordFile(path, c), IsOk());
    EXPECT_TRUE(ReadTFRecordFile(path, c)->empty());
  }
}

TEST(CompressedTFRecordTest, ReaderReportsDecompressedOffsets) {
  const std::string path = FreshTempDir() + "/a.gz";
  WriteFile(path, kGzipFixture);
  auto r = TFRecordFileReader::Open(path, 1 << 20, Compression::kGzip);
  ASSERT_THAT(r, IsOk());
  ASSERT_THAT((*r)->ReadNext(), IsOk());
  EXPECT_EQ((*r)->offset(), 21);
  ASSERT_THAT((*r)->ReadNext(), IsOk());
  EXPECT_EQ((*r)->offset(), 37);
  ASSERT_THAT((*r)->ReadNext(), IsOk());
  EXPECT_EQ((*r)->offset(), 76);
  auto end = (*r)->ReadNext();
  ASSERT_THAT(end, IsOk());
  EXPECT_FALSE(end->has_value());
}

TEST(CompressedTFRecordTest,
     TruncationAtAnyOffsetIsDataLossNamingFileAndOffset) {
  struct Case {
    Compression c;
    const std::string* bytes;
  };
  for (const Case& k : {Case{Compression::kGzip, &kGzipFixture},
                        Case{Compression::kZlib, &kZlibFixture}}) {
    const std::string dir = FreshTempDir();
    for (size_t cut = 0; cut < k.bytes->size(); ++cut) {
      SCOPED_TRACE(absl::StrCat(CompressionName(k.c), " cut at ", cut));
      const std::string path = absl::StrCat(dir, "/cut", cut);
      WriteFile(path, k.bytes->substr(0, cut));
      EXPECT_THAT(
          ReadTFRecordFile(path, k.c),
          StatusIs(
              absl::StatusCode::kDataLoss,
              StartsWith(absl::StrCat(
                  "TFRecord file \"", path, "\" (compression_type \"",
                  CompressionName(k.c), "\"): truncated ", CompressionName(k.c),
                  " stream: the file ends at compressed byte offset ", cut,
                  " before the stream's end"))));
    }
  }
}

TEST(CompressedTFRecordTest, CorruptionAtAnyCheckedOffsetIsDataLoss) {
  struct Case {
    Compression c;
    const std::string* bytes;
  };
  for (const Case& k : {Case{Compression::kGzip, &kGzipFixture},
                        Case{Compression::kZlib, &kZlibFixture}}) {
    const std::string dir = FreshTempDir();
    int unchanged = 0;
    for (size_t at = 0; at < k.bytes->size(); ++at) {
      // GZIP's modification time, extra flags and OS bytes (4..9) carry no
      // check (RFC 1952 without FHCRC): a change there is not detectable.
      if (k.c == Compression::kGzip && at >= 4 && at <= 9) continue;
      for (uint8_t flip : {0x01, 0x80}) {
        SCOPED_TRACE(
            absl::StrCat(CompressionName(k.c), " byte ", at, " ^ ", flip));
        std::string bad = *k.bytes;
        bad[at] = static_cast<char>(bad[at] ^ flip);
        const std::string path = absl::StrCat(dir, "/bad", at, "_", flip);
        WriteFile(path, bad);
        absl::StatusOr<std::vector<std::string>> got =
            ReadTFRecordFile(path, k.c);
        // Either DataLoss, or a change that leaves the decompressed bytes
        // as they were (GZIP's FTEXT flag bit, the unused padding bits of
        // the last deflate byte): never different records.
        if (got.ok()) {
          EXPECT_EQ(*got, kFixtureRecords);
          ++unchanged;
          continue;
        }
        EXPECT_THAT(
            got, StatusIs(absl::StatusCode::kDataLoss,
                          AllOf(HasSubstr(path), HasSubstr("byte offset "))));
      }
    }
    // Measured: GZIP byte 3 ^ 0x01 (FTEXT) and byte 58 ^ 0x80; ZLIB byte 50
    // ^ 0x80 (each the last deflate byte, whose top bit is padding).
    EXPECT_EQ(unchanged, k.c == Compression::kGzip ? 2 : 1);
  }
}

TEST(CompressedTFRecordTest, CorruptTrailerChecksumNamesTheOffset) {
  const std::string dir = FreshTempDir();
  std::string bad = kGzipFixture;
  bad[59] ^= 0x01;  // the first byte of the CRC-32 trailer
  WriteFile(dir + "/crc.gz", bad);
  EXPECT_THAT(ReadTFRecordFile(dir + "/crc.gz", Compression::kGzip),
              StatusIs(absl::StatusCode::kDataLoss,
                       "TFRecord file \"" + dir +
                           "/crc.gz\" (compression_type \"GZIP\"): corrupt "
                           "GZIP stream at compressed byte offset 63: "
                           "incorrect data check"));
  bad = kZlibFixture;
  bad[51] ^= 0x01;  // the first byte of the Adler-32 trailer
  WriteFile(dir + "/adler.zz", bad);
  EXPECT_THAT(ReadTFRecordFile(dir + "/adler.zz", Compression::kZlib),
              StatusIs(absl::StatusCode::kDataLoss,
                       "TFRecord file \"" + dir +
                           "/adler.zz\" (compression_type \"ZLIB\"): corrupt "
                           "ZLIB stream at compressed byte offset 55: "
                           "incorrect data check"));
}

TEST(CompressedTFRecordTest, WrongCompressionTypeNamesTheValue) {
  const std::string dir = FreshTempDir();
  WriteFile(dir + "/a.gz", kGzipFixture);
  WriteFile(dir + "/a.zz", kZlibFixture);
  WriteFile(dir + "/plain", Stream(kFixtureRecords));
  EXPECT_THAT(
      ReadTFRecordFile(dir + "/a.gz"),
      StatusIs(absl::StatusCode::kDataLoss,
               "TFRecord file \"" + dir +
                   "/a.gz\": corrupted record at byte offset 0 (length "
                   "checksum mismatch); the file starts with a GZIP header, "
                   "but compression_type is \"\": read it with "
                   "compression_type \"GZIP\""));
  EXPECT_THAT(ReadTFRecordFile(dir + "/a.zz"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("the file starts with a ZLIB header, but "
                                 "compression_type is \"\": read it with "
                                 "compression_type \"ZLIB\"")));
  EXPECT_THAT(
      ReadTFRecordFile(dir + "/a.gz", Compression::kZlib),
      StatusIs(absl::StatusCode::kDataLoss,
               "TFRecord file \"" + dir +
                   "/a.gz\" (compression_type \"ZLIB\"): corrupt ZLIB stream "
                   "at compressed byte offset 2: incorrect header check; the "
                   "file starts with 1f 8b, a GZIP header, but "
                   "compression_type is \"ZLIB\": read it with "
                   "compression_type \"GZIP\""));
  EXPECT_THAT(ReadTFRecordFile(dir + "/a.zz", Compression::kGzip),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("the file starts with 78 da, a ZLIB header, "
                                 "but compression_type is \"GZIP\": read it "
                                 "with compression_type \"ZLIB\"")));
  EXPECT_THAT(ReadTFRecordFile(dir + "/plain", Compression::kGzip),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("the file starts with 05 00, not a GZIP "
                                 "header: if it is an uncompressed TFRecord "
                                 "file, read it with compression_type \"\"")));
}

TEST(CompressedTFRecordTest, ConcatenatedGzipMembersAreOneStream) {
  const std::string path = FreshTempDir() + "/two.gz";
  WriteFile(path, CompressAll(Compression::kGzip, Stream({"a", "b"})) +
                      CompressAll(Compression::kGzip, Stream({"c"})));
  absl::StatusOr<std::vector<std::string>> got =
      ReadTFRecordFile(path, Compression::kGzip);
  ASSERT_THAT(got, IsOk());
  EXPECT_THAT(*got, ElementsAre("a", "b", "c"));
}

TEST(CompressedTFRecordTest, BytesAfterAZlibStreamAreDataLoss) {
  const std::string path = FreshTempDir() + "/tail.zz";
  WriteFile(path, kZlibFixture + "xyz");
  EXPECT_THAT(ReadTFRecordFile(path, Compression::kZlib),
              StatusIs(absl::StatusCode::kDataLoss,
                       "TFRecord file \"" + path +
                           "\" (compression_type \"ZLIB\"): 3 bytes after the "
                           "end of the ZLIB stream at compressed byte offset "
                           "55"));
}

TEST(CompressedTFRecordTest, RecordErrorsInsideTheStreamNameBothOffsets) {
  const std::string dir = FreshTempDir();
  // A stream that ends inside the second record's payload.
  std::string s = Stream({"hello", "world"});
  WriteFile(dir + "/short.gz",
            CompressAll(Compression::kGzip, s.substr(0, s.size() - 3)));
  EXPECT_THAT(ReadTFRecordFile(dir + "/short.gz", Compression::kGzip),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("\" (compression_type \"GZIP\"): truncated "
                                 "record at byte offset 21 of the "
                                 "decompressed stream (compressed byte "
                                 "offset ")));
  // A valid length checksum on a huge length: no allocation of that size.
  std::string header("\0\0\0\0\0\0\0\x7f", 8);
  const uint32_t m = MaskCrc32c(Crc32c(header));
  for (int i = 0; i < 4; ++i)
    header.push_back(static_cast<char>((m >> (8 * i)) & 0xff));
  WriteFile(dir + "/huge.zz", CompressAll(Compression::kZlib, header + "abc"));
  EXPECT_THAT(ReadTFRecordFile(dir + "/huge.zz", Compression::kZlib),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("truncated record at byte offset 0 of the "
                                 "decompressed stream")));
  // A corrupted payload byte before compression: the record's checksum.
  s = Stream({"hello", "world"});
  s[21 + 12 + 1] ^= 0x01;
  WriteFile(dir + "/crc.gz", CompressAll(Compression::kGzip, s));
  EXPECT_THAT(
      ReadTFRecordFile(dir + "/crc.gz", Compression::kGzip),
      StatusIs(absl::StatusCode::kDataLoss,
               HasSubstr("corrupted record at byte offset 21 of the "
                         "decompressed stream (compressed byte offset")));
}

TEST(CompressedTFRecordTest, TFRecordDatasetReadsCompressedFilesInOrder) {
  const std::string dir = FreshTempDir();
  ASSERT_THAT(WriteTFRecordFile(dir + "/a", {"a0", "a1"}, Compression::kGzip),
              IsOk());
  ASSERT_THAT(WriteTFRecordFile(dir + "/b", {"b0"}, Compression::kGzip),
              IsOk());
  TFRecordOptions o;
  o.compression_type = "GZIP";
  absl::StatusOr<std::vector<Element>> all =
      Dataset::TFRecord({dir + "/b", dir + "/a"}, o).Collect();
  ASSERT_THAT(all, IsOk());
  std::vector<std::string> got;
  for (const Element& e : *all) got.push_back(e.leaf().scalar<std::string>());
  EXPECT_THAT(got, ElementsAre("b0", "a0", "a1"));
  // The same files without compression_type: DataLoss saying they look GZIP.
  EXPECT_THAT(Dataset::TFRecord({dir + "/b"}).Collect().status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("the file starts with a GZIP header, but "
                                 "compression_type is \"\"")));
  o.compression_type = "ZLIB";
  EXPECT_THAT(Dataset::TFRecord({dir + "/b"}, o).Collect().status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("a GZIP header, but compression_type is "
                                 "\"ZLIB\"")));
}

}  // namespace
}  // namespace tpusim::data
