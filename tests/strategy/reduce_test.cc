// Tests of the host-side reduce rules (spec (f)), including every worked
// example 1-7.

#include "strategy/reduce.h"

#include <cmath>
#include <limits>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::strategy {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tpusim::testing::IsOk;
using tpusim::testing::StatusIs;

Tensor F(std::vector<float> v) { return Tensor::Vector<float>(std::move(v)); }
Value PR(std::vector<Tensor> parts) {
  return Value(PerReplica<Tensor>(std::move(parts)));
}

std::vector<float> Floats(const absl::StatusOr<Value>& v) {
  TPUSIM_CHECK(v.ok()) << v.status();
  auto span = v->tensor().values<float>();
  return std::vector<float>(span.begin(), span.end());
}
double Scalar(const absl::StatusOr<Value>& v) {
  TPUSIM_CHECK(v.ok()) << v.status();
  TPUSIM_CHECK_EQ(v->tensor().num_elements(), 1);
  return v->tensor().AsDouble(0);
}

// Example 1: global batch 8, 2 replicas, full batch.
TEST(ReduceTest, Example1FullBatchAllFourForms) {
  Value v = PR({F({0, 1, 2, 3}), F({4, 5, 6, 7})});
  EXPECT_THAT(Floats(ReduceOnHost(ReduceOp::kSum, v, std::nullopt, 2)),
              ElementsAre(4, 6, 8, 10));
  EXPECT_THAT(Floats(ReduceOnHost(ReduceOp::kMean, v, std::nullopt, 2)),
              ElementsAre(2, 3, 4, 5));
  auto sum0 = ReduceOnHost(ReduceOp::kSum, v, 0, 2);
  EXPECT_EQ(sum0->tensor().shape(), Shape());
  EXPECT_EQ(Scalar(sum0), 28.0);
  auto mean0 = ReduceOnHost(ReduceOp::kMean, v, 0, 2);
  EXPECT_EQ(mean0->tensor().dtype(), DType::kF32);
  EXPECT_EQ(Scalar(mean0), 3.5);
}

// Example 2: last batch of 6 split 4 / 2.
TEST(ReduceTest, Example2PartialBatchAxisZeroIsExactAndAxisNoneIsShapeError) {
  Value v = PR({F({0, 1, 2, 3}), F({4, 5})});
  EXPECT_EQ(Scalar(ReduceOnHost(ReduceOp::kSum, v, 0, 2)), 15.0);
  EXPECT_EQ(Scalar(ReduceOnHost(ReduceOp::kMean, v, 0, 2)), 2.5);
  EXPECT_THAT(
      ReduceOnHost(ReduceOp::kSum, v, std::nullopt, 2),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("shape mismatch"), HasSubstr("float32[4]"),
                     HasSubstr("float32[2]"))));
  EXPECT_THAT(ReduceOnHost(ReduceOp::kMean, v, std::nullopt, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shape mismatch")));
  // Each replica returning its own mean weights items unevenly: (1.5 + 4.5) / 2
  // = 3.0.
  Value means = PR({Tensor::Scalar<float>(1.5f), Tensor::Scalar<float>(4.5f)});
  EXPECT_EQ(Scalar(ReduceOnHost(ReduceOp::kMean, means, std::nullopt, 2)), 3.0);
}

// Example 3: an empty replica contributes 0 to numerator and denominator.
TEST(ReduceTest, Example3EmptyReplica) {
  Value v = PR({F({8, 9}), F({})});
  EXPECT_EQ(Scalar(ReduceOnHost(ReduceOp::kSum, v, 0, 2)), 17.0);
  EXPECT_EQ(Scalar(ReduceOnHost(ReduceOp::kMean, v, 0, 2)), 8.5);
}

// Example 4: every replica returns [1, 2].
TEST(ReduceTest, Example4EveryReplicaSameVector) {
  for (int n : {1, 2, 8}) {
    std::vector<Tensor> parts(n, F({1, 2}));
    Value v = PR(parts);
    EXPECT_EQ(Scalar(ReduceOnHost(ReduceOp::kMean, v, 0, n)), 1.5) << n;
    EXPECT_EQ(Scalar(ReduceOnHost(ReduceOp::kSum, v, 0, n)), 3.0 * n) << n;
  }
}

// Example 5: every replica returns 1.0; SUM with axis=None = N.
TEST(ReduceTest, Example5ScalarOnesSumToN) {
  for (int n : {1, 2, 8}) {
    Value v = PR(std::vector<Tensor>(n, Tensor::Scalar<float>(1.f)));
    EXPECT_EQ(Scalar(ReduceOnHost(ReduceOp::kSum, v, std::nullopt, n)), n);
  }
}

// Example 6: 2-D values.
TEST(ReduceTest, Example6TwoDimensional) {
  Tensor r0 = Tensor::FromVector<float>(Shape({2, 2}), {1, 2, 3, 4});
  Tensor r1 = Tensor::FromVector<float>(Shape({1, 2}), {5, 6});
  Value v = PR({r0, r1});
  EXPECT_THAT(ReduceOnHost(ReduceOp::kSum, v, 1, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("equal shapes"), HasSubstr("float32[2]"),
                             HasSubstr("float32[1]"))));
  EXPECT_THAT(Floats(ReduceOnHost(ReduceOp::kSum, v, 0, 2)),
              ElementsAre(9, 12));
  EXPECT_THAT(Floats(ReduceOnHost(ReduceOp::kMean, v, 0, 2)),
              ElementsAre(3, 4));
}

