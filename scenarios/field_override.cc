#include "scenarios/field_override.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/did_you_mean.h"
#include "common/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace tpusim::scenarios {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Keeps the text parser's message for the Status instead of logging it.
class ErrorText : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (text_.empty()) text_ = absl::StrCat("column ", column + 1, ": ", message);
  }
  void AddWarning(int, int, const std::string&) override {}
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

class Override {
 public:
  explicit Override(absl::string_view assignment) : assignment_(assignment) {}

  absl::Status Apply(Message* root) {
    const size_t eq = assignment_.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return Error("want PATH=VALUE, e.g. global_batch_size=64");
    }
    const absl::string_view path = assignment_.substr(0, eq);
    const absl::string_view value = assignment_.substr(eq + 1);
    std::vector<absl::string_view> segments = absl::StrSplit(path, '.');
    Message* message = root;
    for (size_t i = 0; i < segments.size(); ++i) {
      absl::string_view name = segments[i];
      int index = -1;
      const size_t open = name.find('[');
      if (open != absl::string_view::npos) {
        if (name.back() != ']' ||
            !absl::SimpleAtoi(name.substr(open + 1, name.size() - open - 2),
                              &index) ||
            index < 0) {
          return Error(absl::StrCat("'", name,
                                    "': an index is written name[N], N >= 0"));
        }
        name = name.substr(0, open);
      }
      const Descriptor* d = message->GetDescriptor();
      const FieldDescriptor* f = d->FindFieldByName(std::string(name));
      if (f == nullptr) {
        std::vector<std::string> names;
        for (int k = 0; k < d->field_count(); ++k) {
          names.push_back(d->field(k)->name());
        }
        return Error(absl::StrCat(d->name(), " has no field '", name, "'",
                                  common::DidYouMean(name, names), "; fields: ",
                                  absl::StrJoin(names, ", ")));
      }
      const Reflection* r = message->GetReflection();
      const bool last = i + 1 == segments.size();
      if (f->is_repeated() && index >= 0) {
        if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
          return Error(absl::StrCat("'", f->name(),
                                    "' is a repeated scalar; set the whole "
                                    "list: ",
                                    f->name(), "=[a,b,...]"));
        }
        const int size = r->FieldSize(*message, f);
        if (index >= size) {
          return Error(absl::StrCat(f->name(), "[", index,
                                    "] does not exist: the scenario has ",
                                    size, size == 1 ? " entry" : " entries"));
        }
        Message* element = r->MutableRepeatedMessage(message, f, index);
        if (last) return SetMessage(element, value);
        message = element;
        continue;
      }
      if (f->is_repeated()) {
        if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          return Error(absl::StrCat("'", f->name(),
                                    "' is a list of messages; name one: ",
                                    f->name(), "[N]"));
        }
        if (!last) {
          return Error(absl::StrCat("'", f->name(), "' has no fields"));
        }
        return SetRepeatedScalar(message, f, value);
      }
      if (index >= 0) {
        return Error(absl::StrCat("'", f->name(),
                                  "' is not a list; drop the index"));
      }
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        Message* sub = r->MutableMessage(message, f);
        if (last) return SetMessage(sub, value);
        message = sub;
        continue;
      }
      if (!last) {
        return Error(absl::StrCat("'", f->name(), "' is a ",
                                  f->cpp_type_name(), ", not a message"));
      }
      return SetScalar(message, f, value, /*repeated=*/false);
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Error(absl::string_view problem) const {
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", assignment_, ": ", problem));
  }

  absl::Status SetMessage(Message* m, absl::string_view text) {
    absl::string_view body = absl::StripAsciiWhitespace(text);
    if (!body.empty() && body.front() == '{' && body.back() == '}') {
      body = body.substr(1, body.size() - 2);
    }
    google::protobuf::TextFormat::Parser parser;
    parser.SetRecursionLimit(64);
    ErrorText errors;
    parser.RecordErrorsTo(&errors);
    std::unique_ptr<Message> parsed(m->New());
    if (!parser.ParseFromString(std::string(body), parsed.get())) {
      return Error(absl::StrCat("not a ", m->GetDescriptor()->name(),
                                " in text format (write {field: value ...}): ",
                                errors.text()));
    }
    m->CopyFrom(*parsed);
    return absl::OkStatus();
  }

  absl::Status SetRepeatedScalar(Message* m, const FieldDescriptor* f,
                                 absl::string_view text) {
    absl::string_view body = absl::StripAsciiWhitespace(text);
    if (!body.empty() && body.front() == '[') {
      if (body.back() != ']') return Error("a list is written [a,b,...]");
      body = body.substr(1, body.size() - 2);
    }
    m->GetReflection()->ClearField(m, f);
    if (absl::StripAsciiWhitespace(body).empty()) return absl::OkStatus();
    for (absl::string_view item : absl::StrSplit(body, ',')) {
      TPUSIM_RETURN_IF_ERROR(
          SetScalar(m, f, absl::StripAsciiWhitespace(item), /*repeated=*/true));
    }
    return absl::OkStatus();
  }

  template <typename T>
  absl::StatusOr<T> Integer(const FieldDescriptor* f, absl::string_view text) {
    T v{};
    if (!absl::SimpleAtoi(text, &v)) {
      return Error(absl::StrCat("'", f->name(), "' takes an integer from ",
                                std::numeric_limits<T>::min(), " to ",
                                std::numeric_limits<T>::max(), ", not '", text,
                                "'"));
    }
    return v;
  }

  absl::Status SetScalar(Message* m, const FieldDescriptor* f,
                         absl::string_view text, bool repeated) {
    const Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: {
        TPUSIM_ASSIGN_OR_RETURN(int32_t v, Integer<int32_t>(f, text));
        repeated ? r->AddInt32(m, f, v) : r->SetInt32(m, f, v);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        TPUSIM_ASSIGN_OR_RETURN(int64_t v, Integer<int64_t>(f, text));
        repeated ? r->AddInt64(m, f, v) : r->SetInt64(m, f, v);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        TPUSIM_ASSIGN_OR_RETURN(uint32_t v, Integer<uint32_t>(f, text));
        repeated ? r->AddUInt32(m, f, v) : r->SetUInt32(m, f, v);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        TPUSIM_ASSIGN_OR_RETURN(uint64_t v, Integer<uint64_t>(f, text));
        repeated ? r->AddUInt64(m, f, v) : r->SetUInt64(m, f, v);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_DOUBLE:
      case FieldDescriptor::CPPTYPE_FLOAT: {
        double v = 0;
        if (!absl::SimpleAtod(text, &v) || !std::isfinite(v)) {
          return Error(absl::StrCat("'", f->name(),
                                    "' takes a finite number, not '", text,
                                    "'"));
        }
        if (f->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
          repeated ? r->AddFloat(m, f, static_cast<float>(v))
                   : r->SetFloat(m, f, static_cast<float>(v));
        } else {
          repeated ? r->AddDouble(m, f, v) : r->SetDouble(m, f, v);
        }
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        if (text != "true" && text != "false") {
          return Error(absl::StrCat("'", f->name(),
                                    "' takes true or false, not '", text, "'"));
        }
        repeated ? r->AddBool(m, f, text == "true")
                 : r->SetBool(m, f, text == "true");
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string s(text);
        if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
          s = s.substr(1, s.size() - 2);
        }
        repeated ? r->AddString(m, f, s) : r->SetString(m, f, s);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_ENUM: {
        const EnumValueDescriptor* e =
            f->enum_type()->FindValueByName(std::string(text));
        if (e == nullptr) {
          std::vector<std::string> names;
          for (int k = 0; k < f->enum_type()->value_count(); ++k) {
            names.push_back(f->enum_type()->value(k)->name());
          }
          return Error(absl::StrCat("'", f->name(), "' takes one of ",
                                    absl::StrJoin(names, ", "), ", not '",
                                    text, "'", common::DidYouMean(text, names)));
        }
        repeated ? r->AddEnum(m, f, e) : r->SetEnum(m, f, e);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;
    }
    return Error("unsupported field type");
  }

  absl::string_view assignment_;
};

}  // namespace

absl::Status ApplyFieldOverride(google::protobuf::Message* message,
                                absl::string_view assignment) {
  return Override(assignment).Apply(message);
}

}  // namespace tpusim::scenarios
