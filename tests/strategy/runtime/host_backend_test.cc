#include "strategy/runtime/host_backend.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "strategy/runtime/profile.pb.h"
#include "strategy/runtime/program.pb.h"

namespace tpusim::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

SpmdAssignment OneCorePerReplica(int n) {
  SpmdAssignment a;
  for (int r = 0; r < n; ++r) a.replica_devices.push_back({r});
  return a;
}

// Compiles `program` and runs it with args[r] placed on the device of each
// parameter's core.
absl::StatusOr<std::vector<std::vector<Tensor>>> RunSpmd(
    HostBackend& backend, const Program& program,
    const SpmdAssignment& assignment,
    const std::vector<std::vector<Tensor>>& args) {
  TPUSIM_ASSIGN_OR_RETURN(
      std::unique_ptr<Executable> exe,
      backend.Compile(
          program, {program.num_replicas(), program.num_cores_per_replica()}));
  std::vector<std::vector<std::unique_ptr<Buffer>>> owned(args.size());
  std::vector<std::vector<Buffer*>> ptrs(args.size());
  for (size_t r = 0; r < args.size(); ++r) {
    for (size_t p = 0; p < args[r].size(); ++p) {
      const int core = program.op(program.parameters()[p]).logical_core;
      TPUSIM_ASSIGN_OR_RETURN(
          std::unique_ptr<Buffer> b,
          backend.TransferToDevice(assignment.replica_devices[r][core],
                                   args[r][p]));
      ptrs[r].push_back(b.get());
      owned[r].push_back(std::move(b));
    }
  }
  TPUSIM_ASSIGN_OR_RETURN(SpmdOutputs outs,
                          backend.ExecuteSpmd(*exe, assignment, ptrs));
  std::vector<std::vector<Tensor>> result(outs.size());
  for (size_t r = 0; r < outs.size(); ++r) {
    for (const auto& b : outs[r]) {
      TPUSIM_ASSIGN_OR_RETURN(Tensor t, backend.TransferFromDevice(*b));
      result[r].push_back(std::move(t));
    }
  }
  return result;
}

std::vector<float> F(const Tensor& t) {
  auto v = t.values<float>();
  return std::vector<float>(v.begin(), v.end());
}

// x = float(replica_id) + 1, shape [].
Value ReplicaPlusOne(ProgramBuilder& b) {
  Value rid = *b.Cast(b.ReplicaId(), DType::kF32);
  return *b.Add(rid, *b.Constant(Tensor::Scalar<float>(1.0f)));
}

TEST(HostBackendTest, DevicesComeFromDescriptions) {
  std::vector<DeviceDescription> d(2);
  d[0] = {0, 0, 0, {0, 0, 0}, "TPU v3 core"};
  d[1] = {1, 1, 0, {1, 0, 0}, "TPU v3 core"};
  HostBackend backend(d);
  EXPECT_EQ(backend.name(), "host");
  ASSERT_EQ(backend.devices().size(), 2u);
  EXPECT_EQ(backend.devices()[1]->task(), 1);
  EXPECT_EQ(backend.devices()[1]->coords(), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(backend.devices()[1]->DebugString(),
            "device 1 (task 1, TPU:0, coords (1,0,0), TPU v3 core)");
}

TEST(HostBackendTest, AllReduceSumAndMeanOverEightReplicas) {
  ProgramBuilder b("ar", 8);
  Value x = ReplicaPlusOne(b);
  Value sum = *b.AllReduce(x, CollectiveReduce::kSum);
  Value mean = *b.AllReduce(x, CollectiveReduce::kMean);
  Program p = *std::move(b).Build({sum, mean});
  HostBackend backend(8);
  auto out = RunSpmd(backend, p, OneCorePerReplica(8),
                     std::vector<std::vector<Tensor>>(8));
  ASSERT_THAT(out, IsOk());
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ((*out)[r][0].scalar<float>(), 36.0f) << r;
    EXPECT_EQ((*out)[r][1].scalar<float>(), 4.5f) << r;
  }
}

// Precision only changes simulated MXU time: the host computes exact f32 at
// every precision, bit for bit the same.
TEST(HostBackendTest, DotAndConvValuesDoNotDependOnPrecision) {
  ProgramBuilder b("prec");
  Value x = *b.Parameter(DType::kF32, Shape({2, 3}));
  Value w = *b.Parameter(DType::kF32, Shape({3, 2}));
  Value img = *b.Parameter(DType::kF32, Shape({1, 3, 3, 1}));
  Value f = *b.Parameter(DType::kF32, Shape({2, 2, 1, 1}));
  std::vector<Value> outs;
  for (Precision pr :
       {Precision::kDefault, Precision::kHigh, Precision::kHighest}) {
    outs.push_back(*b.MatMul(x, w, false, false, pr));
    outs.push_back(*b.Conv2D(img, f, {1, 1}, Padding::kValid, pr));
  }
  Program p = *std::move(b).Build(outs);
  HostBackend backend(1);
  // 1/3 and friends: not representable in bf16, so a bf16 pass would differ.
  const float third = 1.0f / 3.0f;
  auto out = RunSpmd(
      backend, p, OneCorePerReplica(1),
      {{Tensor::FromVector<float>(Shape({2, 3}),
                                  {third, 1.1f, -2.7f, 0.3f, 5.5f, 1e-3f}),
        Tensor::FromVector<float>(Shape({3, 2}),
                                  {1.7f, third, -0.9f, 2.2f, 0.77f, 3.1f}),
        Tensor::FromVector<float>(Shape({1, 3, 3, 1}),
                                  {0.1f, 0.2f, third, 0.4f, 0.5f, 0.6f, 0.7f,
                                   0.8f, 0.9f}),
        Tensor::FromVector<float>(Shape({2, 2, 1, 1}),
                                  {1.3f, -0.7f, third, 2.9f})}});
  ASSERT_THAT(out, IsOk());
  const std::vector<Tensor>& o = (*out)[0];
  // Exact f32: x[0]·w[:,0] = third*1.7 + 1.1*-0.9 + -2.7*0.77 in f32.
  const float dot00 = third * 1.7f + 1.1f * -0.9f + -2.7f * 0.77f;
  EXPECT_EQ(F(o[0])[0], dot00);
  for (int k = 1; k < 3; ++k) {
    EXPECT_EQ(F(o[2 * k]), F(o[0])) << k;
    EXPECT_EQ(F(o[2 * k + 1]), F(o[1])) << k;
  }
}

