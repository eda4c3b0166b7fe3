// common/int_math.h
//
// Integer arithmetic without undefined behaviour:
//
//   WrapAdd(a, b), WrapSub(a, b), WrapMul(a, b)
//     two's-complement wrap-around, as TensorFlow's integer kernels (and XLA)
//     compute: int32 2147483647 + 1 is -2147483648. Signed overflow is UB in
//     C++, so the arithmetic runs on the unsigned type and converts back.
//   CheckedMul(a, b), CheckedAdd(a, b)
//     nullopt when the exact result does not fit in int64 (used for products
//     of user-controlled sizes: shape element counts, batch x row bytes, ...).

#ifndef TPUSIM_COMMON_INT_MATH_H_
#define TPUSIM_COMMON_INT_MATH_H_

#include <cstdint>
#include <optional>
#include <type_traits>

namespace tpusim::common {

template <typename T>
T WrapAdd(T a, T b) {
  static_assert(std::is_integral_v<T>);
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}

template <typename T>
T WrapSub(T a, T b) {
  static_assert(std::is_integral_v<T>);
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}

template <typename T>
T WrapMul(T a, T b) {
  static_assert(std::is_integral_v<T>);
  using U = std::make_unsigned_t<T>;
  if constexpr (sizeof(T) < sizeof(unsigned)) {
    // Narrow types promote to int, whose product can overflow; multiply as
    // unsigned int instead.
    return static_cast<T>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
  } else {
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  }
}

inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

}  // namespace tpusim::common

#endif  // TPUSIM_COMMON_INT_MATH_H_
