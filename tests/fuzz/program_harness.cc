// Program::FromProto on hostile ProgramProtos, given as text protos (text
// mutates into new op names, dtypes and dimensions far more often than the
// wire format does).
//
// Contract (strategy/runtime/program.h):
// - every error is InvalidArgument;
// - a program FromProto accepts prints (ToText), has a cost (TotalCost) and
//   round-trips: FromProto(ToProto(p)) succeeds and prints the same text and
//   proto.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "strategy/runtime/program.h"
#include "strategy/runtime/program.pb.h"
#include "tests/fuzz/contract.h"
#include "tests/fuzz/harnesses.h"

namespace tpusim::fuzz {
namespace {

// Protobuf logs text-format errors unless they are collected.
class IgnoreErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, int, const std::string&) override {}
  void AddWarning(int, int, const std::string&) override {}
};

}  // namespace

void FuzzProgram(absl::string_view input) {
  proto::ProgramProto pb;
  IgnoreErrors errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  google::protobuf::io::ArrayInputStream stream(input.data(),
                                                static_cast<int>(input.size()));
  if (!parser.Parse(&stream, &pb)) return;

  absl::StatusOr<runtime::Program> program = runtime::Program::FromProto(pb);
  if (!program.ok()) {
    FUZZ_EXPECT(program.status().code() == absl::StatusCode::kInvalidArgument,
                "program", "FromProto: ", program.status().ToString());
    return;
  }
  const std::string text = program->ToText();
  (void)program->TotalCost();
  proto::ProgramProto out;
  program->ToProto(&out);
  absl::StatusOr<runtime::Program> again = runtime::Program::FromProto(out);
  FUZZ_EXPECT(again.ok(), "program",
              "FromProto(ToProto(p)): ", again.status().ToString(), "\n", text);
  FUZZ_EXPECT(again->ToText() == text, "program",
              "the round trip changed the program:\n", text, "\n---\n",
              again->ToText());
  proto::ProgramProto out_again;
  again->ToProto(&out_again);
  FUZZ_EXPECT(out_again.SerializeAsString() == out.SerializeAsString(),
              "program", "the round trip changed the proto:\n",
              out.DebugString(), "\n---\n", out_again.DebugString());
}

}  // namespace tpusim::fuzz
