// tools/json_writer.h
//
// A small deterministic JSON writer for the CLI's machine output. Objects keep
// their keys sorted (std::map, bytewise), so the same value always gives the
// same bytes.
//
//   Json report = Json::Object({{"replicas", Json::Int(4)}, {"semantics",
//   Json::String("2.2")}}); std::string text = report.Dump();   // {"replicas":
//   4, "semantics": "2.2"}
//
// Formats (part of every schema built on it):
// * integers as JSON integers;
// * float32 and float64 as the SHORTEST "%.<p>g" text (p = 1, 2, ...) that
// reads back as the
//   same value (strtof for float32, strtod for float64), e.g. 0.1f → 0.1, 1e+20
//   stays 1e+20; -0 is "-0"; NaN and infinities as the strings "NaN",
//   "Infinity", "-Infinity";
// * strings: '"' and '\' escaped, \b \f \n \r \t as such, other bytes below
// 0x20 and 0x7f as
//   \u00XX (lowercase hex); valid UTF-8 is written as is; every byte that is
//   not part of a valid UTF-8 sequence is written as \udcXX (XX = the byte,
//   lowercase hex): Python's "surrogateescape", so
//   json.loads(text).encode("utf-8", "surrogateescape") gives back the exact
//   bytes;
// * separators ", " and ": ", no trailing spaces.

#ifndef TPUSIM_TOOLS_JSON_WRITER_H_
#define TPUSIM_TOOLS_JSON_WRITER_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace tpusim::tools {

class Json {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  Json() = default;  // null
  static Json Null() { return Json(); }
  static Json Bool(bool b);
  static Json Int(int64_t v);
  static Json Float32(float v);   // a number, or a string for NaN/Inf
  static Json Float64(double v);  // a number, or a string for NaN/Inf
  static Json String(std::string bytes);
  static Json Array(std::vector<Json> items);
  static Json Object(std::map<std::string, Json> members);

  Kind kind() const { return kind_; }
  // Array items / object members (empty for other kinds).
  const std::vector<Json>& items() const { return items_; }
  const std::map<std::string, Json>& members() const { return members_; }

  // The compact one-line text.
  std::string Dump() const;

 private:
  Kind kind_ = Kind::kNull;
  std::string
      text_;  // the encoded scalar (number, string with quotes, true/false)
  std::vector<Json> items_;
  std::map<std::string, Json> members_;
};

// `bytes` as a quoted JSON string (escaping described above).
std::string JsonQuote(absl::string_view bytes);
// The number text of a finite float / double (shortest round-trip "%.<p>g").
std::string ShortestFloat32(float v);
std::string ShortestFloat64(double v);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_JSON_WRITER_H_
