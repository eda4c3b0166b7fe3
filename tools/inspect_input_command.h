// tools/inspect_input_command.h
//
// `tpusim inspect-input SCENARIO [--format=text|json] [--steps K] [--golden
// FILE]
// [--update-golden] [--data-dir DIR]`: loads a scenario
// (scenarios/scenario.proto), distributes its input pipeline the way
// TPUStrategy does and prints the elements each replica receives, per step,
// with the replica's worker. JSON schema: tools/inspect_input_report.h.
//
// --golden FILE compares the JSON output with FILE byte for byte; a difference
// exits 1 with a line diff. --update-golden (with --golden) rewrites FILE
// instead.

#ifndef TPUSIM_TOOLS_INSPECT_INPUT_COMMAND_H_
#define TPUSIM_TOOLS_INSPECT_INPUT_COMMAND_H_

#include "tools/cli.h"

namespace tpusim::tools {

Subcommand InspectInputCommand();

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_INSPECT_INPUT_COMMAND_H_
