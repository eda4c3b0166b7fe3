// tools/presets_command.h
//
// `tpusim presets [NAME] [--format=text|json]`: the chip presets v2, v3, v4,
// v5e, v5p and v6e (sim/chip/chip_preset.h) as a table, one preset in detail,
// or JSON for machines.

#ifndef TPUSIM_TOOLS_PRESETS_COMMAND_H_
#define TPUSIM_TOOLS_PRESETS_COMMAND_H_

#include "tools/cli.h"

namespace tpusim::tools {

Subcommand PresetsCommand();

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_PRESETS_COMMAND_H_
