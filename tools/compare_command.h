// tools/compare_command.h
//
// `tpusim compare A B [C ...] [--format=text|json|csv] [--out FILE.html]`:
// runs side by side from their stats.json (what `tpusim run --out DIR`
// writes; A may name the file or its directory). The same table as `tpusim
// sweep` (tools/compare_report.h), one row per run in argument order; --out
// writes the comparison page (breakdown bars on one time scale, per-chip
// throughput, HBM, busiest links), linking each run's report.html when it
// sits next to its stats.json. Reads files only: nothing is simulated.

#ifndef TPUSIM_TOOLS_COMPARE_COMMAND_H_
#define TPUSIM_TOOLS_COMPARE_COMMAND_H_

#include "tools/cli.h"

namespace tpusim::tools {

Subcommand CompareCommand();

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_COMPARE_COMMAND_H_
