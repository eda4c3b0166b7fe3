// common/did_you_mean.h
//
// The "did you mean" part of an error about an unknown name (a command, a
// flag, a generation, a scenario field):
//
//   std::string hint = common::DidYouMean("v4-3", {"v4-8", "v4-32"});
//   // hint == "; did you mean \"v4-32\"?"  (or "" when nothing is close)
//
// Close means an edit distance (insertions, deletions, substitutions, and
// swaps of two neighbours, case-insensitive) of at least 1 and at most
// (L - 1) / 2, and never above 3, where L is the longer name's length (tpusim
// choice: a typo, not a different word; "v9" suggests nothing, "v5" v5e). Ties keep the first candidate, so the hint is
// deterministic.

#ifndef TPUSIM_COMMON_DID_YOU_MEAN_H_
#define TPUSIM_COMMON_DID_YOU_MEAN_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tpusim::common {

// The optimal-string-alignment distance between `a` and `b`, ignoring ASCII
// case.
int EditDistance(absl::string_view a, absl::string_view b);

// The candidate closest to `name`, or "" when none is close (see above).
std::string ClosestName(absl::string_view name,
                        const std::vector<std::string>& candidates);

// "; did you mean \"X\"?" for the closest candidate, else "".
std::string DidYouMean(absl::string_view name,
                       const std::vector<std::string>& candidates);

}  // namespace tpusim::common

#endif  // TPUSIM_COMMON_DID_YOU_MEAN_H_
