// Runs every seed and every fixed crash input (tests/fuzz/regressions/) of each
// fuzz target through its harness in the ordinary build, so the contracts the
// fuzzers check hold on the corpus in every configuration (release, asan) and a
// fixed crash stays fixed. A broken contract aborts the test process.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "tests/fuzz/harnesses.h"

namespace tpusim::fuzz {
namespace {

namespace fs = std::filesystem;

// The regular files in `dir` (relative to the source tree) whose names end
// with `suffix`, sorted; none when `dir` does not exist.
std::vector<fs::path> FilesIn(absl::string_view dir,
                              absl::string_view suffix = "") {
  std::vector<fs::path> out;
  const fs::path root = fs::path(TPUSIM_SOURCE_DIR) / std::string(dir);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(),
                     std::string(suffix)) == 0 &&
        name != "README.md") {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Replays the seeds and fixed crash inputs of `target`; returns how many ran.
int Replay(absl::string_view target, void (*harness)(absl::string_view)) {
  int n = 0;
  for (absl::string_view dir :
       {"tests/fuzz/corpus/", "tests/fuzz/regressions/"}) {
    for (const fs::path& p : FilesIn(absl::StrCat(dir, target))) {
      SCOPED_TRACE(p.string());
      harness(Contents(p));
      ++n;
    }
  }
  return n;
}

TEST(FuzzCorpusReplayTest, Scenario) {
  int n = Replay("scenario", FuzzScenario);
  // tools/fuzz.sh also seeds the scenario target with the example scenarios.
  for (const fs::path& p : FilesIn("scenarios", ".textproto")) {
    SCOPED_TRACE(p.string());
    FuzzScenario(Contents(p));
    ++n;
  }
  EXPECT_GE(n, 10);
}

TEST(FuzzCorpusReplayTest, TFRecord) {
  EXPECT_GE(Replay("tfrecord", FuzzTFRecord), 5);
}

TEST(FuzzCorpusReplayTest, Example) {
  EXPECT_GE(Replay("example", FuzzExample), 5);
}

TEST(FuzzCorpusReplayTest, Program) {
  EXPECT_GE(Replay("program", FuzzProgram), 5);
}

}  // namespace
}  // namespace tpusim::fuzz
