#include "strategy/runtime/tensor.h"

#include <atomic>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/int_math.h"

namespace tpusim::runtime {
namespace {

template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    return v.ToFloat();
  } else {
    return static_cast<double>(v);
  }
}

// tf.cast semantics for one element: float→int truncates toward zero
// (out-of-range values are implementation-defined in TF; here they saturate),
// anything→bf16 rounds to nearest even.
template <typename To>
To ConvertFromDouble(double v) {
  if constexpr (std::is_same_v<To, BFloat16>) {
    return BFloat16::FromFloat(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(v);
  } else {
    if (std::isnan(v)) return 0;
    const double t = std::trunc(v);
    if (t <= static_cast<double>(std::numeric_limits<To>::lowest())) {
      return std::numeric_limits<To>::lowest();
    }
    if (t >= static_cast<double>(std::numeric_limits<To>::max())) {
      return std::numeric_limits<To>::max();
    }
    return static_cast<To>(t);
  }
}

}  // namespace

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "float32";
    case DType::kF64:
      return "float64";
    case DType::kBF16:
      return "bfloat16";
    case DType::kI32:
      return "int32";
    case DType::kI64:
      return "int64";
    case DType::kU8:
      return "uint8";
    case DType::kBytes:
      return "string";
  }
  return "?";
}

absl::StatusOr<DType> DTypeFromName(absl::string_view name) {
  for (DType d : {DType::kF32, DType::kF64, DType::kBF16, DType::kI32,
                  DType::kI64, DType::kU8, DType::kBytes}) {
    if (name == DTypeName(d)) return d;
  }
  if (name == "bytes") return DType::kBytes;
  return absl::InvalidArgumentError(
      absl::StrCat("dtype \"", name,
                   "\" is not known; valid: float32, float64, bfloat16, int32, "
                   "int64, uint8, "
                   "string (or bytes)"));
}

int64_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kF64:
      return 8;
    case DType::kBF16:
      return 2;
    case DType::kI32:
      return 4;
    case DType::kI64:
      return 8;
    case DType::kU8:
      return 1;
    case DType::kBytes:
      return 0;
  }
  return 0;
}

bool IsFloating(DType d) {
  return d == DType::kF32 || d == DType::kF64 || d == DType::kBF16;
}
bool IsInteger(DType d) {
  return d == DType::kI32 || d == DType::kI64 || d == DType::kU8;
}

BFloat16 BFloat16::FromFloat(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (std::isnan(value)) {
    // Keep the sign, force a quiet NaN so truncation cannot turn it into
    // infinity.
    return BFloat16{static_cast<uint16_t>((bits >> 16) | 0x0040)};
  }
  // Round to nearest, ties to even: add 0x7FFF plus the lowest kept bit, then
  // truncate.
  const uint32_t lsb = (bits >> 16) & 1;
  bits += 0x7FFF + lsb;
  return BFloat16{static_cast<uint16_t>(bits >> 16)};
}

float BFloat16::ToFloat() const {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float out;
  std::memcpy(&out, &wide, sizeof(out));
  return out;
}

// ---- Shape ----

Shape Shape::UnknownRank() {
  Shape s;
  s.rank_known_ = false;
  return s;
}

bool Shape::IsFullyDefined() const {
  if (!rank_known_) return false;
  for (int64_t d : dims()) {
    if (d < 0) return false;
  }
  return true;
}

int64_t Shape::num_elements() const {
  if (rank_known_) {  // the fast path: no Status unless it fails
    int64_t n = 1;
    bool ok = true;
    for (int64_t d : dims()) {
      if (d < 0 || __builtin_mul_overflow(n, d, &n)) {
        ok = false;
        break;
      }
    }
    if (ok) return n;
  }
  absl::StatusOr<int64_t> n = CheckedNumElements();
  TPUSIM_CHECK(n.ok()) << n.status();
  return *n;
}

absl::StatusOr<int64_t> Shape::CheckedNumElements() const {
  if (!IsFullyDefined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", ToString(),
                     " is not fully defined; it has no element count"));
  }
  int64_t n = 1;
  for (int64_t d : dims()) {
    std::optional<int64_t> p = common::CheckedMul(n, d);
    if (!p.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ToString(),
                       " has more than 2^63-1 elements (the product of its "
                       "dimensions overflows int64)"));
    }
    n = *p;
  }
  return n;
}

