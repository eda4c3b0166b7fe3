// Reader nodes (TFRecordDataset, TextLineDataset, FixedLengthRecordDataset) and
// list_files.

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "strategy/data/dataset.h"
#include "strategy/data/dataset_nodes.h"
#include "strategy/data/glob.h"
#include "strategy/data/tfrecord.h"

namespace tpusim::data {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;

namespace {

absl::Status CheckFilenamesSpec(absl::string_view op,
                                const TensorRef& filenames) {
  const TensorSpec& s = filenames.spec();
  if (s.dtype != DType::kBytes || !s.shape.rank_known() || s.shape.rank() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": `filenames` must be a string scalar or vector, got ",
        s.ToString()));
  }
  return absl::OkStatus();
}

absl::Status CheckNoInputs(absl::string_view op,
                           const std::vector<NodePtr>& inputs) {
  if (!inputs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": WithInputs got ", inputs.size(), " inputs, the node has 0"));
  }
  return absl::OkStatus();
}

// Records of one file.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual absl::StatusOr<std::optional<std::string>> ReadNext() = 0;
};
using SourceFactory =
    std::function<absl::StatusOr<std::unique_ptr<RecordSource>>(
        const std::string& path)>;

// Reads the files in order, one record (a string scalar) per element.
class FileRecordIterator final : public DatasetIterator {
 public:
  FileRecordIterator(std::vector<std::string> files, SourceFactory open)
      : files_(std::move(files)), open_(std::move(open)) {}
  absl::StatusOr<std::optional<Element>> GetNext() override {
    while (true) {
      if (source_ == nullptr) {
        if (next_file_ >= files_.size()) return std::optional<Element>();
        TPUSIM_ASSIGN_OR_RETURN(source_, open_(files_[next_file_++]));
      }
      TPUSIM_ASSIGN_OR_RETURN(std::optional<std::string> record,
                              source_->ReadNext());
      if (record.has_value()) {
        return std::optional<Element>(
            Element(Tensor::Scalar<std::string>(*std::move(record))));
      }
      source_.reset();
    }
  }

 private:
  std::vector<std::string> files_;
  SourceFactory open_;
  size_t next_file_ = 0;
  std::unique_ptr<RecordSource> source_;
};

class TFRecordSource final : public RecordSource {
 public:
  explicit TFRecordSource(std::unique_ptr<TFRecordFileReader> r)
      : r_(std::move(r)) {}
  absl::StatusOr<std::optional<std::string>> ReadNext() override {
    return r_->ReadNext();
  }

 private:
  std::unique_ptr<TFRecordFileReader> r_;
};

// A FILE* owned by a source.
struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

// Opens `path` for reading; a directory is FailedPrecondition (fopen accepts
// one and only the first read fails). Errors carry the OS reason (FileError).
absl::StatusOr<FilePtr> OpenForReading(absl::string_view op,
                                       const std::string& path) {
  const std::string what = absl::StrCat(op, ": cannot open");
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (f == nullptr) return FileError(what, path, errno);
  struct stat st;
  if (::fstat(::fileno(f.get()), &st) != 0) return FileError(what, path, errno);
  if (S_ISDIR(st.st_mode)) return FileError(what, path, EISDIR);
  return f;
}

