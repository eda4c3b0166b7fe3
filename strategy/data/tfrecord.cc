#include "strategy/data/tfrecord.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "strategy/data/crc32c.h"

namespace tpusim::data {
namespace {

void PutU64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void PutU32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace

absl::Status FileError(absl::string_view what, const std::string& path,
                       int err) {
  return common::ErrnoStatus(what, path, err);
}

absl::Status ReadError(absl::string_view what, const std::string& path,
                       absl::string_view position, int err) {
  const std::string msg = absl::StrCat(what, " \"", path, "\" at ", position,
                                       ": ", std::strerror(err));
  if (err == ENOMEM || err == ENOSPC) return absl::ResourceExhaustedError(msg);
  return absl::DataLossError(msg);
}

std::string EncodeTFRecord(absl::string_view data) {
  std::string out(8 + 4 + data.size() + 4, '\0');
  PutU64(data.size(), &out[0]);
  PutU32(MaskCrc32c(Crc32c(out.data(), 8)), &out[8]);
  if (!data.empty()) std::memcpy(&out[12], data.data(), data.size());
  PutU32(MaskCrc32c(Crc32c(data)), &out[12 + data.size()]);
  return out;
}

absl::StatusOr<std::unique_ptr<TFRecordWriter>> TFRecordWriter::Open(
    const std::string& path, Compression compression) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr)
    return FileError("cannot create TFRecord file", path, errno);
  std::unique_ptr<TFRecordWriter> w(new TFRecordWriter(path, f));
  if (compression != Compression::kNone)
    w->deflater_ = std::make_unique<Deflater>(compression);
  return w;
}

absl::Status TFRecordWriter::Put(absl::string_view bytes) {
  if (deflater_ != nullptr) {
    packed_.clear();
    deflater_->Append(bytes, &packed_);
    bytes = packed_;
  }
  if (!bytes.empty() &&
      std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    return FileError("cannot write TFRecord file", path_, errno);
  }
  return absl::OkStatus();
}

TFRecordWriter::~TFRecordWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status TFRecordWriter::Write(absl::string_view record) {
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("TFRecord file \"", path_, "\" is closed"));
  }
  char header[12];
  PutU64(record.size(), header);
  PutU32(MaskCrc32c(Crc32c(header, 8)), header + 8);
  char footer[4];
  PutU32(MaskCrc32c(Crc32c(record)), footer);
  if (deflater_ != nullptr) {
    TPUSIM_RETURN_IF_ERROR(Put(absl::string_view(header, 12)));
    TPUSIM_RETURN_IF_ERROR(Put(record));
    return Put(absl::string_view(footer, 4));
  }
  if (std::fwrite(header, 1, 12, file_) != 12 ||
      (!record.empty() &&
       std::fwrite(record.data(), 1, record.size(), file_) != record.size()) ||
      std::fwrite(footer, 1, 4, file_) != 4) {
    return FileError("cannot write TFRecord file", path_, errno);
  }
  return absl::OkStatus();
}

absl::Status TFRecordWriter::Close() {
  if (file_ == nullptr) return absl::OkStatus();
  if (deflater_ != nullptr) {
    packed_.clear();
    deflater_->Finish(&packed_);
    deflater_.reset();
    if (!packed_.empty() && std::fwrite(packed_.data(), 1, packed_.size(),
                                        file_) != packed_.size()) {
      const int err = errno;
      std::fclose(file_);
      file_ = nullptr;
      return FileError("cannot write TFRecord file", path_, err);
    }
  }
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) return FileError("cannot close TFRecord file", path_, errno);
  return absl::OkStatus();
}

absl::Status WriteTFRecordFile(const std::string& path,
                               const std::vector<std::string>& records,
                               Compression compression) {
  absl::StatusOr<std::unique_ptr<TFRecordWriter>> w =
      TFRecordWriter::Open(path, compression);
  if (!w.ok()) return w.status();
  for (const std::string& r : records) {
    absl::Status s = (*w)->Write(r);
    if (!s.ok()) return s;
  }
  return (*w)->Close();
}

absl::StatusOr<std::unique_ptr<TFRecordFileReader>> TFRecordFileReader::Open(
    const std::string& path, int64_t max_record_bytes,
    Compression compression) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return FileError("cannot open TFRecord file", path, errno);
  std::unique_ptr<TFRecordFileReader> reader(new TFRecordFileReader(path, f));
  reader->max_record_bytes_ = max_record_bytes;
  struct stat st;
  if (::fstat(::fileno(f), &st) != 0)
    return FileError("cannot open TFRecord file", path, errno);
  if (S_ISDIR(st.st_mode))
    return FileError("cannot open TFRecord file", path, EISDIR);
  if (std::fseek(f, 0, SEEK_END) != 0)
    return FileError("cannot seek in TFRecord file", path, errno);
  reader->file_size_ = std::ftell(f);
  std::rewind(f);
  reader->compression_ = compression;
  if (compression != Compression::kNone)
    reader->inflate_ = std::make_unique<InflateReader>(f, path, compression);
  return reader;
}

