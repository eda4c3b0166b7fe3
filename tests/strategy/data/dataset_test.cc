#include "strategy/data/dataset.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/data/dataset_nodes.h"

namespace tpusim::data {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

using Ints = std::vector<int64_t>;

// Every element of a dataset whose elements are single int64 tensors, each
// flattened.
std::vector<Ints> Collect(const Dataset& ds) {
  absl::StatusOr<std::vector<Element>> all = ds.Collect();
  EXPECT_THAT(all, IsOk());
  std::vector<Ints> out;
  if (!all.ok()) return out;
  for (const Element& e : *all) {
    auto v = e.leaf().values<int64_t>();
    out.emplace_back(v.begin(), v.end());
  }
  return out;
}

// The same for scalar elements.
Ints Scalars(const Dataset& ds) {
  Ints out;
  for (const Ints& v : Collect(ds)) {
    EXPECT_EQ(v.size(), 1u);
    if (!v.empty()) out.push_back(v[0]);
  }
  return out;
}

std::string Spec(const Dataset& ds) {
  if (!ds.ok()) return ds.status().ToString();
  return ElementSpecToString(ds.element_spec());
}

Tensor I64(std::vector<int64_t> v) { return Tensor::Vector<int64_t>(v); }

// ---- range ----

TEST(DatasetTest, RangeWithStopCountsFromZero) {
  EXPECT_THAT(Scalars(Dataset::Range(5)), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_EQ(Spec(Dataset::Range(5)), "int64[]");
}

TEST(DatasetTest, RangeHonoursStartStopAndStep) {
  EXPECT_THAT(Scalars(Dataset::Range(2, 10, 3)), ElementsAre(2, 5, 8));
  EXPECT_THAT(Scalars(Dataset::Range(10, 0, -3)), ElementsAre(10, 7, 4, 1));
  EXPECT_THAT(Scalars(Dataset::Range(5, 5)), IsEmpty());
  EXPECT_THAT(Scalars(Dataset::Range(5, 2)), IsEmpty());
}

TEST(DatasetTest, RangeNearInt64LimitsDoesNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_THAT(Scalars(Dataset::Range(kMax - 2, kMax)),
              ElementsAre(kMax - 2, kMax - 1));
  EXPECT_THAT(Scalars(Dataset::Range(kMin + 1, kMin, -1)),
              ElementsAre(kMin + 1));
  EXPECT_THAT(Scalars(Dataset::Range(kMin, kMax, kMax)),
              ElementsAre(kMin, -1, kMax - 1));
  EXPECT_THAT(Scalars(Dataset::Range(kMax, kMin, kMin)), ElementsAre(kMax, -1));
  Dataset all = Dataset::Range(kMin, kMax);
  const auto& huge = static_cast<const RangeNode&>(*all.node());
  EXPECT_EQ(huge.size(), kMax);
}

TEST(DatasetTest, RangeRejectsZeroStep) {
  EXPECT_THAT(Dataset::Range(0, 10, 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("step must be a non-zero integer")));
}

// ---- from_tensors / from_tensor_slices ----

TEST(DatasetTest, FromTensorsGivesOneElement) {
  Dataset ds = Dataset::FromTensors(TensorRefNest(I64({1, 2})));
  EXPECT_THAT(Collect(ds), ElementsAre(ElementsAre(1, 2)));
  EXPECT_EQ(Spec(ds), "int64[2]");
}

TEST(DatasetTest, FromTensorSlicesSlicesEveryComponentAlongDimZero) {
  Tensor a = I64({1, 2, 3});
  Tensor b =
      Tensor::FromVector<int64_t>(Shape({3, 2}), {10, 11, 20, 21, 30, 31});
  Dataset ds = Dataset::FromTensorSlices(
      TensorRefNest::Tuple({TensorRefNest(a), TensorRefNest(b)}));
  EXPECT_EQ(Spec(ds), "(int64[], int64[2])");
  absl::StatusOr<std::vector<Element>> all = ds.Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[1].children()[0].leaf().scalar<int64_t>(), 2);
  EXPECT_THAT((*all)[2].children()[1].leaf().values<int64_t>(),
              ElementsAre(30, 31));
}

TEST(DatasetTest, FromTensorSlicesOfDictKeepsKeys) {
  Dataset ds = Dataset::FromTensorSlices(TensorRefNest::Dict(
      {{"y", TensorRefNest(I64({7, 8}))},
       {"x", TensorRefNest(Tensor::Vector<std::string>({"a", "b"}))}}));
  EXPECT_EQ(Spec(ds), "{x: string[], y: int64[]}");
  absl::StatusOr<std::vector<Element>> all = ds.Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].children()[0].leaf().scalar<std::string>(), "b");
  EXPECT_EQ((*all)[1].children()[1].leaf().scalar<int64_t>(), 8);
}

TEST(DatasetTest, FromTensorSlicesRejectsDifferentDimZero) {
  Dataset ds = Dataset::FromTensorSlices(TensorRefNest::Tuple(
      {TensorRefNest(I64({1, 2, 3})), TensorRefNest(I64({1, 2}))}));
  EXPECT_THAT(ds.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("dimension 0 of every component must match; "
                                 "component 0 has 3 and component 1 has 2")));
  EXPECT_THAT(ds.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Dimensions 3 and 2 are not compatible")));
}

TEST(DatasetTest, FromTensorSlicesRejectsScalars) {
  EXPECT_THAT(
      Dataset::FromTensorSlices(TensorRefNest(Tensor::Scalar<int64_t>(3)))
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("is a scalar; every component needs rank >= 1")));
}

TEST(DatasetTest, NumpyDocExampleOnesGivesTenFloatScalars) {
  // Spec (g): experimental_make_numpy_dataset(ones([10])) is
  // from_tensor_slices: 10 scalar float32 elements.
  Dataset ds = Dataset::FromTensorSlices(Element(
      Tensor::FromVector<float>(Shape({10}), std::vector<float>(10, 1.0f))));
  EXPECT_EQ(Spec(ds), "float32[]");
  absl::StatusOr<std::vector<Element>> all = ds.Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 10u);
  for (const Element& e : *all) EXPECT_EQ(e.leaf().scalar<float>(), 1.0f);
}

TEST(DatasetTest, FromTensorsOfAnElementTakesConstants) {
  Dataset ds = Dataset::FromTensors(Element::Tuple(
      {Element(I64({1})), Element(Tensor::Scalar<std::string>("s"))}));
  EXPECT_EQ(Spec(ds), "(int64[1], string[])");
  EXPECT_EQ(ds.Collect()->size(), 1u);
}

TEST(DatasetTest, NestedFunctionsSeeTheirOwnArgument) {
  Dataset ds = Dataset::Range(2).FlatMap([](const FunctionArg& outer) {
    return Dataset::FromTensors(outer.nest())
        .Repeat(2)
        .Batch(2)
        .FlatMap([](const FunctionArg& inner) {
          return Dataset::FromTensorSlices(inner.nest());
        });
  });
  EXPECT_THAT(Scalars(ds), ElementsAre(0, 0, 1, 1));
}

// ---- batch ----

TEST(DatasetTest, BatchKeepsPartialLastBatchAndHasUnknownBatchDim) {
  Dataset ds = Dataset::Range(10).Batch(4);
  EXPECT_THAT(Collect(ds),
              ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7),
                          ElementsAre(8, 9)));
  EXPECT_EQ(Spec(ds), "int64[?]");
}

TEST(DatasetTest, BatchDropRemainderDropsPartialBatchAndKnowsBatchDim) {
  Dataset ds = Dataset::Range(10).Batch(4, /*drop_remainder=*/true);
  EXPECT_THAT(Collect(ds),
              ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7)));
  EXPECT_EQ(Spec(ds), "int64[4]");
}

TEST(DatasetTest, BatchStacksComponentsOfTuples) {
  Tensor m = Tensor::FromVector<int64_t>(Shape({3, 2}), {0, 1, 2, 3, 4, 5});
  Dataset ds = Dataset::FromTensorSlices(
                   TensorRefNest::Tuple(
                       {TensorRefNest(I64({7, 8, 9})), TensorRefNest(m)}))
                   .Batch(2);
  EXPECT_EQ(Spec(ds), "(int64[?], int64[?,2])");
  absl::StatusOr<std::vector<Element>> all = ds.Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].children()[1].leaf().shape(), Shape({2, 2}));
  EXPECT_THAT((*all)[0].children()[1].leaf().values<int64_t>(),
              ElementsAre(0, 1, 2, 3));
  EXPECT_THAT((*all)[1].children()[0].leaf().values<int64_t>(), ElementsAre(9));
}

