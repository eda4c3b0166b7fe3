// Validation of the collective algorithms against their formulas (sheet C.3)
// and the published measurements (sheet B items 5 and 6). Each TEST is its own
// process (one SystemC elaboration each). Lines starting "[validation]" are
// the figures quoted in docs/collectives.md's validation table.

#include <algorithm>
#include <cmath>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/chip/chip_preset.h"
#include "sim/net_preset.h"
#include "tests/sim/net/net_test_util.h"

namespace tpusim::sim::net {
namespace {

using testing::AxisGroups;
using testing::Request;
using ::testing::HasSubstr;
using testing::MakeSim;
using testing::MakeTopology;
using testing::TestConfig;
using testing::TimeCollective;
using ::tpusim::testing::StatusIs;

constexpr double kB = 45e9;    // TestConfig's link rate
constexpr double kHop = 1e-6;  // TestConfig's hop latency

absl::StatusOr<Topology> Slice(absl::string_view name) {
  TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                          runtime::ParseSlice(name));
  return Topology::Create(layout, WrapMode::kGeneration);
}

double Seconds(int64_t ps) { return static_cast<double>(ps) * 1e-12; }

void Report(const std::string& what, double sim, double reference) {
  std::cout << "[validation] " << what << ": simulated " << sim * 1e6
            << " us, reference " << reference * 1e6 << " us, error "
            << (sim / reference - 1) * 100 << " %\n";
}

// Ring all-reduce of S bytes over N chips: 2(N-1)/N·S/B + 2(N-1)·hop.
TEST(CollectiveFormulaTest, RingAllReduceOnAWrappedAxis) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v5e", {16, 1, 1}, WrapMode::kGeneration));
  ASSERT_TRUE(t.wraps(0));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto groups,
                       GroupPartition::Create(t, AxisGroups(t, 0)));
  const int64_t s = 64 << 20;
  ASSERT_OK_AND_ASSIGN(int64_t ps,
                       TimeCollective(sim, Request(CollectiveOp::kAllReduce, s,
                                                   Algorithm::kRing, groups)));
  const int n = 16;
  const double formula = 2.0 * (n - 1) / n * s / kB + 2 * (n - 1) * kHop;
  Report("ring all_reduce 64 MiB, v5e ring of 16", Seconds(ps), formula);
  EXPECT_NEAR(Seconds(ps) / formula, 1.0, 0.05);
}

// The bidirectional ring halves the bandwidth term on a wrapped axis.
TEST(CollectiveFormulaTest, BidirectionalRingHalvesTheBandwidthTerm) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v5e", {16, 1, 1}, WrapMode::kGeneration));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto groups,
                       GroupPartition::Create(t, AxisGroups(t, 0)));
  const int64_t s = 64 << 20;
  ASSERT_OK_AND_ASSIGN(int64_t ring,
                       TimeCollective(sim, Request(CollectiveOp::kAllReduce, s,
                                                   Algorithm::kRing, groups)));
  ASSERT_OK_AND_ASSIGN(
      int64_t bidir,
      TimeCollective(sim, Request(CollectiveOp::kAllReduce, s,
                                  Algorithm::kBidirRing, groups)));
  const int n = 16;
  const double formula = (n - 1.0) / n * s / kB + 2 * (n - 1) * kHop;
  Report("bidir_ring all_reduce 64 MiB, v5e ring of 16", Seconds(bidir),
         formula);
  EXPECT_NEAR(Seconds(bidir) / formula, 1.0, 0.05);
  EXPECT_NEAR(static_cast<double>(ring) / bidir, 2.0, 0.1);
}

// Per-dimension torus all-reduce, T = 2·Σ [V/(N1…Ni-1)]·(Ni-1)/Ni/(2B) plus
// 2·Σ(Ni-1) hops.
double TorusFormula(double v, const std::vector<int>& dims) {
  double t = 0, shard = v;
  int hops = 0;
  for (int n : dims) {
    t += 2 * shard * (n - 1) / n / (2 * kB);
    shard /= n;
    hops += 2 * (n - 1);
  }
  return t + hops * kHop;
}

TEST(CollectiveFormulaTest, TorusAllReduceOn4x4x4V4) {
  // Sheet: ≈ 1.47 ms bandwidth term for V = 64 MiB, B = 45 GB/s.
  ASSERT_OK_AND_ASSIGN(runtime::SliceLayout layout,
                       runtime::ParseSlice("v4-128"));
  ASSERT_OK_AND_ASSIGN(Topology t,
                       Topology::Create(layout, WrapMode::kGeneration));
  ASSERT_TRUE(t.wraps(0) && t.wraps(1) && t.wraps(2));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, {AllDevices(t)}));
  const int64_t v = 64 << 20;
  ASSERT_OK_AND_ASSIGN(int64_t ps,
                       TimeCollective(sim, Request(CollectiveOp::kAllReduce, v,
                                                   Algorithm::kTorus, groups)));
  const double formula = TorusFormula(v, {4, 4, 4});
  EXPECT_NEAR(TorusFormula(v, {4, 4, 4}) - 18 * kHop, 1.468e-3, 0.001e-3);
  Report("torus all_reduce 64 MiB, v4 4x4x4", Seconds(ps), formula);
  EXPECT_NEAR(Seconds(ps) / formula, 1.0, 0.05);
}

TEST(CollectiveFormulaTest, TorusAllReduceOn16x16V5e) {
  ASSERT_OK_AND_ASSIGN(runtime::SliceLayout layout,
                       runtime::ParseSlice("v5litepod-256"));
  ASSERT_OK_AND_ASSIGN(Topology t,
                       Topology::Create(layout, WrapMode::kGeneration));
  ASSERT_TRUE(t.wraps(0) && t.wraps(1));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, {AllDevices(t)}));
  const int64_t v = 64 << 20;
  ASSERT_OK_AND_ASSIGN(int64_t ps,
                       TimeCollective(sim, Request(CollectiveOp::kAllReduce, v,
                                                   Algorithm::kTorus, groups)));
  const double formula = TorusFormula(v, {16, 16});
  Report("torus all_reduce 64 MiB, v5e 16x16", Seconds(ps), formula);
  EXPECT_NEAR(Seconds(ps) / formula, 1.0, 0.05);
}

