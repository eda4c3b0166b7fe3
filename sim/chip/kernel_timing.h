// sim/chip/kernel_timing.h
//
// How long one kernel takes on one TensorCore device: the MXU tile schedule
// (sheet C.2), the vector unit, and HBM traffic (sheet C.1), from a chip
// preset. Pure arithmetic, no SystemC: the pod's device model calls it for
// every kernel it runs, and the validation tests check it formula by formula.
//
//   DeviceRates rates = DeviceRates::FromPreset(*FindChipPreset("v4").value());
//   KernelWork w;
//   w.matmuls.push_back({/*batch=*/1, /*m=*/8192, /*k=*/8192, /*n=*/8192,
//                        runtime::DType::kBF16, Precision::kDefault});
//   w.hbm_bytes = 3 * 8192 * 8192 * 2;
//   KernelTime t = KernelDuration(rates, w, rates.hbm_bytes_per_second);
//
// The model (tpusim's, after sheet C.2):
// * MXU, weight-stationary: a dot [B x M x K] x [B x K x N] loads
//   T = B * ceil(K/n) * ceil(N/n) weight tiles of n x n (every dimension padded
//   to the tile); the device's m MXUs take tiles in rounds of m, and each round
//   streams the M rows through the array: M + 2n - 2 cycles from the first row
//   in to the last result out (fill and drain once per weight-tile change; the
//   weight load itself is double-buffered behind the previous round, as
//   TPUv1's weight FIFO does). cycles = ceil(T/m) * (M + 2n - 2).
// * Passes: bf16 (and integer) operands take one pass. f32 takes the passes
//   its precision asks for: DEFAULT 1 (one bf16 pass, what TPUs do), HIGH 3
//   (bf16_3x), HIGHEST 6 (bf16_6x), as XLA's TPU backend decomposes f32 dots.
// * conv2d is an implicit GEMM: M = N*Ho*Wo, K = Kh*Kw*Cin, N = Cout.
// * Vector unit: lanes x sublanes elements per cycle per TensorCore;
//   transcendentals run at one lane row (lanes elements) per cycle (tpusim
//   choice: the sheet gives no EUP rate).
// * A kernel takes max(MXU time, vector time, HBM bytes / HBM share) plus the
//   preset's fixed issue overhead.

#ifndef TPUSIM_SIM_CHIP_KERNEL_TIMING_H_
#define TPUSIM_SIM_CHIP_KERNEL_TIMING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/units.h"
#include "sim/chip/chip_preset.h"
#include "strategy/runtime/tensor.h"

namespace tpusim::sim {

// XLA's PrecisionConfig for f32 dots and convolutions.
enum class Precision { kDefault, kHigh, kHighest };

// MXU passes for operands of `dtype` at `precision` (see the file comment).
int MxuPasses(runtime::DType dtype, Precision precision);

struct MatmulWork {
  int64_t batch = 1;  // dot batch dimensions (both operands)
  int64_t m = 0;      // streamed rows: the lhs's free dimensions
  int64_t k = 0;      // contracted size
  int64_t n = 0;      // the rhs's free dimensions
  runtime::DType dtype = runtime::DType::kBF16;
  Precision precision = Precision::kDefault;
};

// What a kernel asks of one device.
struct KernelWork {
  std::vector<MatmulWork> matmuls;
  int64_t vector_elements = 0;         // element operations on the VPU
  int64_t transcendental_elements = 0;  // exp, log, tanh, ... on the EUP
  int64_t hbm_bytes = 0;               // read + written
};

// The rates of one device (a TensorCore, or both cores of a megacore chip).
struct DeviceRates {
  std::string generation;
  int cores = 1;           // TensorCores in the device
  int mxus = 1;            // MXUs in the device (cores x per core)
  int tile = 128;          // n: the MXU is n x n
  double clock_hz = 1e9;
  int64_t vector_elements_per_cycle = 1024;  // lanes x sublanes x cores
  int64_t transcendentals_per_cycle = 128;   // lanes x cores
  double hbm_bytes_per_second = 1e12;        // the device's share of the chip
  common::Bytes hbm_capacity = common::Bytes(0);  // the device's
  common::Picoseconds issue_overhead;
  // cores x MXUs x 2 n^2 x clock: the MXU identity (sheet A).
  double peak_flops_per_second = 0;

  static DeviceRates FromPreset(const ChipPreset& preset);
};

struct KernelTime {
  common::Picoseconds mxu;
  common::Picoseconds vector;
  common::Picoseconds memory;  // HBM bytes at the share it had
  common::Picoseconds total;   // max of the three + issue overhead
  // "mxu", "vector" or "memory": which bound the kernel.
  const char* category = "vector";
  int64_t mxu_cycles = 0;
};

// MXU cycles of one matmul (the tile formula, times the passes).
int64_t MatmulCycles(const DeviceRates& rates, const MatmulWork& w);

// The kernel's time when it gets `hbm_bytes_per_second` of HBM bandwidth
// (its share while DMA traffic overlaps it; <= the device's rate).
KernelTime KernelDuration(const DeviceRates& rates, const KernelWork& work,
                          double hbm_bytes_per_second);
// The kernel's time when its HBM traffic takes `memory` (what the device's
// HBM arbitration gave it: sim/chip/chip.h).
KernelTime KernelDurationWithMemoryTime(const DeviceRates& rates,
                                        const KernelWork& work,
                                        common::Picoseconds memory);
// Its roofline: the larger of its FLOPs at the device's peak and its HBM
// bytes at the device's full rate (no kernel may take less).
common::Picoseconds KernelRoofline(const DeviceRates& rates,
                                   const KernelWork& work);

// Picoseconds to do `units` of work at `rate` per second, rounded up.
common::Picoseconds TimeAtRate(double units, double rate_per_second);

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_CHIP_KERNEL_TIMING_H_
