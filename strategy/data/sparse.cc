// strategy/data/sparse.cc

#include "strategy/data/sparse.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace tpusim::data {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;

// The box encoding (tpusim's own, in memory only; TF's variant boxes are not
// serialized either): u8 values dtype, i64 rank, i64 n, i64 dense_shape[rank],
// i64 indices[n * rank], then the values: n * dtype size raw bytes, or for
// strings per value an i64 length and the bytes.
constexpr uint8_t kBoxVersion = 1;

void PutI64(std::string* out, int64_t v) {
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out->append(b, sizeof v);
}

class Reader {
 public:
  explicit Reader(absl::string_view s) : s_(s) {}
  bool I64(int64_t* v) {
    if (s_.size() - pos_ < sizeof *v) return false;
    std::memcpy(v, s_.data() + pos_, sizeof *v);
    pos_ += sizeof *v;
    return true;
  }
  bool U8(uint8_t* v) {
    if (pos_ >= s_.size()) return false;
    *v = static_cast<uint8_t>(s_[pos_++]);
    return true;
  }
  bool Bytes(size_t n, absl::string_view* out) {
    if (s_.size() - pos_ < n) return false;
    *out = s_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == s_.size(); }

 private:
  absl::string_view s_;
  size_t pos_ = 0;
};

// One decoded box.
struct Box {
  DType dtype = DType::kF32;
  std::vector<int64_t> dense_shape;
  std::vector<int64_t> indices;  // n * rank
  int64_t n = 0;
  absl::string_view raw_values;      // numeric
  std::vector<std::string> strings;  // kBytes
};

std::string Encode(DType dtype, absl::Span<const int64_t> dense_shape,
                   absl::Span<const int64_t> indices, int64_t n,
                   const Tensor& values, int64_t first_value) {
  std::string out;
  out.push_back(static_cast<char>(kBoxVersion));
  out.push_back(static_cast<char>(dtype));
  PutI64(&out, static_cast<int64_t>(dense_shape.size()));
  PutI64(&out, n);
  for (int64_t d : dense_shape) PutI64(&out, d);
  for (int64_t i : indices) PutI64(&out, i);
  if (dtype == DType::kBytes) {
    auto v = values.values<std::string>();
    for (int64_t i = 0; i < n; ++i) {
      const std::string& s = v[first_value + i];
      PutI64(&out, static_cast<int64_t>(s.size()));
      out += s;
    }
  } else {
    const int64_t size = runtime::DTypeSize(dtype);
    auto raw = values.raw_bytes();
    out.append(reinterpret_cast<const char*>(raw.data()) + first_value * size,
               n * size);
  }
  return out;
}

absl::StatusOr<Box> Decode(absl::string_view s, absl::string_view name,
                           int64_t box_index) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("sparse component ", name, ": element ", box_index,
                     " is not an encoded SparseTensor (", why, ")"));
  };
  Reader r(s);
  uint8_t version = 0, dtype = 0;
  if (!r.U8(&version) || version != kBoxVersion) return bad("bad header");
  if (!r.U8(&dtype) || dtype > static_cast<uint8_t>(DType::kBytes))
    return bad("bad dtype");
  Box box;
  box.dtype = static_cast<DType>(dtype);
  int64_t rank = 0;
  if (!r.I64(&rank) || !r.I64(&box.n) || rank < 0 || rank > 64 || box.n < 0 ||
      box.n > static_cast<int64_t>(s.size()) ||
      box.n * rank > static_cast<int64_t>(s.size() / sizeof(int64_t)))
    return bad("bad sizes");
  box.dense_shape.resize(rank);
  for (int64_t& d : box.dense_shape)
    if (!r.I64(&d) || d < 0) return bad("bad dense_shape");
  box.indices.resize(box.n * rank);
  for (int64_t& i : box.indices)
    if (!r.I64(&i)) return bad("truncated indices");
  if (box.dtype == DType::kBytes) {
    box.strings.resize(box.n);
    for (std::string& v : box.strings) {
      int64_t len = 0;
      absl::string_view bytes;
      if (!r.I64(&len) || len < 0 || !r.Bytes(len, &bytes))
        return bad("truncated values");
      v = std::string(bytes);
    }
  } else {
    if (!r.Bytes(box.n * runtime::DTypeSize(box.dtype), &box.raw_values))
      return bad("truncated values");
  }
  if (!r.done()) return bad("trailing bytes");
  return box;
}