// Without wraparound the per-dimension algorithm is about 2x slower (C.3).
// Two networks side by side in one elaboration.
TEST(CollectiveFormulaTest, RemovingWraparoundAboutDoublesTheTorusTime) {
  ASSERT_OK_AND_ASSIGN(runtime::SliceLayout layout,
                       runtime::ParseSlice("v4-128"));
  ASSERT_OK_AND_ASSIGN(Topology wrapped,
                       Topology::Create(layout, WrapMode::kGeneration));
  ASSERT_OK_AND_ASSIGN(Topology mesh, Topology::Create(layout, WrapMode::kOff));
  std::unique_ptr<Network> a, b;
  ASSERT_OK_AND_ASSIGN(
      auto session, KernelSession::Create([&]() -> absl::Status {
        NetworkOptions oa, ob;
        oa.name = "wrapped";
        ob.name = "mesh";
        TPUSIM_ASSIGN_OR_RETURN(a, Network::Create(wrapped, TestConfig(), oa));
        TPUSIM_ASSIGN_OR_RETURN(b, Network::Create(mesh, TestConfig(), ob));
        return absl::OkStatus();
      }));
  ASSERT_OK_AND_ASSIGN(auto ga,
                       GroupPartition::Create(wrapped, {AllDevices(wrapped)}));
  ASSERT_OK_AND_ASSIGN(auto gb,
                       GroupPartition::Create(mesh, {AllDevices(mesh)}));
  const int64_t v = 64 << 20;
  ASSERT_OK_AND_ASSIGN(
      auto ra,
      RunCollectives(
          *session, *a,
          {{Request(CollectiveOp::kAllReduce, v, Algorithm::kTorus, ga),
            AllDevices(wrapped)}}));
  ASSERT_OK_AND_ASSIGN(
      auto rb,
      RunCollectives(
          *session, *b,
          {{Request(CollectiveOp::kAllReduce, v, Algorithm::kTorus, gb),
            AllDevices(mesh)}}));
  const double ta = Seconds((ra[0].end - ra[0].start).count());
  const double tb = Seconds((rb[0].end - rb[0].start).count());
  std::cout << "[validation] torus all_reduce 64 MiB v4 4x4x4 without / with "
               "wraparound: "
            << tb / ta << "x\n";
  EXPECT_GT(tb / ta, 1.8);
  EXPECT_LT(tb / ta, 2.2);
}

// Multi-axis: the bandwidth term approaches 2V/(k·2B), and beats the
// per-dimension order.
TEST(CollectiveFormulaTest, MultiAxisUsesEveryAxisAtOnce) {
  ASSERT_OK_AND_ASSIGN(runtime::SliceLayout layout,
                       runtime::ParseSlice("v4-128"));
  ASSERT_OK_AND_ASSIGN(Topology t,
                       Topology::Create(layout, WrapMode::kGeneration));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, {AllDevices(t)}));
  const int64_t v = 64 << 20;
  ASSERT_OK_AND_ASSIGN(int64_t torus,
                       TimeCollective(sim, Request(CollectiveOp::kAllReduce, v,
                                                   Algorithm::kTorus, groups)));
  CollectiveRequest r =
      Request(CollectiveOp::kAllReduce, v, Algorithm::kMultiAxis, groups);
  ASSERT_OK_AND_ASSIGN(int64_t multi, TimeCollective(sim, r));
  const double approach = 2.0 * v / (3 * 2 * kB) + 18 * kHop;
  Report("multi_axis all_reduce 64 MiB, v4 4x4x4 (vs 2V/(k·2B) + hops)",
         Seconds(multi), approach);
  EXPECT_LT(multi, torus);
  EXPECT_NEAR(Seconds(multi) / approach, 1.0, 0.1);
  EXPECT_GE(multi, CollectiveLowerBound(t, TestConfig(), r, 0).value().count());
}

// Bidirectional ring all-gather and reduce-scatter on a wrapped axis:
// (N-1)/N·V/(2B) (C.3: ≈ V/W_bidi).
TEST(CollectiveFormulaTest, AllGatherAndReduceScatterOnAWrappedAxis) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v5e", {16, 1, 1}, WrapMode::kGeneration));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto groups,
                       GroupPartition::Create(t, AxisGroups(t, 0)));
  const int64_t v = 64 << 20;
  const double formula = 15.0 / 16 * v / (2 * kB) + 15 * kHop;
  for (CollectiveOp op :
       {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
    ASSERT_OK_AND_ASSIGN(
        int64_t ps,
        TimeCollective(sim, Request(op, v, Algorithm::kAuto, groups)));
    Report(std::string(CollectiveOpName(op)) + " 64 MiB, v5e ring of 16",
           Seconds(ps), formula);
    EXPECT_NEAR(Seconds(ps) / formula, 1.0, 0.05) << CollectiveOpName(op);
  }
}

// All-to-all on a wrapped ring of 8 is bound by its busiest link: with the
// + tie rule, each + link carries (1+2+3+4)/8 of a device's buffer.
TEST(CollectiveFormulaTest, AllToAllIsBoundByTheBusiestLink) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v5e", {8, 1, 1}, WrapMode::kOn));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto groups,
                       GroupPartition::Create(t, AxisGroups(t, 0)));
  const int64_t s = 8 << 20;
  CollectiveRequest r =
      Request(CollectiveOp::kAllToAll, s, Algorithm::kAuto, groups);
  ASSERT_OK_AND_ASSIGN(int64_t ps, TimeCollective(sim, r));
  const double formula = 10.0 / 8 * s / kB + 4 * kHop;
  Report("all_to_all 8 MiB, ring of 8 (busiest link)", Seconds(ps), formula);
  EXPECT_NEAR(Seconds(ps) / formula, 1.0, 0.05);
  EXPECT_GE(ps, CollectiveLowerBound(t, TestConfig(), r, 0).value().count());
}

// collective_permute: the bytes of a pair over B plus its hops.
TEST(CollectiveFormulaTest, PermuteIsBytesOverBPlusHops) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v5e", {8, 1, 1}, WrapMode::kOn));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  std::vector<std::pair<int, int>> pairs;
  for (int x = 0; x < 8; ++x) {  // two hops each, all + links
    pairs.push_back({t.device_at(x, 0), t.device_at((x + 2) % 8, 0)});
  }
  ASSERT_OK_AND_ASSIGN(auto p, PermutePairs::Create(t, pairs));
  CollectiveRequest r;
  r.op = CollectiveOp::kCollectivePermute;
  r.bytes = 1 << 20;
  r.pairs = p;
  ASSERT_OK_AND_ASSIGN(int64_t ps, TimeCollective(sim, r));
  // Two flows share each + link (x->x+2 and x-1->x+1), so each link carries
  // 2 MiB; the last flow on a link starts one hop after the first.
  const double formula = 2.0 * (1 << 20) / kB + kHop;
  Report("permute 1 MiB over 2 hops, 2 flows per link", Seconds(ps), formula);
  EXPECT_NEAR(Seconds(ps) / formula, 1.0, 0.05);
  EXPECT_GE(ps, CollectiveLowerBound(t, TestConfig(), r, 0).value().count());
}

