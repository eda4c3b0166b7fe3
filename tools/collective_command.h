// tools/collective_command.h
//
// `tpusim collective`: a collective microbenchmark on the ICI model, in the
// spirit of nccl-tests. One elaboration per process; the size sweep runs in
// steps of one KernelSession. Flags and the JSON schema: README, section
// "tpusim collective".

#ifndef TPUSIM_TOOLS_COLLECTIVE_COMMAND_H_
#define TPUSIM_TOOLS_COLLECTIVE_COMMAND_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/cli.h"

namespace tpusim::tools {

Subcommand CollectiveCommand();

// "4096", "64KiB", "1MiB", "2GiB", "1KB" (1000), "1MB", "1GB" -> bytes.
// InvalidArgument naming the text otherwise (or for a value <= 0).
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);
// --memory-limit=SIZE (ParseByteSize), or the fixed default when absent.
// InvalidArgument "--memory-limit: ..." for a bad size.
absl::StatusOr<int64_t> MemoryLimitFlag(const ParsedArgs& args);
// "64MiB" -> {64 MiB}; "1KiB..1GiB" with factor 2 -> 1 KiB, 2 KiB, ... 1 GiB.
absl::StatusOr<std::vector<int64_t>> ParseByteSweep(absl::string_view text,
                                                    int64_t factor);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_COLLECTIVE_COMMAND_H_
