#include "sim/compile/compile.h"

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::sim {
namespace {

using runtime::DType;
using runtime::OpCode;
using runtime::Program;
using runtime::ProgramBuilder;
using runtime::Shape;
using runtime::Tensor;
using runtime::Value;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::StatusIs;

CompileOptions Unfused() {
  CompileOptions o;
  o.fusion = false;
  return o;
}

CompileOptions Options(int infeed_depth, std::vector<int> optimizer_slots) {
  CompileOptions o;
  o.infeed_depth = infeed_depth;
  o.optimizer_state_slots = std::move(optimizer_slots);
  return o;
}

CompiledProgram Compile(const Program& p, CompileOptions options = {}) {
  absl::StatusOr<CompiledProgram> c = CompileProgram(p, options);
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

std::vector<std::string> Names(const CompiledProgram& c) {
  std::vector<std::string> out;
  for (const Kernel& k : c.kernels) out.push_back(k.name);
  return out;
}

// relu(add(dot(x, w), b)) on f32: x [8,16], w [16,32], b [32].
Program DotBiasRelu() {
  ProgramBuilder b("dense");
  Value x = *b.Parameter(DType::kF32, Shape({8, 16}));
  Value w = *b.Parameter(DType::kF32, Shape({16, 32}));
  Value bias = *b.Parameter(DType::kF32, Shape({32}));
  Value d = *b.MatMul(x, w);
  Value y = *b.Relu(*b.Add(d, bias));
  return *std::move(b).Build({y});
}

TEST(CompileTest, DotBiasReluIsOneKernelMovingOnlyTheDotsBytesAndTheBias) {
  const Program p = DotBiasRelu();
  const CompiledProgram c = Compile(p);
  ASSERT_EQ(c.kernels.size(), 1u);
  const Kernel& k = c.kernels[0];
  EXPECT_EQ(k.name, "fusion.5");
  EXPECT_EQ(k.kind, CompiledKernelKind::kMxu);
  EXPECT_THAT(k.op_ids, ElementsAre(3, 4, 5));
  // The dot's operands (x 8*16*4, w 16*32*4) and result (8*32*4), plus b
  // (32*4); nothing for dot's or add's results.
  const int64_t dot_bytes = 8 * 16 * 4 + 16 * 32 * 4 + 8 * 32 * 4;
  EXPECT_EQ(k.hbm_read_bytes, 8 * 16 * 4 + 16 * 32 * 4 + 32 * 4);
  EXPECT_EQ(k.hbm_write_bytes, 8 * 32 * 4);
  EXPECT_EQ(k.work.hbm_bytes, dot_bytes + 32 * 4);
  ASSERT_EQ(k.work.matmuls.size(), 1u);
  EXPECT_EQ(k.work.matmuls[0].m, 8);
  EXPECT_EQ(k.work.matmuls[0].k, 16);
  EXPECT_EQ(k.work.matmuls[0].n, 32);
  EXPECT_EQ(k.work.matmuls[0].precision, Precision::kDefault);
  // The epilogue's element operations: add and relu, one per element.
  EXPECT_EQ(k.work.vector_elements, 2 * 8 * 32);
  EXPECT_EQ(k.flops, 2 * 8 * 16 * 32 + 2 * 8 * 32);
  EXPECT_THAT(c.kernel_of_op, ElementsAre(-1, -1, -1, 0, 0, 0));

  // Unfused, every op is a kernel and the intermediates go through HBM.
  const CompiledProgram u = Compile(p, Unfused());
  EXPECT_THAT(Names(u), ElementsAre("dot.3", "add.4", "relu.5"));
  EXPECT_EQ(u.kernels[0].work.hbm_bytes, dot_bytes);
  EXPECT_EQ(u.kernels[1].work.hbm_bytes, 8 * 32 * 4 * 2 + 32 * 4);
  EXPECT_EQ(u.kernels[2].work.hbm_bytes, 8 * 32 * 4 * 2);
  EXPECT_EQ(u.total_flops(), c.total_flops());
}

TEST(CompileTest, FiveElementwiseOpsReadTheirInputOnceAndWriteTheOutputOnce) {
  ProgramBuilder b("chain");
  Value x = *b.Parameter(DType::kF32, Shape({1024}));
  Value y = *b.Sqrt(*b.Relu(*b.Tanh(*b.Exp(*b.Neg(x)))));
  const Program p = *std::move(b).Build({y});
  const CompiledProgram c = Compile(p);
  ASSERT_EQ(c.kernels.size(), 1u);
  const Kernel& k = c.kernels[0];
  EXPECT_EQ(k.name, "fusion.5");
  EXPECT_EQ(k.kind, CompiledKernelKind::kVector);
  EXPECT_THAT(k.op_ids, ElementsAre(1, 2, 3, 4, 5));
  EXPECT_EQ(k.hbm_read_bytes, 4096);
  EXPECT_EQ(k.hbm_write_bytes, 4096);
  EXPECT_EQ(k.work.vector_elements, 5 * 1024);
  EXPECT_EQ(k.work.transcendental_elements, 3 * 1024);  // exp, tanh, sqrt
  EXPECT_EQ(Compile(p, Unfused()).total_hbm_bytes(), 5 * 2 * 4096);
}

TEST(CompileTest, AProducerWithAConsumerOutsideIsAnExtraOutput) {
  {
    // exp(x) feeds neg and log, both fusible: one kernel, exp never written.
    ProgramBuilder b("all_join");
    Value x = *b.Parameter(DType::kF32, Shape({256}));
    Value e = *b.Exp(x);
    Value y = *b.Add(*b.Neg(e), *b.Log(e));
    const CompiledProgram c = Compile(*std::move(b).Build({y}));
    EXPECT_THAT(Names(c), ElementsAre("fusion.4"));
    EXPECT_EQ(c.kernels[0].hbm_read_bytes, 1024);
    EXPECT_EQ(c.kernels[0].hbm_write_bytes, 1024);
  }
  {
    // exp(x) feeds neg and a transpose (not fusible): exp fuses into neg's
    // kernel (multi-output) and leaves it once for the transpose; neg reads
    // nothing back. Unfused: exp 1024 + 1024, neg 1024 + 1024.
    ProgramBuilder b("one_outside");
    Value x = *b.Parameter(DType::kF32, Shape({256}));
    Value e = *b.Exp(x);
    Value n = *b.Neg(e);
    Value r = *b.Transpose(e, {0});
    const CompiledProgram c = Compile(*std::move(b).Build({n, r}));
    EXPECT_THAT(Names(c), ElementsAre("fusion.2", "transpose.3"));
    EXPECT_THAT(c.kernels[0].op_ids, ElementsAre(1, 2));
    EXPECT_EQ(c.kernels[0].hbm_read_bytes, 1024);
    EXPECT_EQ(c.kernels[0].hbm_write_bytes, 1024 + 1024);  // exp and neg
    EXPECT_EQ(c.kernels[1].hbm_read_bytes, 1024);
    EXPECT_THAT(c.kernel_of_op, ElementsAre(-1, 0, 0, 1));
  }
  {
    // A dot whose result also feeds a transpose keeps its relu epilogue and
    // writes both the dot and the relu.
    ProgramBuilder b("dot_two_uses");
    Value x = *b.Parameter(DType::kF32, Shape({4, 4}));
    Value d = *b.MatMul(x, x);
    Value r = *b.Relu(d);
    Value t = *b.Transpose(d, {1, 0});
    const CompiledProgram c = Compile(*std::move(b).Build({r, t}));
    EXPECT_THAT(Names(c), ElementsAre("fusion.2", "transpose.3"));
    EXPECT_EQ(c.kernels[0].kind, CompiledKernelKind::kMxu);
    // x is read once although the dot uses it twice.
    EXPECT_EQ(c.kernels[0].hbm_read_bytes, 64);
    EXPECT_EQ(c.kernels[0].hbm_write_bytes, 64 + 64);
  }
  {
    // add(dot, dot): a kernel holds at most one dot. The add joins the first
    // dot's epilogue; the second dot's merge is refused, so it is written
    // and read back.
    ProgramBuilder b("two_dots");
    Value x = *b.Parameter(DType::kF32, Shape({4, 4}));
    Value d1 = *b.MatMul(x, x);
    Value d2 = *b.MatMul(x, x, /*transpose_a=*/true);
    Value y = *b.Add(d1, d2);
    const CompiledProgram c = Compile(*std::move(b).Build({y}));
    EXPECT_THAT(Names(c), ElementsAre("dot.2", "fusion.3"));
    EXPECT_THAT(c.kernels[1].op_ids, ElementsAre(1, 3));
    EXPECT_EQ(c.kernels[1].hbm_read_bytes, 64 + 64);  // x and d2
  }
}

// Producer-consumer multi-output fusion takes the first consumer kernel that
// does not make two kernels wait on each other: exp cannot join the add (the
// add also waits for the transpose of exp), so it joins neg, and its value
// leaves that kernel for the transpose and the add; the multi-output kernel
// is issued before its first dependent.
TEST(CompileTest, MultiOutputFusionSkipsAConsumerThatWouldMakeACycle) {
  ProgramBuilder b("cycle");
  Value x = *b.Parameter(DType::kF32, Shape({16, 16}));  // %0, 1024 bytes
  Value e = *b.Exp(x);                                   // %1
  Value t = *b.Transpose(e, {1, 0});                     // %2
  Value a = *b.Add(e, t);                                // %3
  Value n = *b.Neg(e);                                   // %4
  const CompiledProgram c = Compile(*std::move(b).Build({a, n}));
  EXPECT_THAT(Names(c), ElementsAre("fusion.4", "transpose.2", "add.3"));
  EXPECT_THAT(c.kernels[0].op_ids, ElementsAre(1, 4));
  EXPECT_EQ(c.kernels[0].hbm_read_bytes, 1024);
  EXPECT_EQ(c.kernels[0].hbm_write_bytes, 1024 + 1024);  // exp and neg
  EXPECT_EQ(c.kernels[2].hbm_read_bytes, 1024 + 1024);   // exp, transpose
  EXPECT_THAT(c.kernels[2].deps, ElementsAre(0, 1));
}

// Batch-norm-like statistics: xc = x - mean feeds the variance reduction and
// the normalized output, which are different kernels (the variance must be
// reduced before y). xc is cheap and effectively unary (x in full, mean
// broadcast in), so each kernel recomputes it from x and mean and xc never
// touches HBM.
TEST(CompileTest, ACheapProducerIsRecomputedInEachConsumerKernel) {
  ProgramBuilder b("bn_stats");
  Value x = *b.Parameter(DType::kF32, Shape({64, 16}));   // %0, 4096 bytes
  Value mean = *b.ReduceMean(x, {0}, /*keepdims=*/true);  // %1 f32[1,16]
  Value xc = *b.Sub(x, mean);                             // %2
  Value var = *b.ReduceMean(*b.Mul(xc, xc), {0}, true);   // %3, %4
  Value y = *b.Mul(xc, var);                              // %5
  const Program p = *std::move(b).Build({y});
  const CompiledProgram c = Compile(p);
  EXPECT_THAT(Names(c), ElementsAre("reduce_mean.1", "fusion.4", "fusion.5"));
  EXPECT_EQ(c.kernels[0].hbm_read_bytes, 4096);
  EXPECT_EQ(c.kernels[0].hbm_write_bytes, 64);
  EXPECT_THAT(c.kernels[1].op_ids, ElementsAre(2, 3, 4));
  EXPECT_EQ(c.kernels[1].hbm_read_bytes, 4096 + 64);  // x, mean
  EXPECT_EQ(c.kernels[1].hbm_write_bytes, 64);        // var
  EXPECT_THAT(c.kernels[2].op_ids, ElementsAre(2, 5));
  EXPECT_EQ(c.kernels[2].hbm_read_bytes, 4096 + 64 + 64);  // x, mean, var
  EXPECT_EQ(c.kernels[2].hbm_write_bytes, 4096);           // y
  // The second evaluation of xc is the work duplication adds.
  EXPECT_EQ(c.kernels[1].flops, 3 * 1024);
  EXPECT_EQ(c.kernels[1].recomputed_flops, 0);
  EXPECT_EQ(c.kernels[2].flops, 2 * 1024);
  EXPECT_EQ(c.kernels[2].recomputed_flops, 1024);
  EXPECT_EQ(c.kernel_of_op[2], 1);  // the first kernel evaluating xc
  EXPECT_EQ(c.total_flops() - 1024, Compile(p, Unfused()).total_flops());
  // xc is never a buffer.
  EXPECT_EQ(c.memory[0].live_peak, 4096 + 64 + 64);  // y, mean, var
  // Unfused: xc is written once and read twice.
  const CompiledProgram u = Compile(p, Unfused());
  EXPECT_EQ(u.kernels[u.kernel_of_op[2]].hbm_write_bytes, 4096);
  EXPECT_EQ(c.total_hbm_bytes(), 4160 + 4224 + 8320);
}

// gamma * xhat + beta: the add has two consumers, so it is recomputed, and
// the mul that only the add reads is then evaluated by both consumers' kernels
// too: it is recomputed with it and neither value is ever written.
TEST(CompileTest, AProducerOfARecomputedOpIsRecomputedWithIt) {
  ProgramBuilder b("scale_shift");
  Value x = *b.Parameter(DType::kF32, Shape({64, 16}));  // %0, 4096 bytes
  Value g = *b.Parameter(DType::kF32, Shape({16}));      // %1, 64 bytes
  Value y = *b.Add(*b.Mul(x, g), g);                     // %2, %3
  Value r = *b.Relu(y);                                  // %4
  Value n = *b.Neg(y);                                   // %5
  const CompiledProgram c = Compile(*std::move(b).Build({r, n}));
  EXPECT_THAT(Names(c), ElementsAre("fusion.4", "fusion.5"));
  EXPECT_THAT(c.kernels[0].op_ids, ElementsAre(2, 3, 4));
  EXPECT_THAT(c.kernels[1].op_ids, ElementsAre(2, 3, 5));
  for (const Kernel& k : c.kernels) {
    EXPECT_EQ(k.hbm_read_bytes, 4096 + 64);
    EXPECT_EQ(k.hbm_write_bytes, 4096);
  }
  EXPECT_EQ(c.kernels[1].recomputed_flops, 2 * 1024);
}

TEST(CompileTest, OnlyCheapEffectivelyUnaryProducersAreRecomputed) {
  // Each producer below feeds a reduction and an elementwise op that waits
  // for that reduction, so it cannot join both kernels; it is not
  // recomputed: exp is transcendental, add reads two full operands, and the
  // f32 -> bf16 cast reads more bytes than it writes. Each is one kernel
  // written once (here merged into the reduction's kernel as an extra
  // output) and read back by the other.
  for (int which = 0; which < 3; ++which) {
    ProgramBuilder b("not_recomputed");
    Value x = *b.Parameter(DType::kF32, Shape({256}));
    Value z = *b.Parameter(DType::kF32, Shape({256}));
    Value e = which == 0   ? *b.Exp(x)
              : which == 1 ? *b.Add(x, z)
                           : *b.Cast(x, DType::kBF16);
    Value s = *b.ReduceSum(e, {0}, /*keepdims=*/true);  // [1]
    Value y = *b.Mul(e, s);
    const CompiledProgram c = Compile(*std::move(b).Build({y}));
    ASSERT_EQ(c.kernels.size(), 2u) << which;
    EXPECT_THAT(c.kernels[0].op_ids, ElementsAre(2, 3)) << which;
    EXPECT_EQ(c.kernels[0].hbm_write_bytes,
              (which == 2 ? 512 : 1024) + (which == 2 ? 2 : 4))
        << which;
    EXPECT_THAT(c.kernels[1].op_ids, ElementsAre(4)) << which;
    EXPECT_EQ(c.kernels[0].recomputed_flops + c.kernels[1].recomputed_flops, 0);
  }
}

// The relu gradient: compare and select are elementwise and fuse.
TEST(CompileTest, CompareAndSelectFuse) {
  ProgramBuilder b("relu_grad");
  Value y = *b.Parameter(DType::kF32, Shape({256}));
  Value dy = *b.Parameter(DType::kF32, Shape({256}));
  Value zero = *b.Constant(Tensor::Scalar<float>(0.0f));
  Value pos = *b.Compare(y, zero, runtime::Comparison::kGt);
  Value dx = *b.Select(pos, dy, zero);
  const CompiledProgram c = Compile(*std::move(b).Build({dx}));
  EXPECT_THAT(Names(c), ElementsAre("fusion.4"));
  EXPECT_EQ(c.kernels[0].hbm_read_bytes, 1024 + 1024 + 4);
  EXPECT_EQ(c.kernels[0].hbm_write_bytes, 1024);  // the u8 mask stays inside
}

// Sibling reductions of one shape over the same axes that read a common value
// as large as their input are one multi-output kernel reading it once; a
// reduction over other axes, or one only sharing a scalar, is not merged.
TEST(CompileTest, SiblingReductionsShareOneReadOfTheirInput) {
  ProgramBuilder b("siblings");
  Value x = *b.Parameter(DType::kF32, Shape({64, 16}));  // %0
  Value s = *b.Parameter(DType::kF32, Shape({}));        // %1
  Value z = *b.Parameter(DType::kF32, Shape({64, 16}));  // %2
  Value sum = *b.ReduceSum(x, {0});                      // %3
  Value sq = *b.ReduceSum(*b.Mul(x, x), {0});            // %4, %5
  Value mx = *b.ReduceMax(x, {1});                       // %6
  Value a = *b.ReduceSum(*b.Mul(x, s), {0});             // %7, %8 (x again)
  Value other = *b.ReduceSum(*b.Mul(z, s), {0});         // %9, %10
  const CompiledProgram c =
      Compile(*std::move(b).Build({sum, sq, mx, a, other}));
  EXPECT_THAT(Names(c), ElementsAre("reduce_max.6", "fusion.8", "fusion.10"));
  EXPECT_EQ(c.kernels[0].hbm_read_bytes, 4096);
  EXPECT_THAT(c.kernels[1].op_ids, ElementsAre(3, 4, 5, 7, 8));
  EXPECT_EQ(c.kernels[1].hbm_read_bytes, 4096 + 4);  // x once, s
  EXPECT_EQ(c.kernels[1].hbm_write_bytes, 3 * 64);   // three reductions
  EXPECT_THAT(c.kernels[2].op_ids, ElementsAre(9, 10));
  EXPECT_EQ(c.kernels[2].hbm_read_bytes, 4096 + 4);
}

// A gradient bucket: the gradients are concatenated and scaled in one kernel
// (the concatenation is never written); after the all-reduce, the learning
// rate scaling is recomputed in the updates, each update's slice reads only
// its part of the reduced bucket, and the updates reading the bucket are one
// multi-output kernel.
TEST(CompileTest, ConcatAndSliceFuseAroundAGradientBucket) {
  ProgramBuilder b("bucket", /*num_replicas=*/2);
  ASSERT_TRUE(b.DeclareVariable(1, DType::kF32, Shape({4, 4})).ok());
  ASSERT_TRUE(b.DeclareVariable(2, DType::kF32, Shape({8})).ok());
  Value g1 = *b.Parameter(DType::kF32, Shape({4, 4}));      // %0, 64 bytes
  Value g2 = *b.Parameter(DType::kF32, Shape({8}));         // %1, 32 bytes
  Value bucket = *b.Concat({*b.Reshape(g1, {16}), g2}, 0);  // %2, %3
  Value scale = *b.Constant(Tensor::Scalar<float>(0.5f));   // %4
  Value ar = *b.AllReduce(*b.Mul(bucket, scale),            // %5, %6
                          runtime::CollectiveReduce::kSum);
  Value lr = *b.Constant(Tensor::Scalar<float>(0.1f));            // %7
  Value u = *b.Mul(ar, lr);                                       // %8
  Value d1 = *b.Neg(*b.Reshape(*b.Slice(u, {0}, {16}), {4, 4}));  // %9-%11
  Value a1 = *b.VariableAssignAdd(1, d1);                         // %12
  Value d2 = *b.Neg(*b.Slice(u, {16}, {24}));                     // %13, %14
  Value a2 = *b.VariableAssignAdd(2, d2);                         // %15
  const CompiledProgram c = Compile(*std::move(b).Build({a1, a2}));
  EXPECT_THAT(Names(c), ElementsAre("fusion.5", "all_reduce.6.start",
                                    "all_reduce.6.done", "fusion.15"));
  EXPECT_THAT(c.kernels[0].op_ids, ElementsAre(3, 5));
  EXPECT_EQ(c.kernels[0].hbm_read_bytes, 64 + 32 + 4);
  EXPECT_EQ(c.kernels[0].hbm_write_bytes, 96);
  // The updates: the reduced bucket once (16 + 8 elements), lr, the
  // variables' old values; each variable written in place.
  EXPECT_THAT(c.kernels[3].op_ids, ElementsAre(8, 9, 11, 12, 13, 14, 15));
  EXPECT_EQ(c.kernels[3].hbm_read_bytes, 96 + 4 + 64 + 32);
  EXPECT_EQ(c.kernels[3].hbm_write_bytes, 64 + 32);
  // u is evaluated for the elements the slices keep: its mul, neg and add.
  EXPECT_EQ(c.kernels[3].work.vector_elements, 3 * 24);
  EXPECT_EQ(c.kernels[3].recomputed_flops, 0);
}

// A recomputed producer read through a slice in two kernels that do not
// merge (a reduction each): each evaluates and reads only its slice.
TEST(CompileTest, ARecomputedProducerIsEvaluatedOnlyForTheSlicedElements) {
  ProgramBuilder b("sliced");
  Value x = *b.Parameter(DType::kF32, Shape({24}));       // %0
  Value k = *b.Constant(Tensor::Scalar<float>(2.0f));     // %1
  Value u = *b.Mul(x, k);                                 // %2, recomputed
  Value s1 = *b.ReduceSum(*b.Slice(u, {0}, {16}), {0});   // %3, %4
  Value s2 = *b.ReduceMax(*b.Slice(u, {16}, {24}), {0});  // %5, %6
  const CompiledProgram c = Compile(*std::move(b).Build({s1, s2}));
  EXPECT_THAT(Names(c), ElementsAre("fusion.4", "fusion.6"));
  EXPECT_EQ(c.kernels[0].hbm_read_bytes, 16 * 4 + 4);
  EXPECT_EQ(c.kernels[0].work.vector_elements, 16 + 16);  // mul, reduce
  EXPECT_EQ(c.kernels[1].hbm_read_bytes, 8 * 4 + 4);
  EXPECT_EQ(c.kernels[1].work.vector_elements, 8 + 8);
  // The cost rule counts u's 24 elements at each evaluation.
  EXPECT_EQ(c.kernels[1].recomputed_flops, 24);
}

TEST(CompileTest, ReductionsTakeTheirElementwiseProducersAndEndTheKernel) {
  ProgramBuilder b("loss");
  Value x = *b.Parameter(DType::kF32, Shape({64, 16}));
  Value y = *b.Parameter(DType::kF32, Shape({64, 16}));
  Value d = *b.Sub(x, y);
  Value sq = *b.Mul(d, d);
  Value m = *b.ReduceMean(sq, {1});       // f32[64]
  Value s = *b.ReduceSum(*b.Exp(m), {0});  // a second reduction: new kernel
  Value n = *b.Neg(m);                     // m has two consumers outside
  const CompiledProgram c = Compile(*std::move(b).Build({s, n}));
  EXPECT_THAT(Names(c), ElementsAre("fusion.4", "fusion.6", "neg.7"));
  EXPECT_THAT(c.kernels[0].op_ids, ElementsAre(2, 3, 4));
  EXPECT_EQ(c.kernels[0].hbm_read_bytes, 2 * 64 * 16 * 4);
  EXPECT_EQ(c.kernels[0].hbm_write_bytes, 64 * 4);
  EXPECT_EQ(c.kernels[0].work.vector_elements, 3 * 64 * 16);
  EXPECT_THAT(c.kernels[1].op_ids, ElementsAre(5, 6));
  // A dot's epilogue never takes a reduction.
  ProgramBuilder b2("dot_reduce");
  Value a = *b2.Parameter(DType::kF32, Shape({4, 4}));
  Value r = *b2.ReduceSum(*b2.MatMul(a, a), {0});
  const CompiledProgram c2 = Compile(*std::move(b2).Build({r}));
  EXPECT_THAT(Names(c2), ElementsAre("dot.1", "reduce_sum.2"));
}

TEST(CompileTest, ReshapeIsABitcastThatFusionLooksThrough) {
  ProgramBuilder b("reshape");
  Value x = *b.Parameter(DType::kF32, Shape({4, 8}));
  Value e = *b.Exp(x);
  Value r = *b.Reshape(e, {32});
  Value y = *b.Neg(r);
  const CompiledProgram c = Compile(*std::move(b).Build({y}));
  EXPECT_THAT(Names(c), ElementsAre("fusion.3"));
  EXPECT_THAT(c.kernels[0].op_ids, ElementsAre(1, 3));
  EXPECT_EQ(c.kernels[0].work.hbm_bytes, 2 * 128);
  EXPECT_THAT(c.kernel_of_op, ElementsAre(-1, 0, 0, 0));
}

// Three layers' backward pass with one all-reduce per weight gradient, traced
// as TF does: all gradients first, then their all-reduces, then the updates
// (w1, w2, w3).
Program ThreeLayerBackward() {
  ProgramBuilder b("backward", /*num_replicas=*/4);
  Value h0 = *b.Parameter(DType::kF32, Shape({8, 16}));
  Value h1 = *b.Parameter(DType::kF32, Shape({8, 16}));
  Value h2 = *b.Parameter(DType::kF32, Shape({8, 16}));
  Value dy = *b.Parameter(DType::kF32, Shape({8, 16}));
  for (int s = 1; s <= 3; ++s) {
    EXPECT_TRUE(b.DeclareVariable(s, DType::kF32, Shape({16, 16})).ok());
  }
  Value w2 = *b.VariableRead(2);  // %4
  Value w3 = *b.VariableRead(3);  // %5
  Value gw3 = *b.MatMul(h2, dy, /*transpose_a=*/true);   // %6
  Value dh2 = *b.MatMul(dy, w3, false, /*transpose_b=*/true);  // %7
  Value gw2 = *b.MatMul(h1, dh2, true);                  // %8
  Value dh1 = *b.MatMul(dh2, w2, false, true);           // %9
  Value gw1 = *b.MatMul(h0, dh1, true);                  // %10
  Value ar3 = *b.AllReduce(gw3, runtime::CollectiveReduce::kSum);  // %11
  Value ar2 = *b.AllReduce(gw2, runtime::CollectiveReduce::kSum);  // %12
  Value ar1 = *b.AllReduce(gw1, runtime::CollectiveReduce::kSum);  // %13
  Value lr = *b.Constant(Tensor::Scalar<float>(0.1f));   // %14
  std::vector<Value> outs;
  const Value grads[] = {ar1, ar2, ar3};
  for (int s = 1; s <= 3; ++s) {
    Value w = *b.VariableRead(s);
    outs.push_back(*b.VariableAssign(s, *b.Sub(w, *b.Mul(lr, grads[s - 1]))));
  }
  return *std::move(b).Build(outs);
}

TEST(CompileTest, CollectivesStartWhenReadyAndAreAwaitedAtFirstUse) {
  const Program p = ThreeLayerBackward();
  const CompiledProgram c = Compile(p);
  EXPECT_THAT(Names(c),
              ElementsAre("dot.6", "all_reduce.11.start", "dot.7", "dot.8",
                          "all_reduce.12.start", "dot.9", "dot.10",
                          "all_reduce.13.start", "all_reduce.13.done",
                          "fusion.18", "all_reduce.12.done", "fusion.22",
                          "all_reduce.11.done", "fusion.26"));
  // Layer 3's all-reduce is in flight during the backward of layers 2 and 1.
  const Kernel& start3 = c.kernels[1];
  EXPECT_EQ(start3.kind, CompiledKernelKind::kCollectiveStart);
  EXPECT_EQ(start3.pair, 12);
  EXPECT_EQ(start3.collective, OpCode::kAllReduce);
  EXPECT_EQ(start3.collective_bytes, 16 * 16 * 4);
  EXPECT_THAT(start3.deps, ElementsAre(0));
  EXPECT_EQ(c.kernels[12].pair, 1);
  EXPECT_THAT(c.kernels[12].deps, ElementsAre(1));
  // The update reads the done's value, w and lr; writes w in place.
  const Kernel& upd3 = c.kernels[13];
  EXPECT_THAT(upd3.op_ids, ElementsAre(24, 25, 26));  // %23 is w3's read
  EXPECT_THAT(upd3.deps, ElementsAre(12));
  EXPECT_EQ(upd3.hbm_read_bytes, 1024 + 1024 + 4);
  EXPECT_EQ(upd3.hbm_write_bytes, 1024);
  for (size_t k = 0; k < c.kernels.size(); ++k) {
    for (int d : c.kernels[k].deps) EXPECT_LT(d, static_cast<int>(k));
  }
  EXPECT_EQ(c.kernel_of_op[11], 12);  // the value is the done's
}

// A deep bf16 MLP's training step (the issue-9 benchmark's shape, smaller
// batch): forward, backward, one all-reduce per weight gradient traced after
// the whole backward pass, then the updates.
TEST(CompileTest, DeepMlpOverlapsEveryLayersAllReduceWithEarlierBackward) {
  constexpr int kLayers = 50;
  constexpr int64_t kWidth = 4096;
  ProgramBuilder b("mlp", /*num_replicas=*/64);
  Value x = *b.Parameter(DType::kBF16, Shape({128, kWidth}));
  Value y = *b.Parameter(DType::kBF16, Shape({128, kWidth}));
  std::vector<Value> w, h = {x};
  for (int l = 0; l < kLayers; ++l) {
    ASSERT_TRUE(b.DeclareVariable(l, DType::kBF16, Shape({kWidth, kWidth})).ok());
    w.push_back(*b.VariableRead(l));
    h.push_back(*b.Relu(*b.MatMul(h.back(), w.back())));
  }
  Value g = *b.Sub(h.back(), y);
  std::vector<Value> grads(kLayers);
  std::vector<int> grad_op(kLayers);
  for (int l = kLayers - 1; l >= 0; --l) {
    Value gz = *b.Mul(g, h[l + 1]);  // stands in for relu's derivative
    grads[l] = *b.MatMul(h[l], gz, /*transpose_a=*/true);
    grad_op[l] = grads[l].id;
    if (l > 0) g = *b.MatMul(gz, w[l], false, /*transpose_b=*/true);
  }
  std::vector<int> ar_op(kLayers);
  for (int l = kLayers - 1; l >= 0; --l) {
    grads[l] = *b.AllReduce(grads[l], runtime::CollectiveReduce::kSum);
    ar_op[l] = grads[l].id;
  }
  Value lr = *b.Constant(Tensor::Scalar<float>(0.1f));
  lr = *b.Cast(lr, DType::kBF16);
  std::vector<Value> outs;
  for (int l = 0; l < kLayers; ++l) {
    Value wl = *b.VariableRead(l);
    outs.push_back(*b.VariableAssign(l, *b.Sub(wl, *b.Mul(lr, grads[l]))));
  }
  const Program p = *std::move(b).Build(outs);
  const auto t0 = std::chrono::steady_clock::now();
  const CompiledProgram c = Compile(p);
  const double ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
  RecordProperty("compile_ms", std::to_string(ms));
  std::vector<int> at(c.kernels.size());
  auto index_of = [&](int op, CompiledKernelKind kind) {
    for (size_t k = 0; k < c.kernels.size(); ++k) {
      const Kernel& kk = c.kernels[k];
      if (kk.kind == kind && kk.op_ids.back() == op) return static_cast<int>(k);
    }
    return -1;
  };
  for (int l = 1; l < kLayers; ++l) {
    const int start = index_of(ar_op[l], CompiledKernelKind::kCollectiveStart);
    const int done = index_of(ar_op[l], CompiledKernelKind::kCollectiveDone);
    const int earlier = c.kernel_of_op[grad_op[l - 1]];
    ASSERT_GE(start, 0);
    // Started right after its gradient, awaited after the earlier layer's.
    EXPECT_EQ(start, c.kernel_of_op[grad_op[l]] + 1) << l;
    EXPECT_LT(start, earlier) << l;
    EXPECT_GT(done, earlier) << l;
    EXPECT_EQ(c.kernels[done + 1].kind, CompiledKernelKind::kVector);  // update
  }
  // Kernels: per layer a forward dot+relu, a gradient dot, a backward dot
  // (not for layer 0), an all-reduce start and done, an update; plus the
  // loss-gradient sub fused into the last layer's backward mul, and the cast.
  int mxu = 0;
  for (const Kernel& k : c.kernels) mxu += k.kind == CompiledKernelKind::kMxu;
  EXPECT_EQ(mxu, 3 * kLayers - 1);
  EXPECT_EQ(c.total_flops(), Compile(p, Unfused()).total_flops());
}

TEST(CompileTest, IndependentWorkTracedLaterRunsWhileTheCollectiveIsInFlight) {
  ProgramBuilder b("hoist", /*num_replicas=*/2);
  Value x = *b.Parameter(DType::kF32, Shape({8, 8}));
  Value g = *b.MatMul(x, x);                                        // %1
  Value ar = *b.AllReduce(g, runtime::CollectiveReduce::kSum);      // %2
  Value use = *b.Neg(ar);                                           // %3
  Value other = *b.MatMul(x, *b.Transpose(x, {1, 0}));              // %4 %5
  const CompiledProgram c = Compile(*std::move(b).Build({use, other}));
  EXPECT_THAT(Names(c), ElementsAre("dot.1", "all_reduce.2.start",
                                    "transpose.4", "dot.5", "all_reduce.2.done",
                                    "neg.3"));
}

TEST(CompileTest, LivenessPeakOfASmallProgram) {
  ProgramBuilder b("live");
  ASSERT_TRUE(b.DeclareVariable(0, DType::kF32, Shape({8}), "w").ok());
  ASSERT_TRUE(b.DeclareVariable(1, DType::kF32, Shape({4}), "w/momentum").ok());
  Value x = *b.Parameter(DType::kF32, Shape({16, 16}));  // 1024 bytes
  Value a = *b.Transpose(x, {1, 0});                      // #0, 1024
  Value t = *b.Transpose(a, {1, 0});                      // #1, 1024
  Value s = *b.ReduceSum(a, {1});                         // #2, 64: a's last use
  Value m = *b.ReduceMax(t, {0});                         // #3, 64: t's last use
  const Program p = *std::move(b).Build({s, m});
  const CompiledProgram c =
      Compile(p, Options(2, {1}));
  ASSERT_EQ(c.memory.size(), 1u);
  const CoreMemory& mem = c.memory[0];
  // #0: a; #1: a t; #2: a t s (a is read here); #3: t s m.
  EXPECT_EQ(mem.live_peak, 1024 + 1024 + 64);
  EXPECT_EQ(mem.peak_kernel, 2);
  EXPECT_THAT(mem.largest_at_peak,
              ElementsAre("transpose %1: f32[16,16], 1.00 KiB",
                          "transpose %2: f32[16,16], 1.00 KiB",
                          "reduce_sum %3: f32[16], 64 B"));
  EXPECT_EQ(mem.variables, 32);
  EXPECT_EQ(mem.optimizer_state, 16);
  EXPECT_EQ(mem.parameters, 1024);
  EXPECT_EQ(mem.infeed, 2048);
  EXPECT_EQ(mem.total(), 32 + 16 + 1024 + 2048 + 2112);
}

TEST(CompileTest, ACollectivesOperandStaysLiveUntilItsDone) {
  ProgramBuilder b("ar", /*num_replicas=*/2);
  Value x = *b.Parameter(DType::kF32, Shape({8, 8}));
  Value e = *b.Exp(x);                                               // 256
  Value r = *b.AllReduce(e, runtime::CollectiveReduce::kSum);        // 256
  Value n = *b.Transpose(x, {1, 0});                                 // 256
  Value y = *b.Add(r, n);                                            // 256
  const CompiledProgram c = Compile(*std::move(b).Build({y}));
  EXPECT_THAT(Names(c), ElementsAre("exp.1", "all_reduce.2.start",
                                    "transpose.3",
                                    "all_reduce.2.done", "add.4"));
  // At the done: e (kept for the collective), r and n.
  EXPECT_EQ(c.memory[0].live_peak, 3 * 256);
  EXPECT_EQ(c.memory[0].peak_kernel, 2);
}

TEST(CompileTest, CrossCoreValuesAreCopied) {
  ProgramBuilder b("mp", /*num_replicas=*/1, /*num_cores_per_replica=*/2);
  Value x = *b.Parameter(DType::kF32, Shape({4, 4}));
  Value e = *b.Exp(x);
  ASSERT_TRUE(b.set_logical_core(1).ok());
  Value n = *b.Neg(e);
  const CompiledProgram c = Compile(*std::move(b).Build({n}));
  EXPECT_THAT(Names(c), ElementsAre("exp.1", "copy.1.to1", "neg.2"));
  EXPECT_EQ(c.kernels[1].kind, CompiledKernelKind::kCopy);
  EXPECT_EQ(c.kernels[1].copy_from_core, 0);
  EXPECT_EQ(c.kernels[1].copy_bytes, 64);
  EXPECT_EQ(c.kernels[1].core, 1);
  EXPECT_THAT(c.kernels[2].deps, ElementsAre(1));
  EXPECT_EQ(c.kernels[2].core, 1);
}

TEST(CompileTest, PrecisionAndConvImplicitGemmShapes) {
  ProgramBuilder b("conv");
  Value in = *b.Parameter(DType::kF32, Shape({2, 8, 8, 3}));
  Value f = *b.Parameter(DType::kF32, Shape({3, 3, 3, 16}));
  Value y = *b.Conv2D(in, f, {1, 1}, runtime::Padding::kValid,
                      runtime::Precision::kHighest);
  Value w = *b.Parameter(DType::kF32, Shape({16, 4}));
  Value z = *b.MatMul(*b.Reshape(y, {2 * 6 * 6, 16}), w, false, false,
                      runtime::Precision::kHigh);
  const CompiledProgram c = Compile(*std::move(b).Build({z}));
  ASSERT_EQ(c.kernels.size(), 2u);
  const MatmulWork& conv = c.kernels[0].work.matmuls.at(0);
  EXPECT_EQ(conv.m, 2 * 6 * 6);
  EXPECT_EQ(conv.k, 3 * 3 * 3);
  EXPECT_EQ(conv.n, 16);
  EXPECT_EQ(conv.precision, Precision::kHighest);
  EXPECT_EQ(c.kernels[1].work.matmuls.at(0).precision, Precision::kHigh);
}

TEST(CompileTest, FusionTextListsTheKernels) {
  const Program p = DotBiasRelu();
  EXPECT_EQ(Compile(p).FusionText(p),
            p.ToText() +
                "kernels (issue order) {\n"
                "  #0 core 0 mxu fusion.5 = {%3 dot, %4 add, %5 relu} reads "
                "2688 writes 1024\n"
                "}\n"
                "hbm core 0: total 6400 = variables 0 + optimizer_state 0 + "
                "parameters 2688 + infeed 2688 + constants 0 + live_peak 1024\n");
}

TEST(CompileTest, BadOptionsAreInvalidArgument) {
  const Program p = DotBiasRelu();
  EXPECT_THAT(CompileProgram(p, Options(-1, {})).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "CompileOptions.infeed_depth -1 must be >= 0"));
  EXPECT_THAT(CompileProgram(p, Options(1, {7})).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "CompileOptions.optimizer_state_slots: slot 7 is not a "
                       "variable of program dense"));
}

// Property: over random programs, fusion never changes FLOPs or
// transcendentals and never increases HBM bytes; the issue order is a valid
// topological order; every op with device work has a kernel.
TEST(CompileTest, FusionKeepsFlopsAndNeverAddsHbmBytesOnRandomPrograms) {
  std::mt19937_64 rng(20261204);
  int fused_something = 0;
  int recomputed_something = 0;
  for (int trial = 0; trial < 300; ++trial) {
    ProgramBuilder b("random", /*num_replicas=*/2, /*num_cores_per_replica=*/2);
    std::vector<Value> vals;
    vals.push_back(*b.Parameter(DType::kF32, Shape({8, 8})));
    vals.push_back(*b.Parameter(DType::kF32, Shape({8, 8})));
    Value filter = *b.Parameter(DType::kF32, Shape({3, 3, 1, 1}));
    ASSERT_TRUE(b.DeclareVariable(0, DType::kF32, Shape({8, 8})).ok());
    const int n = 4 + static_cast<int>(rng() % 24);
    for (int i = 0; i < n; ++i) {
      if (rng() % 5 == 0) {
        ASSERT_TRUE(b.set_logical_core(rng() % 2).ok());
      }
      Value a = vals[rng() % vals.size()];
      Value c = vals[rng() % vals.size()];
      switch (rng() % 20) {
        case 0: vals.push_back(*b.MatMul(a, c)); break;
        case 1: vals.push_back(*b.Add(a, c)); break;
        case 2: vals.push_back(*b.Exp(a)); break;
        case 3: vals.push_back(*b.Mul(a, c)); break;
        case 4: vals.push_back(*b.Transpose(a, {1, 0})); break;
        case 5:
          vals.push_back(*b.AllReduce(a, runtime::CollectiveReduce::kSum));
          break;
        case 6: vals.push_back(*b.Reshape(*b.Relu(a), {8, 8})); break;
        case 7:
          vals.push_back(*b.Broadcast(*b.ReduceSum(a, {0}, true), {8, 8}));
          break;
        case 8: vals.push_back(*b.Softmax(a)); break;
        case 9:
          vals.push_back(
              *b.Slice(*b.Concat({a, c}, 0), {4, 0}, {12, 8}));
          break;
        case 10:
          vals.push_back(*b.Cast(*b.Cast(a, DType::kBF16), DType::kF32));
          break;
        case 11: vals.push_back(*b.VariableAssign(0, a)); break;
        case 12: vals.push_back(*b.Sub(*b.VariableRead(0), a)); break;
        case 13:
          vals.push_back(*b.Reshape(
              *b.Conv2D(*b.Reshape(a, {1, 8, 8, 1}), filter, {1, 1},
                        runtime::Padding::kSame),
              {8, 8}));
          break;
        case 14:
          vals.push_back(*b.Broadcast(*b.ReduceMax(a, {1}, true), {8, 8}));
          break;
        case 15:
          vals.push_back(*b.Slice(*b.AllGather(a, 0), {0, 0}, {8, 8}));
          break;
        case 16: {
          // Batch-norm-like: a - mean(a) feeds a reduction and an output
          // (recomputed in both).
          Value xc = *b.Sub(a, *b.ReduceMean(a, {0}, true));
          Value var = *b.ReduceMean(*b.Mul(xc, xc), {0}, true);
          vals.push_back(*b.Mul(xc, var));
          break;
        }
        case 17:
          vals.push_back(
              *b.Select(*b.Compare(a, c, runtime::Comparison::kGt), a, c));
          break;
        case 18:
          vals.push_back(*b.Mul(a, *b.Constant(Tensor::Scalar<float>(2.0f))));
          break;
        default: vals.push_back(*b.Tanh(a)); break;
      }
    }
    std::vector<Value> outs = {vals.back(), vals[vals.size() / 2]};
    const Program p = *std::move(b).Build(outs);
    const CompiledProgram f = Compile(p);
    const CompiledProgram u = Compile(p, Unfused());
    int64_t recomputed = 0;
    for (const Kernel& k : f.kernels) recomputed += k.recomputed_flops;
    for (const Kernel& k : u.kernels) ASSERT_EQ(k.recomputed_flops, 0);
    ASSERT_EQ(f.total_flops() - recomputed, u.total_flops()) << p.ToText();
    if (recomputed > 0) ++recomputed_something;
    ASSERT_EQ(
        u.total_flops(),
        p.TotalCost().flops - [&] {  // collectives are not kernels' FLOPs
          int64_t t = 0;
          for (int i = 0; i < (int)p.ops().size(); ++i)
            if (runtime::IsCollective(p.ops()[i].code))
              t += p.CostOf(Value{i}).flops;
          return t;
        }());
    ASSERT_LE(f.total_hbm_bytes(), u.total_hbm_bytes()) << p.ToText();
    ASSERT_LE(f.kernels.size(), u.kernels.size());
    if (f.kernels.size() < u.kernels.size()) ++fused_something;
    for (const CompiledProgram* c : {&f, &u}) {
      const std::vector<Kernel>& ks = c->kernels;
      auto eager = [&](int k) {
        return ks[k].kind == CompiledKernelKind::kCollectiveStart ||
               ks[k].kind == CompiledKernelKind::kCopy;
      };
      for (size_t k = 0; k < ks.size(); ++k) {
        for (int d : ks[k].deps) ASSERT_LT(d, static_cast<int>(k));
        if (eager(k) && !ks[k].deps.empty()) {
          // Issued as soon as ready: only other eager kernels sit between
          // it and the kernel it waits for.
          for (int j = ks[k].deps.back() + 1; j < static_cast<int>(k); ++j) {
            ASSERT_TRUE(eager(j)) << k << "\n" << c->FusionText(p);
          }
        }
        if (ks[k].kind == CompiledKernelKind::kCollectiveDone) {
          // Right before its first consumer: only dones and eager kernels
          // in between.
          int first = -1;
          for (size_t j = k + 1; j < ks.size() && first < 0; ++j) {
            for (int d : ks[j].deps) {
              if (d == static_cast<int>(k)) first = static_cast<int>(j);
            }
          }
          for (int j = k + 1; first >= 0 && j < first; ++j) {
            ASSERT_TRUE(eager(j) ||
                        ks[j].kind == CompiledKernelKind::kCollectiveDone)
                << k << "\n" << c->FusionText(p);
          }
        }
      }
      for (size_t i = 0; i < p.ops().size(); ++i) {
        const OpCode code = p.ops()[i].code;
        if (code != OpCode::kParameter && code != OpCode::kReshape &&
            code != OpCode::kVariableRead && code != OpCode::kConstant) {
          ASSERT_GE(c->kernel_of_op[i], 0) << i << "\n" << p.ToText();
        }
      }
      ASSERT_GE(c->memory[0].live_peak, 0);
    }
    // Deterministic: compiling again gives the same text.
    ASSERT_EQ(f.FusionText(p), Compile(p).FusionText(p));
  }
  EXPECT_GT(fused_something, 150);
  EXPECT_GT(recomputed_something, 100);  // 167 of 300 with this seed
}

}  // namespace
}  // namespace tpusim::sim
