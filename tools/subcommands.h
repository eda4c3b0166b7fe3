// tools/subcommands.h
//
// The composition root of the CLI: every subcommand tpusim offers, in help
// order.

#ifndef TPUSIM_TOOLS_SUBCOMMANDS_H_
#define TPUSIM_TOOLS_SUBCOMMANDS_H_

#include <vector>

#include "tools/cli.h"
#include "tools/collective_command.h"
#include "tools/compare_command.h"
#include "tools/compile_command.h"
#include "tools/devices_command.h"
#include "tools/inspect_input_command.h"
#include "tools/presets_command.h"
#include "tools/run_command.h"
#include "tools/sweep_command.h"
#include "tools/topo_command.h"
#include "tools/validate_command.h"

namespace tpusim::tools {

inline std::vector<Subcommand> AllSubcommands() {
  return {PresetsCommand(), InspectInputCommand(), CollectiveCommand(),
          TopoCommand(), RunCommand(), SweepCommand(), CompareCommand(),
          ValidateCommand(), CompileCommand(), DevicesCommand()};
}

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_SUBCOMMANDS_H_