std::string IndexString(const int64_t* index, int rank) {
  return absl::StrCat(
      "[", absl::StrJoin(absl::Span<const int64_t>(index, rank), ","), "]");
}

// A numeric tensor of `dtype` and `shape` from raw bytes.
Tensor FromRaw(DType dtype, Shape shape, const std::string& raw) {
  return runtime::VisitNumeric(dtype, [&](auto t) {
    using T = decltype(t);
    std::vector<T> v(raw.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), raw.data(), raw.size());
    return Tensor::FromVector<T>(std::move(shape), std::move(v));
  });
}

}  // namespace

std::string SparseTensor::DebugString() const {
  auto vals = [](const Tensor& t) {
    std::string s = t.DebugString(1 << 20);
    const size_t brace = s.find('{');
    return brace == std::string::npos
               ? s
               : absl::StrCat("[", s.substr(brace + 1, s.size() - brace - 2),
                              "]");
  };
  // indices one [i0, i1, ...] per value.
  std::string ix = "[";
  if (indices.dtype() == DType::kI64 && indices.rank() == 2 &&
      indices.has_data()) {
    const int64_t n = indices.shape().dim(0);
    const int64_t rank = indices.shape().dim(1);
    auto v = indices.values<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      absl::StrAppend(&ix, i > 0 ? ", [" : "[",
                      absl::StrJoin(v.subspan(i * rank, rank), ", "), "]");
    }
    ix += "]";
  } else {
    ix = vals(indices);
  }
  return absl::StrCat("SparseTensor(indices=", ix, ", values=", vals(values),
                      ", dense_shape=", vals(dense_shape), ")");
}

TensorSpec SparseComponentSpec(DType dtype, Shape shape, Shape box_shape) {
  TensorSpec spec;
  spec.dtype = DType::kBytes;
  spec.shape = std::move(box_shape);
  spec.sparse = runtime::SparseBoxSpec{dtype, std::move(shape)};
  return spec;
}

Shape LogicalShape(const TensorSpec& spec) {
  if (!spec.sparse.has_value()) return spec.shape;
  if (!spec.shape.rank_known() || !spec.sparse->shape.rank_known())
    return Shape::UnknownRank();
  std::vector<int64_t> dims = spec.shape.dims();
  dims.insert(dims.end(), spec.sparse->shape.dims().begin(),
              spec.sparse->shape.dims().end());
  return Shape(std::move(dims));
}

bool HasSparseComponent(const ElementSpec& spec) {
  for (const TensorSpec* leaf : spec.Flatten()) {
    if (leaf->sparse.has_value()) return true;
  }
  return false;
}

