#include "tools/cli.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <stdexcept>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/did_you_mean.h"
#include "common/file_io.h"
#include "common/utf8.h"

namespace tpusim::tools {

namespace {
constexpr char kUsagePayload[] = "tpusim.dev/usage-error";
}  // namespace

absl::Status UsageError(absl::string_view message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kUsagePayload, absl::Cord("1"));
  return status;
}

bool IsUsageError(const absl::Status& status) {
  return status.GetPayload(kUsagePayload).has_value();
}

namespace {

template <typename T>
bool ParseExactIntImpl(absl::string_view text, T* value) {
  absl::string_view digits = text;
  absl::ConsumePrefix(&digits, "-");
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) {
        return c >= '0' && c <= '9';
      })) {
    return false;
  }
  return absl::SimpleAtoi(text, value);
}

}  // namespace

bool ParseExactInt(absl::string_view text, int64_t* value) {
  return ParseExactIntImpl(text, value);
}
bool ParseExactInt(absl::string_view text, int* value) {
  return ParseExactIntImpl(text, value);
}

std::string ParsedArgs::Get(absl::string_view flag,
                            absl::string_view fallback) const {
  auto it = flags_.find(std::string(flag));
  return it == flags_.end() ? std::string(fallback) : it->second;
}

absl::StatusOr<int64_t> ParsedArgs::GetInt(absl::string_view flag,
                                           int64_t fallback,
                                           int64_t min) const {
  if (!Has(flag)) return fallback;
  const std::string text = Get(flag);
  int64_t value = 0;
  if (!ParseExactInt(text, &value) || value < min) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", text,
                     " is not allowed; expected an integer >= ", min));
  }
  return value;
}

namespace {

// Runs the subcommand; an allocation failure (std::bad_alloc, or a container
// asked for more than it can hold) becomes RESOURCE_EXHAUSTED here instead of
// escaping to SystemC's report handler, which would print it on stdout.
absl::Status RunCatchingAllocationFailure(const Subcommand& sub,
                                          const ParsedArgs& args,
                                          std::ostream& out) {
  try {
    return sub.run(args, out);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory (std::bad_alloc)",
                     sub.out_of_memory_hint.empty() ? "" : "; ",
                     sub.out_of_memory_hint));
  } catch (const std::length_error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory (std::length_error: ", e.what(), ")",
                     sub.out_of_memory_hint.empty() ? "" : "; ",
                     sub.out_of_memory_hint));
  }
}

// Flushes `out` and reports a failed write (a full disk, a closed pipe: with
// SIGPIPE ignored, EPIPE) instead of exiting 0 with lost output.
absl::Status FlushOutput(std::ostream& out) {
  out.flush();
  if (out.good()) return absl::OkStatus();
  const auto* fd_buffer = dynamic_cast<const FdOutputBuffer*>(out.rdbuf());
  const int err = fd_buffer != nullptr && fd_buffer->error() != 0
                      ? fd_buffer->error()
                      : EIO;
  return common::ErrnoStatus("cannot write the output to", "standard output",
                             err);
}

}  // namespace

bool FdOutputBuffer::Drain() {
  const char* p = pbase();
  while (p < pptr()) {
    const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (error_ == 0) error_ = errno;
      setp(buffer_, buffer_ + sizeof(buffer_));  // drop what cannot be written
      return false;
    }
    p += n;
  }
  setp(buffer_, buffer_ + sizeof(buffer_));
  return error_ == 0;
}

