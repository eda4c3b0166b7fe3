// The host's input pipeline and PCIe infeed (sim/host/host_model.h), exact in
// picoseconds: threads share a batch's work, the in-order pipeline, prefetch
// depth as back-pressure, one DMA queue per link, and the split of a step's
// wait into input and infeed.

#include "sim/host/host_model.h"

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::sim {
namespace {

using common::Picoseconds;
using ::testing::HasSubstr;
using ::tpusim::testing::StatusIs;

Picoseconds Us(int64_t n) { return Picoseconds::FromMicroseconds(n); }

// 1e9 B/s: 1000 bytes take exactly 1 us.
HostOptions Options(int threads, int depth) {
  HostOptions o;
  o.threads = threads;
  o.prefetch_depth = depth;
  o.pcie_bytes_per_second = 1e9;
  return o;
}

TEST(HostModelTest, OneBatchGoesThroughThePipelineThenPcie) {
  HostModel host = HostModel::Create(Options(1, 2), {0}).value();
  // map: 2 us x 10 elements = 20 us of work; 1000 bytes = 1 us of PCIe.
  const StageCost stages[] = {{"map", Us(2), 10}, {"batch", Us(0), 10}};
  ASSERT_EQ(host.AddBatch(0, stages, 1000).value(), 0);
  BatchTiming t = host.Timing(0, 0).value();
  EXPECT_EQ(t.work, Us(20));
  EXPECT_EQ(t.produce_start, Us(0));
  EXPECT_EQ(t.produce_end, Us(20));
  EXPECT_EQ(t.dma_start, Us(20));
  EXPECT_EQ(t.arrival, Us(21));
  // The device was ready at 5 us: 15 us waiting for the host, 1 us for PCIe.
  Taken taken = host.Take(0, 0, Us(5)).value();
  EXPECT_EQ(taken.start, Us(21));
  EXPECT_EQ(taken.input_wait, Us(15));
  EXPECT_EQ(taken.infeed_wait, Us(1));
  // Ready after the batch arrived: no wait at all.
  ASSERT_EQ(host.AddBatch(0, Us(0), 0).value(), 1);
  taken = host.Take(0, 1, Us(100)).value();
  EXPECT_EQ(taken.start, Us(100));
  EXPECT_EQ(taken.input_wait, Us(0));
  EXPECT_EQ(taken.infeed_wait, Us(0));
  ASSERT_EQ(host.history().size(), 2u);
  EXPECT_EQ(host.history()[0].taken_at, Us(21));
}

TEST(HostModelTest, ThreadsShareABatchsWorkRoundedUp) {
  HostModel host = HostModel::Create(Options(4, 2), {0}).value();
  ASSERT_TRUE(host.AddBatch(0, Us(20), 0).ok());
  ASSERT_TRUE(host.AddBatch(0, Picoseconds(10), 0).ok());
  EXPECT_EQ(host.Timing(0, 0).value().produce_end, Us(5));
  // ceil(10 ps / 4) = 3 ps, after the first batch.
  EXPECT_EQ(host.Timing(0, 1).value().produce_end, Us(5) + Picoseconds(3));
}

TEST(HostModelTest, NotBeforeDelaysTheStart) {
  HostModel host = HostModel::Create(Options(1, 2), {0}).value();
  ASSERT_TRUE(host.AddBatch(0, Us(3), 0, Us(50)).ok());
  EXPECT_EQ(host.Timing(0, 0).value().produce_start, Us(50));
  EXPECT_EQ(host.Timing(0, 0).value().arrival, Us(53));
}

// The device loop of a step of s = 10 us fed by a host taking h per batch
// (plus 1 us of PCIe): every step starts at max(ready, arrival).
std::vector<Taken> RunSteps(HostModel& host,
                            const std::vector<int64_t>& work_us, int64_t bytes,
                            Picoseconds step) {
  for (int64_t w : work_us) EXPECT_TRUE(host.AddBatch(0, Us(w), bytes).ok());
  std::vector<Taken> out;
  Picoseconds ready(0);
  for (size_t i = 0; i < work_us.size(); ++i) {
    absl::StatusOr<Taken> t = host.Take(0, static_cast<int64_t>(i), ready);
    EXPECT_TRUE(t.ok()) << t.status();
    out.push_back(*t);
    ready = t->start + step;
  }
  return out;
}

TEST(HostModelTest, HostSlowerThanTheStepSetsTheStepTime) {
  // h = 30 us > s = 10 us: from the second step on, steps start exactly h
  // apart, each waiting h - s - 1 us for the host and 1 us for PCIe.
  HostModel host = HostModel::Create(Options(1, 2), {0}).value();
  std::vector<Taken> steps =
      RunSteps(host, std::vector<int64_t>(8, 30), 1000, Us(10));
  EXPECT_EQ(steps[0].start, Us(31));
  for (size_t i = 1; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].start - steps[i - 1].start, Us(30)) << i;
    EXPECT_EQ(steps[i].input_wait, Us(19)) << i;
    EXPECT_EQ(steps[i].infeed_wait, Us(1)) << i;
  }
  // Raising the threads to 6 makes h = 5 us < s: the host keeps ahead and only
  // the first step waits (5 us host + 1 us PCIe).
  HostModel fast = HostModel::Create(Options(6, 2), {0}).value();
  steps = RunSteps(fast, std::vector<int64_t>(8, 30), 1000, Us(10));
  EXPECT_EQ(steps[0].start, Us(6));
  for (size_t i = 1; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].start - steps[i - 1].start, Us(10)) << i;
    EXPECT_EQ(steps[i].input_wait + steps[i].infeed_wait, Us(0)) << i;
  }
}

