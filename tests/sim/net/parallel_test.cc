// The network's chips run on several threads (NetworkOptions::threads) with
// results identical to one thread: every collective result, link and
// endpoint counter, event and chip-run count, and the order the done
// callbacks run in. Each TEST is its own process (one SystemC elaboration
// each) and elaborates one network per thread count, side by side.

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/sim/net/net_test_util.h"

namespace tpusim::sim::net {
namespace {

using testing::AxisGroups;
using testing::Request;
using testing::MakeTopology;
using testing::TestConfig;
using ::tpusim::testing::StatusIs;

constexpr int kThreadCounts[] = {1, 2, 4};

struct Bench {
  std::unique_ptr<KernelSession> session;
  std::vector<std::unique_ptr<Network>> networks;  // by kThreadCounts
};

absl::StatusOr<Bench> MakeBench(const Topology& t, const NetConfig& config) {
  Bench b;
  TPUSIM_ASSIGN_OR_RETURN(
      b.session, KernelSession::Create([&]() -> absl::Status {
        for (int threads : kThreadCounts) {
          NetworkOptions o;
          o.name = absl::StrCat("ici_threads", threads);
          o.threads = threads;
          TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<Network> n,
                                  Network::Create(t, config, o));
          b.networks.push_back(std::move(n));
        }
        return absl::OkStatus();
      }));
  return b;
}

// Times from t0 (the networks run one after another in one session).
std::string ResultLine(int job, int device, const CollectiveResult& r,
                       common::Picoseconds t0) {
  return absl::StrCat("done job ", job, " device ", device, " ",
                      CollectiveOpName(r.op), " ", AlgorithmName(r.algorithm),
                      " ", r.bytes, " B start ", (r.start - t0).count(),
                      " end ", (r.end - t0).count());
}

// Everything the network counts, one line per link, endpoint and total.
std::vector<std::string> Counters(Network& net) {
  std::vector<std::string> out;
  for (const LinkStats& l : net.Links()) {
    out.push_back(absl::StrCat("link ", l.chip, " ", l.dir, " packets ",
                               l.packets, " bytes ", l.bytes, " busy ",
                               l.busy.count(), " peak ", l.peak_queue));
  }
  for (int d = 0; d < net.topology().num_devices(); ++d) {
    const EndpointStats& s = net.endpoint(d).stats();
    out.push_back(absl::StrCat("endpoint ", d, " ", s.collectives, " ",
                               s.messages_sent, " ", s.bytes_sent, " ",
                               s.messages_received, " ", s.bytes_received));
  }
  out.push_back(absl::StrCat("events ", net.events()));
  out.push_back(absl::StrCat("chip_runs ", net.chip_runs()));
  out.push_back(absl::StrCat("activations ", net.activations()));
  return out;
}

// Equal line by line (the first difference is reported, not the lists).
void ExpectSame(const std::vector<std::string>& a,
                const std::vector<std::string>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i], b[i]) << what << ", line " << i;
  }
}

// Starts each job on its devices (jobs in order) on every network and runs
// the session until idle; returns per network the done callbacks in the
// order they ran, then the counters.
std::vector<std::vector<std::string>> RunOnEach(
    Bench& bench, const std::vector<CollectiveJob>& jobs) {
  std::vector<std::vector<std::string>> out;
  for (std::unique_ptr<Network>& net : bench.networks) {
    auto log = std::make_shared<std::vector<std::string>>();
    const common::Picoseconds t0 = bench.session->Now();
    for (size_t j = 0; j < jobs.size(); ++j) {
      for (int d : jobs[j].devices) {
        const absl::Status s = net->endpoint(d).Start(
            jobs[j].request, [log, j, d, t0](const CollectiveResult& r) {
              log->push_back(ResultLine(static_cast<int>(j), d, r, t0));
            });
        EXPECT_TRUE(s.ok()) << s;
      }
    }
    EXPECT_TRUE(bench.session->RunUntilIdle().ok());
    std::vector<std::string> lines = *log;
    for (std::string& line : Counters(*net)) lines.push_back(std::move(line));
    out.push_back(std::move(lines));
  }
  return out;
}

// All thread counts agree, the parallel ones did run batches in parallel,
// and every device of every job finished.
void ExpectIdentical(Bench& bench, const std::vector<CollectiveJob>& jobs) {
  const std::vector<std::vector<std::string>> runs = RunOnEach(bench, jobs);
  size_t starts = 0;
  for (const CollectiveJob& j : jobs) starts += j.devices.size();
  int dones = 0;
  for (const std::string& line : runs[0]) {
    if (line.rfind("done ", 0) == 0) ++dones;
  }
  EXPECT_EQ(dones, static_cast<int>(starts));
  for (size_t k = 0; k < bench.networks.size(); ++k) {
    EXPECT_EQ(bench.networks[k]->threads(), kThreadCounts[k]);
    if (kThreadCounts[k] == 1) {
      EXPECT_EQ(bench.networks[k]->parallel_batches(), 0);
    } else {
      EXPECT_GT(bench.networks[k]->parallel_batches(), 0);
    }
    if (k > 0) {
      ExpectSame(runs[0], runs[k],
                 absl::StrCat("threads 1 vs ", kThreadCounts[k]));
    }
  }
}

