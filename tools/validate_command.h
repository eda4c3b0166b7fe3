// tools/validate_command.h
//
// `tpusim validate [--jobs N] [--format=text|json]`: runs the published
// end-to-end and single-op targets of shared/spec/tpu-hardware-reference.md
// (section B) and the C.4 step model, each in its own process, and prints
// predicted vs published with the error. It reports, it does not gate: the exit
// code is 0 unless a case could not run. A target the workloads cannot express
// yet is listed with the reason.

#ifndef TPUSIM_TOOLS_VALIDATE_COMMAND_H_
#define TPUSIM_TOOLS_VALIDATE_COMMAND_H_

#include "tools/cli.h"

namespace tpusim::tools {

Subcommand ValidateCommand();

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_VALIDATE_COMMAND_H_
