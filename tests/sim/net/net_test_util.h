// Helpers for the sim/net tests: layouts, configs and one-shot runs.

#ifndef TPUSIM_TESTS_SIM_NET_NET_TEST_UTIL_H_
#define TPUSIM_TESTS_SIM_NET_NET_TEST_UTIL_H_

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "gtest/gtest.h"
#include "sim/kernel.h"
#include "sim/net/collective.h"
#include "sim/net/collective_runner.h"
#include "sim/net/network.h"
#include "sim/net/topology.h"
#include "strategy/runtime/slice.h"

#define TPUSIM_NET_CONCAT_INNER(a, b) a##b
#define TPUSIM_NET_CONCAT(a, b) TPUSIM_NET_CONCAT_INNER(a, b)
// ASSERT_OK_AND_ASSIGN(lhs, expr): asserts a StatusOr is OK and assigns its
// value (this Abseil release has no status matchers of its own).
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL(TPUSIM_NET_CONCAT(statusor_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL(var, lhs, expr) \
  auto var = (expr);                              \
  ASSERT_TRUE(var.ok()) << var.status();          \
  lhs = std::move(*var)

namespace tpusim::sim::net::testing {

// A request over replica groups.
inline CollectiveRequest Request(CollectiveOp op, int64_t bytes, Algorithm a,
                                 std::shared_ptr<const GroupPartition> groups) {
  CollectiveRequest r;
  r.op = op;
  r.bytes = bytes;
  r.algorithm = a;
  r.groups = std::move(groups);
  return r;
}

// B = 45 GB/s (sheet A.4/A.5 achieved), 1 us per hop (A.9 item 6), a vector
// rate far above B (so reductions hide behind the links).
inline NetConfig TestConfig() {
  NetConfig c;
  c.link_bytes_per_second = 45e9;
  c.hop_latency = common::Picoseconds::FromMicroseconds(1);
  c.on_chip_bytes_per_second = 100e9;
  c.on_chip_latency = common::Picoseconds::FromNanoseconds(100);
  c.vector_reduce_bytes_per_second = 4e12;
  return c;
}

inline absl::StatusOr<Topology> MakeTopology(absl::string_view generation,
                                             std::array<int, 3> mesh,
                                             WrapMode wrap) {
  TPUSIM_ASSIGN_OR_RETURN(const runtime::TpuGeneration* g,
                          runtime::FindTpuGeneration(generation));
  TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                          runtime::LayoutCustomChipMesh(*g, mesh));
  return Topology::Create(layout, wrap);
}

// Elaborates a network (one per process) and keeps the session.
struct Sim {
  std::unique_ptr<KernelSession> session;
  std::unique_ptr<Network> network;
};

inline absl::StatusOr<Sim> MakeSim(const Topology& topology,
                                   const NetConfig& config,
                                   NetworkOptions options = {}) {
  Sim sim;
  TPUSIM_ASSIGN_OR_RETURN(
      sim.session, KernelSession::Create([&]() -> absl::Status {
        TPUSIM_ASSIGN_OR_RETURN(sim.network,
                                Network::Create(topology, config, options));
        return absl::OkStatus();
      }));
  return sim;
}

// Groups along one axis (0..2 = x, y, z) of a 1-device-per-chip topology:
// each group is a line of chips in coordinate order.
inline std::vector<std::vector<int>> AxisGroups(const Topology& t, int axis) {
  std::vector<std::vector<int>> groups;
  for (int chip = 0; chip < t.num_chips(); ++chip) {
    std::array<int, 3> c = t.coords(chip);
    if (c[axis] != 0) continue;
    std::vector<int> g;
    for (int v = 0; v < t.dims()[axis]; ++v) {
      c[axis] = v;
      g.push_back(t.device_at(t.chip_at(c), 0));
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

// Runs one request on every device and returns the collective's time in ps.
inline absl::StatusOr<int64_t> TimeCollective(Sim& sim,
                                              const CollectiveRequest& r) {
  TPUSIM_ASSIGN_OR_RETURN(
      std::vector<JobResult> res,
      RunCollectives(*sim.session, *sim.network,
                     {{r, AllDevices(sim.network->topology())}}));
  return (res[0].end - res[0].start).count();
}

}  // namespace tpusim::sim::net::testing

#endif  // TPUSIM_TESTS_SIM_NET_NET_TEST_UTIL_H_
