// The StableHLO emitter (golden text) and the hand-encoded CompileOptionsProto.

#include "strategy/runtime/pjrt/stablehlo_emitter.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "strategy/runtime/pjrt/compile_options.h"
#include "tests/strategy/runtime/pjrt/emitter_programs.h"

namespace tpusim::runtime::pjrt {
namespace {

using ::testing::HasSubstr;
using tpusim::testing::IsOk;
using tpusim::testing::StatusIs;

// The emitted text equals tests/strategy/runtime/pjrt/golden/<name>.mlir.
// TPUSIM_REWRITE_GOLDENS=1 rewrites the file instead (review the diff).
void ExpectGolden(const Program& program, const std::string& name) {
  absl::StatusOr<EmittedModule> m = EmitStableHlo(program);
  ASSERT_THAT(m, IsOk());
  const std::string path = std::string(TPUSIM_SOURCE_DIR) +
                           "/tests/strategy/runtime/pjrt/golden/" + name + ".mlir";
  const char* rewrite = std::getenv("TPUSIM_REWRITE_GOLDENS");
  if (rewrite != nullptr && std::string(rewrite) == "1") {
    std::ofstream(path, std::ios::binary) << m->text;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << path;
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(m->text, golden.str()) << "golden " << path;
}

TEST(StableHloEmitterTest, MlpStepMatchesItsGolden) {
  ExpectGolden(testing::MlpStep(), "mlp_step");
  absl::StatusOr<EmittedModule> m = EmitStableHlo(testing::MlpStep());
  ASSERT_THAT(m, IsOk());
  // Both dynamic dims get a size argument; w is only assigned after its read,
  // b is read and assign_added: both are inputs and outputs.
  ASSERT_EQ(m->dynamic_args.size(), 2u);
  EXPECT_EQ(m->dynamic_args[1].parameter, 1);
  EXPECT_EQ(m->variable_inputs, (std::vector<VariableArg>{{0, 0}, {1, 0}}));
  EXPECT_EQ(m->variable_outputs, (std::vector<VariableArg>{{0, 0}, {1, 0}}));
}

TEST(StableHloEmitterTest, MovementAndCollectivesMatchTheirGolden) {
  ExpectGolden(testing::Movement(), "movement");
}

TEST(StableHloEmitterTest, ConvolutionsAndPoolingMatchTheirGolden) {
  ExpectGolden(testing::Windowed(), "windowed");
}

TEST(StableHloEmitterTest, TwoCoresPerReplicaMatchTheirGolden) {
  ExpectGolden(testing::TwoCores(), "two_cores");
  absl::StatusOr<EmittedModule> m = EmitStableHlo(testing::TwoCores());
  ASSERT_THAT(m, IsOk());
  // Slot 0 lives on core 1 (read and assign_added there).
  EXPECT_EQ(m->variable_inputs, (std::vector<VariableArg>{{0, 1}}));
  EXPECT_EQ(m->variable_outputs, (std::vector<VariableArg>{{0, 1}}));
}

TEST(StableHloEmitterTest, PermutingADynamicShapeIsNamedUnimplemented) {
  ProgramBuilder dyn("dyn_permute", 2);
  Value d = *dyn.Parameter(DType::kF32, Shape({4, 2}), 0b1);
  Value cp = *dyn.CollectivePermute(d, {{0, 1}, {1, 0}});
  EXPECT_THAT(EmitStableHlo(*std::move(dyn).Build({cp})).status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("op %1 (collective_permute f32[<=4,2]): a "
                                 "collective other than all_reduce on a dynamic shape")));
}

TEST(StableHloEmitterTest, AbstractConstantsAreRejected) {
  ProgramBuilder b("abstract", 1);
  Value c = *b.Constant(Tensor::Abstract(DType::kF32, Shape({2})));
  EXPECT_THAT(EmitStableHlo(*std::move(b).Build({c})).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("abstract constant")));
}

TEST(CompileOptionsTest, EncodesReplicasPartitionsAndTheDeviceAssignment) {
  const std::string bytes = EncodeCompileOptions({{3}, {1}});
  // executable_build_options (3) { device_ordinal (1) = -1, num_replicas (4)
  // = 2, num_partitions (5) = 1, device_assignment (9) { replica_count = 2,
  // computation_count = 1, computation_devices { replica_device_ids: [3, 1] } } }
  const std::string want =
      std::string("\x1a\x1b", 2) +
      std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11) +
      std::string("\x20\x02\x28\x01", 4) +
      std::string("\x4a\x0a\x08\x02\x10\x01\x1a\x04\x0a\x02\x03\x01", 12);
  EXPECT_EQ(bytes, want);
}

}  // namespace
}  // namespace tpusim::runtime::pjrt