TEST(HostBackendTest, SpecAllReduceExampleFourReplicas) {
  // Spec (a) all_reduce: N=4, value = replica_id+1 -> SUM 10, MEAN 2.5 on every
  // replica.
  ProgramBuilder b("ar4", 4);
  Value x = ReplicaPlusOne(b);
  Program p = *std::move(b).Build({*b.AllReduce(x, CollectiveReduce::kSum),
                                   *b.AllReduce(x, CollectiveReduce::kMean)});
  HostBackend backend(4);
  auto out = RunSpmd(backend, p, OneCorePerReplica(4),
                     std::vector<std::vector<Tensor>>(4));
  ASSERT_THAT(out, IsOk());
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ((*out)[r][0].scalar<float>(), 10.0f);
    EXPECT_EQ((*out)[r][1].scalar<float>(), 2.5f);
  }
}

TEST(HostBackendTest, AllReduceWithinReplicaGroups) {
  ProgramBuilder b("groups", 8);
  Value x = ReplicaPlusOne(b);
  Value s =
      *b.AllReduce(x, CollectiveReduce::kSum, {{0, 1, 2, 3}, {4, 5, 6, 7}});
  Program p = *std::move(b).Build({s});
  HostBackend backend(8);
  auto out = RunSpmd(backend, p, OneCorePerReplica(8),
                     std::vector<std::vector<Tensor>>(8));
  ASSERT_THAT(out, IsOk());
  for (int r = 0; r < 8; ++r)
    EXPECT_EQ((*out)[r][0].scalar<float>(), r < 4 ? 10.0f : 26.0f);
}

TEST(HostBackendTest, AllGatherConcatenatesInReplicaOrder) {
  ProgramBuilder b("ag", 8);
  Value x = *b.Reshape(ReplicaPlusOne(b), {1});
  Value g = *b.AllGather(x, 0);
  Program p = *std::move(b).Build({g});
  HostBackend backend(8);
  auto out = RunSpmd(backend, p, OneCorePerReplica(8),
                     std::vector<std::vector<Tensor>>(8));
  ASSERT_THAT(out, IsOk());
  for (int r = 0; r < 8; ++r) {
    EXPECT_THAT(F((*out)[r][0]), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  }
}

TEST(HostBackendTest, ReduceScatterGivesEachReplicaItsShard) {
  // Replica r holds x[j] = j + 10 r (j = 0..7). Sum over r: 8 j + 280; replica
  // k gets j = k.
  ProgramBuilder b("rs", 8);
  Value x = *b.Parameter(DType::kF32, Shape({8}));
  Value rs = *b.ReduceScatter(x, CollectiveReduce::kSum, 0);
  Value rm = *b.ReduceScatter(x, CollectiveReduce::kMean, 0);
  Program p = *std::move(b).Build({rs, rm});
  std::vector<std::vector<Tensor>> args(8);
  for (int r = 0; r < 8; ++r) {
    std::vector<float> v(8);
    for (int j = 0; j < 8; ++j) v[j] = static_cast<float>(j + 10 * r);
    args[r] = {Tensor::Vector<float>(v)};
  }
  HostBackend backend(8);
  auto out = RunSpmd(backend, p, OneCorePerReplica(8), args);
  ASSERT_THAT(out, IsOk());
  for (int k = 0; k < 8; ++k) {
    EXPECT_THAT(F((*out)[k][0]), ElementsAre(8.0f * k + 280.0f)) << k;
    EXPECT_THAT(F((*out)[k][1]), ElementsAre(k + 35.0f)) << k;
  }
}

TEST(HostBackendTest, CollectivePermuteShiftsAndZeroFillsNonTargets) {
  ProgramBuilder b("cp", 8);
  Value x = ReplicaPlusOne(b);
  std::vector<std::pair<int64_t, int64_t>> ring;
  for (int r = 0; r < 8; ++r) ring.emplace_back(r, (r + 1) % 8);
  Value shifted = *b.CollectivePermute(x, ring);
  Value partial = *b.CollectivePermute(x, {{0, 5}, {5, 0}});
  Program p = *std::move(b).Build({shifted, partial});
  HostBackend backend(8);
  auto out = RunSpmd(backend, p, OneCorePerReplica(8),
                     std::vector<std::vector<Tensor>>(8));
  ASSERT_THAT(out, IsOk());
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ((*out)[r][0].scalar<float>(), static_cast<float>((r + 7) % 8 + 1))
        << r;
    const float want = r == 5 ? 1.0f : (r == 0 ? 6.0f : 0.0f);
    EXPECT_EQ((*out)[r][1].scalar<float>(), want) << r;
  }
}

