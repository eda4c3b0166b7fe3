// strategy/data/glob.h
//
// File globbing as TensorFlow's MatchingFiles op does it:
//
//   TPUSIM_ASSIGN_OR_RETURN(std::vector<std::string> files,
//                           MatchingFiles({"/data/train-*.tfrecord"}));
//
// Each pattern is split at '/'; a component with a wildcard ('*', '?', '[...]',
// '\' escapes) is matched against the entries of the directories found so far
// with fnmatch(3) in FNM_PATHNAME mode (so '*' never crosses '/' and matches a
// leading '.'). Files and directories both match. The matches of all patterns
// together are sorted bytewise (duplicates across patterns are kept), as TF's
// MatchingFilesOp does.

#ifndef TPUSIM_STRATEGY_DATA_GLOB_H_
#define TPUSIM_STRATEGY_DATA_GLOB_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace tpusim::data {

// Bounds of one MatchingFiles call (all patterns together), so that a pattern
// like "/*/*/*/*/*/*/*/*" fails fast instead of walking the file system for
// minutes. The defaults are tpusim choices: far above a sharded data set
// (thousands of files in a few directories).
struct GlobLimits {
  // Directories listed to match a wildcard component.
  int64_t max_directories = 10000;
  // Paths held at once: the candidates after any component, and the matches.
  int64_t max_paths = 1000000;
};

// The matching paths (possibly none). A pattern whose directories do not exist
// matches nothing. InvalidArgument for an empty pattern, and for patterns that
// need more than `limits` (naming the pattern and the bound).
absl::StatusOr<std::vector<std::string>> MatchingFiles(
    absl::Span<const std::string> patterns, const GlobLimits& limits = {});

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_GLOB_H_
