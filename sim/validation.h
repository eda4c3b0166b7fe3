// sim/validation.h
//
// The published and analytical targets the pod model is checked against
// (shared/spec/tpu-hardware-reference.md, sections B and C), as functions that
// build the case, simulate it and return the simulated figure. Each one
// elaborates a SystemC kernel, so a process can run one of them: the
// validation tests run one per TEST and `tpusim validate` one per child
// process.

#ifndef TPUSIM_SIM_VALIDATION_H_
#define TPUSIM_SIM_VALIDATION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/sim_backend.h"

namespace tpusim::sim {

// Sheet B.6: the v2-8 FFW matmul [32,1024,8192] x [8192,32768] in bf16, 4-way
// data x 2-way model parallel (each pair on neighbouring chips, the halves on
// logical cores 0 and 1): the seconds of each core's matmul kernel (all equal;
// measured 96 ms).
absl::StatusOr<double> B6FfwMatmulSeconds();

// Sheet B.6: reduce-scatter of a 134 MB array between core 0 of two
// neighbouring v2 chips (measured 1.13 ms).
absl::StatusOr<double> B6ReduceScatterSeconds();

// Sheet B.5: all_gather over Y (size 4) of a v5e 8x4 slice of `bytes` per
// device group (bf16[2048,8192]: measured 680 us; bf16[256,256]: 8 us).
absl::StatusOr<double> B5AllGatherSeconds(int64_t bytes);

// Sheet C.4 on `slice`: a small data-parallel bf16 MLP training step (6
// layers of 2048 x 2048, 1024 rows per replica, per-layer gradients
// all-reduced as backward produces them), in steady state: four device calls,
// the first a warm-up, the median of the other three. `simulated` is the
// device time of that step (without the host-loop overhead); `model` is an
// independent analytic step model (validation.cc C4Model): every op at its
// C.1 roofline in program order, the gradient all-reduces at C.3's time
// 2V/(k·W_bidi) (+ hops) overlapping the backward pass, never the
// simulator's own collective time.
struct C4Result {
  double simulated = 0;
  double model = 0;
  double model_all_reduce = 0;  // the model's all-reduce time, summed
  double exposed_collective = 0;  // of the simulator's last call
  double hidden_collective = 0;
};
// `compiler` (may be null): the sim backend compiles with it instead of
// sim/compile (SimBackend::SetCompiler; `tpusim validate --compiler xla-tpu`).
absl::StatusOr<C4Result> C4DataParallelStep(
    absl::string_view slice, const ExternalCompiler* compiler = nullptr);

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_VALIDATION_H_