TEST(DatasetTest, BatchOfConsecutiveSlicesIsAZeroCopyView) {
  Tensor m = Tensor::FromVector<float>(Shape({4, 3}),
                                       {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  Dataset ds = Dataset::FromTensorSlices(TensorRefNest(m)).Batch(2);
  absl::StatusOr<std::vector<Element>> all = ds.Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 2u);
  const Tensor& second = (*all)[1].leaf();
  EXPECT_EQ(second.shape(), Shape({2, 3}));
  EXPECT_THAT(second.values<float>(), ElementsAre(6, 7, 8, 9, 10, 11));
  EXPECT_EQ(second.values<float>().data(), m.values<float>().data() + 6);
}

TEST(DatasetTest, StackElementsCopiesNonAdjacentParts) {
  Tensor m = Tensor::FromVector<int64_t>(Shape({3}), {5, 6, 7});
  absl::StatusOr<Element> s =
      StackElements({Element(m.Row(2)), Element(m.Row(0))});
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(s->leaf().values<int64_t>(), ElementsAre(7, 5));
  EXPECT_THAT(
      StackElements({}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no elements")));
  EXPECT_THAT(
      StackElements({Element(m), Element::Tuple({Element(m)})}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("element 1 has structure (*,)")));
}

TEST(DatasetTest, BatchRejectsNonPositiveBatchSize) {
  EXPECT_THAT(
      Dataset::Range(3).Batch(0).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("batch_size must be greater than zero, got 0")));
}

TEST(DatasetTest, BatchOfDifferentShapesFailsWhenIterated) {
  MapFunction f;
  f.fn = [](const Element& e) -> absl::StatusOr<Element> {
    const int64_t n = e.leaf().scalar<int64_t>();
    return Element(Tensor::Zeros(DType::kI64, Shape({n + 1})));
  };
  f.output_spec =
      ElementSpec(TensorSpec{DType::kI64, Shape({runtime::kUnknownDim})});
  Dataset ds = Dataset::Range(3).Map(f).Batch(2);
  EXPECT_EQ(Spec(ds), "int64[?,?]");
  EXPECT_THAT(
      ds.Collect().status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("Cannot batch tensors with different shapes in "
                         "component 0")));
}

// ---- shard ----

TEST(DatasetTest, ShardKeepsEveryNthElementFromIndex) {
  EXPECT_THAT(Scalars(Dataset::Range(10).Shard(3, 1)), ElementsAre(1, 4, 7));
  EXPECT_THAT(Scalars(Dataset::Range(10).Shard(3, 0)), ElementsAre(0, 3, 6, 9));
  EXPECT_THAT(Scalars(Dataset::Range(2).Shard(3, 2)), IsEmpty());
}

// Shard skips the other shards' elements through DatasetIterator::Skip (range,
// repeat, take and batch skip without making elements); the result is what
// reading and dropping gives, computed here from plain lists.
TEST(DatasetTest, ShardOverSkippingIteratorsKeepsExactlyItsBatches) {
  for (bool drop : {false, true}) {
    std::vector<int64_t> rows;
    for (int pass = 0; pass < 3; ++pass) {
      for (int64_t v = 0; v < 103; ++v) rows.push_back(v);
    }
    rows.resize(250);
    std::vector<Ints> batches;
    for (size_t i = 0; i < rows.size(); i += 4) {
      Ints b(rows.begin() + i, rows.begin() + std::min(rows.size(), i + 4));
      if (!drop || b.size() == 4) batches.push_back(b);
    }
    for (int index = 0; index < 5; ++index) {
      std::vector<Ints> expected;
      for (size_t k = index; k < batches.size(); k += 5)
        expected.push_back(batches[k]);
      EXPECT_EQ(
          Collect(Dataset::Range(103).Repeat(3).Take(250).Batch(4, drop).Shard(
              5, index)),
          expected)
          << "drop " << drop << " index " << index;
    }
  }
}

TEST(DatasetTest, ShardStillRaisesTheErrorOfASkippedBatch) {
  // Elements of different lengths cannot be stacked; the batch that shard
  // (2, 1) drops fails as TF's read-and-drop would.
  MapFunction ragged;
  ragged.name = "ragged";
  ragged.output_spec = ElementSpec(TensorSpec{DType::kI64, Shape({-1})});
  ragged.fn = [](const Element& e) -> absl::StatusOr<Element> {
    const int64_t n = e.leaf().AsInt64(0);
    return Element(Tensor::FromVector<int64_t>(Shape({n}), Ints(n, n)));
  };
  absl::StatusOr<std::vector<Element>> all =
      Dataset::Range(4).Map(ragged).Batch(2).Shard(2, 1).Collect();
  EXPECT_THAT(all, StatusIs(absl::StatusCode::kInvalidArgument,
                            HasSubstr("Cannot batch tensors with different "
                                      "shapes in component 0")));
}

// TF 2.21 (tests/conformance/, known difference skip_all_reads_nothing):
// skip(-1) never reads its input, so neither an endless input nor a failing
// batch is touched; skip(n) with n >= 0 still raises the skipped batch's
// error.
TEST(DatasetTest, SkipAllReadsNothingOfItsInput) {
  EXPECT_THAT(Scalars(Dataset::Range(3).Repeat(-1).Skip(-1)), IsEmpty());
  MapFunction ragged;
  ragged.name = "ragged";
  ragged.output_spec = ElementSpec(TensorSpec{DType::kI64, Shape({-1})});
  ragged.fn = [](const Element& e) -> absl::StatusOr<Element> {
    const int64_t n = e.leaf().AsInt64(0);
    return Element(Tensor::FromVector<int64_t>(Shape({n}), Ints(n, n)));
  };
  absl::StatusOr<std::vector<Element>> all =
      Dataset::Range(4).Map(ragged).Batch(2).Skip(-1).Collect();
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(*all, IsEmpty());
  EXPECT_THAT(Dataset::Range(4).Map(ragged).Batch(2).Skip(1).Collect(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Cannot batch tensors with different "
                                 "shapes in component 0")));
}

// TF 2.21 (tests/conformance/, map_and_batch_checks_dropped_rows):
// map_and_batch copies each row into its batch as it arrives, so rows of
// different shapes fail even in the partial batch drop_remainder drops;
// plain batch drops that batch without stacking it.
TEST(DatasetTest, MapAndBatchChecksTheRowsOfADroppedPartialBatch) {
  MapFunction identity;
  identity.name = "identity";
  identity.output_spec =
      ElementSpec(TensorSpec{DType::kI64, Shape({runtime::kUnknownDim})});
  identity.fn = [](const Element& e) -> absl::StatusOr<Element> { return e; };
  // range(7).batch(5): rows [0..4] and [5, 6].
  EXPECT_THAT(Dataset::Range(7).Batch(5).MapAndBatch(identity, 3, true)
                  .Collect(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Cannot batch tensors with different "
                                 "shapes in component 0")));
  absl::StatusOr<std::vector<Element>> plain =
      Dataset::Range(7).Batch(5).Batch(3, true).Collect();
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_THAT(*plain, IsEmpty());
  // TF's default map_and_batch_fusion makes map + batch one map_and_batch:
  // a batch directly after a (non-identity) map checks too; with a prefetch
  // between, or after an identity map (which TF removes), not. TF 2.21:
  // range(7).batch(5).map(lambda x: x * x).batch(3, drop_remainder=True)
  // fails, .map(lambda x: x) and .map(f).prefetch(1) give [].
  MapFunction square = identity;
  square.name = "square";
  square.fn = [](const Element& e) -> absl::StatusOr<Element> { return e; };
  EXPECT_THAT(Dataset::Range(7).Batch(5).Map(square).Batch(3, true).Collect(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Cannot batch tensors with different "
                                 "shapes in component 0")));
  for (const Dataset& ds :
       {Dataset::Range(7).Batch(5).Map(identity).Batch(3, true),
        Dataset::Range(7).Batch(5).Map(square).Prefetch(1).Batch(3, true)}) {
    absl::StatusOr<std::vector<Element>> dropped = ds.Collect();
    ASSERT_TRUE(dropped.ok()) << dropped.status();
    EXPECT_THAT(*dropped, IsEmpty());
  }
  // Rows of one shape: the partial batch is dropped as before.
  absl::StatusOr<std::vector<Element>> same =
      Dataset::Range(8).Batch(4).MapAndBatch(identity, 3, true).Collect();
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_THAT(*same, IsEmpty());
}

