// tools/child_process.h
//
// Runs this executable again in child processes, a few at a time: SystemC
// elaborates once per process, so commands that simulate several cases
// (sweep, validate) run each case in its own child.
//
//   std::vector<ChildResult> r = RunSelf({{"run", "a.textproto"}, ...}, 2);
//   r[0].exit_code, r[0].out, r[0].err

#ifndef TPUSIM_TOOLS_CHILD_PROCESS_H_
#define TPUSIM_TOOLS_CHILD_PROCESS_H_

#include <string>
#include <vector>

namespace tpusim::tools {

struct ChildResult {
  int exit_code = -1;  // 128 + signal when killed by one
  std::string out;     // its stdout
  std::string err;     // its stderr
};

// Runs /proc/self/exe with each argument list (without argv[0]), at most
// `jobs` (>= 1) at a time; the results are in the order of `commands`.
std::vector<ChildResult> RunSelf(
    const std::vector<std::vector<std::string>>& commands, int jobs);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_CHILD_PROCESS_H_