// Sheet B item 5: v5e 8x4 (no wraparound), AllGather over Y (4) of
// bf16[2048, 8192]; 560 us no-wrap roofline, 680 us measured. The 256x256
// gather is latency-bound: 3..12 us (predicted ~3, measured ~8).
TEST(CollectiveMeasurementTest, V5eAllGatherOverY) {
  ASSERT_OK_AND_ASSIGN(runtime::SliceLayout layout,
                       runtime::ParseSlice("v5litepod-32"));
  ASSERT_EQ(layout.chip_mesh, (std::array<int, 3>{8, 4, 1}));
  ASSERT_OK_AND_ASSIGN(Topology t,
                       Topology::Create(layout, WrapMode::kGeneration));
  ASSERT_FALSE(t.wraps(0) || t.wraps(1));
  ASSERT_OK_AND_ASSIGN(const ChipPreset* v5e, FindChipPreset("v5e"));
  ASSERT_OK_AND_ASSIGN(NetConfig config, NetConfigFromPreset(*v5e));
  ASSERT_EQ(config.link_bytes_per_second, 45e9);
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, config));
  ASSERT_OK_AND_ASSIGN(auto groups,
                       GroupPartition::Create(t, AxisGroups(t, 1)));
  ASSERT_OK_AND_ASSIGN(
      int64_t big,
      TimeCollective(sim, Request(CollectiveOp::kAllGather, 2048LL * 8192 * 2,
                                  Algorithm::kAuto, groups)));
  Report("B.5 v5e 8x4 all_gather over y, bf16[2048,8192] (vs 680 us)",
         Seconds(big), 680e-6);
  const bool between = Seconds(big) >= 560e-6 && Seconds(big) <= 680e-6;
  EXPECT_TRUE(between || std::abs(Seconds(big) / 680e-6 - 1) <= 0.15)
      << Seconds(big);
  EXPECT_GE(Seconds(big), 559e-6);  // never beat the roofline
  ASSERT_OK_AND_ASSIGN(
      int64_t small,
      TimeCollective(sim, Request(CollectiveOp::kAllGather, 256 * 256 * 2,
                                  Algorithm::kAuto, groups)));
  Report("B.5 v5e 8x4 all_gather over y, bf16[256,256] (vs 8 us)",
         Seconds(small), 8e-6);
  EXPECT_GE(Seconds(small), 3e-6);
  EXPECT_LE(Seconds(small), 12e-6);
}

// Sheet B item 6: v2, reduce-scatter of a 134 MB array between two devices
// on neighbouring chips (one link per direction): measured 1.13 ms.
TEST(CollectiveMeasurementTest, V2OneHopReduceScatter) {
  ASSERT_OK_AND_ASSIGN(runtime::SliceLayout layout,
                       runtime::ParseSlice("v2-8"));
  ASSERT_OK_AND_ASSIGN(Topology t,
                       Topology::Create(layout, WrapMode::kGeneration));
  ASSERT_OK_AND_ASSIGN(const ChipPreset* v2, FindChipPreset("v2"));
  ASSERT_OK_AND_ASSIGN(NetConfig config, NetConfigFromPreset(*v2));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, config));
  // Core 0 of chips (0,0) and (1,0); every other device alone.
  const int a = t.device_at(t.chip_at({0, 0, 0}), 0);
  const int b = t.device_at(t.chip_at({1, 0, 0}), 0);
  std::vector<std::vector<int>> groups = {{a, b}};
  for (int d = 0; d < t.num_devices(); ++d) {
    if (d != a && d != b) groups.push_back({d});
  }
  ASSERT_OK_AND_ASSIGN(auto partition, GroupPartition::Create(t, groups));
  ASSERT_OK_AND_ASSIGN(
      int64_t ps,
      TimeCollective(sim, Request(CollectiveOp::kReduceScatter, 134217728,
                                  Algorithm::kAuto, partition)));
  Report("B.6 v2 one-hop reduce_scatter 134 MB (vs 1.13 ms)", Seconds(ps),
         1.13e-3);
  EXPECT_NEAR(Seconds(ps) / 1.13e-3, 1.0, 0.15);
}

// Contention is real: two all-reduces whose rings share links take longer
// together than alone; two on disjoint chips take exactly as long.
TEST(CollectiveContentionTest, SharedLinksSlowDownDisjointChipsDoNot) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v5e", {8, 2, 1}, WrapMode::kOn));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  auto dev = [&](int x, int y) { return t.device_at(t.chip_at({x, y, 0}), 0); };
  // Interleaved rings on row 0 (even and odd x) share the row's links; the
  // rows themselves are disjoint.
  std::vector<int> even, odd, row1;
  for (int x = 0; x < 8; ++x) (x % 2 == 0 ? even : odd).push_back(dev(x, 0));
  for (int x = 0; x < 8; ++x) row1.push_back(dev(x, 1));
  ASSERT_OK_AND_ASSIGN(auto groups,
                       GroupPartition::Create(t, {even, odd, row1}));
  const CollectiveRequest r =
      Request(CollectiveOp::kAllReduce, 16 << 20, Algorithm::kRing, groups);
  auto time = [](const JobResult& j) { return (j.end - j.start).count(); };
  ASSERT_OK_AND_ASSIGN(auto even_alone,
                       RunCollectives(*sim.session, *sim.network, {{r, even}}));
  ASSERT_OK_AND_ASSIGN(auto odd_alone,
                       RunCollectives(*sim.session, *sim.network, {{r, odd}}));
  ASSERT_OK_AND_ASSIGN(auto row1_alone,
                       RunCollectives(*sim.session, *sim.network, {{r, row1}}));
  ASSERT_OK_AND_ASSIGN(auto together,
                       RunCollectives(*sim.session, *sim.network,
                                      {{r, even}, {r, odd}, {r, row1}}));
  std::cout << "[validation] contention: even ring alone "
            << Seconds(time(even_alone[0])) * 1e6 << " us, with the odd ring "
            << Seconds(time(together[0])) * 1e6 << " us\n";
  EXPECT_GT(time(together[0]), time(even_alone[0]));
  EXPECT_GT(time(together[1]), time(odd_alone[0]));
  EXPECT_GT(time(together[0]), 1.5 * time(even_alone[0]));
  EXPECT_EQ(time(together[2]), time(row1_alone[0]));
}

