// tools/out_dir.h
//
// Output directories of the CLI (`run --out`, `sweep --out`,
// `compare --out`); files are written with common::WriteFile.

#ifndef TPUSIM_TOOLS_OUT_DIR_H_
#define TPUSIM_TOOLS_OUT_DIR_H_

#include <string>

#include "absl/status/status.h"

namespace tpusim::tools {

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