// Values whose f32 sum depends on the order: replica order gives exactly 0.
Program OrderSensitiveProgram() {
  ProgramBuilder b("order", 8);
  Value x = *b.Parameter(DType::kF32, Shape({64}));
  Value y = *b.Mul(x, x);
  Value s = *b.AllReduce(*b.Sub(y, x), CollectiveReduce::kSum);
  Value m = *b.AllReduce(x, CollectiveReduce::kMean);
  return *std::move(b).Build({s, m});
}

std::vector<std::vector<Tensor>> OrderSensitiveArgs() {
  std::vector<std::vector<Tensor>> args(8);
  for (int r = 0; r < 8; ++r) {
    std::vector<float> v(64);
    for (int j = 0; j < 64; ++j) {
      v[j] = r == 0
                 ? 1e8f
                 : (r == 7 ? -1e8f : 1.0f + 0.001f * static_cast<float>(j * r));
    }
    args[r] = {Tensor::Vector<float>(v)};
  }
  return args;
}

TEST(HostBackendTest, CollectivesReduceInReplicaOrder) {
  ProgramBuilder b("order1", 8);
  Value x = *b.Parameter(DType::kF32, Shape({}));
  Program p = *std::move(b).Build({*b.AllReduce(x, CollectiveReduce::kSum)});
  std::vector<std::vector<Tensor>> args(8);
  for (int r = 0; r < 8; ++r) {
    args[r] = {Tensor::Scalar<float>(r == 0 ? 1e8f : (r == 7 ? -1e8f : 1.0f))};
  }
  HostBackend backend(8);
  auto out = RunSpmd(backend, p, OneCorePerReplica(8), args);
  ASSERT_THAT(out, IsOk());
  // ((1e8 + 1) + 1 ... ) in f32 stays 1e8 (spacing 8), minus 1e8 = 0 exactly.
  EXPECT_EQ((*out)[3][0].scalar<float>(), 0.0f);
}

TEST(HostBackendTest, RepeatedThreadedRunsAreBitIdentical) {
  HostBackendOptions opts;
  opts.num_threads = 3;
  opts.parallel_threshold = 0;  // every op goes through the pool
  HostBackend backend(8, opts);
  Program p = OrderSensitiveProgram();
  auto args = OrderSensitiveArgs();
  auto first = RunSpmd(backend, p, OneCorePerReplica(8), args);
  ASSERT_THAT(first, IsOk());
  for (int iter = 0; iter < 50; ++iter) {
    auto again = RunSpmd(backend, p, OneCorePerReplica(8), args);
    ASSERT_THAT(again, IsOk());
    for (int r = 0; r < 8; ++r) {
      for (int o = 0; o < 2; ++o) {
        // Tensor equality is bitwise on the raw bytes.
        ASSERT_EQ((*again)[r][o], (*first)[r][o])
            << "iteration " << iter << " replica " << r;
      }
    }
  }
  // The inline (single-threaded) backend gives the same bits.
  HostBackend inline_backend(8, HostBackendOptions{0, 0});
  auto inline_out = RunSpmd(inline_backend, p, OneCorePerReplica(8), args);
  ASSERT_THAT(inline_out, IsOk());
  EXPECT_EQ((*inline_out)[0][0], (*first)[0][0]);
  EXPECT_EQ((*inline_out)[5][1], (*first)[5][1]);
}

TEST(HostBackendTest, DynamicBatchRunsOnTrueRowsAndCostsTheBound) {
  ProgramBuilder b("dyn", 4);
  Value x = *b.Parameter(DType::kF32, Shape({8, 2}), 0b1);  // f32[<=8,2]
  Value doubled = *b.Mul(x, *b.Constant(Tensor::Scalar<float>(2.0f)));
  Value col_sum = *b.ReduceSum(doubled, {0});  // static f32[2]
  Value total = *b.AllReduce(col_sum, CollectiveReduce::kSum);
  Value mean_rows = *b.ReduceMean(x, {0});
  Program p = *std::move(b).Build({doubled, total, mean_rows});
  ASSERT_EQ(p.type(doubled).ToString(), "f32[<=8,2]");
  // Replica r gets r + 1 rows of [1, 10].
  std::vector<std::vector<Tensor>> args(4);
  for (int r = 0; r < 4; ++r) {
    std::vector<float> v;
    for (int i = 0; i <= r; ++i) {
      v.push_back(1);
      v.push_back(10);
    }
    args[r] = {Tensor::FromVector<float>(Shape({r + 1, 2}), v)};
  }
  HostBackend backend(4);
  auto out = RunSpmd(backend, p, OneCorePerReplica(4), args);
  ASSERT_THAT(out, IsOk());
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ((*out)[r][0].shape(), Shape({r + 1, 2})) << r;
    // 1 + 2 + 3 + 4 = 10 rows in total, each doubled.
    EXPECT_THAT(F((*out)[r][1]), ElementsAre(20, 200));
    // The mean divides by the TRUE row count.
    EXPECT_THAT(F((*out)[r][2]), ElementsAre(1, 10));
  }
  // Costs use the bound: mul of f32[<=8,2] is 16 flops per replica whatever the
  // true rows.
  absl::StatusOr<Profile> prof = backend.CollectProfile();
  ASSERT_THAT(prof, IsOk());
  EXPECT_EQ(prof->devices(0).per_op().at("mul").flops(), 16);
  EXPECT_EQ(prof->devices(3).per_op().at("mul").flops(), 16);
  EXPECT_EQ(prof->devices(0).per_op().at("mul").bytes_read(), 8 * 2 * 4 + 4);
}

