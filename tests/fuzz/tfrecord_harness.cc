// The TFRecord reader on hostile file contents. The bytes go to an in-memory
// file (memfd, opened by the reader through /proc/self/fd/N), so fuzzing
// writes nothing to disk.
//
// Contract (strategy/data/tfrecord.h), checked record by record:
// - every record read re-encodes to exactly the bytes it was read from, and
//   offset() is the byte after it;
// - a clean end of file comes exactly at the end of the input;
// - anything else is DataLoss naming the file and the byte offset of the
//   record that is truncated or corrupted;
// - ReadTFRecordFile agrees with the record-by-record reading;
// - the same bytes compressed (GZIP and ZLIB) read back to the same records
//   or the same error at the same decompressed offset, and the raw bytes read
//   as a compressed file are records or DataLoss naming the file and an
//   offset, never a crash.

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "strategy/data/tfrecord.h"
#include "tests/fuzz/contract.h"
#include "tests/fuzz/harnesses.h"

namespace tpusim::fuzz {
namespace {

// The in-memory file of this process, rewritten for every input.
struct MemFile {
  int fd;
  std::string path;
};

const MemFile& TheMemFile() {
  static const MemFile* file = [] {
    const int fd = memfd_create("tpusim-fuzz-tfrecord", MFD_CLOEXEC);
    if (fd < 0) {
      ContractBroken("tfrecord", "memfd_create", std::strerror(errno));
    }
    return new MemFile{fd, absl::StrCat("/proc/self/fd/", fd)};
  }();
  return *file;
}

void WriteMemFile(int fd, absl::string_view bytes) {
  if (ftruncate(fd, 0) != 0) {
    ContractBroken("tfrecord", "ftruncate", std::strerror(errno));
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = pwrite(fd, bytes.data() + done, bytes.size() - done,
                             static_cast<off_t>(done));
    if (n <= 0) ContractBroken("tfrecord", "pwrite", std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

}  // namespace

void FuzzTFRecord(absl::string_view input) {
  const MemFile& file = TheMemFile();
  const std::string& path = file.path;
  WriteMemFile(file.fd, input);
  absl::StatusOr<std::unique_ptr<data::TFRecordFileReader>> reader =
      data::TFRecordFileReader::Open(path);
  FUZZ_EXPECT(reader.ok(), "tfrecord", "Open: ", reader.status().ToString());

  std::vector<std::string> records;
  absl::Status error;
  while (true) {
    const int64_t start = (*reader)->offset();
    absl::StatusOr<std::optional<std::string>> record = (*reader)->ReadNext();
    if (!record.ok()) {
      error = record.status();
      FUZZ_EXPECT(error.code() == absl::StatusCode::kDataLoss, "tfrecord",
                  "ReadNext at offset ", start, ": ", error.ToString());
      FUZZ_EXPECT(
          absl::StartsWith(error.message(),
                           absl::StrCat("TFRecord file \"", path, "\": ")) &&
              absl::StrContains(error.message(),
                                absl::StrCat(" record at byte offset ", start)),
          "tfrecord", "the error does not name the file and offset ", start,
          ": ", error.ToString());
      FUZZ_EXPECT(static_cast<size_t>(start) < input.size(), "tfrecord",
                  "error after the end of the input: ", error.ToString());
      break;
    }
    if (!record->has_value()) {
      FUZZ_EXPECT(static_cast<size_t>(start) == input.size(), "tfrecord",
                  "clean end of file at offset ", start, " of ", input.size(),
                  " bytes");
      break;
    }
    const std::string encoded = data::EncodeTFRecord(**record);
    FUZZ_EXPECT(input.substr(start, encoded.size()) == encoded, "tfrecord",
                "the record at offset ", start,
                " does not re-encode to its bytes");
    FUZZ_EXPECT(
        (*reader)->offset() == start + static_cast<int64_t>(encoded.size()),
        "tfrecord", "offset() after the record at ", start, " is ",
        (*reader)->offset());
    records.push_back(**std::move(record));
  }

  absl::StatusOr<std::vector<std::string>> all = data::ReadTFRecordFile(path);
  if (error.ok()) {
    FUZZ_EXPECT(
        all.ok() && *all == records, "tfrecord",
        "ReadTFRecordFile disagrees with ReadNext: ", all.status().ToString());
  } else {
    FUZZ_EXPECT(all.status() == error, "tfrecord", "ReadTFRecordFile error ",
                all.status().ToString(), " differs from ReadNext's ",
                error.ToString());
  }

  for (data::Compression c :
       {data::Compression::kGzip, data::Compression::kZlib}) {
    const std::string name =
        absl::StrCat("TFRecord file \"", path, "\" (compression_type \"",
                     data::CompressionName(c), "\"): ");
    WriteMemFile(file.fd, data::CompressAll(c, input));
    absl::StatusOr<std::vector<std::string>> packed =
        data::ReadTFRecordFile(path, c);
    if (error.ok()) {
      FUZZ_EXPECT(packed.ok() && *packed == records, "tfrecord", "compressed ",
                  data::CompressionName(c),
                  " read disagrees: ", packed.status().ToString());
    } else {
      const int64_t start = static_cast<int64_t>(
          (*reader)->offset());  // the failing record's offset
      FUZZ_EXPECT(
          packed.status().code() == absl::StatusCode::kDataLoss &&
              absl::StartsWith(packed.status().message(), name) &&
              absl::StrContains(packed.status().message(),
                                absl::StrCat(" record at byte offset ", start,
                                             " of the decompressed stream")),
          "tfrecord", "compressed ", data::CompressionName(c), " error ",
          packed.status().ToString(), " differs from ", error.ToString());
    }
    WriteMemFile(file.fd, input);
    absl::StatusOr<std::vector<std::string>> raw =
        data::ReadTFRecordFile(path, c);
    FUZZ_EXPECT(
        raw.ok() || (raw.status().code() == absl::StatusCode::kDataLoss &&
                     absl::StartsWith(raw.status().message(), name) &&
                     absl::StrContains(raw.status().message(), "byte offset ")),
        "tfrecord", "raw bytes read as ", data::CompressionName(c), ": ",
        raw.status().ToString());
  }
}

}  // namespace tpusim::fuzz
