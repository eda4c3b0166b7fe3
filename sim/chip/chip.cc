#include "sim/chip/chip.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "common/check.h"

namespace tpusim::sim {

using common::Picoseconds;

int SpanCategoryIndex(const char* category) {
  for (int i = 0; i < kNumSpanCategories; ++i) {
    if (std::strcmp(category, kSpanCategories[i]) == 0) return i;
  }
  TPUSIM_CHECK(false) << "unknown span category " << category;
  return 0;
}

size_t HbmArbiter::Split(std::vector<Step>& steps, int64_t t) {
  auto it = std::lower_bound(
      steps.begin(), steps.end(), t,
      [](const Step& s, int64_t v) { return s.at < v; });
  if (it != steps.end() && it->at == t) {
    return static_cast<size_t>(it - steps.begin());
  }
  const double used = it == steps.begin() ? 0.0 : std::prev(it)->used;
  it = steps.insert(it, Step{t, used});
  return static_cast<size_t>(it - steps.begin());
}

namespace {

// The first breakpoint after `t` of a lane.
template <typename Steps>
size_t After(const Steps& steps, int64_t t) {
  return static_cast<size_t>(
      std::upper_bound(steps.begin(), steps.end(), t,
                       [](int64_t v, const auto& s) { return v < s.at; }) -
      steps.begin());
}

}  // namespace

Picoseconds HbmArbiter::Reserve(Picoseconds start, double bytes,
                                double max_rate, Lane lane) {
  if (!(bytes > 0)) return start;
  if (start < horizon_) {
    if (violations_.count++ == 0) {
      violations_.start = start;
      violations_.horizon = horizon_;
    }
    start = horizon_;
  }
  const double limit = std::min(max_rate, bytes_per_second_);
  TPUSIM_CHECK(limit > 0) << max_rate;
  bytes_ += bytes;
  // Free of bandwidth up to a rounding error: full.
  const double full = bytes_per_second_ * (1 - 1e-12);
  // Walk both lanes' breakpoints from `start` in time order: each piece
  // runs at what their sum leaves (at most `limit`) until the next
  // breakpoint or the last byte.
  std::vector<Piece>& pieces = pieces_;
  pieces.clear();
  double left = bytes;
  int64_t t = start.count();
  const std::vector<Step>& k = steps_[kKernels];
  const std::vector<Step>& d = steps_[kDma];
  size_t ik = After(k, t), id = After(d, t);
  constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  for (;;) {
    const double used = (ik == 0 ? 0.0 : k[ik - 1].used) +
                        (id == 0 ? 0.0 : d[id - 1].used);
    const int64_t next = std::min(ik < k.size() ? k[ik].at : kEnd,
                                  id < d.size() ? d[id].at : kEnd);
    const bool last = next == kEnd;
    const double rate = std::min(limit, bytes_per_second_ - used);
    if (used < full && rate > 0) {
      const int64_t need = TimeAtRate(left, rate).count();
      if (last || t + need <= next) {
        pieces.push_back({t, t + need, rate});
        t += need;
        break;
      }
      pieces.push_back({t, next, rate});
      left -= rate * static_cast<double>(next - t) * 1e-12;
    }
    TPUSIM_CHECK(!last) << "HBM reservation past the timeline";
    t = next;
    if (ik < k.size() && k[ik].at == next) ++ik;
    if (id < d.size() && d[id].at == next) ++id;
  }
  std::vector<Step>& mine = steps_[lane];
  for (const Piece& p : pieces) {
    if (p.to <= p.from) continue;
    const size_t a = Split(mine, p.from);
    size_t b = Split(mine, p.to);
    for (size_t i = a; i < b; ++i) mine[i].used += p.rate;
    // A breakpoint whose use equals the one before it says nothing: merged
    // (back-to-back reservations at one rate make one step).
    if (b < mine.size() && mine[b].used == mine[b - 1].used) {
      mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(b));
    }
    if (a > 0 ? mine[a].used == mine[a - 1].used : mine[a].used == 0) {
      mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(a));
    }
  }
  const Picoseconds end(t);
  last_end_ = std::max(last_end_, end);
  return end;
}

