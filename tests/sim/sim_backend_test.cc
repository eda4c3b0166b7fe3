// SimBackend: values bit-identical to HostBackend, the step timeline from the
// pod model, and its bad input. Each TEST is its own process (one SystemC
// kernel per process).

#include "sim/sim_backend.h"

#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "google/protobuf/text_format.h"
#include "sim/pod.pb.h"
#include "strategy/cluster_resolver.h"
#include "strategy/runtime/host_backend.h"
#include "strategy/data/dataset.h"
#include "strategy/input_iterator.h"
#include "strategy/tpu_strategy.h"

namespace tpusim::sim {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;
using runtime::Buffer;
using runtime::DType;
using runtime::Program;
using runtime::ProgramBuilder;
using runtime::Shape;
using runtime::Tensor;
using runtime::Value;

std::vector<std::vector<int>> OneCorePerReplica(int n) {
  std::vector<std::vector<int>> a;
  for (int i = 0; i < n; ++i) a.push_back({i});
  return a;
}

// Runs `program` with one argument per replica on `backend`; returns the
// outputs as host tensors.
std::vector<std::vector<Tensor>> RunOn(runtime::Backend& backend,
                                     const Program& program,
                                     const std::vector<Tensor>& args) {
  const int n = program.num_replicas();
  auto exe = backend.Compile(program, {n, 1});
  EXPECT_THAT(exe, IsOk());
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<std::vector<Buffer*>> per_replica(n);
  for (int r = 0; r < n; ++r) {
    auto b = backend.TransferToDevice(r, args[r]);
    EXPECT_THAT(b, IsOk());
    per_replica[r].push_back(b->get());
    owned.push_back(std::move(*b));
  }
  auto outs = backend.ExecuteSpmd(**exe, {OneCorePerReplica(n)}, per_replica);
  EXPECT_THAT(outs, IsOk());
  std::vector<std::vector<Tensor>> result(n);
  for (int r = 0; r < n; ++r) {
    for (auto& b : (*outs)[r]) {
      result[r].push_back(*backend.TransferFromDevice(*b));
    }
  }
  return result;
}

TEST(SimBackendTest, ValuesAreBitIdenticalToHostBackend) {
  auto sim = SimBackend::Create("v3-8");
  ASSERT_THAT(sim, IsOk());
  runtime::HostBackend host((*sim)->layout().devices);
  ProgramBuilder b("step", 8);
  Value x = *b.Parameter(DType::kF32, Shape({4, 3}));
  Value w = *b.Constant(Tensor::FromVector<float>(
      Shape({3, 2}), {0.1f, -0.2f, 0.3f, 0.7f, -1.1f, 1.3f}));
  Value y = *b.Tanh(*b.MatMul(x, w));
  Value s = *b.AllReduce(y, runtime::CollectiveReduce::kSum);
  Program p = *std::move(b).Build({s, y});
  std::vector<Tensor> args;
  for (int r = 0; r < 8; ++r) {
    std::vector<float> v(12);
    for (int i = 0; i < 12; ++i) v[i] = 0.37f * r - 0.11f * i;
    args.push_back(Tensor::FromVector<float>(Shape({4, 3}), v));
  }
  auto a = RunOn(**sim, p, args);
  auto h = RunOn(host, p, args);
  for (int r = 0; r < 8; ++r) {
    for (int o = 0; o < 2; ++o) {
      ASSERT_EQ(a[r][o].spec(), h[r][o].spec());
      const auto av = a[r][o].values<float>();
      const auto hv = h[r][o].values<float>();
      ASSERT_EQ(av.size(), hv.size());
      EXPECT_EQ(std::memcmp(av.data(), hv.data(), av.size() * sizeof(float)),
                0)
          << "replica " << r << " output " << o;
    }
  }
  // The step took simulated time and the profile says where it went.
  auto profile = (*sim)->CollectProfile();
  ASSERT_THAT(profile, IsOk());
  EXPECT_EQ(profile->backend(), "sim");
  ASSERT_EQ(profile->steps_size(), 1);
  EXPECT_GT(profile->steps(0).end_ps(), profile->steps(0).start_ps());
  EXPECT_EQ(profile->end_ps(), profile->steps(0).end_ps());
  bool saw_host = false, saw_kernel = false;
  for (const auto& span : profile->spans()) {
    saw_host |= span.category() == "host";
    // The dot with its fused tanh epilogue (sim/compile).
    saw_kernel |= span.name().rfind("fusion.", 0) == 0 && span.category() == "mxu";
  }
  EXPECT_TRUE(saw_host);
  EXPECT_TRUE(saw_kernel);
  EXPECT_GT(profile->links_size(), 0);
}

// One bf16 matmul on one v4 device takes exactly the tile formula plus the
// issue overhead, after the host-loop overhead and the PCIe infeed of its
// operands.
TEST(SimBackendTest, MatmulStepIsTheTileFormula) {
  SimBackendOptions options;
  auto sim = SimBackend::Create("v4-8", options);
  ASSERT_THAT(sim, IsOk());
  SimBackend& s = **sim;
  ProgramBuilder b("mm", 4);
  Value x = *b.Parameter(DType::kBF16, Shape({2048, 4096}));
  Value w = *b.Parameter(DType::kBF16, Shape({4096, 1024}));
  Program p = *std::move(b).Build({*b.MatMul(x, w)});
  auto exe = s.Compile(p, {4, 1});
  ASSERT_THAT(exe, IsOk());
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<std::vector<Buffer*>> args(4);
  for (int r = 0; r < 4; ++r) {
    for (const Shape& shape : {Shape({2048, 4096}), Shape({4096, 1024})}) {
      owned.push_back(*s.TransferToDevice(r, Tensor::Abstract(DType::kBF16, shape)));
      args[r].push_back(owned.back().get());
    }
  }
  ASSERT_THAT(s.ExecuteSpmd(**exe, {OneCorePerReplica(4)}, args), IsOk());
  auto profile = s.CollectProfile();
  ASSERT_THAT(profile, IsOk());
  // PCIe: (2048*4096 + 4096*1024) * 2 bytes = 25165824 bytes at 16 GB/s per
  // chip (sheet A.4) = 1572864000 ps; the host loop (100 us) runs meanwhile.
  const int64_t infeed = 1572864000;
  // MXU: T = ceil(4096/128) * ceil(1024/128) = 256 tiles over 8 MXUs = 32
  // rounds of 2048 + 254 cycles at 1.05 GHz.
  const int64_t cycles = 32 * (2048 + 254);
  const int64_t mxu_ps = (cycles * 1000000 + 1049) / 1050;  // ceil
  const int64_t kernel = mxu_ps + 1000000;                   // + 1 us issue
  EXPECT_EQ(profile->steps(0).end_ps(), infeed + kernel);
  EXPECT_EQ(profile->steps(0).infeed_wait_ps(), infeed - 100000000);
  EXPECT_EQ(profile->devices(0).mxu_busy_ps(), mxu_ps);
}

// An all-reduce issued before independent compute is hidden by it: the step
// takes less than compute + collective, and the profile names the exposed
// part.
TEST(SimBackendTest, CollectiveOverlapsIndependentCompute) {
  auto sim = SimBackend::Create("v4-32");
  ASSERT_THAT(sim, IsOk());
  SimBackend& s = **sim;
  const int n = 16;
  // Program A: all-reduce of 32 MiB of gradients, then a big matmul that does
  // not depend on it; the sum is used last.
  ProgramBuilder b("overlap", n);
  Value g = *b.Parameter(DType::kF32, Shape({8 << 20}));
  Value x = *b.Parameter(DType::kBF16, Shape({8192, 8192}));
  Value sum = *b.AllReduce(g, runtime::CollectiveReduce::kSum);
  Value y = *b.MatMul(x, x);
  Value used =
      *b.Add(*b.Cast(*b.ReduceSum(y, {0, 1}), DType::kF32), *b.ReduceSum(sum, {0}));
  Program p = *std::move(b).Build({used});
  auto exe = s.Compile(p, {n, 1});
  ASSERT_THAT(exe, IsOk());
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<std::vector<Buffer*>> args(n);
  for (int r = 0; r < n; ++r) {
    owned.push_back(
        *s.TransferToDevice(r, Tensor::Abstract(DType::kF32, Shape({8 << 20}))));
    args[r].push_back(owned.back().get());
    owned.push_back(*s.TransferToDevice(
        r, Tensor::Abstract(DType::kBF16, Shape({8192, 8192}))));
    args[r].push_back(owned.back().get());
  }
  ASSERT_THAT(s.ExecuteSpmd(**exe, {OneCorePerReplica(n)}, args), IsOk());
  auto profile = s.CollectProfile();
  ASSERT_THAT(profile, IsOk());
  const auto& step = profile->steps(0);
  int64_t compute = 0, collective = step.hidden_collective_ps() +
                                   step.exposed_collective_ps();
  for (const auto& span : profile->spans()) {
    if (span.device_id() == 0 && (span.category() == "mxu" ||
                                  span.category() == "vector" ||
                                  span.category() == "memory")) {
      compute += span.end_ps() - span.start_ps();
    }
  }
  const int64_t device_time = step.end_ps() - step.start_ps() -
                              step.host_overhead_ps() - step.infeed_wait_ps();
  EXPECT_GT(collective, 0);
  EXPECT_GT(step.hidden_collective_ps(), 0);
  EXPECT_LT(device_time, compute + collective);
  EXPECT_GE(device_time, compute);
}

// HBM is shared with the collective's DMA, first reserved first served
// (sim/chip/chip.h): the HBM-bound kernel issued beside a big all-reduce is
// timed by the walk before the network runs, so it gets the full rate, and
// the all-reduce's chunks (read and written through the same HBM) wait for
// what it leaves: the collective takes longer than the same all-reduce
// without the kernel (the delays of the members' chunks add up along the
// algorithm's steps).
TEST(SimBackendTest, CollectiveDmaSharesHbmWithOverlappedKernels) {
  auto sim = SimBackend::Create("v4-32");
  ASSERT_THAT(sim, IsOk());
  SimBackend& s = **sim;
  const int n = 16;
  const int64_t grad_elements = 64 << 20;  // 256 MiB of gradients
  // Device 0's memory-kernel time and the step's collective time, with or
  // without the kernel.
  auto run = [&](bool with_kernel) -> std::pair<int64_t, int64_t> {
    ProgramBuilder b(absl::StrCat("share", with_kernel), n);
    Value g = *b.Parameter(DType::kF32, Shape({grad_elements}));
    Value x = *b.Parameter(DType::kF32, Shape({16 << 20}));
    Value sum = *b.AllReduce(g, runtime::CollectiveReduce::kSum);
    std::vector<Value> outs = {sum};
    if (with_kernel) outs.push_back(*b.Exp(x));  // 64 MiB in, 64 MiB out
    Program p = *std::move(b).Build(outs);
    auto exe = s.Compile(p, {n, 1});
    EXPECT_THAT(exe, IsOk());
    std::vector<std::unique_ptr<Buffer>> owned;
    std::vector<std::vector<Buffer*>> args(n);
    for (int r = 0; r < n; ++r) {
      owned.push_back(*s.TransferToDevice(
          r, Tensor::Abstract(DType::kF32, Shape({grad_elements}))));
      args[r].push_back(owned.back().get());
      owned.push_back(*s.TransferToDevice(
          r, Tensor::Abstract(DType::kF32, Shape({16 << 20}))));
      args[r].push_back(owned.back().get());
    }
    s.ResetProfile();
    EXPECT_THAT(s.ExecuteSpmd(**exe, {OneCorePerReplica(n)}, args), IsOk());
    auto profile = s.CollectProfile();
    EXPECT_THAT(profile, IsOk());
    int64_t kernel = 0;
    for (const auto& span : profile->spans()) {
      if (span.device_id() == 0 && span.category() == "memory") {
        kernel += span.end_ps() - span.start_ps();
      }
    }
    const auto& step = profile->steps(0);
    return {kernel, step.hidden_collective_ps() + step.exposed_collective_ps()};
  };
  const auto [no_kernel, alone] = run(false);
  const auto [kernel, shared] = run(true);
  EXPECT_EQ(no_kernel, 0);
  // The HBM less the infeed's share (the chip's PCIe rate, sheet A.8: 16
  // GB/s on v4).
  const double hbm = s.rates().hbm_bytes_per_second - 16e9;
  const int64_t issue = s.rates().issue_overhead.count();
  // The kernels' full rate: 128 MiB, plus the issue overhead.
  EXPECT_EQ(kernel - issue, TimeAtRate(2.0 * (64 << 20), hbm).count());
  EXPECT_GT(shared, alone);
  EXPECT_EQ(alone, 6283696197);
  EXPECT_EQ(shared, 6467671569);
}

// The infeed's DMA writes each batch into HBM while kernels run: each
// device's HBM keeps the PCIe rate for it (so it never waits, and the
// timeline does not depend on when a call is timed), and the kernels and
// collectives share the rest.
TEST(SimBackendTest, InfeedDmaSharesHbmWithOverlappedKernels) {
  auto sim = SimBackend::Create("v4-8");  // one host, 4 chips, PCIe per chip
  ASSERT_THAT(sim, IsOk());
  SimBackend& s = **sim;
  const int n = 4;
  // A memory-bound kernel that reads no argument (so it does not wait for
  // the batch), then one that reads the batch of `elements` floats.
  std::vector<std::unique_ptr<runtime::Executable>> exes;
  std::vector<std::unique_ptr<Buffer>> owned;
  auto call = [&](int64_t elements) {
    ProgramBuilder b(absl::StrCat("infeed_share", elements), n);
    Value x = *b.Parameter(DType::kF32, Shape({elements}));
    Value ones = *b.Broadcast(*b.Constant(Tensor::Scalar<float>(1.f)),
                              {4 << 20});
    Value y = *b.Add(ones, ones);  // writes 16 MiB: HBM-bound
    Value z = *b.Add(x, x);
    Program p = *std::move(b).Build({y, z});
    auto exe = s.Compile(p, {n, 1});
    ASSERT_THAT(exe, IsOk());
    exes.push_back(std::move(*exe));
    std::vector<std::vector<Buffer*>> args(n);
    for (int r = 0; r < n; ++r) {
      owned.push_back(*s.TransferToDevice(
          r, Tensor::Abstract(DType::kF32, Shape({elements}))));
      args[r].push_back(owned.back().get());
    }
    EXPECT_THAT(s.ExecuteSpmd(*exes.back(), {OneCorePerReplica(n)}, args),
                IsOk());
  };
  // Batch 1 is 1 GiB per chip: 67 ms on PCIe, from time 0 (zero host cost,
  // prefetch depth 2), so it overlaps the kernels of calls 0 and 1. Batches
  // 0 and 2 are 64 bytes.
  call(16);
  call(1 << 28);
  call(16);
  auto profile = s.CollectProfile();
  ASSERT_THAT(profile, IsOk());
  std::vector<int64_t> exp_ps;
  std::vector<int64_t> infeed_end;  // device 0's waits for the big batch
  std::vector<std::string> big_copies;
  int64_t dma_start = -1, dma_end = -1;
  for (const auto& span : profile->spans()) {
    if (span.device_id() == 0 && span.category() == "memory" &&
        absl::StrContains(span.name(), "fusion")) {
      exp_ps.push_back(span.end_ps() - span.start_ps());
    }
    if (span.device_id() == 0 && span.category() == "infeed" &&
        span.end_ps() - span.start_ps() > 1000000) {
      infeed_end.push_back(span.end_ps());
    }
    if (span.category() == "pcie" && span.end_ps() - span.start_ps() > 1000000) {
      big_copies.push_back(absl::StrCat(span.name(), " on host ", span.host()));
      if (span.name() == "infeed to device 0") {
        dma_start = span.start_ps();
        dma_end = span.end_ps();
      }
    }
  }
  // One copy per chip, each on its own PCIe link, from the one host.
  EXPECT_THAT(big_copies, ::testing::ElementsAre("infeed to device 0 on host 0",
                                                 "infeed to device 1 on host 0",
                                                 "infeed to device 2 on host 0",
                                                 "infeed to device 3 on host 0"));
  ASSERT_EQ(exp_ps.size(), 3u);
  ASSERT_GE(dma_start, 0);
  const double hbm = s.rates().hbm_bytes_per_second;
  const double pcie = (int64_t{1} << 30) / ((dma_end - dma_start) * 1e-12);
  EXPECT_NEAR(pcie, 16e9, 1e3);  // sheet A.8: 16 GB/s per v4 chip
  const int64_t issue = s.rates().issue_overhead.count();
  // The infeed keeps the PCIe rate of each device's HBM: every kernel gets
  // the rest (whether its call overlaps a copy or not), and a batch is
  // usable when its copy ends.
  const double rest = hbm - pcie;
  for (int c : {0, 1, 2}) {
    EXPECT_NEAR(exp_ps[c] - issue, (16 << 20) / rest * 1e12, 10)  // + 4 bytes
        << "call " << c;
  }
  ASSERT_EQ(infeed_end.size(), 1u);
  EXPECT_EQ(infeed_end[0], dma_end);
}

// A timing error surfaces at the next Execute or CollectProfile (timing is
// settled lazily), naming the call it came from, and stays.
TEST(SimBackendTest, ATimingErrorNamesItsCallAndStays) {
  auto sim = SimBackend::Create("v4-8");
  ASSERT_THAT(sim, IsOk());
  SimBackend& s = **sim;
  const int n = 4;
  ProgramBuilder b("too_dear", n);
  Value x = *b.Parameter(DType::kF32, Shape({4}));
  Program p = *std::move(b).Build({*b.Add(x, x)});
  auto exe = s.Compile(p, {n, 1});
  ASSERT_THAT(exe, IsOk());
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<std::vector<Buffer*>> args(n);
  runtime::TransferOptions dear;
  dear.host_cost = common::Picoseconds(std::numeric_limits<int64_t>::max());
  for (int r = 0; r < n; ++r) {
    owned.push_back(
        *s.TransferToDevice(r, Tensor::Abstract(DType::kF32, Shape({4})), dear));
    args[r].push_back(owned.back().get());
  }
  // The values are computed; the timing waits for later batches.
  EXPECT_THAT(s.ExecuteSpmd(**exe, {OneCorePerReplica(n)}, args), IsOk());
  const auto is_the_error = StatusIs(
      absl::StatusCode::kOutOfRange,
      AllOf(HasSubstr("timing call 1 (program too_dear) on the simulated "
                      "pod: batch 0 of device 0 would end past the simulated "
                      "clock's range")));
  EXPECT_THAT(s.CollectProfile().status(), is_the_error);
  for (int r = 0; r < n; ++r) {
    owned.push_back(
        *s.TransferToDevice(r, Tensor::Abstract(DType::kF32, Shape({4}))));
    args[r][0] = owned.back().get();
  }
  EXPECT_THAT(s.ExecuteSpmd(**exe, {OneCorePerReplica(n)}, args).status(),
              is_the_error);
}

// PodSpec options.sim_threads reaches the network: a 256-chip all-reduce runs
// its time steps on 2 threads (byte-identical results across thread counts
// are RunBinary.SimThreadsChangeNoResult's).
int64_t ParallelBatchesOfAnAllReduce(int threads) {
  proto::PodSpec spec;
  spec.set_slice("v4-512");
  spec.mutable_options()->set_sim_threads(threads);
  auto sim = SimBackend::Create(spec);
  EXPECT_THAT(sim, IsOk());
  SimBackend& s = **sim;
  const int n = s.layout().num_devices();
  ProgramBuilder b("all_reduce", n);
  Value x = *b.Parameter(DType::kF32, Shape({1 << 16}));
  Value sum = *b.AllReduce(x, runtime::CollectiveReduce::kSum);
  Program p = *std::move(b).Build({sum});
  auto exe = s.Compile(p, {n, 1});
  EXPECT_THAT(exe, IsOk());
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<std::vector<Buffer*>> args(n);
  for (int r = 0; r < n; ++r) {
    owned.push_back(
        *s.TransferToDevice(r, Tensor::Abstract(DType::kF32, Shape({1 << 16}))));
    args[r].push_back(owned.back().get());
  }
  EXPECT_THAT(s.ExecuteSpmd(**exe, {OneCorePerReplica(n)}, args), IsOk());
  const SimBackend::SimStats st = s.Stats();
  EXPECT_EQ(st.network_threads, threads);
  return st.network_parallel_batches;
}
TEST(SimBackendTest, SimThreadsRunTheNetworkOnThatManyThreads) {
  EXPECT_GT(ParallelBatchesOfAnAllReduce(2), 0);
}
TEST(SimBackendTest, OneSimThreadRunsNoBatchInParallel) {
  EXPECT_EQ(ParallelBatchesOfAnAllReduce(1), 0);
}

TEST(SimBackendTest, ProgramOverHbmCapacityIsResourceExhausted) {
  auto sim = SimBackend::Create("v5litepod-4");  // 16 GiB per chip
  ASSERT_THAT(sim, IsOk());
  ProgramBuilder b("huge", 4);
  // 6 GiB of argument, 6 GiB of infeed buffer for the next step and 6 GiB of
  // result do not fit in 16 GiB (the elementwise chain fuses: no other
  // intermediate is live).
  Value x = *b.Parameter(DType::kF32, Shape({3 << 19, 1024}));
  Value y = *b.Exp(x);
  Value z = *b.Add(*b.Exp(y), *b.Tanh(y));
  Value w = *b.Add(*b.Mul(z, y), x);
  Program p = *std::move(b).Build({w});
  auto exe = (*sim)->Compile(p, {4, 1});
  ASSERT_THAT(exe, IsOk());
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<std::vector<Buffer*>> args(4);
  for (int r = 0; r < 4; ++r) {
    owned.push_back(*(*sim)->TransferToDevice(
        r, Tensor::Abstract(DType::kF32, Shape({3 << 19, 1024}))));
    args[r].push_back(owned.back().get());
  }
  EXPECT_THAT(
      (*sim)->ExecuteSpmd(**exe, {OneCorePerReplica(4)}, args),
      StatusIs(absl::StatusCode::kResourceExhausted,
               AllOf(HasSubstr("program huge does not fit in HBM of device 0 "
                               "(task 0, TPU:0, coords (0,0,0))"),
                     HasSubstr("capacity 16.0 GiB"),
                     HasSubstr("largest live values: "),
                     HasSubstr("f32[1572864,1024], 6.00 GiB"))));
}

TEST(SimBackendTest, AssignmentNamingADeviceThePodLacksIsInvalidArgument) {
  auto sim = SimBackend::Create("v4-8");  // devices 0..3
  ASSERT_THAT(sim, IsOk());
  ProgramBuilder b("p", 1);
  Value x = *b.Parameter(DType::kF32, Shape({2}));
  Program p = *std::move(b).Build({*b.Exp(x)});
  auto exe = (*sim)->Compile(p, {1, 1});
  ASSERT_THAT(exe, IsOk());
  auto arg = (*sim)->TransferToDevice(0, Tensor::Abstract(DType::kF32, Shape({2})));
  ASSERT_THAT(arg, IsOk());
  std::vector<std::vector<Buffer*>> args = {{arg->get()}};
  EXPECT_THAT((*sim)->ExecuteSpmd(**exe, {{{9}}}, args),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("9")));
  EXPECT_THAT((*sim)->TransferToDevice(4, Tensor::Abstract(DType::kF32, Shape({2}))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4")));
}

TEST(SimBackendTest, BadSliceAndSecondBackendAreClearErrors) {
  EXPECT_THAT(SimBackend::Create("v4-12"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("v4-12")));
  auto first = SimBackend::Create("v4-8");
  ASSERT_THAT(first, IsOk());
  EXPECT_THAT(SimBackend::Create("v4-8"),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::_));
}

// With zero-cost input, 100 calls with K = 1 take exactly 99 H longer than one
// call with K = 100 (H = the host-loop overhead, paid once per device call).
TEST(SimBackendTest, StepsPerRunPaysTheHostLoopOncePerCall) {
  using namespace ::tpusim::strategy;  // NOLINT: test brevity
  auto sim = SimBackend::Create("v5litepod-2");
  ASSERT_THAT(sim, IsOk());
  SimBackend& s = **sim;
  auto resolver = TPUClusterResolver::Create(s, "v5litepod-2");
  ASSERT_THAT(resolver, IsOk());
  auto make = [&](int steps_per_run) {
    TPUStrategyOptions options;
    options.steps_per_run = steps_per_run;
    auto st = TPUStrategy::Create(s, *resolver, options);
    EXPECT_THAT(st, IsOk());
    return std::move(*st);
  };
  auto body_for = [](MirroredVariable* total) -> MultiStepFn {
    return [total](ReplicaContext& ctx, MultiStepContext& ms,
                   const TracedNest& in) -> absl::Status {
      TPUSIM_ASSIGN_OR_RETURN(TracedValue x, ctx.Mul(in.leaf(), in.leaf()));
      TPUSIM_ASSIGN_OR_RETURN(TracedValue sum, ctx.AllReduce(ReduceOp::kSum, x));
      TPUSIM_RETURN_IF_ERROR(ctx.AssignAddVariable(*total, sum).status());
      return ms.SetLastStepOutput("sum", sum, ReduceOp::kSum);
    };
  };
  auto input = [](int steps) {
    std::vector<PerReplica<ReplicaElement>> v;
    for (int i = 0; i < steps; ++i) {
      v.push_back(PerReplica<ReplicaElement>::FromFn(2, [&](int r) {
        return ReplicaElement(Tensor::Scalar<float>(1.f * i + r));
      }));
    }
    return VectorInputIterator(std::move(v));
  };
  std::unique_ptr<TPUStrategy> one = make(1);
  std::unique_ptr<TPUStrategy> hundred = make(100);
  MirroredVariable *a = nullptr, *b = nullptr;
  {
    auto scope = one->Scope();
    a = *CreateVariable(Tensor::Scalar<float>(0), {"a"});
  }
  {
    auto scope = hundred->Scope();
    b = *CreateVariable(Tensor::Scalar<float>(0), {"b"});
  }
  const MultiStepFn body_a = body_for(a), body_b = body_for(b);
  VectorInputIterator it_a = input(100), it_b = input(100);
  const common::Picoseconds t0 = s.Now();
  for (int i = 0; i < 100; ++i) {
    ASSERT_THAT(one->ExperimentalRunStepsOnIterator(body_a, it_a, 1), IsOk());
  }
  const common::Picoseconds t1 = s.Now();
  auto r = hundred->ExperimentalRunStepsOnIterator(body_b, it_b, 100);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->steps_run, 100);
  const common::Picoseconds t2 = s.Now();
  // Same values both ways.
  EXPECT_EQ(a->Read()->scalar<float>(), b->Read()->scalar<float>());
  const int64_t h = SimBackendOptions().host_loop_overhead.count();
  EXPECT_EQ((t1 - t0).count() - (t2 - t1).count(), 99 * h);
  auto profile = s.CollectProfile();
  ASSERT_THAT(profile, IsOk());
  ASSERT_EQ(profile->steps_size(), 101);
  EXPECT_EQ(profile->steps(100).steps(), 100);
}