absl::Status ValidateSparse(const SparseTensor& st, absl::string_view name) {
  const Tensor& ix = st.indices;
  const Tensor& ds = st.dense_shape;
  if (ix.dtype() != DType::kI64 || ix.rank() != 2 || !ix.has_data()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sparse tensor ", name,
                     ": indices must be an int64 matrix [n, rank], "
                     "got ",
                     ix.spec().ToString()));
  }
  if (ds.dtype() != DType::kI64 || ds.rank() != 1 || !ds.has_data()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sparse tensor ", name, ": dense_shape must be an int64 vector, got ",
        ds.spec().ToString()));
  }
  const int64_t n = ix.shape().dim(0);
  const int rank = static_cast<int>(ix.shape().dim(1));
  if (ds.shape().dim(0) != rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sparse tensor ", name, ": indices ", ix.shape().ToString(),
        " have rank ", rank, " but dense_shape has ", ds.shape().dim(0),
        " dimensions"));
  }
  if (st.values.rank() != 1 || st.values.shape().dim(0) != n ||
      !st.values.has_data()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sparse tensor ", name, ": values must be a vector of ", n,
        " values (one per index), got ", st.values.spec().ToString()));
  }
  auto shape = ds.values<int64_t>();
  for (int d = 0; d < rank; ++d) {
    if (shape[d] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse tensor ", name, ": dense_shape ",
          IndexString(shape.data(), rank), " has a negative dimension"));
    }
  }
  auto idx = ix.values<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* cur = idx.data() + i * rank;
    bool valid = true, increasing = true, different = i == 0;
    for (int d = 0; d < rank; ++d) {
      if (cur[d] < 0 || cur[d] >= shape[d]) valid = false;
    }
    if (i > 0) {
      const int64_t* prev = cur - rank;
      for (int d = 0; d < rank && !different; ++d) {
        if (cur[d] > prev[d]) different = true;
        if (cur[d] < prev[d]) {
          increasing = false;
          break;
        }
      }
      if (rank == 0) different = false;
    }
    const std::string index =
        absl::StrCat("indices[", i, "] = ", IndexString(cur, rank));
    if (!valid) {
      return absl::InvalidArgumentError(
          absl::StrCat("sparse tensor ", name, ": ", index,
                       " is out of bounds: need 0 <= index < ",
                       IndexString(shape.data(), rank)));
    }
    if (!increasing) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse tensor ", name, ": ", index, " is out of order (after ",
          "indices[", i - 1, "] = ", IndexString(cur - rank, rank),
          "). Many sparse ops require sorted indices: row-major order; use "
          "tf.sparse.reorder to create a correctly ordered copy"));
    }
    if (!different) {
      return absl::InvalidArgumentError(
          absl::StrCat("sparse tensor ", name, ": ", index, " is repeated"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> BoxSparse(const SparseTensor& st,
                                 absl::string_view name) {
  TPUSIM_RETURN_IF_ERROR(ValidateSparse(st, name));
  const int64_t n = st.indices.shape().dim(0);
  return Tensor::Scalar<std::string>(
      Encode(st.values.dtype(), st.dense_shape.values<int64_t>(),
             st.indices.values<int64_t>(), n, st.values, 0));
}

absl::StatusOr<Tensor> BoxSparseRows(const SparseTensor& st,
                                     absl::string_view name) {
  TPUSIM_RETURN_IF_ERROR(ValidateSparse(st, name));
  const int rank = static_cast<int>(st.dense_shape.shape().dim(0));
  if (rank < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sparse tensor ", name,
                     ": slicing rows needs rank >= 1, got dense_shape []"));
  }
  auto shape = st.dense_shape.values<int64_t>();
  auto idx = st.indices.values<int64_t>();
  const int64_t n = st.indices.shape().dim(0);
  const int64_t rows = shape[0];
  std::vector<std::string> boxes;
  boxes.reserve(rows);
  std::vector<int64_t> row_indices;
  int64_t next = 0;  // entries are sorted: row r's are contiguous
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t first = next;
    row_indices.clear();
    while (next < n && idx[next * rank] == r) {
      for (int d = 1; d < rank; ++d)
        row_indices.push_back(idx[next * rank + d]);
      ++next;
    }
    boxes.push_back(Encode(st.values.dtype(), shape.subspan(1), row_indices,
                           next - first, st.values, first));
  }
  return Tensor::FromVector<std::string>(Shape({rows}), std::move(boxes));
}