Shape Shape::WithDim0(int64_t dim) const {
  TPUSIM_CHECK(rank_known_ && rank_ > 0) << ToString();
  Shape s = *this;
  s.data()[0] = dim;
  return s;
}

Shape Shape::Prepend(int64_t dim) const {
  if (!rank_known_) return *this;
  Shape s;
  if (rank_ < kInlineDims) {  // stays inline: fixed-size copies
    s.rank_ = rank_ + 1;
    s.inline_[0] = dim;
    std::memcpy(s.inline_ + 1, inline_, (kInlineDims - 1) * sizeof(int64_t));
    return s;
  }
  s.Resize(rank_ + 1);
  s.data()[0] = dim;
  std::memcpy(s.data() + 1, data(), rank_ * sizeof(int64_t));
  return s;
}

Shape Shape::DropDim0() const {
  if (!rank_known_) return *this;
  TPUSIM_CHECK(rank_ > 0) << "DropDim0 of a scalar";
  Shape s;
  if (heap_ == nullptr) {  // inline: a fixed-size copy
    s.rank_ = rank_ - 1;
    std::memcpy(s.inline_, inline_ + 1, (kInlineDims - 1) * sizeof(int64_t));
    return s;
  }
  s.Assign(data() + 1, rank_ - 1);
  return s;
}

bool Shape::IsCompatibleWith(const Shape& other) const {
  if (!rank_known_ || !other.rank_known_) return true;
  if (rank_ != other.rank_) return false;
  const int64_t* a = data();
  const int64_t* b = other.data();
  for (int i = 0; i < rank_; ++i) {
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  }
  return true;
}

Shape Shape::MostSpecificCompatible(const Shape& other) const {
  if (!rank_known_ || !other.rank_known_ || rank_ != other.rank_) {
    return UnknownRank();
  }
  Shape s;
  s.Resize(rank_);
  const int64_t* a = data();
  const int64_t* b = other.data();
  for (int i = 0; i < rank_; ++i)
    s.data()[i] = a[i] == b[i] ? a[i] : kUnknownDim;
  return s;
}

std::string Shape::ToString() const {
  if (!rank_known_) return "<unknown>";
  std::vector<std::string> parts;
  parts.reserve(rank_);
  for (int64_t d : dims()) parts.push_back(d < 0 ? "?" : absl::StrCat(d));
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

absl::StatusOr<int64_t> CheckedByteSize(DType dtype, const Shape& shape) {
  TPUSIM_ASSIGN_OR_RETURN(const int64_t n, shape.CheckedNumElements());
  const int64_t per_element = dtype == DType::kBytes
                                  ? static_cast<int64_t>(sizeof(std::string))
                                  : DTypeSize(dtype);
  std::optional<int64_t> bytes = common::CheckedMul(n, per_element);
  if (!bytes.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        DTypeName(dtype), shape.ToString(), " has ", n, " elements of ",
        per_element, " bytes: more than 2^63-1 bytes"));
  }
  return *bytes;
}

std::string TensorSpec::ToString() const {
  if (sparse.has_value()) {
    std::vector<int64_t> dims;
    if (shape.rank_known() && sparse->shape.rank_known()) {
      dims = shape.dims();
      dims.insert(dims.end(), sparse->shape.dims().begin(),
                  sparse->shape.dims().end());
    }
    const Shape logical = (shape.rank_known() && sparse->shape.rank_known())
                              ? Shape(std::move(dims))
                              : Shape::UnknownRank();
    return absl::StrCat("SparseTensor(", DTypeName(sparse->dtype),
                        logical.ToString(), ")");
  }
  return absl::StrCat(DTypeName(dtype), shape.ToString());
}

// ---- Tensor ----

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage,
               int64_t offset)
    : dtype_(dtype),
      shape_(std::move(shape)),
      num_elements_(shape_.num_elements()),
      storage_(std::move(storage)),
      offset_(offset) {}

Tensor::Tensor(DType dtype, Shape shape, int64_t num_elements,
               std::shared_ptr<Storage> storage, int64_t offset)
    : dtype_(dtype),
      shape_(std::move(shape)),
      num_elements_(num_elements),
      storage_(std::move(storage)),
      offset_(offset) {}

Tensor Tensor::Abstract(DType dtype, Shape shape) {
  TPUSIM_CHECK(shape.IsFullyDefined()) << shape.ToString();
  return Tensor(dtype, std::move(shape), nullptr, 0);
}