// Replica r gets r + 1 rows; row i of replica r is (10 r + i) * [1, 2].
std::vector<std::vector<Tensor>> RaggedArgs(int replicas) {
  std::vector<std::vector<Tensor>> args(replicas);
  for (int r = 0; r < replicas; ++r) {
    std::vector<float> v;
    for (int i = 0; i <= r; ++i) {
      v.push_back(10.0f * r + i);
      v.push_back(2 * (10.0f * r + i));
    }
    args[r] = {Tensor::FromVector<float>(Shape({r + 1, 2}), v)};
  }
  return args;
}

TEST(HostBackendTest, ContractingOverDynamicBatchGivesStaticResult) {
  // x^T x over the dynamic batch: f32[<=4,2]^T x f32[<=4,2] -> f32[2,2].
  ProgramBuilder b("gram", 3);
  Value x = *b.Parameter(DType::kF32, Shape({4, 2}), 0b1);
  Value g = *b.MatMul(x, x, /*transpose_a=*/true);
  Program p = *std::move(b).Build({g});
  ASSERT_EQ(p.type(g).ToString(), "f32[2,2]");
  HostBackend backend(3);
  auto out = RunSpmd(backend, p, OneCorePerReplica(3), RaggedArgs(3));
  ASSERT_THAT(out, IsOk());
  // Replica 1 rows: (10, 20), (11, 22): sum of squares 221, cross 442, 884.
  EXPECT_THAT(F((*out)[1][0]), ElementsAre(221, 442, 442, 884));
  // Replica 0: one row (0, 0).
  EXPECT_THAT(F((*out)[0][0]), ElementsAre(0, 0, 0, 0));
}

TEST(HostBackendTest, AllGatherAlongDynamicAxisConcatenatesTrueRows) {
  ProgramBuilder b("gather_rows", 3);
  Value x = *b.Parameter(DType::kF32, Shape({4, 2}), 0b1);
  Value g = *b.AllGather(x, 0);
  Program p = *std::move(b).Build({g});
  ASSERT_EQ(p.type(g).ToString(), "f32[<=12,2]");
  HostBackend backend(3);
  auto out = RunSpmd(backend, p, OneCorePerReplica(3), RaggedArgs(3));
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ((*out)[2][0].shape(), Shape({6, 2}));
  EXPECT_THAT(F((*out)[2][0]),
              ElementsAre(0, 0, 10, 20, 11, 22, 20, 40, 21, 42, 22, 44));
}

TEST(HostBackendTest, AllReduceOfDifferentTrueShapesIsAnError) {
  ProgramBuilder b("ragged_sum", 2);
  Value x = *b.Parameter(DType::kF32, Shape({4, 2}), 0b1);
  Program p = *std::move(b).Build({*b.AllReduce(x, CollectiveReduce::kSum)});
  HostBackend backend(2);
  EXPECT_THAT(
      RunSpmd(backend, p, OneCorePerReplica(2), RaggedArgs(2)),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("all_reduce: replica group members have different operand "
                    "shapes: float32[1,2], float32[2,2]")));
}

TEST(HostBackendTest, DynamicLabelsFeedOneHotAndGather) {
  ProgramBuilder b("labels", 2);
  Value labels = *b.Parameter(DType::kI32, Shape({4}), 0b1);
  Value table = *b.Constant(Tensor::Vector<float>({5, 6, 7}));
  Value picked = *b.Gather(table, labels);
  Value hot = *b.OneHot(labels, 3);
  Value counts = *b.ReduceSum(hot, {0});
  Program p = *std::move(b).Build({picked, counts});
  ASSERT_EQ(p.type(picked).ToString(), "f32[<=4]");
  ASSERT_EQ(p.type(counts).ToString(), "f32[3]");
  HostBackend backend(2);
  auto out = RunSpmd(
      backend, p, OneCorePerReplica(2),
      {{Tensor::Vector<int32_t>({2})}, {Tensor::Vector<int32_t>({0, 2, 2})}});
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(F((*out)[0][0]), ElementsAre(7));
  EXPECT_THAT(F((*out)[1][0]), ElementsAre(5, 7, 7));
  EXPECT_THAT(F((*out)[0][1]), ElementsAre(0, 0, 1));
  EXPECT_THAT(F((*out)[1][1]), ElementsAre(1, 0, 2));
}

TEST(HostBackendTest, ReplicaWithZeroRowsContributesNothing) {
  // Spec (f) example 3 computed on device: r0 = [8, 9], r1 = [] -> the global
  // sum is 17 on every replica.
  ProgramBuilder b("empty", 2);
  Value x = *b.Parameter(DType::kF32, Shape({2}), 0b1);
  Value sum = *b.AllReduce(*b.ReduceSum(x, {0}), CollectiveReduce::kSum);
  Value local_mean = *b.ReduceMean(x, {0});
  Program p = *std::move(b).Build({sum, local_mean});
  HostBackend backend(2);
  auto out = RunSpmd(backend, p, OneCorePerReplica(2),
                     {{Tensor::Vector<float>({8, 9})},
                      {Tensor::FromVector<float>(Shape({0}), {})}});
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ((*out)[0][0].scalar<float>(), 17.0f);
  EXPECT_EQ((*out)[1][0].scalar<float>(), 17.0f);
  EXPECT_EQ((*out)[0][1].scalar<float>(), 8.5f);
  // The empty replica's own mean is 0/0 = NaN (spec (f) example 7).
  EXPECT_TRUE(std::isnan((*out)[1][1].scalar<float>()));
}