// Section "Host" of issue 9: raising the per-element host cost until the
// input pipeline is slower than the step makes the step time equal the host
// time per step, and the profile shows the input wait.
TEST(SimBackendTest, AHostBoundPipelineSetsTheStepTime) {
  using namespace ::tpusim::strategy;  // NOLINT: test brevity
  auto sim = SimBackend::Create("v4-8");  // one host, 4 chips, 4 replicas
  ASSERT_THAT(sim, IsOk());
  SimBackend& s = **sim;
  auto resolver = TPUClusterResolver::Create(s, "v4-8");
  ASSERT_THAT(resolver, IsOk());
  auto st = TPUStrategy::Create(s, *resolver);
  ASSERT_THAT(st, IsOk());
  TPUStrategy& strategy = **st;
  const StepFunction step([](ReplicaContext& ctx,
                             const TracedNest& in) -> absl::StatusOr<TracedNest> {
    const TracedValue& v = in.children()[0].leaf();
    TPUSIM_ASSIGN_OR_RETURN(TracedValue x, ctx.Mul(v, v));
    TPUSIM_ASSIGN_OR_RETURN(TracedValue sum, ctx.AllReduce(ReduceOp::kSum, x));
    return TracedNest(sum);
  });
  // 32 range elements per global step (8 per replica), each costing `cost`
  // of host CPU on the host's one pipeline thread: 32 * cost per step.
  struct Phase {
    std::vector<int64_t> step_ends;
    std::vector<int64_t> input_waits;
  };
  auto run = [&](common::Picoseconds cost, int steps) {
    Phase phase;
    data::Dataset ds =
        data::Dataset::Range(0, 32 * steps).WithHostCost(cost).Batch(32);
    auto dist = strategy.ExperimentalDistributeDataset(ds);
    EXPECT_THAT(dist, IsOk());
    auto it = dist->MakeIterator();
    EXPECT_THAT(it, IsOk());
    s.ResetProfile();
    for (int i = 0; i < steps; ++i) {
      auto next = it->GetNext();
      EXPECT_THAT(next, IsOk());
      // Each replica's batch carries the work of its 8 elements.
      EXPECT_EQ(next->host_costs(),
                std::vector<common::Picoseconds>(4, cost * 8));
      auto args = RegroupElement(*next);
      EXPECT_THAT(args, IsOk());
      EXPECT_THAT(strategy.Run(step, ValueNest::Tuple({*args})), IsOk());
    }
    auto profile = s.CollectProfile();
    EXPECT_THAT(profile, IsOk());
    for (const auto& p : profile->steps()) {
      phase.step_ends.push_back(p.end_ps());
      phase.input_waits.push_back(p.input_wait_ps());
    }
    return phase;
  };
  // Cheap input: the step (host-loop overhead + kernels) sets the pace and
  // no step waits for its input.
  const common::Picoseconds cheap = common::Picoseconds::FromNanoseconds(10);
  const Phase fast = run(cheap, 6);
  ASSERT_EQ(fast.step_ends.size(), 6u);
  const int64_t step_time = fast.step_ends[5] - fast.step_ends[4];
  EXPECT_GT(step_time, 32 * cheap.count());
  for (int64_t w : fast.input_waits) EXPECT_EQ(w, 0);
  // 10 us per element: 320 us of host work per step, more than the step.
  const common::Picoseconds dear = common::Picoseconds::FromMicroseconds(10);
  ASSERT_GT(32 * dear.count(), step_time);
  const Phase slow = run(dear, 6);
  ASSERT_EQ(slow.step_ends.size(), 6u);
  for (int i = 2; i < 6; ++i) {
    EXPECT_EQ(slow.step_ends[i] - slow.step_ends[i - 1], 32 * dear.count())
        << "step " << i;
    EXPECT_GT(slow.input_waits[i], 0) << "step " << i;
  }
  auto profile = s.CollectProfile();
  ASSERT_THAT(profile, IsOk());
  int input_spans = 0, pipeline_spans = 0;
  for (const auto& span : profile->spans()) {
    input_spans += span.category() == "input";
    if (span.category() == "pipeline") {
      ++pipeline_spans;
      EXPECT_EQ(span.device_id(), -1);
      EXPECT_EQ(span.end_ps() - span.start_ps(), 8 * dear.count());
    }
  }
  EXPECT_GT(input_spans, 0);
  EXPECT_EQ(pipeline_spans, 6 * 4);  // a batch per replica per step
}

