// SimBackend times an all_to_all as the network's all-to-all: on an idle pod
// its collective time equals `tpusim collective --op=all_to_all` for the same
// group and bytes, to the picosecond. The CLI runs as a child process (one
// SystemC kernel per process); TPUSIM_CLI is its path.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "sim/sim_backend.h"
#include "strategy/runtime/program.h"

namespace tpusim::sim {
namespace {

using ::tpusim::testing::IsOk;
using runtime::Buffer;
using runtime::DType;
using runtime::ProgramBuilder;
using runtime::Shape;
using runtime::Tensor;
using runtime::Value;

// `tpusim collective --format=json` with `args`: the first result's
// sim_time_ps, or -1.
int64_t CliTimePs(const std::string& args) {
  const std::string command =
      absl::StrCat("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=DISABLE '", TPUSIM_CLI,
                   "' collective --format=json ", args);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  if (pclose(pipe) != 0) return -1;
  const std::string key = "\"sim_time_ps\": ";
  const size_t at = out.find(key);
  if (at == std::string::npos) return -1;
  const size_t begin = at + key.size();
  const size_t end = out.find_first_of(",}", begin);
  int64_t ps = -1;
  if (!absl::SimpleAtoi(out.substr(begin, end - begin), &ps)) return -1;
  return ps;
}

// Runs one all_to_all of `bytes` per device over every device of `slice`
// (one core per replica) on SimBackend; returns the longest collective span
// of a device, after checking the step's collective accounting agrees.
int64_t SimTimePs(const std::string& slice, int64_t bytes) {
  auto sim = SimBackend::Create(slice);
  EXPECT_THAT(sim, IsOk());
  SimBackend& s = **sim;
  const int n = static_cast<int>(s.devices().size());
  // The operand is made on the device (a broadcast of a constant), so every
  // member starts the collective at the same time: a transferred argument
  // would arrive at different times over a chip's shared PCIe link.
  ProgramBuilder b("all_to_all", n);
  Value c = *b.Constant(Tensor::Scalar<float>(1.0f));
  Value x = *b.Broadcast(c, {bytes / 4});
  Value y = *b.AllToAll(x, /*split_axis=*/0, /*concat_axis=*/0);
  runtime::Program p = *std::move(b).Build({y});
  auto exe = s.Compile(p, {n, 1});
  EXPECT_THAT(exe, IsOk());
  std::vector<std::vector<Buffer*>> args(n);
  std::vector<std::vector<int>> assignment;
  for (int r = 0; r < n; ++r) assignment.push_back({r});
  EXPECT_THAT(s.ExecuteSpmd(**exe, {assignment}, args), IsOk());
  auto profile = s.CollectProfile();
  EXPECT_THAT(profile, IsOk());
  int64_t longest = 0;
  for (const auto& span : profile->spans()) {
    if (span.category() == "collective") {
      longest = std::max<int64_t>(longest, span.end_ps() - span.start_ps());
    }
  }
  EXPECT_EQ(profile->steps_size(), 1);
  const auto& step = profile->steps(0);
  EXPECT_EQ(step.hidden_collective_ps() + step.exposed_collective_ps(),
            longest);
  return longest;
}

TEST(AllToAllTimingTest, V4MatchesTheCollectiveCommandToThePicosecond) {
  const int64_t cli = CliTimePs("--slice=v4-32 --op=all_to_all --bytes=8MiB --groups=16");
  ASSERT_GT(cli, 0);
  EXPECT_EQ(SimTimePs("v4-32", 8 << 20), cli);
}

// v3: two devices per chip, so the group also uses the on-chip core path.
// `--groups=32` is every device in id (replica) order, the program's group;
// `--groups=all` orders the group by coordinates (cores last), which sends in
// another order and takes another time.
TEST(AllToAllTimingTest, V3MatchesTheCollectiveCommandToThePicosecond) {
  const int64_t cli = CliTimePs("--slice=v3-32 --op=all_to_all --bytes=4MiB --groups=32");
  ASSERT_GT(cli, 0);
  EXPECT_EQ(SimTimePs("v3-32", 4 << 20), cli);
}

}  // namespace
}  // namespace tpusim::sim