TEST(HostBackendTest, DynamicArgumentAboveItsBoundIsRejected) {
  ProgramBuilder b("dyn", 1);
  Value x = *b.Parameter(DType::kF32, Shape({4, 2}), 0b1);
  Program p = *std::move(b).Build({x});
  HostBackend backend(1);
  EXPECT_THAT(
      RunSpmd(backend, p, OneCorePerReplica(1),
              {{Tensor::Zeros(DType::kF32, Shape({5, 2}))}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(
                   "argument 0 is float32[5,2], the parameter is f32[<=4,2]")));
}

TEST(HostBackendTest, LogicalCoresRunOnTheirDevicesAndCountTransfers) {
  // 2 replicas x 2 cores: core 0 holds the input, core 1 does the matmul.
  ProgramBuilder b("mp", 2, 2);
  Value x = *b.Parameter(DType::kF32, Shape({1, 2}));
  ASSERT_THAT(b.set_logical_core(1), IsOk());
  Value w = *b.Constant(Tensor::FromVector<float>(Shape({2, 1}), {3, 4}));
  Value y = *b.MatMul(x, w);
  Value s = *b.AllReduce(y, CollectiveReduce::kSum);
  Program p = *std::move(b).Build({x, s});
  SpmdAssignment a;
  a.replica_devices = {{0, 2}, {1, 3}};
  HostBackend backend(4);
  auto exe = backend.Compile(p, {2, 2});
  ASSERT_THAT(exe, IsOk());
  auto b0 = backend.TransferToDevice(
      0, Tensor::FromVector<float>(Shape({1, 2}), {1, 1}));
  auto b1 = backend.TransferToDevice(
      1, Tensor::FromVector<float>(Shape({1, 2}), {1, 2}));
  std::vector<std::vector<Buffer*>> args = {{b0->get()}, {b1->get()}};
  auto outs = backend.ExecuteSpmd(**exe, a, args);
  ASSERT_THAT(outs, IsOk());
  // x stays on core 0's device; the matmul result lives on core 1's device.
  EXPECT_EQ((*outs)[0][0]->device().id(), 0);
  EXPECT_EQ((*outs)[0][1]->device().id(), 2);
  EXPECT_EQ((*outs)[1][1]->device().id(), 3);
  // 7 + 11 = 18.
  EXPECT_EQ(backend.TransferFromDevice(*(*outs)[1][1])->values<float>()[0],
            18.0f);
  absl::StatusOr<Profile> prof = backend.CollectProfile();
  ASSERT_THAT(prof, IsOk());
  EXPECT_EQ(prof->devices(2).cross_core_bytes(),
            8);  // x (f32[1,2]) moved core 0 -> core 1
  EXPECT_EQ(prof->devices(0).cross_core_bytes(), 0);
  EXPECT_EQ(prof->devices(2).per_op().at("dot").flops(), 4);
  EXPECT_EQ(prof->devices(0).per_op().count("dot"), 0u);
  EXPECT_EQ(prof->devices(3).collective_bytes(), 4);
  // An argument on the wrong core's device is rejected.
  std::vector<std::vector<Buffer*>> wrong = {{b1->get()}, {b0->get()}};
  EXPECT_THAT(
      backend.ExecuteSpmd(**exe, a, wrong),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "replica 0 argument 0 lives on device 1, the parameter runs on "
              "device 0 (logical core 0)")));
}

TEST(HostBackendTest, VariableOpsUseTheirLogicalCoresDevice) {
  ProgramBuilder b("mpvar", 1, 2);
  ASSERT_THAT(b.DeclareVariable(0, DType::kF32, Shape({}), "v"), IsOk());
  ASSERT_THAT(b.set_logical_core(1), IsOk());
  Value one = *b.Constant(Tensor::Scalar<float>(1.0f));
  Value v = *b.VariableAssignAdd(0, one);
  Program p = *std::move(b).Build({v});
  SpmdAssignment a;
  a.replica_devices = {{3, 1}};  // core 0 on device 3, core 1 on device 1
  HostBackend backend(4);
  ASSERT_THAT(backend.WriteVariable(1, 0, Tensor::Scalar<float>(5.0f)), IsOk());
  auto out = RunSpmd(backend, p, a, {{}});
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ((*out)[0][0].scalar<float>(), 6.0f);
  EXPECT_EQ(backend.ReadVariable(1, 0)->scalar<float>(), 6.0f);
  EXPECT_THAT(backend.ReadVariable(3, 0),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("never written on device 3")));
}

TEST(HostBackendTest, AbstractTensorsFlowThroughWithCosts) {
  ProgramBuilder b("abs", 2);
  Value x = *b.Parameter(DType::kBF16, Shape({4, 8}));
  Value w = *b.Parameter(DType::kBF16, Shape({8, 16}));
  Value y = *b.Relu(*b.MatMul(x, w));
  Value s = *b.AllReduce(*b.ReduceSum(y, {0}), CollectiveReduce::kMean);
  Program p = *std::move(b).Build({y, s});
  std::vector<std::vector<Tensor>> args(2);
  for (auto& a : args) {
    a = {Tensor::Abstract(DType::kBF16, Shape({4, 8})),
         Tensor::Abstract(DType::kBF16, Shape({8, 16}))};
  }
  HostBackend backend(2);
  auto out = RunSpmd(backend, p, OneCorePerReplica(2), args);
  ASSERT_THAT(out, IsOk());
  EXPECT_FALSE((*out)[1][0].has_data());
  EXPECT_EQ((*out)[1][0].shape(), Shape({4, 16}));
  EXPECT_EQ((*out)[1][1].shape(), Shape({16}));
  absl::StatusOr<Profile> prof = backend.CollectProfile();
  EXPECT_EQ(prof->devices(1).per_op().at("dot").flops(), 2 * 4 * 16 * 8);
  EXPECT_EQ(prof->devices(1).executions(), 1);
}