absl::StatusOr<SparseTensor> UnboxSparse(const Tensor& boxes,
                                         const TensorSpec& spec,
                                         absl::string_view name) {
  if (!spec.sparse.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "component ", name, " (", spec.ToString(), ") is not sparse"));
  }
  if (boxes.dtype() != DType::kBytes || !boxes.has_data()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sparse component ", name,
        ": expected boxes (string "
        "values), got ",
        boxes.spec().ToString(), boxes.has_data() ? "" : " without data"));
  }
  const DType dtype = spec.sparse->dtype;
  const std::vector<int64_t>& box_dims = boxes.shape().dims();
  const int box_rank = static_cast<int>(box_dims.size());
  auto encoded = boxes.values<std::string>();
  const int64_t count = boxes.num_elements();
  std::vector<Box> decoded;
  decoded.reserve(count);
  int rank = spec.sparse->shape.rank_known() ? spec.sparse->shape.rank() : 0;
  for (int64_t b = 0; b < count; ++b) {
    TPUSIM_ASSIGN_OR_RETURN(Box box, Decode(encoded[b], name, b));
    const int r = static_cast<int>(box.dense_shape.size());
    if (box.dtype != dtype) {
      return absl::InvalidArgumentError(
          absl::StrCat("sparse component ", name, ": element ", b, " holds ",
                       runtime::DTypeName(box.dtype), " values, expected ",
                       runtime::DTypeName(dtype)));
    }
    if (b == 0) {
      rank = r;
    } else if (r != rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("sparse component ", name, ": element ", b, " has rank ",
                       r, " but element 0 has rank ", rank,
                       "; all SparseTensors of a batch need the same rank"));
    }
    decoded.push_back(std::move(box));
  }
  // dense_shape: the box dims, then per dimension the boxes' maximum.
  std::vector<int64_t> dense(box_dims.begin(), box_dims.end());
  for (int d = 0; d < rank; ++d) {
    int64_t m = 0;
    if (decoded.empty()) {
      if (spec.sparse->shape.rank_known() && d < spec.sparse->shape.rank() &&
          spec.sparse->shape.dim(d) != runtime::kUnknownDim)
        m = spec.sparse->shape.dim(d);
    }
    for (const Box& box : decoded) m = std::max(m, box.dense_shape[d]);
    dense.push_back(m);
  }
  const int out_rank = box_rank + rank;
  int64_t total = 0;
  for (const Box& box : decoded) total += box.n;
  std::vector<int64_t> indices;
  indices.reserve(total * out_rank);
  std::vector<int64_t> box_index(box_rank, 0);
  std::string raw;
  std::vector<std::string> strings;
  for (int64_t b = 0; b < count; ++b) {
    // box_index = the row-major multi-index of box b.
    int64_t rest = b;
    for (int d = box_rank - 1; d >= 0; --d) {
      box_index[d] = box_dims[d] == 0 ? 0 : rest % box_dims[d];
      rest = box_dims[d] == 0 ? 0 : rest / box_dims[d];
    }
    const Box& box = decoded[b];
    for (int64_t i = 0; i < box.n; ++i) {
      indices.insert(indices.end(), box_index.begin(), box_index.end());
      indices.insert(indices.end(), box.indices.begin() + i * rank,
                     box.indices.begin() + (i + 1) * rank);
    }
    if (dtype == DType::kBytes) {
      strings.insert(strings.end(), box.strings.begin(), box.strings.end());
    } else {
      raw.append(box.raw_values.data(), box.raw_values.size());
    }
  }
  SparseTensor out;
  out.indices =
      Tensor::FromVector<int64_t>(Shape({total, out_rank}), std::move(indices));
  out.values = dtype == DType::kBytes ? Tensor::FromVector<std::string>(
                                            Shape({total}), std::move(strings))
                                      : FromRaw(dtype, Shape({total}), raw);
  out.dense_shape = Tensor::Vector<int64_t>(std::move(dense));
  return out;
}

