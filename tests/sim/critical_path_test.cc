// The critical path through collectives (sim/critical_path.h) on hand-made
// timelines: a wait on a collective whose latest member arrived after the
// wait began moves the path to that member, and the path's categories add
// up to the call.

#include "sim/critical_path.h"

#include <vector>

#include "gtest/gtest.h"

namespace tpusim::sim {
namespace {

constexpr int kMxu = 0;
constexpr int kMemory = 2;
constexpr int kCollective = 3;
constexpr int kInput = 5;
constexpr int kHost = 6;

PathPoint Point(int64_t t, std::vector<std::pair<int, int64_t>> cum) {
  PathPoint p;
  p.t = t;
  for (const auto& [c, ps] : cum) p.cum[c] = ps;
  return p;
}

// Two devices in one all-reduce (collective 0), after 100 ps of host loop:
// * device 0 computes (mxu) until 300, arrives and waits until 1000, then
//   computes until 1200 (it finishes last);
// * device 1 waits for its input until 800, arrives, waits until 1000, then
//   a memory-bound kernel until 1100.
PathTimeline TwoDevices() {
  PathTimeline t;
  t.points = {
      {Point(0, {}), Point(300, {{kHost, 100}, {kMxu, 200}}),
       Point(300, {{kHost, 100}, {kMxu, 200}}),
       Point(1000, {{kHost, 100}, {kMxu, 200}, {kCollective, 700}}),
       Point(1200, {{kHost, 100}, {kMxu, 400}, {kCollective, 700}})},
      {Point(0, {}), Point(800, {{kHost, 100}, {kInput, 700}}),
       Point(800, {{kHost, 100}, {kInput, 700}}),
       Point(1000, {{kHost, 100}, {kInput, 700}, {kCollective, 200}}),
       Point(1100,
             {{kHost, 100}, {kInput, 700}, {kCollective, 200}, {kMemory, 100}})}};
  t.waits = {{PathWait{0, 0, 2, 3}}, {PathWait{0, 1, 2, 3}}};
  PathMember m0{0, 0, 1, 0, -1};
  PathMember m1{1, 1, 1, 0, -1};
  t.collectives = {{m0, m1}};
  return t;
}

TEST(CriticalPathTest, TheLateMembersInputMovesThePathToIt) {
  // Back from device 0's end: its last 200 ps of mxu; its wait began at 300
  // but device 1 arrived at 800, so the wait's last 200 ps are the
  // collective's and the path goes on device 1 before 800: its input (700)
  // and the host loop (100).
  const CriticalPathTime ps = WalkCriticalPath(TwoDevices(), /*last=*/0);
  CriticalPathTime want = {};
  want[kHost] = 100;
  want[kInput] = 700;
  want[kCollective] = 200;
  want[kMxu] = 200;
  EXPECT_EQ(ps, want);
  int64_t sum = 0;
  for (int64_t v : ps) sum += v;
  EXPECT_EQ(sum, 1200);  // the call, once
}

TEST(CriticalPathTest, AWaitTheDeviceItselfCausedStaysOnIt) {
  // Back from device 1: it arrived last, so its wait is the network's time.
  const CriticalPathTime ps = WalkCriticalPath(TwoDevices(), /*last=*/1);
  CriticalPathTime want = {};
  want[kHost] = 100;
  want[kInput] = 700;
  want[kCollective] = 200;
  want[kMemory] = 100;
  EXPECT_EQ(ps, want);
}

TEST(CriticalPathTest, MembersOutsideTheGroupOrArrivedBeforeTheWaitDoNotMoveIt) {
  // Device 1 in another group: device 0's whole wait is collective time.
  PathTimeline other_group = TwoDevices();
  other_group.collectives[0][1].group = 1;
  CriticalPathTime want = {};
  want[kHost] = 100;
  want[kMxu] = 400;
  want[kCollective] = 700;
  EXPECT_EQ(WalkCriticalPath(other_group, 0), want);
  // Device 1 arrived at 300 too (a tie with device 0's own arrival: the
  // lowest device id, device 0 itself): the path stays.
  PathTimeline tie = TwoDevices();
  tie.points[1][1].t = 300;
  EXPECT_EQ(WalkCriticalPath(tie, 0), want);
  // A permute: device 0 depends on its source only; with no source its
  // wait is the network's.
  PathTimeline permute = TwoDevices();
  for (PathMember& m : permute.collectives[0]) m.group = -1;
  EXPECT_EQ(WalkCriticalPath(permute, 0), want);
  permute.collectives[0][0].source = 1;
  want[kMxu] = 200;
  want[kCollective] = 200;
  want[kInput] = 700;
  EXPECT_EQ(WalkCriticalPath(permute, 0), want);
}

}  // namespace
}  // namespace tpusim::sim