Tensor Tensor::Zeros(DType dtype, Shape shape) {
  TPUSIM_CHECK(shape.IsFullyDefined()) << shape.ToString();
  const absl::StatusOr<int64_t> bytes = CheckedByteSize(dtype, shape);
  TPUSIM_CHECK(bytes.ok()) << bytes.status();
  auto storage = std::make_shared<Storage>();
  const int64_t n = shape.num_elements();
  if (dtype == DType::kBytes) {
    storage->strings.resize(n);
  } else {
    storage->bytes = ByteBuffer(n * DTypeSize(dtype));
    if (n > 0) std::memset(storage->bytes.data(), 0, storage->bytes.size());
  }
  return Tensor(dtype, std::move(shape), std::move(storage), 0);
}

int64_t Tensor::byte_size() const {
  if (dtype_ != DType::kBytes) return num_elements_ * DTypeSize(dtype_);
  if (!has_data()) return 0;
  int64_t total = 0;
  for (const std::string& s : values<std::string>())
    total += static_cast<int64_t>(s.size());
  return total;
}

void Tensor::CheckAccess(DType expected) const {
  TPUSIM_CHECK(has_data()) << "abstract tensor " << DebugString()
                           << " has no values";
  TPUSIM_CHECK(dtype_ == expected) << "tensor is " << DTypeName(dtype_)
                                   << ", accessed as " << DTypeName(expected);
}

void Tensor::MakeUnique() {
  const bool whole =
      offset_ == 0 &&
      (dtype_ == DType::kBytes
           ? static_cast<int64_t>(storage_->strings.size()) == num_elements_
           : static_cast<int64_t>(storage_->bytes.size()) ==
                 num_elements_ * DTypeSize(dtype_));
  if (whole && storage_.use_count() == 1) return;
  auto copy = std::make_shared<Storage>();
  if (dtype_ == DType::kBytes) {
    copy->strings.assign(storage_->strings.begin() + offset_,
                         storage_->strings.begin() + offset_ + num_elements_);
  } else {
    const int64_t size = DTypeSize(dtype_);
    copy->bytes = ByteBuffer(num_elements_ * size);
    if (num_elements_ > 0) {
      std::memcpy(copy->bytes.data(), storage_->bytes.data() + offset_ * size,
                  num_elements_ * size);
    }
  }
  storage_ = std::move(copy);
  offset_ = 0;
}

double Tensor::AsDouble(int64_t i) const {
  TPUSIM_CHECK(dtype_ != DType::kBytes) << "AsDouble on a string tensor";
  TPUSIM_CHECK(i >= 0 && i < num_elements_) << i;
  return VisitNumeric(dtype_, [&](auto zero) {
    using T = decltype(zero);
    return ToDouble(values<T>()[i]);
  });
}

int64_t Tensor::AsInt64(int64_t i) const {
  TPUSIM_CHECK(dtype_ != DType::kBytes) << "AsInt64 on a string tensor";
  TPUSIM_CHECK(i >= 0 && i < num_elements_) << i;
  return VisitNumeric(dtype_, [&](auto zero) -> int64_t {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T>) {
      return static_cast<int64_t>(values<T>()[i]);
    } else {
      return ConvertFromDouble<int64_t>(ToDouble(values<T>()[i]));
    }
  });
}

absl::Span<const uint8_t> Tensor::raw_bytes() const {
  TPUSIM_CHECK(has_data() && dtype_ != DType::kBytes);
  const int64_t size = DTypeSize(dtype_);
  return absl::Span<const uint8_t>(storage_->bytes.data() + offset_ * size,
                                   num_elements_ * size);
}

Tensor Tensor::Slice(int64_t begin, int64_t count) const {
  TPUSIM_CHECK(shape_.rank() >= 1) << "Slice of a scalar";
  TPUSIM_CHECK(begin >= 0 && count >= 0 && begin + count <= shape_.dim(0))
      << "slice [" << begin << ", " << begin + count << ") of "
      << shape_.ToString();
  const int64_t row = shape_.dim(0) == 0 ? 0 : num_elements_ / shape_.dim(0);
  return Tensor(dtype_, shape_.WithDim0(count), count * row, storage_,
                storage_ ? offset_ + begin * row : 0);
}

