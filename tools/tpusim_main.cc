// The tpusim command-line tool.
//
// libsystemc.so owns main() and calls sc_main(); an executable's own main()
// overrides the library's. The CLI defines main() to silence SystemC's
// copyright banner (printed to stderr on first kernel use unless
// SYSTEMC_DISABLE_COPYRIGHT_MESSAGE is set; a user's own setting wins), then
// enters the kernel the normal way, which calls sc_main (architecture.md: every
// executable that links sim/ defines sc_main).

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "tools/cli.h"
#include "tools/subcommands.h"

// Declared extern "C" by SystemC (sysc/kernel/sc_externs.h); declared here so
// that tools/ does not include <systemc>.
extern "C" int sc_elab_and_sim(int argc, char* argv[]);

extern "C" int sc_main(int argc, char* argv[]) {
  std::vector<std::string> args(argv + 1, argv + argc);
  tpusim::tools::Cli cli(tpusim::tools::AllSubcommands());
  // stdout through write(2), so that a failed write keeps its errno.
  tpusim::tools::FdOutputBuffer stdout_buffer(STDOUT_FILENO);
  std::ostream out(&stdout_buffer);
  return cli.Run(args, out, std::cerr);
}

int main(int argc, char* argv[]) {
  // A closed pipe on stdout must be an error exit (1, reported by the CLI
  // when it flushes), not a silent death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "DISABLE", /*overwrite=*/0);
  return sc_elab_and_sim(argc, argv);
}
