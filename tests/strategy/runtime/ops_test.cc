#include "strategy/runtime/ops.h"

#include <limits>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

ValueType F32(std::vector<int64_t> dims, uint64_t dyn = 0) {
  return ValueType(DType::kF32, Shape(std::move(dims)), dyn);
}
ValueType I32(std::vector<int64_t> dims, uint64_t dyn = 0) {
  return ValueType(DType::kI32, Shape(std::move(dims)), dyn);
}

absl::StatusOr<ValueType> Infer(OpCode code, const OpAttrs& attrs,
                                std::vector<ValueType> operands,
                                int num_replicas = 1) {
  std::vector<const ValueType*> ptrs;
  for (const ValueType& t : operands) ptrs.push_back(&t);
  return InferOpType(code, attrs, ptrs, InferContext{num_replicas});
}

OpCost Cost(OpCode code, const OpAttrs& attrs, std::vector<ValueType> operands,
            int num_replicas = 1) {
  std::vector<const ValueType*> ptrs;
  for (const ValueType& t : operands) ptrs.push_back(&t);
  absl::StatusOr<ValueType> result =
      InferOpType(code, attrs, ptrs, InferContext{num_replicas});
  EXPECT_THAT(result, IsOk());
  return OpCostOf(code, attrs, ptrs, *result, InferContext{num_replicas});
}

TEST(OpsTest, OpNamesRoundTripAndUnknownNameIsNamed) {
  for (int i = 0; i < kNumOpCodes; ++i) {
    const OpCode code = static_cast<OpCode>(i);
    absl::StatusOr<OpCode> back = OpCodeFromName(OpCodeName(code));
    ASSERT_THAT(back, IsOk());
    EXPECT_EQ(*back, code);
  }
  EXPECT_THAT(OpCodeFromName("fft"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown op \"fft\"")));
}

TEST(OpsTest, ValueTypePrintsDynamicDimsWithBound) {
  EXPECT_EQ(F32({8, 4}, 0b1).ToString(), "f32[<=8,4]");
  EXPECT_EQ(I32({}).ToString(), "i32[]");
  EXPECT_EQ(ValueType(DType::kBF16, Shape({2})).byte_size(), 4);
}

TEST(OpsTest, ParameterChecksDynamicMaskAgainstRank) {
  OpAttrs a;
  a.declared_type = F32({4}, 0b10);
  EXPECT_THAT(
      Infer(OpCode::kParameter, a, {}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("parameter()"), HasSubstr("beyond rank 1"))));
  a.declared_type = F32({4}, 0b1);
  EXPECT_EQ(*Infer(OpCode::kParameter, a, {}), F32({4}, 0b1));
}

