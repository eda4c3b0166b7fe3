#include "strategy/runtime/kernels.h"

#include <cmath>
#include <limits>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatEq;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

// Runs `code` through its shape rule and host kernel.
absl::StatusOr<Tensor> Eval(OpCode code, const OpAttrs& attrs,
                            std::vector<Tensor> operands) {
  std::vector<ValueType> types;
  for (const Tensor& t : operands) types.push_back(ValueType::Of(t));
  std::vector<const ValueType*> tptrs;
  for (const ValueType& t : types) tptrs.push_back(&t);
  TPUSIM_ASSIGN_OR_RETURN(ValueType result,
                          InferOpType(code, attrs, tptrs, InferContext{1}));
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : operands) ptrs.push_back(&t);
  return RunKernel(code, attrs, ptrs, result, /*replica_id=*/0);
}

std::vector<float> F(const Tensor& t) {
  auto v = t.values<float>();
  return std::vector<float>(v.begin(), v.end());
}

Tensor F32(std::vector<int64_t> dims, std::vector<float> v) {
  return Tensor::FromVector<float>(Shape(std::move(dims)), std::move(v));
}

TEST(KernelsTest, AddBroadcastsRowVector) {
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kAdd, {},
           {F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({3}, {10, 20, 30})});
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(y->shape(), Shape({2, 3}));
  EXPECT_THAT(F(*y), ElementsAre(11, 22, 33, 14, 25, 36));
}

TEST(KernelsTest, MulBroadcastsColumnAgainstRow) {
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kMul, {}, {F32({2, 1}, {2, 3}), F32({1, 3}, {1, 10, 100})});
  ASSERT_THAT(y, IsOk());
  EXPECT_THAT(F(*y), ElementsAre(2, 20, 200, 3, 30, 300));
}

TEST(KernelsTest, IntegerDivTruncatesAndDivByZeroIsAnError) {
  Tensor a = Tensor::Vector<int32_t>({-7, 7, 9});
  Tensor b = Tensor::Vector<int32_t>({2, -2, 3});
  absl::StatusOr<Tensor> q = Eval(OpCode::kDiv, {}, {a, b});
  ASSERT_THAT(q, IsOk());
  EXPECT_THAT(q->values<int32_t>(), ElementsAre(-3, -3, 3));
  EXPECT_THAT(Eval(OpCode::kDiv, {}, {a, Tensor::Vector<int32_t>({1, 0, 1})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("div: integer division by zero")));
}

TEST(KernelsTest, IntegerAddWraps) {
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kAdd, {},
           {Tensor::Scalar<int32_t>(std::numeric_limits<int32_t>::max()),
            Tensor::Scalar<int32_t>(1)});
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(y->scalar<int32_t>(), std::numeric_limits<int32_t>::min());
}

TEST(KernelsTest, MaxPropagatesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kMax, {}, {F32({3}, {1, nan, 5}), F32({3}, {2, 0, nan})});
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(F(*y)[0], 2);
  EXPECT_TRUE(std::isnan(F(*y)[1]));
  EXPECT_TRUE(std::isnan(F(*y)[2]));
}

TEST(KernelsTest, UnaryOpsComputeInOperandPrecision) {
  absl::StatusOr<Tensor> r = Eval(OpCode::kRelu, {}, {F32({3}, {-1, 0, 2.5})});
  EXPECT_THAT(F(*r), ElementsAre(0, 0, 2.5));
  absl::StatusOr<Tensor> s = Eval(OpCode::kSigmoid, {}, {F32({1}, {0})});
  EXPECT_THAT(F(*s), ElementsAre(0.5f));
  absl::StatusOr<Tensor> q = Eval(OpCode::kRsqrt, {}, {F32({2}, {4, 0.25})});
  EXPECT_THAT(F(*q), ElementsAre(0.5f, 2.0f));
  absl::StatusOr<Tensor> e = Eval(OpCode::kExp, {}, {F32({1}, {1})});
  EXPECT_EQ(F(*e)[0], std::exp(1.0f));
  absl::StatusOr<Tensor> l = Eval(OpCode::kLog, {}, {F32({1}, {0})});
  EXPECT_EQ(F(*l)[0], -std::numeric_limits<float>::infinity());
  absl::StatusOr<Tensor> t = Eval(OpCode::kTanh, {}, {F32({1}, {0})});
  EXPECT_EQ(F(*t)[0], 0.0f);
  absl::StatusOr<Tensor> n =
      Eval(OpCode::kNeg, {}, {Tensor::Vector<int64_t>({3, -4})});
  EXPECT_THAT(n->values<int64_t>(), ElementsAre(-3, 4));
}

