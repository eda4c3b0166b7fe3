#include "strategy/runtime/tensor.h"

#include <cmath>
#include <limits>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::StatusIs;

TEST(TensorTest, FromVectorKeepsShapeAndValues) {
  Tensor t = Tensor::FromVector<int64_t>(Shape({2, 3}), {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(t.dtype(), DType::kI64);
  EXPECT_EQ(t.shape().ToString(), "[2,3]");
  EXPECT_EQ(t.num_elements(), 6);
  EXPECT_EQ(t.byte_size(), 48);
  EXPECT_THAT(t.values<int64_t>(), ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_EQ(t.DebugString(), "int64[2,3]{0, 1, 2, 3, 4, 5}");
}

TEST(TensorTest, SliceAndRowAreViewsOfDimensionZero) {
  Tensor t = Tensor::FromVector<float>(Shape({3, 2}), {0, 1, 2, 3, 4, 5});
  Tensor s = t.Slice(1, 2);
  EXPECT_EQ(s.shape(), Shape({2, 2}));
  EXPECT_THAT(s.values<float>(), ElementsAre(2, 3, 4, 5));
  Tensor r = t.Row(2);
  EXPECT_EQ(r.shape(), Shape({2}));
  EXPECT_THAT(r.values<float>(), ElementsAre(4, 5));
  Tensor empty = t.Slice(3, 0);
  EXPECT_EQ(empty.shape(), Shape({0, 2}));
  EXPECT_EQ(empty.num_elements(), 0);
}

TEST(TensorTest, MutableValuesCopiesSharedStorage) {
  Tensor a = Tensor::Vector<int32_t>({1, 2, 3});
  Tensor b = a;
  b.mutable_values<int32_t>()[0] = 9;
  EXPECT_THAT(a.values<int32_t>(), ElementsAre(1, 2, 3));
  EXPECT_THAT(b.values<int32_t>(), ElementsAre(9, 2, 3));
  Tensor view = a.Slice(1, 2);
  view.mutable_values<int32_t>()[0] = 7;
  EXPECT_THAT(a.values<int32_t>(), ElementsAre(1, 2, 3));
  EXPECT_THAT(view.values<int32_t>(), ElementsAre(7, 3));
}

TEST(TensorTest, StackAddsALeadingDimension) {
  std::vector<Tensor> rows = {Tensor::Vector<int64_t>({0, 1}),
                              Tensor::Vector<int64_t>({2, 3})};
  absl::StatusOr<Tensor> s = Tensor::Stack(rows);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->shape(), Shape({2, 2}));
  EXPECT_THAT(s->values<int64_t>(), ElementsAre(0, 1, 2, 3));
  std::vector<Tensor> scalars = {Tensor::Scalar<int64_t>(4),
                                 Tensor::Scalar<int64_t>(5)};
  EXPECT_EQ(*Tensor::Stack(scalars), Tensor::Vector<int64_t>({4, 5}));
}

TEST(TensorTest, StackRejectsDifferentShapes) {
  std::vector<Tensor> rows = {Tensor::Vector<int64_t>({0, 1}),
                              Tensor::Vector<int64_t>({2})};
  EXPECT_THAT(
      Tensor::Stack(rows),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("element 0 is int64[2], element 1 is int64[1]")));
}

TEST(TensorTest, ConcatJoinsAlongDimensionZero) {
  std::vector<Tensor> parts = {Tensor::Vector<std::string>({"a"}),
                               Tensor::Vector<std::string>({"b", "c"})};
  absl::StatusOr<Tensor> c = Tensor::Concat(parts);
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->values<std::string>(), ElementsAre("a", "b", "c"));
  std::vector<Tensor> bad = {Tensor::Zeros(DType::kF32, Shape({1, 2})),
                             Tensor::Zeros(DType::kF32, Shape({1, 3}))};
  EXPECT_THAT(Tensor::Concat(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("part 1 is float32[1,3]")));
}

TEST(TensorTest, AbstractTensorsHaveShapeAndCostButNoValues) {
  Tensor t = Tensor::Abstract(DType::kBF16, Shape({128, 1024}));
  EXPECT_FALSE(t.has_data());
  EXPECT_EQ(t.byte_size(), 128 * 1024 * 2);
  EXPECT_EQ(t.Slice(0, 8).shape(), Shape({8, 1024}));
  EXPECT_FALSE(t.Slice(0, 8).has_data());
  EXPECT_NE(t, Tensor::Zeros(DType::kBF16, Shape({128, 1024})));
}

