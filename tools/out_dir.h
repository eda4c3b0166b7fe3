// tools/out_dir.h
//
// Output directories and files of the CLI (`run --out`, `sweep --out`,
// `compare --out`).

#ifndef TPUSIM_TOOLS_OUT_DIR_H_
#define TPUSIM_TOOLS_OUT_DIR_H_

#include <string>

#include "absl/status/status.h"

namespace tpusim::tools {

// Writes `bytes` to `path` (created or truncated). The OS reason names the
// path on failure.
absl::Status WriteFile(const std::string& path, const std::string& bytes);

// For a command that fills a directory of its own (`sweep --out DIR`): DIR
// must not exist or be empty (a sweep never mixes its points with an older
// one's). InvalidArgument naming `flag` and DIR otherwise; does not create
// it.
absl::Status CheckFreshDirectory(const std::string& flag,
                                 const std::string& dir);

// Creates `dir` (and nothing above it); an existing directory is fine.
absl::Status MakeDirectory(const std::string& dir);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_OUT_DIR_H_
