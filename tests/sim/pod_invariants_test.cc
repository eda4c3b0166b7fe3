// Pod invariants on random pods (issue 18): random slices of at most 256
// chips of every generation, random programs whose kernels, infeed and
// several collectives (every op, whole replica sets and subgroups) share the
// links and each device's HBM at once, checked after every call
// (SimBackendOptions::check_invariants: link busy <= elapsed, chip injection
// <= links x B x elapsed, HBM bytes and rate, kernel rooflines, each
// collective >= its lower bound). Some calls are model parallel (2 logical
// cores per replica, the pair on one chip or apart), so cross-core copies
// share the links, the on-chip paths and HBM with the rest; the link checks
// see their bytes. A violation fails the call with a message
// naming the device or link, the bound and the excess. Each seed is its own
// process (one SystemC kernel per process).

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "sim/sim_backend.h"
#include "strategy/runtime/program.h"
#include "strategy/runtime/slice.h"
#include "strategy/runtime/tpu_generation.h"

namespace tpusim::sim {
namespace {

using ::tpusim::testing::IsOk;
using runtime::Buffer;
using runtime::DType;
using runtime::ProgramBuilder;
using runtime::Shape;
using runtime::Tensor;
using runtime::Value;

// A slice of generation `g` with at most 256 chips, picked by `rng`.
std::string PickSlice(const runtime::TpuGeneration& g, std::mt19937_64& rng) {
  std::vector<std::string> small;
  for (absl::string_view name :
       absl::StrSplit(runtime::AllowedSliceNames(g), ", ")) {
    absl::StatusOr<std::array<int, 3>> mesh = runtime::SliceChipMesh(name);
    if (mesh.ok() && (*mesh)[0] * (*mesh)[1] * (*mesh)[2] <= 256) {
      small.emplace_back(name);
    }
  }
  return small[rng() % small.size()];
}

class PodInvariantsTest : public ::testing::TestWithParam<int> {};

TEST_P(PodInvariantsTest, RandomPodKeepsEveryInvariant) {
  std::mt19937_64 rng(static_cast<uint64_t>(GetParam()) * 7919 + 17);
  absl::Span<const runtime::TpuGeneration> gens = runtime::TpuGenerations();
  const runtime::TpuGeneration& g = gens[GetParam() % gens.size()];
  const std::string slice = PickSlice(g, rng);
  SimBackendOptions options;
  options.check_invariants = true;
  options.sim_threads = 1;
  options.prefetch_depth = 1 + static_cast<int>(rng() % 3);
  auto sim = SimBackend::Create(slice, options);
  ASSERT_THAT(sim, IsOk()) << slice;
  SimBackend& s = **sim;
  const int n = static_cast<int>(s.devices().size());
  SCOPED_TRACE(absl::StrCat("seed ", GetParam(), ", slice ", slice, ", ", n,
                            " devices"));
  std::vector<std::unique_ptr<runtime::Executable>> exes;
  std::vector<std::unique_ptr<Buffer>> owned;
  int model_parallel_calls = 0;
  for (int call = 0; call < 3; ++call) {
    // Model parallel (2 cores per replica) every other call where the
    // devices pair up: replica r on devices {2r, 2r+1} (one chip on v2/v3,
    // neighbours elsewhere) or {r, r + n/2} (apart).
    const int cores = n >= 2 && n % 2 == 0 && call % 2 == 1 ? 2 : 1;
    const int replicas = n / cores;
    const bool apart = rng() % 2 == 0;
    auto device = [&](int r, int c) {
      return cores == 1 ? r : apart ? r + c * replicas : 2 * r + c;
    };
    // Subgroups: the replicas split into halves (when there are two or
    // more).
    std::vector<std::vector<int64_t>> halves;
    if (replicas >= 2 && replicas % 2 == 0) {
      halves.resize(2);
      for (int r = 0; r < replicas; ++r) {
        halves[r < replicas / 2 ? 0 : 1].push_back(r);
      }
    }
    auto groups = [&]() {
      return !halves.empty() && rng() % 2 == 0
                 ? halves
                 : std::vector<std::vector<int64_t>>{};
    };
    const int rn = replicas;
    // Elements per device: a multiple of the replicas, so every collective
    // divides.
    const int64_t e = static_cast<int64_t>(rn) * (64 + rng() % 16384);
    ProgramBuilder b(absl::StrCat("random", call), rn, cores);
    Value x = *b.Parameter(DType::kF32, Shape({e}));
    std::vector<Value> outs;
    // Collectives on independent values: several in flight at once.
    const int ops = 2 + static_cast<int>(rng() % 4);
    for (int i = 0; i < ops; ++i) {
      Value v = *b.Add(x, x);
      switch (rng() % 5) {
        case 0:
          outs.push_back(
              *b.AllReduce(v, runtime::CollectiveReduce::kSum, groups()));
          break;
        case 1: {
          auto gr = groups();
          const int64_t size =
              gr.empty() ? rn : static_cast<int64_t>(gr[0].size());
          Value part = *b.Slice(v, {0}, {e / size});
          outs.push_back(*b.AllGather(part, 0, gr));
          break;
        }
        case 2:
          outs.push_back(*b.ReduceScatter(v, runtime::CollectiveReduce::kSum,
                                          0, groups()));
          break;
        case 3:
          outs.push_back(*b.AllToAll(v, 0, 0, groups()));
          break;
        default: {
          if (rn < 2) {
            outs.push_back(*b.AllReduce(v, runtime::CollectiveReduce::kSum));
            break;
          }
          std::vector<std::pair<int64_t, int64_t>> pairs;
          const int64_t shift = 1 + static_cast<int64_t>(rng() % (rn - 1));
          for (int r = 0; r < rn; ++r) pairs.push_back({r, (r + shift) % rn});
          outs.push_back(*b.CollectivePermute(v, pairs));
        }
      }
    }
    // Kernels beside them: an MXU-bound matmul and HBM-bound elementwise.
    const int64_t m = 128 * (1 + static_cast<int64_t>(rng() % 16));
    Value a = *b.Broadcast(*b.Constant(Tensor::Scalar<float>(1.f)), {m, 512});
    Value w = *b.Broadcast(*b.Constant(Tensor::Scalar<float>(2.f)), {512, 512});
    outs.push_back(*b.MatMul(a, w));
    outs.push_back(*b.Exp(*b.Mul(x, x)));
    if (cores == 2) {
      // Core 1 uses core 0's values (copies to it, several at once, beside
      // a collective of its own), and core 0 one of core 1's (a copy back).
      ++model_parallel_calls;
      ASSERT_THAT(b.set_logical_core(1), IsOk());
      std::vector<Value> on1;
      for (size_t i = 0; i < outs.size(); ++i) {
        if (rng() % 2 == 0) on1.push_back(*b.Neg(outs[i]));
      }
      Value x1 = *b.Neg(x);
      on1.push_back(*b.AllReduce(x1, runtime::CollectiveReduce::kSum));
      ASSERT_THAT(b.set_logical_core(0), IsOk());
      on1.push_back(*b.Add(x, x1));
      outs.insert(outs.end(), on1.begin(), on1.end());
    }
    runtime::Program p = *std::move(b).Build(outs);
    auto exe = s.Compile(p, {rn, cores});
    ASSERT_THAT(exe, IsOk());
    exes.push_back(std::move(*exe));
    std::vector<std::vector<Buffer*>> args(rn);
    std::vector<std::vector<int>> assignment;
    for (int r = 0; r < rn; ++r) {
      assignment.push_back({device(r, 0)});
      if (cores == 2) assignment.back().push_back(device(r, 1));
      runtime::TransferOptions transfer;
      transfer.host_cost =
          common::Picoseconds::FromMicroseconds(static_cast<int64_t>(rng() % 500));
      owned.push_back(*s.TransferToDevice(
          device(r, 0), Tensor::Abstract(DType::kF32, Shape({e})), transfer));
      args[r].push_back(owned.back().get());
    }
    ASSERT_THAT(s.ExecuteSpmd(*exes.back(), {assignment}, args), IsOk());
  }
  auto profile = s.CollectProfile();
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->steps_size(), 3);
  EXPECT_EQ(s.Stats().late_starts, 0);
  // Every slice here has an even number of devices but v5e's 1x1 (v5litepod-1).
  if (n % 2 == 0) {
    EXPECT_EQ(model_parallel_calls, 1);
  }
}

// Three seeds per generation (the generation is the seed modulo their
// number).
INSTANTIATE_TEST_SUITE_P(Seeds, PodInvariantsTest, ::testing::Range(0, 18));

}  // namespace
}  // namespace tpusim::sim