TEST(TensorTest, BFloat16RoundsToNearestEven) {
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1 + 2^-7: ties go to even
  // (1.0).
  EXPECT_EQ(BFloat16::FromFloat(1.0f + std::ldexp(1.0f, -8)).ToFloat(), 1.0f);
  // 1 + 3*2^-8 is halfway between 1 + 2^-7 (odd mantissa) and 1 + 2^-6: rounds
  // up to even.
  EXPECT_EQ(BFloat16::FromFloat(1.0f + 3 * std::ldexp(1.0f, -8)).ToFloat(),
            1.0f + std::ldexp(1.0f, -6));
  // Just above halfway rounds up.
  EXPECT_EQ(
      BFloat16::FromFloat(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20))
          .ToFloat(),
      1.0f + std::ldexp(1.0f, -7));
  EXPECT_TRUE(std::isnan(BFloat16::FromFloat(std::nanf("")).ToFloat()));
  EXPECT_TRUE(std::isinf(
      BFloat16::FromFloat(std::numeric_limits<float>::infinity()).ToFloat()));
}

TEST(TensorTest, CastFollowsTfCast) {
  Tensor f = Tensor::Vector<float>({-1.7f, 2.5f, 3.0f});
  EXPECT_THAT(f.Cast(DType::kI32)->values<int32_t>(), ElementsAre(-1, 2, 3));
  EXPECT_THAT(Tensor::Vector<int64_t>({3}).Cast(DType::kF64)->values<double>(),
              ElementsAre(3.0));
  EXPECT_THAT(f.Cast(DType::kBytes),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cannot cast float32 to string")));
}

TEST(TensorTest, ShapesTrackUnknownDimensions) {
  Shape s({kUnknownDim, 28});
  EXPECT_FALSE(s.IsFullyDefined());
  EXPECT_EQ(s.ToString(), "[?,28]");
  EXPECT_TRUE(s.IsCompatibleWith(Shape({4, 28})));
  EXPECT_FALSE(s.IsCompatibleWith(Shape({4, 27})));
  EXPECT_EQ(Shape({4, 28}).MostSpecificCompatible(Shape({2, 28})), s);
  EXPECT_EQ(Shape::UnknownRank().ToString(), "<unknown>");
  EXPECT_EQ(Shape().ToString(), "[]");
}

TEST(TensorTest, DTypeNamesRoundTrip) {
  EXPECT_EQ(*DTypeFromName("int64"), DType::kI64);
  EXPECT_EQ(*DTypeFromName("bytes"), DType::kBytes);
  EXPECT_THAT(
      DTypeFromName("float16"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"float16\"")));
}

}  // namespace
// Issue 7: element counts never wrap.
TEST(TensorTest, CheckedSizesNameTheShape) {
  const Shape huge({int64_t{1} << 32, int64_t{1} << 32});
  EXPECT_THAT(huge.CheckedNumElements(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "shape [4294967296,4294967296] has more than 2^63-1 "
                       "elements (the product of its dimensions overflows "
                       "int64)"));
  EXPECT_THAT(Shape({3, 0, int64_t{1} << 62}).CheckedNumElements(),
              ::tpusim::testing::IsOk());
  EXPECT_EQ(*Shape({3, 0, int64_t{1} << 62}).CheckedNumElements(), 0);
  EXPECT_THAT(CheckedByteSize(DType::kF64, Shape({int64_t{1} << 61})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "float64[2305843009213693952] has 2305843009213693952 "
                       "elements of 8 bytes: more than 2^63-1 bytes"));
  EXPECT_EQ(*CheckedByteSize(DType::kI32, Shape({2, 3})), 24);
  // Stacking abstract tensors (no memory behind them) checks the product too.
  const Tensor row = Tensor::Abstract(DType::kI64, Shape({int64_t{1} << 62}));
  EXPECT_THAT(Tensor::Stack({row, row}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "shape [2,4611686018427387904] has more than 2^63-1 "
                       "elements (the product of its dimensions overflows "
                       "int64)"));
}

}  // namespace tpusim::runtime