TEST(DatasetTest, ShardValidatesNumShardsAndIndex) {
  EXPECT_THAT(Dataset::Range(10).Shard(0, 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Number of shards must be greater than zero "
                                 "(currently num_shards = 0)")));
  EXPECT_THAT(Dataset::Range(10).Shard(2, 2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Index must be between 0 and 1 (currently "
                                 "index = 2)")));
  EXPECT_THAT(Dataset::Range(10).Shard(2, -1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("currently index = -1")));
}

TEST(DatasetTest, ConstructionErrorsAreStickyThroughLaterBuilders) {
  Dataset ds = Dataset::Range(10).Shard(0, 0).Batch(2).Repeat(3);
  EXPECT_FALSE(ds.ok());
  EXPECT_THAT(ds.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("num_shards = 0")));
  EXPECT_THAT(ds.MakeIterator().status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("num_shards = 0")));
}

// ---- repeat / take / skip / prefetch ----

TEST(DatasetTest, RepeatRepeatsCountTimes) {
  EXPECT_THAT(Scalars(Dataset::Range(3).Repeat(2)),
              ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_THAT(Scalars(Dataset::Range(3).Repeat(0)), IsEmpty());
}

TEST(DatasetTest, RepeatForeverWithTakeAndEmptyInputTerminates) {
  EXPECT_THAT(Scalars(Dataset::Range(3).Repeat().Take(7)),
              ElementsAre(0, 1, 2, 0, 1, 2, 0));
  EXPECT_THAT(Scalars(Dataset::Range(0).Repeat()), IsEmpty());
  EXPECT_THAT(Scalars(Dataset::Range(0).Repeat(3)), IsEmpty());
}

TEST(DatasetTest, RepeatRejectsCountBelowMinusOne) {
  EXPECT_THAT(
      Dataset::Range(3).Repeat(-2).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("count must be -1 (forever) or >= 0, got -2")));
}

TEST(DatasetTest, TakeAndSkipCountElements) {
  EXPECT_THAT(Scalars(Dataset::Range(10).Take(3)), ElementsAre(0, 1, 2));
  EXPECT_THAT(Scalars(Dataset::Range(3).Take(-1)), ElementsAre(0, 1, 2));
  EXPECT_THAT(Scalars(Dataset::Range(3).Take(10)), ElementsAre(0, 1, 2));
  EXPECT_THAT(Scalars(Dataset::Range(10).Skip(7)), ElementsAre(7, 8, 9));
  EXPECT_THAT(Scalars(Dataset::Range(10).Skip(-1)), IsEmpty());
  EXPECT_THAT(Scalars(Dataset::Range(3).Skip(5)), IsEmpty());
  EXPECT_THAT(Dataset::Range(3).Take(-2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("take")));
  EXPECT_THAT(Dataset::Range(3).Skip(-2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("skip")));
}

TEST(DatasetTest, PrefetchPassesElementsThrough) {
  EXPECT_THAT(Scalars(Dataset::Range(4).Prefetch(2)), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(Scalars(Dataset::Range(2).Prefetch(kAutotune)),
              ElementsAre(0, 1));
  EXPECT_THAT(Dataset::Range(3).Prefetch(-2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("buffer_size must be >= 0 or AUTOTUNE")));
}

// ---- map / filter ----

Element Times(const Element& e, int64_t k) {
  return Element(Tensor::Scalar<int64_t>(e.leaf().scalar<int64_t>() * k));
}

TEST(DatasetTest, MapAppliesFunctionAndInfersSpec) {
  Dataset ds = Dataset::Range(4).Map(
      [](const Element& e) -> absl::StatusOr<Element> { return Times(e, 10); });
  EXPECT_THAT(Scalars(ds), ElementsAre(0, 10, 20, 30));
  EXPECT_EQ(Spec(ds), "int64[]");
}

// map(num_parallel_calls=k): the input order whatever k, and also with
// deterministic = false (tpusim's documented choice); the setting shows on
// the node; 0 and < -1 are InvalidArgument.
TEST(DatasetTest, ParallelMapKeepsTheInputOrder) {
  for (int64_t k : {int64_t{1}, int64_t{4}, int64_t{-1}}) {
    for (bool deterministic : {true, false}) {
      MapFunction f;
      f.fn = [](const Element& e) -> absl::StatusOr<Element> {
        return Times(e, 10);
      };
      f.num_parallel_calls = k;
      f.deterministic = deterministic;
      Dataset ds = Dataset::Range(6).Map(f);
      EXPECT_THAT(Scalars(ds), ElementsAre(0, 10, 20, 30, 40, 50)) << k;
    }
  }
  MapFunction f;
  f.fn = [](const Element& e) -> absl::StatusOr<Element> { return e; };
  f.num_parallel_calls = -1;
  f.deterministic = false;
  EXPECT_THAT(Dataset::Range(2).Map(f).node()->ShortString(),
              HasSubstr("num_parallel_calls=AUTOTUNE, deterministic=false"));
  for (int64_t bad : {int64_t{0}, int64_t{-2}}) {
    f.num_parallel_calls = bad;
    EXPECT_THAT(Dataset::Range(2).Map(f).Collect(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("map: num_parallel_calls=", bad,
                                                ": must be >= 1 or -1 (AUTOTUNE)"))));
  }
}

TEST(DatasetTest, MapSpecInferenceKeepsUnknownDimsUnknown) {
  // Identity on [?] stays [?]; a reduction to a scalar is known.
  Dataset batched = Dataset::Range(10).Batch(3);
  EXPECT_EQ(Spec(batched.Map(
                [](const Element& e) -> absl::StatusOr<Element> { return e; })),
            "int64[?]");
  Dataset summed = batched.Map([](const Element& e) -> absl::StatusOr<Element> {
    int64_t s = 0;
    for (int64_t v : e.leaf().values<int64_t>()) s += v;
    return Element(Tensor::Scalar<int64_t>(s));
  });
  EXPECT_EQ(Spec(summed), "int64[]");
  EXPECT_THAT(Scalars(summed), ElementsAre(3, 12, 21, 9));
}

TEST(DatasetTest, MapWhoseProbeFailsAsksForOutputSpec) {
  Dataset ds =
      Dataset::Range(3).Map([](const Element&) -> absl::StatusOr<Element> {
        return absl::InvalidArgumentError("boom");
      });
  EXPECT_THAT(ds.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("declare MapFunction::output_spec")));
}

TEST(DatasetTest, MapDoesNotProbeHugeElements) {
  Dataset huge = Dataset::FromTensors(TensorRefNest(TensorRef::Argument(
      0, TensorSpec{DType::kF32, Shape({1 << 20, 1 << 20})})));
  // A body-only reference is fine for spec purposes; the map must refuse to
  // probe a 2^40-value element and ask for an output_spec instead.
  Dataset ds =
      huge.Map([](const Element& e) -> absl::StatusOr<Element> { return e; });
  EXPECT_THAT(ds.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("would exceed 16777216 values")));
}

TEST(DatasetTest, MapResultMustMatchDeclaredSpec) {
  MapFunction f;
  f.fn = [](const Element& e) -> absl::StatusOr<Element> {
    return Element(Tensor::Scalar<float>(1.0f));
  };
  f.output_spec = ElementSpec(TensorSpec{DType::kI64, Shape()});
  EXPECT_THAT(Dataset::Range(2).Map(f).Collect().status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("returned an element of spec float32[]")));
}

