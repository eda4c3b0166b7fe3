// Kernel timing on one device, formula by formula (sheet C.1, C.2), and the
// roofline property: no kernel beats max(FLOPs / peak, bytes / HBM BW).

#include "sim/chip/kernel_timing.h"

#include <random>

#include "gtest/gtest.h"

namespace tpusim::sim {
namespace {

using runtime::DType;

DeviceRates Rates(const char* name) {
  return DeviceRates::FromPreset(*FindChipPreset(name).value());
}

TEST(KernelTimingTest, DeviceRatesSplitChipsIntoDevices) {
  const DeviceRates v3 = Rates("v3");  // two devices per chip, one core each
  EXPECT_EQ(v3.cores, 1);
  EXPECT_EQ(v3.mxus, 2);
  EXPECT_DOUBLE_EQ(v3.hbm_bytes_per_second, 450e9);
  EXPECT_EQ(v3.hbm_capacity.count(), int64_t{16} << 30);
  const DeviceRates v4 = Rates("v4");  // megacore: the device is the chip
  EXPECT_EQ(v4.cores, 2);
  EXPECT_EQ(v4.mxus, 8);
  EXPECT_DOUBLE_EQ(v4.hbm_bytes_per_second, 1200e9);
  EXPECT_DOUBLE_EQ(v4.peak_flops_per_second, 8 * 2.0 * 128 * 128 * 1.05e9);
  EXPECT_EQ(Rates("v6e").tile, 256);
}

// cycles = ceil(T/m) * (M + 2n - 2), T = ceil(K/n) * ceil(N/n).
TEST(KernelTimingTest, MatmulTakesExactlyTheTileFormula) {
  const DeviceRates v4 = Rates("v4");  // m = 8, n = 128
  // K = 300 -> 3 tiles, N = 1000 -> 8 tiles: T = 24, ceil(24/8) = 3 rounds of
  // 512 + 254 cycles.
  MatmulWork w{1, 512, 300, 1000, DType::kBF16, Precision::kDefault};
  EXPECT_EQ(MatmulCycles(v4, w), 3 * (512 + 2 * 128 - 2));
  // Batch dimensions multiply the weight tiles: 5 * 24 = 120 -> 15 rounds.
  w.batch = 5;
  EXPECT_EQ(MatmulCycles(v4, w), 15 * (512 + 254));
  // f32 passes: DEFAULT 1, HIGH 3, HIGHEST 6.
  w.batch = 1;
  w.dtype = DType::kF32;
  EXPECT_EQ(MatmulCycles(v4, w), 3 * 766);
  w.precision = Precision::kHigh;
  EXPECT_EQ(MatmulCycles(v4, w), 3 * 3 * 766);
  w.precision = Precision::kHighest;
  EXPECT_EQ(MatmulCycles(v4, w), 6 * 3 * 766);
  // v6e tiles are 256 wide and it has 2 MXUs: T = 2 * 4 = 8 -> 4 rounds.
  const DeviceRates v6e = Rates("v6e");
  MatmulWork w6{1, 100, 300, 1000, DType::kBF16, Precision::kDefault};
  EXPECT_EQ(MatmulCycles(v6e, w6), 4 * (100 + 2 * 256 - 2));
  // Time = cycles / clock (rounded up to the picosecond), plus the overhead.
  KernelWork k;
  k.matmuls.push_back(MatmulWork{1, 512, 300, 1000, DType::kBF16,
                                 Precision::kDefault});
  const KernelTime t = KernelDuration(v4, k, v4.hbm_bytes_per_second);
  EXPECT_EQ(t.mxu_cycles, 3 * 766);
  EXPECT_EQ(t.mxu.count(), 2188572);  // ceil(2298 / 1.05e9 s in ps)
  EXPECT_EQ(t.total, t.mxu + v4.issue_overhead);
  EXPECT_STREQ(t.category, "mxu");
}

TEST(KernelTimingTest, LargeBf16MatmulNearsButNeverExceedsPeak) {
  for (const char* gen : {"v2", "v3", "v4", "v5e", "v5p", "v6e"}) {
    const DeviceRates r = Rates(gen);
    KernelWork k;
    k.matmuls.push_back(
        MatmulWork{1, 8192, 8192, 8192, DType::kBF16, Precision::kDefault});
    k.hbm_bytes = 3 * int64_t{8192} * 8192 * 2;
    const KernelTime t = KernelDuration(r, k, r.hbm_bytes_per_second);
    const double flops = 2.0 * 8192 * 8192 * 8192;
    const double achieved = flops / t.total.seconds();
    EXPECT_GE(achieved, 0.9 * r.peak_flops_per_second) << gen;
    EXPECT_LE(achieved, r.peak_flops_per_second) << gen;
  }
}

TEST(KernelTimingTest, ElementwiseOpIsHbmBoundAndNeverBeatsHbm) {
  const DeviceRates v4 = Rates("v4");
  KernelWork k;  // add of two f32[64M] into a third: 12 bytes per element
  k.vector_elements = int64_t{64} << 20;
  k.hbm_bytes = 12 * (int64_t{64} << 20);
  const KernelTime t = KernelDuration(v4, k, v4.hbm_bytes_per_second);
  EXPECT_STREQ(t.category, "memory");
  const double bw = static_cast<double>(k.hbm_bytes) / t.total.seconds();
  EXPECT_LE(bw, v4.hbm_bytes_per_second);
  EXPECT_GE(bw, 0.99 * v4.hbm_bytes_per_second);
  // With half the bandwidth (DMA overlapping) it takes twice as long.
  const KernelTime half = KernelDuration(v4, k, v4.hbm_bytes_per_second / 2);
  EXPECT_NEAR(half.memory.seconds(), 2 * t.memory.seconds(), 1e-12);
}

TEST(KernelTimingTest, TranscendentalsCostMoreThanPlainVectorOps) {
  const DeviceRates v5e = Rates("v5e");
  KernelWork plain;
  plain.vector_elements = 1 << 20;
  KernelWork exp = plain;
  exp.transcendental_elements = 1 << 20;
  EXPECT_LT(KernelDuration(v5e, plain, 1e18).vector,
            KernelDuration(v5e, exp, 1e18).vector);
}

// Property: over random shapes, dtypes and precisions, no kernel beats
// max(FLOPs / peak, HBM bytes / HBM bandwidth) (sheet C.1, D).
TEST(KernelTimingTest, NoKernelBeatsTheRoofline) {
  std::mt19937_64 rng(1234);
  const DType dtypes[] = {DType::kBF16, DType::kF32, DType::kI32};
  const Precision precisions[] = {Precision::kDefault, Precision::kHigh,
                                  Precision::kHighest};
  for (const char* gen : {"v2", "v3", "v4", "v5e", "v5p", "v6e"}) {
    const DeviceRates r = Rates(gen);
    for (int i = 0; i < 2000; ++i) {
      auto dim = [&]() {
        return int64_t{1} << std::uniform_int_distribution<int>(0, 13)(rng);
      };
      KernelWork k;
      const int matmuls = std::uniform_int_distribution<int>(0, 2)(rng);
      double flops = 0;
      for (int j = 0; j < matmuls; ++j) {
        MatmulWork m{std::uniform_int_distribution<int64_t>(1, 4)(rng),
                     dim() + std::uniform_int_distribution<int64_t>(0, 200)(rng),
                     dim(), dim(), dtypes[rng() % 3], precisions[rng() % 3]};
        flops += 2.0 * m.batch * m.m * m.k * m.n;
        k.matmuls.push_back(m);
      }
      k.vector_elements = dim() * dim();
      k.hbm_bytes = dim() * dim() * 4;
      const double share =
          r.hbm_bytes_per_second /
          std::uniform_int_distribution<int>(1, 4)(rng);
      const KernelTime t = KernelDuration(r, k, share);
      const double bound =
          std::max(flops / r.peak_flops_per_second,
                   static_cast<double>(k.hbm_bytes) / r.hbm_bytes_per_second);
      ASSERT_GE(t.total.seconds() * (1 + 1e-12), bound) << gen << " " << i;
    }
  }
}

}  // namespace
}  // namespace tpusim::sim