// Example 7: every replica empty: 0/0 = NaN for floats.
TEST(ReduceTest, Example7AllEmptyMeanIsNaN) {
  Value v = PR({F({}), F({})});
  EXPECT_TRUE(std::isnan(Scalar(ReduceOnHost(ReduceOp::kMean, v, 0, 2))));
  EXPECT_EQ(Scalar(ReduceOnHost(ReduceOp::kSum, v, 0, 2)), 0.0);
}

TEST(ReduceTest, PlainNumberZeroReducesToZeroForBothOps) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    absl::StatusOr<Value> r =
        ReduceOnHost(op, Value::Number(0), std::nullopt, 8);
    ASSERT_THAT(r, IsOk());
    EXPECT_TRUE(r->is_number());
    EXPECT_EQ(r->number(), 0);
  }
}

TEST(ReduceTest, NonDistributedMeanIsIdentity) {
  EXPECT_EQ(ReduceOnHost(ReduceOp::kMean, Value::Number(3), std::nullopt, 8)
                ->number(),
            3);
  EXPECT_EQ(Scalar(ReduceOnHost(ReduceOp::kMean, Tensor::Scalar<float>(2.5f),
                                std::nullopt, 8)),
            2.5);
}

TEST(ReduceTest, NonDistributedSumIsErrorWithMoreThanOneReplica) {
  EXPECT_THAT(
      ReduceOnHost(ReduceOp::kSum, Value::Number(3), std::nullopt, 8),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          AllOf(HasSubstr("A non-DistributedValues value 3"),
                HasSubstr("cannot be reduced with the given reduce op SUM"))));
  EXPECT_EQ(
      ReduceOnHost(ReduceOp::kSum, Value::Number(3), std::nullopt, 1)->number(),
      3);
}

TEST(ReduceTest, TensorZeroIsNotSpecial) {
  Tensor zero = Tensor::Scalar<float>(0.f);
  EXPECT_THAT(ReduceOnHost(ReduceOp::kSum, zero, std::nullopt, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("non-DistributedValues")));
  absl::StatusOr<Value> mean =
      ReduceOnHost(ReduceOp::kMean, zero, std::nullopt, 2);
  ASSERT_THAT(mean, IsOk());
  EXPECT_TRUE(mean->is_tensor());
}

TEST(ReduceTest, NonDistributedTensorWithAxisIsReplicated) {
  EXPECT_EQ(Scalar(ReduceOnHost(ReduceOp::kSum, F({1, 2}), 0, 8)), 24.0);
  EXPECT_EQ(Scalar(ReduceOnHost(ReduceOp::kMean, F({1, 2}), 0, 8)), 1.5);
}