TEST(HostBackendTest, VariablesLivePerDeviceAndUpdateInPlace) {
  ProgramBuilder b("var", 2);
  ASSERT_THAT(b.DeclareVariable(0, DType::kF32, Shape({2}), "v:0"), IsOk());
  Value rid = *b.Cast(b.ReplicaId(), DType::kF32);
  Value delta = *b.Broadcast(rid, {2});
  Value updated = *b.VariableAssignAdd(0, delta);
  Value read = *b.VariableRead(0);
  Program p = *std::move(b).Build({updated, read});
  HostBackend backend(2);
  ASSERT_THAT(backend.WriteVariable(0, 0, Tensor::Vector<float>({1, 2})),
              IsOk());
  ASSERT_THAT(backend.WriteVariable(1, 0, Tensor::Vector<float>({1, 2})),
              IsOk());
  for (int step = 0; step < 2; ++step) {
    ASSERT_THAT(RunSpmd(backend, p, OneCorePerReplica(2), {{}, {}}), IsOk());
  }
  EXPECT_THAT(F(*backend.ReadVariable(0, 0)), ElementsAre(1, 2));
  EXPECT_THAT(F(*backend.ReadVariable(1, 0)), ElementsAre(3, 4));
  EXPECT_THAT(
      backend.ReadVariable(1, 9),
      StatusIs(absl::StatusCode::kNotFound,
               HasSubstr("variable slot 9 was never written on device 1")));
  // A device whose slot was never written fails the step with
  // FailedPrecondition.
  HostBackend fresh(2);
  ASSERT_THAT(fresh.WriteVariable(0, 0, Tensor::Vector<float>({0, 0})), IsOk());
  EXPECT_THAT(
      RunSpmd(fresh, p, OneCorePerReplica(2), {{}, {}}),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr(
                   "replica 1, op %3 (variable_assign_add): variable slot 0 is "
                   "not initialized on device 1")));
}

TEST(HostBackendTest, VariableAssignReplacesValue) {
  ProgramBuilder b("assign", 1);
  ASSERT_THAT(b.DeclareVariable(4, DType::kI32, Shape({}), "step"), IsOk());
  Value one = *b.Constant(Tensor::Scalar<int32_t>(41));
  Value a = *b.VariableAssign(4, one);
  Program p = *std::move(b).Build({a});
  HostBackend backend(1);
  ASSERT_THAT(RunSpmd(backend, p, OneCorePerReplica(1), {{}}), IsOk());
  EXPECT_EQ(backend.ReadVariable(0, 4)->scalar<int32_t>(), 41);
}

// A value made of constants only is the same on every replica: it is computed
// once and every replica's output shares its storage (a replicated step holds
// one copy of it, not one per replica), with the values a per-replica run
// gives; values that depend on the replica stay per replica.
TEST(HostBackendTest, ReplicaInvariantValuesAreComputedOnceAndShared) {
  constexpr int kReplicas = 4;
  ProgramBuilder b("inv", kReplicas);
  Value x = *b.Parameter(DType::kF32, Shape({2}));
  Value mask = *b.Broadcast(
      *b.Mul(*b.Constant(Tensor::Vector<float>({1.0f, 2.0f})),
             *b.Constant(Tensor::Scalar<float>(3.0f))),
      {3, 2});
  Value y = *b.Add(mask, x);  // per replica: depends on the argument
  Value rid = *b.Broadcast(*b.Cast(b.ReplicaId(), DType::kF32), {2});
  Program p = *std::move(b).Build({mask, y, rid});
  std::vector<std::vector<Tensor>> args;
  for (int r = 0; r < kReplicas; ++r) {
    args.push_back({Tensor::Vector<float>({static_cast<float>(r), 0.0f})});
  }
  HostBackend backend(kReplicas);
  auto out = RunSpmd(backend, p, OneCorePerReplica(kReplicas), args);
  ASSERT_THAT(out, IsOk());
  for (int r = 0; r < kReplicas; ++r) {
    EXPECT_EQ(F((*out)[r][0]), (std::vector<float>{3, 6, 3, 6, 3, 6}));
    EXPECT_EQ(F((*out)[r][1]),
              (std::vector<float>{3.0f + r, 6, 3.0f + r, 6, 3.0f + r, 6}));
    EXPECT_EQ(F((*out)[r][2]),
              (std::vector<float>{static_cast<float>(r), static_cast<float>(r)}));
    // One copy of the invariant value; the others are each replica's own.
    EXPECT_EQ((*out)[r][0].raw_bytes().data(), (*out)[0][0].raw_bytes().data());
    if (r > 0) {
      EXPECT_NE((*out)[r][1].raw_bytes().data(),
                (*out)[0][1].raw_bytes().data());
    }
  }
  // The counters still count every replica's ops.
  absl::StatusOr<Profile> prof = backend.CollectProfile();
  ASSERT_THAT(prof, IsOk());
  EXPECT_EQ(prof->devices(3).per_op().at("broadcast").count(), 2);
  EXPECT_EQ(prof->devices(3).per_op().at("mul").count(), 1);
}

