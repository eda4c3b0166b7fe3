#include "common/units.h"

#include <cmath>

#include "absl/strings/str_cat.h"
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

namespace {

// Three significant digits: "1.50", "12.0", "120".
std::string ThreeDigits(double v) {
  const double a = std::fabs(v);
  if (a >= 99.95) return absl::StrFormat("%.0f", v);
  if (a >= 9.995) return absl::StrFormat("%.1f", v);
  return absl::StrFormat("%.2f", v);
}

}  // namespace

std::string HumanBytes(int64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  const double abs = std::fabs(static_cast<double>(bytes));
  if (abs < 1024) return absl::StrFormat("%d B", bytes);
  double scaled = static_cast<double>(bytes) / 1024;
  int unit = 0;
  // Rounding to three digits may reach 1024 of a unit: move up then too.
  while (unit < 3 && std::fabs(scaled) >= 1023.5) {
    scaled /= 1024;
    ++unit;
  }
  return absl::StrCat(ThreeDigits(scaled), " ", kUnits[unit]);
}

std::string HumanSeconds(double seconds) {
  const double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  if (a >= 0.9995) return absl::StrCat(ThreeDigits(seconds), " s");
  if (a >= 0.9995e-3) return absl::StrCat(ThreeDigits(seconds * 1e3), " ms");
  if (a >= 0.9995e-6) {
    return absl::StrCat(ThreeDigits(seconds * 1e6), " \u00b5s");
  }
  return absl::StrCat(ThreeDigits(seconds * 1e9), " ns");
}

Picoseconds BytesPerSecond::TimeFor(Bytes bytes) const {
  return Picoseconds(
      static_cast<int64_t>(std::ceil(bytes.count() / rate_ * 1e12)));
}

}  // namespace tpusim::common
