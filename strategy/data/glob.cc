#include "strategy/data/glob.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tpusim::data {
namespace {

bool HasWildcard(const std::string& s) {
  return s.find_first_of("*?[\\") != std::string::npos;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string Join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return absl::StrCat(dir, "/", name);
}

void MatchOne(const std::string& pattern, std::vector<std::string>* out) {
  const bool absolute = !pattern.empty() && pattern[0] == '/';
  std::vector<std::string> parts =
      absl::StrSplit(pattern, '/', absl::SkipEmpty());
  // Candidate paths so far ("" = the current directory for relative patterns).
  std::vector<std::string> current = {absolute ? "/" : ""};
  for (const std::string& part : parts) {
    std::vector<std::string> next;
    if (!HasWildcard(part)) {
      for (const std::string& c : current) next.push_back(Join(c, part));
    } else {
      for (const std::string& c : current) {
        std::error_code ec;
        const std::filesystem::path dir(c.empty() ? std::string(".") : c);
        std::vector<std::string> names;
        for (std::filesystem::directory_iterator it(dir, ec), end;
             !ec && it != end; it.increment(ec)) {
          names.push_back(it->path().filename().string());
        }
        std::sort(names.begin(),
                  names.end());  // deterministic regardless of readdir order
        for (const std::string& name : names) {
          if (::fnmatch(part.c_str(), name.c_str(), FNM_PATHNAME) == 0) {
            next.push_back(Join(c, name));
          }
        }
      }
    }
    current = std::move(next);
    if (current.empty()) return;
  }
  for (const std::string& c : current) {
    if (!c.empty() && Exists(c)) out->push_back(c);
  }
}

}  // namespace

absl::StatusOr<std::vector<std::string>> MatchingFiles(
    absl::Span<const std::string> patterns) {
  std::vector<std::string> out;
  for (const std::string& p : patterns) {
    if (p.empty()) return absl::InvalidArgumentError("file pattern is empty");
    MatchOne(p, &out);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tpusim::data
