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
  ASSERT_EQ(RunCli({"compile", "--program", path}, &out, &err), 0) << err;
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
  ASSERT_EQ(RunCli({"compile", "--program", bin, "--no-fusion", "--infeed-depth=0"}, &out,
                   &err),
            0)
      << err;
  EXPECT_THAT(out, HasSubstr("  #0 core 0 mxu dot.3 = {%3 dot} reads 2560 "
                             "writes 1024\n"
                             "  #1 core 0 vector add.4 = {%4 add} reads 1152 "
                             "writes 1024 after #0\n"));
  EXPECT_THAT(out, HasSubstr("+ infeed 0 +"));
}

// The example program of docs/model.md: independent work (the loss's reduce)
// runs while the gradient's all-reduce is in flight; exact HBM bytes:
// x 128*256*2, w 256*512*2, b 512*2, relu 128*512*2; the peak (#3) holds
// relu, the gradient (kept until its done), the all-reduce result and the
// 2-byte loss.
TEST(CompileCommandTest, TheExampleProgram) {
  std::string out, err;
  ASSERT_EQ(RunCli({"compile", "--program", std::string(TPUSIM_SOURCE_DIR) +
                                   "/tests/tools/testdata/dense_step.textproto"},
                   &out, &err),
            0)
      << err;
  EXPECT_EQ(out,
            "program dense_step (replicas=8, cores_per_replica=1) {\n"
            "  var slot=0 bf16[256,512] \"dense/kernel\"\n"
            "  %0 = bf16[128,256] parameter(), index=0\n"
            "  %1 = bf16[512] parameter(), index=1\n"
            "  %2 = bf16[256,512] variable_read(), slot=0\n"
            "  %3 = bf16[128,512] dot(%0, %2), lhs_contracting={1}, rhs_contracting={0}\n"
            "  %4 = bf16[128,512] add(%3, %1)\n"
            "  %5 = bf16[128,512] relu(%4)\n"
            "  %6 = bf16[256,512] dot(%0, %5), lhs_contracting={0}, rhs_contracting={0}\n"
            "  %7 = bf16[256,512] all_reduce(%6), reduce=sum\n"
            "  %8 = bf16[256,512] sub(%2, %7)\n"
            "  %9 = bf16[256,512] variable_assign(%8), slot=0\n"
            "  %10 = bf16[] reduce_sum(%5), axes={0,1}\n"
            "  ROOT (%9, %10)\n"
            "}\n"
            "kernels (issue order) {\n"
            "  #0 core 0 mxu fusion.5 = {%3 dot, %4 add, %5 relu} reads 328704 writes 131072\n"
            "  #1 core 0 mxu dot.6 = {%6 dot} reads 196608 writes 262144 after #0\n"
            "  #2 core 0 collective-start all_reduce.7.start bytes 262144 after #1\n"
            "  #3 core 0 vector reduce_sum.10 = {%10 reduce_sum} reads 131072 writes 2 after #0\n"
            "  #4 core 0 collective-done all_reduce.7.done start #2 after #2\n"
            "  #5 core 0 vector fusion.9 = {%8 sub, %9 variable_assign} reads 524288 writes 262144 after #4\n"
            "}\n"
            "hbm core 0: total 1050626 = variables 262144 + optimizer_state 0 + parameters 66560 + infeed 66560 + constants 0 + live_peak 655362\n");
}

