// Validation of the pod model against published measurements and the sheet's
// analytical step model (shared/spec/tpu-hardware-reference.md, sections B and
// C), through the cases in sim/validation.h (the same ones `tpusim validate`
// prints). Each TEST is its own process (one SystemC kernel per process).

#include "sim/validation.h"

#include <cstdio>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "sim/chip/chip_preset.h"
#include "sim/chip/kernel_timing.h"

namespace tpusim::sim {
namespace {

using ::tpusim::testing::IsOk;

// Sheet B.6: each v2 core multiplies its [8,1024,8192] batch shard by its
// [8192,16384] column half: 2*8192*8192*16384 FLOPs, which at the v2 core's
// 22.9 TFLOP/s (MXU identity, sheet A.2) is 96.0 ms; measured 96 ms. The MXU
// must run at >= 90% of peak and never above it.
TEST(ValidationTest, B6V2FfwMatmulIsWithinTenPercentOf96Ms) {
  absl::StatusOr<double> seconds = B6FfwMatmulSeconds();
  ASSERT_THAT(seconds, IsOk());
  EXPECT_NEAR(*seconds, 0.096, 0.0096);
  const double peak =
      DeviceRates::FromPreset(*FindChipPreset("v2").value()).peak_flops_per_second;
  const double flops = 2.0 * 8192 * 8192 * 16384;
  EXPECT_GE(flops / *seconds, 0.9 * peak);
  EXPECT_LE(flops / *seconds, peak);
  std::printf("B.6 v2-8 FFW matmul: %.3f ms (measured 96 ms, %+.1f%%)\n",
              *seconds * 1e3, 100 * (*seconds / 0.096 - 1));
}

// Sheet C.4: step ~ sum over kernels of max(compute, HBM) + the exposed part
// of the gradient all-reduce + infeed stalls, the exposed part from the
// simulated schedule; within 10%. What differs are the mechanisms the model
// names: MXU tile padding and fill/drain (the C.4 compute is FLOPs / peak) and
// the per-kernel issue overhead.
void CheckC4(const char* slice) {
  absl::StatusOr<C4Result> r = C4DataParallelStep(slice);
  ASSERT_THAT(r, IsOk());
  EXPECT_NEAR(r->simulated / r->model, 1.0, 0.10)
      << slice << ": simulated " << r->simulated << " s, C.4 " << r->model;
  // The gradient all-reduces overlap the backward pass: some is hidden.
  EXPECT_GT(r->hidden_collective, 0);
  std::printf("C.4 %s: simulated %.3f ms, model %.3f ms (%+.1f%%), exposed "
              "%.3f ms, hidden %.3f ms\n",
              slice, r->simulated * 1e3, r->model * 1e3,
              100 * (r->simulated / r->model - 1), r->exposed_collective * 1e3,
              r->hidden_collective * 1e3);
}

TEST(ValidationTest, C4DataParallelStepOnV3_32) { CheckC4("v3-32"); }
TEST(ValidationTest, C4DataParallelStepOnV4_32) { CheckC4("v4-32"); }

}  // namespace
}  // namespace tpusim::sim
