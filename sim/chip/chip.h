// sim/chip/chip.h
//
// A chip of the simulated pod as the timing walk sees it: its devices (the
// two TensorCores of a v2/v3 chip, the one megacore device of v4 and later),
// each with its HBM (the DMA in flight over it and what that leaves a kernel)
// and its counters. SimBackend (sim/sim_backend.h) hands a chip the kernels
// of its devices; chips meet only through sim/net's messages, so a chip's
// work touches its own state only (the seam along which a pod can later be
// split across processes).
//
//   ChipModel chip(rates, /*devices=*/{6, 7});
//   chip.hbm(0).AddDma({start, end, bytes_per_second});
//   KernelTime t = chip.RunKernel(/*core=*/0, kernel.work, ready);

#ifndef TPUSIM_SIM_CHIP_CHIP_H_
#define TPUSIM_SIM_CHIP_CHIP_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/units.h"
#include "sim/chip/kernel_timing.h"

namespace tpusim::sim {

// DMA into or out of one device's HBM over [start, end) at `rate` bytes per
// second.
struct DmaWindow {
  common::Picoseconds start;
  common::Picoseconds end;
  double rate;
};

// One device's HBM bandwidth, shared between its kernels and the DMA that
// overlaps them (a collective's: what it sends is read from HBM, what it
// receives written; the infeed's: a batch crossing PCIe is written into HBM).
// A kernel gets what the DMA leaves, and never less than half the rate
// (tpusim's arbitration choice: a fair share when both want more than half).
class HbmArbiter {
 public:
  explicit HbmArbiter(double bytes_per_second)
      : bytes_per_second_(bytes_per_second) {}

  void AddDma(const DmaWindow& window) { windows_.push_back(window); }
  // Forgets the windows over by `t` (no kernel starting at t or later
  // overlaps them).
  void DropEndedBy(common::Picoseconds t);
  // The rate a kernel that moves `bytes` from `ready` on gets on average:
  // at each moment what the windows in flight leave (at least half the
  // rate), the full rate after them.
  double Share(double bytes, common::Picoseconds ready) const {
    return Share(bytes, ready, windows_, bytes_per_second_);
  }
  static double Share(double bytes, common::Picoseconds ready,
                      absl::Span<const DmaWindow> windows,
                      double bytes_per_second);

 private:
  double bytes_per_second_;
  std::vector<DmaWindow> windows_;  // not yet known to be over
};

// The device span categories (runtime::TimelineSpan::category), in the order
// of DeviceCounters::category_ps.
inline constexpr int kNumSpanCategories = 7;
inline constexpr const char* kSpanCategories[kNumSpanCategories] = {
    "mxu", "vector", "memory", "collective", "infeed", "input", "host"};
// The index of `category` in kSpanCategories (CHECKs that it is one).
int SpanCategoryIndex(const char* category);

// A device's timing counters since the last reset.
struct DeviceCounters {
  int64_t mxu_busy_ps = 0;
  int64_t busy_ps = 0;
  int64_t hbm_bytes = 0;
  int64_t peak_hbm_bytes = 0;
  // What peak_hbm_bytes is made of (sim/compile's CoreMemory of the program
  // that reached it): model weights, optimizer state, the step's arguments,
  // prefetched infeed batches, constants, and the live values at the
  // schedule's peak (activations and temporaries).
  struct HbmSplit {
    int64_t weights = 0;
    int64_t optimizer_state = 0;
    int64_t arguments = 0;
    int64_t infeed = 0;
    int64_t constants = 0;
    int64_t live_peak = 0;
  } peak_hbm_split;
  // The time of the device's spans per category (kSpanCategories order).
  std::array<int64_t, kNumSpanCategories> category_ps = {};
};

class ChipModel {
 public:
  // `devices`: the global ids of the chip's devices, in core order; every
  // device has `rates` (sim/chip/kernel_timing.h: its share of the chip).
  ChipModel(const DeviceRates& rates, std::vector<int> devices);

  int num_cores() const { return static_cast<int>(devices_.size()); }
  int device(int core) const { return devices_[core]; }

  // Times a kernel of `work` on `core` that may start at `ready`: its HBM
  // traffic shares the bandwidth with the DMA in flight (HbmArbiter); counts
  // its busy time and bytes. Windows over by `ready` are forgotten.
  KernelTime RunKernel(int core, const KernelWork& work,
                       common::Picoseconds ready);

  HbmArbiter& hbm(int core) { return hbm_[core]; }
  DeviceCounters& counters(int core) { return counters_[core]; }
  const DeviceCounters& counters(int core) const { return counters_[core]; }
  void ResetCounters();

 private:
  DeviceRates rates_;
  std::vector<int> devices_;
  std::vector<HbmArbiter> hbm_;
  std::vector<DeviceCounters> counters_;
};

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_CHIP_CHIP_H_
