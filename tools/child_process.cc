#include "tools/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace tpusim::tools {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pid_t Spawn(const std::vector<std::string>& args, const std::string& out_path,
            const std::string& err_path) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out >= 0) dup2(out, STDOUT_FILENO);
  if (err >= 0) dup2(err, STDERR_FILENO);
  std::vector<std::string> argv = {"tpusim"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargs;
  for (std::string& a : argv) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  execv("/proc/self/exe", cargs.data());
  _exit(127);
}

}  // namespace

std::vector<ChildResult> RunSelf(
    const std::vector<std::vector<std::string>>& commands, int jobs) {
  std::vector<ChildResult> results(commands.size());
  char tmpl[] = "/tmp/tpusim-children.XXXXXX";
  const char* base = mkdtemp(tmpl);
  if (base == nullptr) {
    for (ChildResult& r : results) {
      r.err = absl::StrCat("mkdtemp: ", std::strerror(errno));
    }
    return results;
  }
  auto path = [&](size_t i, const char* what) {
    return absl::StrCat(base, "/", i, ".", what);
  };
  std::map<pid_t, size_t> running;
  size_t next = 0;
  while (next < commands.size() || !running.empty()) {
    while (static_cast<int>(running.size()) < std::max(1, jobs) &&
           next < commands.size()) {
      const pid_t pid =
          Spawn(commands[next], path(next, "out"), path(next, "err"));
      if (pid < 0) {
        results[next].err = absl::StrCat("fork: ", std::strerror(errno));
      } else {
        running[pid] = next;
      }
      ++next;
    }
    if (running.empty()) continue;
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) break;
    auto it = running.find(pid);
    if (it == running.end()) continue;
    ChildResult& r = results[it->second];
    r.exit_code =
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = ReadAll(path(it->second, "out"));
    r.err = ReadAll(path(it->second, "err"));
    running.erase(it);
  }
  for (size_t i = 0; i < commands.size(); ++i) {
    unlink(path(i, "out").c_str());
    unlink(path(i, "err").c_str());
  }
  rmdir(base);
  return results;
}

}  // namespace tpusim::tools