// TF's line reader (BufferedInputStream::ReadLine, used by TextLineDataset): a
// record ends at "\n"; every "\r" in the line is dropped (not only one before
// "\n"); a last line without "\n" is a record when it is non-empty after that
// (a file ending in "\n" has no empty last record).
//
// A read error (ferror after fread: EIO, ENOMEM, ...) is an error naming the
// file and the line, never the end of the file; a line longer than the memory
// budget is ResourceExhausted before it grows further.
class TextLineSource final : public RecordSource {
 public:
  TextLineSource(std::string path, FilePtr f, common::Bytes budget)
      : path_(std::move(path)), f_(std::move(f)), budget_(budget) {}
  absl::StatusOr<std::optional<std::string>> ReadNext() override {
    std::string line;
    bool terminated = false;
    bool any = false;
    while (!terminated) {
      if (pos_ == end_) {
        errno = 0;
        end_ = std::fread(chunk_, 1, sizeof(chunk_), f_.get());
        pos_ = 0;
        if (end_ == 0) {
          if (std::ferror(f_.get())) {
            return ReadError("TextLineDataset: cannot read", path_,
                             absl::StrCat("line ", line_number_ + 1), errno);
          }
          break;  // end of file
        }
      }
      any = true;
      const char* begin = chunk_ + pos_;
      const void* nl = std::memchr(begin, '\n', end_ - pos_);
      const size_t n =
          nl == nullptr ? end_ - pos_ : static_cast<const char*>(nl) - begin;
      for (size_t i = 0; i < n; ++i) {
        if (begin[i] != '\r') line.push_back(begin[i]);
      }
      pos_ += n;
      if (nl != nullptr) {
        ++pos_;
        terminated = true;
      }
      if (static_cast<int64_t>(line.size()) > budget_.count()) {
        return absl::ResourceExhaustedError(
            absl::StrCat("TextLineDataset: line ", line_number_ + 1, " of \"",
                         path_, "\" is longer than the memory budget of ",
                         budget_.count(), " bytes"));
      }
    }
    if (!any) return std::optional<std::string>();  // end of file
    ++line_number_;
    // TF returns an unterminated last line only when it is non-empty (after
    // dropping '\r').
    if (!terminated && line.empty()) return std::optional<std::string>();
    return std::optional<std::string>(std::move(line));
  }

 private:
  std::string path_;
  FilePtr f_;
  common::Bytes budget_;
  int64_t line_number_ = 0;  // lines returned so far
  char chunk_[1 << 14];
  size_t pos_ = 0;
  size_t end_ = 0;
};

class FixedLengthSource final : public RecordSource {
 public:
  FixedLengthSource(std::string path, FilePtr f, int64_t record_bytes,
                    int64_t count)
      : path_(std::move(path)),
        f_(std::move(f)),
        record_bytes_(record_bytes),
        left_(count) {}
  absl::StatusOr<std::optional<std::string>> ReadNext() override {
    if (left_ <= 0) return std::optional<std::string>();
    std::string record(static_cast<size_t>(record_bytes_), '\0');
    errno = 0;
    if (std::fread(&record[0], 1, record.size(), f_.get()) != record.size()) {
      if (std::ferror(f_.get())) {
        return ReadError("FixedLengthRecordDataset: cannot read", path_,
                         absl::StrCat("record ", index_), errno);
      }
      return absl::DataLossError(
          absl::StrCat("FixedLengthRecordDataset: file \"", path_,
                       "\" ended inside record ", index_));
    }
    --left_;
    ++index_;
    return std::optional<std::string>(std::move(record));
  }

 private:
  std::string path_;
  FilePtr f_;
  int64_t record_bytes_;
  int64_t left_;
  int64_t index_ = 0;  // of the next record in the file
};

}  // namespace

bool IsReaderOp(absl::string_view op) {
  return op == TFRecordReaderNode::kOp || op == TextLineReaderNode::kOp ||
         op == FixedLengthRecordReaderNode::kOp;
}

ReaderNode::ReaderNode(TensorRef filenames)
    : DatasetNode({}, ElementSpec(TensorSpec{DType::kBytes, Shape()})),
      filenames_(std::move(filenames)) {}

absl::StatusOr<std::vector<std::string>> ReaderNode::ResolveFilenames(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(Tensor t, filenames_.Resolve(ctx));
  if (t.dtype() != DType::kBytes || t.rank() > 1 || !t.has_data()) {
    return absl::InvalidArgumentError(absl::StrCat(
        op(),
        ": `filenames` must be a string scalar or vector with values, got ",
        t.spec().ToString()));
  }
  auto v = t.values<std::string>();
  return std::vector<std::string>(v.begin(), v.end());
}

// ---- TFRecord ----

TFRecordReaderNode::TFRecordReaderNode(TensorRef filenames,
                                       std::string compression_type)
    : ReaderNode(std::move(filenames)),
      compression_type_(std::move(compression_type)) {}