TEST(ReduceTest, MeanAxisNoneOnIntegersIsError) {
  Value v = PR({Tensor::Scalar<int32_t>(1), Tensor::Scalar<int32_t>(2)});
  EXPECT_THAT(ReduceOnHost(ReduceOp::kMean, v, std::nullopt, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("1/2"), HasSubstr("int32"))));
  absl::StatusOr<Value> sum = ReduceOnHost(ReduceOp::kSum, v, std::nullopt, 2);
  EXPECT_EQ(sum->tensor().dtype(), DType::kI32);
  EXPECT_EQ(sum->tensor().scalar<int32_t>(), 3);
}

TEST(ReduceTest, MeanIntAxisOnIntegersReturnsFloat64) {
  Value v = PR({Tensor::Vector<int64_t>({1, 2}), Tensor::Vector<int64_t>({4})});
  absl::StatusOr<Value> mean = ReduceOnHost(ReduceOp::kMean, v, 0, 2);
  ASSERT_THAT(mean, IsOk());
  EXPECT_EQ(mean->tensor().dtype(), DType::kF64);
  EXPECT_EQ(mean->tensor().scalar<double>(), 7.0 / 3.0);
  Value v32 =
      PR({Tensor::Vector<int32_t>({1, 2}), Tensor::Vector<int32_t>({3})});
  EXPECT_EQ(ReduceOnHost(ReduceOp::kMean, v32, 0, 2)->tensor().dtype(),
            DType::kF64);
  // tf.truediv maps uint8 to float32.
  Value v8 =
      PR({Tensor::Vector<uint8_t>({1, 2}), Tensor::Vector<uint8_t>({3})});
  EXPECT_EQ(ReduceOnHost(ReduceOp::kMean, v8, 0, 2)->tensor().dtype(),
            DType::kF32);
  // SUM keeps the dtype.
  EXPECT_EQ(ReduceOnHost(ReduceOp::kSum, v, 0, 2)->tensor().scalar<int64_t>(),
            7);
}

TEST(ReduceTest, AxisOutOfRangeNamesAxisAndRankForSumAndMean) {
  Value v = PR({F({1, 2}), F({3, 4})});
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    EXPECT_THAT(
        ReduceOnHost(op, v, 1, 2),
        StatusIs(
            absl::StatusCode::kInvalidArgument,
            AllOf(HasSubstr("`axis` = 1 out of range for `value` with rank 1"),
                  HasSubstr("Invalid reduction dimension 1 for input with 1 "
                            "dimensions"))));
    EXPECT_THAT(
        ReduceOnHost(op, v, -2, 2),
        StatusIs(
            absl::StatusCode::kInvalidArgument,
            HasSubstr("`axis` = -2 out of range for `value` with rank 1")));
  }
}

TEST(ReduceTest, NegativeAxisCountsFromTheEnd) {
  Value v = PR({Tensor::FromVector<float>(Shape({2, 2}), {1, 2, 3, 4}),
                Tensor::FromVector<float>(Shape({2, 2}), {5, 6, 7, 8})});
  EXPECT_THAT(Floats(ReduceOnHost(ReduceOp::kSum, v, -1, 2)),
              ElementsAre(14, 22));
  EXPECT_THAT(Floats(ReduceOnHost(ReduceOp::kMean, v, -1, 2)),
              ElementsAre(3.5, 5.5));
}

TEST(ReduceTest, SumAcceptsSequenceAxisAndEmptySequenceMeansNoAxisReduction) {
  Value v = PR({Tensor::FromVector<float>(Shape({2, 2}), {1, 2, 3, 4}),
                Tensor::FromVector<float>(Shape({2, 2}), {5, 6, 7, 8})});
  EXPECT_EQ(
      Scalar(ReduceOnHost(ReduceOp::kSum, v, ReduceAxis::Sequence({0, 1}), 2)),
      36.0);
  EXPECT_THAT(
      Floats(ReduceOnHost(ReduceOp::kSum, v, ReduceAxis::Sequence({0}), 2)),
      ElementsAre(16, 20));
  absl::StatusOr<Value> none =
      ReduceOnHost(ReduceOp::kSum, v, ReduceAxis::Sequence({}), 2);
  EXPECT_EQ(none->tensor().shape(), Shape({2, 2}));
  EXPECT_THAT(Floats(none), ElementsAre(6, 8, 10, 12));
  EXPECT_THAT(ReduceOnHost(ReduceOp::kSum, v, ReduceAxis::Sequence({0, -2}), 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("duplicate reduction axis")));
}