// A recording data path sees every chunk: an all-reduce reduces (N-1)/N·S
// and writes 2(N-1)/N·S per device.
class RecordingDataPath : public CollectiveDataPath {
 public:
  explicit RecordingDataPath(int devices) : totals(devices) {}
  ChunkTiming Process(int device, ChunkTiming input,
                      const ChunkWork& work) override {
    totals[device].bytes_reduced += work.bytes_reduced;
    totals[device].bytes_read += work.bytes_read;
    totals[device].bytes_written += work.bytes_written;
    ++calls;
    return input;
  }
  std::vector<ChunkWork> totals;
  int64_t calls = 0;
};

TEST(CollectiveDataPathTest, TheChipSeesEveryChunkOfWork) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v5e", {4, 1, 1}, WrapMode::kOn));
  RecordingDataPath recorder(t.num_devices());
  NetworkOptions options;
  options.data_path = &recorder;
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig(), options));
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, {AllDevices(t)}));
  ASSERT_OK_AND_ASSIGN(
      int64_t ps, TimeCollective(sim, Request(CollectiveOp::kAllReduce, 4096,
                                              Algorithm::kRing, groups)));
  EXPECT_GT(ps, 0);
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(recorder.totals[d].bytes_reduced, 3 * 1024) << d;
    // Reads: the local operand of each reduction plus every chunk sent.
    EXPECT_EQ(recorder.totals[d].bytes_read, 3 * 1024 + 6 * 1024) << d;
    EXPECT_EQ(recorder.totals[d].bytes_written, 6 * 1024) << d;
  }
  // Per device: 6 chunks sent and 6 received.
  EXPECT_EQ(recorder.calls, 4 * 12);
}

// A slow vector unit makes the reduce-scatter reduction-bound: the data path's
// timing is on the critical path, pipelined with the transfers.
TEST(CollectiveDataPathTest, ASlowVectorUnitIsOnTheCriticalPath) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v5e", {4, 1, 1}, WrapMode::kOn));
  NetConfig slow = TestConfig();
  slow.vector_reduce_bytes_per_second = kB / 4;
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, slow));
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, {AllDevices(t)}));
  const int64_t s = 16 << 20;
  ASSERT_OK_AND_ASSIGN(
      int64_t ps, TimeCollective(sim, Request(CollectiveOp::kReduceScatter, s,
                                              Algorithm::kRing, groups)));
  // 3 chunks of S/4 each reduced at B/4: at least 3·(S/4)/(B/4).
  EXPECT_GE(Seconds(ps), 3.0 * s / kB);
  EXPECT_LE(Seconds(ps), 1.1 * 3.0 * s / kB + 10 * kHop);
}

// Several networks elaborated side by side (one elaboration per process).
struct Bench {
  std::unique_ptr<KernelSession> session;
  std::vector<std::unique_ptr<Network>> networks;
};

absl::StatusOr<Bench> MakeBench(const std::vector<const Topology*>& topologies,
                                const std::vector<NetConfig>& configs,
                                const std::vector<NetworkOptions>& options) {
  Bench b;
  TPUSIM_ASSIGN_OR_RETURN(
      b.session, KernelSession::Create([&]() -> absl::Status {
        for (size_t i = 0; i < topologies.size(); ++i) {
          NetworkOptions o = options[i];
          o.name = absl::StrCat(o.name, i);
          TPUSIM_ASSIGN_OR_RETURN(
              std::unique_ptr<Network> n,
              Network::Create(*topologies[i], configs[i], o));
          b.networks.push_back(std::move(n));
        }
        return absl::OkStatus();
      }));
  return b;
}

// The floor an endpoint hands its data path (ChunkWork::floor) is a promise:
// no chunk of that device processed later starts before it (a data path
// forgets its timeline behind it: sim/chip's HBM). A data path that delays
// chunks by varying amounts (as a busy HBM does) makes messages wait out of
// order, arrive before their stream starts and, with packets, arrive in
// parts; several collectives with every algorithm share the links at once.
class FloorCheckingDataPath : public CollectiveDataPath {
 public:
  explicit FloorCheckingDataPath(int devices) : floor_(devices, 0) {}
  ChunkTiming Process(int device, ChunkTiming input,
                      const ChunkWork& work) override {
    ++calls;
    EXPECT_LE(work.floor, input.head) << "device " << device;
    if (input.head.count() < floor_[device]) {
      ++broken;
      ADD_FAILURE() << "device " << device << ": a chunk from "
                    << input.head.count() << " ps after a floor of "
                    << floor_[device] << " ps";
    }
    floor_[device] = std::max(floor_[device], work.floor.count());
    // 0..3 us of delay, varying from chunk to chunk.
    const common::Picoseconds delay((calls * 7919 % 4) * 1000000);
    return {input.head + delay, input.tail + delay};
  }
  int64_t calls = 0;
  int64_t broken = 0;

 private:
  std::vector<int64_t> floor_;
};

TEST(CollectiveDataPathTest, NoChunkStartsBeforeTheFloorItsDeviceWasGiven) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v4", {4, 4, 1}, WrapMode::kOn));
  // Without and with packets (a message arriving in parts).
  std::vector<FloorCheckingDataPath> checkers(2, FloorCheckingDataPath(
                                                     t.num_devices()));
  std::vector<NetConfig> configs(2, TestConfig());
  configs[1].packet_bytes = 4096;
  std::vector<NetworkOptions> options(2);
  for (int i = 0; i < 2; ++i) options[i].data_path = &checkers[i];
  ASSERT_OK_AND_ASSIGN(Bench bench, MakeBench({&t, &t}, configs, options));
  const std::vector<int> all = AllDevices(t);
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, {all}));
  std::vector<CollectiveJob> jobs;
  for (Algorithm a : {Algorithm::kRing, Algorithm::kBidirRing,
                      Algorithm::kTorus, Algorithm::kMultiAxis}) {
    jobs.push_back(
        {Request(CollectiveOp::kAllReduce, 256 << 10, a, groups), all});
  }
  for (CollectiveOp op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                          CollectiveOp::kAllToAll}) {
    jobs.push_back({Request(op, 64 << 10, Algorithm::kAuto, groups), all});
  }
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(absl::StrCat("packet_bytes ", configs[i].packet_bytes));
    ASSERT_OK_AND_ASSIGN(auto results,
                         RunCollectives(*bench.session, *bench.networks[i],
                                        jobs));
    EXPECT_EQ(results.size(), jobs.size());
    EXPECT_GT(checkers[i].calls, 1000);
    EXPECT_EQ(checkers[i].broken, 0);
  }
}

