// tools/compile_command.h
//
// `tpusim compile PROGRAM [--no-fusion] [--infeed-depth=N]`: a serialized
// Program (tpusim.proto.ProgramProto, text format, or binary when the file
// name ends in .pb) compiled as the simulated TPU runs it
// (sim/compile/compile.h): the program text, then the kernels in issue order
// with their fused ops, HBM bytes, collective start/done pairs and copies,
// then each logical core's peak HBM footprint.

#ifndef TPUSIM_TOOLS_COMPILE_COMMAND_H_
#define TPUSIM_TOOLS_COMPILE_COMMAND_H_

#include "tools/cli.h"

namespace tpusim::tools {

Subcommand CompileCommand();

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_COMPILE_COMMAND_H_
