// `tpusim compile`: the fusion text of a program file (text and binary
// ProgramProto), --no-fusion, and bad input.

#include "tools/compile_command.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "strategy/runtime/program.h"
#include "strategy/runtime/program.pb.h"
#include "tools/cli.h"

namespace tpusim::tools {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Value;
using ::testing::HasSubstr;

int RunCli(const std::vector<std::string>& args, std::string* out,
           std::string* err) {
  Cli cli({CompileCommand()});
  std::ostringstream o, e;
  const int code = cli.Run(args, o, e);
  *out = o.str();
  *err = e.str();
  return code;
}

runtime::Program Dense() {
  runtime::ProgramBuilder b("dense", /*num_replicas=*/2);
  Value x = *b.Parameter(DType::kF32, Shape({8, 16}));
  Value w = *b.Parameter(DType::kF32, Shape({16, 32}));
  Value bias = *b.Parameter(DType::kF32, Shape({32}));
  Value y = *b.Relu(*b.Add(*b.MatMul(x, w), bias));
  Value s = *b.AllReduce(y, runtime::CollectiveReduce::kSum);
  return *std::move(b).Build({s});
}

std::string Write(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(CompileCommandTest, PrintsTheProgramAndItsKernels) {
  const runtime::Program p = Dense();
  proto::ProgramProto pb;
  p.ToProto(&pb);
  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(pb, &text));
  const std::string path = Write("dense.textproto", text);
  std::string out, err;
  ASSERT_EQ(RunCli({"compile", path}, &out, &err), 0) << err;
  EXPECT_EQ(out,
            p.ToText() +
                "kernels (issue order) {\n"
                "  #0 core 0 mxu fusion.5 = {%3 dot, %4 add, %5 relu} reads "
                "2688 writes 1024\n"
                "  #1 core 0 collective-start all_reduce.6.start bytes 1024 "
                "after #0\n"
                "  #2 core 0 collective-done all_reduce.6.done start #1 after "
                "#1\n"
                "}\n"
                "hbm core 0: total 7424 = variables 0 + optimizer_state 0 + "
                "parameters 2688 + infeed 2688 + constants 0 + live_peak 2048\n");
  // Binary form, unfused.
  std::string bytes;
  ASSERT_TRUE(pb.SerializeToString(&bytes));
  const std::string bin = Write("dense.pb", bytes);
  ASSERT_EQ(RunCli({"compile", bin, "--no-fusion", "--infeed-depth=0"}, &out,
                   &err),
            0)
      << err;
  EXPECT_THAT(out, HasSubstr("  #0 core 0 mxu dot.3 = {%3 dot} reads 2560 "
                             "writes 1024\n"
                             "  #1 core 0 vector add.4 = {%4 add} reads 1152 "
                             "writes 1024 after #0\n"));
  EXPECT_THAT(out, HasSubstr("+ infeed 0 +"));
}

TEST(CompileCommandTest, BadInputIsAnErrorNamingIt) {
  std::string out, err;
  const std::string junk = Write("junk.textproto", "ops { op: \"dot\" ");
  EXPECT_EQ(RunCli({"compile", junk}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("junk.textproto\" is not a text-format "
                             "ProgramProto: 1:17: Expected identifier"));
  const std::string bad = Write(
      "bad.textproto",
      "name: \"p\" num_replicas: 1 num_cores_per_replica: 1 "
      "ops { op: \"parameter\" type { dtype: \"float32\" dims: 2 } "
      "declared_type { dtype: \"float32\" dims: 2 } } "
      "ops { op: \"neg\" operands: 0 precision: \"HIGH\" "
      "type { dtype: \"float32\" dims: 2 } }");
  EXPECT_EQ(RunCli({"compile", bad}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("precision=HIGH is only allowed on dot and "
                             "conv2d"));
  const std::string good = Write(
      "good.textproto",
      "name: \"p\" num_replicas: 1 num_cores_per_replica: 1 "
      "ops { op: \"parameter\" type { dtype: \"float32\" dims: 2 } "
      "declared_type { dtype: \"float32\" dims: 2 } }");
  EXPECT_EQ(RunCli({"compile", good}, &out, &err), 0) << err;
  EXPECT_NE(RunCli({"compile", good, "--infeed-depth=-1"}, &out, &err), 0);
  EXPECT_THAT(err, HasSubstr("infeed-depth"));
  EXPECT_EQ(RunCli({"compile", good, "--infeed-depth=2000"}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("--infeed-depth=2000 is more than the limit of "
                             "1024"));
  EXPECT_EQ(RunCli({"compile"}, &out, &err), 2);
}

}  // namespace
}  // namespace tpusim::tools