TEST(DatasetTest, MapErrorsPropagateFromIteration) {
  MapFunction f;
  f.fn = [](const Element& e) -> absl::StatusOr<Element> {
    if (e.leaf().scalar<int64_t>() == 2) return absl::DataLossError("bad 2");
    return e;
  };
  f.output_spec = ElementSpec(TensorSpec{DType::kI64, Shape()});
  absl::StatusOr<IteratorPtr> it = Dataset::Range(5).Map(f).MakeIterator();
  ASSERT_THAT(it, IsOk());
  EXPECT_THAT((*it)->GetNext(), IsOk());
  EXPECT_THAT((*it)->GetNext(), IsOk());
  EXPECT_THAT((*it)->GetNext(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bad 2")));
}

TEST(DatasetTest, FilterKeepsElementsWherePredicateIsTrueAndKeepsSpec) {
  Dataset ds = Dataset::Range(10).Batch(2).Filter(
      [](const Element& e) -> absl::StatusOr<bool> {
        return e.leaf().values<int64_t>()[0] % 4 == 0;
      });
  EXPECT_EQ(Spec(ds), "int64[?]");
  EXPECT_THAT(Collect(ds), ElementsAre(ElementsAre(0, 1), ElementsAre(4, 5),
                                       ElementsAre(8, 9)));
}

TEST(DatasetTest, HostCostsAreCollectedAlongTheGraph) {
  auto id = [](const Element& e) -> absl::StatusOr<Element> { return e; };
  Dataset ds = Dataset::Range(10)
                   .Map(id, common::Picoseconds(500))
                   .Batch(2)
                   .Map(id, common::Picoseconds(7000));
  std::vector<NodeCost> costs = CollectHostCosts(ds.node());
  ASSERT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs[0].per_element, common::Picoseconds(500));
  EXPECT_EQ(costs[1].per_element, common::Picoseconds(7000));
  EXPECT_EQ(costs[1].node, ds.node());
  EXPECT_EQ(ds.node()->host_cost_per_element(), common::Picoseconds(7000));
  EXPECT_EQ(ds.node()->inputs()[0]->host_cost_per_element(),
            common::Picoseconds(0));
}

// Every element a costed node produces adds its cost to the meter: those
// returned, those a filter drops, and those skipped.
TEST(DatasetTest, HostWorkIsMeteredPerElementProduced) {
  auto id = [](const Element& e) -> absl::StatusOr<Element> { return e; };
  auto even = [](const Element& e) -> absl::StatusOr<bool> {
    return e.leaf().AsDouble(0) == 0 ||
           static_cast<int64_t>(e.leaf().AsDouble(0)) % 2 == 0;
  };
  Dataset ds = Dataset::Range(10)
                   .WithHostCost(common::Picoseconds(2))
                   .Skip(1)
                   .Filter(even)
                   .Map(id, common::Picoseconds(50));
  auto meter = std::make_shared<HostWorkMeter>();
  auto it = ds.MakeIterator(meter);
  ASSERT_THAT(it, IsOk());
  // Range makes 0 (skipped), 1 (dropped), 2: 3 x 2 ps; map makes 2: 50 ps.
  auto e = (*it)->GetNext();
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ((*e)->leaf().AsDouble(0), 2);
  EXPECT_EQ(meter->work, common::Picoseconds(56));
  // 3 (dropped), 4: 2 x 2 ps + 50 ps.
  ASSERT_THAT((*it)->GetNext(), IsOk());
  EXPECT_EQ(meter->work, common::Picoseconds(110));
  // Without a meter nothing is counted and nothing changes.
  EXPECT_THAT(Collect(ds), ElementsAre(ElementsAre(2), ElementsAre(4),
                                       ElementsAre(6), ElementsAre(8)));
}

TEST(DatasetTest, WithHostCostDeclaresAndReplacesTheLastStagesCost) {
  auto id = [](const Element& e) -> absl::StatusOr<Element> { return e; };
  Dataset ds = Dataset::Range(4)
                   .Map(id, common::Picoseconds(500))
                   .WithHostCost(common::Picoseconds(9000))
                   .Batch(2)
                   .WithHostCost(common::Picoseconds::FromNanoseconds(3));
  ASSERT_THAT(ds.status(), IsOk());
  EXPECT_EQ(ds.node()->host_cost_per_element(), common::Picoseconds(3000));
  EXPECT_EQ(ds.node()->inputs()[0]->host_cost_per_element(),
            common::Picoseconds(9000));
  EXPECT_THAT(ds.node()->ShortString(), HasSubstr("host_cost=3.000 ns"));
  // The values are unchanged.
  EXPECT_THAT(Collect(ds), ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3)));
  EXPECT_THAT(
      Dataset::Range(4).Map(id, common::Picoseconds(-7)).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "map: cost=-7ps: a host cost per element must be >= 0"));
}

// ---- shuffle ----

TEST(DatasetTest, ShuffleIsAPermutationDeterministicPerSeed) {
  Dataset a = Dataset::Range(20).Shuffle(20, 42);
  Ints first = Scalars(a);
  Ints again = Scalars(a);
  Ints same_seed = Scalars(Dataset::Range(20).Shuffle(20, 42));
  Ints other_seed = Scalars(Dataset::Range(20).Shuffle(20, 43));
  EXPECT_EQ(first, again);
  EXPECT_EQ(first, same_seed);
  EXPECT_NE(first, other_seed);
  Ints sorted = first;
  std::sort(sorted.begin(), sorted.end());
  Ints expected;
  for (int64_t i = 0; i < 20; ++i) expected.push_back(i);
  EXPECT_EQ(sorted, expected);
  EXPECT_NE(first, expected);
}

TEST(DatasetTest, ShuffleWithBufferOneKeepsOrder) {
  EXPECT_THAT(Scalars(Dataset::Range(5).Shuffle(1, 7)),
              ElementsAre(0, 1, 2, 3, 4));
}

TEST(DatasetTest, ShuffleBufferBoundsHowFarElementsMove) {
  // With a buffer of 2, output i is one of the first i + 2 inputs.
  Ints out = Scalars(Dataset::Range(50).Shuffle(2, 3));
  ASSERT_EQ(out.size(), 50u);
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_LE(out[i], static_cast<int64_t>(i) + 1);
}

TEST(DatasetTest, ShuffleReshufflesEachRepeatEpochOnlyWhenAsked) {
  Ints re = Scalars(Dataset::Range(10).Shuffle(10, 5, true).Repeat(2));
  Ints fixed = Scalars(Dataset::Range(10).Shuffle(10, 5, false).Repeat(2));
  ASSERT_EQ(re.size(), 20u);
  ASSERT_EQ(fixed.size(), 20u);
  EXPECT_NE(Ints(re.begin(), re.begin() + 10), Ints(re.begin() + 10, re.end()));
  EXPECT_EQ(Ints(fixed.begin(), fixed.begin() + 10),
            Ints(fixed.begin() + 10, fixed.end()));
  // The first epoch is the same either way (epoch 0).
  EXPECT_EQ(Ints(re.begin(), re.begin() + 10),
            Ints(fixed.begin(), fixed.begin() + 10));
}

TEST(DatasetTest, ShuffleRejectsEmptyBuffer) {
  EXPECT_THAT(
      Dataset::Range(3).Shuffle(0).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("buffer_size must be greater than zero, got 0")));
}

// ---- cache ----

TEST(DatasetTest, CacheRunsInputOnceAcrossRepeats) {
  auto calls = std::make_shared<int>(0);
  MapFunction f;
  f.fn = [calls](const Element& e) -> absl::StatusOr<Element> {
    ++*calls;
    return e;
  };
  f.output_spec = ElementSpec(TensorSpec{DType::kI64, Shape()});
  Dataset ds = Dataset::Range(3).Map(f).Cache().Repeat(3);
  EXPECT_THAT(Scalars(ds), ElementsAre(0, 1, 2, 0, 1, 2, 0, 1, 2));
  EXPECT_EQ(*calls, 3);
  EXPECT_THAT(Dataset::Range(3).Cache("/tmp/x").status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("only the in-memory cache")));
}

// ---- flat_map / interleave ----

TEST(DatasetTest, FlatMapInstantiatesTheTracedBodyPerElement) {
  Dataset ds = Dataset::Range(6).Batch(4).FlatMap([](const FunctionArg& arg) {
    return Dataset::FromTensorSlices(arg.nest());
  });
  EXPECT_EQ(Spec(ds), "int64[]");
  EXPECT_THAT(Scalars(ds), ElementsAre(0, 1, 2, 3, 4, 5));
  const auto* fm = dynamic_cast<const FlatMapNode*>(ds.node().get());
  ASSERT_NE(fm, nullptr);
  EXPECT_EQ(fm->body()->op(), "TensorSliceDataset");
  EXPECT_EQ(ElementSpecToString(fm->argument_spec()), "int64[?]");
}

TEST(DatasetTest, FlatMapBodyMayRepeatTheArgument) {
  Dataset ds = Dataset::Range(3).FlatMap([](const FunctionArg& arg) {
    return Dataset::FromTensors(arg.nest()).Repeat(2);
  });
  EXPECT_THAT(Scalars(ds), ElementsAre(0, 0, 1, 1, 2, 2));
}

TEST(DatasetTest, TracedBodyCannotBeIteratedAlone) {
  Dataset ds = Dataset::Range(3).FlatMap(
      [](const FunctionArg& arg) { return Dataset::FromTensors(arg.nest()); });
  const auto& fm = static_cast<const FlatMapNode&>(*ds.node());
  EXPECT_THAT(Dataset(fm.body()).Collect().status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("outside a function instantiation")));
}

TEST(DatasetTest, FlatMapFunctionErrorsAreConstructionErrors) {
  Dataset ds = Dataset::Range(3).FlatMap(
      [](const FunctionArg& arg) { return Dataset::Range(1).Batch(0); });
  EXPECT_THAT(ds.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("flat_map function: batch")));
}

