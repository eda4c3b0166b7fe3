// common/utf8.h
//
// UTF-8 validation and escaping for text that came from a user's file:
//
//   Utf8SequenceLength(s, i)
//     length of the valid UTF-8 sequence starting at s[i], or 0 (overlong
//     forms, surrogates and code points above U+10FFFF are invalid, as in RFC
//     3629). The JSON writer escapes with it.
//   EscapeForTerminal(s)
//     `s` with every byte that is not valid UTF-8 and every control character
//     but newline and tab written as \xNN, so that an error message echoing a
//     scenario's bytes (a NUL, a stray 0xff, an escape sequence) prints as
//     readable text. Text that needs none comes back unchanged.

#ifndef TPUSIM_COMMON_UTF8_H_
#define TPUSIM_COMMON_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace tpusim::common {

inline int Utf8SequenceLength(absl::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  int n;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (int k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
      (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  return n;
}

inline std::string EscapeForTerminal(absl::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const bool control = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
    const int n = control ? 0 : Utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
      ++i;
      continue;
    }
    out.append(s.data() + i, n);
    i += n;
  }
  return out;
}

}  // namespace tpusim::common

#endif  // TPUSIM_COMMON_UTF8_H_
