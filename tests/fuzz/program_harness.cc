// Program::FromProto on hostile ProgramProtos, given as text protos (text
// mutates into new op names, dtypes and dimensions far more often than the
// wire format does).
//
// Contract (strategy/runtime/program.h):
// - every error is InvalidArgument;
// - a program FromProto accepts prints (ToText), has a cost (TotalCost) and
//   round-trips: FromProto(ToProto(p)) succeeds and prints the same text and
//   proto;
// - it compiles (sim/compile) with and without fusion: every kernel depends
//   only on earlier ones, fusion keeps the FLOPs (but for the recomputed
//   producers it counts: Kernel::recomputed_flops) and never adds HBM bytes.

#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "sim/compile/compile.h"
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

  absl::StatusOr<sim::CompiledProgram> fused =
      sim::CompileProgram(*program, sim::CompileOptions{});
  sim::CompileOptions per_op;
  per_op.fusion = false;
  absl::StatusOr<sim::CompiledProgram> unfused =
      sim::CompileProgram(*program, per_op);
  FUZZ_EXPECT(fused.ok() && unfused.ok(), "program", "CompileProgram: ",
              fused.status().ToString(), " / ", unfused.status().ToString());
  for (const sim::CompiledProgram* c : {&*fused, &*unfused}) {
    for (size_t k = 0; k < c->kernels.size(); ++k) {
      for (int d : c->kernels[k].deps) {
        FUZZ_EXPECT(d >= 0 && d < static_cast<int>(k), "program", "kernel #",
                    k, " depends on #", d, "\n", c->FusionText(*program));
      }
    }
  }
  // Fusion with duplication evaluates a cheap producer again in each
  // consumer's kernel: the fused total counts that repeat, once per extra
  // evaluation (Kernel::recomputed_flops), and nothing else changes.
  int64_t recomputed = 0;
  for (const sim::Kernel& k : fused->kernels) recomputed += k.recomputed_flops;
  constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();
  const bool saturated = fused->total_flops() == kSaturated ||
                         unfused->total_flops() == kSaturated;
  FUZZ_EXPECT(saturated ||
                  (recomputed >= 0 && fused->total_flops() - recomputed ==
                                          unfused->total_flops()),
              "program", "fusion changed the FLOPs (recomputed ", recomputed,
              ")\n", fused->FusionText(*program));
  FUZZ_EXPECT(fused->total_hbm_bytes() <= unfused->total_hbm_bytes(),
              "program", "fusion added HBM bytes\n",
              fused->FusionText(*program));
}

}  // namespace tpusim::fuzz