TEST(DatasetTest, InterleaveMatchesTensorFlowDocumentationExample) {
  // tf.data docs: range(1, 6).interleave(lambda x: from_tensors(x).repeat(6),
  // cycle_length=2, block_length=4).
  Dataset ds = Dataset::Range(1, 6).Interleave(
      [](const FunctionArg& arg) {
        return Dataset::FromTensors(arg.nest()).Repeat(6);
      },
      /*cycle_length=*/2, /*block_length=*/4);
  EXPECT_THAT(Scalars(ds),
              ElementsAre(1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4,
                          4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5));
}

TEST(DatasetTest, InterleaveWithBlockOneRoundRobinsTheCycle) {
  Dataset ds = Dataset::Range(3).Interleave(
      [](const FunctionArg& arg) {
        return Dataset::FromTensors(arg.nest()).Repeat(2);
      },
      /*cycle_length=*/3, /*block_length=*/1);
  EXPECT_THAT(Scalars(ds), ElementsAre(0, 1, 2, 0, 1, 2));
}

TEST(DatasetTest, InterleaveAutotuneUsesTheDocumentedFixedCycleLength) {
  Dataset ds = Dataset::Range(8).Interleave(
      [](const FunctionArg& arg) {
        return Dataset::FromTensors(arg.nest()).Repeat(2);
      },
      kAutotune, kAutotune);
  const auto& node = static_cast<const InterleaveNode&>(*ds.node());
  EXPECT_EQ(node.cycle_length(), kAutotuneCycleLength);
  EXPECT_EQ(node.cycle_length(), 4);
  EXPECT_EQ(node.block_length(), 1);
  EXPECT_THAT(Scalars(ds),
              ElementsAre(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7));
}

TEST(DatasetTest, InterleaveValidatesLengths) {
  auto fn = [](const FunctionArg& arg) {
    return Dataset::FromTensors(arg.nest());
  };
  EXPECT_THAT(
      Dataset::Range(3).Interleave(fn, 0, 1).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("cycle_length must be >= 1 or AUTOTUNE (-1), got 0")));
  EXPECT_THAT(
      Dataset::Range(3).Interleave(fn, 2, 0).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("block_length must be >= 1 or AUTOTUNE (-1), got 0")));
  EXPECT_THAT(Dataset::Range(3).Interleave(fn, kMaxCycleLength + 1, 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("exceeds tpusim's limit of 1048576")));
}

// ---- zip / concatenate ----

TEST(DatasetTest, ZipEndsAtTheShortestInput) {
  Dataset ds = Dataset::Zip({Dataset::Range(3), Dataset::Range(10, 15)});
  EXPECT_EQ(Spec(ds), "(int64[], int64[])");
  absl::StatusOr<std::vector<Element>> all = ds.Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[2].children()[0].leaf().scalar<int64_t>(), 2);
  EXPECT_EQ((*all)[2].children()[1].leaf().scalar<int64_t>(), 12);
  EXPECT_THAT(Dataset::Zip({}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at least one dataset")));
}

TEST(DatasetTest, ConcatenateChainsInputsAndMergesSpecs) {
  EXPECT_THAT(Scalars(Dataset::Range(3).Concatenate(Dataset::Range(10, 12))),
              ElementsAre(0, 1, 2, 10, 11));
  Dataset ds = Dataset::Range(4).Batch(2, true).Concatenate(
      Dataset::Range(3).Batch(3, true));
  EXPECT_EQ(Spec(ds), "int64[?]");
  EXPECT_THAT(Collect(ds), ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3),
                                       ElementsAre(0, 1, 2)));
  EXPECT_EQ(Spec(Dataset::Range(4).Batch(2, true).Concatenate(
                Dataset::Range(3).Batch(2, true))),
            "int64[2]");
}

TEST(DatasetTest, ConcatenateRejectsIncompatibleSpecs) {
  Dataset strings = Dataset::FromTensorSlices(
      TensorRefNest(Tensor::Vector<std::string>({"a"})));
  EXPECT_THAT(Dataset::Range(3).Concatenate(strings).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("incompatible element specs: int64[] and "
                                 "string[]")));
  EXPECT_THAT(
      Dataset::Range(3).Concatenate(Dataset::Zip({Dataset::Range(1)})).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("structure and dtypes must match")));
}

// ---- options ----

TEST(DatasetTest, OptionsDefaultToAutoAndSurviveTransformations) {
  EXPECT_EQ(Dataset::Range(3).options().auto_shard_policy,
            AutoShardPolicy::kAuto);
  Options o;
  o.auto_shard_policy = AutoShardPolicy::kData;
  Dataset ds = Dataset::Range(8).WithOptions(o).Batch(2).Prefetch(1);
  EXPECT_EQ(ds.options().auto_shard_policy, AutoShardPolicy::kData);
  EXPECT_EQ(static_cast<int>(AutoShardPolicy::kOff), -1);
  EXPECT_EQ(static_cast<int>(AutoShardPolicy::kFile), 1);
  EXPECT_EQ(static_cast<int>(AutoShardPolicy::kData), 2);
  EXPECT_EQ(AutoShardPolicyName(AutoShardPolicy::kFile), "FILE");
}

TEST(DatasetTest, ZipAndConcatenateMergeOptions) {
  Options file;
  file.auto_shard_policy = AutoShardPolicy::kFile;
  Options off;
  off.auto_shard_policy = AutoShardPolicy::kOff;
  EXPECT_EQ(
      Dataset::Zip({Dataset::Range(2), Dataset::Range(2).WithOptions(file)})
          .options()
          .auto_shard_policy,
      AutoShardPolicy::kFile);
  EXPECT_EQ(Dataset::Range(2)
                .WithOptions(off)
                .Concatenate(Dataset::Range(2))
                .options()
                .auto_shard_policy,
            AutoShardPolicy::kOff);
  EXPECT_EQ(Dataset::Range(2)
                .WithOptions(off)
                .Concatenate(Dataset::Range(2).WithOptions(file))
                .options()
                .auto_shard_policy,
            AutoShardPolicy::kFile);
}

TEST(DatasetTest, DebugStringShowsFunctionBodies) {
  Dataset ds = Dataset::TFRecord({"a"});
  EXPECT_EQ(
      ds.node()->DebugString(),
      "FlatMapDataset() -> string[]\n"
      "  body:\n"
      "    TFRecordDataset(filenames=arg[0]:string[], "
      "compression_type=\"\") -> string[]\n"
      "  TensorSliceDataset(components=[string[1]{\"a\"}]) -> string[]\n");
}

TEST(DatasetTest, IteratorsOutliveTheirDataset) {
  IteratorPtr it;
  {
    Dataset ds = Dataset::Range(4)
                     .Map([](const Element& e) -> absl::StatusOr<Element> {
                       return Times(e, 2);
                     })
                     .FlatMap([](const FunctionArg& a) {
                       return Dataset::FromTensors(a.nest()).Repeat(2);
                     })
                     .Concatenate(Dataset::Range(100, 101))
                     .Repeat(2);
    absl::StatusOr<IteratorPtr> made = ds.MakeIterator();
    ASSERT_THAT(made, IsOk());
    it = *std::move(made);
  }
  Ints out;
  while (true) {
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    ASSERT_THAT(e, IsOk());
    if (!e->has_value()) break;
    out.push_back((*e)->leaf().scalar<int64_t>());
  }
  EXPECT_THAT(out, ElementsAre(0, 0, 2, 2, 4, 4, 6, 6, 100, 0, 0, 2, 2, 4, 4, 6,
                               6, 100));
  // After the end, GetNext keeps returning end of sequence.
  absl::StatusOr<std::optional<Element>> again = it->GetNext();
  ASSERT_THAT(again, IsOk());
  EXPECT_FALSE(again->has_value());
}

// ---- graph inspection and rewriting ----

TEST(DatasetTest, NodesExposeTensorFlowOpNamesAndParameters) {
  Dataset ds =
      Dataset::Range(0, 16, 1)
          .Map([](const Element& e) -> absl::StatusOr<Element> { return e; })
          .Batch(8)
          .Shard(2, 1)
          .Repeat(3)
          .Prefetch(2);
  std::vector<std::string> ops;
  for (const NodePtr& n : TopologicalOrder(ds.node())) {
    ops.push_back(std::string(n->op()));
  }
  EXPECT_THAT(ops,
              ElementsAre("RangeDataset", "MapDataset", "BatchDatasetV2",
                          "ShardDataset", "RepeatDataset", "PrefetchDataset"));
  const NodePtr& batch = ds.node()->inputs()[0]->inputs()[0]->inputs()[0];
  ASSERT_EQ(batch->op(), BatchNode::kOp);
  EXPECT_EQ(static_cast<const BatchNode&>(*batch).batch_size(), 8);
  EXPECT_FALSE(static_cast<const BatchNode&>(*batch).drop_remainder());
  EXPECT_EQ(batch->ShortString(),
            "BatchDatasetV2(batch_size=8, drop_remainder=false)");
  EXPECT_THAT(ds.node()->DebugString(),
              HasSubstr("ShardDataset(num_shards=2, index=1) -> int64[?]"));
}

