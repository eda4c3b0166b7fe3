#include "sim/xla/hlo_import.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tpusim::sim::xla {
namespace {

runtime::DType MatmulType(int element_type) {
  return element_type == kF32 ? runtime::DType::kF32 : runtime::DType::kBF16;
}

absl::StatusOr<runtime::OpCode> CollectiveOp(const HloKernel& k) {
  if (k.collective == "all-reduce") return runtime::OpCode::kAllReduce;
  if (k.collective == "all-gather") return runtime::OpCode::kAllGather;
  if (k.collective == "reduce-scatter") return runtime::OpCode::kReduceScatter;
  if (k.collective == "all-to-all") return runtime::OpCode::kAllToAll;
  if (k.collective == "collective-permute") {
    return runtime::OpCode::kCollectivePermute;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "HLO import: ", k.collective, " ", k.name,
      " cannot be simulated from an imported module yet (all-reduce, "
      "all-gather, reduce-scatter, all-to-all and collective-permute can)"));
}

}  // namespace

absl::StatusOr<ExternalCompiledProgram> ImportSchedule(
    const HloSchedule& schedule, int num_program_parameters,
    const CoreMemory& memory) {
  ExternalCompiledProgram out;
  std::vector<Kernel>& kernels = out.compiled.kernels;
  // Index in `kernels` of each async start (by its index in the schedule).
  std::vector<int> start_of(schedule.kernels.size(), -1);
  auto params_of = [&](const HloKernel& k) {
    std::vector<int> p;
    for (int64_t n : k.parameters_read) {
      if (n < num_program_parameters) p.push_back(static_cast<int>(n));
    }
    return p;
  };
  for (size_t i = 0; i < schedule.kernels.size(); ++i) {
    const HloKernel& h = schedule.kernels[i];
    Kernel k;
    k.name = h.name;
    k.core = 0;
    switch (h.kind) {
      case HloKernelKind::kCollective:
      case HloKernelKind::kCollectiveStart: {
        absl::StatusOr<runtime::OpCode> code = CollectiveOp(h);
        if (!code.ok()) return code.status();
        k.collective = *code;
        k.kind = CompiledKernelKind::kCollectiveStart;
        k.collective_bytes = h.collective_bytes;
        k.replica_groups = h.replica_groups;
        k.source_target_pairs = h.source_target_pairs;
        k.name = absl::StrCat(h.name, ".start");
        const int start = static_cast<int>(kernels.size());
        kernels.push_back(k);
        out.kernel_parameters.push_back(params_of(h));
        if (h.kind == HloKernelKind::kCollectiveStart) {
          start_of[i] = start;
          continue;
        }
        Kernel done = k;
        done.kind = CompiledKernelKind::kCollectiveDone;
        done.name = absl::StrCat(h.name, ".done");
        done.pair = start;
        done.deps = {start};
        kernels[start].pair = static_cast<int>(kernels.size());
        kernels.push_back(std::move(done));
        out.kernel_parameters.push_back({});
        continue;
      }
      case HloKernelKind::kCollectiveDone: {
        const int start = h.partner >= 0 ? start_of[h.partner] : -1;
        if (start < 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "HLO import: ", h.name, " has no collective start before it"));
        }
        k = kernels[start];
        k.kind = CompiledKernelKind::kCollectiveDone;
        k.name = h.name;
        k.pair = start;
        k.deps = {start};
        kernels[start].pair = static_cast<int>(kernels.size());
        kernels.push_back(std::move(k));
        out.kernel_parameters.push_back({});
        continue;
      }
      default:
        break;
    }
    double matmul_flops = 0;
    for (const HloMatmul& m : h.matmuls) {
      MatmulWork w;
      w.batch = m.batch;
      w.m = m.m;
      w.k = m.k;
      w.n = m.n;
      w.dtype = MatmulType(m.element_type);
      k.work.matmuls.push_back(w);
      matmul_flops += 2.0 * static_cast<double>(m.batch) *
                      static_cast<double>(m.m) * static_cast<double>(m.k) *
                      static_cast<double>(m.n);
    }
    k.kind = k.work.matmuls.empty() ? CompiledKernelKind::kVector
                                    : CompiledKernelKind::kMxu;
    k.work.vector_elements =
        static_cast<int64_t>(std::max(0.0, h.flops - matmul_flops));
    k.work.transcendental_elements = static_cast<int64_t>(h.transcendentals);
    k.hbm_read_bytes = h.bytes_read;
    k.hbm_write_bytes = h.bytes_written;
    k.work.hbm_bytes = h.hbm_bytes();
    k.flops = static_cast<int64_t>(h.flops);
    kernels.push_back(std::move(k));
    out.kernel_parameters.push_back(params_of(h));
  }
  out.compiled.memory = {memory};
  return out;
}

}  // namespace tpusim::sim::xla
