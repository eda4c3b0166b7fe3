// tools/run_command.h
//
// `tpusim run SCENARIO [--backend host|sim|pjrt] [--out DIR] [--set PATH=VALUE]...`:
// trains the scenario's `run` workload (scenarios/train_runner.h) and prints
// the text report (tools/report.h); --out DIR also writes stats.json,
// stats.textproto (the run's Profile), trace.json and report.html. Wall time
// goes to stderr only, so everything written is deterministic.

#ifndef TPUSIM_TOOLS_RUN_COMMAND_H_
#define TPUSIM_TOOLS_RUN_COMMAND_H_

#include "tools/cli.h"

namespace tpusim::tools {

Subcommand RunCommand();

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_RUN_COMMAND_H_
