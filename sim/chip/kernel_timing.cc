#include "sim/chip/kernel_timing.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"
#include "sim/chip/model_constants.h"

namespace tpusim::sim {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return a == 0 ? 0 : (a - 1) / b + 1; }

}  // namespace

int MxuPasses(runtime::DType dtype, Precision precision) {
  if (dtype != runtime::DType::kF32) return 1;
  switch (precision) {
    case Precision::kDefault:
      return 1;  // one bf16 pass: XLA:TPU's DEFAULT for f32
    case Precision::kHigh:
      return 3;  // bf16_3x
    case Precision::kHighest:
      return 6;  // bf16_6x
  }
  return 1;
}

DeviceRates DeviceRates::FromPreset(const ChipPreset& preset) {
  const runtime::TpuGeneration& g = *preset.generation;
  DeviceRates r;
  r.generation = g.name;
  // A device is one TensorCore on v2/v3 (two devices per chip) and the whole
  // chip on megacore and single-core generations.
  r.cores = g.cores_per_chip / g.devices_per_chip;
  r.mxus = r.cores * preset.mxus_per_core;
  r.tile = preset.mxu_dim;
  r.clock_hz = preset.clock_ghz * 1e9;
  // Each lane/sublane pair has vpu_alus_per_lane ALUs (sheet A.4, A.6).
  // (A fraction of an ALU only under `validate --sensitivity`.)
  r.vector_elements_per_cycle = std::max<int64_t>(
      1, std::llround(preset.vpu_lanes * preset.vpu_sublanes *
                      preset.vpu_alus_per_lane * r.cores));
  r.transcendentals_per_cycle = static_cast<int64_t>(preset.vpu_lanes) * r.cores;
  // HBM is split evenly between the devices of a chip (v2/v3: each core has
  // its own half, sheet A.2/A.3), at the achievable fraction of the peak
  // (model_constants.h hbm_achievable_fraction: chosen, not in the sheet).
  r.hbm_bytes_per_second = preset.hbm_gbps * 1e9 / g.devices_per_chip *
                           ModelConstantValue("hbm_achievable_fraction");
  r.hbm_capacity =
      common::Bytes(preset.hbm_capacity.count() / g.devices_per_chip);
  // model_constants.h kernel_issue_overhead (chosen: the sheet has none).
  r.issue_overhead = ModelConstantTime("kernel_issue_overhead");
  r.peak_flops_per_second =
      static_cast<double>(r.mxus) * 2.0 * r.tile * r.tile * r.clock_hz;
  return r;
}

common::Picoseconds TimeAtRate(double units, double rate_per_second) {
  if (units <= 0) return common::Picoseconds(0);
  TPUSIM_CHECK(rate_per_second > 0) << rate_per_second;
  // Rounded up, except that a result within a relative 1e-9 of an integer is
  // that integer (so exact ratios such as 2^24 bytes at 16 GB/s are not
  // pushed up by the floating-point division).
  const double ps = units / rate_per_second * 1e12;
  const double nearest = std::round(ps);
  if (std::abs(ps - nearest) <= 1e-9 * std::max(1.0, ps)) {
    return common::Picoseconds(static_cast<int64_t>(nearest));
  }
  return common::Picoseconds(static_cast<int64_t>(std::ceil(ps)));
}

int64_t MatmulCycles(const DeviceRates& rates, const MatmulWork& w) {
  if (w.batch <= 0 || w.m <= 0 || w.k <= 0 || w.n <= 0) return 0;
  const int64_t n = rates.tile;
  const int64_t tiles = w.batch * CeilDiv(w.k, n) * CeilDiv(w.n, n);
  const int64_t rounds = CeilDiv(tiles, rates.mxus);
  return rounds * (w.m + 2 * n - 2) * MxuPasses(w.dtype, w.precision);
}

KernelTime KernelDuration(const DeviceRates& rates, const KernelWork& work,
                          double hbm_bytes_per_second) {
  const double share = std::min(hbm_bytes_per_second, rates.hbm_bytes_per_second);
  return KernelDurationWithMemoryTime(
      rates, work, TimeAtRate(static_cast<double>(work.hbm_bytes), share));
}

KernelTime KernelDurationWithMemoryTime(const DeviceRates& rates,
                                        const KernelWork& work,
                                        common::Picoseconds memory) {
  KernelTime t;
  int64_t cycles = 0;
  for (const MatmulWork& m : work.matmuls) cycles += MatmulCycles(rates, m);
  t.mxu_cycles = cycles;
  t.mxu = TimeAtRate(static_cast<double>(cycles), rates.clock_hz);
  const double vector_cycles =
      std::ceil(static_cast<double>(work.vector_elements) /
                static_cast<double>(rates.vector_elements_per_cycle)) +
      std::ceil(static_cast<double>(work.transcendental_elements) /
                static_cast<double>(rates.transcendentals_per_cycle));
  t.vector = TimeAtRate(vector_cycles, rates.clock_hz);
  t.memory = memory;
  common::Picoseconds longest = t.vector;
  t.category = "vector";
  if (longest < t.mxu) {
    longest = t.mxu;
    t.category = "mxu";
  }
  if (longest < t.memory) {
    longest = t.memory;
    t.category = "memory";
  }
  t.total = longest + rates.issue_overhead;
  return t;
}

common::Picoseconds KernelRoofline(const DeviceRates& rates,
                                   const KernelWork& work) {
  double flops = 0;
  for (const MatmulWork& m : work.matmuls) {
    flops += 2.0 * static_cast<double>(m.batch) * static_cast<double>(m.m) *
             static_cast<double>(m.k) * static_cast<double>(m.n);
  }
  // Rounded down: a bound, not a duration.
  const double ps = std::max(flops / rates.peak_flops_per_second,
                             static_cast<double>(work.hbm_bytes) /
                                 rates.hbm_bytes_per_second) *
                    1e12;
  return common::Picoseconds(static_cast<int64_t>(std::floor(ps)));
}

}  // namespace tpusim::sim