// More host threads share each batch's work; the pace follows.
TEST(SimBackendTest, InputThreadsShareTheHostWork) {
  using namespace ::tpusim::strategy;  // NOLINT: test brevity
  proto::PodSpec spec;
  spec.set_slice("v4-8");
  spec.mutable_options()->set_input_threads(4);
  auto sim = SimBackend::Create(spec);
  ASSERT_THAT(sim, IsOk());
  SimBackend& s = **sim;
  auto resolver = TPUClusterResolver::Create(s, "v4-8");
  auto st = TPUStrategy::Create(s, *resolver);
  ASSERT_THAT(st, IsOk());
  const StepFunction step([](ReplicaContext& ctx,
                             const TracedNest& in) -> absl::StatusOr<TracedNest> {
    TPUSIM_ASSIGN_OR_RETURN(
        TracedValue sum,
        ctx.AllReduce(ReduceOp::kSum, in.children()[0].leaf()));
    return TracedNest(sum);
  });
  const common::Picoseconds cost = common::Picoseconds::FromMicroseconds(100);
  data::Dataset ds = data::Dataset::Range(0, 32 * 6).WithHostCost(cost).Batch(32);
  auto it = (*st)->ExperimentalDistributeDataset(ds)->MakeIterator();
  ASSERT_THAT(it, IsOk());
  for (int i = 0; i < 6; ++i) {
    auto args = RegroupElement(*it->GetNext());
    ASSERT_THAT(args, IsOk());
    ASSERT_THAT((*st)->Run(step, ValueNest::Tuple({*args})), IsOk());
  }
  auto profile = s.CollectProfile();
  ASSERT_THAT(profile, IsOk());
  ASSERT_EQ(profile->steps_size(), 6);
  // 32 elements x 100 us over 4 threads.
  EXPECT_EQ(profile->steps(5).end_ps() - profile->steps(4).end_ps(),
            32 * cost.count() / 4);
}

