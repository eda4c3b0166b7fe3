// tools/sweep_command.h
//
// `tpusim sweep SCENARIO --set PATH=V1,V2,... [--set ...] [--jobs N]
//  [--format=text|json|csv] [--backend=host|sim]`: runs `tpusim run` once per
// point of the cartesian product of the --set lists, each point in its own
// process (SystemC elaborates once per process), up to N at a time (default:
// every core), and prints a header and one row per point in point order
// (tools/compare_report.h). Every point's scenario is loaded and validated
// before any runs (one error naming the point). A point that fails at run
// time is a row with its error, never a crash of the sweep; the sweep exits 0
// when every point ran and 1 otherwise. --out DIR (new or empty) keeps each
// point's outputs in DIR/point-K/ and writes DIR/compare.html;
// --scale-batch=per-replica keeps the file's per-replica batch
// (tools/scale_batch.h).
//
// Values are split at commas outside brackets and braces, so list and message
// values work: --set 'run.device_assignment={computation_shape: [1,1,2]}'.

#ifndef TPUSIM_TOOLS_SWEEP_COMMAND_H_
#define TPUSIM_TOOLS_SWEEP_COMMAND_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "tools/cli.h"

namespace tpusim::tools {

Subcommand SweepCommand();

// "a=1,2" -> {"a=1", "a=2"}; commas inside [] or {} do not split. Empty when
// there is no '=' or no value.
std::vector<std::string> ExpandSetList(absl::string_view assignment);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_SWEEP_COMMAND_H_
