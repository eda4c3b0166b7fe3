// strategy/data/tfrecord.h
//
// The TFRecord file format: each record is
//   uint64 length (little-endian) | uint32 masked_crc32c(length bytes) | data |
//   uint32 masked_crc32c(data)
// (spec, "Binary formats"). Writer and reader:
//
// clang-format off
//   TPUSIM_RETURN_IF_ERROR(WriteTFRecordFile(path, {"a", "bc"}));
//   TPUSIM_ASSIGN_OR_RETURN(auto reader, TFRecordFileReader::Open(path));
//   while (true) {
//     TPUSIM_ASSIGN_OR_RETURN(std::optional<std::string> record, reader->ReadNext());
//     if (!record) break;
//   }
// clang-format on
//
// A corrupt (CRC mismatch) or truncated record is DataLoss naming the file and
// the byte offset of the record's first byte.
//
// Compressed files (TF's compression_type "ZLIB" / "GZIP", see
// zlib_stream.h) hold the same record stream deflated; their record offsets
// are offsets in the decompressed stream, and the messages also give the
// compressed byte offset. A corrupt or truncated compressed stream is
// DataLoss naming the file and the compressed byte offset.

#ifndef TPUSIM_STRATEGY_DATA_TFRECORD_H_
#define TPUSIM_STRATEGY_DATA_TFRECORD_H_

#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/data/zlib_stream.h"

namespace tpusim::data {

// The encoded bytes of one record.
std::string EncodeTFRecord(absl::string_view data);

// An absl::Status for a failed file operation on `path` from errno, naming
// `what`, the path and the OS reason (strerror): NotFound for ENOENT/ENOTDIR,
// PermissionDenied for EACCES/EPERM/EROFS, FailedPrecondition for EISDIR,
// ResourceExhausted for ENOMEM/ENOSPC/EMFILE/ENFILE, else Unknown.
absl::Status FileError(absl::string_view what, const std::string& path,
                       int err);

// An absl::Status for a failed read (or write) in the middle of `path`, at
// `position` ("byte offset 12", "line 3"): ResourceExhausted for
// ENOMEM/ENOSPC, else DataLoss — the rest of the file is not silently
// treated as its end. "<what> \"path\" at <position>: <strerror>".
absl::Status ReadError(absl::string_view what, const std::string& path,
                       absl::string_view position, int err);

class TFRecordWriter {
 public:
  // Creates or truncates `path`. Errors from the file system (NotFound,
  // PermissionDenied, ...) name the path.
  static absl::StatusOr<std::unique_ptr<TFRecordWriter>> Open(
      const std::string& path, Compression compression = Compression::kNone);
  ~TFRecordWriter();
  absl::Status Write(absl::string_view record);
  // Flushes and closes; later Writes fail with FailedPrecondition. For a
  // compressed file Close also ends the stream: a writer destroyed without
  // Close leaves a stream without its end, which reads as truncated.
  absl::Status Close();

 private:
  TFRecordWriter(std::string path, std::FILE* file)
      : path_(std::move(path)), file_(file) {}
  absl::Status Put(absl::string_view bytes);
  std::string path_;
  std::FILE* file_;
  std::unique_ptr<Deflater> deflater_;  // null when uncompressed
  std::string packed_;                  // compressed output to write
};

// Writes `records` to a new file at `path`.
absl::Status WriteTFRecordFile(const std::string& path,
                               const std::vector<std::string>& records,
                               Compression compression = Compression::kNone);

class TFRecordFileReader {
 public:
  // NotFound (naming the path) when the file does not exist. A record longer
  // than `max_record_bytes` is ResourceExhausted naming the file, the offset
  // and the length, before it is allocated.
  // `compression` other than kNone reads the file through an InflateReader;
  // an uncompressed read of a file that starts with a GZIP or ZLIB header
  // says so in its DataLoss message.
  static absl::StatusOr<std::unique_ptr<TFRecordFileReader>> Open(
      const std::string& path,
      int64_t max_record_bytes = std::numeric_limits<int64_t>::max(),
      Compression compression = Compression::kNone);
  ~TFRecordFileReader();
  // The next record, nullopt at a clean end of file. DataLoss "<path>:
  // truncated record at byte offset N" / "<path>: corrupted record at byte
  // offset N (... checksum mismatch)".
  absl::StatusOr<std::optional<std::string>> ReadNext();
  // Byte offset of the next record (in the decompressed stream).
  int64_t offset() const { return offset_; }

 private:
  TFRecordFileReader(std::string path, std::FILE* file)
      : path_(std::move(path)), file_(file) {}
  absl::StatusOr<std::optional<std::string>> ReadNextCompressed();
  std::unique_ptr<InflateReader> inflate_;  // null when uncompressed
  Compression compression_ = Compression::kNone;
  std::string path_;
  std::FILE* file_;
  int64_t file_size_ = 0;
  int64_t offset_ = 0;
  int64_t max_record_bytes_ = std::numeric_limits<int64_t>::max();
};

// Every record of the file at `path`.
absl::StatusOr<std::vector<std::string>> ReadTFRecordFile(
    const std::string& path, Compression compression = Compression::kNone);

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_TFRECORD_H_
