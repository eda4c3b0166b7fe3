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

void HbmArbiter::DropEndedBy(Picoseconds t) {
  windows_.erase(std::remove_if(windows_.begin(), windows_.end(),
                                [&](const DmaWindow& w) { return w.end <= t; }),
                 windows_.end());
}

double HbmArbiter::Share(double bytes, Picoseconds ready,
                         absl::Span<const DmaWindow> windows,
                         double hbm_rate) {
  if (bytes <= 0 || windows.empty()) return hbm_rate;
  // Segment by segment from `ready`: each ends where the DMA rate next
  // changes (a window starts or ends). A few windows at most: no sorting and
  // no allocation in the kernel loop.
  constexpr Picoseconds kNever(std::numeric_limits<int64_t>::max());
  double left = bytes, seconds = 0;
  Picoseconds t = ready;
  for (;;) {
    Picoseconds cut = kNever;
    double dma = 0;
    for (const DmaWindow& w : windows) {
      if (t < w.start) {
        cut = std::min(cut, w.start);
      } else if (t < w.end) {
        dma += w.rate;
        cut = std::min(cut, w.end);
      }
    }
    if (cut == kNever) break;
    const double rate = std::max(hbm_rate - dma, hbm_rate / 2);
    const double span = (cut - t).count() * 1e-12;
    if (left <= rate * span) {
      seconds += left / rate;
      return bytes / seconds;
    }
    left -= rate * span;
    seconds += span;
    t = cut;
  }
  seconds += left / hbm_rate;
  return bytes / seconds;
}

ChipModel::ChipModel(const DeviceRates& rates, std::vector<int> devices)
    : rates_(rates),
      devices_(std::move(devices)),
      hbm_(devices_.size(), HbmArbiter(rates.hbm_bytes_per_second)),
      counters_(devices_.size()) {}

KernelTime ChipModel::RunKernel(int core, const KernelWork& work,
                                Picoseconds ready) {
  HbmArbiter& hbm = hbm_[core];
  hbm.DropEndedBy(ready);
  const KernelTime t = KernelDuration(
      rates_, work, hbm.Share(static_cast<double>(work.hbm_bytes), ready));
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