absl::StatusOr<NodePtr> TFRecordReaderNode::Make(TensorRef filenames,
                                                 std::string compression_type) {
  TPUSIM_RETURN_IF_ERROR(CheckFilenamesSpec(kOp, filenames));
  TPUSIM_RETURN_IF_ERROR(
      ParseCompressionType(compression_type,
                           "TFRecordDataset: compression_type")
          .status());
  return NodePtr(std::make_shared<TFRecordReaderNode>(
      std::move(filenames), std::move(compression_type)));
}

std::vector<NodeAttr> TFRecordReaderNode::attrs() const {
  return {{"filenames", filenames().DebugString()},
          {"compression_type", absl::StrCat("\"", compression_type_, "\"")}};
}

absl::StatusOr<IteratorPtr> TFRecordReaderNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(std::vector<std::string> files,
                          ResolveFilenames(ctx));
  const common::Bytes budget = ctx.max_memory;
  TPUSIM_ASSIGN_OR_RETURN(const Compression compression,
                          ParseCompressionType(compression_type_));
  return IteratorPtr(std::make_unique<FileRecordIterator>(
      std::move(files),
      [budget, compression](const std::string& path)
          -> absl::StatusOr<std::unique_ptr<RecordSource>> {
        TPUSIM_ASSIGN_OR_RETURN(
            std::unique_ptr<TFRecordFileReader> r,
            TFRecordFileReader::Open(path, budget.count(), compression));
        return std::unique_ptr<RecordSource>(
            std::make_unique<TFRecordSource>(std::move(r)));
      }));
}

absl::StatusOr<NodePtr> TFRecordReaderNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckNoInputs(kOp, inputs));
  return Make(filenames(), compression_type_);
}

// ---- TextLine ----

TextLineReaderNode::TextLineReaderNode(TensorRef filenames)
    : ReaderNode(std::move(filenames)) {}

absl::StatusOr<NodePtr> TextLineReaderNode::Make(TensorRef filenames) {
  TPUSIM_RETURN_IF_ERROR(CheckFilenamesSpec(kOp, filenames));
  return NodePtr(std::make_shared<TextLineReaderNode>(std::move(filenames)));
}

absl::StatusOr<IteratorPtr> TextLineReaderNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(std::vector<std::string> files,
                          ResolveFilenames(ctx));
  const common::Bytes budget = ctx.max_memory;
  return IteratorPtr(std::make_unique<FileRecordIterator>(
      std::move(files),
      [budget](const std::string& path)
          -> absl::StatusOr<std::unique_ptr<RecordSource>> {
        TPUSIM_ASSIGN_OR_RETURN(FilePtr f,
                                OpenForReading("TextLineDataset", path));
        return std::unique_ptr<RecordSource>(
            std::make_unique<TextLineSource>(path, std::move(f), budget));
      }));
}

absl::StatusOr<NodePtr> TextLineReaderNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckNoInputs(kOp, inputs));
  return Make(filenames());
}

// ---- FixedLengthRecord ----

FixedLengthRecordReaderNode::FixedLengthRecordReaderNode(TensorRef filenames,
                                                         int64_t record_bytes,
                                                         int64_t header_bytes,
                                                         int64_t footer_bytes)
    : ReaderNode(std::move(filenames)),
      record_bytes_(record_bytes),
      header_bytes_(header_bytes),
      footer_bytes_(footer_bytes) {}

absl::StatusOr<NodePtr> FixedLengthRecordReaderNode::Make(
    TensorRef filenames, int64_t record_bytes, int64_t header_bytes,
    int64_t footer_bytes) {
  TPUSIM_RETURN_IF_ERROR(CheckFilenamesSpec(kOp, filenames));
  if (record_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("FixedLengthRecordDataset: record_bytes must be > 0, got ",
                     record_bytes));
  }
  if (header_bytes < 0 || footer_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("FixedLengthRecordDataset: header_bytes and footer_bytes "
                     "must be >= 0, got ",
                     header_bytes, " and ", footer_bytes));
  }
  return NodePtr(std::make_shared<FixedLengthRecordReaderNode>(
      std::move(filenames), record_bytes, header_bytes, footer_bytes));
}

