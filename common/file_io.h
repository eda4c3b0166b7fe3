// common/file_io.h
//
// Reading small input files (scenarios, goldens) safely, and turning errno
// into an absl::Status that carries the OS reason.
//
//   TPUSIM_ASSIGN_OR_RETURN(
//       std::string text,
//       ReadRegularFile(path, "scenario file", kMaxScenarioFileBytes));
//
// ReadRegularFile never blocks on a FIFO or reads an endless device: the file
// is opened non-blocking and must be a regular file no larger than the cap.

#ifndef TPUSIM_COMMON_FILE_IO_H_
#define TPUSIM_COMMON_FILE_IO_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tpusim::common {

// "<what> \"<path>\": <strerror(err)>" with the code of `err`: NotFound for
// ENOENT/ENOTDIR, PermissionDenied for EACCES/EPERM/EROFS, FailedPrecondition
// for EISDIR/EPIPE, ResourceExhausted for ENOMEM/ENOSPC/EMFILE/ENFILE, else
// Unknown.
absl::Status ErrnoStatus(absl::string_view what, absl::string_view path,
                         int err);

// The whole content of the regular file `path` (`what` names it in errors,
// e.g. "scenario file"). Errors:
//   the OS error of open() through ErrnoStatus ("cannot read <what>");
//   InvalidArgument "<what> \"p\" is a directory" / "is a FIFO, not a regular
//   file" / "is a character device, not a regular file" / ...;
//   InvalidArgument "<what> \"p\" has N bytes, more than the limit of M
//   bytes" when it exceeds `max_bytes`;
//   DataLoss (ResourceExhausted for ENOMEM) naming the byte offset of a
//   failed read.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path,
                                            absl::string_view what,
                                            int64_t max_bytes);

// Writes `bytes` to `path` (created or truncated). The OS error through
// ErrnoStatus ("cannot write").
absl::Status WriteFile(const std::string& path, absl::string_view bytes);

}  // namespace tpusim::common

#endif  // TPUSIM_COMMON_FILE_IO_H_