Tensor Tensor::Row(int64_t i) const {
  TPUSIM_CHECK(shape_.rank() >= 1) << "Row of a scalar";
  TPUSIM_CHECK(i >= 0 && i < shape_.dim(0))
      << "row " << i << " of " << shape_.ToString();
  const int64_t row = num_elements_ / shape_.dim(0);
  return Tensor(dtype_, shape_.DropDim0(), row, storage_,
                storage_ ? offset_ + i * row : 0);
}

absl::StatusOr<Tensor> Tensor::Reshape(Shape shape) const {
  if (!shape.IsFullyDefined() || shape.num_elements() != num_elements_) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot reshape ", spec().ToString(), " (", num_elements_,
                     " elements) to ", shape.ToString()));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

absl::StatusOr<Tensor> Tensor::Stack(absl::Span<const Tensor> parts,
                                     BufferPool* pool) {
  if (parts.empty()) return absl::InvalidArgumentError("Stack of zero tensors");
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].dtype_ != parts[0].dtype_ ||
        parts[i].shape_ != parts[0].shape_) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot stack tensors of different specs: element 0 is ",
                       parts[0].spec().ToString(), ", element ", i, " is ",
                       parts[i].spec().ToString()));
    }
  }
  // Every part becomes one row of the result: the same bytes as concatenating
  // them, under a shape with a new leading dimension. (Parts with data cannot
  // overflow, their bytes exist; abstract parts can.)
  Shape shape = parts[0].shape_.Prepend(static_cast<int64_t>(parts.size()));
  TPUSIM_RETURN_IF_ERROR(CheckedByteSize(parts[0].dtype_, shape).status());
  return Join(parts, std::move(shape), pool);
}

Tensor Tensor::Join(absl::Span<const Tensor> parts, Shape shape,
                    BufferPool* pool) {
  const Tensor& first = parts[0];
  for (const Tensor& p : parts) {
    if (!p.has_data()) return Abstract(first.dtype_, std::move(shape));
  }
  if (parts.size() == 1) {
    Tensor t = first;  // a view: no copy
    t.shape_ = std::move(shape);
    return t;
  }
  std::shared_ptr<Storage> storage;
  const int64_t n = shape.num_elements();
  if (first.dtype_ == DType::kBytes) {
    storage = std::make_shared<Storage>();
    storage->strings.reserve(n);
    for (const Tensor& p : parts) {
      auto v = p.values<std::string>();
      storage->strings.insert(storage->strings.end(), v.begin(), v.end());
    }
  } else {
    const int64_t bytes = n * DTypeSize(first.dtype_);
    if (pool != nullptr) {
      storage = pool->Acquire(bytes);
    } else {
      storage = std::make_shared<Storage>();
      storage->bytes = ByteBuffer(bytes);
    }
    uint8_t* out = storage->bytes.data();
    for (const Tensor& p : parts) {
      absl::Span<const uint8_t> b = p.raw_bytes();
      if (!b.empty()) std::memcpy(out, b.data(), b.size());
      out += b.size();
    }
  }
  return Tensor(first.dtype_, std::move(shape), n, std::move(storage), 0);
}

std::optional<Tensor> Tensor::StackViews(absl::Span<const Tensor> parts) {
  if (parts.empty() || parts[0].storage_ == nullptr) return std::nullopt;
  const Tensor& first = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const Tensor& p = parts[i];
    if (p.storage_ != first.storage_ || p.dtype_ != first.dtype_ ||
        p.shape_ != first.shape_ ||
        p.offset_ !=
            first.offset_ + static_cast<int64_t>(i) * first.num_elements_) {
      return std::nullopt;
    }
  }
  return Tensor(first.dtype_,
                first.shape_.Prepend(static_cast<int64_t>(parts.size())),
                first.storage_, first.offset_);
}

absl::StatusOr<Tensor> Tensor::Concat(absl::Span<const Tensor> parts,
                                      BufferPool* pool) {
  if (parts.empty())
    return absl::InvalidArgumentError("Concat of zero tensors");
  const Tensor& first = parts[0];
  if (first.rank() < 1)
    return absl::InvalidArgumentError("cannot concatenate scalars");
  int64_t rows = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& p = parts[i];
    bool ok = p.dtype_ == first.dtype_ && p.rank() == first.rank();
    for (int d = 1; ok && d < first.rank(); ++d)
      ok = p.shape_.dim(d) == first.shape_.dim(d);
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot concatenate along dimension 0: part 0 is ",
          first.spec().ToString(), ", part ", i, " is ", p.spec().ToString()));
    }
    std::optional<int64_t> sum = common::CheckedAdd(rows, p.shape_.dim(0));
    if (!sum.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot concatenate along dimension 0: more than 2^63-1 rows (part ",
          i, " is ", p.spec().ToString(), ")"));
    }
    rows = *sum;
  }
  Shape shape = first.shape_.WithDim0(rows);
  TPUSIM_RETURN_IF_ERROR(CheckedByteSize(first.dtype_, shape).status());
  return Join(parts, std::move(shape), pool);
}

