// tools/devices_command.h
//
// `tpusim devices [--backend=host|sim|pjrt] [--slice NAME] [--pjrt-plugin PATH]`:
// the devices a backend shows for a slice (default v3-8). On "pjrt" also the
// plugin (path, PJRT C API versions, StableHLO versions) and what it says of
// each device (id, kind, description), slice device i running on plugin
// device i.

#ifndef TPUSIM_TOOLS_DEVICES_COMMAND_H_
#define TPUSIM_TOOLS_DEVICES_COMMAND_H_

#include "tools/cli.h"

namespace tpusim::tools {

Subcommand DevicesCommand();

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_DEVICES_COMMAND_H_
