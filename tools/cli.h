// tools/cli.h
//
// The tpusim command-line framework: subcommands, each with its own flags and
// --help, parsed by hand so that the exit codes follow architecture.md ("The
// CLI's contract") rather than Abseil's flag parser, which exits 1 on unknown
// flags and on --help:
//   0  success, and --help;
//   1  an error in the input or the run (the Status message on stderr, one line
//   first); 2  a usage error (unknown subcommand or flag, missing or extra
//   arguments).
//
// A subcommand lives in its own file and returns its Subcommand description:
//
//   Subcommand PresetsCommand() {
//     return {"presets", "print the chip presets", "tpusim presets [NAME]
//     [--format=text|json]",
//             {{"format", /*takes_value=*/true, "text (default) or json"}},
//             /*min_positional=*/0, /*max_positional=*/1, &RunPresets};
//   }
//
// Flags are written --name=value or --name value; boolean flags (takes_value =
// false) are written --name. Every subcommand also accepts --help and -h.

#ifndef TPUSIM_TOOLS_CLI_H_
#define TPUSIM_TOOLS_CLI_H_

#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace tpusim::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// A usage error found while running a subcommand (a flag value that does not
// parse, a flag combination that makes no sense): Cli::Run prints it and exits
// 2 instead of 1.
absl::Status UsageError(absl::string_view message);
bool IsUsageError(const absl::Status& status);

// Parses a decimal integer exactly as written: an optional '-' and digits,
// nothing else. absl::SimpleAtoi also accepts surrounding whitespace, a '+'
// and a "0x" prefix, which a flag value must not have (' 4x4x4' and '+4' are
// typos, not numbers). False when the text is not such an integer or does not
// fit in T.
bool ParseExactInt(absl::string_view text, int64_t* value);
bool ParseExactInt(absl::string_view text, int* value);

struct FlagSpec {
  std::string name;  // without the leading "--"
  bool takes_value = false;
  std::string help;
};

class ParsedArgs {
 public:
  bool Has(absl::string_view flag) const {
    return flags_.count(std::string(flag)) > 0;
  }
  // The flag's value, or `fallback` when absent.
  std::string Get(absl::string_view flag,
                  absl::string_view fallback = "") const;
  // The flag as a positive or non-negative integer. InvalidArgument names the
  // flag and value.
  absl::StatusOr<int64_t> GetInt(absl::string_view flag, int64_t fallback,
                                 int64_t min) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // Every value a repeatable flag was given, in order (Get returns the last).
  std::vector<std::string> GetAll(absl::string_view flag) const {
    auto it = all_.find(std::string(flag));
    return it == all_.end() ? std::vector<std::string>{} : it->second;
  }

 private:
  friend class Cli;
  std::map<std::string, std::string> flags_;
  std::map<std::string, std::vector<std::string>> all_;
  std::vector<std::string> positional_;
};

struct Subcommand {
  std::string name;
  std::string summary;  // one line, shown in `tpusim --help`
  std::string usage;    // "tpusim presets [NAME] [--format=text|json]"
  std::vector<FlagSpec> flags;
  int min_positional = 0;
  int max_positional = 0;
  // Runs the subcommand. A non-OK status is printed to stderr and exits 1.
  std::function<absl::Status(const ParsedArgs& args, std::ostream& out)> run;
  // Optional longer description printed by --help below the usage.
  std::string description;
  // Appended to the RESOURCE_EXHAUSTED of an allocation failure: which of
  // this command's flags or inputs size its memory ("lower --bytes ...").
  // Empty: the message names none (a command that knows better reports its
  // own, as `run` does with the scenario fields).
  std::string out_of_memory_hint;
};

// A stream buffer writing to a file descriptor with write(2) (the CLI's
// stdout). It remembers the errno of the first failed write (ENOSPC on a full
// disk, EPIPE on a closed pipe), so that the CLI can report the OS reason.
class FdOutputBuffer : public std::streambuf {
 public:
  explicit FdOutputBuffer(int fd) : fd_(fd) {
    setp(buffer_, buffer_ + sizeof(buffer_));
  }
  ~FdOutputBuffer() override { sync(); }
  // 0 until a write fails.
  int error() const { return error_; }

 protected:
  int_type overflow(int_type ch) override;
  int sync() override;

 private:
  bool Drain();
  int fd_;
  int error_ = 0;
  char buffer_[1 << 16];
};

class Cli {
 public:
  explicit Cli(std::vector<Subcommand> subcommands)
      : subcommands_(std::move(subcommands)) {}

  // Runs `args` (without the program name) and returns the process exit code.
  // Output for people and machines goes to `out`, diagnostics to `err`.
  // `out` is flushed before returning; a failed write is exit 1 naming the OS
  // reason (from FdOutputBuffer when `out` writes through one). An allocation
  // failure in the subcommand is RESOURCE_EXHAUSTED, exit 1.
  int Run(absl::Span<const std::string> args, std::ostream& out,
          std::ostream& err) const;

 private:
  void PrintTopHelp(std::ostream& out) const;
  static void PrintHelp(const Subcommand& sub, std::ostream& out);

  std::vector<Subcommand> subcommands_;
};

// `run`'s --backend flag (and `sweep`'s, passed to each point), when given,
// names a backend `run` runs on: sim, host or pjrt; a usage error otherwise.
absl::Status CheckRunBackendFlag(const ParsedArgs& args);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_CLI_H_