void HbmArbiter::Forget(Picoseconds horizon) {
  if (horizon <= horizon_) return;
  horizon_ = horizon;
  for (std::vector<Step>& steps : steps_) {
    // The breakpoint in force at the horizon (kept as it is).
    auto it = std::upper_bound(
        steps.begin(), steps.end(), horizon.count(),
        [](int64_t v, const Step& s) { return v < s.at; });
    if (it == steps.begin()) continue;
    --it;
    // The breakpoints before it are dropped once they are at least half of
    // the list (so a Forget per chunk costs its search, not a move of the
    // list); until then they stay, a true history before the horizon
    // (PeakUse reads it).
    const ptrdiff_t dead = it - steps.begin();
    if (dead >= 16 && 2 * dead >= static_cast<ptrdiff_t>(steps.size())) {
      steps.erase(steps.begin(), it);
    }
    // A timeline that ends in no use needs no breakpoints.
    if (steps.back().used == 0 && steps.back().at <= horizon.count()) {
      steps.clear();
    }
  }
}

double HbmArbiter::PeakUse() const {
  // The sum of the lanes at each breakpoint of either.
  const std::vector<Step>& k = steps_[kKernels];
  const std::vector<Step>& d = steps_[kDma];
  double peak = 0;
  size_t ik = 0, id = 0;
  while (ik < k.size() || id < d.size()) {
    const int64_t at = std::min(ik < k.size() ? k[ik].at : INT64_MAX,
                                id < d.size() ? d[id].at : INT64_MAX);
    while (ik < k.size() && k[ik].at == at) ++ik;
    while (id < d.size() && d[id].at == at) ++id;
    peak = std::max(peak, (ik == 0 ? 0.0 : k[ik - 1].used) +
                              (id == 0 ? 0.0 : d[id - 1].used));
  }
  return peak;
}

ChipModel::ChipModel(const DeviceRates& rates, std::vector<int> devices,
                     double infeed_bytes_per_second)
    : rates_(rates),
      devices_(std::move(devices)),
      hbm_(devices_.size(),
           HbmArbiter(rates.hbm_bytes_per_second - infeed_bytes_per_second)),
      timelines_(devices_.size()),
      counters_(devices_.size()) {
  TPUSIM_CHECK(infeed_bytes_per_second >= 0 &&
               infeed_bytes_per_second < rates.hbm_bytes_per_second)
      << infeed_bytes_per_second;
}

KernelTime ChipModel::RunKernel(int core, const KernelWork& work,
                                Picoseconds ready) {
  // The kernel streams its bytes at the pace of its compute: a kernel bound
  // by its MXU or vector time T needs only bytes / T of the HBM (tpusim's
  // choice: reads and writes spread evenly over the kernel), a memory-bound
  // one all of it.
  const double bytes = static_cast<double>(work.hbm_bytes);
  const KernelTime compute = KernelDurationWithMemoryTime(
      rates_, work, common::Picoseconds(0));
  const int64_t compute_ps = std::max(compute.mxu, compute.vector).count();
  double pace = hbm_[core].bytes_per_second();
  if (compute_ps > 0) {
    pace = std::min(pace, bytes / (static_cast<double>(compute_ps) * 1e-12));
  }
  const Picoseconds memory_end =
      hbm_[core].Reserve(ready, bytes, pace, HbmArbiter::kKernels);
  const KernelTime t =
      KernelDurationWithMemoryTime(rates_, work, memory_end - ready);
  if (t.total < KernelRoofline(rates_, work)) ++roofline_violations_;
  DeviceCounters& c = counters_[core];
  c.mxu_busy_ps += t.mxu.count();
  c.busy_ps += t.total.count();
  c.hbm_bytes += work.hbm_bytes;
  return t;
}

void ChipModel::ResetCounters() {
  counters_.assign(counters_.size(), DeviceCounters{});
}

}  // namespace tpusim::sim
