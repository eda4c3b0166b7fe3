// The HLO importer on the modules the XLA:TPU compiler (libtpu 0.0.30) made of
// the libtpu probe's program (tools/libtpu_probe writes them: testdata/), and
// on hand-made bytes for each error.

#include <fstream>
#include <sstream>
#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/xla/hlo_analysis.h"
#include "sim/xla/hlo_module.h"

namespace tpusim::sim::xla {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::StatusIs;

std::string ReadTestData(const std::string& name) {
  std::ifstream in(std::string(TPUSIM_HLO_TESTDATA) + "/" + name,
                   std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Protobuf wire encoding helpers for hand-made modules.
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Field(int field, const std::string& bytes) {
  return Varint((static_cast<uint64_t>(field) << 3) | 2) + Varint(bytes.size()) +
         bytes;
}
std::string IntField(int field, int64_t v) {
  return Varint(static_cast<uint64_t>(field) << 3) +
         Varint(static_cast<uint64_t>(v));
}
// f32[n] with no layout.
std::string F32Shape(int64_t n) { return IntField(2, 11) + IntField(3, n); }
std::string Instruction(int64_t id, const std::string& name,
                        const std::string& opcode,
                        const std::vector<int64_t>& operands) {
  std::string i = Field(1, name) + Field(2, opcode) + Field(3, F32Shape(8)) +
                  IntField(35, id);
  for (int64_t o : operands) i += IntField(36, o);
  return i;
}
// A module with one computation "main" (id 1) holding `instructions`.
std::string Module(const std::vector<std::string>& instructions,
                   int64_t root) {
  std::string c = Field(1, "main") + IntField(5, 1) + IntField(6, root);
  for (const std::string& i : instructions) c += Field(2, i);
  return Field(1, "m") + Field(2, "main") + Field(3, c) + IntField(6, 1);
}

TEST(HloModuleTest, ParsesTheProbeModuleForV4) {
  auto m = ParseHloModule(ReadTestData("probe_v4_2x2x1.hlo_with_config.pb"),
                          "hlo_with_config");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->name, "libtpu_probe");
  EXPECT_EQ(m->Entry()->name, "main.2");
  EXPECT_EQ(m->computations.size(), 5u);
  EXPECT_TRUE(m->has_entry_schedule());
  std::vector<std::string> order;
  for (int64_t id : m->EntrySequence()) {
    order.push_back(m->Entry()->Find(id)->name);
  }
  // The compiler's schedule, not the instruction order (which lists the
  // parameters first): the weight's prefetch starts before x is touched.
  EXPECT_THAT(order, ElementsAre("Arg_1.3", "copy-start", "Arg_0.3",
                                 "copy-done", "fusion", "all-reduce.1"));
  const HloInstruction& ar = *m->Entry()->root();
  EXPECT_EQ(ar.opcode, "all-reduce");
  EXPECT_EQ(ar.shape.ToString(), "f32[128,512]");
  EXPECT_THAT(ar.replica_groups, ElementsAre(ElementsAre(0, 1, 2, 3)));
  const HloInstruction& fusion = *m->Entry()->Find(m->EntrySequence()[4]);
  EXPECT_EQ(fusion.fusion_kind, "kOutput");
  // v4: the weight and the matmul's result live in memory space 3.
  EXPECT_EQ(fusion.shape.memory_space, 3);
}

TEST(HloModuleTest, AnalyzesTheProbeModule) {
  for (const char* file : {"probe_v4_2x2x1.hlo_with_config.pb",
                           "probe_v5e_2x2.hlo_with_config.pb"}) {
    SCOPED_TRACE(file);
    auto m = ParseHloModule(ReadTestData(file), "hlo_with_config");
    ASSERT_TRUE(m.ok()) << m.status();
    auto s = AnalyzeHloModule(*m);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(s->from_module_schedule);
    ASSERT_EQ(s->kernels.size(), 3u);
    // The weight (f32[256,512], 512 KiB) copied from HBM to on-chip memory.
    EXPECT_EQ(s->kernels[0].kind, HloKernelKind::kCopy);
    EXPECT_EQ(s->kernels[0].bytes_read, 524288);
    EXPECT_EQ(s->kernels[0].bytes_written, 0);
    EXPECT_EQ(s->kernels[0].on_chip_bytes, 524288);
    // The matmul (a convolution in the fusion): 2*128*256*512 FLOPs, reads x
    // (f32[128,256]) from HBM, writes on chip.
    EXPECT_EQ(s->kernels[1].kind, HloKernelKind::kFusion);
    EXPECT_EQ(s->kernels[1].flops, 2.0 * 128 * 256 * 512);
    EXPECT_EQ(s->kernels[1].bytes_read, 131072);
    EXPECT_EQ(s->kernels[1].bytes_written, 0);
    // The all-reduce of f32[128,512] over the 4 replicas, result to HBM.
    EXPECT_EQ(s->kernels[2].kind, HloKernelKind::kCollective);
    EXPECT_EQ(s->kernels[2].collective, "all-reduce");
    EXPECT_EQ(s->kernels[2].collective_bytes, 262144);
    EXPECT_EQ(s->kernels[2].bytes_written, 262144);
    EXPECT_THAT(s->kernels[2].replica_groups,
                ElementsAre(ElementsAre(0, 1, 2, 3)));
    EXPECT_EQ(s->num_fusions, 1);
  }
}

TEST(HloModuleTest, TilePadding) {
  HloShape s;
  s.element_type = kBF16;
  s.dimensions = {3, 100};
  s.minor_to_major = {1, 0};
  EXPECT_EQ(LaidOutBytes(s), 3 * 100 * 2);
  s.tiles = {{8, 128}};  // 3 -> 8 rows, 100 -> 128 columns
  EXPECT_EQ(LaidOutBytes(s), 8 * 128 * 2);
  s.minor_to_major = {0, 1};  // physical [100, 3]: 100 -> 104, 3 -> 128
  EXPECT_EQ(LaidOutBytes(s), 104 * 128 * 2);
  s.memory_space = 1;
  EXPECT_EQ(LaidOutBytes(s), 0);
  EXPECT_EQ(LaidOutBytes(s, /*hbm_only=*/false), 104 * 128 * 2);
}

TEST(HloModuleTest, WithoutScheduleTheInstructionOrderIsUsed) {
  auto m = ParseHloModule(
      Module({Instruction(1, "p", "parameter", {}),
              Instruction(2, "e", "exponential", {1}),
              Instruction(3, "a", "add", {2, 1})},
             3),
      "hlo");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->has_entry_schedule());
  auto s = AnalyzeHloModule(*m);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->from_module_schedule);
  ASSERT_EQ(s->kernels.size(), 2u);
  EXPECT_EQ(s->kernels[0].transcendentals, 8);
  EXPECT_EQ(s->kernels[1].flops, 8);
  EXPECT_EQ(s->kernels[1].bytes_read, 64);
  EXPECT_EQ(s->kernels[1].bytes_written, 32);
}

