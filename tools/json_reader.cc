#include "tools/json_reader.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace tpusim::tools {
namespace {

class Parser {
 public:
  explicit Parser(absl::string_view text) : t_(text) {}

  absl::StatusOr<JsonValue> Document() {
    JsonValue v;
    if (absl::Status s = Value(&v, 0); !s.ok()) return s;
    Space();
    if (i_ != t_.size()) return Error("end of text");
    return v;
  }

 private:
  absl::Status Error(absl::string_view expected) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "JSON: at byte ", i_, ": expected ", expected,
        i_ < t_.size() ? absl::StrCat(", found '", t_.substr(i_, 1), "'")
                       : ", found the end"));
  }
  void Space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' ||
                              t_[i_] == '\r' || t_[i_] == '\t')) {
      ++i_;
    }
  }
  bool Literal(absl::string_view word) {
    if (t_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  static void AppendUtf8(unsigned cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
  bool Hex4(unsigned* cp) {
    if (i_ + 4 > t_.size()) return false;
    *cp = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = t_[i_ + k];
      *cp <<= 4;
      if (c >= '0' && c <= '9') *cp |= c - '0';
      else if (c >= 'a' && c <= 'f') *cp |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') *cp |= c - 'A' + 10;
      else return false;
    }
    i_ += 4;
    return true;
  }
  absl::Status String(std::string* out) {
    if (i_ >= t_.size() || t_[i_] != '"') return Error("'\"'");
    ++i_;
    while (i_ < t_.size() && t_[i_] != '"') {
      const char c = t_[i_++];
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (i_ >= t_.size()) return Error("an escape");
      const char e = t_[i_++];
      switch (e) {
        case '"': case '\\': case '/': out->push_back(e); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          unsigned cp = 0;
          if (!Hex4(&cp)) return Error("4 hex digits");
          if (cp >= 0xdc80 && cp <= 0xdcff) {  // json_writer's invalid byte
            out->push_back(static_cast<char>(cp - 0xdc00));
            break;
          }
          if (cp >= 0xd800 && cp < 0xdc00 && Literal("\\u")) {
            unsigned low = 0;
            if (!Hex4(&low)) return Error("4 hex digits");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          --i_;
          return Error("an escape letter");
      }
    }
    if (i_ >= t_.size()) return Error("'\"'");
    ++i_;
    return absl::OkStatus();
  }
  absl::Status Value(JsonValue* v, int depth) {
    if (depth > 64) return Error("nesting of at most 64");
    Space();
    if (i_ >= t_.size()) return Error("a value");
    const char c = t_[i_];
    if (c == '{') {
      ++i_;
      v->kind = JsonValue::Kind::kObject;
      Space();
      if (i_ < t_.size() && t_[i_] == '}') {
        ++i_;
        return absl::OkStatus();
      }
      while (true) {
        Space();
        std::string key;
        if (absl::Status s = String(&key); !s.ok()) return s;
        Space();
        if (!Literal(":")) return Error("':'");
        if (absl::Status s = Value(&v->members[key], depth + 1); !s.ok()) {
          return s;
        }
        Space();
        if (Literal(",")) continue;
        if (Literal("}")) return absl::OkStatus();
        return Error("',' or '}'");
      }
    }
    if (c == '[') {
      ++i_;
      v->kind = JsonValue::Kind::kArray;
      Space();
      if (i_ < t_.size() && t_[i_] == ']') {
        ++i_;
        return absl::OkStatus();
      }
      while (true) {
        v->items.emplace_back();
        if (absl::Status s = Value(&v->items.back(), depth + 1); !s.ok()) {
          return s;
        }
        Space();
        if (Literal(",")) continue;
        if (Literal("]")) return absl::OkStatus();
        return Error("',' or ']'");
      }
    }
    if (c == '"') {
      v->kind = JsonValue::Kind::kString;
      return String(&v->string);
    }
    if (Literal("true") || Literal("false")) {
      v->kind = JsonValue::Kind::kBool;
      v->boolean = t_[i_ - 1] == 'e' && t_[i_ - 2] == 'u';
      return absl::OkStatus();
    }
    if (Literal("null")) return absl::OkStatus();
    const size_t start = i_;
    while (i_ < t_.size() &&
           std::string("+-.eE0123456789").find(t_[i_]) != std::string::npos) {
      ++i_;
    }
    const std::string number(t_.substr(start, i_ - start));
    char* end = nullptr;
    v->kind = JsonValue::Kind::kNumber;
    v->number = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size()) {
      i_ = start;
      return Error("a value");
    }
    return absl::OkStatus();
  }

  absl::string_view t_;
  size_t i_ = 0;
};

}  // namespace

const JsonValue& JsonValue::Get(const std::string& key) const {
  static const JsonValue* const kNull = new JsonValue();
  auto it = members.find(key);
  return it == members.end() ? *kNull : it->second;
}

absl::StatusOr<JsonValue> ParseJson(absl::string_view text) {
  return Parser(text).Document();
}

}  // namespace tpusim::tools