FdOutputBuffer::int_type FdOutputBuffer::overflow(int_type ch) {
  if (!Drain()) return traits_type::eof();
  if (!traits_type::eq_int_type(ch, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
  }
  return traits_type::not_eof(ch);
}

int FdOutputBuffer::sync() { return Drain() ? 0 : -1; }

void Cli::PrintTopHelp(std::ostream& out) const {
  out << "tpusim: TensorFlow TPUStrategy semantics on virtual TPU pods\n\n"
      << "usage: tpusim <command> [args] [--flags]\n"
      << "       tpusim <command> --help\n\ncommands:\n";
  for (const Subcommand& s : subcommands_) {
    out << absl::StrFormat("  %-16s %s\n", s.name, s.summary);
  }
  out << "\nexit codes: 0 success, 1 error in the input or the run, 2 usage "
         "error\n";
}

void Cli::PrintHelp(const Subcommand& sub, std::ostream& out) {
  out << "usage: " << sub.usage << "\n\n" << sub.summary << "\n";
  if (!sub.description.empty()) out << "\n" << sub.description << "\n";
  out << "\nflags:\n";
  for (const FlagSpec& f : sub.flags) {
    const std::string left = f.takes_value
                                 ? absl::StrCat("--", f.name, "=VALUE")
                                 : absl::StrCat("--", f.name);
    out << absl::StrFormat("  %-22s %s\n", left, f.help);
  }
  out << absl::StrFormat("  %-22s %s\n", "--help, -h",
                         "print this help and exit 0");
}

int Cli::Run(absl::Span<const std::string> args, std::ostream& out,
             std::ostream& err) const {
  if (args.empty()) {
    PrintTopHelp(err);
    return kExitUsage;
  }
  const std::string& name = args[0];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintTopHelp(out);
    return kExitOk;
  }
  auto sub = std::find_if(subcommands_.begin(), subcommands_.end(),
                          [&](const Subcommand& s) { return s.name == name; });
  if (sub == subcommands_.end()) {
    std::vector<std::string> names;
    for (const Subcommand& s : subcommands_) names.push_back(s.name);
    err << "tpusim: unknown command \"" << common::EscapeForTerminal(name)
        << "\"" << common::DidYouMean(name, names)
        << "; commands: " << absl::StrJoin(names, ", ")
        << " (see 'tpusim --help')\n";
    return kExitUsage;
  }

  ParsedArgs parsed;
  bool flags_done = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (flags_done || !absl::StartsWith(a, "-") || a == "-") {
      parsed.positional_.push_back(a);
      continue;
    }
    if (a == "--") {
      flags_done = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      PrintHelp(*sub, out);
      return kExitOk;
    }
    // Only "--name" and "--name=value" are flags; "-x" is unknown.
    const size_t eq = a.find('=');
    const std::string spelled = a.substr(0, eq);  // "--name" or "-x"
    auto spec = std::find_if(sub->flags.begin(), sub->flags.end(),
                             [&](const FlagSpec& f) {
                               return spelled == absl::StrCat("--", f.name);
                             });
    if (spec == sub->flags.end()) {
      // Compared without the dashes, so that they do not make a different
      // word look close.
      std::vector<std::string> flags = {"help"};
      for (const FlagSpec& f : sub->flags) flags.push_back(f.name);
      absl::string_view bare = spelled;
      absl::ConsumePrefix(&bare, "--");
      const std::string closest = common::ClosestName(bare, flags);
      err << "tpusim " << sub->name << ": unknown flag "
          << common::EscapeForTerminal(spelled)
          << (closest.empty() ? ""
                              : absl::StrCat("; did you mean \"--", closest,
                                             "\"?"))
          << " (see 'tpusim " << sub->name << " --help')\n";
      return kExitUsage;
    }
    const std::string& flag_name = spec->name;
    if (!spec->takes_value) {
      if (eq != std::string::npos) {
        err << "tpusim " << sub->name << ": flag --" << flag_name
            << " takes no value\n";
        return kExitUsage;
      }
      parsed.flags_[flag_name] = "true";
      continue;
    }
    if (eq != std::string::npos) {
      parsed.flags_[flag_name] = a.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      parsed.flags_[flag_name] = args[++i];
    } else {
      err << "tpusim " << sub->name << ": flag --" << flag_name
          << " needs a value\n";
      return kExitUsage;
    }
    parsed.all_[flag_name].push_back(parsed.flags_[flag_name]);
  }
  const int n = static_cast<int>(parsed.positional_.size());
  if (n < sub->min_positional || n > sub->max_positional) {
    err << "tpusim " << sub->name << ": expected "
        << (sub->min_positional == sub->max_positional
                ? absl::StrCat(sub->min_positional)
                : absl::StrCat(sub->min_positional, " to ",
                               sub->max_positional))
        << " argument(s), got " << n << "; usage: " << sub->usage << "\n";
    return kExitUsage;
  }
  absl::Status status = RunCatchingAllocationFailure(*sub, parsed, out);
  if (status.ok()) status = FlushOutput(out);
  if (!status.ok()) {
    // The message may echo a scenario's bytes (names, paths, values):
    // escaped, so that a NUL or invalid UTF-8 does not reach the terminal.
    err << "tpusim " << sub->name << ": "
        << absl::StatusCodeToString(status.code()) << ": "
        << common::EscapeForTerminal(status.message()) << "\n";
    return IsUsageError(status) ? kExitUsage : kExitError;
  }
  return kExitOk;
}

absl::Status CheckRunBackendFlag(const ParsedArgs& args) {
  const std::string backend = args.Get("backend");
  if (args.Has("backend") && backend != "sim" && backend != "host" &&
      backend != "pjrt") {
    return UsageError(
        absl::StrCat("--backend=", backend, " must be sim, host or pjrt"));
  }
  return absl::OkStatus();
}

}  // namespace tpusim::tools