// No run ever beats its op's lower bound nor the hop-latency floor: random
// shapes, wraparound, groups, ops, algorithms and sizes (fixed seed).
TEST(CollectiveBoundTest, NoRunBeatsItsLowerBound) {
  std::vector<Topology> topologies;
  topologies.push_back(*MakeTopology("v5e", {4, 4, 1}, WrapMode::kOff));
  topologies.push_back(*MakeTopology("v5e", {4, 4, 1}, WrapMode::kOn));
  topologies.push_back(*MakeTopology("v5e", {8, 2, 1}, WrapMode::kOn));
  topologies.push_back(*MakeTopology("v5e", {12, 1, 1}, WrapMode::kOn));
  topologies.push_back(*MakeTopology("v4", {4, 4, 4}, WrapMode::kGeneration));
  topologies.push_back(*MakeTopology("v4", {2, 2, 4}, WrapMode::kGeneration));
  topologies.push_back(*MakeTopology("v3", {4, 2, 1}, WrapMode::kOn));
  std::vector<const Topology*> ptrs;
  for (const Topology& t : topologies) ptrs.push_back(&t);
  ASSERT_OK_AND_ASSIGN(
      Bench bench,
      MakeBench(ptrs, std::vector<NetConfig>(ptrs.size(), TestConfig()),
                std::vector<NetworkOptions>(ptrs.size())));
  std::mt19937 rng(20261203);
  auto pick = [&](int n) {
    return std::uniform_int_distribution<int>(0, n - 1)(rng);
  };
  int runs = 0;
  for (size_t ti = 0; ti < topologies.size(); ++ti) {
    const Topology& t = topologies[ti];
    const NetConfig c = TestConfig();
    const int n = t.num_devices();
    for (int trial = 0; trial < 10; ++trial) {
      // Groups: all devices, lines along an axis, or a random partition into
      // equal groups of a size that divides n.
      std::vector<std::vector<int>> groups;
      const int kind = pick(3);
      if (kind == 0) {
        groups = {AllDevices(t)};
      } else if (kind == 1 && t.devices_per_chip() == 1) {
        int axis = pick(3);
        while (t.dims()[axis] == 1) axis = pick(3);
        groups = AxisGroups(t, axis);
      } else {
        std::vector<int> sizes;
        for (int k = 2; k <= n; ++k) {
          if (n % k == 0) sizes.push_back(k);
        }
        const int size = sizes[pick(static_cast<int>(sizes.size()))];
        std::vector<int> perm = AllDevices(t);
        std::shuffle(perm.begin(), perm.end(), rng);
        for (int i = 0; i < n; i += size) {
          groups.emplace_back(perm.begin() + i, perm.begin() + i + size);
        }
      }
      ASSERT_OK_AND_ASSIGN(auto partition, GroupPartition::Create(t, groups));
      const int largest = static_cast<int>(groups[0].size());
      CollectiveRequest r;
      r.op = static_cast<CollectiveOp>(pick(5));
      r.bytes = static_cast<int64_t>(largest) *
                (int64_t{1} << pick(22));  // up to 4 MiB per member share
      r.groups = partition;
      const bool aligned = partition->aligned(0);
      const Algorithm choices[] = {Algorithm::kAuto, Algorithm::kRing,
                                   Algorithm::kBidirRing, Algorithm::kTorus,
                                   Algorithm::kMultiAxis};
      r.algorithm = choices[pick(aligned ? 5 : 3)];
      bool all_aligned = true;
      for (int g = 0; g < partition->num_groups(); ++g) {
        all_aligned = all_aligned && partition->aligned(g);
      }
      if (!all_aligned && (r.algorithm == Algorithm::kTorus ||
                           r.algorithm == Algorithm::kMultiAxis)) {
        r.algorithm = Algorithm::kAuto;
      }
      if (r.op == CollectiveOp::kAllToAll ||
          r.op == CollectiveOp::kCollectivePermute) {
        r.algorithm = Algorithm::kAuto;
      }
      if (r.op == CollectiveOp::kCollectivePermute) {
        std::vector<std::pair<int, int>> pairs;
        for (const std::vector<int>& g : groups) {
          const int shift = 1 + pick(static_cast<int>(g.size()) - 1);
          for (size_t i = 0; i < g.size(); ++i) {
            pairs.push_back({g[i], g[(i + shift) % g.size()]});
          }
        }
        ASSERT_OK_AND_ASSIGN(r.pairs, PermutePairs::Create(t, pairs));
      }
      ASSERT_OK_AND_ASSIGN(std::vector<JobResult> res,
                           RunCollectives(*bench.session, *bench.networks[ti],
                                          {{r, AllDevices(t)}}));
      const std::string what = absl::StrCat(
          t.name(), " wrap ", t.wraps(0), t.wraps(1), t.wraps(2), " ",
          CollectiveOpName(r.op), " ", AlgorithmName(r.algorithm), " ", r.bytes,
          " bytes, groups of ", largest);
      if (r.op == CollectiveOp::kCollectivePermute) {
        for (const auto& [src, dst] : r.pairs->pairs()) {
          CollectiveRequest one = r;
          ASSERT_OK_AND_ASSIGN(one.pairs,
                               PermutePairs::Create(t, {{src, dst}}));
          const int64_t bound =
              CollectiveLowerBound(t, c, one, 0).value().count();
          EXPECT_GE((res[0].device_end[dst] - res[0].start).count(), bound)
              << what << " pair " << src << "->" << dst;
        }
      } else {
        for (int g = 0; g < partition->num_groups(); ++g) {
          int64_t end = 0;
          for (int d : groups[g]) {
            end = std::max(end, (res[0].device_end[d] - res[0].start).count());
          }
          const LowerBound bound = CollectiveLowerBound(t, c, r, g);
          EXPECT_GE(end, bound.bandwidth.count()) << what << " group " << g;
          EXPECT_GE(end, bound.latency.count()) << what << " group " << g;
          EXPECT_GT(end, 0) << what;
        }
      }
      ++runs;
    }
  }
  EXPECT_EQ(runs, 70);
}

