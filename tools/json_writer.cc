#include "tools/json_writer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/utf8.h"

namespace tpusim::tools {
namespace {

using common::Utf8SequenceLength;

template <typename T>
std::string Shortest(T v, T (*parse)(const char*, char**), int max_precision) {
  for (int p = 1; p < max_precision; ++p) {
    const std::string text = absl::StrFormat("%.*g", p, static_cast<double>(v));
    if (parse(text.c_str(), nullptr) == v) return text;
  }
  return absl::StrFormat("%.*g", max_precision, static_cast<double>(v));
}

}  // namespace

std::string JsonQuote(absl::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\b':
        out += "\\b";
        ++i;
        continue;
      case '\f':
        out += "\\f";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
      out += absl::StrFormat("\\u%04x", c);
      ++i;
      continue;
    }
    const int n = Utf8SequenceLength(s, i);
    if (n == 0) {
      out += absl::StrFormat("\\udc%02x", c);
      ++i;
      continue;
    }
    out.append(s.data() + i, n);
    i += n;
  }
  out += "\"";
  return out;
}

std::string ShortestFloat32(float v) {
  return Shortest<float>(v, &std::strtof, 9);
}
std::string ShortestFloat64(double v) {
  return Shortest<double>(v, &std::strtod, 17);
}

Json Json::Bool(bool b) {
  Json j;
  j.kind_ = Kind::kBool;
  j.text_ = b ? "true" : "false";
  return j;
}

Json Json::Int(int64_t v) {
  Json j;
  j.kind_ = Kind::kNumber;
  j.text_ = absl::StrCat(v);
  return j;
}

Json Json::Float32(float v) {
  if (std::isnan(v)) return String("NaN");
  if (std::isinf(v)) return String(v > 0 ? "Infinity" : "-Infinity");
  Json j;
  j.kind_ = Kind::kNumber;
  j.text_ = ShortestFloat32(v);
  return j;
}

Json Json::Float64(double v) {
  if (std::isnan(v)) return String("NaN");
  if (std::isinf(v)) return String(v > 0 ? "Infinity" : "-Infinity");
  Json j;
  j.kind_ = Kind::kNumber;
  j.text_ = ShortestFloat64(v);
  return j;
}

Json Json::String(std::string bytes) {
  Json j;
  j.kind_ = Kind::kString;
  j.text_ = JsonQuote(bytes);
  return j;
}

Json Json::Array(std::vector<Json> items) {
  Json j;
  j.kind_ = Kind::kArray;
  j.items_ = std::move(items);
  return j;
}

Json Json::Object(std::map<std::string, Json> members) {
  Json j;
  j.kind_ = Kind::kObject;
  j.members_ = std::move(members);
  return j;
}

std::string Json::Dump() const {
  switch (kind_) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
    case Kind::kNumber:
    case Kind::kString:
      return text_;
    case Kind::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i > 0) out += ", ";
        out += items_[i].Dump();
      }
      return out + "]";
    }
    case Kind::kObject: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, value] : members_) {
        if (!first) out += ", ";
        first = false;
        absl::StrAppend(&out, JsonQuote(key), ": ", value.Dump());
      }
      return out + "}";
    }
  }
  return "null";
}

}  // namespace tpusim::tools
