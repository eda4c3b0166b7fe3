// `tpusim collective`: size parsing, and one exact report (each TEST is its
// own process: the command elaborates a SystemC kernel).

#include "tools/collective_command.h"

#include <sstream>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tools/cli.h"

namespace tpusim::tools {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::StatusIs;

TEST(CollectiveCommandTest, ParsesSizesAndSweeps) {
  EXPECT_EQ(ParseByteSize("4096").value(), 4096);
  EXPECT_EQ(ParseByteSize("64KiB").value(), 64 << 10);
  EXPECT_EQ(ParseByteSize("2GiB").value(), int64_t{2} << 30);
  EXPECT_EQ(ParseByteSize("3MB").value(), 3000000);
  EXPECT_EQ(ParseByteSize("12B").value(), 12);
  EXPECT_THAT(ParseByteSize("0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("byte size \"0\" is not allowed")));
  EXPECT_THAT(ParseByteSize("-5MiB"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("byte size \"-5MiB\" is not allowed")));
  EXPECT_FALSE(ParseByteSize("KiB").ok());
  // Issue 22: no whitespace, sign or base prefix (absl::SimpleAtoi's leniency).
  for (const char* text : {"1 MiB", " 1MiB", "+1MiB", "1MiB ", "0x10", "1\tKiB"}) {
    EXPECT_THAT(ParseByteSize(text),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat("byte size \"", text,
                                      "\" is not allowed; expected a positive "
                                      "integer with an optional suffix B, KiB, "
                                      "MiB, GiB, KB, MB or GB, at most 1 TiB")))
        << text;
  }
  EXPECT_THAT(ParseByteSweep("1KiB..8KiB", 2).value(),
              ElementsAre(1024, 2048, 4096, 8192));
  EXPECT_THAT(ParseByteSweep("1KiB..10KiB", 4).value(),
              ElementsAre(1024, 4096));
  EXPECT_THAT(ParseByteSweep("8KiB..1KiB", 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("from small to large")));
}

int RunCli(const std::vector<std::string>& args, std::string* out,
           std::string* err) {
  Cli cli({CollectiveCommand()});
  std::ostringstream o, e;
  const int code = cli.Run(args, o, e);
  *out = o.str();
  *err = e.str();
  return code;
}

// A permute around a 4x1 v5e mesh (no wraparound): 3->0 is routed back over
// three -x hops, alone on those links: 45000 B / 45 GB/s = 1 us, plus 3 hops
// of 1 us = exactly 4 us, which is also its lower bound.
TEST(CollectiveCommandTest, PermuteOnAMeshIsExact) {
  std::string out, err;
  ASSERT_EQ(RunCli({"collective", "--generation=v5e", "--shape=4x1",
                    "--op=permute", "--bytes=45000", "--format=json"},
                   &out, &err),
            0)
      << err;
  EXPECT_THAT(out, HasSubstr("\"sim_time_ps\": 4000000"));
  EXPECT_THAT(out, HasSubstr("\"lower_bound_ps\": 4000000"));
  EXPECT_THAT(out, HasSubstr("\"time_over_bound\": 1,"));
  EXPECT_THAT(out, HasSubstr("\"algorithm\": \"direct\""));
  EXPECT_THAT(out, HasSubstr("\"wraparound\": [false, false, false]"));
  EXPECT_THAT(out, HasSubstr("\"messages\": 4"));
}

TEST(CollectiveCommandTest, ImpossibleRequestsExitOneBadFlagsTwo) {
  std::string out, err;
  EXPECT_EQ(RunCli({"collective", "--slice=v4-128", "--groups=3"}, &out, &err),
            1);
  EXPECT_EQ(err,
            "tpusim collective: INVALID_ARGUMENT: --groups=3: a group size "
            "must divide the 64 devices of v4-128\n");
  EXPECT_EQ(RunCli({"collective", "--slice=v4-128", "--op=gather"}, &out, &err),
            2);
  EXPECT_THAT(err, HasSubstr("collective op \"gather\" is not allowed"));
  EXPECT_EQ(RunCli({"collective", "--shape=4x4"}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("--shape and --generation go together"));
}

// Issue 22: values that were read leniently are usage errors (exit 2).
TEST(CollectiveCommandTest, LenientValuesAreUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"collective", "--generation=v4", "--shape= 4x4x4"},
       "tpusim collective: INVALID_ARGUMENT: --shape= 4x4x4 must be XxY or "
       "XxYxZ (positive integers)\n"},
      {{"collective", "--generation=v4", "--shape=+4x4x4"},
       "tpusim collective: INVALID_ARGUMENT: --shape=+4x4x4 must be XxY or "
       "XxYxZ (positive integers)\n"},
      {{"collective", "--generation=v4", "--shape=4x4"},
       "tpusim collective: INVALID_ARGUMENT: --shape=4x4 has 2 axes; "
       "generation v4 has a 3-D torus, so give XxYxZ\n"},
      {{"collective", "--generation=v5e", "--shape=4x4x1"},
       "tpusim collective: INVALID_ARGUMENT: --shape=4x4x1 has 3 axes; "
       "generation v5e has a 2-D torus, so give XxY\n"},
      {{"collective", "--slice=v4-128", "--bytes=1 MiB"},
       "tpusim collective: INVALID_ARGUMENT: byte size \"1 MiB\" is not "
       "allowed; expected a positive integer with an optional suffix B, KiB, "
       "MiB, GiB, KB, MB or GB, at most 1 TiB\n"},
      {{"collective", "--slice=v4-128", "--groups=xx"},
       "tpusim collective: INVALID_ARGUMENT: --groups=xx names axis x twice\n"},
      {{"collective", "--slice=v4-128", "--groups=+8"},
       "tpusim collective: INVALID_ARGUMENT: --groups=+8 is not allowed; "
       "expected all, axis letters (x, y, z, c = the cores of a chip) or a "
       "group size\n"},
  };
  for (const Case& c : cases) {
    std::string out, err;
    EXPECT_EQ(RunCli(c.args, &out, &err), 2) << c.args.back();
    EXPECT_EQ(err, c.err) << c.args.back();
    EXPECT_EQ(out, "") << c.args.back();
  }
}

}  // namespace
}  // namespace tpusim::tools
