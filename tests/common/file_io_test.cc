// Issue 7 (hardening): input files must be regular files of bounded size; open
// and read failures carry the OS reason.

#include "common/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::common {
namespace {

using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

// A fresh directory for the running test, removed when the test ends.
class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           (std::string("file_io_test.") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const {
    return (dir_ / name).string();
  }
  std::filesystem::path dir_;
};

TEST_F(FileIoTest, ReadsARegularFile) {
  std::ofstream(Path("a.txt")) << "hello\n";
  absl::StatusOr<std::string> text = ReadRegularFile(Path("a.txt"), "f", 100);
  ASSERT_THAT(text, IsOk());
  EXPECT_EQ(*text, "hello\n");
}

TEST_F(FileIoTest, FifoIsAnErrorNotAHang) {
  const std::string fifo = Path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(
      ReadRegularFile(fifo, "scenario file", 100),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "scenario file \"" + fifo + "\" is a FIFO, not a regular file"));
}

TEST_F(FileIoTest, CharacterDeviceIsRefused) {
  EXPECT_THAT(ReadRegularFile("/dev/zero", "golden file", 100),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "golden file \"/dev/zero\" is a character device, not "
                       "a regular file"));
}

TEST_F(FileIoTest, DirectorySaysSo) {
  EXPECT_THAT(ReadRegularFile(dir_.string(), "golden file", 100),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "golden file \"" + dir_.string() + "\" is a directory"));
}

TEST_F(FileIoTest, SizeCapIsEnforced) {
  std::ofstream(Path("big")) << std::string(101, 'x');
  EXPECT_THAT(ReadRegularFile(Path("big"), "scenario file", 100),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "scenario file \"" + Path("big") +
                           "\" has 101 bytes, more than the limit of 100 "
                           "bytes"));
}

TEST_F(FileIoTest, MissingFileGivesTheOsReason) {
  EXPECT_THAT(ReadRegularFile(Path("none"), "scenario file", 100),
              StatusIs(absl::StatusCode::kNotFound,
                       "cannot read scenario file \"" + Path("none") +
                           "\": No such file or directory"));
}

TEST_F(FileIoTest, UnreadableFileIsPermissionDeniedNotNotFound) {
  if (::geteuid() == 0) {
    // root reads any file; the errno mapping is checked directly instead.
    EXPECT_THAT(ErrnoStatus("cannot read scenario file", "/x", EACCES),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "cannot read scenario file \"/x\": Permission "
                         "denied"));
    return;
  }
  std::ofstream(Path("secret")) << "x";
  ASSERT_EQ(::chmod(Path("secret").c_str(), 0), 0);
  EXPECT_THAT(ReadRegularFile(Path("secret"), "scenario file", 100),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "cannot read scenario file \"" + Path("secret") +
                           "\": Permission denied"));
}

TEST(ErrnoStatusTest, MapsErrnoToCodesWithTheOsReason) {
  EXPECT_THAT(ErrnoStatus("w", "p", ENOSPC),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "w \"p\": No space left on device"));
  EXPECT_THAT(
      ErrnoStatus("w", "p", EPIPE),
      StatusIs(absl::StatusCode::kFailedPrecondition, "w \"p\": Broken pipe"));
  EXPECT_THAT(ErrnoStatus("w", "p", EISDIR),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "w \"p\": Is a directory"));
  EXPECT_THAT(
      ErrnoStatus("w", "p", EIO),
      StatusIs(absl::StatusCode::kUnknown, "w \"p\": Input/output error"));
}

}  // namespace
}  // namespace tpusim::common