// Bad input: a negative host cost, on the transfer and on a dataset stage.
TEST(SimBackendTest, NegativeHostCostIsInvalidArgument) {
  auto sim = SimBackend::Create("v4-8");
  ASSERT_THAT(sim, IsOk());
  runtime::TransferOptions options;
  options.host_cost = common::Picoseconds(-5);
  EXPECT_THAT(
      (*sim)->TransferToDevice(0, Tensor::Scalar<float>(1), options),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "TransferToDevice: host_cost=-5ps: the host CPU time of a value "
               "must be >= 0"));
  EXPECT_THAT(data::Dataset::Range(0, 4)
                  .WithHostCost(common::Picoseconds(-1))
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "with_host_cost: per_element=-1ps on RangeDataset: a "
                       "host cost must be >= 0"));
}

proto::PodSpec Spec(const std::string& text) {
  proto::PodSpec spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &spec));
  return spec;
}

// A PodSpec: a generation and shape, custom numbers replacing the preset's,
// and model options.
TEST(SimBackendTest, PodSpecBuildsTheSliceWithCustomNumbers) {
  auto sim = SimBackend::Create(Spec(R"pb(
    generation: "v4" shape: [2, 2, 1]
    custom { clock_ghz: 0.525 hbm_capacity_gib: 8 }
    options { host_loop_overhead_us: 50 record_spans: false }
  )pb"));
  ASSERT_THAT(sim, IsOk());
  EXPECT_EQ((*sim)->layout().num_chips, 4);
  EXPECT_DOUBLE_EQ((*sim)->rates().clock_hz, 0.525e9);
  EXPECT_EQ((*sim)->rates().hbm_capacity.count(), int64_t{8} << 30);
  // Half the clock: half the preset's peak.
  EXPECT_DOUBLE_EQ((*sim)->rates().peak_flops_per_second,
                   8 * 2.0 * 128 * 128 * 0.525e9);
}

TEST(SimBackendTest, BadPodSpecsNameTheFieldAndValue) {
  struct Case {
    std::string spec;
    std::string message;
  };
  const Case cases[] = {
      {"", "PodSpec: set either `slice` or `generation` and `shape`"},
      {R"pb(slice: "v4-8" generation: "v4" shape: [2, 2, 1])pb",
       "PodSpec: set either `slice` or `generation` and `shape`"},
      {R"pb(slice: "v4-12")pb", "v4-12"},
      {R"pb(generation: "v4" shape: [3, 3, 3])pb",
       "PodSpec: shape=3x3x3: not a v4 slice shape (slices: v4-8, v4-16"},
      {R"pb(generation: "v9" shape: [2, 2])pb",
       "PodSpec: generation=v9: TPU generation \"v9\" is not known"},
      {R"pb(generation: "v5e" shape: [2, 2, 2, 2])pb",
       "PodSpec: shape=2x2x2x2: must have 1 to 3 entries (x, y[, z])"},
      {R"pb(slice: "v4-8" custom { hbm_gbps: -1 })pb",
       "PodSpec: custom.hbm_gbps=-1: must be > 0"},
      {R"pb(slice: "v4-8" custom { mxus_per_core: 0 })pb",
       "PodSpec: custom.mxus_per_core=0: must be > 0"},
      {R"pb(slice: "v4-8" options { host_loop_overhead_us: -3 })pb",
       "PodSpec: options.host_loop_overhead_us=-3: must be >= 0"},
      {R"pb(slice: "v4-8" options { wrap: "sideways" })pb", "sideways"},
      {R"pb(slice: "v4-8" options { input_threads: 0 })pb",
       "PodSpec: options.input_threads=0: must be >= 1"},
      {R"pb(slice: "v4-8" options { prefetch_depth: -2 })pb",
       "PodSpec: options.prefetch_depth=-2: must be >= 1"},
      {R"pb(slice: "v4-8" options { sim_threads: -1 })pb",
       "PodSpec: options.sim_threads=-1: must be 0 (one per hardware thread) "
       "to 1024"},
      {R"pb(slice: "v4-8" options { sim_threads: 1025 })pb",
       "PodSpec: options.sim_threads=1025: must be 0 (one per hardware "
       "thread) to 1024"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(SimBackend::Create(Spec(c.spec)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(c.message)))
        << c.spec;
  }
}

// Runs `calls` device calls of a small abstract step (a matmul, then an
// all-reduce with `all_reduce`) on every device of `sim`; device `slow` (if
// >= 0) gets its batch from a host pipeline that takes 1 ms, so without the
// all-reduce it ends each step last.
void RunAbstractSteps(SimBackend& sim, int calls, int slow,
                      bool all_reduce = true) {
  const int n = static_cast<int>(sim.devices().size());
  ProgramBuilder b("steps", n);
  Value x = *b.Parameter(DType::kBF16, Shape({128, 256}));
  Value w = *b.Constant(Tensor::Abstract(DType::kBF16, Shape({256, 256})));
  Value y = *b.MatMul(x, w);
  if (all_reduce) y = *b.AllReduce(y, runtime::CollectiveReduce::kSum);
  Program p = *std::move(b).Build({y});
  auto exe = sim.Compile(p, {n, 1});
  ASSERT_THAT(exe, IsOk());
  for (int call = 0; call < calls; ++call) {
    std::vector<std::unique_ptr<Buffer>> owned;
    std::vector<std::vector<Buffer*>> args(n);
    for (int r = 0; r < n; ++r) {
      runtime::TransferOptions options;
      if (r == slow) options.host_cost = common::Picoseconds::FromMicroseconds(1000);
      auto buf = sim.TransferToDevice(
          r, Tensor::Abstract(DType::kBF16, Shape({128, 256})), options);
      ASSERT_THAT(buf, IsOk());
      args[r].push_back(buf->get());
      owned.push_back(std::move(*buf));
    }
    ASSERT_THAT(sim.ExecuteSpmd(**exe, {OneCorePerReplica(n)}, args), IsOk());
  }
}

// On a pod of more than 16 devices the profile keeps spans for device 0, the
// listed devices and each step's critical-path (then slowest and fastest)
// devices only; every device keeps its time per category, which for a
// traced device is exactly what its spans add up to.
TEST(SimBackendTest, OnlyTracedDevicesKeepSpansAndAllKeepCategoryTime) {
  SimBackendOptions options;
  options.trace_devices = {7};
  auto sim = SimBackend::Create("v4-64", options);  // 32 devices
  ASSERT_THAT(sim, IsOk());
  RunAbstractSteps(**sim, 2, /*slow=*/5, /*all_reduce=*/false);
  auto profile = (*sim)->CollectProfile();
  ASSERT_THAT(profile, IsOk());
  // Device 5 waits for its input and ends every step last; kernel times are
  // alike on every device, so the slowest and fastest are device 0.
  EXPECT_THAT(profile->traced_devices(), ::testing::ElementsAre(0, 5, 7));
  EXPECT_EQ(profile->untraced_steps(), 0);
  std::vector<std::map<std::string, int64_t>> from_spans(32);
  for (const auto& span : profile->spans()) {
    if (span.device_id() < 0) continue;
    EXPECT_TRUE(span.device_id() == 0 || span.device_id() == 5 ||
                span.device_id() == 7)
        << span.ShortDebugString();
    from_spans[span.device_id()][span.category()] +=
        span.end_ps() - span.start_ps();
  }
  for (int d : {0, 5, 7}) {
    const auto& kept = profile->devices(d).category_ps();
    const std::map<std::string, int64_t> totals(kept.begin(), kept.end());
    EXPECT_EQ(totals, from_spans[d]) << "device " << d;
  }
  EXPECT_GT(from_spans[5]["input"], 0);
  // An untraced device has no spans, and still its time per category.
  const auto& d9 = profile->devices(9).category_ps();
  EXPECT_EQ(d9.at("host"), 2 * 100'000'000);  // two calls' host loop
  EXPECT_EQ(d9.at("mxu"), profile->devices(9).busy_ps());
  EXPECT_EQ(d9.count("input"), 0);
}

TEST(SimBackendTest, TraceAllDevicesKeepsEverySpan) {
  SimBackendOptions options;
  options.trace_all_devices = true;
  auto sim = SimBackend::Create("v4-64", options);
  ASSERT_THAT(sim, IsOk());
  RunAbstractSteps(**sim, 1, /*slow=*/-1);
  auto profile = (*sim)->CollectProfile();
  ASSERT_THAT(profile, IsOk());
  EXPECT_EQ(profile->traced_devices_size(), 32);
  std::vector<int> host_loops(32, 0);
  for (const auto& span : profile->spans()) {
    if (span.name() == "host loop") ++host_loops[span.device_id()];
  }
  EXPECT_EQ(host_loops, std::vector<int>(32, 1));
}

// Spans are kept for the first max_traced_steps steps; the counters go on.
TEST(SimBackendTest, SpansAreKeptForTheFirstStepsOnly) {
  SimBackendOptions options;
  options.max_traced_steps = 2;
  auto sim = SimBackend::Create("v3-8", options);
  ASSERT_THAT(sim, IsOk());
  RunAbstractSteps(**sim, 5, /*slow=*/-1);
  auto profile = (*sim)->CollectProfile();
  ASSERT_THAT(profile, IsOk());
  EXPECT_EQ(profile->untraced_steps(), 3);
  EXPECT_EQ(profile->steps_size(), 5);
  int host_loops = 0;
  for (const auto& span : profile->spans()) {
    if (span.name() == "host loop") ++host_loops;
  }
  EXPECT_EQ(host_loops, 2 * 8);
  EXPECT_EQ(profile->devices(3).category_ps().at("host"), 5 * 100'000'000);
}

TEST(SimBackendTest, BadTraceDevicesNameTheAllowedRange) {
  SimBackendOptions options;
  options.trace_devices = {3, 40};
  EXPECT_THAT(SimBackend::Create("v4-64", options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("device 40 is not a device of slice v4-64; "
                                 "allowed: 0..31")));
}

TEST(SimBackendTest, RepeatedTraceDevicesAreAnError) {
  SimBackendOptions options;
  options.trace_devices = {3, 3};
  EXPECT_THAT(SimBackend::Create("v4-64", options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("device 3 is listed twice; list each of "
                                 "0..31 at most once")));
}

}  // namespace
}  // namespace tpusim::sim

