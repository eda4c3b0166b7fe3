#include "strategy/data/zlib_stream.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/check.h"
#include "strategy/data/tfrecord.h"

namespace tpusim::data {
namespace {

// zlib's window bits: 15 (32 KiB window) with the zlib wrapper, +16 for the
// gzip wrapper (zlib.h, deflateInit2/inflateInit2).
int WindowBits(Compression c) { return c == Compression::kGzip ? 15 + 16 : 15; }

constexpr size_t kChunk = 64 * 1024;  // chosen: the compressed read size

}  // namespace

absl::StatusOr<Compression> ParseCompressionType(absl::string_view value,
                                                 absl::string_view what) {
  if (value.empty()) return Compression::kNone;
  if (value == "ZLIB") return Compression::kZlib;
  if (value == "GZIP") return Compression::kGzip;
  return absl::InvalidArgumentError(
      absl::StrCat(what, " \"", value,
                   "\" is not supported; allowed: \"\" (uncompressed), "
                   "\"ZLIB\" or \"GZIP\""));
}

absl::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kZlib:
      return "ZLIB";
    case Compression::kGzip:
      return "GZIP";
    case Compression::kNone:
    default:
      return "";
  }
}

absl::string_view SniffCompression(absl::string_view b) {
  if (b.size() >= 2 && static_cast<uint8_t>(b[0]) == 0x1f &&
      static_cast<uint8_t>(b[1]) == 0x8b) {
    return "GZIP";
  }
  if (b.size() >= 2) {
    const unsigned cmf = static_cast<uint8_t>(b[0]);
    const unsigned flg = static_cast<uint8_t>(b[1]);
    // RFC 1950: CM = 8 (deflate), CINFO <= 7, (CMF * 256 + FLG) % 31 == 0.
    if ((cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && (cmf * 256 + flg) % 31 == 0)
      return "ZLIB";
  }
  return "";
}

// ---- Deflater ----

struct Deflater::State {
  z_stream z{};
  bool finished = false;
};

Deflater::Deflater(Compression c) : s_(std::make_unique<State>()) {
  TPUSIM_CHECK(c != Compression::kNone);
  const int rc =
      deflateInit2(&s_->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, WindowBits(c),
                   /*memLevel=*/8, Z_DEFAULT_STRATEGY);
  TPUSIM_CHECK(rc == Z_OK);  // only fails on bad parameters or no memory
}

Deflater::~Deflater() { deflateEnd(&s_->z); }

namespace {
void Pump(z_stream* z, int flush, std::string* out) {
  char buf[kChunk];
  int rc;
  do {
    z->next_out = reinterpret_cast<Bytef*>(buf);
    z->avail_out = sizeof(buf);
    rc = deflate(z, flush);
    TPUSIM_CHECK(rc != Z_STREAM_ERROR);
    out->append(buf, sizeof(buf) - z->avail_out);
  } while (z->avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
}
}  // namespace

void Deflater::Append(absl::string_view in, std::string* out) {
  TPUSIM_CHECK(!s_->finished);
  // zlib's avail_in is a uInt: feed at most 1 GiB at a time.
  while (!in.empty()) {
    const size_t n = std::min<size_t>(in.size(), size_t{1} << 30);
    s_->z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    s_->z.avail_in = static_cast<uInt>(n);
    Pump(&s_->z, Z_NO_FLUSH, out);
    in.remove_prefix(n);
  }
}

void Deflater::Finish(std::string* out) {
  TPUSIM_CHECK(!s_->finished);
  s_->z.next_in = nullptr;
  s_->z.avail_in = 0;
  Pump(&s_->z, Z_FINISH, out);
  s_->finished = true;
}

std::string CompressAll(Compression c, absl::string_view bytes) {
  if (c == Compression::kNone) return std::string(bytes);
  Deflater d(c);
  std::string out;
  d.Append(bytes, &out);
  d.Finish(&out);
  return out;
}

// ---- InflateReader ----

struct InflateReader::State {
  std::FILE* file = nullptr;
  std::string path;
  Compression c = Compression::kGzip;
  z_stream z{};
  bool init = false;
  char in[kChunk];
  int64_t read_from_file = 0;  // compressed bytes read from the file
  int64_t out_total = 0;       // decompressed bytes returned
  std::string first;           // the file's first two bytes (for messages)
  bool in_member = true;       // inside a stream (not between GZIP members)
  bool done = false;

  int64_t consumed() const { return read_from_file - z.avail_in; }

  std::string Name() const {
    return absl::StrCat("TFRecord file \"", path, "\" (compression_type \"",
                        CompressionName(c), "\")");
  }

  // Refills the input; false at the end of the file. A read error is a Status.
  absl::StatusOr<bool> Refill() {
    errno = 0;
    const size_t got = std::fread(in, 1, sizeof(in), file);
    if (got == 0) {
      if (std::ferror(file)) {
        return ReadError("cannot read TFRecord file", path,
                         absl::StrCat("compressed byte offset ", consumed()),
                         errno);
      }
      return false;
    }
    if (read_from_file == 0 || first.size() < 2)
      first.append(in, std::min<size_t>(got, 2 - first.size()));
    z.next_in = reinterpret_cast<Bytef*>(in);
    z.avail_in = static_cast<uInt>(got);
    read_from_file += static_cast<int64_t>(got);
    return true;
  }

  // Describes the file when nothing could be decompressed from it.
  std::string WrongTypeHint() const {
    if (first.size() < 2) return "";
    const absl::string_view looks = SniffCompression(first);
    const absl::string_view want = CompressionName(c);
    std::string bytes;
    for (char ch : first)
      absl::StrAppend(&bytes, bytes.empty() ? "" : " ",
                      absl::StrFormat("%02x", static_cast<uint8_t>(ch)));
    if (!looks.empty() && looks != want) {
      return absl::StrCat("; the file starts with ", bytes, ", a ", looks,
                          " header, but compression_type is \"", want,
                          "\": read it with compression_type \"", looks, "\"");
    }
    if (looks.empty()) {
      return absl::StrCat("; the file starts with ", bytes, ", not a ", want,
                          " header: if it is an uncompressed TFRecord file, "
                          "read it with compression_type \"\"");
    }
    return "";
  }
};

InflateReader::InflateReader(std::FILE* file, std::string path, Compression c)
    : s_(std::make_unique<State>()) {
  TPUSIM_CHECK(c != Compression::kNone);
  s_->file = file;
  s_->path = std::move(path);
  s_->c = c;
  TPUSIM_CHECK(inflateInit2(&s_->z, WindowBits(c)) == Z_OK);
  s_->init = true;
}

InflateReader::~InflateReader() {
  if (s_->init) inflateEnd(&s_->z);
}

int64_t InflateReader::compressed_offset() const { return s_->consumed(); }
int64_t InflateReader::decompressed_offset() const { return s_->out_total; }

absl::StatusOr<size_t> InflateReader::Read(char* out, size_t n) {
  State& s = *s_;
  size_t produced = 0;
  while (produced < n && !s.done) {
    if (!s.in_member && s.z.avail_in > 0) {  // the next GZIP member begins
      TPUSIM_CHECK(inflateReset(&s.z) == Z_OK);
      s.in_member = true;
    }
    if (s.z.avail_in == 0) {
      absl::StatusOr<bool> more = s.Refill();
      if (!more.ok()) return more.status();
      if (!*more) {
        if (!s.in_member) {  // a clean end after a complete GZIP member
          s.done = true;
          break;
        }
        return absl::DataLossError(
            absl::StrCat(s.Name(), ": truncated ", CompressionName(s.c),
                         " stream: the file ends at compressed byte offset ",
                         s.consumed(), " before the stream's end",
                         s.out_total + static_cast<int64_t>(produced) == 0
                             ? s.WrongTypeHint()
                             : ""));
      }
      if (!s.in_member) {  // the next GZIP member begins
        TPUSIM_CHECK(inflateReset(&s.z) == Z_OK);
        s.in_member = true;
      }
    }
    const size_t want = std::min<size_t>(n - produced, size_t{1} << 30);
    s.z.next_out = reinterpret_cast<Bytef*>(out + produced);
    s.z.avail_out = static_cast<uInt>(want);
    const int rc = inflate(&s.z, Z_NO_FLUSH);
    produced += want - s.z.avail_out;
    if (rc == Z_STREAM_END) {
      s.in_member = false;
      if (s.c == Compression::kZlib) {
        // One stream: anything after its end is not TFRecord data.
        const int64_t end = s.consumed();
        int64_t extra = s.z.avail_in;
        s.z.avail_in = 0;
        while (true) {
          absl::StatusOr<bool> more = s.Refill();
          if (!more.ok()) return more.status();
          if (!*more) break;
          extra += s.z.avail_in;
          s.z.avail_in = 0;
        }
        if (extra > 0) {
          return absl::DataLossError(
              absl::StrCat(s.Name(), ": ", extra,
                           " bytes after the end of the ZLIB stream "
                           "at compressed byte offset ",
                           end));
        }
        s.done = true;
      }
      continue;
    }
    if (rc == Z_OK || rc == Z_BUF_ERROR) continue;
    // Z_DATA_ERROR (bad header, bad block, CRC or length mismatch),
    // Z_NEED_DICT, Z_MEM_ERROR.
    const std::string why = s.z.msg != nullptr ? s.z.msg : zError(rc);
    const std::string msg = absl::StrCat(
        s.Name(), ": corrupt ", CompressionName(s.c),
        " stream at compressed byte offset ", s.consumed(), ": ", why,
        s.out_total + static_cast<int64_t>(produced) == 0 ? s.WrongTypeHint()
                                                          : "");
    if (rc == Z_MEM_ERROR) return absl::ResourceExhaustedError(msg);
    return absl::DataLossError(msg);
  }
  s.out_total += static_cast<int64_t>(produced);
  return produced;
}

}  // namespace tpusim::data
