#include "tests/fuzz/proto_mutator.h"

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <random>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"

// libFuzzer's byte-level mutator.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace tpusim::fuzz {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

class IgnoreErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, int, const std::string&) override {}
  void AddWarning(int, int, const std::string&) override {}
};

// Sizes, counts and indices where size arithmetic tends to break.
constexpr int64_t kInterestingInts[] = {
    0,
    1,
    -1,
    2,
    3,
    8,
    -2,
    255,
    256,
    65536,
    std::numeric_limits<int32_t>::max(),
    std::numeric_limits<int32_t>::min(),
    int64_t{1} << 31,
    int64_t{1} << 32,
    (int64_t{1} << 32) + 1,
    int64_t{1} << 40,
    int64_t{1} << 61,
    int64_t{1} << 62,
    std::numeric_limits<int64_t>::max(),
    std::numeric_limits<int64_t>::min(),
};
constexpr double kInterestingDoubles[] = {
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    1e300,
    -1e300,
    1e-310,
    std::numeric_limits<double>::infinity(),
    -std::numeric_limits<double>::infinity(),
    std::numeric_limits<double>::quiet_NaN(),
};

// One field of one (sub)message of the input.
struct Slot {
  Message* message;
  const FieldDescriptor* field;
};

void CollectSlots(Message* m, int depth, std::vector<Slot>* out) {
  if (depth > 64) return;
  const Descriptor* d = m->GetDescriptor();
  const Reflection* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    out->push_back({m, f});
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (f->is_repeated()) {
      for (int j = 0; j < r->FieldSize(*m, f); ++j) {
        CollectSlots(r->MutableRepeatedMessage(m, f, j), depth + 1, out);
      }
    } else if (r->HasField(*m, f)) {
      CollectSlots(r->MutableMessage(m, f), depth + 1, out);
    }
  }
}

class Mutator {
 public:
  Mutator(const std::vector<std::string>& words, unsigned seed)
      : words_(words), rng_(seed) {}