namespace tpusim::sim {
namespace {
// Late starts are impossible by design. Two logical cores per replica:
// core 0 all-reduces 16 MiB, core 1 a small buffer and then, after a kernel
// on its result, a second small one. Core 0 waits for its big all-reduce
// long before core 1 reaches its second start; the walk runs the network
// only when every (replica, core) is finished or blocked, and only to the
// first end one of them waits for, so core 1's second start is handed to the
// network at its own time (a kernel-major walk ran the network to the big
// all-reduce's end first and had to start it late).
TEST(SimBackendTest, NoCollectiveStartsBehindTheNetwork) {
  auto sim = SimBackend::Create("v3-8");
  ASSERT_THAT(sim, IsOk());
  SimBackend& s = **sim;
  const int n = 4;
  ProgramBuilder b("late", n, 2);
  ASSERT_THAT(b.set_logical_core(0), IsOk());
  Value big = *b.Parameter(DType::kF32, Shape({4 << 20}));
  Value sum0 = *b.AllReduce(big, runtime::CollectiveReduce::kSum);
  Value used0 = *b.ReduceSum(sum0, {0});
  ASSERT_THAT(b.set_logical_core(1), IsOk());
  Value small = *b.Parameter(DType::kF32, Shape({1024}));
  Value first1 = *b.AllReduce(small, runtime::CollectiveReduce::kSum);
  Value sum1 = *b.AllReduce(*b.Neg(first1), runtime::CollectiveReduce::kSum);
  Program p = *std::move(b).Build({used0, sum1});
  auto exe = s.Compile(p, {n, 2});
  ASSERT_THAT(exe, IsOk());
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<std::vector<Buffer*>> args(n);
  std::vector<std::vector<int>> assignment;
  for (int r = 0; r < n; ++r) {
    assignment.push_back({2 * r, 2 * r + 1});
    owned.push_back(*s.TransferToDevice(
        2 * r, Tensor::Abstract(DType::kF32, Shape({4 << 20}))));
    args[r].push_back(owned.back().get());
    owned.push_back(*s.TransferToDevice(
        2 * r + 1, Tensor::Abstract(DType::kF32, Shape({1024}))));
    args[r].push_back(owned.back().get());
  }
  ASSERT_THAT(s.ExecuteSpmd(**exe, {assignment}, args), IsOk());
  auto profile = s.CollectProfile();
  ASSERT_THAT(profile, IsOk());
  // Replica 0's waits: core 1 waits for its second all-reduce from
  // 1139462198 ps, where it started: before core 0's big all-reduce ended
  // (1225696550 ps), which the old walk had run the network to first.
  std::vector<std::string> waits;
  for (const auto& span : profile->spans()) {
    if (span.category() == "collective" && span.device_id() < 2) {
      waits.push_back(absl::StrCat(span.device_id(), " ", span.name(), " ",
                                   span.start_ps(), "..", span.end_ps()));
    }
  }
  EXPECT_THAT(waits, ::testing::UnorderedElementsAre(
                         "1 all_reduce.4.done 1048832000..1138443322",
                         "1 all_reduce.6.done 1139462198..1227724435",
                         "0 all_reduce.1.done 1048576000..1225696550"));
  const SimBackend::SimStats st = s.Stats();
  EXPECT_EQ(st.collectives, 3 * n);
  EXPECT_EQ(st.late_starts, 0);
}
}  // namespace
}  // namespace tpusim::sim