// An invariant kernel that fails reports replica 0, the lowest replica, as a
// per-replica run would.
TEST(HostBackendTest, AFailingInvariantKernelNamesReplicaZero) {
  ProgramBuilder b("inv_err", 2);
  Value q = *b.Div(*b.Constant(Tensor::Vector<int32_t>({4, 4})),
                   *b.Constant(Tensor::Vector<int32_t>({2, 0})));
  Program p = *std::move(b).Build({q});
  HostBackend backend(2);
  EXPECT_THAT(RunSpmd(backend, p, OneCorePerReplica(2), {{}, {}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("program inv_err, replica 0, op %2 (div): "
                                 "div: integer division by zero")));
}

TEST(HostBackendTest, KernelErrorsNameProgramReplicaAndOp) {
  ProgramBuilder b("err", 2);
  Value x = *b.Parameter(DType::kI32, Shape({2}));
  Value q = *b.Div(*b.Constant(Tensor::Vector<int32_t>({4, 4})), x);
  Program p = *std::move(b).Build({q});
  HostBackend backend(2);
  EXPECT_THAT(
      RunSpmd(backend, p, OneCorePerReplica(2),
              {{Tensor::Vector<int32_t>({1, 2})},
               {Tensor::Vector<int32_t>({0, 2})}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(
                   "program err, replica 1, op %2 (div): div: integer division "
                   "by zero")));
}

TEST(HostBackendTest, BadAssignmentsAndArgumentsAreRejected) {
  ProgramBuilder b("p", 2);
  Value x = *b.Parameter(DType::kF32, Shape({2}));
  Program p = *std::move(b).Build({x});
  HostBackend backend(3);
  auto exe = backend.Compile(p, {2, 1});
  ASSERT_THAT(exe, IsOk());
  auto b0 = backend.TransferToDevice(0, Tensor::Vector<float>({1, 2}));
  auto b1 = backend.TransferToDevice(1, Tensor::Vector<float>({1, 2}));
  std::vector<std::vector<Buffer*>> args = {{b0->get()}, {b1->get()}};
  SpmdAssignment one;
  one.replica_devices = {{0}};
  EXPECT_THAT(
      backend.ExecuteSpmd(**exe, one, args),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("the assignment has 1 replicas, the executable needs 2")));
  SpmdAssignment dup;
  dup.replica_devices = {{0}, {0}};
  EXPECT_THAT(backend.ExecuteSpmd(**exe, dup, args),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("device 0 is assigned twice")));
  SpmdAssignment unknown;
  unknown.replica_devices = {{0}, {7}};
  EXPECT_THAT(
      backend.ExecuteSpmd(**exe, unknown, args),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(
                   "device 7 does not exist; the host backend has 3 devices")));
  std::vector<std::vector<Buffer*>> missing = {{b0->get()}, {}};
  EXPECT_THAT(
      backend.ExecuteSpmd(**exe, OneCorePerReplica(2), missing),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "replica 1 passes 0 arguments, the program has 1 parameters")));
  auto wrong = backend.TransferToDevice(1, Tensor::Vector<int32_t>({1, 2}));
  std::vector<std::vector<Buffer*>> typed = {{b0->get()}, {wrong->get()}};
  EXPECT_THAT(
      backend.ExecuteSpmd(**exe, OneCorePerReplica(2), typed),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("argument 0 is int32[2], the parameter is f32[2]")));
  // Buffers of another backend are refused.
  HostBackend other(2);
  auto foreign = other.TransferToDevice(1, Tensor::Vector<float>({1, 2}));
  std::vector<std::vector<Buffer*>> mixed = {{b0->get()}, {foreign->get()}};
  EXPECT_THAT(backend.ExecuteSpmd(**exe, OneCorePerReplica(2), mixed),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("was not made by this host backend")));
}