absl::StatusOr<Tensor> MapSparseValues(
    const Tensor& boxes, const TensorSpec& spec, absl::string_view name,
    const std::function<absl::StatusOr<Tensor>(const Tensor&)>& fn) {
  if (!spec.sparse.has_value() || boxes.dtype() != DType::kBytes ||
      !boxes.has_data()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "component ", name, " (", spec.ToString(), ") holds no sparse boxes"));
  }
  auto encoded = boxes.values<std::string>();
  std::vector<std::string> out;
  out.reserve(encoded.size());
  for (int64_t b = 0; b < static_cast<int64_t>(encoded.size()); ++b) {
    TPUSIM_ASSIGN_OR_RETURN(Box box, Decode(encoded[b], name, b));
    Tensor values =
        box.dtype == DType::kBytes
            ? Tensor::FromVector<std::string>(Shape({box.n}), box.strings)
            : FromRaw(box.dtype, Shape({box.n}), std::string(box.raw_values));
    TPUSIM_ASSIGN_OR_RETURN(Tensor mapped, fn(values));
    if (mapped.rank() != 1 || mapped.num_elements() != box.n ||
        !mapped.has_data()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse component ", name, ": the function turned ", box.n,
          " values into ", mapped.spec().ToString(), "; it must keep them"));
    }
    out.push_back(
        Encode(mapped.dtype(), box.dense_shape, box.indices, box.n, mapped, 0));
  }
  return Tensor::FromVector<std::string>(boxes.shape(), std::move(out));
}

Dataset SparseTensorSlices(const SparseTensor& st, absl::string_view name) {
  absl::StatusOr<Tensor> rows = BoxSparseRows(st, name);
  if (!rows.ok()) return Dataset::FromError(rows.status());
  // The rows' spec: every dimension but the first, as known from the value.
  std::vector<int64_t> row_dims(st.dense_shape.values<int64_t>().begin() + 1,
                                st.dense_shape.values<int64_t>().end());
  return Dataset::FromTensorSlices(TensorRefNest(TensorRef::SparseBoxes(
      *std::move(rows),
      runtime::SparseBoxSpec{st.values.dtype(), Shape(std::move(row_dims))})));
}

Dataset SparseTensorDataset(const SparseTensor& st, absl::string_view name) {
  absl::StatusOr<Tensor> box = BoxSparse(st, name);
  if (!box.ok()) return Dataset::FromError(box.status());
  auto dims = st.dense_shape.values<int64_t>();
  return Dataset::FromTensors(TensorRefNest(TensorRef::SparseBoxes(
      *std::move(box),
      runtime::SparseBoxSpec{
          st.values.dtype(),
          Shape(std::vector<int64_t>(dims.begin(), dims.end()))})));
}

Tensor DummySparseBoxes(const TensorSpec& spec) {
  // TF: dims from the logical shape, unknown -> 0, fully known -> dims[0] = 0.
  const Shape logical = LogicalShape(spec);
  std::vector<int64_t> dims;
  if (logical.rank_known()) {
    dims = logical.dims();
    for (int64_t& d : dims) {
      if (d == runtime::kUnknownDim) d = 0;
    }
    if (!dims.empty() && logical.IsFullyDefined()) dims[0] = 0;
  }
  const int box_rank = spec.shape.rank_known()
                           ? std::min<int>(spec.shape.rank(), dims.size())
                           : 0;
  std::vector<int64_t> box_dims(dims.begin(), dims.begin() + box_rank);
  std::vector<int64_t> row_dims(dims.begin() + box_rank, dims.end());
  const Shape box_shape(box_dims);
  const int64_t count = box_shape.num_elements();
  const DType dtype =
      spec.sparse.has_value() ? spec.sparse->dtype : DType::kF32;
  const Tensor no_values = Tensor::Zeros(dtype, Shape({0}));
  std::vector<std::string> boxes(count,
                                 Encode(dtype, row_dims, {}, 0, no_values, 0));
  return Tensor::FromVector<std::string>(box_shape, std::move(boxes));
}

}  // namespace tpusim::data
