// strategy/runtime/tensor.h
//
// Tensor, Shape and DType: the values that flow through datasets, traced
// programs and backends.
//
//   Tensor batch = Tensor::FromVector<int64_t>(Shape({2, 3}), {0, 1, 2, 3, 4,
//   5}); Tensor row = batch.Slice(1, 1);          // zero-copy view, shape [1,
//   3] absl::Span<const int64_t> v = row.values<int64_t>();
//
// A Tensor is an immutable value with shared storage: copies and slices along
// dimension 0 are cheap views. `mutable_values<T>()` copies the storage first
// when it is shared (copy on write). A tensor without data is *abstract*: it
// has a dtype and a shape (and therefore a cost) but no values; pod-scale
// performance runs use abstract tensors.
//
// Shape allows unknown dimensions (kUnknownDim) and an unknown rank, like
// TensorFlow's PartialTensorShape, because dataset element specs need them. A
// Tensor's own shape is always fully defined.

#ifndef TPUSIM_STRATEGY_RUNTIME_TENSOR_H_
#define TPUSIM_STRATEGY_RUNTIME_TENSOR_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/check.h"
#include "common/status_macros.h"

namespace tpusim::runtime {

// Element types. Names follow TensorFlow's dtype names ("float32", "int64",
// "string").
enum class DType : uint8_t { kF32, kF64, kBF16, kI32, kI64, kU8, kBytes };

// "float32", "float64", "bfloat16", "int32", "int64", "uint8", "string".
absl::string_view DTypeName(DType dtype);
// The inverse of DTypeName; also accepts "bytes" for kBytes. InvalidArgument
// names the unknown name and lists the valid ones.
absl::StatusOr<DType> DTypeFromName(absl::string_view name);
// Bytes per element on a device; kBytes (variable length) reports 0.
int64_t DTypeSize(DType dtype);
bool IsFloating(DType dtype);  // f32, f64, bf16
bool IsInteger(DType dtype);   // i32, i64, u8

// bfloat16 stored as its 16 raw bits. Conversion from float rounds to nearest
// even, as TPUs do; NaN stays a (quiet) NaN.
struct BFloat16 {
  uint16_t bits = 0;
  static BFloat16 FromFloat(float value);
  float ToFloat() const;
  friend bool operator==(BFloat16 a, BFloat16 b) { return a.bits == b.bits; }
};

// Maps a C++ element type to its DType: float, double, BFloat16, int32_t,
// int64_t, uint8_t, std::string.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kF64;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::kBF16;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kI32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kI64;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kU8;
};
template <>
struct DTypeOf<std::string> {
  static constexpr DType value = DType::kBytes;
};

// Calls `fn(T{})` with the C++ element type of a numeric `dtype` (float,
// double, BFloat16, int32_t, int64_t, uint8_t) and returns its result.
// Precondition: dtype != kBytes (a programming error: aborts).
template <typename Fn>
auto VisitNumeric(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF32:
      return fn(float{});
    case DType::kF64:
      return fn(double{});
    case DType::kBF16:
      return fn(BFloat16{});
    case DType::kI32:
      return fn(int32_t{});
    case DType::kI64:
      return fn(int64_t{});
    case DType::kU8:
      return fn(uint8_t{});
    case DType::kBytes:
      break;
  }
  TPUSIM_CHECK(false) << "not a numeric dtype: " << DTypeName(dtype);
  return fn(float{});
}

inline constexpr int64_t kUnknownDim = -1;

