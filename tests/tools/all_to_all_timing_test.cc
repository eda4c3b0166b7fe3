// SimBackend times an all_to_all as the network's all-to-all: on an idle pod
// its collective time equals `tpusim collective --op=all_to_all` for the same
// group and bytes, to the picosecond. A cross-core copy (a value used on
// another logical core of its replica) is a point-to-point transfer on the
// same network: on an idle pod it takes what `tpusim collective --op=permute`
// gives for that pair and those bytes, copies that share a link share it,
// and the link counters carry their bytes. The CLI runs as a child process
// (one SystemC kernel per process); TPUSIM_CLI is its path.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "sim/net_preset.h"
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

// The network's time for one message of `bytes` alone on a route: its bytes
// at the rate of the first link (cut-through) plus each hop's latency.
int64_t AlonePs(double bytes, double bytes_per_second, common::Picoseconds hop,
                int hops) {
  return static_cast<int64_t>(std::ceil(bytes * (1e12 / bytes_per_second))) +
         hops * hop.count();
}

// A copy's time on SimBackend: the longest copy span of a device, and the
// bytes each link carried, as "chip dim direction" -> bytes (links with
// none left out).
struct CopyRun {
  int64_t longest_ps = 0;
  std::map<std::string, int64_t> link_bytes;
};

// One call on `s` (its profile reset first) of a program with 2 logical
// cores per replica (`assignment`: per replica its two devices): core 0
// makes `bytes` (a broadcast of a constant, so every replica's value is
// ready at the same time) and core 1 negates it: sim/compile copies the
// value to core 1 as soon as it is made.
CopyRun CopyOn(SimBackend& s, const std::vector<std::vector<int>>& assignment,
               int64_t bytes) {
  s.ResetProfile();
  const int replicas = static_cast<int>(assignment.size());
  ProgramBuilder b("copy", replicas, 2);
  EXPECT_THAT(b.set_logical_core(0), IsOk());
  Value x = *b.Broadcast(*b.Constant(Tensor::Scalar<float>(1.0f)), {bytes / 4});
  EXPECT_THAT(b.set_logical_core(1), IsOk());
  Value y = *b.Neg(x);
  runtime::Program p = *std::move(b).Build({y});
  auto exe = s.Compile(p, {replicas, 2});
  EXPECT_THAT(exe, IsOk());
  std::vector<std::vector<Buffer*>> args(replicas);
  EXPECT_THAT(s.ExecuteSpmd(**exe, {assignment}, args), IsOk());
  auto profile = s.CollectProfile();
  EXPECT_THAT(profile, IsOk());
  CopyRun run;
  int copies = 0;
  for (const auto& span : profile->spans()) {
    if (absl::StartsWith(span.name(), "copy.")) {
      EXPECT_EQ(span.category(), "collective");
      ++copies;
      run.longest_ps =
          std::max<int64_t>(run.longest_ps, span.end_ps() - span.start_ps());
    }
  }
  EXPECT_EQ(copies, replicas);
  for (const auto& l : profile->links()) {
    if (l.bytes() == 0) continue;
    run.link_bytes[absl::StrCat(l.chip(), " ", l.dim(), " ", l.direction())] =
        l.bytes();
  }
  return run;
}

// v4: one device per chip; the pairs {0,1} and {2,3} are x neighbours, and
// the CLI's permute over groups of 2 sends both ways on each pair (the
// other direction is another link: the same time as one copy).
TEST(CrossCoreCopyTimingTest, V4CopyMatchesThePermuteCommandToThePicosecond) {
  const int64_t cli = CliTimePs("--slice=v4-8 --op=permute --bytes=8MiB --groups=2");
  ASSERT_GT(cli, 0);
  auto sim = SimBackend::Create("v4-8");
  ASSERT_THAT(sim, IsOk());
  const CopyRun run = CopyOn(**sim, {{0, 1}, {2, 3}}, 8 << 20);
  EXPECT_EQ(run.longest_ps, cli);
  // 8 MiB at v4's achieved link rate plus one hop.
  const net::NetConfig c = *NetConfigFromPreset((*sim)->preset());
  EXPECT_EQ(run.longest_ps,
            AlonePs(8 << 20, c.link_bytes_per_second, c.hop_latency, 1));
  EXPECT_EQ(run.longest_ps, 187413512);
  // Each copy on its +x link (chip 0 to 1, chip 2 to 3), nothing else.
  EXPECT_EQ(run.link_bytes, (std::map<std::string, int64_t>{
                                {"0 0 1", 8 << 20}, {"2 0 1", 8 << 20}}));
}

