#include "tools/cli.h"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <new>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/presets_command.h"

namespace tpusim::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunCli(std::vector<std::string> args) {
  Subcommand echo;
  echo.name = "echo";
  echo.summary = "prints its argument";
  echo.usage = "tpusim echo WORD [--times=N] [--loud]";
  echo.flags = {{"times", true, "repeat count"}, {"loud", false, "upper case"}};
  echo.min_positional = 1;
  echo.max_positional = 1;
  echo.run = [](const ParsedArgs& a, std::ostream& out) -> absl::Status {
    absl::StatusOr<int64_t> times = a.GetInt("times", 1, 1);
    if (!times.ok()) return times.status();
    for (int i = 0; i < *times; ++i)
      out << (a.Has("loud") ? "LOUD " : "") << a.positional()[0];
    return absl::OkStatus();
  };
  Cli cli({PresetsCommand(), echo});
  std::ostringstream out, err;
  int code = cli.Run(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(CliTest, TopLevelHelpExitsZeroAndListsCommands) {
  Result r = RunCli({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("presets"));
  EXPECT_THAT(r.out, HasSubstr("echo"));
}

TEST(CliTest, NoArgumentsIsAUsageError) {
  EXPECT_EQ(RunCli({}).code, kExitUsage);
}

TEST(CliTest, UnknownCommandIsOneClearLineAndExitTwo) {
  Result r = RunCli({"frobnicate"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(
      r.err,
      "tpusim: unknown command \"frobnicate\"; commands: presets, echo (see "
      "'tpusim --help')\n");
}

TEST(CliTest, UnknownFlagIsOneClearLineAndExitTwo) {
  Result r = RunCli({"echo", "hi", "--bogus=3"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err,
            "tpusim echo: unknown flag --bogus (see 'tpusim echo --help')\n");
  EXPECT_EQ(RunCli({"echo", "hi", "-x"}).code, kExitUsage);
}

TEST(CliTest, MistypedNamesGetADidYouMean) {
  Result command = RunCli({"presest"});
  EXPECT_EQ(command.code, kExitUsage);
  EXPECT_EQ(command.err,
            "tpusim: unknown command \"presest\"; did you mean \"presets\"?; "
            "commands: presets, echo (see 'tpusim --help')\n");
  Result flag = RunCli({"echo", "hi", "--tims=3"});
  EXPECT_EQ(flag.code, kExitUsage);
  EXPECT_EQ(flag.err,
            "tpusim echo: unknown flag --tims; did you mean \"--times\"? "
            "(see 'tpusim echo --help')\n");
}

TEST(CliTest, SubcommandHelpExitsZeroAndShowsFlags) {
  Result r = RunCli({"echo", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, StartsWith("usage: tpusim echo WORD"));
  EXPECT_THAT(r.out, HasSubstr("--times=VALUE"));
}

TEST(CliTest, FlagsTakeValuesInBothSpellings) {
  EXPECT_EQ(RunCli({"echo", "a", "--times=2"}).out, "aa");
  EXPECT_EQ(RunCli({"echo", "a", "--times", "3", "--loud"}).out,
            "LOUD aLOUD aLOUD a");
}

TEST(CliTest, WrongArgumentCountIsAUsageError) {
  Result r = RunCli({"echo"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("expected 1 argument(s), got 0"));
  EXPECT_EQ(RunCli({"echo", "a", "b"}).code, kExitUsage);
  EXPECT_EQ(RunCli({"echo", "a", "--times"}).code, kExitUsage);
  EXPECT_EQ(RunCli({"echo", "a", "--loud=yes"}).code, kExitUsage);
}

TEST(CliTest, BadFlagValueIsAnInputErrorNamingFlagAndValue) {
  Result r = RunCli({"echo", "a", "--times=0"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_EQ(r.err,
            "tpusim echo: INVALID_ARGUMENT: --times=0 is not allowed; expected "
            "an integer >= 1\n");
}

TEST(PresetsCommandTest, TablePrintsEveryGenerationWithUnits) {
  Result r = RunCli({"presets"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (const char* gen : {"v2 ", "v3 ", "v4 ", "v5e", "v5p", "v6e"}) {
    EXPECT_THAT(r.out, HasSubstr(std::string("\n") + gen)) << gen;
  }
  EXPECT_THAT(r.out, HasSubstr("GB/s/dir"));
  EXPECT_THAT(r.out, HasSubstr("GiB"));
  // v3 row: 2 cores, 2x128 MXUs, 0.94 GHz, 123 TF, 32 GiB, 900 GB/s, 4 links of
  // 82 GB/s.
  EXPECT_THAT(
      r.out,
      ::testing::ContainsRegex(
          "\nv3 +2 +2x128 +0.94 +123 +- +32 +900 +1 +4 +82 +2-D +32x32 +4 "));
}

TEST(PresetsCommandTest, OnePresetInDetail) {
  Result r = RunCli({"presets", "v5p"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("preset v5p"));
  EXPECT_THAT(r.out,
              ::testing::ContainsRegex("HBM bandwidth +2765 +GB/s/chip"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("max slice +16x16x24 +chips"));
}

TEST(PresetsCommandTest, JsonHasNullForUnpublishedNumbers) {
  Result r = RunCli({"presets", "v3", "--format=json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"name\": \"v3\""));
  EXPECT_THAT(r.out, HasSubstr("\"pcie_gbps_per_chip\": null"));
  EXPECT_THAT(r.out, HasSubstr("\"hbm_gbps_per_chip\": 900"));
  EXPECT_THAT(r.out, HasSubstr("\"slice_prefix\": \"v3\""));
}

// Issue 21: JSON keys are snake_case names without spaces or parentheses.
TEST(PresetsCommandTest, JsonKeysHaveNoSpacesOrParentheses) {
  Result r = RunCli({"presets", "--format=json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, ::testing::Not(::testing::ContainsRegex("\"[^\"]*[ (][^\"]*\": ")));
  EXPECT_THAT(r.out, HasSubstr("\"clock_ghz\": 0.94"));
}

// Issue 21: v5litepod (Cloud's slice prefix) names the v5e preset too.
TEST(PresetsCommandTest, BothV5eNamesFindThePreset) {
  Result e = RunCli({"presets", "v5e", "--format=json"});
  Result lite = RunCli({"presets", "v5litepod", "--format=json"});
  ASSERT_EQ(e.code, kExitOk) << e.err;
  EXPECT_EQ(lite.out, e.out);
  EXPECT_THAT(e.out, HasSubstr("\"slice_prefix\": \"v5litepod\""));
  Result typo = RunCli({"presets", "v5ee"});
  EXPECT_EQ(typo.code, kExitError);
  EXPECT_THAT(typo.err, HasSubstr("is not known; did you mean \"v5e\"?"));
}

TEST(PresetsCommandTest, UnknownPresetListsValidOnesAndExitsOne) {
  Result r = RunCli({"presets", "v9"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_EQ(r.err,
            "tpusim presets: NOT_FOUND: chip preset \"v9\" is not known; "
            "valid: v2, v3, "
            "v4, v5e, v5p, v6e (v5litepod is accepted for v5e)\n");
}

TEST(PresetsCommandTest, UnknownFormatIsAnInputError) {
  Result r = RunCli({"presets", "--format=xml"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_THAT(r.err,
              HasSubstr("--format=xml is not allowed; expected text or json"));
}

}  // namespace
// Issue 7: an allocation failure is RESOURCE_EXHAUSTED on stderr, exit 1,
// and nothing half-written on stdout.
TEST(CliTest, AllocationFailureIsResourceExhausted) {
  Subcommand greedy;
  greedy.name = "greedy";
  greedy.usage = "tpusim greedy";
  greedy.run = [](const ParsedArgs&, std::ostream&) -> absl::Status {
    throw std::bad_alloc();
  };
  Cli cli({greedy});
  std::ostringstream out, err;
  EXPECT_EQ(cli.Run({"greedy"}, out, err), kExitError);
  EXPECT_EQ(out.str(), "");
  // Issue 22: no command's flags are suggested unless it names its own.
  EXPECT_EQ(err.str(),
            "tpusim greedy: RESOURCE_EXHAUSTED: out of memory "
            "(std::bad_alloc)\n");
  greedy.out_of_memory_hint = "lower --size";
  Cli hinted({greedy});
  std::ostringstream out2, err2;
  EXPECT_EQ(hinted.Run({"greedy"}, out2, err2), kExitError);
  EXPECT_EQ(err2.str(),
            "tpusim greedy: RESOURCE_EXHAUSTED: out of memory "
            "(std::bad_alloc); lower --size\n");
}

// Issue 22: a message echoing a file's bytes reaches stderr escaped: NUL,
// other control characters (an ANSI escape) and bytes that are not UTF-8
// become \xNN; valid UTF-8, newlines and tabs are kept.
TEST(CliTest, ErrorMessagesEscapeControlAndNonUtf8Bytes) {
  Subcommand echo;
  echo.name = "bytes";
  echo.usage = "tpusim bytes";
  echo.run = [](const ParsedArgs&, std::ostream&) -> absl::Status {
    return absl::InvalidArgumentError(
        std::string("name=\"a\0b\xff\x1b[31mc\xc3\xa9\"\tend", 23));
  };
  Cli cli({echo});
  std::ostringstream out, err;
  EXPECT_EQ(cli.Run({"bytes"}, out, err), kExitError);
  EXPECT_EQ(err.str(),
            "tpusim bytes: INVALID_ARGUMENT: name=\"a\\x00b\\xff\\x1b[31mc\xc3\xa9\"\t"
            "end\n");
  std::ostringstream out2, err2;
  EXPECT_EQ(cli.Run({std::string("by\xfe", 3)}, out2, err2), kExitUsage);
  EXPECT_THAT(err2.str(), HasSubstr("unknown command \"by\\xfe\""));
}

// Issue 22: integers in flag values are written exactly.
TEST(CliTest, ParseExactIntRejectsWhatSimpleAtoiForgives) {
  int64_t v = 0;
  EXPECT_TRUE(ParseExactInt("42", &v));
  EXPECT_EQ(v, 42);
  EXPECT_TRUE(ParseExactInt("-7", &v));
  EXPECT_EQ(v, -7);
  for (const char* text : {"", " 4", "4 ", "+4", "0x10", "4x", "-", "--4",
                           "9223372036854775808"}) {
    EXPECT_FALSE(ParseExactInt(text, &v)) << "'" << text << "'";
  }
  int i = 0;
  EXPECT_FALSE(ParseExactInt("2147483648", &i));
  EXPECT_TRUE(ParseExactInt("2147483647", &i));
}

// Runs `echo WORD` with stdout written through an FdOutputBuffer on `fd`.
Result RunEchoTo(int fd, const std::string& word) {
  Subcommand echo;
  echo.name = "echo";
  echo.usage = "tpusim echo WORD";
  echo.min_positional = 1;
  echo.max_positional = 1;
  echo.run = [](const ParsedArgs& a, std::ostream& out) -> absl::Status {
    out << a.positional()[0];
    return absl::OkStatus();
  };
  Cli cli({echo});
  FdOutputBuffer buffer(fd);
  std::ostream out(&buffer);
  std::ostringstream err;
  const int code = cli.Run({"echo", word}, out, err);
  return {code, "", err.str()};
}

TEST(CliTest, FullDiskOnStdoutExitsOneWithTheOsReason) {
  const int fd = ::open("/dev/full", O_WRONLY);
  ASSERT_GE(fd, 0);
  const Result r = RunEchoTo(fd, "hello");
  ::close(fd);
  EXPECT_EQ(r.code, kExitError);
  EXPECT_EQ(r.err,
            "tpusim echo: RESOURCE_EXHAUSTED: cannot write the output to "
            "\"standard output\": No space left on device\n");
}

TEST(CliTest, ClosedPipeOnStdoutExitsOne) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  // As the CLI's main does: EPIPE instead of death by SIGPIPE.
  void (*old)(int) = std::signal(SIGPIPE, SIG_IGN);
  const Result r = RunEchoTo(fds[1], std::string(200000, 'x'));
  std::signal(SIGPIPE, old);
  ::close(fds[1]);
  EXPECT_EQ(r.code, kExitError);
  EXPECT_EQ(r.err,
            "tpusim echo: FAILED_PRECONDITION: cannot write the output to "
            "\"standard output\": Broken pipe\n");
}

}  // namespace tpusim::tools