TEST(HostModelTest, PcieSlowerThanTheStepShowsAsInfeedWait) {
  // Free host work, 25 us of PCIe per batch, s = 10 us: steps 25 us apart,
  // 15 us of infeed wait each, no input wait.
  HostModel host = HostModel::Create(Options(1, 2), {0}).value();
  std::vector<Taken> steps =
      RunSteps(host, std::vector<int64_t>(6, 0), 25000, Us(10));
  for (size_t i = 1; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].start - steps[i - 1].start, Us(25)) << i;
    EXPECT_EQ(steps[i].input_wait, Us(0)) << i;
    EXPECT_EQ(steps[i].infeed_wait, Us(15)) << i;
  }
}

TEST(HostModelTest, PrefetchHidesASlowBatchUpToItsDepth) {
  // Batches of 2 us, one of 25 us at step 5, steps of s = 10 us, no PCIe
  // bytes. Batch 5 starts when batch 5 - P is taken and is wanted P steps
  // later, so the step waits max(0, 25 - P x 10) us.
  std::vector<int64_t> work(10, 2);
  work[5] = 25;
  for (int depth = 1; depth <= 4; ++depth) {
    HostModel host = HostModel::Create(Options(1, depth), {0}).value();
    std::vector<Taken> steps = RunSteps(host, work, 0, Us(10));
    EXPECT_EQ(steps[0].input_wait, Us(2)) << depth;
    for (size_t i = 1; i < steps.size(); ++i) {
      const Picoseconds expected =
          i == 5 ? Us(std::max<int64_t>(0, 25 - 10 * depth)) : Us(0);
      EXPECT_EQ(steps[i].input_wait, expected)
          << "depth " << depth << " step " << i;
      EXPECT_EQ(steps[i].infeed_wait, Us(0)) << depth << " " << i;
    }
  }
}

TEST(HostModelTest, PrefetchDepthBoundsTheBatchesInFlight) {
  // Depth 2 and free work: batches 0 and 1 are produced at once; batch 2
  // starts only when batch 0 is taken.
  HostModel host = HostModel::Create(Options(1, 2), {0}).value();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(host.AddBatch(0, Us(1), 0).ok());
  EXPECT_EQ(host.Timing(0, 1).value().produce_end, Us(2));
  EXPECT_THAT(host.Timing(0, 2),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "batch 2 of device 0 cannot be timed before the device "
                       "takes batch 0 (prefetch depth 2)"));
  ASSERT_TRUE(host.Take(0, 0, Us(40)).ok());
  EXPECT_EQ(host.Timing(0, 2).value().produce_start, Us(40));
  EXPECT_EQ(host.Timing(0, 2).value().produce_end, Us(41));
}