TEST(HloModuleTest, ReadsWhetherAnInstructionHasASharding) {
  // OpSharding {type: OTHER (3), tile_assignment_dimensions: [2]}.
  const std::string sharding = IntField(1, 3) + IntField(3, 2);
  auto m = ParseHloModule(
      Module({Instruction(1, "p", "parameter", {}) + Field(40, sharding),
              Instruction(2, "n", "negate", {1})},
             2),
      "hlo");
  ASSERT_TRUE(m.ok()) << m.status();
  const HloComputation& c = *m->Entry();
  EXPECT_TRUE(c.Find(1)->has_sharding);
  EXPECT_FALSE(c.Find(2)->has_sharding);
}

// f32 of the given dimensions, no layout.
std::string F32ShapeOf(const std::vector<int64_t>& dims) {
  std::string s = IntField(2, 11);
  for (int64_t d : dims) s += IntField(3, d);
  return s;
}

TEST(HloModuleTest, ConvolutionCountsOnlyWindowPositionsThatReadInput) {
  // A batched dot as XLA:TPU writes it: a convolution whose batch dimension
  // (4) is spatial, with a window of 4, padding 3 and base dilation 4, so
  // each output position reads exactly one input position. Input [4, 8, 16]
  // (spatial, batch, feature), kernel [4, 16, 2] (spatial, in, out), output
  // [4, 8, 2].
  const std::string window =
      Field(1, IntField(1, 4) + IntField(2, 1) + IntField(3, 3) +
                   IntField(4, 3) + IntField(6, 4));
  const std::string dnums = IntField(7, 1) + IntField(8, 2) + IntField(11, 0) +
                            IntField(3, 1) + IntField(4, 2) + IntField(6, 0) +
                            IntField(9, 1) + IntField(10, 2) + IntField(12, 0);
  auto inst = [&](int64_t id, const std::string& name, const std::string& op,
                  const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& operands) {
    std::string i = Field(1, name) + Field(2, op) +
                    Field(3, F32ShapeOf(dims)) + IntField(35, id);
    for (int64_t o : operands) i += IntField(36, o);
    return i;
  };
  auto m = ParseHloModule(
      Module({inst(1, "x", "parameter", {4, 8, 16}, {}),
              inst(2, "w", "parameter", {4, 16, 2}, {}) + IntField(9, 1),
              inst(3, "c", "convolution", {4, 8, 2}, {1, 2}) +
                  Field(15, window) + Field(16, dnums)},
             3),
      "hlo");
  ASSERT_TRUE(m.ok()) << m.status();
  auto s = AnalyzeHloModule(*m);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->kernels.size(), 1u);
  // 2 x 64 outputs x 16 input features x 1 valid window position (the
  // window's size, 4, would count its padding: 8192).
  EXPECT_EQ(s->kernels[0].flops, 2048);
  ASSERT_EQ(s->kernels[0].matmuls.size(), 1u);
  EXPECT_EQ(s->kernels[0].matmuls[0].m, 32);
  EXPECT_EQ(s->kernels[0].matmuls[0].k, 16);
  EXPECT_EQ(s->kernels[0].matmuls[0].n, 2);
}