TEST(KernelsTest, SqrtMinAndSubCompute) {
  EXPECT_THAT(F(*Eval(OpCode::kSqrt, {}, {F32({2}, {9, 0.25})})),
              ElementsAre(3, 0.5));
  EXPECT_THAT(F(*Eval(OpCode::kMin, {}, {F32({3}, {1, 5, -2}), F32({}, {2})})),
              ElementsAre(1, 2, -2));
  EXPECT_THAT(F(*Eval(OpCode::kSub, {}, {F32({2}, {1, 5}), F32({2}, {3, 3})})),
              ElementsAre(-2, 2));
  absl::StatusOr<Tensor> d =
      Eval(OpCode::kDiv, {}, {F32({2}, {1, -1}), F32({}, {0})});
  EXPECT_EQ(F(*d)[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(F(*d)[1], -std::numeric_limits<float>::infinity());
}

TEST(KernelsTest, Bfloat16AddRoundsResultToNearestEven) {
  auto bf = [](float x) {
    return Tensor::Scalar<BFloat16>(BFloat16::FromFloat(x));
  };
  // 1 + 2^-8 computed in f32 is exact, then rounds (tie) to 1.0 in bf16.
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kAdd, {}, {bf(1.0f), bf(0.00390625f)});
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(y->scalar<BFloat16>().ToFloat(), 1.0f);
  // 1.0078125 + 2^-8 = 1.01171875 is a tie between 1.0078125 (odd) and 1.015625
  // (even).
  absl::StatusOr<Tensor> z =
      Eval(OpCode::kAdd, {}, {bf(1.0078125f), bf(0.00390625f)});
  EXPECT_EQ(z->scalar<BFloat16>().ToFloat(), 1.015625f);
}

TEST(KernelsTest, CastRoundsToBfloat16NearestEven) {
  OpAttrs a;
  a.dtype = DType::kBF16;
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even wins (1.0). 1 + 3*2^-8
  // rounds up to 1+2^-6.
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kCast, a, {F32({2}, {1.00390625f, 1.01171875f})});
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(y->values<BFloat16>()[0].ToFloat(), 1.0f);
  EXPECT_EQ(y->values<BFloat16>()[1].ToFloat(), 1.015625f);
}

TEST(KernelsTest, Bfloat16MatmulAccumulatesInF32ThenRounds) {
  auto bf = [](std::vector<float> v, std::vector<int64_t> dims) {
    std::vector<BFloat16> b;
    for (float x : v) b.push_back(BFloat16::FromFloat(x));
    return Tensor::FromVector<BFloat16>(Shape(std::move(dims)), std::move(b));
  };
  OpAttrs a;
  a.dot.lhs_contracting = {1};
  a.dot.rhs_contracting = {0};
  // Row 0: 1 + 2^-8 (exact in f32) is a tie -> rounds to even 1.0.
  // Row 1: 1 + 2^-8 + 2^-9 is above the tie -> 1 + 2^-7. Rounding each partial
  // sum to bf16 would give 1.0 for both, so this shows the f32 accumulator.
  Tensor lhs = bf({1, 1, 0, 1, 1, 1}, {2, 3});
  Tensor rhs = bf({1, 0.00390625f, 0.001953125f}, {3, 1});
  absl::StatusOr<Tensor> y = Eval(OpCode::kDot, a, {lhs, rhs});
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(y->values<BFloat16>()[0].ToFloat(), 1.0f);
  EXPECT_EQ(y->values<BFloat16>()[1].ToFloat(), 1.0078125f);
}

TEST(KernelsTest, MatmulWithBatchDims) {
  OpAttrs a;
  a.dot.lhs_batch = {0};
  a.dot.rhs_batch = {0};
  a.dot.lhs_contracting = {2};
  a.dot.rhs_contracting = {1};
  // batch 0: [[1,2],[3,4]] x [[1,0],[0,1]] ; batch 1: [[1,1],[1,1]] x
  // [[2,3],[4,5]]
  Tensor lhs = F32({2, 2, 2}, {1, 2, 3, 4, 1, 1, 1, 1});
  Tensor rhs = F32({2, 2, 2}, {1, 0, 0, 1, 2, 3, 4, 5});
  absl::StatusOr<Tensor> y = Eval(OpCode::kDot, a, {lhs, rhs});
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(y->shape(), Shape({2, 2, 2}));
  EXPECT_THAT(F(*y), ElementsAre(1, 2, 3, 4, 6, 8, 6, 8));
}

