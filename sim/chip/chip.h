// sim/chip/chip.h
//
// A chip of the simulated pod as the timing walk sees it: its devices (the
// two TensorCores of a v2/v3 chip, the one megacore device of v4 and later),
// each with its HBM (one timeline of reservations shared by its kernels,
// infeed DMA and collective DMA) and its counters. SimBackend (sim/sim_backend.h) hands a chip the kernels
// of its devices; chips meet only through sim/net's messages, so a chip's
// work touches its own state only (the seam along which a pod can later be
// split across processes).
//
//   ChipModel chip(rates, /*devices=*/{6, 7});
//   chip.hbm(0).Reserve(dma_start, bytes, pcie_bytes_per_second);
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

// One device's HBM bandwidth as a timeline of reservations: what its kernels
// (the walk, in program order) and its collectives' DMA (each chunk a
// collective sends is read from HBM; each it receives is written, and read
// too when it is reduced) move. The infeed DMA has its own share, the PCIe
// rate, kept out of the timeline's rate (ChipModel): a batch crossing PCIe
// is written into HBM at that rate at most, so it never waits and never
// takes from the others, whenever it is timed.
//
// Arbitration (tpusim's choice): first reserved, first served. A reservation
// moves its bytes from its start at up to its own rate limit, taking at each
// moment what the earlier reservations leave; it ends when its last byte has
// moved. So at every instant the reservations use at most the device's HBM
// rate (conservation by construction), whatever order they come in, and a
// DMA or a kernel that shares is slowed rather than the bandwidth exceeded.
// There is no floor: a kernel that overlaps DMA taking the whole rate waits.
//
// The timeline before `horizon` is forgotten (Forget); a reservation that
// starts before it is counted (violations()) and taken from the horizon on:
// the invariant check (SimBackend --check-invariants) reports it.
class HbmArbiter {
 public:
  explicit HbmArbiter(double bytes_per_second)
      : bytes_per_second_(bytes_per_second) {}

  double bytes_per_second() const { return bytes_per_second_; }
  // Who reserves: the device's kernels (which the walk reserves in time
  // order) or its DMA. The timeline keeps the two apart only so that each
  // list is appended to in time order (cheap); a reservation sees their sum.
  enum Lane { kKernels = 0, kDma = 1 };
  // Reserves `bytes` from `start` on at up to `max_rate` (capped at the
  // device's rate); returns when the last byte has moved (`start` for no
  // bytes).
  common::Picoseconds Reserve(common::Picoseconds start, double bytes,
                              double max_rate, Lane lane = kDma);
  // Forgets the timeline before `horizon` (no later reservation starts
  // earlier).
  void Forget(common::Picoseconds horizon);
  // Bytes reserved since construction, and the latest end of a reservation.
  double bytes() const { return bytes_; }
  common::Picoseconds last_end() const { return last_end_; }
  // The last Forget's horizon.
  common::Picoseconds horizon() const { return horizon_; }
  // Breakpoints kept (both lanes; those behind the horizon not yet dropped
  // included): the timeline's memory.
  size_t breakpoints() const { return steps_[0].size() + steps_[1].size(); }
  // The most bandwidth in use at any instant still on the timeline.
  double PeakUse() const;
  // Reservations that started before the horizon: their count and the first.
  struct Violation {
    int64_t count = 0;
    common::Picoseconds start;
    common::Picoseconds horizon;
  };
  const Violation& violations() const { return violations_; }

 private:
  double bytes_per_second_;
  // Breakpoints in time order: the rate in use from `at` to the next one;
  // none in use before the first and after the last (whose use is 0).
  struct Step {
    int64_t at;
    double used;
  };
  std::vector<Step> steps_[2];  // by Lane
  common::Picoseconds horizon_ = common::Picoseconds(0);
  double bytes_ = 0;
  common::Picoseconds last_end_ = common::Picoseconds(0);
  Violation violations_;
  struct Piece {
    int64_t from, to;
    double rate;
  };
  static size_t Split(std::vector<Step>& steps, int64_t t);
  std::vector<Piece> pieces_;  // Reserve's scratch

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

// Where one core of the chip is in the timing walk of a device call
// (SimBackend): its clock (when its last kernel ended), what it waited for,
// and its next kernel. The walk resets it at each call; only the core's own
// kernels move it.
struct CoreTimeline {
  common::Picoseconds clock;
  common::Picoseconds exposed;     // waiting for collectives to end
  common::Picoseconds infeed;      // waiting for a batch's PCIe transfer
  common::Picoseconds input;       // waiting for a batch's input pipeline
  common::Picoseconds collective;  // collectives started to their end
  size_t cursor = 0;               // its next kernel in program order
  bool waits_on_network = false;  // stopped on an end the network owes it
  void Reset(common::Picoseconds begin) {
    clock = begin;
    exposed = infeed = input = collective = common::Picoseconds(0);
    cursor = 0;
    waits_on_network = false;
  }
};

class ChipModel {
 public:
  // `devices`: the global ids of the chip's devices, in core order; every
  // device has `rates` (sim/chip/kernel_timing.h: its share of the chip).
  // `infeed_bytes_per_second`: the chip's PCIe rate, which each device's HBM
  // keeps for the infeed DMA (a batch crossing PCIe is written into HBM at
  // that rate at most): its kernels and collectives share the rest.
  ChipModel(const DeviceRates& rates, std::vector<int> devices,
            double infeed_bytes_per_second = 0);

  int num_cores() const { return static_cast<int>(devices_.size()); }
  int device(int core) const { return devices_[core]; }

  // Times a kernel of `work` on `core` that may start at `ready`: its HBM
  // bytes are reserved from `ready` on at the pace of its compute (bytes
  // over its MXU or vector time), at most the device's rate (HbmArbiter:
  // what the reservations before it leave); counts its busy
  // time and bytes, and a kernel below its roofline (KernelRoofline, an
  // invariant: roofline_violations()).
  KernelTime RunKernel(int core, const KernelWork& work,
                       common::Picoseconds ready);
  int64_t roofline_violations() const { return roofline_violations_; }

  HbmArbiter& hbm(int core) { return hbm_[core]; }
  CoreTimeline& timeline(int core) { return timelines_[core]; }
  DeviceCounters& counters(int core) { return counters_[core]; }
  const DeviceCounters& counters(int core) const { return counters_[core]; }
  void ResetCounters();

 private:
  DeviceRates rates_;
  std::vector<int> devices_;
  std::vector<HbmArbiter> hbm_;
  std::vector<CoreTimeline> timelines_;
  std::vector<DeviceCounters> counters_;
  int64_t roofline_violations_ = 0;
};

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_CHIP_CHIP_H_