TEST(HostModelTest, OneDmaQueuePerLink) {
  // Two devices on one link: the second copy queues behind the first.
  HostModel shared = HostModel::Create(Options(1, 2), {0, 0}).value();
  ASSERT_TRUE(shared.AddBatch(0, Us(0), 3000).ok());
  ASSERT_TRUE(shared.AddBatch(1, Us(0), 3000).ok());
  EXPECT_EQ(shared.Timing(0, 0).value().arrival, Us(3));
  EXPECT_EQ(shared.Timing(1, 0).value().dma_start, Us(3));
  EXPECT_EQ(shared.Timing(1, 0).value().arrival, Us(6));
  Taken t = shared.Take(1, 0, Us(0)).value();
  EXPECT_EQ(t.input_wait, Us(0));
  EXPECT_EQ(t.infeed_wait, Us(6));
  // A link per device: both copies run at once.
  HostModel own = HostModel::Create(Options(1, 2), {0, 1}).value();
  ASSERT_TRUE(own.AddBatch(0, Us(0), 3000).ok());
  ASSERT_TRUE(own.AddBatch(1, Us(0), 3000).ok());
  EXPECT_EQ(own.Timing(0, 0).value().arrival, Us(3));
  EXPECT_EQ(own.Timing(1, 0).value().arrival, Us(3));
}

TEST(HostModelTest, ThePipelineIsInOrderAcrossDevices) {
  // One pipeline for both devices: device 1's batch is produced after device
  // 0's, and waits with it when device 0's prefetch slot is full.
  HostModel host = HostModel::Create(Options(1, 1), {0, 1}).value();
  ASSERT_TRUE(host.AddBatch(0, Us(5), 0).ok());
  ASSERT_TRUE(host.AddBatch(0, Us(5), 0).ok());
  ASSERT_TRUE(host.AddBatch(1, Us(5), 0).ok());
  EXPECT_EQ(host.Timing(0, 0).value().produce_end, Us(5));
  EXPECT_THAT(host.Timing(1, 0),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("batch 1 of device 0 cannot be timed")));
  ASSERT_TRUE(host.Take(0, 0, Us(20)).ok());
  EXPECT_EQ(host.Timing(0, 1).value().produce_start, Us(20));
  EXPECT_EQ(host.Timing(1, 0).value().produce_start, Us(25));
  EXPECT_EQ(host.Timing(1, 0).value().produce_end, Us(30));
}

TEST(HostModelTest, WithoutHistoryNothingIsKept) {
  HostOptions o = Options(1, 1);
  o.keep_history = false;
  HostModel host = HostModel::Create(o, {0}).value();
  std::vector<Taken> steps =
      RunSteps(host, std::vector<int64_t>(5, 1), 0, Us(1));
  EXPECT_EQ(steps[4].start, Us(5));
  EXPECT_TRUE(host.history().empty());
  EXPECT_EQ(host.added(0), 5);
  EXPECT_EQ(host.taken(0), 5);
}