TEST(OpsTest, HugeShapesAreRejectedNotOverflowed) {
  OpAttrs a;
  a.declared_type = F32({int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_THAT(Infer(OpCode::kParameter, a, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("has more than 2^52 elements")));
}

TEST(OpsTest, ReshapeTargetWhoseProductOverflowsIsRejected) {
  // Regression (tests/fuzz/regressions/program/reshape_shape_overflow).
  OpAttrs a;
  a.shape = {3, int64_t{1} << 62};
  EXPECT_THAT(Infer(OpCode::kReshape, a, {I32({2, 6})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shape={3,4611686018427387904} has more than "
                                 "2^63-1 elements")));
}

TEST(OpsTest, ReplicaIdIsInt32Scalar) {
  EXPECT_EQ(*Infer(OpCode::kReplicaId, {}, {}), I32({}));
  EXPECT_THAT(Infer(OpCode::kReplicaId, {}, {F32({1})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("takes 0 operand(s)")));
}

TEST(OpsTest, VariableAssignRequiresExactType) {
  OpAttrs a;
  a.variable_slot = 3;
  a.declared_type = F32({2, 2});
  EXPECT_EQ(*Infer(OpCode::kVariableAssign, a, {F32({2, 2})}), F32({2, 2}));
  EXPECT_THAT(Infer(OpCode::kVariableAssignAdd, a, {F32({2})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("variable_assign_add(f32[2])"),
                             HasSubstr("variable slot 3 of type f32[2,2]"))));
}

TEST(OpsTest, UnaryOpsNeedFloatingExceptNegReluCast) {
  EXPECT_EQ(*Infer(OpCode::kExp, {}, {F32({3})}), F32({3}));
  EXPECT_EQ(*Infer(OpCode::kRelu, {}, {I32({3})}), I32({3}));
  EXPECT_EQ(*Infer(OpCode::kNeg, {}, {I32({3})}), I32({3}));
  EXPECT_THAT(
      Infer(OpCode::kLog, {}, {I32({3})}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("log(i32[3])"), HasSubstr("floating point"))));
  OpAttrs cast;
  cast.dtype = DType::kBF16;
  EXPECT_EQ(*Infer(OpCode::kCast, cast, {I32({2}, 0b1)}),
            ValueType(DType::kBF16, Shape({2}), 0b1));
  EXPECT_THAT(
      Infer(OpCode::kTanh, {}, {ValueType(DType::kBytes, Shape({1}))}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("numeric")));
}

TEST(OpsTest, BinaryOpsBroadcastNumpyStyle) {
  EXPECT_EQ(*Infer(OpCode::kAdd, {}, {F32({2, 3}), F32({3})}), F32({2, 3}));
  EXPECT_EQ(*Infer(OpCode::kMul, {}, {F32({2, 1}), F32({1, 4})}), F32({2, 4}));
  EXPECT_EQ(*Infer(OpCode::kSub, {}, {F32({}), F32({5})}), F32({5}));
  EXPECT_THAT(
      Infer(OpCode::kAdd, {}, {F32({2, 3}), F32({2})}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("add(f32[2,3], f32[2])"),
                     HasSubstr(
                         "not broadcast-compatible at dimension 1 (3 vs 2)"))));
  EXPECT_THAT(Infer(OpCode::kDiv, {}, {F32({2}), I32({2})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("dtypes must be equal")));
}

TEST(OpsTest, BinaryOpsPropagateDynamicDims) {
  EXPECT_EQ(*Infer(OpCode::kAdd, {}, {F32({8, 3}, 0b1), F32({3})}),
            F32({8, 3}, 0b1));
  EXPECT_EQ(*Infer(OpCode::kAdd, {}, {F32({8, 3}, 0b1), F32({8, 3}, 0b1)}),
            F32({8, 3}, 0b1));
  EXPECT_THAT(Infer(OpCode::kAdd, {}, {F32({8, 3}, 0b1), F32({8, 3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("dimension 0 is dynamic in one operand")));
}

TEST(OpsTest, DotGeneralComputesBatchThenFreeDims) {
  OpAttrs a;
  a.dot.lhs_batch = {0};
  a.dot.rhs_batch = {0};
  a.dot.lhs_contracting = {2};
  a.dot.rhs_contracting = {1};
  EXPECT_EQ(*Infer(OpCode::kDot, a, {F32({5, 2, 3}), F32({5, 3, 4})}),
            F32({5, 2, 4}));
  // Transposed lhs: contract lhs dim 1.
  a.dot.lhs_contracting = {1};
  EXPECT_EQ(*Infer(OpCode::kDot, a, {F32({5, 3, 2}), F32({5, 3, 4})}),
            F32({5, 2, 4}));
  EXPECT_THAT(
      Infer(OpCode::kDot, a, {F32({5, 2, 2}), F32({5, 3, 4})}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("dot(f32[5,2,2], f32[5,3,4])"),
                     HasSubstr("contracting dimension 0 sizes differ"))));
  a.dot.lhs_contracting = {7};
  EXPECT_THAT(
      Infer(OpCode::kDot, a, {F32({5, 2, 3}), F32({5, 3, 4})}),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "lhs_contracting={7} has dimension 7 out of range for rank 3")));
}

TEST(OpsTest, DotKeepsDynamicRowsDynamic) {
  OpAttrs a;
  a.dot.lhs_contracting = {1};
  a.dot.rhs_contracting = {0};
  EXPECT_EQ(*Infer(OpCode::kDot, a, {F32({8, 3}, 0b1), F32({3, 4})}),
            F32({8, 4}, 0b1));
}

TEST(OpsTest, Conv2DSameAndValidOutputSizes) {
  OpAttrs a;
  a.window_strides = {2, 2};
  a.padding = Padding::kSame;
  EXPECT_EQ(*Infer(OpCode::kConv2D, a, {F32({1, 5, 5, 2}), F32({3, 3, 2, 4})}),
            F32({1, 3, 3, 4}));
  a.padding = Padding::kValid;
  EXPECT_EQ(*Infer(OpCode::kConv2D, a, {F32({1, 5, 5, 2}), F32({3, 3, 2, 4})}),
            F32({1, 2, 2, 4}));
  EXPECT_THAT(
      Infer(OpCode::kConv2D, a, {F32({1, 5, 5, 3}), F32({3, 3, 2, 4})}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("input channels 3 != filter input channels 2")));
  a.window_strides = {0, 1};
  EXPECT_THAT(
      Infer(OpCode::kConv2D, a, {F32({1, 5, 5, 2}), F32({3, 3, 2, 4})}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("window_strides={0,1} must be two values >= 1")));
  a.window_strides = {1, 1};
  EXPECT_THAT(
      Infer(OpCode::kConv2D, a, {F32({5, 5, 2}), F32({3, 3, 2, 4})}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank 4 (NHWC)")));
}

TEST(OpsTest, MaxPoolShapesAndErrors) {
  OpAttrs a;
  a.window = {3, 3};
  a.window_strides = {2, 2};
  a.padding = Padding::kSame;
  EXPECT_EQ(*Infer(OpCode::kMaxPool2D, a, {F32({8, 112, 112, 64}, 0b1)}),
            F32({8, 56, 56, 64}, 0b1));
  a.padding = Padding::kValid;
  EXPECT_EQ(*Infer(OpCode::kMaxPool2D, a, {F32({1, 5, 5, 2})}),
            F32({1, 2, 2, 2}));
  a.window = {3};
  EXPECT_THAT(
      Infer(OpCode::kMaxPool2D, a, {F32({1, 5, 5, 2})}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(
                   "max_pool2d(f32[1,5,5,2]): window={3} must be two values")));
  a.window = {6, 1};
  EXPECT_THAT(
      Infer(OpCode::kMaxPool2D, a, {F32({1, 5, 5, 2})}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("needs the window (6) to fit in the input (5)")));
  OpAttrs pool;
  pool.window = {2, 2};
  pool.window_strides = {2, 2};
  // 1x2x2x3 result, 2x2 compares each.
  EXPECT_EQ(Cost(OpCode::kMaxPool2D, pool, {F32({1, 4, 4, 3})}).flops, 12 * 4);
}

TEST(OpsTest, ReduceOverDynamicAxisIsStatic) {
  OpAttrs a;
  a.axes = {0};
  EXPECT_EQ(*Infer(OpCode::kReduceSum, a, {F32({8, 4}, 0b1)}), F32({4}));
  a.axes = {-1};
  a.keepdims = true;
  EXPECT_EQ(*Infer(OpCode::kReduceMean, a, {F32({8, 4}, 0b1)}),
            F32({8, 1}, 0b1));
  a.axes = {2};
  EXPECT_THAT(Infer(OpCode::kReduceMax, a, {F32({8, 4})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("reduce_max(f32[8,4])"),
                             HasSubstr("axes=2 is out of range for rank 2"))));
  a.axes = {0, -2};
  EXPECT_THAT(
      Infer(OpCode::kReduceSum, a, {F32({8, 4})}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("repeats axis")));
}

TEST(OpsTest, SoftmaxNeedsFloatingRankAtLeastOne) {
  EXPECT_EQ(*Infer(OpCode::kSoftmax, {}, {F32({2, 3})}), F32({2, 3}));
  EXPECT_THAT(
      Infer(OpCode::kSoftmax, {}, {F32({})}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank >= 1")));
  EXPECT_THAT(Infer(OpCode::kSoftmax, {}, {I32({3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("floating point")));
}

TEST(OpsTest, ReshapeInfersMinusOneAndRejectsBadCounts) {
  OpAttrs a;
  a.shape = {3, -1};
  EXPECT_EQ(*Infer(OpCode::kReshape, a, {F32({2, 3})}), F32({3, 2}));
  a.shape = {4, 2};
  EXPECT_THAT(
      Infer(OpCode::kReshape, a, {F32({2, 3})}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("shape={4,2} has 8 elements, the operand has 6")));
  a.shape = {-1, -1};
  EXPECT_THAT(Infer(OpCode::kReshape, a, {F32({2, 3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("more than one -1")));
  // Dynamic: -1 becomes the dynamic dimension.
  a.shape = {-1, 2, 2};
  EXPECT_EQ(*Infer(OpCode::kReshape, a, {F32({8, 4}, 0b1)}),
            F32({8, 2, 2}, 0b1));
  a.shape = {8, 2, 2};
  EXPECT_THAT(
      Infer(OpCode::kReshape, a, {F32({8, 4}, 0b1)}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs one -1")));
}

TEST(OpsTest, TransposeMovesDynamicFlag) {
  OpAttrs a;
  a.permutation = {1, 0};
  EXPECT_EQ(*Infer(OpCode::kTranspose, a, {F32({8, 3}, 0b1)}),
            F32({3, 8}, 0b10));
  a.permutation = {0, 0};
  EXPECT_THAT(Infer(OpCode::kTranspose, a, {F32({8, 3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("uses dimension 0 twice")));
  a.permutation = {0};
  EXPECT_THAT(Infer(OpCode::kTranspose, a, {F32({8, 3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must have rank 2")));
}

TEST(OpsTest, BroadcastFollowsNumpyRules) {
  OpAttrs a;
  a.shape = {2, 3};
  EXPECT_EQ(*Infer(OpCode::kBroadcast, a, {F32({3})}), F32({2, 3}));
  EXPECT_EQ(*Infer(OpCode::kBroadcast, a, {F32({2, 1})}), F32({2, 3}));
  EXPECT_THAT(
      Infer(OpCode::kBroadcast, a, {F32({2})}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("cannot broadcast dimension 0 of size 2 to 3")));
  a.shape = {3};
  EXPECT_THAT(
      Infer(OpCode::kBroadcast, a, {F32({2, 3})}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lower rank")));
}

TEST(OpsTest, BroadcastKeepsDynamicDimWithinTarget) {
  OpAttrs a;
  a.shape = {8, 3};
  EXPECT_EQ(*Infer(OpCode::kBroadcast, a, {F32({8, 1}, 0b1)}),
            F32({8, 3}, 0b1));
  // At execution the true size (here 5) is kept.
  EXPECT_EQ(*Infer(OpCode::kBroadcast, a, {F32({5, 1}, 0b1)}),
            F32({5, 3}, 0b1));
  EXPECT_THAT(
      Infer(OpCode::kBroadcast, a, {F32({9, 1}, 0b1)}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(
                   "dynamic dimension 0 of size 9 exceeds the target size 8")));
}

TEST(OpsTest, SliceBoundsAndStrides) {
  OpAttrs a;
  a.start = {1, 0};
  a.limit = {3, 5};
  a.strides = {1, 2};
  EXPECT_EQ(*Infer(OpCode::kSlice, a, {F32({4, 5})}), F32({2, 3}));
  a.limit = {5, 5};
  EXPECT_THAT(
      Infer(OpCode::kSlice, a, {F32({4, 5})}),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("dimension 0: start=1, limit=5 must satisfy 0 <= start <= "
                    "limit <= 4")));
  a.start = {0};
  EXPECT_THAT(Infer(OpCode::kSlice, a, {F32({4, 5})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must each have 2")));
  // Dynamic dims may only be sliced whole.
  a.start = {0, 1};
  a.limit = {8, 3};
  a.strides = {};
  EXPECT_EQ(*Infer(OpCode::kSlice, a, {F32({8, 5}, 0b1)}), F32({8, 2}, 0b1));
  a.start = {1, 1};
  EXPECT_THAT(Infer(OpCode::kSlice, a, {F32({8, 5}, 0b1)}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("dimension 0 is dynamic")));
}

TEST(OpsTest, SliceWithHugeStrideHasExactSizeWithoutOverflow) {
  // Regression (tests/fuzz/regressions/program/slice_stride_overflow): the
  // ceil-division must not overflow int64 for a stride near 2^63.
  OpAttrs a;
  a.start = {0, 0};
  a.limit = {2, 4};
  a.strides = {1, std::numeric_limits<int64_t>::max()};
  EXPECT_EQ(*Infer(OpCode::kSlice, a, {F32({2, 6})}), F32({2, 1}));
  // Empty and exact-multiple slices keep their sizes.
  a.start = {1, 3};
  a.limit = {1, 3};
  a.strides = {1, 2};
  EXPECT_EQ(*Infer(OpCode::kSlice, a, {F32({2, 6})}), F32({0, 0}));
  a.start = {0, 0};
  a.limit = {2, 6};
  a.strides = {2, 3};
  EXPECT_EQ(*Infer(OpCode::kSlice, a, {F32({2, 6})}), F32({1, 2}));
  a.strides = {1, 4};
  EXPECT_EQ(*Infer(OpCode::kSlice, a, {F32({2, 6})}), F32({2, 2}));
}

TEST(OpsTest, WindowedOpsWithHugeStrideHaveExactSizeWithoutOverflow) {
  // Regression (tests/fuzz/regressions/program/conv_same_stride_overflow):
  // SAME padding's ceil(size / stride) must not overflow for a stride near
  // 2^63.
  const int64_t huge = std::numeric_limits<int64_t>::max();
  OpAttrs a;
  a.padding = Padding::kSame;
  a.window_strides = {huge, 1};
  EXPECT_EQ(*Infer(OpCode::kConv2D, a, {F32({1, 8, 8, 2}), F32({3, 3, 2, 4})}),
            F32({1, 1, 8, 4}));
  a.window_strides = {3, 2};
  EXPECT_EQ(*Infer(OpCode::kConv2D, a, {F32({1, 7, 6, 2}), F32({3, 3, 2, 4})}),
            F32({1, 3, 3, 4}));
  OpAttrs p;
  p.padding = Padding::kSame;
  p.window = {2, 2};
  p.window_strides = {huge, huge};
  EXPECT_EQ(*Infer(OpCode::kMaxPool2D, p, {F32({1, 5, 5, 1})}),
            F32({1, 1, 1, 1}));
  p.window_strides = {2, 2};
  EXPECT_EQ(*Infer(OpCode::kMaxPool2D, p, {F32({1, 0, 5, 1})}),
            F32({1, 0, 3, 1}));
}

TEST(OpsTest, OpWhoseCostOverflowsIsRejected) {
  // Regression (tests/fuzz/regressions/program/dot_flops_overflow): both
  // operands and the result are under the element limit, but 2 * 2^40 * 2^30
  // FLOPs do not fit in int64.
  OpAttrs a;
  a.dot.lhs_contracting = {1};
  a.dot.rhs_contracting = {0};
  EXPECT_THAT(
      Infer(OpCode::kDot, a,
            {F32({int64_t{1} << 20, int64_t{1} << 30}),
             F32({int64_t{1} << 30, int64_t{1} << 20})}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("dot"),
                     HasSubstr("cost (FLOPs or bytes) for result "
                               "f32[1048576,1048576] exceeds 2^63"))));
  // The largest dot that fits still has its exact cost.
  EXPECT_EQ(Cost(OpCode::kDot, a,
                 {F32({int64_t{1} << 20, int64_t{1} << 20}),
                  F32({int64_t{1} << 20, int64_t{1} << 20})})
                .flops,
            int64_t{1} << 61);
}

TEST(OpsTest, CostTotalsSaturateInsteadOfOverflowing) {
  OpCost total;
  total.flops = std::numeric_limits<int64_t>::max() - 1;
  OpCost one;
  one.flops = 5;
  one.bytes_read = 7;
  total += one;
  EXPECT_EQ(total.flops, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(total.bytes_read, 7);
}

// A slice reads only what it keeps; a gather its indices and its rows (not
// the whole operand, which a bucketed gradient slice would over-charge).
TEST(OpsTest, SliceAndGatherReadOnlyWhatTheyUse) {
  OpAttrs a;
  a.start = {0, 1};
  a.limit = {2, 4};
  const OpCost slice = Cost(OpCode::kSlice, a, {F32({100, 50})});
  EXPECT_EQ(slice.bytes_read, 2 * 3 * 4);
  EXPECT_EQ(slice.bytes_written, 2 * 3 * 4);
  OpAttrs g;
  g.axis = 0;
  const OpCost gather = Cost(OpCode::kGather, g, {F32({1000, 8}), I32({5})});
  EXPECT_EQ(gather.bytes_read, 5 * 4 + 5 * 8 * 4);
  EXPECT_EQ(gather.bytes_written, 5 * 8 * 4);
}

TEST(OpsTest, ConcatAddsAlongAxis) {
  OpAttrs a;
  a.axis = 1;
  EXPECT_EQ(*Infer(OpCode::kConcat, a, {F32({2, 3}), F32({2, 1})}),
            F32({2, 4}));
  EXPECT_THAT(Infer(OpCode::kConcat, a, {F32({2, 3}), F32({3, 1})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("operand 1 differs in dimension 0")));
  EXPECT_THAT(Infer(OpCode::kConcat, a, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at least one operand")));
}

TEST(OpsTest, GatherShapeIsParamsPrefixIndicesSuffix) {
  OpAttrs a;
  a.axis = 1;
  EXPECT_EQ(*Infer(OpCode::kGather, a, {F32({2, 5, 3}), I32({4, 6})}),
            F32({2, 4, 6, 3}));
  EXPECT_THAT(Infer(OpCode::kGather, a, {F32({2, 5}), F32({4})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("indices must be int32 or int64")));
}

TEST(OpsTest, OneHotAppendsDepth) {
  OpAttrs a;
  a.depth = 4;
  a.dtype = DType::kF32;
  EXPECT_EQ(*Infer(OpCode::kOneHot, a, {I32({8}, 0b1)}), F32({8, 4}, 0b1));
  a.depth = -1;
  EXPECT_THAT(Infer(OpCode::kOneHot, a, {I32({8})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("depth=-1 must be >= 0")));
  a.depth = 2;
  EXPECT_THAT(
      Infer(OpCode::kOneHot, a, {F32({8})}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("integer type")));
}

TEST(OpsTest, CollectiveShapesUseGroupSize) {
  OpAttrs a;
  EXPECT_EQ(*Infer(OpCode::kAllReduce, a, {F32({3})}, 8), F32({3}));
  a.axis = 0;
  EXPECT_EQ(*Infer(OpCode::kAllGather, a, {F32({2, 3})}, 8), F32({16, 3}));
  a.replica_groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  EXPECT_EQ(*Infer(OpCode::kAllGather, a, {F32({2, 3})}, 8), F32({4, 3}));
  EXPECT_EQ(*Infer(OpCode::kReduceScatter, a, {F32({4, 3})}, 8), F32({2, 3}));
  EXPECT_THAT(
      Infer(OpCode::kReduceScatter, a, {F32({3, 3})}, 8),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("dimension 0 (3) must be divisible by the group size 2")));
}

TEST(OpsTest, CollectiveReplicaGroupsMustPartitionReplicas) {
  OpAttrs a;
  a.replica_groups = {{0, 1}, {1, 2}};
  EXPECT_THAT(Infer(OpCode::kAllReduce, a, {F32({3})}, 4),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("all_reduce"),
                             HasSubstr("member 1 appears twice"))));
  a.replica_groups = {{0, 1}};
  EXPECT_THAT(Infer(OpCode::kAllReduce, a, {F32({3})}, 4),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("replica 2 of 4 is missing")));
  a.replica_groups = {{0, 1, 2}, {3}};
  EXPECT_THAT(
      Infer(OpCode::kAllReduce, a, {F32({3})}, 4),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("equal size")));
  a.replica_groups = {{0, 9}};
  EXPECT_THAT(Infer(OpCode::kAllReduce, a, {F32({3})}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("outside [0, 2)")));
}

TEST(OpsTest, MeanOfIntegersIsRejectedForCollectives) {
  OpAttrs a;
  a.reduce = CollectiveReduce::kMean;
  EXPECT_THAT(Infer(OpCode::kAllReduce, a, {I32({3})}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("MEAN needs a floating")));
}

TEST(OpsTest, CollectivePermutePairsAreChecked) {
  OpAttrs a;
  a.source_target_pairs = {{0, 1}, {1, 0}};
  EXPECT_EQ(*Infer(OpCode::kCollectivePermute, a, {F32({3})}, 2), F32({3}));
  a.source_target_pairs = {{0, 1}, {0, 2}};
  EXPECT_THAT(Infer(OpCode::kCollectivePermute, a, {F32({3})}, 4),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("repeats a source")));
  a.source_target_pairs = {{0, 5}};
  EXPECT_THAT(Infer(OpCode::kCollectivePermute, a, {F32({3})}, 4),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("outside [0, 4)")));
}

TEST(OpsTest, WrongArityIsAnErrorNotACrash) {
  EXPECT_THAT(Infer(OpCode::kAdd, {}, {F32({1})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("takes 2 operand(s), got 1")));
  EXPECT_THAT(Infer(OpCode::kDot, {}, {F32({1})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("takes 2 operand(s)")));
}

TEST(OpsTest, MatmulCostIsTwoMNK) {
  OpAttrs a;
  a.dot.lhs_contracting = {1};
  a.dot.rhs_contracting = {0};
  OpCost c = Cost(OpCode::kDot, a, {F32({8, 16}), F32({16, 4})});
  EXPECT_EQ(c.flops, 2 * 8 * 4 * 16);
  EXPECT_EQ(c.bytes_read, (8 * 16 + 16 * 4) * 4);
  EXPECT_EQ(c.bytes_written, 8 * 4 * 4);
  // Batch dims multiply.
  a.dot.lhs_batch = {0};
  a.dot.rhs_batch = {0};
  a.dot.lhs_contracting = {2};
  a.dot.rhs_contracting = {1};
  EXPECT_EQ(Cost(OpCode::kDot, a, {F32({3, 2, 5}), F32({3, 5, 7})}).flops,
            3 * 2 * 2 * 7 * 5);
}

TEST(OpsTest, ElementwiseCostIsOneFlopPerElementAndOperandBytes) {
  OpCost c = Cost(OpCode::kAdd, {}, {F32({4, 3}), F32({3})});
  EXPECT_EQ(c, (OpCost{12, 0, 12 * 4 + 3 * 4, 12 * 4}));
  OpCost e = Cost(OpCode::kExp, {}, {ValueType(DType::kBF16, Shape({10}))});
  EXPECT_EQ(e, (OpCost{10, 10, 20, 20}));
}

TEST(OpsTest, CostUsesBoundOfDynamicDims) {
  OpCost c = Cost(OpCode::kRelu, {}, {F32({8, 4}, 0b1)});
  EXPECT_EQ(c.flops, 32);
  EXPECT_EQ(c.bytes_read, 128);
}

TEST(OpsTest, ConvReduceSoftmaxAndCollectiveCosts) {
  OpAttrs conv;
  conv.padding = Padding::kSame;
  EXPECT_EQ(
      Cost(OpCode::kConv2D, conv, {F32({2, 4, 4, 3}), F32({3, 3, 3, 5})}).flops,
      2 * (2 * 4 * 4 * 5) * 3 * 3 * 3);
  OpAttrs red;
  red.axes = {1};
  EXPECT_EQ(Cost(OpCode::kReduceSum, red, {F32({4, 6})}).flops, 24);
  EXPECT_EQ(Cost(OpCode::kSoftmax, {}, {F32({2, 5})}),
            (OpCost{40, 10, 40, 40}));
  EXPECT_EQ(Cost(OpCode::kAllReduce, {}, {F32({10})}, 8).flops, 70);
  OpAttrs reshape;
  reshape.shape = {-1};
  EXPECT_EQ(Cost(OpCode::kReshape, reshape, {F32({2, 5})}), OpCost{});
}

}  // namespace
}  // namespace tpusim::runtime