std::vector<NodeAttr> FixedLengthRecordReaderNode::attrs() const {
  return {{"filenames", filenames().DebugString()},
          {"record_bytes", absl::StrCat(record_bytes_)},
          {"header_bytes", absl::StrCat(header_bytes_)},
          {"footer_bytes", absl::StrCat(footer_bytes_)}};
}

absl::StatusOr<IteratorPtr> FixedLengthRecordReaderNode::DoMakeIterator(
    const IteratorContext& ctx) const {
  TPUSIM_ASSIGN_OR_RETURN(std::vector<std::string> files,
                          ResolveFilenames(ctx));
  const int64_t record = record_bytes_, header = header_bytes_,
                footer = footer_bytes_;
  // Estimate before allocating: one record is read at a time.
  if (record > ctx.max_memory.count()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("FixedLengthRecordDataset: record_bytes=", record,
                     " is more than the memory budget of ",
                     ctx.max_memory.count(), " bytes"));
  }
  return IteratorPtr(std::make_unique<FileRecordIterator>(
      std::move(files),
      [=](const std::string& path)
          -> absl::StatusOr<std::unique_ptr<RecordSource>> {
        TPUSIM_ASSIGN_OR_RETURN(
            FilePtr f, OpenForReading("FixedLengthRecordDataset", path));
        if (std::fseek(f.get(), 0, SEEK_END) != 0) {
          return FileError("FixedLengthRecordDataset: cannot seek in", path,
                           errno);
        }
        const int64_t size = std::ftell(f.get());
        const int64_t body = size - header - footer;
        // As TF (fixed_length_record_dataset_op.cc): a body that is not a whole
        // number of records is an InvalidArgument when the file is opened,
        // before any of its records. (tpusim also rejects a file shorter than
        // header + footer the same way.)
        if (body < 0 || body % record != 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "Excluding the header (", header, " bytes) and footer (", footer,
              " bytes), input file \"", path, "\" has body length ", body,
              " bytes, which is not an exact multiple of the record length (",
              record, " bytes)."));
        }
        if (std::fseek(f.get(), header, SEEK_SET) != 0) {
          return FileError("FixedLengthRecordDataset: cannot seek in", path,
                           errno);
        }
        return std::unique_ptr<RecordSource>(
            std::make_unique<FixedLengthSource>(path, std::move(f), record,
                                                body / record));
      }));
}

absl::StatusOr<NodePtr> FixedLengthRecordReaderNode::WithInputs(
    std::vector<NodePtr> inputs) const {
  TPUSIM_RETURN_IF_ERROR(CheckNoInputs(kOp, inputs));
  return Make(filenames(), record_bytes_, header_bytes_, footer_bytes_);
}

// ---- list_files ----

Dataset Dataset::ListFiles(std::vector<std::string> patterns, bool shuffle,
                           std::optional<uint64_t> seed) {
  if (patterns.empty()) {
    return FromError(absl::InvalidArgumentError(
        "list_files: at least one pattern is required"));
  }
  absl::StatusOr<std::vector<std::string>> files = MatchingFiles(patterns);
  if (!files.ok()) return FromError(files.status());
  if (files->empty()) {
    // TF (dataset_ops.py list_files): an Assert with this message →
    // InvalidArgumentError.
    return FromError(absl::InvalidArgumentError(absl::StrCat(
        "No files matched pattern: ", absl::StrJoin(patterns, ", "))));
  }
  const int64_t n = static_cast<int64_t>(files->size());
  Dataset ds = FromTensorSlices(
      TensorRefNest(Tensor::Vector<std::string>(*std::move(files))));
  // TF: shuffle(buffer_size=max(#files, 1), seed=seed), reshuffled each
  // iteration. tpusim choice: seed absent means seed 0 (deterministic), and the
  // order is tpusim's PRNG's.
  if (shuffle) ds = ds.Shuffle(std::max<int64_t>(n, 1), seed.value_or(0), true);
  return ds;
}

}  // namespace tpusim::data
