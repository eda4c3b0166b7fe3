#include "strategy/data/glob.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

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

// What MatchingFiles has used of its limits so far.
struct GlobBudget {
  const GlobLimits& limits;
  int64_t directories = 0;
};

absl::Status TooBroad(const std::string& pattern, absl::string_view what,
                      int64_t limit) {
  return absl::InvalidArgumentError(absl::StrCat(
      "file pattern \"", pattern, "\" needs more than ", limit, " ", what,
      " (the glob limit); narrow the pattern"));
}

absl::Status MatchOne(const std::string& pattern, GlobBudget& budget,
                      std::vector<std::string>* out) {
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
        std::filesystem::directory_iterator it(dir, ec);
        if (ec) continue;  // not a directory (or not readable): no matches
        if (++budget.directories > budget.limits.max_directories) {
          return TooBroad(pattern, "directories listed",
                          budget.limits.max_directories);
        }
        std::vector<std::string> names;
        for (const std::filesystem::directory_iterator end; !ec && it != end;
             it.increment(ec)) {
          if (static_cast<int64_t>(names.size()) >= budget.limits.max_paths) {
            return TooBroad(pattern, "paths", budget.limits.max_paths);
          }
          names.push_back(it->path().filename().string());
        }
        std::sort(names.begin(),
                  names.end());  // deterministic regardless of readdir order
        for (const std::string& name : names) {
          if (::fnmatch(part.c_str(), name.c_str(), FNM_PATHNAME) == 0) {
            if (static_cast<int64_t>(next.size() + out->size()) >=
                budget.limits.max_paths) {
              return TooBroad(pattern, "paths", budget.limits.max_paths);
            }
            next.push_back(Join(c, name));
          }
        }
      }
    }
    current = std::move(next);
    if (current.empty()) return absl::OkStatus();
  }
  for (const std::string& c : current) {
    if (!c.empty() && Exists(c)) out->push_back(c);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> MatchingFiles(
    absl::Span<const std::string> patterns, const GlobLimits& limits) {
  std::vector<std::string> out;
  GlobBudget budget{limits};
  for (const std::string& p : patterns) {
    if (p.empty()) return absl::InvalidArgumentError("file pattern is empty");
    if (absl::Status s = MatchOne(p, budget, &out); !s.ok()) return s;
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tpusim::data