// v3: the two cores of a chip are devices 2c and 2c + 1; a copy between them
// takes the chip's on-chip path (dim 3 in the link counters), faster than a
// copy to the next chip.
TEST(CrossCoreCopyTimingTest, V3OnChipCopyMatchesThePermuteCommand) {
  const int64_t cli = CliTimePs("--slice=v3-8 --op=permute --bytes=8MiB --groups=2");
  ASSERT_GT(cli, 0);
  auto sim = SimBackend::Create("v3-8");
  ASSERT_THAT(sim, IsOk());
  const CopyRun run = CopyOn(**sim, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, 8 << 20);
  EXPECT_EQ(run.longest_ps, cli);
  const net::NetConfig c = *NetConfigFromPreset((*sim)->preset());
  EXPECT_EQ(run.longest_ps, AlonePs(8 << 20, c.on_chip_bytes_per_second,
                                    c.on_chip_latency, 1));
  EXPECT_EQ(run.longest_ps, 51250049);
  EXPECT_EQ(run.link_bytes,
            (std::map<std::string, int64_t>{{"0 3 1", 8 << 20},
                                            {"1 3 1", 8 << 20},
                                            {"2 3 1", 8 << 20},
                                            {"3 3 1", 8 << 20}}));
}

// v3 across chips: replica {0, 2} alone copies over chip 0's +x link; with
// replica {1, 3} beside it both copies share that link (the CLI's permute
// over the x axis has the same two messages per direction) and each takes
// longer; the link carries both.
TEST(CrossCoreCopyTimingTest, V3CopiesThatShareALinkTakeLonger) {
  const int64_t cli = CliTimePs("--slice=v3-8 --op=permute --bytes=8MiB --groups=x");
  ASSERT_GT(cli, 0);
  auto sim = SimBackend::Create("v3-8");
  ASSERT_THAT(sim, IsOk());
  // One after the other on one pod (idle again between them).
  const CopyRun alone = CopyOn(**sim, {{0, 2}}, 8 << 20);
  const CopyRun shared = CopyOn(**sim, {{0, 2}, {1, 3}}, 8 << 20);
  const net::NetConfig c = *NetConfigFromPreset((*sim)->preset());
  EXPECT_EQ(alone.longest_ps,
            AlonePs(8 << 20, c.link_bytes_per_second, c.hop_latency, 1));
  EXPECT_EQ(alone.longest_ps, 114666776);
  // The on-chip path is faster (the v3 on-chip test: 51250049 ps).
  EXPECT_LT(51250049, alone.longest_ps);
  EXPECT_EQ(alone.link_bytes,
            (std::map<std::string, int64_t>{{"0 0 1", 8 << 20}}));
  EXPECT_EQ(shared.longest_ps, cli);
  // The link takes one message after the other: the later copy ends when
  // both have crossed (twice 8 MiB at the link's rate) plus the hop.
  EXPECT_EQ(shared.longest_ps,
            2 * AlonePs(8 << 20, c.link_bytes_per_second, c.hop_latency, 0) +
                c.hop_latency.count());
  EXPECT_EQ(shared.longest_ps, 228333552);
  EXPECT_GT(shared.longest_ps, alone.longest_ps);
  EXPECT_EQ(shared.link_bytes,
            (std::map<std::string, int64_t>{{"0 0 1", 16 << 20}}));
}

}  // namespace
}  // namespace tpusim::sim