absl::StatusOr<Tensor> Tensor::Cast(DType to) const {
  if (to == dtype_) return *this;
  if (to == DType::kBytes || dtype_ == DType::kBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot cast ", DTypeName(dtype_), " to ", DTypeName(to)));
  }
  if (!has_data()) return Abstract(to, shape_);
  Tensor out = Zeros(to, shape_);
  VisitNumeric(to, [&](auto to_zero) {
    using To = decltype(to_zero);
    absl::Span<To> dst = out.mutable_values<To>();
    VisitNumeric(dtype_, [&](auto from_zero) {
      using From = decltype(from_zero);
      absl::Span<const From> src = values<From>();
      for (int64_t i = 0; i < num_elements_; ++i) {
        if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
          dst[i] =
              static_cast<To>(src[i]);  // two's-complement wrap, as tf.cast
        } else {
          dst[i] = ConvertFromDouble<To>(ToDouble(src[i]));
        }
      }
      return 0;
    });
    return 0;
  });
  return out;
}

std::string Tensor::DebugString(int max_elements) const {
  std::string out = spec().ToString();
  if (!has_data()) return absl::StrCat(out, "{abstract}");
  out += "{";
  const int64_t n = std::min<int64_t>(num_elements_, max_elements);
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) out += ", ";
    if (dtype_ == DType::kBytes) {
      absl::StrAppend(&out, "\"", values<std::string>()[i], "\"");
    } else if (IsInteger(dtype_)) {
      absl::StrAppend(&out, AsInt64(i));
    } else {
      absl::StrAppend(&out, AsDouble(i));
    }
  }
  if (n < num_elements_) out += ", ...";
  out += "}";
  return out;
}

// ---- Tensor::BufferPool ----

Tensor::BufferPool::BufferPool(int max_buffers, int64_t max_bytes)
    : max_buffers_(max_buffers), max_bytes_(max_bytes) {}

std::shared_ptr<Tensor::Storage> Tensor::BufferPool::Acquire(int64_t bytes) {
  // A pooled storage nobody else holds: no tensor can see it, so writing it
  // does not break the immutability of any tensor. The acquire fence pairs
  // with the release in the last other owner's reference drop, so its reads
  // of the old contents happen before our writes.
  int free_other_size = -1;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const std::shared_ptr<Storage>& b = buffers_[i];
    if (b.use_count() != 1) continue;
    if (b->bytes.size() == bytes) {
      std::atomic_thread_fence(std::memory_order_acquire);
      ++reused_;
      return b;
    }
    if (free_other_size < 0) free_other_size = static_cast<int>(i);
  }
  auto fresh = std::make_shared<Storage>();
  fresh->bytes = ByteBuffer(bytes);
  ++allocated_;
  if (free_other_size >= 0) {  // replace an idle buffer of another size
    held_bytes_ -= buffers_[free_other_size]->bytes.size();
    buffers_.erase(buffers_.begin() + free_other_size);
  }
  if (static_cast<int>(buffers_.size()) < max_buffers_ &&
      held_bytes_ + bytes <= max_bytes_) {
    buffers_.push_back(fresh);
    held_bytes_ += bytes;
  }
  return fresh;
}

bool operator==(const Tensor& a, const Tensor& b) {
  if (a.dtype_ != b.dtype_ || a.shape_ != b.shape_ ||
      a.has_data() != b.has_data())
    return false;
  if (!a.has_data()) return true;
  if (a.dtype_ == DType::kBytes) {
    auto va = a.values<std::string>();
    auto vb = b.values<std::string>();
    return std::equal(va.begin(), va.end(), vb.begin(), vb.end());
  }
  absl::Span<const uint8_t> ra = a.raw_bytes();
  absl::Span<const uint8_t> rb = b.raw_bytes();
  return ra.size() == rb.size() &&
         (ra.empty() || std::memcmp(ra.data(), rb.data(), ra.size()) == 0);
}

}  // namespace tpusim::runtime
