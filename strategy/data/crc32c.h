// strategy/data/crc32c.h
//
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), in hardware where
// the CPU has it and table-driven elsewhere, and
// TFRecord's masked form:
//
// clang-format off
//   uint32_t c = Crc32c("123456789");  // 0xE3069283, the standard check value
//   uint32_t m = MaskCrc32c(c);        // ((c >> 15) | (c << 17)) + 0xa282ead8
// clang-format on

#ifndef TPUSIM_STRATEGY_DATA_CRC32C_H_
#define TPUSIM_STRATEGY_DATA_CRC32C_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace tpusim::data {

// Continues a CRC-32C over more bytes:
// Crc32cExtend(Crc32c(a), b) == Crc32c(a + b). Uses the CPU's crc32
// instruction where there is one (x86-64 with SSE4.2), else the tables.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);
// The table-driven computation (slicing by 8) on every CPU; the same results.
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t size);
inline uint32_t Crc32c(const void* data, size_t size) {
  return Crc32cExtend(0, data, size);
}
inline uint32_t Crc32c(absl::string_view data) {
  return Crc32c(data.data(), data.size());
}

inline constexpr uint32_t kCrc32cMaskDelta = 0xa282ead8u;
inline uint32_t MaskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kCrc32cMaskDelta;
}
inline uint32_t UnmaskCrc32c(uint32_t masked) {
  const uint32_t rot = masked - kCrc32cMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_CRC32C_H_
