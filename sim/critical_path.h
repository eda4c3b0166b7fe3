// sim/critical_path.h
//
// The critical path of a device call, walked backwards through the
// collectives: from the device that finished last, back to the call's start.
// Where the path reaches a wait on a collective whose latest member (among
// the members this device's part depends on) arrived after the wait began,
// the wait was that member's doing: the path takes the part of the wait
// after that arrival as collective time and continues on the late member
// from its arrival, attributing its earlier time to its own spans (its
// input, its kernels, ...). Otherwise (this device arrived last, or every
// member had arrived before it began to wait) the wait is the network's
// time and the path stays on the device. Ties between members: the lowest
// device id. The path covers the call exactly once: its category times add
// up to the call's length.
//
//   PathTimeline t;                       // filled by SimBackend's walk
//   t.points = {...}; t.waits = {...}; t.collectives = {...};
//   CriticalPathTime ps = WalkCriticalPath(t, /*last=*/0);
//   ps[kCriticalIdle] ...                 // time in no span on the path
//
// Plain C++ (no SystemC): SimBackend records the timeline as its walk runs;
// tests build one by hand.

#ifndef TPUSIM_SIM_CRITICAL_PATH_H_
#define TPUSIM_SIM_CRITICAL_PATH_H_

#include <array>
#include <cstdint>
#include <vector>

#include "sim/chip/chip.h"

namespace tpusim::sim {

// A device's timeline of a call, as the path needs it: points in time
// order, each with the device's cumulative span time per category
// (kSpanCategories order) at that time. Time between two points that no
// span covers is idle.
struct PathPoint {
  int64_t t = 0;
  std::array<int64_t, kNumSpanCategories> cum = {};
};
// A wait on a collective (from points[p0] to points[p1] of the device that
// waited): its collective and the waiting device's member index in it.
struct PathWait {
  int collective = 0;
  int member = 0;
  int p0 = 0;
  int p1 = 0;
};
struct PathMember {
  int timeline = 0;  // index into PathTimeline::points (the member's device)
  int device = 0;    // its device id (ties: the lowest)
  int arrival = -1;  // the point of its arrival (start) on its timeline
  // The members a member's part depends on: those with its group (>= 0);
  // or, with group -1 (a permute), itself and its source (-1: none).
  int group = 0;
  int source = -1;
};
struct PathTimeline {
  // Per device timeline (each starts with the call's start point).
  std::vector<std::vector<PathPoint>> points;
  std::vector<std::vector<PathWait>> waits;  // per timeline, in time order
  std::vector<std::vector<PathMember>> collectives;  // by collective id
};

// Time on the path per category: kSpanCategories, then idle.
inline constexpr int kCriticalIdle = kNumSpanCategories;
using CriticalPathTime = std::array<int64_t, kNumSpanCategories + 1>;

// The path ending at the last point of timeline `last`, back to the first
// point of the timeline it reaches (the call's start).
CriticalPathTime WalkCriticalPath(const PathTimeline& timeline, int last);

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_CRITICAL_PATH_H_