// The dimensions of a Shape: a read-only view into the shape (valid while the
// Shape lives and is not assigned to). It converts implicitly to
// std::vector<int64_t> (a copy) for callers that need a vector, and compares
// with another view or a vector element by element.
class DimsView : public absl::Span<const int64_t> {
 public:
  using absl::Span<const int64_t>::Span;
  DimsView(absl::Span<const int64_t> dims)  // NOLINT: implicit by design
      : absl::Span<const int64_t>(dims) {}
  operator std::vector<int64_t>() const {  // NOLINT: implicit by design
    return std::vector<int64_t>(begin(), end());
  }
  std::vector<int64_t> ToVector() const { return *this; }
  friend bool operator==(DimsView a, DimsView b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {  // short: a loop beats memcmp
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  friend bool operator!=(DimsView a, DimsView b) { return !(a == b); }
  friend bool operator==(DimsView a, const std::vector<int64_t>& b) {
    return a == DimsView(b);
  }
  friend bool operator==(const std::vector<int64_t>& a, DimsView b) {
    return DimsView(a) == b;
  }
  friend bool operator!=(DimsView a, const std::vector<int64_t>& b) {
    return !(a == b);
  }
  friend bool operator!=(const std::vector<int64_t>& a, DimsView b) {
    return !(a == b);
  }
};

// A possibly partial shape: dimensions may be kUnknownDim and the rank may be
// unknown.
//
// Small-buffer storage: up to kInlineDims dimensions live inside the Shape, so
// making, copying and destroying a shape of rank <= kInlineDims never touches
// the heap (a Tensor carries one; slicing a row used to allocate twice).
class Shape {
 public:
  static constexpr int kInlineDims = 6;  // chosen: ranks seen in practice

  Shape() = default;  // a scalar: rank 0, fully defined
  Shape(std::initializer_list<int64_t> dims) {
    Assign(dims.begin(), dims.size());
  }
  explicit Shape(const std::vector<int64_t>& dims) {
    Assign(dims.data(), dims.size());
  }
  explicit Shape(absl::Span<const int64_t> dims) {
    Assign(dims.data(), dims.size());
  }
  explicit Shape(DimsView dims) { Assign(dims.data(), dims.size()); }
  Shape(const Shape& other) : rank_known_(other.rank_known_) {
    CopyFrom(other);
  }
  Shape(Shape&& other) noexcept : rank_known_(other.rank_known_) {
    if (other.heap_ != nullptr) {
      heap_ = other.heap_;
      rank_ = other.rank_;
      other.heap_ = nullptr;
      other.rank_ = 0;
    } else {
      CopyFrom(other);
    }
  }
  Shape& operator=(const Shape& other) {
    if (this != &other) {
      CopyFrom(other);
      rank_known_ = other.rank_known_;
    }
    return *this;
  }
  Shape& operator=(Shape&& other) noexcept {
    if (this != &other) {
      if (other.heap_ != nullptr) {
        delete[] heap_;
        heap_ = other.heap_;
        rank_ = other.rank_;
        other.heap_ = nullptr;
        other.rank_ = 0;
      } else {
        CopyFrom(other);
      }
      rank_known_ = other.rank_known_;
    }
    return *this;
  }
  ~Shape() { delete[] heap_; }
  static Shape UnknownRank();

  bool rank_known() const { return rank_known_; }
  // Precondition: rank_known().
  int rank() const { return rank_; }
  int64_t dim(int i) const { return data()[i]; }
  DimsView dims() const { return DimsView(data(), static_cast<size_t>(rank_)); }
  bool IsFullyDefined() const;
  // Product of the dimensions. Precondition: IsFullyDefined() and the product
  // fits in int64 (CheckedNumElements() has accepted the shape); a violation
  // aborts, it never wraps.
  int64_t num_elements() const;
  // The product of the dimensions, checked: InvalidArgument naming the shape
  // when a dimension is unknown or negative, or when the product overflows
  // int64 ("shape [4294967296,4294967296] has more than 2^63-1 elements").
  // Every shape that comes from user input goes through this (or
  // CheckedByteSize) before a tensor is made with it.
  absl::StatusOr<int64_t> CheckedNumElements() const;

  // A copy with dimension 0 replaced (`dim` may be kUnknownDim). Precondition:
  // rank >= 1.
  Shape WithDim0(int64_t dim) const;
  // A copy with `dim` prepended / dimension 0 removed.
  Shape Prepend(int64_t dim) const;
  Shape DropDim0() const;
  // True when every known dimension of both agrees (unknowns match anything).
  bool IsCompatibleWith(const Shape& other) const;
  // The most specific shape compatible with both (disagreeing dims become
  // unknown; a rank mismatch gives an unknown rank).
  Shape MostSpecificCompatible(const Shape& other) const;

  // "[2,3]", "[?,28,28]", "[]" (scalar), "<unknown>".
  std::string ToString() const;
  friend bool operator==(const Shape& a, const Shape& b) {
    return a.rank_known_ == b.rank_known_ && a.dims() == b.dims();
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  const int64_t* data() const { return heap_ != nullptr ? heap_ : inline_; }
  int64_t* data() { return heap_ != nullptr ? heap_ : inline_; }
  // Makes room for `rank` dimensions (contents unspecified); the heap block
  // exists exactly when rank > kInlineDims.
  void Resize(size_t rank) {
    if (rank > static_cast<size_t>(kInlineDims)) {
      if (heap_ == nullptr || static_cast<size_t>(rank_) != rank) {
        delete[] heap_;
        heap_ = new int64_t[rank];
      }
    } else if (heap_ != nullptr) {
      delete[] heap_;
      heap_ = nullptr;
    }
    rank_ = static_cast<int32_t>(rank);
  }
  // The dimensions of `other`; an inline shape is copied as a whole block of
  // fixed size (no length-dependent loop or call).
  void CopyFrom(const Shape& other) {
    if (other.heap_ == nullptr) {
      if (heap_ != nullptr) {
        delete[] heap_;
        heap_ = nullptr;
      }
      std::memcpy(inline_, other.inline_, sizeof(inline_));
      rank_ = other.rank_;
    } else {
      Assign(other.heap_, other.rank_);
    }
  }
  void Assign(const int64_t* dims, size_t rank) {
    Resize(rank);
    if (rank > 0) std::memmove(data(), dims, rank * sizeof(int64_t));
  }

  int64_t inline_[kInlineDims] = {};
  int64_t* heap_ = nullptr;  // the dimensions when rank_ > kInlineDims
  int32_t rank_ = 0;
  bool rank_known_ = true;
};

// Bytes a tensor of `dtype` and `shape` needs: elements x DTypeSize (for
// kBytes, elements x sizeof(std::string), the size of the empty strings before
// any payload). InvalidArgument naming the dtype and shape when the shape is
// not fully defined or the element count or byte count overflows int64.
absl::StatusOr<int64_t> CheckedByteSize(DType dtype, const Shape& shape);

// What a sparse component's boxes hold (tf.SparseTensorSpec): the values'
// dtype and the (partial) dense shape of ONE boxed SparseTensor. See
// TensorSpec::sparse.
struct SparseBoxSpec {
  DType dtype = DType::kF32;
  Shape shape;
  friend bool operator==(const SparseBoxSpec& a, const SparseBoxSpec& b) {
    return a.dtype == b.dtype && a.shape == b.shape;
  }
};

// The (dtype, partial shape) of one tensor component, as in tf.TensorSpec.
struct TensorSpec {
  TensorSpec() = default;
  TensorSpec(DType dtype, Shape shape,
             std::optional<SparseBoxSpec> sparse = std::nullopt)
      : dtype(dtype), shape(std::move(shape)), sparse(std::move(sparse)) {}

  DType dtype = DType::kF32;
  Shape shape;
  // Set when the component is a tf.SparseTensor. Dataset ops carry a sparse
  // component "boxed", as TF's kernels do (a DT_VARIANT tensor of encoded
  // SparseTensors): the tensor is a string tensor (dtype kBytes) of shape
  // `shape` whose every element is one encoded SparseTensor of spec `*sparse`
  // (strategy/data/sparse.h). The logical (tf.SparseTensorSpec) shape is
  // `shape` followed by sparse->shape: a batch of B boxes of [?] is a
  // SparseTensor of [B, ?].
  std::optional<SparseBoxSpec> sparse;
  // "int64[?,2]"; a sparse component "SparseTensor(int64[?,?])" (its values'
  // dtype and logical shape).
  std::string ToString() const;
  // A copy with another shape (the sparse box spec kept).
  TensorSpec WithShape(Shape new_shape) const {
    TensorSpec out = *this;
    out.shape = std::move(new_shape);
    return out;
  }
  friend bool operator==(const TensorSpec& a, const TensorSpec& b) {
    return a.dtype == b.dtype && a.shape == b.shape && a.sparse == b.sparse;
  }
};

class Tensor {
 public:
  class BufferPool;

  // An abstract f32 scalar.
  Tensor() = default;
  // A tensor with no data. Precondition: shape.IsFullyDefined().
  static Tensor Abstract(DType dtype, Shape shape);
  // A tensor of zeros (empty strings for kBytes).
  static Tensor Zeros(DType dtype, Shape shape);
  // Precondition: values.size() == shape.num_elements() and T maps to a DType.
  template <typename T>
  static Tensor FromVector(Shape shape, std::vector<T> values);
  // A 1-D tensor holding `values`.
  template <typename T>
  static Tensor Vector(std::vector<T> values) {
    const int64_t n = static_cast<int64_t>(values.size());
    return FromVector<T>(Shape({n}), std::move(values));
  }
  template <typename T>
  static Tensor Scalar(T value) {
    return FromVector<T>(Shape(), std::vector<T>{std::move(value)});
  }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  TensorSpec spec() const { return {dtype_, shape_}; }
  int rank() const { return shape_.rank(); }
  int64_t num_elements() const { return num_elements_; }
  bool has_data() const { return storage_ != nullptr; }
  // Bytes the tensor occupies on a device (dtype size × elements; for kBytes
  // the sum of the string lengths, or 0 when abstract).
  int64_t byte_size() const;

  // The elements in row-major order. Precondition: has_data() and DTypeOf<T> ==
  // dtype().
  template <typename T>
  absl::Span<const T> values() const;
  // As values(), but writable; copies the storage first if it is shared or a
  // view.
  template <typename T>
  absl::Span<T> mutable_values();
  // Precondition: num_elements() == 1.
  template <typename T>
  const T& scalar() const {
    TPUSIM_CHECK_EQ(num_elements_, 1);
    return values<T>()[0];
  }
  // Element `flat_index` of a numeric tensor converted to double (bf16 widened
  // exactly).
  double AsDouble(int64_t flat_index) const;
  // Element `flat_index` converted to int64 (floats truncate). Numeric tensors
  // only.
  int64_t AsInt64(int64_t flat_index) const;
  // Raw bytes of a numeric tensor with data.
  absl::Span<const uint8_t> raw_bytes() const;

  // Rows [begin, begin + count) along dimension 0 as a view sharing storage.
  // Abstract tensors give abstract slices. Precondition: rank >= 1 and the
  // range lies inside dimension 0.
  Tensor Slice(int64_t begin, int64_t count) const;
  // Row `i` with dimension 0 removed (the i-th element of from_tensor_slices).
  Tensor Row(int64_t i) const;
  // The same data under another shape with the same element count.
  absl::StatusOr<Tensor> Reshape(Shape shape) const;
  // Stacks equal-shaped tensors along a new dimension 0 (tf.stack; what batch()
  // does). InvalidArgument on an empty list or on differing dtypes or shapes.
  // With a `pool`, a numeric result's storage comes from it (recycled when
  // no tensor holds it any more), see BufferPool.
  static absl::StatusOr<Tensor> Stack(absl::Span<const Tensor> parts,
                                      BufferPool* pool = nullptr);
  // Stack without a copy, when possible: if every part has the same dtype and
  // shape and the parts are consecutive views of one storage (part i + 1 starts
  // where part i ends, e.g. consecutive Row()s of one tensor), the stacked
  // tensor as a view sharing that storage; otherwise nullopt (use Stack). Lets
  // batch() re-batch slices without copying.
  static std::optional<Tensor> StackViews(absl::Span<const Tensor> parts);
  // Concatenates along dimension 0 (tf.concat axis 0). Parts must agree in
  // dtype, rank and every dimension but the first.
  // `pool` as in Stack.
  static absl::StatusOr<Tensor> Concat(absl::Span<const Tensor> parts,
                                       BufferPool* pool = nullptr);
  // Converts numeric tensors (as tf.cast: float→int truncates toward zero,
  // →bf16 rounds to nearest even). kBytes converts only to kBytes.
  absl::StatusOr<Tensor> Cast(DType dtype) const;

  // "int64[2]{0, 1}"; long tensors are elided after `max_elements`.
  std::string DebugString(int max_elements = 16) const;

  // Same dtype, shape and, when both have data, bit-identical values (so NaN
  // equals NaN). An abstract tensor never equals one with data.
  friend bool operator==(const Tensor& a, const Tensor& b);
  friend bool operator!=(const Tensor& a, const Tensor& b) { return !(a == b); }

 private:
  // Numeric storage, allocated WITHOUT zero-filling: std::vector<uint8_t> would
  // zero every byte before the copy that fills it, which doubled the cost of
  // each batch in the distribution benchmark. 16-byte aligned (operator new[]).
  class ByteBuffer {
   public:
    ByteBuffer() = default;
    explicit ByteBuffer(int64_t size)
        : data_(size > 0 ? new uint8_t[size] : nullptr), size_(size) {}
    uint8_t* data() { return data_.get(); }
    const uint8_t* data() const { return data_.get(); }
    int64_t size() const { return size_; }

   private:
    std::unique_ptr<uint8_t[]> data_;
    int64_t size_ = 0;
  };
  struct Storage {
    ByteBuffer bytes;                  // numeric dtypes
    std::vector<std::string> strings;  // kBytes
  };
  Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage,
         int64_t offset);
  // As above with the element count of `shape` already known.
  Tensor(DType dtype, Shape shape, int64_t num_elements,
         std::shared_ptr<Storage> storage, int64_t offset);
  // The parts' elements back to back under `shape` (Stack and Concat): one
  // allocation (or a recycled buffer from `pool`) and one copy per part; a
  // single part is returned as a view. Precondition: parts agree in dtype and
  // shape.num_elements() is their total.
  static Tensor Join(absl::Span<const Tensor> parts, Shape shape,
                     BufferPool* pool);
  void CheckAccess(DType expected) const;
  void MakeUnique();

  DType dtype_ = DType::kF32;
  Shape shape_;
  int64_t num_elements_ = 1;
  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;  // in elements
};

// Recycles the numeric storage of tensors one producer makes again and again
// (a batch iterator's batches), so that each batch does not get a fresh heap
// block: large fresh blocks come from mmap or a trimmed heap and page-fault on
// first touch, which cost more than the copy that fills them.
//
// Tensors stay immutable values: a pooled storage is written again only when
// the pool holds the one and only reference to it (its shared_ptr use count
// is 1), i.e. every tensor made from it has been destroyed. A tensor still
// held anywhere (including one mutated through copy-on-write, which copies
// because the pool shares it) is never touched. Not thread-safe by itself: one
// pool per producer; tensors it made may be released from any thread.
class Tensor::BufferPool {
 public:
  // Keeps at most `max_buffers` storages and `max_bytes` bytes for reuse
  // (chosen: 16 in-flight batches, 64 MiB); beyond that, storages are made
  // and dropped as without a pool.
  explicit BufferPool(int max_buffers = 16, int64_t max_bytes = 64 << 20);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  int64_t reused() const { return reused_; }        // buffers handed out again
  int64_t allocated() const { return allocated_; }  // fresh buffers made
  int64_t held_bytes() const { return held_bytes_; }

 private:
  friend class Tensor;
  // A numeric storage of exactly `bytes` (contents unspecified).
  std::shared_ptr<Storage> Acquire(int64_t bytes);

  int max_buffers_;
  int64_t max_bytes_;
  std::vector<std::shared_ptr<Storage>> buffers_;
  int64_t held_bytes_ = 0;
  int64_t reused_ = 0;
  int64_t allocated_ = 0;
};

// ---- implementation of the templates ----

template <typename T>
Tensor Tensor::FromVector(Shape shape, std::vector<T> values) {
  TPUSIM_CHECK(shape.IsFullyDefined()) << shape.ToString();
  TPUSIM_CHECK_EQ(static_cast<int64_t>(values.size()), shape.num_elements());
  auto storage = std::make_shared<Storage>();
  if constexpr (std::is_same_v<T, std::string>) {
    storage->strings = std::move(values);
  } else {
    static_assert(std::is_trivially_copyable_v<T>);
    storage->bytes = ByteBuffer(values.size() * sizeof(T));
    if (!values.empty())
      std::memcpy(storage->bytes.data(), values.data(), storage->bytes.size());
  }
  return Tensor(DTypeOf<T>::value, std::move(shape), std::move(storage), 0);
}

template <typename T>
absl::Span<const T> Tensor::values() const {
  CheckAccess(DTypeOf<T>::value);
  if constexpr (std::is_same_v<T, std::string>) {
    return absl::Span<const T>(storage_->strings.data() + offset_,
                               num_elements_);
  } else {
    return absl::Span<const T>(
        reinterpret_cast<const T*>(storage_->bytes.data()) + offset_,
        num_elements_);
  }
}

template <typename T>
absl::Span<T> Tensor::mutable_values() {
  CheckAccess(DTypeOf<T>::value);
  MakeUnique();
  if constexpr (std::is_same_v<T, std::string>) {
    return absl::Span<T>(storage_->strings.data(), num_elements_);
  } else {
    return absl::Span<T>(reinterpret_cast<T*>(storage_->bytes.data()),
                         num_elements_);
  }
}

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_TENSOR_H_
