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

namespace {

// Shapes keep up to Shape::kInlineDims dimensions inline and larger ranks on
// the heap; both behave the same through copies, moves and assignments.
TEST(ShapeTest, InlineAndHeapRanksCopyMoveAndCompare) {
  const std::vector<int64_t> eight = {1, 2, 3, 4, 5, 6, 7, 8};
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{}, std::vector<int64_t>{4},
        std::vector<int64_t>{1, 2, 3, 4, 5, 6}, eight}) {
    const Shape s(dims);
    EXPECT_EQ(s.rank(), static_cast<int>(dims.size()));
    EXPECT_EQ(s.dims(), dims);
    Shape copy = s;
    EXPECT_EQ(copy, s);
    Shape moved = std::move(copy);
    EXPECT_EQ(moved, s);
    Shape assigned({9});
    assigned = moved;
    EXPECT_EQ(assigned, s);
    Shape move_assigned({1, 2, 3, 4, 5, 6, 7, 8, 9});
    move_assigned = std::move(assigned);
    EXPECT_EQ(move_assigned, s);
    EXPECT_EQ(move_assigned.ToString(), s.ToString());
  }
  const Shape big(eight);
  EXPECT_EQ(big.ToString(), "[1,2,3,4,5,6,7,8]");
  EXPECT_EQ(big.num_elements(), 40320);
  EXPECT_EQ(big.DropDim0(), Shape({2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(big.Prepend(0).ToString(), "[0,1,2,3,4,5,6,7,8]");
  EXPECT_EQ(big.WithDim0(kUnknownDim).ToString(), "[?,2,3,4,5,6,7,8]");
  // Crossing the inline limit in both directions.
  EXPECT_EQ(Shape({1, 2, 3, 4, 5, 6}).Prepend(7), Shape({7, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Shape({7, 1, 2, 3, 4, 5, 6}).DropDim0(), Shape({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Shape({3, 4}).Prepend(2), Shape({2, 3, 4}));
  EXPECT_EQ(Shape({3}).DropDim0(), Shape());
  EXPECT_NE(Shape({1, 2, 3, 4, 5, 6, 7}), Shape({1, 2, 3, 4, 5, 6, 8}));
  EXPECT_NE(Shape({2}), Shape({2, 1}));
  EXPECT_NE(Shape(), Shape::UnknownRank());
  EXPECT_EQ(Shape({1, 2, 3, 4, 5, 6, 7})
                .MostSpecificCompatible(Shape({1, 2, 3, 4, 5, 6, 8}))
                .ToString(),
            "[1,2,3,4,5,6,?]");
}

// dims() is a view into the shape; it converts to a vector and compares with
// one, and a Span over it refers to the shape's own storage.
TEST(ShapeTest, DimsViewConvertsAndCompares) {
  const Shape s({2, 3, 4});
  std::vector<int64_t> v = s.dims();
  EXPECT_THAT(v, ElementsAre(2, 3, 4));
  const std::vector<int64_t>& bound = s.dims();
  EXPECT_EQ(bound, v);
  EXPECT_TRUE(s.dims() == v);
  EXPECT_TRUE(v == s.dims());
  EXPECT_FALSE(s.dims() != v);
  EXPECT_TRUE(s.dims() != std::vector<int64_t>({2, 3}));
  EXPECT_EQ(s.dims().back(), 4);
  EXPECT_EQ(s.dims().size(), 3u);
  absl::Span<const int64_t> span = s.dims();
  EXPECT_EQ(span.data(), s.dims().data());
  EXPECT_EQ(Shape(s.dims()), s);
  EXPECT_EQ(s.dims().ToVector(), v);
}

// The pool hands a storage out again only when no tensor holds it; a tensor
// that is still held keeps its values, and copy-on-write of a pooled tensor
// copies (the pool shares its storage).
TEST(BufferPoolTest, ReusesOnlyStorageNoTensorHolds) {
  const Tensor m =
      Tensor::FromVector<int64_t>(Shape({4, 2}), {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor::BufferPool pool;
  auto stack = [&](int a, int b) {
    absl::StatusOr<Tensor> t = Tensor::Stack({m.Row(a), m.Row(b)}, &pool);
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
  };
  Tensor first = stack(3, 0);
  const int64_t* first_data = first.values<int64_t>().data();
  Tensor second = stack(1, 2);  // `first` is held: a new buffer
  EXPECT_NE(second.values<int64_t>().data(), first_data);
  EXPECT_EQ(pool.allocated(), 2);
  EXPECT_EQ(pool.reused(), 0);
  EXPECT_THAT(first.values<int64_t>(), ElementsAre(6, 7, 0, 1));
  EXPECT_THAT(second.values<int64_t>(), ElementsAre(2, 3, 4, 5));

  first = Tensor();  // released: its buffer is free again
  Tensor third = stack(2, 3);
  EXPECT_EQ(third.values<int64_t>().data(), first_data);
  EXPECT_EQ(pool.reused(), 1);
  EXPECT_THAT(third.values<int64_t>(), ElementsAre(4, 5, 6, 7));
  EXPECT_THAT(second.values<int64_t>(), ElementsAre(2, 3, 4, 5));

  // A copy of a tensor holds the storage too.
  const Tensor copy_of_third = third;
  third = Tensor();
  Tensor fourth = stack(0, 0);
  EXPECT_NE(fourth.values<int64_t>().data(), first_data);
  EXPECT_THAT(copy_of_third.values<int64_t>(), ElementsAre(4, 5, 6, 7));

  // Writing a pooled tensor copies first; the pool's buffer is untouched.
  const int64_t* fourth_data = fourth.values<int64_t>().data();
  fourth.mutable_values<int64_t>()[0] = 99;
  EXPECT_NE(fourth.values<int64_t>().data(), fourth_data);
  EXPECT_THAT(fourth.values<int64_t>(), ElementsAre(99, 1, 0, 1));

  // Another size: an idle buffer of the old size is replaced; results exact.
  second = Tensor();
  absl::StatusOr<Tensor> three =
      Tensor::Stack({m.Row(0), m.Row(1), m.Row(3)}, &pool);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_THAT(three->values<int64_t>(), ElementsAre(0, 1, 2, 3, 6, 7));
  absl::StatusOr<Tensor> cat =
      Tensor::Concat({m.Slice(2, 2), m.Slice(0, 1)}, &pool);
  ASSERT_TRUE(cat.ok()) << cat.status();
  EXPECT_THAT(cat->values<int64_t>(), ElementsAre(4, 5, 6, 7, 0, 1));
}

TEST(BufferPoolTest, KeepsAtMostItsLimits) {
  const Tensor m =
      Tensor::FromVector<float>(Shape({2, 4}), {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor::BufferPool pool(/*max_buffers=*/2, /*max_bytes=*/1 << 20);
  std::vector<Tensor> held;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<Tensor> t = Tensor::Stack({m.Row(1), m.Row(0)}, &pool);
    ASSERT_TRUE(t.ok()) << t.status();
    held.push_back(*t);
  }
  EXPECT_EQ(pool.allocated(), 5);
  EXPECT_EQ(pool.held_bytes(), 2 * 32);
  for (const Tensor& t : held)
    EXPECT_THAT(t.values<float>(), ElementsAre(4, 5, 6, 7, 0, 1, 2, 3));
  Tensor::BufferPool small(/*max_buffers=*/16, /*max_bytes=*/40);
  absl::StatusOr<Tensor> a = Tensor::Stack({m.Row(0), m.Row(1)}, &small);
  absl::StatusOr<Tensor> b = Tensor::Stack({m.Row(0), m.Row(1)}, &small);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(small.held_bytes(), 32);  // the second would pass 40 bytes
}

}  // namespace

}  // namespace tpusim::runtime
