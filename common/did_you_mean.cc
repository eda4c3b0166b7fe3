#include "common/did_you_mean.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace tpusim::common {

int EditDistance(absl::string_view a, absl::string_view b) {
  const size_t n = a.size();
  const size_t m = b.size();
  // d[i][j]: distance between a[0, i) and b[0, j); three rows suffice.
  std::vector<int> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= m; ++j) {
      const bool same =
          absl::ascii_tolower(a[i - 1]) == absl::ascii_tolower(b[j - 1]);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1,
                         prev[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 &&
          absl::ascii_tolower(a[i - 1]) == absl::ascii_tolower(b[j - 2]) &&
          absl::ascii_tolower(a[i - 2]) == absl::ascii_tolower(b[j - 1])) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[m];
}

std::string ClosestName(absl::string_view name,
                        const std::vector<std::string>& candidates) {
  std::string best;
  int best_distance = 0;
  for (const std::string& c : candidates) {
    const int d = EditDistance(name, c);
    const int longer = static_cast<int>(std::max(name.size(), c.size()));
    const int allowed = std::min(3, (longer - 1) / 2);
    if (d == 0 || d > allowed) continue;
    if (best.empty() || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string DidYouMean(absl::string_view name,
                       const std::vector<std::string>& candidates) {
  const std::string best = ClosestName(name, candidates);
  return best.empty() ? "" : absl::StrCat("; did you mean \"", best, "\"?");
}

}  // namespace tpusim::common
