// sim/xla/hlo_import.h
//
// A compiled HLO module's schedule (sim/xla/hlo_analysis.h) as the kernels the
// simulated TensorCore issues (sim/compile's Kernel, one logical core), so
// SimBackend times the program the XLA:TPU compiler produced
// (SimBackend::SetCompiler).
//
//   TPUSIM_ASSIGN_OR_RETURN(sim::ExternalCompiledProgram p,
//                           ImportSchedule(schedule, num_parameters, memory));
//
// Mapping:
//  * a fusion or compute kernel with dots or convolutions: kMxu with its
//    matmuls (f32 operands as f32, every other type as bf16) and the rest of
//    its FLOPs as vector elements; without: kVector; its HBM bytes as the
//    analysis counts them; copies (HBM <-> on-chip memory) and custom calls:
//    kVector with their HBM bytes only;
//  * a synchronous collective: a start and a done right after it; an async
//    pair: a start and a done at their places in the schedule; the op
//    (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute),
//    the replica groups or a permute's source-target pairs (XLA replica ids,
//    or partition ids of an SPMD-partitioned module with one replica, = the
//    program's replicas: one core per replica) and the bytes per device;
//  * kernel_parameters: the program parameters (entry parameters numbered
//    below `num_program_parameters`) each kernel reads: its infeed;
//  * memory: `memory` as given (the compiler's numbers, mapped by the caller).
// Errors (InvalidArgument naming the instruction): any other collective
// (collective-broadcast).

#ifndef TPUSIM_SIM_XLA_HLO_IMPORT_H_
#define TPUSIM_SIM_XLA_HLO_IMPORT_H_

#include "absl/status/statusor.h"
#include "sim/sim_backend.h"
#include "sim/xla/hlo_analysis.h"

namespace tpusim::sim::xla {

absl::StatusOr<ExternalCompiledProgram> ImportSchedule(
    const HloSchedule& schedule, int num_program_parameters,
    const CoreMemory& memory);

}  // namespace tpusim::sim::xla

#endif  // TPUSIM_SIM_XLA_HLO_IMPORT_H_