TEST(HloModuleTest, UnknownOpcodeIsNamed) {
  auto m = ParseHloModule(
      Module({Instruction(1, "p", "parameter", {}),
              Instruction(2, "z", "frobnicate", {1})},
             2),
      "hlo");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(AnalyzeHloModule(*m).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "HLO import: unknown HLO opcode \"frobnicate\" "
                       "(instruction z in main)"));
}

TEST(HloModuleTest, WhileIsAClearError) {
  auto m = ParseHloModule(
      Module({Instruction(1, "p", "parameter", {}),
              Instruction(2, "loop", "while", {1})},
             2),
      "hlo");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(AnalyzeHloModule(*m).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "HLO import: instruction loop (while) in main is not "
                       "supported by tpusim's importer"));
}

TEST(HloModuleTest, MalformedBytes) {
  EXPECT_THAT(ParseHloModule("\x0a\xff", "hlo").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("HLO module: malformed HloModuleProto")));
  EXPECT_THAT(ParseHloModule("", "hlo").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "HLO module \"\" has no computations"));
  EXPECT_THAT(ParseHloModule("", "mlir").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("HLO module format \"mlir\"")));
  // An operand id that is not in the computation names the instruction.
  EXPECT_THAT(
      ParseHloModule(Module({Instruction(2, "a", "add", {7, 7})}, 2), "hlo")
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "HLO module \"m\": instruction a in main has operand id 7, "
               "which is not in main"));
}

}  // namespace
}  // namespace tpusim::sim::xla
