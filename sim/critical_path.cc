#include "sim/critical_path.h"

#include <algorithm>

namespace tpusim::sim {

namespace {

// Adds what timeline `points` spent from point `lo` to point `hi`.
void AddBetween(const std::vector<PathPoint>& points, int lo, int hi,
                CriticalPathTime& out) {
  const PathPoint& a = points[lo];
  const PathPoint& b = points[hi];
  int64_t spans = 0;
  for (int c = 0; c < kNumSpanCategories; ++c) {
    const int64_t d = b.cum[c] - a.cum[c];
    out[c] += d;
    spans += d;
  }
  out[kCriticalIdle] += (b.t - a.t) - spans;
}

}  // namespace

CriticalPathTime WalkCriticalPath(const PathTimeline& timeline, int last) {
  CriticalPathTime out = {};
  const int collective_index = SpanCategoryIndex("collective");
  int at_timeline = last;
  int at = static_cast<int>(timeline.points[last].size()) - 1;
  // Each step moves to an earlier time (a jump lands at an arrival before
  // the wait's end) or an earlier point: bounded by the points.
  size_t budget = 0;
  for (const auto& p : timeline.points) budget += p.size() + 1;
  while (budget-- > 0) {
    const std::vector<PathPoint>& points = timeline.points[at_timeline];
    const std::vector<PathWait>& waits = timeline.waits[at_timeline];
    // The latest wait that ended at or before the path's point.
    const PathWait* wait = nullptr;
    for (auto it = waits.rbegin(); it != waits.rend(); ++it) {
      if (it->p1 <= at) {
        wait = &*it;
        break;
      }
    }
    if (wait == nullptr) {
      AddBetween(points, 0, at, out);
      return out;
    }
    AddBetween(points, wait->p1, at, out);
    const std::vector<PathMember>& members =
        timeline.collectives[wait->collective];
    const PathMember& self = members[wait->member];
    // The latest arrival among the members this part depends on.
    const PathMember* latest = nullptr;
    int64_t latest_t = 0;
    auto consider = [&](const PathMember& m) {
      if (m.arrival < 0) return;
      const int64_t t = timeline.points[m.timeline][m.arrival].t;
      if (latest == nullptr || t > latest_t ||
          (t == latest_t && m.device < latest->device)) {
        latest = &m;
        latest_t = t;
      }
    };
    if (self.group >= 0) {
      for (const PathMember& m : members) {
        if (m.group == self.group) consider(m);
      }
    } else {
      consider(self);
      if (self.source >= 0) consider(members[self.source]);
    }
    const int64_t w0 = points[wait->p0].t;
    const int64_t w1 = points[wait->p1].t;
    if (latest == nullptr || latest == &self || latest_t <= w0 ||
        latest_t >= w1) {
      // The network's time: the path stays on this device.
      AddBetween(points, wait->p0, wait->p1, out);
      at = wait->p0;
      continue;
    }
    out[collective_index] += w1 - latest_t;
    at_timeline = latest->timeline;
    at = latest->arrival;
  }
  return out;
}

}  // namespace tpusim::sim
