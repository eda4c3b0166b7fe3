// sim/lower.h
//
// From a Program to the kernels one device runs for one replica: what each op
// asks of the MXU, the vector unit and HBM (sim/chip/kernel_timing.h), which
// ops are collectives (run as start/done pairs on sim/net), and the HBM
// footprint of the schedule. Pure C++ (no SystemC).
//
// Today every op is its own kernel (no fusion yet): its HBM bytes are its cost
// rule's bytes read and written. Ops that move no data on a TPU take no time:
// parameter (the infeed buffer), constant, replica_id, reshape (a bitcast),
// variable_read (the variable lives in HBM). The footprint counts every
// value from its op to its last use (outputs to the end), plus variables.

#ifndef TPUSIM_SIM_LOWER_H_
#define TPUSIM_SIM_LOWER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/chip/kernel_timing.h"
#include "strategy/runtime/program.h"

namespace tpusim::sim {

enum class KernelKind {
  kNone,        // no device work (parameter, constant, reshape, ...)
  kCompute,     // MXU / vector / HBM
  kCollective,  // a collective: start when the operand is ready, done at use
};

struct LoweredOp {
  KernelKind kind = KernelKind::kNone;
  KernelWork work;        // kCompute
  int64_t bytes = 0;      // kCollective: S per device (sim/net convention)
  std::string name;       // "dot.12", the span name
};

struct LoweredProgram {
  std::vector<LoweredOp> ops;  // one per program op
  // The order the device issues the ops in (a topological order of the
  // program): every op that does not depend on a collective's result first,
  // in program order, then the ops that do, in program order. A collective's
  // done therefore waits until the independent work has been issued, as XLA's
  // latency-hiding scheduler places it; ops on one variable slot keep their
  // program order.
  std::vector<int> schedule;
  // Per logical core: the HBM bytes the schedule needs at its peak (values
  // live at once, bound shapes) and the variables it declares on that core.
  std::vector<int64_t> peak_live_bytes;
  std::vector<int64_t> variable_bytes;
  // The five largest values of the peak live set per core, "name dtype[dims]
  // (N bytes)", largest first (for the over-capacity error).
  std::vector<std::vector<std::string>> largest_at_peak;
};

// An f32 dot/conv takes the MXU passes of its precision attribute (DEFAULT,
// one bf16 pass, unless the program asks for HIGH or HIGHEST).
LoweredProgram Lower(const runtime::Program& program);

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_LOWER_H_