TEST(KernelsTest, MatmulWithTransposedOperands) {
  // a^T x b^T where a = [[1,2],[3,4],[5,6]] (3x2) and b = [[1,0,1],[0,1,1]]
  // (2x3): a^T = [[1,3,5],[2,4,6]], b^T = [[1,0],[0,1],[1,1]] ->
  // [[6,8],[8,10]].
  OpAttrs a;
  a.dot.lhs_contracting = {0};
  a.dot.rhs_contracting = {1};
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kDot, a,
           {F32({3, 2}, {1, 2, 3, 4, 5, 6}), F32({2, 3}, {1, 0, 1, 0, 1, 1})});
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(y->shape(), Shape({2, 2}));
  EXPECT_THAT(F(*y), ElementsAre(6, 8, 8, 10));
}

TEST(KernelsTest, IntegerMatmulIsExact) {
  OpAttrs a;
  a.dot.lhs_contracting = {1};
  a.dot.rhs_contracting = {0};
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kDot, a,
           {Tensor::FromVector<int64_t>(Shape({1, 2}), {3000000000, 2}),
            Tensor::FromVector<int64_t>(Shape({2, 1}), {3, 5})});
  ASSERT_THAT(y, IsOk());
  EXPECT_THAT(y->values<int64_t>(), ElementsAre(9000000010));
}

TEST(KernelsTest, Conv2DValidStrideOne) {
  // 1x3x3x1 input 1..9, 2x2x1x1 filter of ones -> 2x2 sums of windows.
  OpAttrs a;
  a.padding = Padding::kValid;
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kConv2D, a,
           {F32({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
            F32({2, 2, 1, 1}, {1, 1, 1, 1})});
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(y->shape(), Shape({1, 2, 2, 1}));
  EXPECT_THAT(F(*y), ElementsAre(12, 16, 24, 28));
}

TEST(KernelsTest, Conv2DSameStrideTwoPadsAfter) {
  // 4x4 input 1..16, 3x3 ones filter, stride 2, SAME: out 2x2, pad_total = 1 ->
  // pad 0 before, 1 after. Windows rows {0,1,2},{2,3}, cols likewise.
  OpAttrs a;
  a.padding = Padding::kSame;
  a.window_strides = {2, 2};
  std::vector<float> in(16);
  for (int i = 0; i < 16; ++i) in[i] = static_cast<float>(i + 1);
  absl::StatusOr<Tensor> y = Eval(
      OpCode::kConv2D, a,
      {F32({1, 4, 4, 1}, in), F32({3, 3, 1, 1}, std::vector<float>(9, 1))});
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(y->shape(), Shape({1, 2, 2, 1}));
  // (0,0): rows 0-2, cols 0-2: 1+2+3+5+6+7+9+10+11 = 54
  // (0,1): rows 0-2, cols 2-3: 3+4+7+8+11+12 = 45
  // (1,0): rows 2-3, cols 0-2: 9+10+11+13+14+15 = 72
  // (1,1): rows 2-3, cols 2-3: 11+12+15+16 = 54
  EXPECT_THAT(F(*y), ElementsAre(54, 45, 72, 54));
}

TEST(KernelsTest, Conv2DSameStrideOneWithChannels) {
  // 1x2x2x2 input, 1x1 filter mixing channels: out[c] = in0*w[0][c] +
  // in1*w[1][c].
  OpAttrs a;
  a.padding = Padding::kSame;
  absl::StatusOr<Tensor> y = Eval(OpCode::kConv2D, a,
                                  {F32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                                   F32({1, 1, 2, 1}, {10, 1})});
  ASSERT_THAT(y, IsOk());
  EXPECT_THAT(F(*y), ElementsAre(12, 34, 56, 78));
}

TEST(KernelsTest, MaxPoolSameStrideTwoIgnoresPadding) {
  // 1x3x3x1 input -1..-9 (all negative so zero padding would win if counted);
  // 2x2 window, stride 2, SAME: out 2x2, pad 0 before and 1 after.
  OpAttrs a;
  a.window = {2, 2};
  a.window_strides = {2, 2};
  a.padding = Padding::kSame;
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kMaxPool2D, a,
           {F32({1, 3, 3, 1}, {-1, -2, -3, -4, -5, -6, -7, -8, -9})});
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(y->shape(), Shape({1, 2, 2, 1}));
  EXPECT_THAT(F(*y), ElementsAre(-1, -3, -7, -9));
  a.padding = Padding::kValid;
  a.window_strides = {1, 1};
  absl::StatusOr<Tensor> v = Eval(
      OpCode::kMaxPool2D, a, {F32({1, 3, 3, 1}, {1, 5, 2, 4, 3, 9, 0, 7, 6})});
  EXPECT_THAT(F(*v), ElementsAre(5, 9, 7, 9));
}