TFRecordFileReader::~TFRecordFileReader() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::StatusOr<std::optional<std::string>> TFRecordFileReader::ReadNext() {
  if (inflate_ != nullptr) return ReadNextCompressed();
  const int64_t start = offset_;
  auto truncated = [&]() {
    return absl::DataLossError(
        absl::StrCat("TFRecord file \"", path_,
                     "\": truncated record at byte offset ", start));
  };
  // A file that starts with a GZIP or ZLIB header was likely written
  // compressed: say so at its first record.
  std::string hint;
  auto corrupted = [&](absl::string_view which) {
    return absl::DataLossError(absl::StrCat(
        "TFRecord file \"", path_, "\": corrupted record at byte offset ",
        start, " (", which, " checksum mismatch)", hint));
  };
  // A short read is an error of the device (ferror: EIO, ENOMEM, ...) or the
  // end of the file (a truncated record); never both silently.
  auto short_read = [&](int64_t at) {
    if (std::ferror(file_)) {
      return ReadError("cannot read TFRecord file", path_,
                       absl::StrCat("byte offset ", at), errno);
    }
    return truncated();
  };
  char header[12];
  errno = 0;
  const size_t got = std::fread(header, 1, sizeof(header), file_);
  if (got == 0 && std::feof(file_)) return std::optional<std::string>();
  if (start == 0) {
    const absl::string_view looks =
        SniffCompression(absl::string_view(header, got));
    if (!looks.empty()) {
      hint = absl::StrCat("; the file starts with a ", looks,
                          " header, but compression_type is \"\": read it "
                          "with compression_type \"",
                          looks, "\"");
    }
  }
  if (got != sizeof(header)) {
    absl::Status s = short_read(start);
    if (hint.empty() || s.code() != absl::StatusCode::kDataLoss) return s;
    return absl::DataLossError(absl::StrCat(s.message(), hint));
  }
  if (UnmaskCrc32c(GetU32(header + 8)) != Crc32c(header, 8))
    return corrupted("length");
  const uint64_t length = GetU64(header);
  // Guard the allocation against a length that cannot fit in the rest of the
  // file, then against the memory budget.
  if (length > static_cast<uint64_t>(file_size_ - (start + 12)))
    return truncated();
  if (length > static_cast<uint64_t>(max_record_bytes_)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "TFRecord file \"", path_, "\": the record at byte offset ", start,
        " has ", length, " bytes, more than the memory budget of ",
        max_record_bytes_, " bytes"));
  }
  std::string data(length, '\0');
  if (length > 0 && std::fread(&data[0], 1, length, file_) != length)
    return short_read(start + 12);
  char footer[4];
  if (std::fread(footer, 1, 4, file_) != 4)
    return short_read(start + 12 + static_cast<int64_t>(length));
  if (UnmaskCrc32c(GetU32(footer)) != Crc32c(data)) return corrupted("data");
  offset_ = start + 12 + static_cast<int64_t>(length) + 4;
  return std::optional<std::string>(std::move(data));
}

absl::StatusOr<std::optional<std::string>>
TFRecordFileReader::ReadNextCompressed() {
  const int64_t start = offset_;
  const std::string name =
      absl::StrCat("TFRecord file \"", path_, "\" (compression_type \"",
                   CompressionName(compression_), "\")");
  auto where = [&](int64_t at) {
    return absl::StrCat("byte offset ", at,
                        " of the decompressed stream (compressed byte offset ",
                        inflate_->compressed_offset(), ")");
  };
  char header[12];
  TPUSIM_ASSIGN_OR_RETURN(size_t got, inflate_->Read(header, sizeof(header)));
  if (got == 0) return std::optional<std::string>();
  if (got != sizeof(header)) {
    return absl::DataLossError(
        absl::StrCat(name, ": truncated record at ", where(start)));
  }
  if (UnmaskCrc32c(GetU32(header + 8)) != Crc32c(header, 8)) {
    return absl::DataLossError(absl::StrCat(name, ": corrupted record at ",
                                            where(start),
                                            " (length checksum mismatch)"));
  }
  const uint64_t length = GetU64(header);
  if (length > static_cast<uint64_t>(max_record_bytes_)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name, ": the record at ", where(start), " has ", length,
                     " bytes, more than the memory budget of ",
                     max_record_bytes_, " bytes"));
  }
  // The decompressed size is not known ahead: grow the record as its bytes
  // arrive, so that a huge length never allocates more than the stream holds.
  std::string data;
  constexpr uint64_t kStep = 1 << 20;  // chosen
  while (data.size() < length) {
    const size_t had = data.size();
    const size_t step =
        static_cast<size_t>(std::min<uint64_t>(length - had, kStep));
    data.resize(had + step);
    TPUSIM_ASSIGN_OR_RETURN(size_t n, inflate_->Read(&data[had], step));
    if (n != step) {
      return absl::DataLossError(
          absl::StrCat(name, ": truncated record at ", where(start)));
    }
  }
  char footer[4];
  TPUSIM_ASSIGN_OR_RETURN(got, inflate_->Read(footer, 4));
  if (got != 4) {
    return absl::DataLossError(
        absl::StrCat(name, ": truncated record at ", where(start)));
  }
  if (UnmaskCrc32c(GetU32(footer)) != Crc32c(data)) {
    return absl::DataLossError(absl::StrCat(name, ": corrupted record at ",
                                            where(start),
                                            " (data checksum mismatch)"));
  }
  offset_ = start + 12 + static_cast<int64_t>(length) + 4;
  return std::optional<std::string>(std::move(data));
}

absl::StatusOr<std::vector<std::string>> ReadTFRecordFile(
    const std::string& path, Compression compression) {
  absl::StatusOr<std::unique_ptr<TFRecordFileReader>> r =
      TFRecordFileReader::Open(path, std::numeric_limits<int64_t>::max(),
                               compression);
  if (!r.ok()) return r.status();
  std::vector<std::string> out;
  while (true) {
    absl::StatusOr<std::optional<std::string>> rec = (*r)->ReadNext();
    if (!rec.ok()) return rec.status();
    if (!rec->has_value()) break;
    out.push_back(**std::move(rec));
  }
  return out;
}

}  // namespace tpusim::data
