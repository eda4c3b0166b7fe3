#include "strategy/data/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define TPUSIM_CRC32C_X86 1
#endif

namespace tpusim::data {
namespace {

// Slicing-by-8 tables for the reflected Castagnoli polynomial.
struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t;
  Tables() {
    constexpr uint32_t kPoly = 0x82F63B78u;
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s)
        t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};

const Tables& GetTables() {
  static const Tables* tables = new Tables();
  return *tables;
}

#ifdef TPUSIM_CRC32C_X86
// The SSE4.2 crc32 instruction computes exactly CRC-32C: 8 bytes per
// instruction, several times the table's speed (TFRecord checks every
// record's length and payload with it).
__attribute__((target("sse4.2"))) uint32_t Crc32cExtendSse42(uint32_t crc,
                                                             const void* data,
                                                             size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t c = ~crc;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    size -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (size-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
#ifdef TPUSIM_CRC32C_X86
  if (HasSse42()) return Crc32cExtendSse42(crc, data, size);
#endif
  return Crc32cExtendPortable(crc, data, size);
}

uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t size) {
  const auto& t = GetTables().t;
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (size >= 8) {
    const uint32_t lo = c ^ (uint32_t{p[0]} | uint32_t{p[1]} << 8 |
                             uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
        t[4][lo >> 24] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    size -= 8;
  }
  while (size-- > 0) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  return ~c;
}

}  // namespace tpusim::data