TEST(DatasetTest, WithInputsRebuildsAboveARewrittenNodeAndRecomputesSpecs) {
  // range(16).batch(8, drop_remainder=true).map(id) → replace the batch by
  // batch(4, true) and rebuild the map above it.
  Dataset ds = Dataset::Range(16).Batch(8, true).Map(
      [](const Element& e) -> absl::StatusOr<Element> { return e; });
  EXPECT_EQ(Spec(ds), "int64[8]");
  const auto& batch = static_cast<const BatchNode&>(*ds.node()->inputs()[0]);
  absl::StatusOr<NodePtr> smaller = BatchNode::Make(batch.inputs()[0], 4, true);
  ASSERT_THAT(smaller, IsOk());
  absl::StatusOr<NodePtr> map = ds.node()->WithInputs({*smaller});
  ASSERT_THAT(map, IsOk());
  Dataset rewritten(*map, ds.options());
  EXPECT_EQ(Spec(rewritten), "int64[4]");
  EXPECT_THAT(
      Collect(rewritten),
      ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7),
                  ElementsAre(8, 9, 10, 11), ElementsAre(12, 13, 14, 15)));
  // The original graph is untouched.
  EXPECT_EQ(Collect(ds).size(), 2u);
  EXPECT_THAT(ds.node()->WithInputs({}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("WithInputs got 0 inputs, the node has 1")));
}

TEST(DatasetTest, FunctionNodeWithBodyReplacesTheBody) {
  Dataset ds = Dataset::Range(2).FlatMap([](const FunctionArg& arg) {
    return Dataset::FromTensors(arg.nest()).Repeat(2);
  });
  const auto& fm = static_cast<const FunctionNode&>(*ds.node());
  absl::StatusOr<NodePtr> longer =
      fm.body()->inputs()[0] == nullptr
          ? absl::StatusOr<NodePtr>(absl::InternalError("no input"))
          : RepeatNode::Make(fm.body()->inputs()[0], 3);
  ASSERT_THAT(longer, IsOk());
  absl::StatusOr<NodePtr> rebuilt = fm.WithBody(*longer);
  ASSERT_THAT(rebuilt, IsOk());
  EXPECT_THAT(Scalars(Dataset(*rebuilt)), ElementsAre(0, 0, 0, 1, 1, 1));
}

TEST(DatasetTest, TFRecordOfAListIsFlatMapOverFileNamesWithReaderOnArgument) {
  // TF 2.2 readers.py: TFRecordDataset(filenames) is
  // from_tensor_slices(filenames).flat_map(lambda f: _TFRecordDataset(f)).
  Dataset ds = Dataset::TFRecord({"a.tfrecord", "b.tfrecord"});
  ASSERT_THAT(ds.status(), IsOk());
  EXPECT_EQ(Spec(ds), "string[]");
  ASSERT_EQ(ds.node()->op(), FlatMapNode::kOp);
  const auto& fm = static_cast<const FlatMapNode&>(*ds.node());
  // The flat_map's input is the file-name list.
  ASSERT_EQ(fm.inputs()[0]->op(), TensorSliceNode::kOp);
  const auto& names = static_cast<const TensorSliceNode&>(*fm.inputs()[0]);
  EXPECT_THAT(names.components().leaf().constant().values<std::string>(),
              ElementsAre("a.tfrecord", "b.tfrecord"));
  // The body is the reader op reading the function argument.
  ASSERT_EQ(fm.body()->op(), "TFRecordDataset");
  EXPECT_TRUE(IsReaderOp(fm.body()->op()));
  const auto& reader = static_cast<const ReaderNode&>(*fm.body());
  EXPECT_TRUE(reader.filenames().is_argument());
  EXPECT_EQ(reader.filenames().arg_index(), 0);
  EXPECT_EQ(reader.filenames().spec().ToString(), "string[]");
}

TEST(DatasetTest, ReadersWithParallelReadsAreInterleaves) {
  Dataset ds = Dataset::TextLine({"a.txt"}, /*num_parallel_reads=*/3);
  ASSERT_EQ(ds.node()->op(), InterleaveNode::kOp);
  const auto& il = static_cast<const InterleaveNode&>(*ds.node());
  EXPECT_EQ(il.cycle_length(), 3);
  EXPECT_EQ(il.body()->op(), "TextLineDataset");
  FixedLengthRecordOptions o;
  o.record_bytes = 4;
  EXPECT_EQ(Dataset::FixedLengthRecord({"a.bin"}, o).node()->op(),
            FlatMapNode::kOp);
}

TEST(DatasetTest, ReaderOverDatasetRequiresStringScalars) {
  EXPECT_THAT(Dataset::TFRecord(Dataset::Range(3)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("`filenames` must be a dataset of string "
                                 "scalars, got element spec int64[]")));
  EXPECT_THAT(Dataset::TFRecordReader(TensorRef(I64({1}))).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must be a string scalar or vector")));
  EXPECT_THAT(
      Dataset::TFRecord({"a"}, TFRecordOptions{"BZIP2", std::nullopt}).status(),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("compression_type \"BZIP2\" is not supported; "
                    "allowed: \"\" (uncompressed), \"ZLIB\" or \"GZIP\"")));
}

TEST(DatasetTest, ElementSpecsOfReadersAreStringScalars) {
  EXPECT_EQ(Spec(Dataset::TextLine({"x"})), "string[]");
  EXPECT_EQ(Spec(Dataset::TFRecord({"x"}).Batch(2, true)), "string[2]");
}

// Yields the int64 vectors [0], [0,1], ..., [0..count-1].
Dataset RaggedVectors(int64_t count) {
  return Dataset::FromGenerator(
      [count]() -> GeneratorFn {
        auto next = std::make_shared<int64_t>(1);
        return [next, count]() -> absl::StatusOr<std::optional<Element>> {
          if (*next > count) return std::optional<Element>();
          Ints v;
          for (int64_t i = 0; i < *next; ++i) v.push_back(i);
          ++*next;
          return std::optional<Element>(Element(Tensor::Vector<int64_t>(v)));
        };
      },
      ElementSpec(TensorSpec{DType::kI64, Shape({runtime::kUnknownDim})}));
}

// Every element as (shape, values).
std::vector<std::pair<std::string, Ints>> ShapesAndValues(const Dataset& ds) {
  std::vector<std::pair<std::string, Ints>> out;
  absl::StatusOr<IteratorPtr> it = ds.MakeIterator();
  EXPECT_THAT(it, IsOk());
  if (!it.ok()) return out;
  while (true) {
    absl::StatusOr<std::optional<Element>> e = (*it)->GetNext();
    EXPECT_THAT(e, IsOk());
    if (!e.ok() || !e->has_value()) break;
    const Tensor& t = (*e)->leaf();
    Ints v;
    for (int64_t i = 0; i < t.num_elements(); ++i) v.push_back(t.AsInt64(i));
    out.emplace_back(t.shape().ToString(), v);
  }
  return out;
}

TEST(PaddedBatchTest, UnknownDimsPadToTheBatchMaximumWithZeros) {
  Dataset ds = RaggedVectors(5).PaddedBatch(2);
  ASSERT_THAT(ds.status(), IsOk());
  EXPECT_EQ(ds.element_spec().leaf().shape,
            Shape({runtime::kUnknownDim, runtime::kUnknownDim}));
  EXPECT_EQ(ShapesAndValues(ds),
            (std::vector<std::pair<std::string, Ints>>{
                {"[2,2]", {0, 0, 0, 1}},
                {"[2,4]", {0, 1, 2, 0, 0, 1, 2, 3}},
                {"[1,5]", {0, 1, 2, 3, 4}}}));
}

