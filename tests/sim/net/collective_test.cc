// Formula checks of the collective algorithms (sheet C.3), one SystemC kernel
// per test (each TEST runs in its own process).

#include <cmath>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/sim/net/net_test_util.h"

namespace tpusim::sim::net {
namespace {

using testing::AxisGroups;
using testing::MakeSim;
using testing::MakeTopology;
using testing::TestConfig;
using testing::TimeCollective;

constexpr double kB = 45e9;
constexpr double kHop = 1e-6;

double Seconds(int64_t ps) { return static_cast<double>(ps) * 1e-12; }

// Ring all-reduce of S bytes over N chips: 2(N-1)/N·S/B + 2(N-1)·hop (C.3).
TEST(CollectiveFormulaTest, RingAllReduceOnAWrappedAxis) {
  ASSERT_OK_AND_ASSIGN(Topology t, MakeTopology("v5e", {16, 1, 1},
                                                WrapMode::kGeneration));
  ASSERT_TRUE(t.wraps(0));
  ASSERT_OK_AND_ASSIGN(testing::Sim sim, MakeSim(t, TestConfig()));
  ASSERT_OK_AND_ASSIGN(auto groups, GroupPartition::Create(t, AxisGroups(t, 0)));
  const int64_t s = 64 << 20;
  CollectiveRequest r{CollectiveOp::kAllReduce, s, Algorithm::kRing, groups,
                      nullptr};
  ASSERT_OK_AND_ASSIGN(int64_t ps, TimeCollective(sim, r));
  const int n = 16;
  const double formula = 2.0 * (n - 1) / n * s / kB + 2 * (n - 1) * kHop;
  EXPECT_NEAR(Seconds(ps) / formula, 1.0, 0.05) << Seconds(ps);
}

}  // namespace
}  // namespace tpusim::sim::net