// The coarse default (one packet per message) against 4 KiB packets on small
// tori; docs/collectives.md quotes the errors printed here.
TEST(CollectivePacketTest, CoarseDefaultAgainst4KiBPackets) {
  const Topology t2 = *MakeTopology("v5e", {4, 4, 1}, WrapMode::kOn);
  const Topology t3 = *MakeTopology("v4", {4, 4, 4}, WrapMode::kGeneration);
  NetConfig fine = TestConfig();
  fine.packet_bytes = 4096;
  ASSERT_OK_AND_ASSIGN(
      Bench bench,
      MakeBench({&t2, &t2, &t3, &t3}, {TestConfig(), fine, TestConfig(), fine},
                std::vector<NetworkOptions>(4)));
  struct Case {
    int net;  // coarse network; fine is net + 1
    const Topology* t;
    CollectiveOp op;
    Algorithm algorithm;
    int64_t bytes;
    bool scattered;
  };
  const Case cases[] = {
      {0, &t2, CollectiveOp::kAllReduce, Algorithm::kTorus, 4 << 20, false},
      {0, &t2, CollectiveOp::kAllReduce, Algorithm::kRing, 4 << 20, false},
      {0, &t2, CollectiveOp::kAllReduce, Algorithm::kBidirRing, 1 << 20, true},
      {0, &t2, CollectiveOp::kAllToAll, Algorithm::kAuto, 1 << 20, false},
      {0, &t2, CollectiveOp::kAllReduce, Algorithm::kTorus, 64 << 10, false},
      {2, &t3, CollectiveOp::kAllReduce, Algorithm::kTorus, 4 << 20, false},
      {2, &t3, CollectiveOp::kAllGather, Algorithm::kMultiAxis, 3 << 20, false},
  };
  double worst = 0;
  for (const Case& c : cases) {
    std::vector<std::vector<int>> groups = {AllDevices(*c.t)};
    if (c.scattered) {  // two interleaved halves: routed rings that share links
      groups = {{}, {}};
      for (int d = 0; d < c.t->num_devices(); ++d) groups[d % 2].push_back(d);
    }
    ASSERT_OK_AND_ASSIGN(auto partition, GroupPartition::Create(*c.t, groups));
    const CollectiveRequest r = Request(c.op, c.bytes, c.algorithm, partition);
    int64_t times[2];
    for (int k = 0; k < 2; ++k) {
      ASSERT_OK_AND_ASSIGN(
          std::vector<JobResult> res,
          RunCollectives(*bench.session, *bench.networks[c.net + k],
                         {{r, AllDevices(*c.t)}}));
      times[k] = (res[0].end - res[0].start).count();
    }
    const double error = static_cast<double>(times[0]) / times[1] - 1;
    worst = std::max(worst, std::abs(error));
    std::cout << "[validation] coarse vs 4 KiB packets, " << c.t->name() << " "
              << CollectiveOpName(c.op) << " " << AlgorithmName(c.algorithm)
              << (c.scattered ? " (2 interleaved groups)" : "") << " "
              << c.bytes << " B: coarse " << Seconds(times[0]) * 1e6
              << " us, packets " << Seconds(times[1]) * 1e6 << " us, error "
              << error * 100 << " %\n";
  }
  EXPECT_LT(worst, 0.2);
}

// Two flows through one link each get about half: with 4 KiB packets the
// link alternates between them, so both finish at about 2S/B; with whole
// messages (the default) one goes first and the pair still ends at 2S/B.
TEST(CollectivePacketTest, TwoFlowsThroughOneLinkEachGetHalf) {
  const Topology t = *MakeTopology("v5e", {8, 1, 1}, WrapMode::kOn);
  NetConfig fine = TestConfig();
  fine.packet_bytes = 4096;
  ASSERT_OK_AND_ASSIGN(Bench bench, MakeBench({&t, &t}, {TestConfig(), fine},
                                              std::vector<NetworkOptions>(2)));
  std::vector<std::pair<int, int>> pairs;
  for (int x = 0; x < 8; ++x) pairs.push_back({x, (x + 2) % 8});
  ASSERT_OK_AND_ASSIGN(auto p, PermutePairs::Create(t, pairs));
  CollectiveRequest r;
  r.op = CollectiveOp::kCollectivePermute;
  r.bytes = 4 << 20;
  r.pairs = p;
  const double both = 2.0 * r.bytes / kB;
  for (int k = 0; k < 2; ++k) {
    ASSERT_OK_AND_ASSIGN(std::vector<JobResult> res,
                         RunCollectives(*bench.session, *bench.networks[k],
                                        {{r, AllDevices(t)}}));
    for (int d = 0; d < 8; ++d) {
      const double end = Seconds((res[0].device_end[d] - res[0].start).count());
      if (k == 1) {
        EXPECT_NEAR(end / both, 1.0, 0.03) << "packets, device " << d;
      } else {
        EXPECT_LE(end, both + 3 * kHop) << "whole messages, device " << d;
      }
    }
    EXPECT_NEAR(Seconds((res[0].end - res[0].start).count()) / both, 1.0, 0.03);
  }
}

// Same results whichever order the chips are constructed in (the
// child-process version of this check runs the CLI twice in each order).
TEST(CollectiveDeterminismTest, ConstructionOrderDoesNotMatter) {
  const Topology t = *MakeTopology("v5e", {8, 4, 1}, WrapMode::kOn);
  NetworkOptions forward, reverse;
  reverse.reverse_construction = true;
  ASSERT_OK_AND_ASSIGN(
      Bench bench,
      MakeBench({&t, &t}, {TestConfig(), TestConfig()}, {forward, reverse}));
  std::vector<std::vector<int>> halves = {{}, {}};
  for (int d = 0; d < t.num_devices(); ++d)
    halves[(d * 7) % 32 < 16 ? 0 : 1].push_back(d);
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, halves));
  const CollectiveRequest r =
      Request(CollectiveOp::kAllReduce, 3 << 20, Algorithm::kAuto, groups);
  std::vector<int64_t> ends[2];
  for (int k = 0; k < 2; ++k) {
    ASSERT_OK_AND_ASSIGN(std::vector<JobResult> res,
                         RunCollectives(*bench.session, *bench.networks[k],
                                        {{r, AllDevices(t)}}));
    for (const auto& e : res[0].device_end) {
      ends[k].push_back((e - res[0].start).count());
    }
  }
  EXPECT_EQ(ends[0], ends[1]);
  const std::vector<LinkStats> a = bench.networks[0]->Links();
  const std::vector<LinkStats> b = bench.networks[1]->Links();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].bytes, b[i].bytes) << i;
    EXPECT_EQ(a[i].busy, b[i].busy) << i;
    EXPECT_EQ(a[i].peak_queue, b[i].peak_queue) << i;
  }
}