namespace tpusim::sim {
namespace {
// Observing the timeline does not change it. Eight calls on v4-8, each
// reading a batch with host work (every other one 256 MiB, so its PCIe copy
// overlaps the kernels of the calls around it) and running an HBM-bound
// kernel beside an all-reduce; once polled with Now(), Stats() and
// CollectProfile() after every call (each settles every pending call before
// the later batches exist), once only at the end. Both give these steps and
// spans, to the picosecond.
std::string ObservedRun(bool poll_every_call) {
  auto sim = SimBackend::Create("v4-8");
  EXPECT_THAT(sim, IsOk());
  SimBackend& s = **sim;
  const int n = 4;
  std::vector<std::unique_ptr<runtime::Executable>> exes;
  std::vector<std::unique_ptr<Buffer>> owned;
  for (int call = 0; call < 8; ++call) {
    const int64_t elements = call % 2 == 1 ? int64_t{1} << 26 : 16;
    ProgramBuilder b(absl::StrCat("observed", call), n);
    Value x = *b.Parameter(DType::kF32, Shape({elements}));
    Value ones =
        *b.Broadcast(*b.Constant(Tensor::Scalar<float>(1.f)), {4 << 20});
    Value y = *b.Add(ones, ones);  // HBM-bound
    Value sum = *b.AllReduce(*b.Add(x, x), runtime::CollectiveReduce::kSum);
    Program p = *std::move(b).Build({y, sum});
    auto exe = s.Compile(p, {n, 1});
    EXPECT_THAT(exe, IsOk());
    exes.push_back(std::move(*exe));
    std::vector<std::vector<Buffer*>> args(n);
    for (int r = 0; r < n; ++r) {
      runtime::TransferOptions options;
      options.host_cost = common::Picoseconds::FromMicroseconds(300);
      owned.push_back(*s.TransferToDevice(
          r, Tensor::Abstract(DType::kF32, Shape({elements})), options));
      args[r].push_back(owned.back().get());
    }
    EXPECT_THAT(s.ExecuteSpmd(*exes.back(), {OneCorePerReplica(n)}, args),
                IsOk());
    if (poll_every_call) {
      (void)s.Now();
      (void)s.Stats();
      EXPECT_THAT(s.CollectProfile(), IsOk());
    }
  }
  auto profile = s.CollectProfile();
  EXPECT_THAT(profile, IsOk());
  std::string out;
  for (const auto& step : profile->steps()) {
    absl::StrAppend(&out, "step ", step.start_ps(), "..", step.end_ps(), " ");
  }
  // The spans, folded into one number (FNV-1a over their times).
  uint64_t h = 1469598103934665603u;
  for (const auto& span : profile->spans()) {
    for (int64_t v : {static_cast<int64_t>(span.device_id()), span.start_ps(),
                      span.end_ps()}) {
      h = (h ^ static_cast<uint64_t>(v)) * 1099511628211u;
    }
  }
  absl::StrAppend(&out, "spans ", profile->spans_size(), " hash ", h);
  return out;
}

constexpr char kObserved[] =
    "step 0..1205006024 step 1205006024..24111536635 "
    "step 24111536635..24232874327 step 24232874327..41188752635 "
    "step 41188752635..41310090327 step 41310090327..58265968635 "
    "step 58265968635..58387306327 step 58387306327..75343184635 "
    "spans 220 hash 8621406120308341449";
TEST(SimBackendObservationTest, PolledAfterEveryCall) {
  EXPECT_EQ(ObservedRun(true), kObserved);
}
TEST(SimBackendObservationTest, PolledAtTheEnd) {
  EXPECT_EQ(ObservedRun(false), kObserved);
}
}  // namespace
}  // namespace tpusim::sim