TEST(HostModelTest, BadOptionsNameTheField) {
  HostOptions o = Options(0, 1);
  EXPECT_THAT(HostModel::Create(o, {0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "HostOptions.threads is 0; a host needs at least 1 "
                       "thread"));
  o = Options(1, 0);
  EXPECT_THAT(HostModel::Create(o, {0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "HostOptions.prefetch_depth is 0; allowed: 1 or more "
                       "batches in flight per device"));
  o = Options(1, 1);
  o.pcie_bytes_per_second = -1;
  EXPECT_THAT(HostModel::Create(o, {0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "HostOptions.pcie_bytes_per_second is -1; allowed: a "
                       "finite rate > 0"));
  o.pcie_bytes_per_second = std::numeric_limits<double>::infinity();
  EXPECT_THAT(HostModel::Create(o, {0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pcie_bytes_per_second is inf")));
  EXPECT_THAT(HostModel::Create(Options(1, 1), {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "device_links is empty; a host feeds at least 1 "
                       "device"));
  EXPECT_THAT(HostModel::Create(Options(1, 1), {0, 0}, {7}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "device_ids has 1 entries; allowed: none or one per "
                       "device (2)"));
  EXPECT_THAT(HostModel::Create(Options(1, 1), {0, -2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "device_links[1] is -2; allowed: a link number >= 0"));
}

TEST(HostModelTest, BadBatchesAreInvalidArgument) {
  HostModel host = HostModel::Create(Options(1, 1), {0, 0}).value();
  EXPECT_THAT(host.AddBatch(2, Us(1), 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "device 2 is not on this host; allowed: 0..1"));
  EXPECT_THAT(host.AddBatch(0, Picoseconds(-5), 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "host cost of batch 0 of device 0 is -5 ps; allowed: "
                       ">= 0"));
  const StageCost negative_cost[] = {{"map", Picoseconds(-1), 4}};
  EXPECT_THAT(host.AddBatch(0, negative_cost, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "host cost of stage 'map' is -1 ps per element; "
                       "allowed: >= 0"));
  const StageCost negative_count[] = {{"filter", Us(1), -4}};
  EXPECT_THAT(host.AddBatch(0, negative_count, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "element count of stage 'filter' is -4; allowed: >= 0"));
  const StageCost huge[] = {{"map", Us(1000000), int64_t{1} << 40}};
  EXPECT_THAT(host.AddBatch(0, huge, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("host work of the batch overflows int64 "
                                 "picoseconds at stage 'map'")));
  EXPECT_THAT(host.AddBatch(1, Us(1), -8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "batch 0 of device 1 has -8 bytes; allowed: >= 0"));
  // Huge but valid numbers: the clock's range is the limit, not a crash.
  HostModel far = HostModel::Create(Options(1, 2), {0}).value();
  ASSERT_TRUE(far.AddBatch(0, Picoseconds(int64_t{1} << 62), 0).ok());
  ASSERT_TRUE(far.AddBatch(0, Picoseconds(int64_t{1} << 62), 0).ok());
  ASSERT_TRUE(far.Timing(0, 0).ok());
  EXPECT_THAT(far.Timing(0, 1),
              StatusIs(absl::StatusCode::kOutOfRange,
                       HasSubstr("batch 1 of device 0 would end past the "
                                 "simulated clock's range")));
  HostModel wide = HostModel::Create(Options(1, 2), {0}).value();
  ASSERT_TRUE(
      wide.AddBatch(0, Us(0), std::numeric_limits<int64_t>::max()).ok());
  EXPECT_THAT(wide.Timing(0, 0),
              StatusIs(absl::StatusCode::kOutOfRange,
                       HasSubstr("batch 0 of device 0 would end past")));
  EXPECT_THAT(far.Take(0, 0, Picoseconds(-1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "ready time -1 ps of batch 0 is negative; allowed: "
                       ">= 0"));
  // None of the bad batches was queued.
  EXPECT_EQ(host.added(0), 0);
  EXPECT_EQ(host.added(1), 0);
}

TEST(HostModelTest, TakesAreInOrderAndOfQueuedBatches) {
  HostModel host = HostModel::Create(Options(1, 2), {0}).value();
  ASSERT_TRUE(host.AddBatch(0, Us(1), 0).ok());
  ASSERT_TRUE(host.AddBatch(0, Us(1), 0).ok());
  EXPECT_THAT(host.Take(0, 1, Us(0)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "device 0 takes its batches in order: next is 0, asked "
                       "for 1"));
  EXPECT_THAT(host.Timing(0, 2),
              StatusIs(absl::StatusCode::kNotFound,
                       "batch 2 of device 0 is not queued (added 2, taken 0)"));
  ASSERT_TRUE(host.Take(0, 0, Us(0)).ok());
  EXPECT_THAT(host.Take(0, 0, Us(0)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "batch 0 of device 0 was taken already"));
  EXPECT_THAT(host.Timing(0, 0),
              StatusIs(absl::StatusCode::kNotFound,
                       "batch 0 of device 0 is not queued (added 2, taken 1)"));
}

// Random pipelines on a v3-8 (8 devices, 4 chips sharing links in pairs, one
// host): steps of random length on every device, taken in step order. The
// answers never beat a physical bound and are deterministic.
std::vector<Taken> RandomRun(uint32_t seed, int threads, int depth) {
  std::mt19937 rng(seed);
  runtime::SliceLayout v3 = runtime::ParseSlice("v3-8").value();
  SliceHosts hosts = SliceHosts::Create(v3, Options(threads, depth)).value();
  const int steps = 12;
  std::uniform_int_distribution<int64_t> work_ps(0, 40'000'000);
  std::uniform_int_distribution<int64_t> bytes(0, 20'000);
  std::uniform_int_distribution<int64_t> step_ps(1, 20'000'000);
  for (int s = 0; s < steps; ++s) {
    for (int d = 0; d < 8; ++d) {
      EXPECT_TRUE(
          hosts.AddBatch(d, Picoseconds(work_ps(rng)), bytes(rng)).ok());
    }
  }
  std::vector<Taken> out;
  std::vector<Picoseconds> ready(8, Picoseconds(0));
  for (int s = 0; s < steps; ++s) {
    for (int d = 0; d < 8; ++d) {
      absl::StatusOr<Taken> t = hosts.Take(d, s, ready[d]);
      EXPECT_TRUE(t.ok()) << t.status();
      ready[d] = t->start + Picoseconds(step_ps(rng));
      out.push_back(*t);
    }
  }
  return out;
}

TEST(HostModelTest, RandomRunsNeverBeatABoundAndRepeatExactly) {
  const runtime::SliceLayout v3 = runtime::ParseSlice("v3-8").value();
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const int threads = 1 + static_cast<int>(seed % 4);
    const int depth = 1 + static_cast<int>(seed % 3);
    std::vector<Taken> run = RandomRun(seed, threads, depth);
    std::vector<Taken> again = RandomRun(seed, threads, depth);
    ASSERT_EQ(run.size(), again.size());
    Picoseconds pipeline_end(0);
    std::map<int, Picoseconds> link_end;  // by chip link
    // Pipeline order is step by step, device by device: the order of `run`.
    for (size_t i = 0; i < run.size(); ++i) {
      const Taken& t = run[i];
      const BatchTiming& b = t.batch;
      EXPECT_EQ(t.start, again[i].start) << seed;
      EXPECT_EQ(t.input_wait, again[i].input_wait) << seed;
      // The step waits for the batch, and the wait splits exactly.
      EXPECT_LE(b.arrival, t.start);
      EXPECT_GE(t.input_wait.count(), 0);
      EXPECT_GE(t.infeed_wait.count(), 0);
      EXPECT_EQ(b.taken_at, t.start);
      // The pipeline does one batch at a time, in order, never faster than
      // work / threads.
      EXPECT_LE(pipeline_end, b.produce_start) << seed << " " << i;
      EXPECT_GE((b.produce_end - b.produce_start).count() * threads,
                b.work.count());
      pipeline_end = b.produce_end;
      // One copy at a time per link, never faster than the PCIe rate.
      EXPECT_LE(b.produce_end, b.dma_start);
      const int chip = v3.devices[b.device].chip;
      EXPECT_LE(link_end[chip], b.dma_start) << seed << " " << i;
      EXPECT_GE((b.arrival - b.dma_start).count(), b.bytes * 1000);
      link_end[chip] = b.arrival;
    }
    // Prefetch depth: batch i of a device starts no earlier than the device
    // took batch i - depth.
    for (size_t i = 0; i < run.size(); ++i) {
      const BatchTiming& b = run[i].batch;
      if (b.index < depth) continue;
      const BatchTiming& blocker = run[i - 8 * depth].batch;
      ASSERT_EQ(blocker.device, b.device);
      ASSERT_EQ(blocker.index, b.index - depth);
      EXPECT_LE(blocker.taken_at, b.produce_start) << seed << " " << i;
    }
  }
}

TEST(SliceHostsTest, OneHostPerTaskAndOneLinkPerChip) {
  // v4-16: 8 chips, 4 per host, one device per chip.
  runtime::SliceLayout v4 = runtime::ParseSlice("v4-16").value();
  SliceHosts hosts = SliceHosts::Create(v4, Options(1, 2)).value();
  ASSERT_EQ(hosts.num_hosts(), 2);
  ASSERT_EQ(hosts.num_devices(), 8);
  EXPECT_EQ(hosts.host_of(5), 1);
  EXPECT_EQ(hosts.local_of(5), 1);
  // Devices 4 and 5 are on host 1, different chips: their copies overlap,
  // after one pipeline made both batches (2 us each).
  ASSERT_TRUE(hosts.AddBatch(4, Us(2), 3000).ok());
  ASSERT_TRUE(hosts.AddBatch(5, Us(2), 3000).ok());
  // Device 0's host is idle: its batch is made at once.
  ASSERT_TRUE(hosts.AddBatch(0, Us(2), 3000).ok());
  EXPECT_EQ(hosts.Timing(4, 0).value().arrival, Us(5));
  BatchTiming t5 = hosts.Timing(5, 0).value();
  EXPECT_EQ(t5.device, 5);
  EXPECT_EQ(t5.link, 1);
  EXPECT_EQ(t5.produce_start, Us(2));
  EXPECT_EQ(t5.arrival, Us(7));
  EXPECT_EQ(hosts.Timing(0, 0).value().arrival, Us(5));
  Taken taken = hosts.Take(5, 0, Us(0)).value();
  EXPECT_EQ(taken.batch.device, 5);
  EXPECT_EQ(taken.input_wait, Us(4));
  EXPECT_EQ(taken.infeed_wait, Us(3));
  std::vector<std::pair<int, BatchTiming>> history = hosts.History();
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].first, 1);
  EXPECT_EQ(history[0].second.device, 5);
  hosts.ClearHistory();
  EXPECT_TRUE(hosts.History().empty());
}

TEST(SliceHostsTest, TheCoresOfAChipShareItsLink) {
  // v3-8: 4 chips of 2 cores on one host; devices 0 and 1 are one chip.
  runtime::SliceLayout v3 = runtime::ParseSlice("v3-8").value();
  ASSERT_EQ(v3.devices[0].chip, v3.devices[1].chip);
  SliceHosts hosts = SliceHosts::Create(v3, Options(1, 2)).value();
  ASSERT_EQ(hosts.num_hosts(), 1);
  ASSERT_TRUE(hosts.AddBatch(0, Us(0), 2000).ok());
  ASSERT_TRUE(hosts.AddBatch(1, Us(0), 2000).ok());
  ASSERT_TRUE(hosts.AddBatch(2, Us(0), 2000).ok());
  EXPECT_EQ(hosts.Timing(0, 0).value().arrival, Us(2));
  EXPECT_EQ(hosts.Timing(1, 0).value().arrival, Us(4));
  const int other_chip = v3.devices[2].chip != v3.devices[0].chip ? 2 : 3;
  ASSERT_EQ(other_chip, 2);
  EXPECT_EQ(hosts.Timing(2, 0).value().arrival, Us(2));
}

TEST(SliceHostsTest, BadDeviceIdsAndOptions) {
  runtime::SliceLayout v4 = runtime::ParseSlice("v4-8").value();
  SliceHosts hosts = SliceHosts::Create(v4, Options(1, 2)).value();
  EXPECT_THAT(hosts.AddBatch(4, Us(1), 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "device 4 is not in slice 'v4-8'; allowed: 0..3"));
  EXPECT_THAT(hosts.Take(-1, 0, Us(0)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "device -1 is not in slice 'v4-8'; allowed: 0..3"));
  // Messages name the global id: device 5 is local device 1 of host 1.
  SliceHosts two =
      SliceHosts::Create(runtime::ParseSlice("v4-16").value(), Options(1, 2))
          .value();
  EXPECT_THAT(two.AddBatch(5, Us(-1), 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "host cost of batch 0 of device 5 is -1000000 ps; "
                       "allowed: >= 0"));
  EXPECT_THAT(SliceHosts::Create(v4, Options(0, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("HostOptions.threads is 0")));
  runtime::SliceLayout empty;
  empty.name = "none";
  EXPECT_THAT(SliceHosts::Create(empty, Options(1, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "slice 'none' has no devices to feed"));
}

}  // namespace
}  // namespace tpusim::sim
