// strategy/data/zlib_stream.h
//
// The compression of TFRecord files (TF's compression_type): "" (none),
// "ZLIB" (a zlib stream, RFC 1950) and "GZIP" (gzip members, RFC 1952), both
// deflate through Debian's zlib. Used by the TFRecord reader and writer:
//
// clang-format off
//   TPUSIM_ASSIGN_OR_RETURN(Compression c, ParseCompressionType("GZIP"));
//   std::string packed = CompressAll(c, bytes);           // one whole stream
//   InflateReader in(file, path, c);                      // streaming read
//   TPUSIM_ASSIGN_OR_RETURN(size_t got, in.Read(buf, n)); // 0 only at the end
// clang-format on
//
// A corrupt or truncated compressed stream is DataLoss naming the file and the
// compressed byte offset; the stream's end marker (and, for GZIP, its CRC-32
// and length trailer) must be reached before a read reports the end.

#ifndef TPUSIM_STRATEGY_DATA_ZLIB_STREAM_H_
#define TPUSIM_STRATEGY_DATA_ZLIB_STREAM_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tpusim::data {

enum class Compression { kNone, kZlib, kGzip };

// "" → kNone, "ZLIB" → kZlib, "GZIP" → kGzip (TF's spellings, exact case).
// Anything else is InvalidArgument naming `what`, the value and the allowed
// values.
absl::StatusOr<Compression> ParseCompressionType(
    absl::string_view value, absl::string_view what = "compression_type");

// TF's spelling: "", "ZLIB" or "GZIP".
absl::string_view CompressionName(Compression c);

// What the first bytes of a file look like: "GZIP" (magic 1f 8b), "ZLIB" (a
// valid zlib header: deflate, window <= 32 KiB, check bits) or "" (neither).
absl::string_view SniffCompression(absl::string_view first_bytes);

// Streaming deflate at zlib's default level. Deterministic: the GZIP header
// carries no name and a zero modification time.
class Deflater {
 public:
  explicit Deflater(Compression c);  // c != kNone
  ~Deflater();
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  // Compresses `in`, appending any output to `*out`.
  void Append(absl::string_view in, std::string* out);
  // Ends the stream (end marker and trailer) into `*out`; Append after Finish
  // is a programming error.
  void Finish(std::string* out);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The whole of `bytes` as one compressed stream (a copy when c == kNone).
std::string CompressAll(Compression c, absl::string_view bytes);

// Decompresses the file `file` (not owned; read from its current position) as
// a stream of compression `c` (!= kNone). GZIP accepts several concatenated
// members (as gzip(1) does); ZLIB is one stream and bytes after its end are
// DataLoss.
class InflateReader {
 public:
  InflateReader(std::FILE* file, std::string path, Compression c);
  ~InflateReader();
  InflateReader(const InflateReader&) = delete;
  InflateReader& operator=(const InflateReader&) = delete;
  // Up to `n` decompressed bytes into `out`; fewer only at the stream's clean
  // end, 0 after it. Errors (DataLoss unless noted), each naming the file:
  //   "truncated GZIP stream: the file ends at compressed byte offset N before
  //   the stream's end";
  //   "corrupt GZIP stream at compressed byte offset N: <zlib's reason>", with
  //   what the file looks like when nothing has been decompressed yet (e.g.
  //   "the file starts with the ZLIB header 78 9c, but compression_type is
  //   \"GZIP\"");
  //   "N bytes after the end of the ZLIB stream at compressed byte offset M";
  //   a failed read of the file through ReadError.
  absl::StatusOr<size_t> Read(char* out, size_t n);
  // Compressed bytes consumed so far.
  int64_t compressed_offset() const;
  // Decompressed bytes returned so far.
  int64_t decompressed_offset() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_ZLIB_STREAM_H_