TEST(KernelsTest, ReduceOverAxes) {
  Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  OpAttrs a;
  a.axes = {0};
  EXPECT_THAT(F(*Eval(OpCode::kReduceSum, a, {x})), ElementsAre(5, 7, 9));
  a.axes = {1};
  a.keepdims = true;
  absl::StatusOr<Tensor> m = Eval(OpCode::kReduceMean, a, {x});
  EXPECT_EQ(m->shape(), Shape({2, 1}));
  EXPECT_THAT(F(*m), ElementsAre(2, 5));
  a.axes = {0, 1};
  a.keepdims = false;
  EXPECT_THAT(F(*Eval(OpCode::kReduceMax, a, {x})), ElementsAre(6));
  a.axes = {};
  EXPECT_THAT(F(*Eval(OpCode::kReduceSum, a, {x})),
              ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(KernelsTest, IntegerReduceMeanTruncates) {
  OpAttrs a;
  a.axes = {0};
  absl::StatusOr<Tensor> m =
      Eval(OpCode::kReduceMean, a, {Tensor::Vector<int32_t>({1, 2, 2})});
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->scalar<int32_t>(), 1);
}

TEST(KernelsTest, SoftmaxOverLastAxis) {
  const float ln3 = std::log(3.0f);
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kSoftmax, {}, {F32({2, 2}, {0, ln3, 5, 5})});
  ASSERT_THAT(y, IsOk());
  EXPECT_THAT(F(*y), ElementsAre(FloatEq(0.25f), FloatEq(0.75f), 0.5f, 0.5f));
  // Large values do not overflow (max is subtracted first).
  absl::StatusOr<Tensor> big =
      Eval(OpCode::kSoftmax, {}, {F32({2}, {1000, 1000})});
  EXPECT_THAT(F(*big), ElementsAre(0.5f, 0.5f));
}

TEST(KernelsTest, TransposeBroadcastSliceConcat) {
  OpAttrs t;
  t.permutation = {1, 0};
  EXPECT_THAT(
      F(*Eval(OpCode::kTranspose, t, {F32({2, 3}, {1, 2, 3, 4, 5, 6})})),
      ElementsAre(1, 4, 2, 5, 3, 6));
  OpAttrs b;
  b.shape = {2, 3};
  EXPECT_THAT(F(*Eval(OpCode::kBroadcast, b, {F32({2, 1}, {7, 8})})),
              ElementsAre(7, 7, 7, 8, 8, 8));
  OpAttrs s;
  s.start = {0, 1};
  s.limit = {2, 5};
  s.strides = {1, 2};
  EXPECT_THAT(F(*Eval(OpCode::kSlice, s,
                      {F32({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})})),
              ElementsAre(1, 3, 6, 8));
  OpAttrs c;
  c.axis = 1;
  absl::StatusOr<Tensor> cat = Eval(
      OpCode::kConcat, c, {F32({2, 1}, {1, 2}), F32({2, 2}, {3, 4, 5, 6})});
  EXPECT_EQ(cat->shape(), Shape({2, 3}));
  EXPECT_THAT(F(*cat), ElementsAre(1, 3, 4, 2, 5, 6));
}