TEST(PaddedBatchTest, PaddedShapesValuesAndDropRemainder) {
  Dataset ds = RaggedVectors(5).PaddedBatch(
      2, {Shape({6})}, {Tensor::Scalar<int64_t>(-1)}, /*drop_remainder=*/true);
  ASSERT_THAT(ds.status(), IsOk());
  EXPECT_EQ(ds.element_spec().leaf().shape, Shape({2, 6}));
  EXPECT_EQ(ShapesAndValues(ds),
            (std::vector<std::pair<std::string, Ints>>{
                {"[2,6]", {0, -1, -1, -1, -1, -1, 0, 1, -1, -1, -1, -1}},
                {"[2,6]", {0, 1, 2, -1, -1, -1, 0, 1, 2, 3, -1, -1}}}));
}

TEST(PaddedBatchTest, BadInputNamesTheValue) {
  EXPECT_THAT(RaggedVectors(3).PaddedBatch(2, {Shape({2, 3})}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("padded_shapes[0]=[2,3] has rank 2, "
                                 "component 0 (int64[?]) has rank 1")));
  EXPECT_THAT(
      RaggedVectors(3)
          .PaddedBatch(2, {Shape({4})}, {Tensor::Scalar<float>(0.5f)})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("padding_values[0]=float32[]{0.5} must be a scalar "
                         "of component 0's dtype int64")));
  EXPECT_THAT(RaggedVectors(3).PaddedBatch(0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("batch_size must be greater than zero, got "
                                 "0")));
  EXPECT_THAT(
      RaggedVectors(3)
          .PaddedBatch(2, {Shape({std::numeric_limits<int64_t>::max() / 2})})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("padded_batch: batch_size=2 of padded_shapes[0]=")));
  absl::StatusOr<IteratorPtr> it =
      RaggedVectors(4).PaddedBatch(4, {Shape({3})}).MakeIterator();
  ASSERT_THAT(it, IsOk());
  EXPECT_THAT((*it)->GetNext().status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("attempted to pad component 0 to [3], "
                                 "smaller than an element's dimension 0 (4)")));
}

TEST(UnbatchTest, SplitsElementsIntoRows) {
  // padded_batch then unbatch gives the padded rows back one by one.
  Dataset ds = RaggedVectors(3).PaddedBatch(2).Unbatch();
  ASSERT_THAT(ds.status(), IsOk());
  EXPECT_EQ(ds.element_spec().leaf().shape, Shape({runtime::kUnknownDim}));
  EXPECT_EQ(ShapesAndValues(ds),
            (std::vector<std::pair<std::string, Ints>>{
                {"[2]", {0, 0}}, {"[2]", {0, 1}}, {"[3]", {0, 1, 2}}}));
  EXPECT_THAT(Dataset::Range(3).Unbatch().status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is a scalar; every component needs rank")));
  Dataset zipped =
      Dataset::Zip({Dataset::Range(4).Batch(2), Dataset::Range(4).Batch(3)})
          .Unbatch();
  absl::StatusOr<IteratorPtr> it = zipped.MakeIterator();
  ASSERT_THAT(it, IsOk());
  EXPECT_THAT((*it)->GetNext().status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("differ in dimension 0 (2 vs 3")));
}

// ---- window ----

// window(...).flat_map(lambda w: w.batch(size)): each window as one batch.
Dataset WindowBatches(const Dataset& ds, int64_t size,
                      std::optional<int64_t> shift = std::nullopt,
                      int64_t stride = 1, bool drop_remainder = false) {
  return ds.Window(size, shift, stride, drop_remainder)
      .FlatMap([size](const WindowArg& w) { return w.dataset().Batch(size); });
}

TEST(WindowTest, ShiftDefaultsToSize) {
  EXPECT_THAT(Collect(WindowBatches(Dataset::Range(7), 3)),
              ElementsAre(Ints{0, 1, 2}, Ints{3, 4, 5}, Ints{6}));
  EXPECT_THAT(Collect(WindowBatches(Dataset::Range(7), 2)),
              ElementsAre(Ints{0, 1}, Ints{2, 3}, Ints{4, 5}, Ints{6}));
}

TEST(WindowTest, ShiftStrideAndDropRemainderAsTensorFlow) {
  // TF's documented examples on range(7).
  EXPECT_THAT(Collect(WindowBatches(Dataset::Range(7), 3, 2, 1, true)),
              ElementsAre(Ints{0, 1, 2}, Ints{2, 3, 4}, Ints{4, 5, 6}));
  EXPECT_THAT(
      Collect(WindowBatches(Dataset::Range(7), 3, 2)),
      ElementsAre(Ints{0, 1, 2}, Ints{2, 3, 4}, Ints{4, 5, 6}, Ints{6}));
  EXPECT_THAT(Collect(WindowBatches(Dataset::Range(7), 3, 1, 2, true)),
              ElementsAre(Ints{0, 2, 4}, Ints{1, 3, 5}, Ints{2, 4, 6}));
  // Without drop_remainder the windows shrink at the end (the kernel takes
  // buffer[0], buffer[stride], ... of what is left).
  EXPECT_THAT(Collect(WindowBatches(Dataset::Range(7), 3, 1, 2)),
              ElementsAre(Ints{0, 2, 4}, Ints{1, 3, 5}, Ints{2, 4, 6},
                          Ints{3, 5}, Ints{4, 6}, Ints{5}, Ints{6}));
  // A shift past the window discards the elements in between.
  EXPECT_THAT(Collect(WindowBatches(Dataset::Range(10), 2, 4)),
              ElementsAre(Ints{0, 1}, Ints{4, 5}, Ints{8, 9}));
  EXPECT_THAT(Collect(WindowBatches(Dataset::Range(0), 2)), IsEmpty());
  EXPECT_THAT(Collect(WindowBatches(Dataset::Range(2), 3, 3, 1, true)),
              IsEmpty());
}

TEST(WindowTest, ComponentsAreSeparateDatasetsAndZipRebuildsElements) {
  Dataset pairs = Dataset::Zip({Dataset::Range(4), Dataset::Range(10, 14)});
  Dataset second = pairs.Window(2).FlatMap(
      [](const WindowArg& w) { return w.component(1).Batch(2); });
  EXPECT_THAT(Collect(second), ElementsAre(Ints{10, 11}, Ints{12, 13}));
  EXPECT_EQ(Spec(second), "int64[?]");
  Dataset both = pairs.Window(3).FlatMap(
      [](const WindowArg& w) { return w.Zip().Batch(3); });
  EXPECT_EQ(Spec(both), "(int64[?], int64[?])");
  absl::StatusOr<std::vector<Element>> all = both.Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].children()[0].leaf().DebugString(), "int64[3]{0, 1, 2}");
  EXPECT_EQ((*all)[0].children()[1].leaf().DebugString(),
            "int64[3]{10, 11, 12}");
  EXPECT_EQ((*all)[1].children()[0].leaf().DebugString(), "int64[1]{3}");
  EXPECT_EQ((*all)[1].children()[1].leaf().DebugString(), "int64[1]{13}");
}

TEST(WindowTest, ElementsOfDifferentShapesPadInTheBody) {
  Dataset ds = RaggedVectors(3).Window(2).FlatMap(
      [](const WindowArg& w) { return w.dataset().PaddedBatch(2); });
  EXPECT_EQ(ShapesAndValues(ds),
            (std::vector<std::pair<std::string, Ints>>{{"[2,2]", {0, 0, 0, 1}},
                                                       {"[1,3]", {0, 1, 2}}}));
}

TEST(WindowTest, TheBodyIsTracedOnceIntoAnInspectableGraph) {
  int calls = 0;
  Dataset ds = Dataset::Range(8).Window(4, 2).FlatMap([&](const WindowArg& w) {
    ++calls;
    return w.dataset().Batch(4);
  });
  ASSERT_THAT(ds.status(), IsOk());
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(ds.node()->op(), FlatMapNode::kOp);
  const auto& fn = static_cast<const FunctionNode&>(*ds.node());
  EXPECT_EQ(fn.inputs()[0]->ShortString(),
            "WindowDataset(size=4, shift=2, stride=1, drop_remainder=false)");
  EXPECT_EQ(fn.body()->ShortString(),
            "BatchDatasetV2(batch_size=4, drop_remainder=false)");
  EXPECT_EQ(fn.body()->inputs()[0]->ShortString(), "WindowArg(component=0)");
  EXPECT_THAT(Collect(ds), ElementsAre(Ints{0, 1, 2, 3}, Ints{2, 3, 4, 5},
                                       Ints{4, 5, 6, 7}, Ints{6, 7}));
}

TEST(WindowTest, InterleaveOverWindows) {
  Dataset ds = Dataset::Range(8).Window(4).Interleave(
      [](const WindowArg& w) { return w.dataset(); }, /*cycle_length=*/2,
      /*block_length=*/1);
  EXPECT_THAT(Scalars(ds), ElementsAre(0, 4, 1, 5, 2, 6, 3, 7));
}