TEST(ReduceTest, MeanRejectsSequenceAxis) {
  Value v = PR({F({1, 2}), F({3, 4})});
  EXPECT_THAT(ReduceOnHost(ReduceOp::kMean, v, ReduceAxis::Sequence({0}), 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Expected `axis` to be an integer not: [0]")));
}

TEST(ReduceTest, MirroredSumCountsEveryCopy) {
  Value v = Mirrored<Tensor>::Replicate(4, F({1, 2}));
  EXPECT_THAT(Floats(ReduceOnHost(ReduceOp::kSum, v, std::nullopt, 4)),
              ElementsAre(4, 8));
  EXPECT_THAT(Floats(ReduceOnHost(ReduceOp::kMean, v, std::nullopt, 4)),
              ElementsAre(1, 2));
}

TEST(ReduceTest, MeanMultipliesByRoundedInverseInBfloat16) {
  // bf16(1/3) = 0.333984375; 3 * that = 1.001953125 -> bf16 rounds to 1.0.
  auto b = [](float x) {
    return Tensor::Scalar<runtime::BFloat16>(runtime::BFloat16::FromFloat(x));
  };
  Value v = PR({b(1), b(1), b(1)});
  absl::StatusOr<Value> mean =
      ReduceOnHost(ReduceOp::kMean, v, std::nullopt, 3);
  ASSERT_THAT(mean, IsOk());
  EXPECT_EQ(mean->tensor().dtype(), DType::kBF16);
  EXPECT_EQ(mean->tensor().AsDouble(0), 1.0);
  Value w =
      PR({b(3), b(3), b(3)});  // sum 9 * 0.333984375 = 3.005859375 -> bf16 3.0
  EXPECT_EQ(
      ReduceOnHost(ReduceOp::kMean, w, std::nullopt, 3)->tensor().AsDouble(0),
      3.0);
}

TEST(ReduceTest, StringTensorsAreRejected) {
  Value v =
      PR({Tensor::Scalar<std::string>("a"), Tensor::Scalar<std::string>("b")});
  EXPECT_THAT(
      ReduceOnHost(ReduceOp::kSum, v, std::nullopt, 2),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("string")));
}

TEST(ReduceTest, AbstractComponentsGiveAbstractResultOfTheRightShape) {
  Value v = PR({Tensor::Abstract(DType::kF32, Shape({4, 3})),
                Tensor::Abstract(DType::kF32, Shape({2, 3}))});
  absl::StatusOr<Value> sum = ReduceOnHost(ReduceOp::kSum, v, 0, 2);
  ASSERT_THAT(sum, IsOk());
  EXPECT_FALSE(sum->tensor().has_data());
  EXPECT_EQ(sum->tensor().shape(), Shape({3}));
}

TEST(ReduceOpTest, NamesAreCaseInsensitiveAndUnknownIsInvalidArgument) {
  EXPECT_EQ(*ReduceOpFromString("sum"), ReduceOp::kSum);
  EXPECT_EQ(*ReduceOpFromString("Mean"), ReduceOp::kMean);
  EXPECT_EQ(*ReduceOpFromString("SUM"), ReduceOp::kSum);
  EXPECT_THAT(ReduceOpFromString("max"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'MAX' is not a valid ReduceOp"),
                             HasSubstr("SUM and MEAN"))));
  EXPECT_THAT(ReduceOpArg("min").Resolve(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'MIN'")));
  EXPECT_EQ(*ReduceOpArg(ReduceOp::kMean).Resolve(), ReduceOp::kMean);
}

TEST(ReduceAxisTest, ToStringShowsTheKind) {
  EXPECT_EQ(ReduceAxis().ToString(), "None");
  EXPECT_EQ(ReduceAxis(std::nullopt).ToString(), "None");
  EXPECT_EQ(ReduceAxis(-1).ToString(), "-1");
  EXPECT_EQ(ReduceAxis::Sequence({0, 1}).ToString(), "[0, 1]");
}

// Reduce misuse never crashes: every combination of dtype, per-replica shapes,
// value kind, axis form and op gives OK or InvalidArgument.
TEST(ReduceTest, SweepOfMisuseNeverCrashes) {
  const std::vector<DType> dtypes = {DType::kF32,  DType::kF64, DType::kBF16,
                                     DType::kI32,  DType::kI64, DType::kU8,
                                     DType::kBytes};
  const std::vector<Shape> shapes = {Shape(),       Shape({0}),
                                     Shape({2}),    Shape({2, 0}),
                                     Shape({1, 3}), Shape({2, 1, 2})};
  std::vector<ReduceAxis> axes = {
      ReduceAxis(), ReduceAxis::Sequence({}), ReduceAxis::Sequence({0, 0}),
      ReduceAxis::Sequence({0, -1}), ReduceAxis::Sequence({5})};
  for (int a = -4; a <= 4; ++a) axes.push_back(ReduceAxis(a));
  int ok = 0, invalid = 0;
  for (DType dtype : dtypes) {
    for (const Shape& s0 : shapes) {
      for (const Shape& s1 : shapes) {
        const Tensor t0 = Tensor::Zeros(dtype, s0);
        const Tensor t1 =
            Tensor::Zeros(dtype == DType::kI32 ? DType::kF32 : dtype, s1);
        const std::vector<Value> values = {
            PR({t0, t1}), Value(Mirrored<Tensor>({t0, t0})), Value(t0),
            Value::Number(s0.rank()), PR({})};
        for (const Value& v : values) {
          for (const ReduceAxis& axis : axes) {
            for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
              for (int n : {1, 2}) {
                absl::StatusOr<Value> r = ReduceOnHost(op, v, axis, n);
                if (r.ok()) {
                  ++ok;
                } else {
                  ASSERT_EQ(r.status().code(),
                            absl::StatusCode::kInvalidArgument)
                      << r.status();
                  ASSERT_FALSE(r.status().message().empty());
                  ++invalid;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(ok, 1000);
  EXPECT_GT(invalid, 1000);
}

}  // namespace
// Issue 7: integer sums wrap in two's complement as TF's do (int32 and int64),
// never signed-overflow UB, never saturation.
TEST(ReduceTest, IntegerSumsWrapLikeTensorFlow) {
  constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  absl::StatusOr<Value> sum32 =
      ReduceOnHost(ReduceOp::kSum,
                   PR({Tensor::Vector<int32_t>({kMax32, 5}),
                       Tensor::Vector<int32_t>({1, 7})}),
                   std::nullopt, 2);
  ASSERT_THAT(sum32, IsOk());
  EXPECT_THAT(sum32->tensor().values<int32_t>(),
              ElementsAre(std::numeric_limits<int32_t>::min(), 12));
  absl::StatusOr<Value> sum64 = ReduceOnHost(
      ReduceOp::kSum,
      PR({Tensor::Vector<int64_t>({kMax64}), Tensor::Vector<int64_t>({2})}),
      std::nullopt, 2);
  ASSERT_THAT(sum64, IsOk());
  EXPECT_THAT(sum64->tensor().values<int64_t>(),
              ElementsAre(std::numeric_limits<int64_t>::min() + 1));
  // Along an axis (reduce_sum): the same wrap.
  absl::StatusOr<Tensor> axis = ReduceSumAxes(
      Tensor::Vector<int64_t>({kMax64, kMax64, 3}), std::vector<int>{0});
  ASSERT_THAT(axis, IsOk());
  EXPECT_EQ(axis->values<int64_t>()[0], 1);  // 2 * (2^63-1) + 3 mod 2^64
}

}  // namespace tpusim::strategy