// 16x16 = 256 chips: above the smallest batch run in parallel.
Topology Torus16x16() {
  return *MakeTopology("v5e", {16, 16, 1}, WrapMode::kOn);
}

TEST(NetParallelTest, TorusAllReduce) {
  const Topology t = Torus16x16();
  ASSERT_OK_AND_ASSIGN(Bench bench, MakeBench(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto all, GroupPartition::Create(t, {AllDevices(t)}));
  ExpectIdentical(bench, {{Request(CollectiveOp::kAllReduce, 4 << 20,
                                   Algorithm::kAuto, all),
                           AllDevices(t)}});
}

TEST(NetParallelTest, AllToAllAndPermute) {
  const Topology t = Torus16x16();
  ASSERT_OK_AND_ASSIGN(Bench bench, MakeBench(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto all, GroupPartition::Create(t, {AllDevices(t)}));
  ExpectIdentical(bench, {{Request(CollectiveOp::kAllToAll, 256 << 10,
                                   Algorithm::kAuto, all),
                           AllDevices(t)}});
  // A random permutation (fixed seed) without fixed points.
  std::vector<int> perm = AllDevices(t);
  std::mt19937 rng(20261204);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<std::pair<int, int>> pairs;
  for (size_t i = 0; i < perm.size(); ++i) {
    pairs.push_back({perm[i], perm[(i + 1) % perm.size()]});
  }
  CollectiveRequest permute;
  permute.op = CollectiveOp::kCollectivePermute;
  permute.bytes = 1 << 20;
  ASSERT_OK_AND_ASSIGN(permute.pairs, PermutePairs::Create(t, pairs));
  ExpectIdentical(bench, {{permute, AllDevices(t)}});
}

// Several collectives in flight at once on shared links: lines along x,
// lines along y, a ring over two interleaved halves (routed), all_to_all
// along x.
TEST(NetParallelTest, OverlappingCollectives) {
  const Topology t = Torus16x16();
  ASSERT_OK_AND_ASSIGN(Bench bench, MakeBench(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto x_lines, GroupPartition::Create(t, AxisGroups(t, 0)));
  ASSERT_OK_AND_ASSIGN(auto y_lines, GroupPartition::Create(t, AxisGroups(t, 1)));
  std::vector<std::vector<int>> halves = {{}, {}};
  for (int d = 0; d < t.num_devices(); ++d) halves[d % 2].push_back(d);
  ASSERT_OK_AND_ASSIGN(auto interleaved, GroupPartition::Create(t, halves));
  ExpectIdentical(
      bench,
      {{Request(CollectiveOp::kAllReduce, 1 << 20, Algorithm::kAuto, x_lines),
        AllDevices(t)},
       {Request(CollectiveOp::kAllGather, 1 << 20, Algorithm::kRing, y_lines),
        AllDevices(t)},
       {Request(CollectiveOp::kReduceScatter, 128 << 10, Algorithm::kBidirRing,
                interleaved),
        AllDevices(t)},
       {Request(CollectiveOp::kAllToAll, 64 << 10, Algorithm::kAuto, x_lines),
        AllDevices(t)}});
}

TEST(NetParallelTest, PacketMode) {
  const Topology t = Torus16x16();
  NetConfig config = TestConfig();
  config.packet_bytes = 4096;
  ASSERT_OK_AND_ASSIGN(Bench bench, MakeBench(t, config));
  ASSERT_OK_AND_ASSIGN(auto all, GroupPartition::Create(t, {AllDevices(t)}));
  ExpectIdentical(bench, {{Request(CollectiveOp::kAllReduce, 256 << 10,
                                   Algorithm::kMultiAxis, all),
                           AllDevices(t)}});
}

// A 3-D torus (v4, 4x4x8 = 128 chips: exactly the smallest parallel batch),
// every axis at once.
TEST(NetParallelTest, ThreeDimensionalTorus) {
  const Topology t = *MakeTopology("v4", {4, 4, 8}, WrapMode::kGeneration);
  ASSERT_EQ(t.num_chips(), 128);
  ASSERT_OK_AND_ASSIGN(Bench bench, MakeBench(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto all, GroupPartition::Create(t, {AllDevices(t)}));
  ExpectIdentical(bench, {{Request(CollectiveOp::kAllReduce, 3 << 20,
                                   Algorithm::kMultiAxis, all),
                           AllDevices(t)}});
}

// v3: two cores per chip (the on-chip path), 16x16 chips.
TEST(NetParallelTest, TwoCoresPerChip) {
  const Topology t = *MakeTopology("v3", {16, 16, 1}, WrapMode::kOn);
  ASSERT_EQ(t.devices_per_chip(), 2);
  ASSERT_OK_AND_ASSIGN(Bench bench, MakeBench(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto all, GroupPartition::Create(t, {AllDevices(t)}));
  ExpectIdentical(bench, {{Request(CollectiveOp::kAllReduce, 2 << 20,
                                   Algorithm::kAuto, all),
                           AllDevices(t)}});
}

// A done callback that starts the device's next collective (as a chip's
// schedule does) runs on the SystemC thread after the batch, in chip order,
// for every thread count.
TEST(NetParallelTest, DoneCallbackStartsTheNextCollective) {
  const Topology t = Torus16x16();
  ASSERT_OK_AND_ASSIGN(Bench bench, MakeBench(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto all, GroupPartition::Create(t, {AllDevices(t)}));
  const CollectiveRequest r =
      Request(CollectiveOp::kAllReduce, 1 << 20, Algorithm::kAuto, all);
  std::vector<std::vector<std::string>> logs;
  for (std::unique_ptr<Network>& net : bench.networks) {
    auto log = std::make_shared<std::vector<std::string>>();
    Network* n = net.get();
    const common::Picoseconds t0 = bench.session->Now();
    for (int d = 0; d < t.num_devices(); ++d) {
      ASSERT_TRUE(n->endpoint(d)
                      .Start(r,
                             [log, n, r, d, t0](const CollectiveResult& first) {
                               log->push_back(ResultLine(0, d, first, t0));
                               const absl::Status s = n->endpoint(d).Start(
                                   r, [log, d, t0](const CollectiveResult& second) {
                                     log->push_back(ResultLine(1, d, second, t0));
                                   });
                               EXPECT_TRUE(s.ok()) << s;
                             })
                      .ok());
    }
    ASSERT_TRUE(bench.session->RunUntilIdle().ok());
    ASSERT_EQ(log->size(), 2u * t.num_devices());
    for (int d = 0; d < t.num_devices(); ++d) {
      EXPECT_EQ(n->endpoint(d).stats().collectives, 2) << d;
    }
    std::vector<std::string> lines = *log;
    for (std::string& line : Counters(*n)) lines.push_back(std::move(line));
    logs.push_back(std::move(lines));
  }
  EXPECT_GT(bench.networks[1]->parallel_batches(), 0);
  for (size_t k = 1; k < logs.size(); ++k) {
    ExpectSame(logs[0], logs[k],
               absl::StrCat("threads 1 vs ", kThreadCounts[k]));
  }
}

TEST(NetParallelTest, ThreadsOutOfRangeIsAnError) {
  const Topology t = *MakeTopology("v5e", {2, 2, 1}, WrapMode::kOff);
  NetworkOptions bad;
  bad.threads = -2;
  std::unique_ptr<Network> net;
  absl::Status create = absl::OkStatus();
  absl::Status too_many = absl::OkStatus();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KernelSession> session,
                       KernelSession::Create([&]() -> absl::Status {
                         create = Network::Create(t, TestConfig(), bad).status();
                         bad.threads = 1025;
                         too_many =
                             Network::Create(t, TestConfig(), bad).status();
                         NetworkOptions any;
                         any.name = "any";
                         any.threads = 0;
                         TPUSIM_ASSIGN_OR_RETURN(
                             net, Network::Create(t, TestConfig(), any));
                         return absl::OkStatus();
                       }));
  EXPECT_THAT(create,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "NetworkOptions.threads=-2 is not allowed; expected "
                       "1..1024, or 0 for one per hardware thread"));
  EXPECT_THAT(too_many,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "NetworkOptions.threads=1025 is not allowed; expected "
                       "1..1024, or 0 for one per hardware thread"));
  // 0: one per hardware thread; a pod this small never runs in parallel.
  EXPECT_GE(net->threads(), 1);
  ASSERT_OK_AND_ASSIGN(auto all, GroupPartition::Create(t, {AllDevices(t)}));
  ASSERT_TRUE(RunCollectives(*session, *net,
                             {{Request(CollectiveOp::kAllReduce, 1 << 20,
                                       Algorithm::kAuto, all),
                               AllDevices(t)}})
                  .ok());
  EXPECT_EQ(net->parallel_batches(), 0);
}

}  // namespace
}  // namespace tpusim::sim::net