TEST(HostBackendTest, CompileChecksReplicaAndDeviceCounts) {
  ProgramBuilder b("p", 4);
  Program p = *std::move(b).Build({b.ReplicaId()});
  HostBackend backend(2);
  EXPECT_THAT(
      backend.Compile(p, {2, 1}),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "options ask for 2 replicas x 1 cores, the program was traced "
              "for 4 x 1")));
  EXPECT_THAT(backend.Compile(p, {4, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("need 4 devices, the host backend has 2")));
  EXPECT_THAT(
      backend.Compile(p, {0, 1}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be >= 1")));
}

TEST(HostBackendTest, ProfileCountsOpsTransfersAndResets) {
  ProgramBuilder b("prof", 2);
  Value x = *b.Parameter(DType::kF32, Shape({4}));
  Value e = *b.Exp(x);
  Value s = *b.AllReduce(e, CollectiveReduce::kSum);
  Program p = *std::move(b).Build({s});
  HostBackend backend(2);
  std::vector<std::vector<Tensor>> args = {
      {Tensor::Vector<float>({0, 0, 0, 0})},
      {Tensor::Vector<float>({0, 0, 0, 0})}};
  ASSERT_THAT(RunSpmd(backend, p, OneCorePerReplica(2), args), IsOk());
  ASSERT_THAT(RunSpmd(backend, p, OneCorePerReplica(2), args), IsOk());
  absl::StatusOr<Profile> prof = backend.CollectProfile();
  ASSERT_THAT(prof, IsOk());
  EXPECT_EQ(prof->backend(), "host");
  EXPECT_EQ(prof->spans_size(), 0);
  const DeviceProfile& d1 = prof->devices(1);
  EXPECT_EQ(d1.device_id(), 1);
  EXPECT_EQ(d1.executions(), 2);
  EXPECT_EQ(d1.per_op().at("exp").count(), 2);
  EXPECT_EQ(d1.per_op().at("exp").flops(), 8);
  EXPECT_EQ(d1.per_op().at("exp").transcendentals(), 8);
  EXPECT_EQ(d1.per_op().at("all_reduce").flops(), 8);  // (2-1) * 4 per step
  EXPECT_EQ(d1.per_op().at("parameter").count(), 2);
  EXPECT_EQ(d1.total().flops(), 16);
  EXPECT_EQ(d1.host_to_device_bytes(), 32);
  EXPECT_EQ(d1.device_to_host_bytes(), 32);
  EXPECT_EQ(d1.collective_bytes(), 32);
  backend.ResetProfile();
  EXPECT_EQ(backend.CollectProfile()->devices(1).executions(), 0);
  EXPECT_TRUE(backend.CollectProfile()->devices(1).per_op().empty());
}

// The Profile is its proto: it prints as textproto directly.
TEST(HostBackendTest, ProfileIsItsProto) {
  ProgramBuilder b("prof", 1);
  Value x = *b.Parameter(DType::kF32, Shape({2}));
  Program p = *std::move(b).Build({*b.Relu(x)});
  HostBackend backend(1);
  ASSERT_THAT(RunSpmd(backend, p, OneCorePerReplica(1),
                      {{Tensor::Vector<float>({1, -1})}}),
              IsOk());
  const proto::ProfileProto pb = *backend.CollectProfile();
  std::string text;
  google::protobuf::TextFormat::PrintToString(pb.devices(0).per_op().at("relu"),
                                              &text);
  EXPECT_EQ(text, "count: 1\nflops: 2\nbytes_read: 8\nbytes_written: 8\n");
  EXPECT_EQ(pb.backend(), "host");
  EXPECT_EQ(pb.devices(0).host_to_device_bytes(), 8);
  EXPECT_EQ(pb.devices(0).total().flops(), 2);
}

// Swaps every op of a small dynamic-batch program for every other op code and
// runs whatever still passes the shape rules: kernels must return a value or a
// status, never crash, whatever the combination of operands and attributes.
TEST(HostBackendTest, EveryOpCodeOnEveryPositionRunsOrFailsCleanly) {
  ProgramBuilder b("mix", 2);
  Value x = *b.Parameter(DType::kF32, Shape({4, 3}), 0b1);
  Value labels = *b.Parameter(DType::kI32, Shape({4}), 0b1);
  ASSERT_THAT(b.DeclareVariable(0, DType::kF32, Shape({3, 3})), IsOk());
  Value w = *b.VariableRead(0);
  Value y = *b.MatMul(x, w);
  Value hot = *b.OneHot(labels, 3);
  Value d = *b.Sub(y, hot);
  Value g = *b.MatMul(x, d, true);
  Value s = *b.AllReduce(g, CollectiveReduce::kMean);
  Value u = *b.VariableAssignAdd(0, s);
  Value r = *b.ReduceMax(d, {1});
  Program base = *std::move(b).Build({u, r, d});
  proto::ProgramProto base_pb;
  base.ToProto(&base_pb);
  int ran = 0;
  for (int i = 0; i < base_pb.ops_size(); ++i) {
    for (int code = 0; code < kNumOpCodes; ++code) {
      proto::ProgramProto pb = base_pb;
      pb.mutable_ops(i)->set_op(
          std::string(OpCodeName(static_cast<OpCode>(code))));
      pb.mutable_ops(i)->clear_type();
      absl::StatusOr<Program> p = Program::FromProto(pb);
      if (!p.ok()) continue;
      HostBackend backend(2, HostBackendOptions{0, 0});
      for (int dev = 0; dev < 2; ++dev) {
        ASSERT_THAT(backend.WriteVariable(
                        dev, 0, Tensor::Zeros(DType::kF32, Shape({3, 3}))),
                    IsOk());
      }
      std::vector<std::vector<Tensor>> args(2);
      for (int rep = 0; rep < 2; ++rep) {
        args[rep] = {Tensor::Zeros(DType::kF32, Shape({rep + 1, 3})),
                     Tensor::Zeros(DType::kI32, Shape({rep + 1}))};
      }
      auto out = RunSpmd(backend, *p, OneCorePerReplica(2), args);
      if (out.ok()) {
        ++ran;
      } else {
        EXPECT_THAT(out.status().code(),
                    ::testing::AnyOf(absl::StatusCode::kInvalidArgument,
                                     absl::StatusCode::kFailedPrecondition))
            << out.status().ToString();
      }
    }
  }
  EXPECT_GT(ran, 20);
}

TEST(HostBackendTest, OutputsMayRepeatAndIncludeParameters) {
  ProgramBuilder b("id", 1);
  Value x = *b.Parameter(DType::kU8, Shape({2}));
  Program p = *std::move(b).Build({x, x});
  HostBackend backend(1);
  auto out = RunSpmd(backend, p, OneCorePerReplica(1),
                     {{Tensor::Vector<uint8_t>({7, 9})}});
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT((*out)[0][1].values<uint8_t>(), ElementsAre(7, 9));
}

}  // namespace
}  // namespace tpusim::runtime
