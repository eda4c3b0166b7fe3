// `tpusim topo`: exact text for the default placement and for device
// assignments (built and explicit), the SVG's structure, and bad input.

#include "tools/topo_command.h"

#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/cli.h"

namespace tpusim::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

int RunCli(const std::vector<std::string>& args, std::string* out,
           std::string* err) {
  Cli cli({TopoCommand()});
  std::ostringstream o, e;
  const int code = cli.Run(args, o, e);
  *out = o.str();
  *err = e.str();
  return code;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos;
       pos = text.find(what, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(TopoCommandTest, DefaultPlacementIsReplicaPerDeviceInIdOrder) {
  std::string out, err;
  ASSERT_EQ(RunCli({"topo", "v3-8"}, &out, &err), 0) << err;
  EXPECT_EQ(out,
            "slice v3-8: TPU v3, 2x2 chips, 2-D torus (wraparound: x no, y "
            "no), 1 host, 8 devices (2 per chip)\n"
            "device assignment: default (one core per replica, replica r on "
            "device r), 8 replicas\n"
            "\n"
            "       x=0        x=1\n"
            "y=0    [h0 r0 r1] [h0 r2 r3]\n"
            "y=1    [h0 r4 r5] [h0 r6 r7]\n"
            "\n"
            "replica core device task TPU coords\n"
            "      0    0      0    0   0 (0,0,0)\n"
            "      1    0      1    0   1 (0,0,1)\n"
            "      2    0      2    0   2 (1,0,0)\n"
            "      3    0      3    0   3 (1,0,1)\n"
            "      4    0      4    0   4 (0,1,0)\n"
            "      5    0      5    0   5 (0,1,1)\n"
            "      6    0      6    0   6 (1,1,0)\n"
            "      7    0      7    0   7 (1,1,1)\n");
}

// TF 2.2's build with computation_shape [1,1,2] on a 2x2x2 mesh takes the 2-D
// ring tiling: replicas 0..3 at chips (0,0), (0,1), (1,1), (1,0), each on both
// cores of its chip.
TEST(TopoCommandTest, BuiltAssignmentKeepsEachPairOnOneChip) {
  std::string out, err;
  ASSERT_EQ(RunCli({"topo", "v3-8", "--device-assignment=shape=1x1x2,replicas=4"},
                   &out, &err),
            0)
      << err;
  EXPECT_THAT(out, HasSubstr("device assignment: shape=1x1x2,replicas=4: 4 "
                             "replicas x 2 cores per replica\n"));
  EXPECT_THAT(out, HasSubstr("y=0    [h0 r0.0 r0.1] [h0 r3.0 r3.1]\n"
                             "y=1    [h0 r1.0 r1.1] [h0 r2.0 r2.1]\n"));
  EXPECT_THAT(out, HasSubstr("      1    0      4    0   4 (0,1,0)\n"
                             "      1    1      5    0   5 (0,1,1)\n"));
}

TEST(TopoCommandTest, ExplicitCoresCanSplitAPairAcrossChips) {
  std::string out, err;
  ASSERT_EQ(RunCli({"topo", "v3-8",
                    "--device-assignment=cores=[[[0,0,0],[1,1,1]],[[1,0,0],"
                    "[0,1,1]]]"},
                   &out, &err),
            0)
      << err;
  EXPECT_THAT(out, HasSubstr("y=0    [h0 r0.0 -] [h0 r1.0 -]\n"
                             "y=1    [h0 - r1.1] [h0 - r0.1]\n"));
}

TEST(TopoCommandTest, ThreeDSliceDrawsPlanesHostsAndWraparound) {
  std::string out, err;
  ASSERT_EQ(RunCli({"topo", "v4-128"}, &out, &err), 0) << err;
  EXPECT_THAT(out, StartsWith("slice v4-128: TPU v4, 4x4x4 chips, 3-D torus "
                              "(wraparound: x yes, y yes, z yes), 16 hosts, "
                              "64 devices (1 per chip)\n"));
  EXPECT_EQ(Count(out, "plane z="), 4);
  // Host blocks are 2x2 chips in one z plane, numbered x-block fastest.
  // Columns are as wide as the widest cell ("[h10 r40]").
  EXPECT_THAT(out, HasSubstr("plane z=1\n"
                             "       x=0       x=1       x=2       x=3\n"
                             "y=0    [h4 r16]  [h4 r17]  [h5 r20]  [h5 r21]\n"
                             "y=1    [h4 r18]  [h4 r19]  [h5 r22]  [h5 r23]\n"));
  EXPECT_THAT(out, HasSubstr("     63    0     63   15   3 (3,3,3,0)\n"));
  ASSERT_EQ(RunCli({"topo", "v4-32"}, &out, &err), 0) << err;
  EXPECT_THAT(out, HasSubstr("(wraparound: x no, y no, z no)"));
}

TEST(TopoCommandTest, SvgHasAChipPerCoordinateAndWrapLinksWhereTheyExist) {
  std::string out, err;
  ASSERT_EQ(RunCli({"topo", "v5litepod-256", "--format=svg"}, &out, &err), 0)
      << err;
  EXPECT_THAT(out, StartsWith("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(Count(out, "<rect x="), 256);
  // 16x16 with both axes wrapped: two stubs per row and per column.
  EXPECT_EQ(Count(out, "<title>x wraparound</title>"), 32);
  EXPECT_EQ(Count(out, "<title>y wraparound</title>"), 32);
  EXPECT_THAT(out, HasSubstr("<title>chip 17 (1,1) host "));
  ASSERT_EQ(RunCli({"topo", "v3-8", "--format=svg"}, &out, &err), 0) << err;
  EXPECT_EQ(Count(out, "wraparound</title>"), 0);
  EXPECT_EQ(Count(out, "<text x="), 2 + 4 * 3);  // header + chip, 2 cores
}

TEST(TopoCommandTest, BadInputNamesTheValue) {
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"topo", "v9-8"}, 1, "slice name \"v9-8\" has an unknown generation"},
      {{"topo", "v3-8", "--format=png"}, 2, "--format=png must be text or svg"},
      {{"topo"}, 2, "expected 1 argument(s), got 0"},
      {{"topo", "v3-8", "--device-assignment=shape=1x2"},
       1,
       "--device-assignment=shape=1x2: computation_shape must have shape [3]"},
      {{"topo", "v3-8", "--device-assignment=shape=1x1x2,replicas=5"},
       1,
       "requested 5 replicas but only 4 replicas with shape [1 1 2]"},
      {{"topo", "v3-8", "--device-assignment=shape=1xax2"},
       1,
       "shape=1xax2 must be integers joined by 'x'"},
      {{"topo", "v3-8", "--device-assignment=foo=1"},
       1,
       "unknown key 'foo' (allowed: shape, stride, replicas, cores)"},
      {{"topo", "v3-8", "--device-assignment=replicas=2"},
       1,
       "needs shape=... or cores=[...]"},
      {{"topo", "v3-8", "--device-assignment=cores=[[0,0]]"},
       1,
       "cores: expected '[' at offset 2"},
      {{"topo", "v3-8", "--device-assignment=cores=[[[5,0,0]]]"},
       1,
       "coordinates [5, 0, 0] are outside the TPU mesh of shape [2, 2, 2]"},
      {{"topo", "v3-8", "--device-assignment=cores=[[[0,0,0]],[[0,0,0]]]"},
       1,
       "device 0 (coordinates 0,0,0) is assigned twice: r0 and replica 1 "
       "logical core 0"},
      // Issue 22: lenient values that were accepted.
      {{"topo", "v3-8", "--device-assignment=shape=1x1x2,replicas=0"},
       1,
       "tpusim topo: INVALID_ARGUMENT: --device-assignment=shape=1x1x2,"
       "replicas=0: replicas=0 must be an integer >= 1\n"},
      {{"topo", "v3-8", "--device-assignment=shape=1x1x2,replicas=+2"},
       1,
       "--device-assignment=shape=1x1x2,replicas=+2: replicas=+2 must be an "
       "integer >= 1"},
      {{"topo", "v3-8", "--device-assignment=shape=1x1x2,shape=1x1x1"},
       1,
       "tpusim topo: INVALID_ARGUMENT: --device-assignment=shape=1x1x2,"
       "shape=1x1x1: key 'shape' is given twice\n"},
      {{"topo", "v3-8", "--device-assignment=shape=1x1x2,replicas=1,replicas=2"},
       1,
       "key 'replicas' is given twice"},
      {{"topo", "v3-8", "--device-assignment=shape= 1x1x2"},
       1,
       "shape= 1x1x2 must be integers joined by 'x'"},
  };
  for (const Case& c : cases) {
    std::string out, err;
    EXPECT_EQ(RunCli(c.args, &out, &err), c.code) << c.args.back();
    EXPECT_THAT(err, HasSubstr(c.message)) << c.args.back();
    EXPECT_EQ(out, "") << c.args.back();
  }
}

}  // namespace
}  // namespace tpusim::tools
