#include "tools/compile_command.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "sim/compile/compile.h"
#include "strategy/runtime/program.h"
#include "strategy/runtime/program.pb.h"
#ifdef TPUSIM_HAVE_XLA_TPU
#include "tools/xla_tpu_compile.h"
#endif

namespace tpusim::tools {
namespace {

// Keeps the parser's first error (line and column, 1-based) instead of
// letting protobuf log it.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (error_.empty()) {
      error_ = absl::StrCat(line + 1, ":", column + 1, ": ", message);
    }
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

// tpusim choice: a program file larger than this is refused unread.
constexpr int64_t kMaxProgramFileBytes = int64_t{256} << 20;

absl::Status RunCompile(const ParsedArgs& args, std::ostream& out) {
  const std::string compiler = args.Get("compiler", "tpusim");
  if (compiler == "xla-tpu") {
#ifdef TPUSIM_HAVE_XLA_TPU
    return RunXlaTpuCompile(args, out);
#else
    return absl::FailedPreconditionError(
        "--compiler xla-tpu: this tpusim was built without the PJRT C API "
        "header that libtpu needs (TPUSIM_PJRT=OFF, or tools/setup.sh not run)");
#endif
  }
  if (compiler != "tpusim") {
    return UsageError(absl::StrCat("--compiler=", compiler,
                                   ": must be tpusim or xla-tpu"));
  }
  for (const char* flag :
       {"set", "format", "libtpu", "compile-time-limit", "save-optimized"}) {
    if (args.Has(flag)) {
      return UsageError(
          absl::StrCat("--", flag, " needs --compiler xla-tpu (and a SCENARIO)"));
    }
  }
  const std::string& path = args.positional()[0];
  TPUSIM_ASSIGN_OR_RETURN(
      std::string bytes,
      common::ReadRegularFile(path, "program file", kMaxProgramFileBytes));
  proto::ProgramProto pb;
  if (absl::EndsWith(path, ".pb")) {
    if (!pb.ParseFromString(bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "program file \"", path, "\" is not a binary ProgramProto"));
    }
  } else {
    google::protobuf::TextFormat::Parser parser;
    FirstError errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(bytes, &pb)) {
      return absl::InvalidArgumentError(
          absl::StrCat("program file \"", path,
                       "\" is not a text-format ProgramProto: ", errors.error()));
    }
  }
  TPUSIM_ASSIGN_OR_RETURN(runtime::Program program,
                          runtime::Program::FromProto(pb));
  sim::CompileOptions options;
  options.fusion = !args.Has("no-fusion");
  TPUSIM_ASSIGN_OR_RETURN(int64_t depth, args.GetInt("infeed-depth", 1, 0));
  if (depth > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--infeed-depth=", depth, " is more than the limit of 1024"));
  }
  options.infeed_depth = static_cast<int>(depth);
  TPUSIM_ASSIGN_OR_RETURN(sim::CompiledProgram compiled,
                          sim::CompileProgram(program, options));
  out << compiled.FusionText(program);
  return absl::OkStatus();
}

}  // namespace

Subcommand CompileCommand() {
  Subcommand s;
  s.name = "compile";
  s.summary = "print a program's fused kernels, issue order and HBM footprint";
  s.usage =
      "tpusim compile PROGRAM [--no-fusion] [--infeed-depth=N]\n"
      "       tpusim compile SCENARIO --compiler xla-tpu [--set PATH=VALUE]... "
      "[--format=text|json] [--libtpu PATH] [--compile-time-limit SECONDS]";
  s.flags = {{"no-fusion", false, "one kernel per op (the unfused baseline)"},
             {"infeed-depth", true,
              "batches prefetched into HBM (default 1, at most 1024)"},
             // --compiler xla-tpu (tools/xla_tpu_compile.h, docs/xla-tpu.md).
             {"compiler", true,
              "tpusim (default) or xla-tpu: the XLA:TPU compiler in libtpu "
              "compiles the training step of SCENARIO for its slice"},
             {"set", true, "PATH=VALUE: change one scenario field (repeatable)"},
             {"format", true, "text (default) or json (--compiler xla-tpu)"},
             {"libtpu", true,
              "libtpu.so for --compiler xla-tpu (default: $TPUSIM_LIBTPU_PATH or "
              "the pinned wheel's)"},
             {"compile-time-limit", true,
              "seconds one xla-tpu compile may take (default 600)"},
             {"save-optimized", true,
              "FILE: write the compiler's optimized module there (--compiler "
              "xla-tpu; a serialized HloModuleProtoWithConfig)"}};
  s.min_positional = 1;
  s.max_positional = 1;
  s.out_of_memory_hint =
      "its memory grows with the shapes and the op count of PROGRAM and "
      "with --infeed-depth: lower them";
  s.description =
      "PROGRAM is a tpusim.proto.ProgramProto in text format (binary when the "
      "name ends in .pb).\n"
      "Prints the program text, the kernels in issue order (fusions, "
      "collective start/done,\n"
      "cross-core copies, HBM bytes read and written) and each logical core's "
      "peak HBM.";
  s.run = &RunCompile;
  return s;
}

}  // namespace tpusim::tools
