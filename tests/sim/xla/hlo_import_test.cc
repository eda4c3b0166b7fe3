// The probe's module (libtpu 0.0.30, v4:2x2x1) as the kernels SimBackend
// times.

#include "sim/xla/hlo_import.h"

#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::sim::xla {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

HloSchedule ProbeSchedule() {
  std::ifstream in(std::string(TPUSIM_HLO_TESTDATA) +
                       "/probe_v4_2x2x1.hlo_with_config.pb",
                   std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  absl::StatusOr<HloModule> m = ParseHloModule(s.str(), "hlo_with_config");
  EXPECT_THAT(m.status(), IsOk());
  absl::StatusOr<HloSchedule> schedule = AnalyzeHloModule(*m);
  EXPECT_THAT(schedule.status(), IsOk());
  return *schedule;
}

TEST(HloImportTest, ProbeModuleAsKernels) {
  CoreMemory memory;
  memory.parameters = 655360;
  auto p = ImportSchedule(ProbeSchedule(), /*num_program_parameters=*/1,
                          memory);
  ASSERT_THAT(p.status(), IsOk());
  const std::vector<Kernel>& k = p->compiled.kernels;
  ASSERT_EQ(k.size(), 4u);
  // The weight's prefetch into on-chip memory: HBM bytes only.
  EXPECT_EQ(k[0].name, "copy-start");
  EXPECT_EQ(k[0].kind, CompiledKernelKind::kVector);
  EXPECT_EQ(k[0].work.hbm_bytes, 524288);
  EXPECT_TRUE(k[0].work.matmuls.empty());
  // The matmul: one f32 GEMM 128x256 . 256x512, no other vector work; it
  // reads x (program parameter 0) from HBM: its infeed.
  EXPECT_EQ(k[1].name, "fusion");
  EXPECT_EQ(k[1].kind, CompiledKernelKind::kMxu);
  ASSERT_EQ(k[1].work.matmuls.size(), 1u);
  const MatmulWork& m = k[1].work.matmuls[0];
  EXPECT_EQ(m.batch, 1);
  EXPECT_EQ(m.m, 128);
  EXPECT_EQ(m.k, 256);
  EXPECT_EQ(m.n, 512);
  EXPECT_EQ(m.dtype, runtime::DType::kF32);
  EXPECT_EQ(k[1].work.vector_elements, 0);
  EXPECT_EQ(k[1].work.hbm_bytes, 131072);
  EXPECT_EQ(k[1].flops, 2 * 128 * 256 * 512);
  // The synchronous all-reduce: a start and its done right after it.
  EXPECT_EQ(k[2].kind, CompiledKernelKind::kCollectiveStart);
  EXPECT_EQ(k[2].collective, runtime::OpCode::kAllReduce);
  EXPECT_EQ(k[2].collective_bytes, 262144);
  EXPECT_THAT(k[2].replica_groups, ElementsAre(ElementsAre(0, 1, 2, 3)));
  EXPECT_EQ(k[2].pair, 3);
  EXPECT_EQ(k[3].kind, CompiledKernelKind::kCollectiveDone);
  EXPECT_EQ(k[3].pair, 2);
  EXPECT_THAT(k[3].deps, ElementsAre(2));
  // Infeed: only the fusion reads a program parameter (the weight, entry
  // parameter 1, is not one with num_program_parameters = 1).
  EXPECT_THAT(p->kernel_parameters,
              ElementsAre(ElementsAre(), ElementsAre(0), ElementsAre(),
                          ElementsAre()));
  ASSERT_EQ(p->compiled.memory.size(), 1u);
  EXPECT_EQ(p->compiled.memory[0].parameters, 655360);
}

TEST(HloImportTest, CollectivePermuteCarriesItsPairs) {
  HloSchedule s;
  HloKernel k;
  k.kind = HloKernelKind::kCollective;
  k.name = "collective-permute.3";
  k.collective = "collective-permute";
  k.source_target_pairs = {{0, 1}, {2, 3}};
  k.collective_bytes = 4096;
  s.kernels.push_back(k);
  auto p = ImportSchedule(s, 0, {});
  ASSERT_THAT(p.status(), IsOk());
  const std::vector<Kernel>& kernels = p->compiled.kernels;
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "collective-permute.3.start");
  EXPECT_EQ(kernels[0].kind, CompiledKernelKind::kCollectiveStart);
  EXPECT_EQ(kernels[0].collective, runtime::OpCode::kCollectivePermute);
  EXPECT_EQ(kernels[0].collective_bytes, 4096);
  EXPECT_THAT(kernels[0].source_target_pairs,
              ElementsAre(std::make_pair(int64_t{0}, int64_t{1}),
                          std::make_pair(int64_t{2}, int64_t{3})));
  EXPECT_EQ(kernels[1].name, "collective-permute.3.done");
  EXPECT_EQ(kernels[1].kind, CompiledKernelKind::kCollectiveDone);
  EXPECT_EQ(kernels[1].pair, 0);
}

TEST(HloImportTest, CollectiveBroadcastIsNamed) {
  HloSchedule s;
  HloKernel k;
  k.kind = HloKernelKind::kCollective;
  k.name = "collective-broadcast.3";
  k.collective = "collective-broadcast";
  s.kernels.push_back(k);
  EXPECT_THAT(ImportSchedule(s, 0, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("HLO import: collective-broadcast "
                                 "collective-broadcast.3 cannot be simulated")));
}

}  // namespace
}  // namespace tpusim::sim::xla