// v3: two devices per chip; the torus algorithm includes the on-chip core
// axis, and never beats its bound.
TEST(CollectiveCoreAxisTest, V3TorusUsesTheOnChipPath) {
  ASSERT_OK_AND_ASSIGN(Topology t, Slice("v3-32"));  // 4x4 chips, 32 devices
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, {AllDevices(t)}));
  EXPECT_THAT(groups->span_axes(0), ::testing::ElementsAre(3, 0, 1));
  const CollectiveRequest r =
      Request(CollectiveOp::kAllReduce, 32 << 20, Algorithm::kTorus, groups);
  ASSERT_OK_AND_ASSIGN(int64_t ps, TimeCollective(sim, r));
  EXPECT_GE(ps, CollectiveLowerBound(t, TestConfig(), r, 0).value().count());
  int64_t on_chip_bytes = 0;
  for (const LinkStats& l : sim.network->Links()) {
    if (l.dir >= kNumDirections) on_chip_bytes += l.bytes;
  }
  // Core axis first: each device sends half its buffer to its twin, then
  // gets it back in the all-gather (2 x 16 MiB per device, 32 devices).
  EXPECT_EQ(on_chip_bytes, int64_t{32} * 2 * (16 << 20));
}

// The auto rule (collective.h): for 16 MiB and more, every all_reduce,
// all_gather and reduce_scatter over the whole of a wrapped slice lands within
// 1.3x of the op's lower bound, with the preset's own rates. The group spans
// several axes, so auto runs them all at once (multi_axis); `torus` (one axis
// after another) was 3.0x on v4-128 for a 64 MiB all_reduce. all_to_all has
// one algorithm (direct) and is not part of this rule.
void ExpectAutoNearTheBound(absl::string_view slice) {
  ASSERT_OK_AND_ASSIGN(Topology t, Slice(slice));
  for (int a = 0; a < 3; ++a) {
    if (t.dims()[a] > 1) ASSERT_TRUE(t.wraps(a)) << slice << " axis " << a;
  }
  ASSERT_OK_AND_ASSIGN(const ChipPreset* preset,
                       FindChipPreset(t.generation().name));
  ASSERT_OK_AND_ASSIGN(NetConfig config, NetConfigFromPreset(*preset));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, config));
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, {AllDevices(t)}));
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                          CollectiveOp::kReduceScatter}) {
    for (int64_t bytes : {int64_t{16} << 20, int64_t{64} << 20,
                          int64_t{256} << 20}) {
      const CollectiveRequest r = Request(op, bytes, Algorithm::kAuto, groups);
      ASSERT_OK_AND_ASSIGN(
          std::vector<JobResult> res,
          RunCollectives(*sim.session, *sim.network, {{r, AllDevices(t)}}));
      const double ratio =
          static_cast<double>((res[0].end - res[0].start).count()) /
          CollectiveLowerBound(t, config, r, 0).value().count();
      std::cout << "[auto] " << slice << " " << CollectiveOpName(op) << " "
                << (bytes >> 20) << " MiB: " << AlgorithmName(res[0].algorithm)
                << ", " << ratio << "x the bound\n";
      EXPECT_EQ(res[0].algorithm, Algorithm::kMultiAxis);
      EXPECT_LE(ratio, 1.3) << slice << " " << CollectiveOpName(op) << " "
                            << bytes << " bytes";
      EXPECT_GE(ratio, 1.0);
    }
  }
}

TEST(CollectiveAutoTest, V4_128WithinOnePointThreeOfTheBound) {
  ExpectAutoNearTheBound("v4-128");
}
TEST(CollectiveAutoTest, V5p128WithinOnePointThreeOfTheBound) {
  ExpectAutoNearTheBound("v5p-128");
}
TEST(CollectiveAutoTest, V5e16x16WithinOnePointThreeOfTheBound) {
  ExpectAutoNearTheBound("v5litepod-256");
}

// One axis: torus (a bidirectional ring along it); several: multi_axis; a
// group that is not an aligned sub-torus: bidir_ring.
TEST(CollectiveAutoTest, AutoRunsEverySpannedAxisAtOnce) {
  ASSERT_OK_AND_ASSIGN(Topology t, Slice("v4-128"));
  ASSERT_OK_AND_ASSIGN(auto all, GroupPartition::Create(t, {AllDevices(t)}));
  CollectiveRequest r = Request(CollectiveOp::kAllReduce, 64 << 20,
                                Algorithm::kAuto, all);
  EXPECT_EQ(ResolveAlgorithm(t, r, 0).value(), Algorithm::kMultiAxis);
  ASSERT_OK_AND_ASSIGN(r.groups,
                       GroupPartition::Create(t, testing::AxisGroups(t, 2)));
  EXPECT_EQ(ResolveAlgorithm(t, r, 0).value(), Algorithm::kTorus);
  std::vector<std::vector<int>> pairs;
  for (int d = 0; d < t.num_devices(); d += 2) pairs.push_back({d, d + 1});
  // Consecutive ids are x neighbours: pairs of an axis of length 4 are not
  // every device of the axis.
  ASSERT_OK_AND_ASSIGN(r.groups, GroupPartition::Create(t, pairs));
  EXPECT_EQ(ResolveAlgorithm(t, r, 0).value(), Algorithm::kBidirRing);
  ASSERT_OK_AND_ASSIGN(Topology v3, Slice("v3-32"));
  ASSERT_OK_AND_ASSIGN(r.groups, GroupPartition::Create(v3, {AllDevices(v3)}));
  EXPECT_EQ(ResolveAlgorithm(v3, r, 0).value(), Algorithm::kMultiAxis);
}

TEST(CollectiveNetworkTest, TheNetworkIsBuiltOnlyWhileElaborating) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v5e", {2, 1, 1}, WrapMode::kOff));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_TRUE(sim.session->RunFor(common::Picoseconds(10)).ok());
  NetworkOptions o;
  o.name = "late";
  EXPECT_THAT(Network::Create(t, TestConfig(), o),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("must be built while the SystemC kernel "
                                 "elaborates")));
  NetConfig bad = TestConfig();
  bad.hop_latency = common::Picoseconds(0);
  EXPECT_THAT(Network::Create(t, bad, o),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("hop_latency=0 ps")));
}

