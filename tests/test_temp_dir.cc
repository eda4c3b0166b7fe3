// tests/test_temp_dir.cc
//
// Linked into every test program (tpusim_cc_test): before main() it makes a
// fresh directory "$TMPDIR/tpusim-test-XXXXXX" (TMPDIR defaults to /tmp) and
// points TEST_TMPDIR (GoogleTest's TempDir()) and TMPDIR (the synthetic data
// directory, mkdtemp) at it; when the program exits it removes the directory
// with everything in it. So a test run leaves nothing in the system temp
// folder, and parallel test processes never share temporary files.

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace {

class TestTempDir {
 public:
  TestTempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && base[0] != '\0' ? base : "/tmp") +
        "/tpusim-test-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("tests/test_temp_dir.cc: mkdtemp");
      return;  // the tests then use the default temp folder
    }
    dir_ = pattern;
    setenv("TEST_TMPDIR", dir_.c_str(), 1);
    setenv("TMPDIR", dir_.c_str(), 1);
  }
  ~TestTempDir() {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

 private:
  std::string dir_;
};

const TestTempDir kTestTempDir;

}  // namespace