TEST(CompileCommandTest, BadInputIsAnErrorNamingIt) {
  std::string out, err;
  const std::string junk = Write("junk.textproto", "ops { op: \"dot\" ");
  EXPECT_EQ(RunCli({"compile", "--program", junk}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("junk.textproto\" is not a text-format "
                             "ProgramProto: 1:17: Expected identifier"));
  const std::string bad = Write(
      "bad.textproto",
      "name: \"p\" num_replicas: 1 num_cores_per_replica: 1 "
      "ops { op: \"parameter\" type { dtype: \"float32\" dims: 2 } "
      "declared_type { dtype: \"float32\" dims: 2 } } "
      "ops { op: \"neg\" operands: 0 precision: \"HIGH\" "
      "type { dtype: \"float32\" dims: 2 } }");
  EXPECT_EQ(RunCli({"compile", "--program", bad}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("precision=HIGH is only allowed on dot and "
                             "conv2d"));
  const std::string good = Write(
      "good.textproto",
      "name: \"p\" num_replicas: 1 num_cores_per_replica: 1 "
      "ops { op: \"parameter\" type { dtype: \"float32\" dims: 2 } "
      "declared_type { dtype: \"float32\" dims: 2 } }");
  EXPECT_EQ(RunCli({"compile", "--program", good}, &out, &err), 0) << err;
  EXPECT_NE(RunCli({"compile", "--program", good, "--infeed-depth=-1"}, &out, &err), 0);
  EXPECT_THAT(err, HasSubstr("infeed-depth"));
  EXPECT_EQ(RunCli({"compile", "--program", good, "--infeed-depth=2000"}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("--infeed-depth=2000 is more than the limit of "
                             "1024"));
  EXPECT_EQ(RunCli({"compile"}, &out, &err), 2);
  // A program and a scenario at once, or a scenario with --program's flags,
  // is a usage error.
  EXPECT_EQ(RunCli({"compile", "--program", good, "x.textproto"}, &out, &err),
            2);
  EXPECT_EQ(RunCli({"compile", "x.textproto", "--no-fusion"}, &out, &err), 2);
}

std::string Scenario(const std::string& name) {
  return std::string(TPUSIM_SOURCE_DIR) + "/scenarios/" + name;
}

// Issue 21: `compile SCENARIO` compiles the run's step for its slice without
// simulating, and prints the HBM plan with a verdict.
TEST(CompileScenarioTest, ResNet50OnV3_32FitsWithItsPlan) {
  std::string out, err;
  ASSERT_EQ(RunCli({"compile", Scenario("run/resnet50_v3_32.textproto")}, &out,
                   &err),
            0)
      << err;
  EXPECT_THAT(out, HasSubstr("scenario resnet50_v3_32: workload resnet50, slice "
                             "v3-32 (16 chips, 32 devices), 32 replicas x 1 "
                             "core, global batch 1024 (32 per replica)\n"));
  EXPECT_THAT(out, HasSubstr("443 kernels from 3052 ops: 161 MXU, 274 vector"));
  EXPECT_THAT(out, HasSubstr("  parameters (variables)         97.5 MiB   0.6%\n"));
  EXPECT_THAT(out, HasSubstr("  step inputs                    18.4 MiB   0.1%"));
  EXPECT_THAT(out, HasSubstr("largest values live at the peak: conv2d %5: "
                             "bf16[32,112,112,64], 49.0 MiB; "));
  EXPECT_THAT(out, HasSubstr("verdict: fits, 1.79 GiB of 16.0 GiB per device "
                             "(14.2 GiB free)\n"));
  EXPECT_EQ(err, "");
}

TEST(CompileScenarioTest, AStepThatDoesNotFitExitsOneWithTheVerdict) {
  std::string out, err;
  EXPECT_EQ(RunCli({"compile", Scenario("run/hbm_oversubscribed.textproto")},
                   &out, &err),
            1);
  EXPECT_THAT(out, HasSubstr("  parameters (variables)         40.0 GiB 250.0%"));
  EXPECT_THAT(out, HasSubstr("dot %126: f32[16384,16384], 1.00 GiB"));
  EXPECT_THAT(out, HasSubstr("verdict: does NOT fit, 120 GiB of 16.0 GiB per "
                             "device (104 GiB over)"));
  EXPECT_EQ(err,
            "tpusim compile: RESOURCE_EXHAUSTED: the step of hbm_oversubscribed "
            "does not fit in HBM on v5litepod-4: it needs 120 GiB per device, "
            "the chip has 16.0 GiB\n");
}

TEST(CompileScenarioTest, SetChangesTheStepAndJsonHasExactBytes) {
  std::string out, err;
  ASSERT_EQ(RunCli({"compile", Scenario("run/resnet50_v3_32.textproto"),
                    "--set", "global_batch_size=2048", "--format=json"},
                   &out, &err),
            0)
      << err;
  EXPECT_THAT(out, HasSubstr("\"schema\": \"tpusim.compile.step/1\""));
  EXPECT_THAT(out, HasSubstr("\"global_batch\": 2048"));
  EXPECT_THAT(out, HasSubstr("\"hbm_capacity_bytes\": 17179869184"));
  EXPECT_THAT(out, HasSubstr("\"fits\": true"));
  // The step itself changed: 64 images per replica, where the scenario's
  // global batch of 1024 gives 32 (19267712 bytes of step inputs).
  EXPECT_THAT(out, HasSubstr("\"step_inputs\": 38535424"));
  EXPECT_THAT(out, HasSubstr("conv2d %5: bf16[64,112,112,64], 98.0 MiB"));
}

TEST(CompileScenarioTest, AScenarioWithoutRunIsAnErrorNamingTheSection) {
  std::string out, err;
  EXPECT_EQ(RunCli({"compile", Scenario("default.textproto")}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("default.textproto: the scenario has no `run` "
                             "section; `tpusim compile` compiles a run's "
                             "training step"));
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace tpusim::tools