TEST(WindowTest, ErrorsOfDiscardedElementsAreIgnoredAsInTensorFlow) {
  MapFunction fail_on_3;
  fail_on_3.fn = [](const Element& e) -> absl::StatusOr<Element> {
    if (e.leaf().values<int64_t>()[0] == 3)
      return absl::InvalidArgumentError("element 3 is bad");
    return e;
  };
  fail_on_3.output_spec = ElementSpec(TensorSpec{DType::kI64, Shape()});
  Dataset bad = Dataset::Range(8).Map(fail_on_3);
  // Shift 4 past a window of 2 discards 2, 3 (the error of 3 with them) and
  // 6, 7; stride 2 skips 3 in [2, 4] as well.
  EXPECT_THAT(Collect(WindowBatches(bad, 2, 4)),
              ElementsAre(Ints{0, 1}, Ints{4, 5}));
  EXPECT_THAT(Collect(WindowBatches(bad, 2, 2, 2, true)),
              ElementsAre(Ints{0, 2}, Ints{2, 4}, Ints{4, 6}));
  // A window holding the element reports its error.
  absl::StatusOr<IteratorPtr> it = WindowBatches(bad, 2).MakeIterator();
  ASSERT_THAT(it, IsOk());
  ASSERT_THAT((*it)->GetNext(), IsOk());
  EXPECT_THAT((*it)->GetNext().status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "element 3 is bad"));
}

TEST(WindowTest, BadSizesNameTheValue) {
  EXPECT_THAT(Dataset::Range(4).Window(-2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "window: size must be greater than zero, got size=-2"));
  EXPECT_THAT(Dataset::Range(4).Window(0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "window: size must be greater than zero, got size=0"));
  EXPECT_THAT(Dataset::Range(4).Window(2, 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "window: shift must be greater than zero, got shift=0"));
  EXPECT_THAT(
      Dataset::Range(4).Window(2, 2, -1).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "window: stride must be greater than zero, got stride=-1"));
  // The error is carried to the flat_map's result.
  EXPECT_THAT(WindowBatches(Dataset::Range(4), -3).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "window: size must be greater than zero, got size=-3"));
  EXPECT_THAT(Dataset::Range(4)
                  .Window(std::numeric_limits<int64_t>::max(), 1, 2)
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("span (size - 1) * stride + 1 elements")));
  // A huge window is refused by the memory budget before buffering.
  EXPECT_THAT(WindowBatches(Dataset::Range(4), int64_t{1} << 40)
                  .MakeIterator()
                  .status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("window(size=1099511627776, stride=1)")));
  // A window dataset outside a window function.
  absl::StatusOr<NodePtr> arg =
      WindowArgNode::Make(ElementSpec(TensorSpec{DType::kI64, Shape()}), 0);
  ASSERT_THAT(arg, IsOk());
  EXPECT_THAT((*arg)->MakeIterator(IteratorContext()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("outside a function over windows")));
  EXPECT_THAT(
      WindowArgNode::Make(ElementSpec(TensorSpec{DType::kI64, Shape()}), 1)
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("component 1 out of range")));
}

// ---- map_and_batch ----

MapFunction Square() {
  MapFunction f;
  f.name = "square";
  f.fn = [](const Element& e) -> absl::StatusOr<Element> {
    const int64_t v = e.leaf().values<int64_t>()[0];
    return Element(Tensor::Scalar<int64_t>(v * v));
  };
  f.output_spec = ElementSpec(TensorSpec{DType::kI64, Shape()});
  return f;
}

TEST(MapAndBatchTest, ValuesAreMapThenBatch) {
  Dataset ds = Dataset::Range(5).MapAndBatch(Square(), 2);
  EXPECT_THAT(Collect(ds), ElementsAre(Ints{0, 1}, Ints{4, 9}, Ints{16}));
  EXPECT_EQ(Spec(ds), "int64[?]");
  EXPECT_EQ(Collect(ds), Collect(Dataset::Range(5).Map(Square()).Batch(2)));
  Dataset dropped = Dataset::Range(5).MapAndBatch(Square(), 2, true);
  EXPECT_THAT(Collect(dropped), ElementsAre(Ints{0, 1}, Ints{4, 9}));
  EXPECT_EQ(Spec(dropped), "int64[2]");
  // TF's default num_parallel_calls is the batch size.
  EXPECT_EQ(ds.node()->ShortString(),
            "MapAndBatchDataset(f=square, batch_size=2, num_parallel_calls=2, "
            "drop_remainder=false)");
  EXPECT_EQ(Dataset::Range(5)
                .MapAndBatch(Square(), 2, false, kAutotune)
                .node()
                ->ShortString(),
            "MapAndBatchDataset(f=square, batch_size=2, "
            "num_parallel_calls=AUTOTUNE, drop_remainder=false)");
}

TEST(MapAndBatchTest, BadInputNamesTheValue) {
  EXPECT_THAT(Dataset::Range(5).MapAndBatch(Square(), 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "map_and_batch: batch_size must be greater than zero, "
                       "got 0"));
  EXPECT_THAT(
      Dataset::Range(5).MapAndBatch(Square(), 2, false, 0).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "map_and_batch: num_parallel_calls=0: must be >= 1 or -1 "
               "(AUTOTUNE)"));
  EXPECT_THAT(Dataset::Range(5).MapAndBatch(MapFunction(), 2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "map: the function is empty"));
}

}  // namespace
}  // namespace tpusim::data

namespace tpusim::data {
namespace {

// batch() recycles the storage of its copied batches (Tensor::BufferPool):
// a batch the caller still holds keeps its values however many batches follow;
// a released batch's storage is written again for a later batch.
TEST(DatasetTest, BatchRecyclesOnlyReleasedBatches) {
  // Range rows are separate scalars: every batch is a copy.
  absl::StatusOr<IteratorPtr> it = Dataset::Range(40).Batch(4).MakeIterator();
  ASSERT_THAT(it, IsOk());
  std::vector<Element> held;
  for (int b = 0; b < 5; ++b) {
    absl::StatusOr<std::optional<Element>> e = (*it)->GetNext();
    ASSERT_THAT(e, IsOk());
    ASSERT_TRUE(e->has_value());
    held.push_back(**e);
  }
  std::set<const int64_t*> storages;
  for (int b = 0; b < 5; ++b) {
    EXPECT_THAT(held[b].leaf().values<int64_t>(),
                ElementsAre(4 * b, 4 * b + 1, 4 * b + 2, 4 * b + 3));
    storages.insert(held[b].leaf().values<int64_t>().data());
  }
  EXPECT_EQ(storages.size(), 5u);
  // Release all but batch 4: the next batches reuse released storage only.
  const int64_t* kept = held[4].leaf().values<int64_t>().data();
  held.erase(held.begin(), held.begin() + 4);
  for (int b = 5; b < 10; ++b) {
    absl::StatusOr<std::optional<Element>> e = (*it)->GetNext();
    ASSERT_THAT(e, IsOk());
    ASSERT_TRUE(e->has_value());
    const Tensor& t = (*e)->leaf();
    EXPECT_THAT(t.values<int64_t>(),
                ElementsAre(4 * b, 4 * b + 1, 4 * b + 2, 4 * b + 3));
    EXPECT_NE(t.values<int64_t>().data(), kept);
    EXPECT_EQ(storages.count(t.values<int64_t>().data()), 1u) << b;
  }
  EXPECT_THAT(held[0].leaf().values<int64_t>(), ElementsAre(16, 17, 18, 19));
}

// Tuples and dicts are batched component by component with the same results
// as before the column-wise assembly; a partial last batch is exact.
TEST(DatasetTest, BatchOfNestedElementsByColumn) {
  Dataset a = Dataset::Range(5);
  Dataset b = Dataset::Range(10, 15);
  absl::StatusOr<std::vector<Element>> all =
      Dataset::Zip({a, Dataset::Zip({b, a})}).Batch(2).Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 3u);
  const Element& last = (*all)[2];
  EXPECT_EQ(last.StructureString(), "(*, (*, *))");
  EXPECT_THAT(last.children()[0].leaf().values<int64_t>(), ElementsAre(4));
  EXPECT_THAT((*all)[1].children()[1].children()[0].leaf().values<int64_t>(),
              ElementsAre(12, 13));
  EXPECT_THAT((*all)[1].children()[1].children()[1].leaf().values<int64_t>(),
              ElementsAre(2, 3));
}

}  // namespace
}  // namespace tpusim::data
