// A shipped scenario's training step compiled by the real XLA:TPU compiler
// (the pinned libtpu 0.0.30) and read back: the compiler's exact memory
// numbers and the imported schedule.

#include "scenarios/xla_tpu_step.h"

#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::scenarios {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

absl::StatusOr<XlaTpuStep> Compile(const std::string& name,
                                   const std::vector<std::string>& sets = {}) {
  absl::StatusOr<LoadedScenario> s = LoadScenarioFile(
      std::string(TPUSIM_SOURCE_DIR) + "/scenarios/run/" + name + ".textproto",
      sets);
  if (!s.ok()) return s.status();
  return CompileStepForTpu(*s, {});
}

// quickstart: the mlp (64 -> 256 -> ...) on v3-8, 8 replicas of 32 examples.
TEST(XlaTpuStepTest, QuickstartOnV3) {
  auto step = Compile("quickstart");
  ASSERT_THAT(step.status(), IsOk());
  EXPECT_EQ(step->topology, "v3:2x2");
  EXPECT_EQ(step->program_name, "mlp_train_step");
  EXPECT_EQ(step->num_replicas, 8);
  EXPECT_EQ(step->compiled.device_assignment,
            (std::vector<std::vector<int64_t>>{
                {0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}));
  // The compiler's per-device memory (libtpu 0.0.30).
  const auto& m = step->compiled.memory;
  EXPECT_EQ(m.arguments, 87040);
  EXPECT_EQ(m.outputs, 71680);
  EXPECT_EQ(m.alias, 69632);
  EXPECT_EQ(m.temporaries, 445440);
  // tpusim's split of the arguments (the compiler's are tile-padded): the
  // per-replica batch and the variables.
  EXPECT_EQ(step->input_argument_bytes, 8320);
  EXPECT_EQ(step->variable_argument_bytes, 67588);
  EXPECT_EQ(step->hbm_capacity_per_device, int64_t{16} << 30);
  // The schedule: 21 kernels, 10 fusions, one all-reduce of the gradients
  // over all 8 replicas, synchronous (as XLA:TPU placed it).
  const auto& s = step->schedule;
  EXPECT_TRUE(s.from_module_schedule);
  EXPECT_EQ(s.kernels.size(), 21u);
  EXPECT_EQ(s.num_fusions, 10);
  int collectives = 0;
  for (const auto& k : s.kernels) {
    if (k.kind != sim::xla::HloKernelKind::kCollective) continue;
    ++collectives;
    EXPECT_EQ(k.collective, "all-reduce");
    EXPECT_EQ(k.collective_bytes, 69632);
    EXPECT_THAT(k.replica_groups,
                ElementsAre(ElementsAre(0, 1, 2, 3, 4, 5, 6, 7)));
  }
  EXPECT_EQ(collectives, 1);
}

TEST(XlaTpuStepTest, SliceOverrideChangesTheTopology) {
  auto step = Compile("quickstart", {"cluster.slice=v5litepod-4"});
  ASSERT_THAT(step.status(), IsOk());
  EXPECT_EQ(step->topology, "v5e:2x2");
  EXPECT_EQ(step->num_replicas, 4);
}

TEST(XlaTpuStepTest, OversubscribedStepIsTheCompilersError) {
  EXPECT_THAT(Compile("hbm_oversubscribed").status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("Ran out of memory in memory space hbm. Used "
                                 "41.30G of 15.75G hbm.")));
}

}  // namespace
}  // namespace tpusim::scenarios
