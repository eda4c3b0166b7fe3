// HbmArbiter: one device's HBM as a timeline of reservations, first reserved
// first served, never more than the device's rate at any instant.

#include "sim/chip/chip.h"

#include "gtest/gtest.h"

namespace tpusim::sim {
namespace {

using common::Picoseconds;

constexpr double kRate = 1e12;  // 1 byte per picosecond

TEST(HbmArbiterTest, AloneAReservationMovesAtItsLimit) {
  HbmArbiter hbm(kRate);
  EXPECT_EQ(hbm.Reserve(Picoseconds(0), 1000, kRate).count(), 1000);
  EXPECT_EQ(hbm.Reserve(Picoseconds(5000), 1000, kRate / 4).count(), 9000);
  // A limit above the device's rate is the device's rate.
  EXPECT_EQ(hbm.Reserve(Picoseconds(20000), 1000, 8 * kRate).count(), 21000);
  EXPECT_EQ(hbm.Reserve(Picoseconds(30000), 0, kRate).count(), 30000);
  EXPECT_DOUBLE_EQ(hbm.bytes(), 3000);
}

// A kernel takes the whole rate over [0, 1000); a DMA that wants half from
// 500 gets nothing until 1000, then half: 300 bytes end at 1600. A second
// kernel from 1200 gets the half the DMA leaves until 1600 (200 bytes), then
// all of it: its other 800 bytes end at 2400.
TEST(HbmArbiterTest, LaterReservationsTakeWhatEarlierOnesLeave) {
  HbmArbiter hbm(kRate);
  EXPECT_EQ(hbm.Reserve(Picoseconds(0), 1000, kRate).count(), 1000);
  EXPECT_EQ(hbm.Reserve(Picoseconds(500), 300, kRate / 2).count(), 1600);
  EXPECT_EQ(hbm.Reserve(Picoseconds(1200), 1000, kRate).count(), 2400);
  EXPECT_DOUBLE_EQ(hbm.PeakUse(), kRate);
}

// Overload: three DMAs of 600 bytes each want 0.6 of the rate from 0. The
// first gets it (ends at 1000); the second gets the 0.4 left until 1000 (400
// bytes), then 0.6: its last 200 bytes take 334 ps (rounded up) and end at
// 1334; the third gets nothing until 1000, 0.4 until 1334 (133.6 bytes),
// then 0.6 for its 466.4 bytes: 778 ps, ending at 2112. The sum never
// exceeds the rate: 1800 bytes by 2112 ps.
TEST(HbmArbiterTest, AnOverloadIsSharedExactlyAndConserved) {
  HbmArbiter hbm(kRate);
  EXPECT_EQ(hbm.Reserve(Picoseconds(0), 600, 0.6 * kRate).count(), 1000);
  EXPECT_EQ(hbm.Reserve(Picoseconds(0), 600, 0.6 * kRate).count(), 1334);
  EXPECT_EQ(hbm.Reserve(Picoseconds(0), 600, 0.6 * kRate).count(), 2112);
  EXPECT_LE(hbm.PeakUse(), kRate);
  EXPECT_LE(hbm.bytes(), kRate * 2112e-12);
  EXPECT_EQ(hbm.last_end().count(), 2112);
}

// What is forgotten is gone: a reservation that starts before the horizon
// is counted (the invariant check reports it) and runs from the horizon.
TEST(HbmArbiterTest, AReservationBeforeTheHorizonIsAViolation) {
  HbmArbiter hbm(kRate);
  EXPECT_EQ(hbm.Reserve(Picoseconds(0), 1000, kRate).count(), 1000);
  hbm.Forget(Picoseconds(2000));
  EXPECT_EQ(hbm.violations().count, 0);
  EXPECT_EQ(hbm.Reserve(Picoseconds(1500), 100, kRate).count(), 2100);
  EXPECT_EQ(hbm.violations().count, 1);
  EXPECT_EQ(hbm.violations().start.count(), 1500);
  EXPECT_EQ(hbm.violations().horizon.count(), 2000);
}

// Forgetting changes no reservation after the horizon: a timeline that
// forgets behind every reservation gives the same ends as one that keeps
// everything (a kernel every 1000 ps, DMA beside it at staggered rates:
// 60 % of the bandwidth in all),
// and what it keeps stays bounded while the other grows.
TEST(HbmArbiterTest, ForgettingBehindTheReservationsChangesNoEnd) {
  HbmArbiter kept(kRate), forgetting(kRate);
  for (int i = 0; i < 2000; ++i) {
    const Picoseconds start(i * 1000);
    const double rate = kRate * (1 + i % 3) / 4;
    forgetting.Forget(start);
    EXPECT_EQ(forgetting.horizon(), start);
    EXPECT_EQ(kept.Reserve(start, 400, kRate, HbmArbiter::kKernels),
              forgetting.Reserve(start, 400, kRate, HbmArbiter::kKernels))
        << i;
    EXPECT_EQ(kept.Reserve(start + Picoseconds(300), 200, rate),
              forgetting.Reserve(start + Picoseconds(300), 200, rate))
        << i;
  }
  EXPECT_EQ(forgetting.violations().count, 0);
  EXPECT_GT(kept.breakpoints(), 4000u);
  EXPECT_LT(forgetting.breakpoints(), 100u);
}

// The kernel of a chip takes its HBM bytes from the timeline: beside DMA
// that holds the whole rate it waits, with no floor.
TEST(ChipModelTest, AKernelBesideFullDmaWaitsForIt) {
  DeviceRates rates;
  rates.hbm_bytes_per_second = kRate;
  rates.peak_flops_per_second = 1e15;
  rates.issue_overhead = Picoseconds(0);
  ChipModel chip(rates, {0});
  chip.hbm(0).Reserve(Picoseconds(0), 5000, kRate);  // [0, 5000) full
  KernelWork work;
  work.hbm_bytes = 1000;
  const KernelTime t = chip.RunKernel(0, work, Picoseconds(1000));
  EXPECT_EQ(t.memory.count(), 5000);  // 4000 waiting, 1000 moving
  EXPECT_EQ(t.total.count(), 5000);
  EXPECT_STREQ(t.category, "memory");
  EXPECT_EQ(chip.roofline_violations(), 0);
}

}  // namespace
}  // namespace tpusim::sim