// As a chip's schedule uses them: two collectives in flight on the same
// devices at once (matched by their order of starts), and a third started
// from each device's own completion callback.
TEST(CollectiveNetworkTest, OverlappingAndChainedCollectives) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v5e", {8, 1, 1}, WrapMode::kOn));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, {AllDevices(t)}));
  const CollectiveRequest one =
      Request(CollectiveOp::kAllReduce, 8 << 20, Algorithm::kAuto, groups);
  ASSERT_OK_AND_ASSIGN(int64_t alone, TimeCollective(sim, one));
  const common::Picoseconds start = sim.session->Now();
  std::vector<int64_t> first(8, -1), second(8, -1), third(8, -1);
  for (int d = 0; d < 8; ++d) {
    ASSERT_TRUE(sim.network->endpoint(d)
                    .Start(one,
                           [&, d](const CollectiveResult& r) {
                             first[d] = (r.end - start).count();
                           })
                    .ok());
    ASSERT_TRUE(sim.network->endpoint(d)
                    .Start(one,
                           [&, d](const CollectiveResult& r) {
                             second[d] = (r.end - start).count();
                             // The next op of this device's schedule.
                             ASSERT_TRUE(
                                 sim.network->endpoint(d)
                                     .Start(one,
                                            [&, d](const CollectiveResult& r3) {
                                              third[d] =
                                                  (r3.end - start).count();
                                            })
                                     .ok());
                           })
                    .ok());
  }
  ASSERT_TRUE(sim.session->RunUntilIdle().ok());
  for (int d = 0; d < 8; ++d) {
    EXPECT_GT(first[d], 0) << d;
    // Two at once share the links: both take longer than one alone, and the
    // pair finishes no sooner than twice the link-bound time of one.
    EXPECT_GT(second[d], alone) << d;
    EXPECT_GE(std::max(first[d], second[d]), 2 * alone * 9 / 10) << d;
    EXPECT_GE(third[d], second[d] + alone * 9 / 10) << d;
    EXPECT_EQ(sim.network->endpoint(d).stats().collectives, 4) << d;
  }
}

TEST(CollectiveNetworkTest, AStartErrorStartsNothing) {
  ASSERT_OK_AND_ASSIGN(Topology t,
                       MakeTopology("v5e", {4, 1, 1}, WrapMode::kOn));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, {AllDevices(t)}));
  CollectiveRequest r =
      Request(CollectiveOp::kAllReduce, -4, Algorithm::kAuto, groups);
  bool called = false;
  EXPECT_THAT(sim.network->endpoint(0).Start(
                  r, [&](const CollectiveResult&) { called = true; }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "all_reduce of -4 bytes: bytes must be > 0"));
  ASSERT_TRUE(sim.session->RunUntilIdle().ok());
  EXPECT_FALSE(called);
  EXPECT_EQ(sim.network->endpoint(0).stats().messages_sent, 0);
}


// The network's scheduler is woken by SystemC once per time with work and runs
// every chip due then: on a symmetric 8x8 torus all 64 chips are due at the
// same times, so SystemC activations are a small fraction of the chip runs
// (the per-chip process model needed about one activation per chip run).
TEST(CollectiveSchedulerTest, OneSystemCWakeUpRunsEveryChipDueThen) {
  const Topology t = *MakeTopology("v5e", {8, 8, 1}, WrapMode::kOn);
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, {AllDevices(t)}));
  const CollectiveRequest r =
      Request(CollectiveOp::kAllReduce, 1 << 20, Algorithm::kAuto, groups);
  ASSERT_TRUE(
      RunCollectives(*sim.session, *sim.network, {{r, AllDevices(t)}}).ok());
  int64_t messages = 0;
  for (int d = 0; d < t.num_devices(); ++d) {
    messages += sim.network->endpoint(d).stats().messages_sent;
  }
  const int64_t runs = sim.network->chip_runs();
  EXPECT_GT(sim.network->activations(), 0);
  EXPECT_LE(sim.network->activations() * 32, runs);
  EXPECT_LE(runs, sim.network->events());
  EXPECT_GE(sim.network->events(), messages);
}

// Packet mode to the picosecond, pinned from the network that queued every
// packet of a message at once (before a message's packets waiting at its
// sender became one entry): two interleaved groups whose rings share links,
// 1000-byte packets (the last one short), on a v3 torus with its on-chip
// path. Link busy time, bytes and peak queue (in packets) are pinned too.
TEST(CollectivePacketTest, PacketTimelineIsPinned) {
  ASSERT_OK_AND_ASSIGN(Topology t, Slice("v3-32"));
  NetConfig config = TestConfig();
  config.packet_bytes = 1000;
  ASSERT_OK_AND_ASSIGN(Bench bench, MakeBench({&t}, {config},
                                              std::vector<NetworkOptions>(1)));
  std::vector<std::vector<int>> groups = {{}, {}};
  for (int d = 0; d < t.num_devices(); ++d) groups[d % 2].push_back(d);
  ASSERT_OK_AND_ASSIGN(auto partition, GroupPartition::Create(t, groups));
  std::vector<int64_t> ends;
  for (const CollectiveRequest& r :
       {Request(CollectiveOp::kAllReduce, 400 << 10, Algorithm::kBidirRing,
                partition),
        Request(CollectiveOp::kAllToAll, 160 << 10, Algorithm::kAuto,
                partition)}) {
    ASSERT_OK_AND_ASSIGN(
        std::vector<JobResult> res,
        RunCollectives(*bench.session, *bench.networks[0], {{r, AllDevices(t)}}));
    for (const auto& e : res[0].device_end) {
      ends.push_back((e - res[0].start).count());
    }
  }
  int64_t packets = 0, bytes = 0, busy = 0, peak = 0;
  for (const LinkStats& l : bench.networks[0]->Links()) {
    packets += l.packets;
    bytes += l.bytes;
    busy += l.busy.count();
    peak = std::max(peak, l.peak_queue);
  }
  EXPECT_THAT(ends, ::testing::ElementsAreArray<int64_t>({
      75790865, 75853089, 75817500, 75879724, 77333107, 77350885, 76828481,
      76890705, 75675309, 75693087, 76347687, 76365465, 75807966, 75825744,
      77534427, 77641097, 78401801, 78419579, 74806223, 74912893, 77830903,
      77848681, 77435367, 77453145, 76449947, 76467725, 76232195, 76249973,
      77449947, 77467725, 77977541, 78039765, 8988667, 8994001, 9245527,
      9250861, 9821586, 9826920, 9276714, 9282048, 10276714, 10282048,
      11731842, 11737176, 9821586, 9826920, 11276714, 11282048, 8911330,
      8916664, 8366458, 8371792, 10223304, 10228638, 10086523, 10091857,
      9276714, 9282048, 10731842, 10737176, 10821586, 10826920, 12276714,
      12282048}));
  EXPECT_EQ(packets, 60880);
  EXPECT_EQ(bytes, 59187200);
  EXPECT_EQ(busy, 1315316320);
  EXPECT_EQ(peak, 263);
}

}  // namespace
}  // namespace tpusim::sim::net
