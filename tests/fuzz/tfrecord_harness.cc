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
// - ReadTFRecordFile agrees with the record-by-record reading.

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
}

}  // namespace tpusim::fuzz
