#include "common/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace tpusim::common {
namespace {

// Closes a file descriptor on scope exit.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

absl::string_view KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

absl::Status ErrnoStatus(absl::string_view what, absl::string_view path,
                         int err) {
  const std::string msg =
      absl::StrCat(what, " \"", path, "\": ", std::strerror(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(msg);
    case EISDIR:
    case EPIPE:
      return absl::FailedPreconditionError(msg);
    case ENOMEM:
    case ENOSPC:
    case EMFILE:
    case ENFILE:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::UnknownError(msg);
  }
}

absl::StatusOr<std::string> ReadRegularFile(const std::string& path,
                                            absl::string_view what,
                                            int64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == EISDIR) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " \"", path, "\" is a directory"));
    }
    return ErrnoStatus(absl::StrCat("cannot read ", what), path, err);
  }
  FdCloser closer(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return ErrnoStatus(absl::StrCat("cannot read ", what), path, errno);
  if (!S_ISREG(st.st_mode)) {
    const absl::string_view kind = KindOf(st.st_mode);
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", path, "\" is ", kind,
                     kind == "a directory" ? "" : ", not a regular file"));
  }
  auto too_big = [&](int64_t size) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", path, "\" has ", size,
                     " bytes, more than the limit of ", max_bytes, " bytes"));
  };
  if (st.st_size > max_bytes) return too_big(st.st_size);
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      const std::string msg =
          absl::StrCat("cannot read ", what, " \"", path, "\" at byte offset ",
                       out.size(), ": ", std::strerror(err));
      if (err == ENOMEM) return absl::ResourceExhaustedError(msg);
      return absl::DataLossError(msg);
    }
    if (n == 0) break;
    // The file may grow while it is read.
    if (static_cast<int64_t>(out.size()) + n > max_bytes)
      return too_big(static_cast<int64_t>(out.size()) + n);
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

absl::Status WriteFile(const std::string& path, absl::string_view bytes) {
  std::ofstream o(path, std::ios::binary | std::ios::trunc);
  if (o) o.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (o) o.close();
  if (!o) return ErrnoStatus("cannot write", path, errno);
  return absl::OkStatus();
}

}  // namespace tpusim::common
