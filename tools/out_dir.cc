#include "tools/out_dir.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"

namespace tpusim::tools {

absl::Status CheckFreshDirectory(const std::string& flag,
                                 const std::string& dir) {
  if (dir.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "= needs a directory"));
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return common::ErrnoStatus(absl::StrCat("cannot use --", flag),
                               dir, errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, "=", dir, ": exists and is not a directory; give a new "
        "or empty directory"));
  }
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return common::ErrnoStatus(absl::StrCat("cannot use --", flag), dir,
                               errno);
  }
  bool empty = true;
  while (struct dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  closedir(d);
  if (!empty) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, "=", dir, ": exists and is not empty; give a new or "
        "empty directory (nothing was run)"));
  }
  return absl::OkStatus();
}

absl::Status MakeDirectory(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return common::ErrnoStatus("cannot create", dir, errno);
  }
  return absl::OkStatus();
}

}  // namespace tpusim::tools