TEST(KernelsTest, ReshapeKeepsDataOrder) {
  OpAttrs a;
  a.shape = {3, -1};
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kReshape, a, {F32({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(y->shape(), Shape({3, 2}));
  EXPECT_THAT(F(*y), ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(KernelsTest, GatherAlongAxes) {
  Tensor params = F32({3, 2}, {10, 11, 20, 21, 30, 31});
  OpAttrs a;
  a.axis = 0;
  absl::StatusOr<Tensor> rows =
      Eval(OpCode::kGather, a, {params, Tensor::Vector<int32_t>({2, 0, 2})});
  ASSERT_THAT(rows, IsOk());
  EXPECT_EQ(rows->shape(), Shape({3, 2}));
  EXPECT_THAT(F(*rows), ElementsAre(30, 31, 10, 11, 30, 31));
  a.axis = 1;
  absl::StatusOr<Tensor> cols =
      Eval(OpCode::kGather, a, {params, Tensor::Vector<int64_t>({1})});
  EXPECT_EQ(cols->shape(), Shape({3, 1}));
  EXPECT_THAT(F(*cols), ElementsAre(11, 21, 31));
  a.axis = 0;
  EXPECT_THAT(Eval(OpCode::kGather, a, {params, Tensor::Vector<int32_t>({3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("gather: index 3 (element 0 of indices) is "
                                 "out of range [0, 3)")));
}

TEST(KernelsTest, OneHotWithOnOffValuesAndOutOfRangeRow) {
  OpAttrs a;
  a.depth = 3;
  a.dtype = DType::kF32;
  a.on_value = 5;
  a.off_value = -1;
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kOneHot, a, {Tensor::Vector<int32_t>({0, 2, 7})});
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(y->shape(), Shape({3, 3}));
  EXPECT_THAT(F(*y), ElementsAre(5, -1, -1, -1, -1, 5, -1, -1, -1));
}

TEST(KernelsTest, Float64AndInt64ComputeInTheirOwnPrecision) {
  OpAttrs a;
  a.axes = {0};
  // 0.1 + 0.2 + 0.3 in double is 0.6000000000000001; the mean divides by 3.
  absl::StatusOr<Tensor> m =
      Eval(OpCode::kReduceMean, a, {Tensor::Vector<double>({0.1, 0.2, 0.3})});
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->scalar<double>(), (0.1 + 0.2 + 0.3) / 3.0);
  absl::StatusOr<Tensor> s =
      Eval(OpCode::kReduceSum, a,
           {Tensor::Vector<int64_t>({int64_t{1} << 40, 1, -3})});
  EXPECT_EQ(s->scalar<int64_t>(), (int64_t{1} << 40) - 2);
}

TEST(KernelsTest, Bfloat16ReduceSumAccumulatesInF32) {
  // 256 + 1 + 1: bf16 cannot hold 257 (rounds to 256), but the f32 accumulator
  // reaches 258 exactly, which bf16 can hold.
  std::vector<BFloat16> v = {BFloat16::FromFloat(256), BFloat16::FromFloat(1),
                             BFloat16::FromFloat(1)};
  OpAttrs a;
  a.axes = {0};
  absl::StatusOr<Tensor> s = Eval(
      OpCode::kReduceSum, a, {Tensor::FromVector<BFloat16>(Shape({3}), v)});
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->scalar<BFloat16>().ToFloat(), 258.0f);
}

TEST(KernelsTest, DataMovementOpsMoveStrings) {
  Tensor words =
      Tensor::FromVector<std::string>(Shape({2, 2}), {"a", "b", "c", "d"});
  OpAttrs t;
  t.permutation = {1, 0};
  absl::StatusOr<Tensor> y = Eval(OpCode::kTranspose, t, {words});
  ASSERT_THAT(y, IsOk());
  EXPECT_THAT(y->values<std::string>(), ElementsAre("a", "c", "b", "d"));
  OpAttrs g;
  absl::StatusOr<Tensor> row =
      Eval(OpCode::kGather, g, {words, Tensor::Vector<int32_t>({1})});
  EXPECT_THAT(row->values<std::string>(), ElementsAre("c", "d"));
}

TEST(KernelsTest, AbstractOperandsGiveAbstractResult) {
  absl::StatusOr<Tensor> y =
      Eval(OpCode::kAdd, {},
           {Tensor::Abstract(DType::kF32, Shape({2, 3})), F32({3}, {1, 2, 3})});
  ASSERT_THAT(y, IsOk());
  EXPECT_FALSE(y->has_data());
  EXPECT_EQ(y->shape(), Shape({2, 3}));
}

TEST(KernelsTest, AllReduceMeanScalesThenSumsInGroupOrder) {
  Tensor a = F32({2}, {1, 2});
  Tensor b = F32({2}, {3, 6});
  OpAttrs attrs;
  attrs.reduce = CollectiveReduce::kMean;
  std::vector<ValueType> types(2, ValueType::Of(a));
  absl::StatusOr<std::vector<Tensor>> out =
      RunCollective(OpCode::kAllReduce, attrs, {&a, &b}, types);
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(F((*out)[0]), ElementsAre(2, 4));
  EXPECT_THAT(F((*out)[1]), ElementsAre(2, 4));
}

TEST(KernelsTest, CollectiveRejectsMismatchedMemberShapes) {
  Tensor a = F32({2}, {1, 2});
  Tensor b = F32({3}, {1, 2, 3});
  std::vector<ValueType> types = {ValueType::Of(a), ValueType::Of(b)};
  EXPECT_THAT(
      RunCollective(OpCode::kAllReduce, {}, {&a, &b}, types),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("different operand shapes: float32[2], float32[3]")));
}

}  // namespace
}  // namespace tpusim::runtime
