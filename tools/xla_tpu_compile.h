// tools/xla_tpu_compile.h
//
// `tpusim compile SCENARIO --compiler xla-tpu [--set PATH=VALUE]...
// [--format=text|json] [--libtpu PATH] [--compile-time-limit SECONDS]`: the
// scenario's training step compiled by the real XLA:TPU compiler (libtpu) for
// the scenario's slice (scenarios/xla_tpu_step.h), printed: per-device HBM as
// the compiler reports it and how it maps onto tpusim's categories, the fit
// verdict against the chip's HBM, the fusions (count, largest by HBM bytes
// and by FLOPs), the collectives with their replica groups and where their
// start and done sit in the schedule, and the compile time. A step that does
// not fit is an error (ResourceExhausted) after the report, naming the
// compiler's numbers in human units. docs/xla-tpu.md describes the output.

#ifndef TPUSIM_TOOLS_XLA_TPU_COMPILE_H_
#define TPUSIM_TOOLS_XLA_TPU_COMPILE_H_

#include <ostream>

#include "absl/status/status.h"
#include "scenarios/xla_tpu_step.h"
#include "tools/cli.h"

namespace tpusim::tools {

// --libtpu and --compile-time-limit (default 600 s): a limit that is not a
// number of seconds in (0, 86400] is a usage error.
absl::StatusOr<scenarios::XlaTpuStepOptions> XlaTpuOptionsFromArgs(
    const ParsedArgs& args);

// Runs the command (args.positional()[0] is the scenario).
absl::Status RunXlaTpuCompile(const ParsedArgs& args, std::ostream& out);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_XLA_TPU_COMPILE_H_
