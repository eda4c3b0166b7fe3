#include "common/units.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace tpusim::common {

std::string Bytes::ToString() const {
  const int64_t abs = count_ < 0 ? -count_ : count_;
  if (abs >= (1LL << 30)) return absl::StrFormat("%g GiB", gib());
  if (abs >= (1LL << 20)) return absl::StrFormat("%g MiB", count_ / 1048576.0);
  if (abs >= (1LL << 10)) return absl::StrFormat("%g KiB", count_ / 1024.0);
  return absl::StrFormat("%d B", count_);
}

std::string Picoseconds::ToString() const {
  const int64_t abs = count_ < 0 ? -count_ : count_;
  if (abs >= 1000LL * 1000 * 1000 * 1000)
    return absl::StrFormat("%.3f s", count_ * 1e-12);
  if (abs >= 1000LL * 1000 * 1000)
    return absl::StrFormat("%.3f ms", count_ * 1e-9);
  if (abs >= 1000LL * 1000) return absl::StrFormat("%.3f us", count_ * 1e-6);
  if (abs >= 1000) return absl::StrFormat("%.3f ns", count_ * 1e-3);
  return absl::StrFormat("%d ps", count_);
}

Picoseconds BytesPerSecond::TimeFor(Bytes bytes) const {
  return Picoseconds(
      static_cast<int64_t>(std::ceil(bytes.count() / rate_ * 1e12)));
}

}  // namespace tpusim::common