  // Changes `slot` once.
  void Mutate(const Slot& slot) {
    Message* m = slot.message;
    const FieldDescriptor* f = slot.field;
    const Reflection* r = m->GetReflection();
    if (f->is_repeated()) {
      const int n = r->FieldSize(*m, f);
      switch (n == 0 ? 0 : Below(4)) {
        case 0:  // add an element (a copy of a sibling for messages)
          if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
            Message* added = r->AddMessage(m, f);
            if (n > 0) added->CopyFrom(r->GetRepeatedMessage(*m, f, Below(n)));
          } else {
            AddScalar(m, f);
          }
          return;
        case 1:  // remove one
          r->SwapElements(m, f, Below(n), n - 1);
          r->RemoveLast(m, f);
          return;
        case 2:  // swap two
          r->SwapElements(m, f, Below(n), Below(n));
          return;
        default:  // change one
          if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
            SetRepeatedScalar(m, f, Below(n));
          }
          return;
      }
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (r->HasField(*m, f) && Below(2) == 0) {
        r->ClearField(m, f);
      } else {
        r->MutableMessage(m, f);
      }
      return;
    }
    if (r->HasField(*m, f) && Below(8) == 0) {
      r->ClearField(m, f);
      return;
    }
    SetScalar(m, f);
  }

  // Uniform in [0, n).
  int Below(int n) {
    return std::uniform_int_distribution<int>(0, n - 1)(rng_);
  }

 private:
  int64_t NewInt(int64_t old) {
    // Wrapping (unsigned) arithmetic: the mutator itself must not overflow.
    const uint64_t u = static_cast<uint64_t>(old);
    switch (Below(4)) {
      case 0:
        return static_cast<int64_t>(u + static_cast<uint64_t>(Below(33)) - 16);
      case 1:
        return static_cast<int64_t>(u * 2);
      default:
        return kInterestingInts[Below(std::size(kInterestingInts))];
    }
  }
  double NewDouble() {
    return kInterestingDoubles[Below(std::size(kInterestingDoubles))];
  }
  std::string NewString(const std::string& old) {
    switch (Below(4)) {
      case 0:
        return "";
      case 1: {  // libFuzzer's byte mutations on the old value
        std::string s = old;
        s.resize(old.size() + 16);
        s.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(&s[0]), old.size(),
                                  s.size()));
        return s;
      }
      default:
        return words_.empty() ? old : words_[Below(words_.size())];
    }
  }
  const google::protobuf::EnumValueDescriptor* NewEnum(
      const FieldDescriptor* f) {
    const auto* e = f->enum_type();
    return e->value(Below(e->value_count()));
  }

  void SetScalar(Message* m, const FieldDescriptor* f) {
    const Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        r->SetInt32(m, f, static_cast<int32_t>(NewInt(r->GetInt32(*m, f))));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        r->SetInt64(m, f, NewInt(r->GetInt64(*m, f)));
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        r->SetUInt32(m, f, static_cast<uint32_t>(NewInt(r->GetUInt32(*m, f))));
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        r->SetUInt64(m, f,
                     static_cast<uint64_t>(
                         NewInt(static_cast<int64_t>(r->GetUInt64(*m, f)))));
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        r->SetDouble(m, f, NewDouble());
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        r->SetFloat(m, f, static_cast<float>(NewDouble()));
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        r->SetBool(m, f, !r->GetBool(*m, f));
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        r->SetEnum(m, f, NewEnum(f));
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        r->SetString(m, f, NewString(r->GetString(*m, f)));
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;
    }
  }

  void SetRepeatedScalar(Message* m, const FieldDescriptor* f, int i) {
    const Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        r->SetRepeatedInt32(
            m, f, i,
            static_cast<int32_t>(NewInt(r->GetRepeatedInt32(*m, f, i))));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        r->SetRepeatedInt64(m, f, i, NewInt(r->GetRepeatedInt64(*m, f, i)));
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        r->SetRepeatedUInt32(
            m, f, i,
            static_cast<uint32_t>(NewInt(r->GetRepeatedUInt32(*m, f, i))));
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        r->SetRepeatedUInt64(m, f, i,
                             static_cast<uint64_t>(NewInt(static_cast<int64_t>(
                                 r->GetRepeatedUInt64(*m, f, i)))));
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        r->SetRepeatedDouble(m, f, i, NewDouble());
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        r->SetRepeatedFloat(m, f, i, static_cast<float>(NewDouble()));
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        r->SetRepeatedBool(m, f, i, !r->GetRepeatedBool(*m, f, i));
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        r->SetRepeatedEnum(m, f, i, NewEnum(f));
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        r->SetRepeatedString(m, f, i,
                             NewString(r->GetRepeatedString(*m, f, i)));
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;
    }
  }

  void AddScalar(Message* m, const FieldDescriptor* f) {
    const Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        r->AddInt32(m, f, static_cast<int32_t>(NewInt(0)));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        r->AddInt64(m, f, NewInt(0));
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        r->AddUInt32(m, f, static_cast<uint32_t>(NewInt(0)));
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        r->AddUInt64(m, f, static_cast<uint64_t>(NewInt(0)));
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        r->AddDouble(m, f, NewDouble());
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        r->AddFloat(m, f, static_cast<float>(NewDouble()));
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        r->AddBool(m, f, Below(2) == 0);
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        r->AddEnum(m, f, NewEnum(f));
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        r->AddString(m, f, NewString(""));
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;
    }
  }

  const std::vector<std::string>& words_;
  std::minstd_rand rng_;
};

}  // namespace

size_t MutateTextProto(const Message& prototype,
                       const std::vector<std::string>& words, uint8_t* data,
                       size_t size, size_t max_size, unsigned seed) {
  if (seed % 3 != 0) return LLVMFuzzerMutate(data, size, max_size);
  std::unique_ptr<Message> message(prototype.New());
  IgnoreErrors errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  google::protobuf::io::ArrayInputStream stream(data, static_cast<int>(size));
  if (!parser.Parse(&stream, message.get())) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  std::vector<Slot> slots;
  CollectSlots(message.get(), 0, &slots);
  Mutator mutator(words, seed / 3);
  mutator.Mutate(slots[mutator.Below(static_cast<int>(slots.size()))]);
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(*message, &text) ||
      text.size() > max_size) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

}  // namespace tpusim::fuzz
