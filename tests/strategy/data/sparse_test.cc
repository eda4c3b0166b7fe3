// SparseTensor components (strategy/data/sparse.h): TF's index checks,
// VarLenFeature / FixedLenSequenceFeature parsing, and sparse values through
// batch, unbatch, rebatch (2.2 Case 1 / Case 2 / fallback, 2.4), shard and
// distribution with the empty sparse dummy, with exact per-replica values.

#include "strategy/data/sparse.h"

#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/data/distribute.h"
#include "strategy/data/example.pb.h"
#include "strategy/data/example_parser.h"

namespace tpusim::data {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;
using ::tpusim::testing::StatusIs;

Tensor Ix(int64_t n, int64_t rank, std::vector<int64_t> v) {
  return Tensor::FromVector<int64_t>(Shape({n, rank}), std::move(v));
}
Tensor I64(std::vector<int64_t> v) {
  return Tensor::Vector<int64_t>(std::move(v));
}

// The sparse value (indices, values, dense_shape) of `st` as text.
std::string Show(const SparseTensor& st) { return st.DebugString(); }

// Record `id` as the scenario file sets write it: "id" and, unless id % 4 ==
// 0, "tokens" = [10 id, 10 id + 1, ...] with id % 4 values.
std::string Example(int64_t id) {
  tensorflow::Example ex;
  auto& f = *ex.mutable_features()->mutable_feature();
  f["id"].mutable_int64_list()->add_value(id);
  if (id % 4 != 0) {
    for (int64_t j = 0; j < id % 4; ++j)
      f["tokens"].mutable_int64_list()->add_value(10 * id + j);
  }
  return ex.SerializeAsString();
}

Tensor Examples(std::vector<int64_t> ids) {
  std::vector<std::string> v;
  for (int64_t id : ids) v.push_back(Example(id));
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::FromVector<std::string>(Shape({n}), std::move(v));
}

FeatureSpec IdTokens() {
  return {{"id", FixedLenFeature{DType::kI64, Shape(), {}}},
          {"tokens", VarLenFeature{DType::kI64}}};
}

// range(n) of parsed single examples: {id: int64[], tokens: SparseTensor[?]}.
Dataset Parsed(int64_t n) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(i);
  return Dataset::FromTensorSlices(Element(Examples(ids)))
      .Map(ParseSingleExampleFn(IdTokens()));
}

// Every step of a distributed dataset: per replica "id=[..] tokens=<sparse>".
std::vector<std::vector<std::string>> Steps(const DistributedDataset& dist) {
  std::vector<std::vector<std::string>> out;
  absl::StatusOr<DistributedIterator> it = dist.MakeIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  const auto specs = it->element_spec().FlattenWithPaths();
  while (true) {
    absl::StatusOr<strategy::PerReplica<Element>> step = it->GetNext();
    if (absl::IsOutOfRange(step.status())) break;
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok()) break;
    std::vector<std::string> replicas;
    for (int r = 0; r < step->num_replicas(); ++r) {
      const Element& e = (*step)[r];
      const auto leaves = e.Flatten();
      std::string s = absl::StrCat("id=", leaves[0]->DebugString());
      absl::StatusOr<SparseTensor> st =
          UnboxSparse(*leaves[1], *specs[1].second, specs[1].first);
      EXPECT_TRUE(st.ok()) << st.status();
      if (st.ok()) absl::StrAppend(&s, " tokens=", Show(*st));
      replicas.push_back(s);
    }
    out.push_back(replicas);
  }
  return out;
}

// ---- TF's checks of a SparseTensor ----

TEST(SparseTest, OutOfOrderIndicesAreInvalidArgumentNamingTheValue) {
  const SparseTensor st{Ix(2, 2, {0, 2, 0, 1}), I64({1, 2}), I64({3, 4})};
  const std::string msg =
      "sparse tensor st: indices[1] = [0,1] is out of order (after indices[0] "
      "= [0,2]). Many sparse ops require sorted indices: row-major order; use "
      "tf.sparse.reorder to create a correctly ordered copy";
  EXPECT_THAT(ValidateSparse(st, "st"),
              StatusIs(absl::StatusCode::kInvalidArgument, msg));
  EXPECT_THAT(BoxSparse(st, "st").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, msg));
  // from_tensor_slices(sparse) carries the error (TF's SerializeManySparse
  // checks the order).
  Dataset ds = SparseTensorSlices(st, "st");
  EXPECT_THAT(ds.status(), StatusIs(absl::StatusCode::kInvalidArgument, msg));
}

TEST(SparseTest, OutOfBoundsRepeatedAndMalformedAreInvalidArgument) {
  EXPECT_THAT(
      ValidateSparse({Ix(1, 2, {0, 4}), I64({1}), I64({3, 4})}, "st"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "sparse tensor st: indices[0] = [0,4] is out of bounds: need 0 "
               "<= index < [3,4]"));
  EXPECT_THAT(
      ValidateSparse({Ix(2, 2, {1, 1, 1, 1}), I64({1, 2}), I64({3, 4})}, "st"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "sparse tensor st: indices[1] = [1,1] is repeated"));
  EXPECT_THAT(
      ValidateSparse({Ix(2, 2, {0, 0, 0, 1}), I64({1}), I64({3, 4})}, "st"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "sparse tensor st: values must be a vector of 2 values (one per "
               "index), got int64[1]"));
  EXPECT_THAT(ValidateSparse({Ix(1, 2, {0, 0}), I64({1}), I64({3})}, "st"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "sparse tensor st: indices [1,2] have rank 2 but "
                       "dense_shape has 1 dimensions"));
  // A string where a box is expected is not decoded as one.
  EXPECT_THAT(UnboxSparse(Tensor::Scalar<std::string>("abc"),
                          SparseComponentSpec(DType::kI64, Shape({-1})), "x")
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "sparse component x: element 0 is not an encoded "
                       "SparseTensor (bad header)"));
}

TEST(SparseTest, BoxRowsAndUnboxKeepEachRowsOwnShape) {
  // [[_, 1], [2, 3], [_, _]]: rows of serialize_many_sparse keep [2].
  const SparseTensor st{Ix(3, 2, {0, 1, 1, 0, 1, 1}), I64({1, 2, 3}),
                        I64({3, 2})};
  absl::StatusOr<Tensor> rows = BoxSparseRows(st, "st");
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->shape(), Shape({3}));
  const TensorSpec spec =
      SparseComponentSpec(DType::kI64, Shape({2}), Shape({3}));
  EXPECT_EQ(spec.ToString(), "SparseTensor(int64[3,2])");
  absl::StatusOr<SparseTensor> back = UnboxSparse(*rows, spec, "st");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, st);
  // Row 2 alone: no values, dense_shape [1, 2].
  absl::StatusOr<SparseTensor> row2 =
      UnboxSparse(rows->Slice(2, 1), spec, "st");
  ASSERT_TRUE(row2.ok());
  EXPECT_EQ(Show(*row2),
            "SparseTensor(indices=[], values=[], dense_shape=[1, 2])");
  EXPECT_EQ(row2->indices.shape(), Shape({0, 2}));
}

TEST(SparseTest, UnboxingABatchTakesThePerDimensionMaximum) {
  // DeserializeManySparse's documented example: [0],[10],[20] of shape [50]
  // and [2],[10] of shape [30] give shape [2, 50].
  absl::StatusOr<Tensor> a =
      BoxSparse({Ix(3, 1, {0, 10, 20}), I64({1, 2, 3}), I64({50})}, "a");
  absl::StatusOr<Tensor> b =
      BoxSparse({Ix(2, 1, {2, 10}), I64({4, 5}), I64({30})}, "b");
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<Tensor> both = Tensor::Stack({*a, *b});
  ASSERT_TRUE(both.ok());
  absl::StatusOr<SparseTensor> st = UnboxSparse(
      *both, SparseComponentSpec(DType::kI64, Shape({-1}), Shape({2})), "x");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(Show(*st),
            "SparseTensor(indices=[[0, 0], [0, 10], [0, 20], [1, 2], [1, 10]], "
            "values=[1, 2, 3, 4, 5], dense_shape=[2, 50])");
  // Boxes of different rank cannot be one SparseTensor.
  absl::StatusOr<Tensor> c =
      BoxSparse({Ix(1, 2, {0, 0}), I64({7}), I64({1, 1})}, "c");
  ASSERT_TRUE(c.ok());
  both = Tensor::Stack({*a, *c});
  ASSERT_TRUE(both.ok());
  EXPECT_THAT(
      UnboxSparse(
          *both, SparseComponentSpec(DType::kI64, Shape({-1}), Shape({2})), "x")
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "sparse component x: element 1 has rank 2 but element 0 "
               "has rank 1; all SparseTensors of a batch need the same "
               "rank"));
}

TEST(SparseTest, FromTensorsOfASparseBatchCannotUseTheFallback) {
  // from_tensors(SparseTensor [2, 2]): one element of spec [2, 2]; without a
  // batch op the 2.2 rewrite needs the fallback, which a sparse component
  // cannot use.
  const SparseTensor st{Ix(2, 2, {0, 0, 1, 1}), I64({1, 2}), I64({2, 2})};
  Dataset ds = SparseTensorDataset(st, "st");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ElementSpecToString(ds.element_spec()), "SparseTensor(int64[2,2])");
  absl::StatusOr<std::vector<Element>> all = ds.Collect();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  absl::StatusOr<SparseTensor> back =
      UnboxSparse(all->at(0).leaf(), ds.element_spec().leaf(), "st");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, st);
  EXPECT_THAT(DistributeDataset(ds, InputWorkers::Uniform(1, 2)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr(
                           "[0:SparseTensor(int64[2,2]) (boxed: unknown "
                           "shape)]")));
}

TEST(SparseTest, DummyIsTheEmptySparseOfInputLib) {
  // [?, ?] -> dense_shape [0, 0]; [4, ?] (not fully known) -> [4, 0].
  const TensorSpec unknown =
      SparseComponentSpec(DType::kI64, Shape({-1}), Shape({-1}));
  absl::StatusOr<SparseTensor> a =
      UnboxSparse(DummySparseBoxes(unknown), unknown, "x");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->indices.shape(), Shape({0, 2}));
  EXPECT_EQ(a->values.shape(), Shape({0}));
  EXPECT_EQ(a->dense_shape, I64({0, 0}));
  const TensorSpec four =
      SparseComponentSpec(DType::kF32, Shape({-1}), Shape({4}));
  absl::StatusOr<SparseTensor> b =
      UnboxSparse(DummySparseBoxes(four), four, "x");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->dense_shape, I64({4, 0}));
  EXPECT_EQ(b->values.dtype(), DType::kF32);
  // TF's _is_statically_shaped: a sparse component counts only its batch dim.
  EXPECT_TRUE(IsStaticallyShaped(ElementSpec(four)));
  EXPECT_FALSE(IsStaticallyShaped(ElementSpec(unknown)));
  EXPECT_EQ(DummyTensor(four).shape(), Shape({4}));
}

// ---- parsing ----

TEST(SparseParseTest, VarLenFeatureIsASparseTensor) {
  absl::StatusOr<ElementSpec> spec = ParsedSpec(IdTokens());
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(ElementSpecToString(*spec),
            "{id: int64[], tokens: SparseTensor(int64[?])}");
  const TensorSpec& tokens = *spec->Flatten()[1];
  absl::StatusOr<Element> e = ParseSingleExample(Example(3), IdTokens());
  ASSERT_TRUE(e.ok()) << e.status();
  absl::StatusOr<SparseTensor> st =
      UnboxSparse(*e->Flatten()[1], tokens, "tokens");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(Show(*st),
            "SparseTensor(indices=[[0], [1], [2]], values=[30, 31, 32], "
            "dense_shape=[3])");
  // Missing: the empty SparseTensor [0].
  e = ParseSingleExample(Example(4), IdTokens());
  ASSERT_TRUE(e.ok());
  st = UnboxSparse(*e->Flatten()[1], tokens, "tokens");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(Show(*st), "SparseTensor(indices=[], values=[], dense_shape=[0])");
  EXPECT_EQ(st->indices.shape(), Shape({0, 1}));
  // parse_example on a batch: one SparseTensor [B, max n] with [b, j].
  absl::StatusOr<Element> batch = ParseExample(Examples({1, 2, 4}), IdTokens());
  ASSERT_TRUE(batch.ok()) << batch.status();
  st = UnboxSparse(*batch->Flatten()[1],
                   SparseComponentSpec(DType::kI64, Shape({-1}), Shape({3})),
                   "tokens");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(Show(*st),
            "SparseTensor(indices=[[0, 0], [1, 0], [1, 1]], values=[10, 20, "
            "21], dense_shape=[3, 2])");
  // Data type mismatch as for FixedLenFeature.
  EXPECT_THAT(
      ParseSingleExample(Example(3), {{"tokens", VarLenFeature{DType::kF32}}})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "Feature: tokens.  Data types don't match. Data type: "
               "int64 but expected type: float"));
}

TEST(SparseParseTest, FixedLenSequenceFeaturePadsPerBatch) {
  FeatureSpec spec = {
      {"tokens", FixedLenSequenceFeature{DType::kI64, Shape(), true,
                                         Tensor::Scalar<int64_t>(-1)}}};
  absl::StatusOr<ElementSpec> s = ParsedSpec(spec);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(ElementSpecToString(*s), "{tokens: int64[?]}");
  absl::StatusOr<Element> e = ParseSingleExample(Example(3), spec);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->Flatten()[0]->DebugString(), "int64[3]{30, 31, 32}");
  e = ParseSingleExample(Example(4), spec);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->Flatten()[0]->shape(), Shape({0}));
  // A batch pads to its longest example with default_value.
  absl::StatusOr<Element> b = ParseExample(Examples({1, 2, 4}), spec);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->Flatten()[0]->DebugString(),
            "int64[3,2]{10, -1, 20, 21, -1, -1}");
  // Steps of shape [2]: 3 values are not a whole number of steps.
  FeatureSpec pairs = {
      {"tokens", FixedLenSequenceFeature{DType::kI64, Shape({2}), true, {}}}};
  EXPECT_THAT(ParseSingleExample(Example(3), pairs).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Key: tokens.  Number of int64 values is not a multiple "
                       "of stride length. Saw 3 values but output shape is: "
                       "[?,2]"));
  b = ParseExample(Examples({2, 4}), pairs);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->Flatten()[0]->DebugString(), "int64[2,1,2]{20, 21, 0, 0}");
}

TEST(SparseParseTest, FixedLenSequenceFeatureWithoutAllowMissingIsRejected) {
  FeatureSpec spec = {
      {"tokens", FixedLenSequenceFeature{DType::kI64, Shape(), false, {}}}};
  const std::string msg =
      "feature spec: feature \"tokens\": Unsupported: FixedLenSequenceFeature "
      "requires allow_missing to be True.";
  EXPECT_THAT(ParsedSpec(spec).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, msg));
  Dataset ds = Dataset::FromTensorSlices(Element(Examples({1})))
                   .Map(ParseSingleExampleFn(spec));
  EXPECT_THAT(ds.status(), StatusIs(absl::StatusCode::kInvalidArgument, msg));
}

// ---- through the pipeline ----

TEST(SparsePipelineTest, BatchUnbatchAndPaddedBatch) {
  absl::StatusOr<std::vector<Element>> batches = Parsed(5).Batch(3).Collect();
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 2u);
  const TensorSpec spec = *Parsed(5).Batch(3).element_spec().Flatten()[1];
  EXPECT_EQ(spec.ToString(), "SparseTensor(int64[?,?])");
  absl::StatusOr<SparseTensor> st =
      UnboxSparse(*(*batches)[0].Flatten()[1], spec, "tokens");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(Show(*st),
            "SparseTensor(indices=[[1, 0], [2, 0], [2, 1]], values=[10, 20, "
            "21], dense_shape=[3, 2])");
  st = UnboxSparse(*(*batches)[1].Flatten()[1], spec, "tokens");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(Show(*st),
            "SparseTensor(indices=[[0, 0], [0, 1], [0, 2]], values=[30, 31, "
            "32], dense_shape=[2, 3])");
  // unbatch gives each row back with its own dense_shape.
  absl::StatusOr<std::vector<Element>> rows =
      Parsed(5).Batch(3).Unbatch().Collect();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 5u);
  const TensorSpec row_spec =
      *Parsed(5).Batch(3).Unbatch().element_spec().Flatten()[1];
  st = UnboxSparse(*(*rows)[2].Flatten()[1], row_spec, "tokens");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(Show(*st),
            "SparseTensor(indices=[[0], [1]], values=[20, 21], "
            "dense_shape=[2])");
  EXPECT_THAT(Parsed(5).PaddedBatch(2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "padded_batch: component tokens is a "
                       "SparseTensor(int64[?]); batching of padded sparse "
                       "tensors is not supported (TF 2.2); use batch"));
}

TEST(SparseDistributeTest, Case1DivisibleAndPartialFinalBatchWithDummy) {
  // range(10).batch(4) over 2 replicas: Case 1 -> batch(2).
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(Parsed(10).Batch(4), InputWorkers::Uniform(1, 2));
  ASSERT_TRUE(dist.ok()) << dist.status();
  EXPECT_EQ(dist->rebatch_kind(), RebatchKind::kCase1);
  EXPECT_EQ(ElementSpecToString(dist->element_spec()),
            "{id: int64[?], tokens: SparseTensor(int64[?,?])}");
  const std::vector<std::vector<std::string>> want = {
      {"id=int64[2]{0, 1} tokens=SparseTensor(indices=[[1, 0]], values=[10], "
       "dense_shape=[2, 1])",
       "id=int64[2]{2, 3} tokens=SparseTensor(indices=[[0, 0], [0, 1], [1, 0], "
       "[1, 1], [1, 2]], values=[20, 21, 30, 31, 32], dense_shape=[2, 3])"},
      {"id=int64[2]{4, 5} tokens=SparseTensor(indices=[[1, 0]], values=[50], "
       "dense_shape=[2, 1])",
       "id=int64[2]{6, 7} tokens=SparseTensor(indices=[[0, 0], [0, 1], [1, 0], "
       "[1, 1], [1, 2]], values=[60, 61, 70, 71, 72], dense_shape=[2, 3])"},
      {"id=int64[2]{8, 9} tokens=SparseTensor(indices=[[1, 0]], values=[90], "
       "dense_shape=[2, 1])",
       "id=int64[0]{} tokens=SparseTensor(indices=[], values=[], "
       "dense_shape=[0, 0])"}};
  EXPECT_EQ(Steps(*dist), want);
}

TEST(SparseDistributeTest, Case2SlicesTheBoxedRows) {
  // batch(5) over 2 replicas: Case 2, pieces of 3; each piece's dense_shape
  // is the longest row of the piece.
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(Parsed(10).Batch(5), InputWorkers::Uniform(1, 2));
  ASSERT_TRUE(dist.ok()) << dist.status();
  EXPECT_EQ(dist->rebatch_kind(), RebatchKind::kCase2);
  const std::vector<std::vector<std::string>> want = {
      {"id=int64[3]{0, 1, 2} tokens=SparseTensor(indices=[[1, 0], [2, 0], [2, "
       "1]], values=[10, 20, 21], dense_shape=[3, 2])",
       "id=int64[2]{3, 4} tokens=SparseTensor(indices=[[0, 0], [0, 1], [0, "
       "2]], values=[30, 31, 32], dense_shape=[2, 3])"},
      {"id=int64[3]{5, 6, 7} tokens=SparseTensor(indices=[[0, 0], [1, 0], [1, "
       "1], [2, 0], [2, 1], [2, 2]], values=[50, 60, 61, 70, 71, 72], "
       "dense_shape=[3, 3])",
       "id=int64[2]{8, 9} tokens=SparseTensor(indices=[[1, 0]], values=[90], "
       "dense_shape=[2, 1])"}};
  EXPECT_EQ(Steps(*dist), want);
}

TEST(SparseDistributeTest, FallbackCannotUseASparseComponent) {
  // No batch op: the fallback needs static leading dims, and TF's sparse
  // component is a variant of unknown shape.
  const SparseTensor st{Ix(2, 2, {0, 0, 1, 1}), I64({1, 2}), I64({2, 2})};
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      SparseTensorSlices(st, "st"), InputWorkers::Uniform(1, 2));
  EXPECT_THAT(
      dist.status(),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "cannot use rebatching fallback: the leading dimension of every "
          "component must be statically known, equal across components "
          "and divisible by num_replicas=2; got leading dims "
          "[0:SparseTensor(int64[2]) (boxed: unknown shape)] (no batch op "
          "could be rewritten: rebatch: reached TensorSliceDataset without "
          "encountering a batch)"));
}

TEST(SparseDistributeTest, Semantics24BatchSizesSliceRows) {
  // 2.4: batch(4) over 3 replicas -> sizes [2, 1, 1].
  DistributeOptions options;
  options.semantics_version = "2.4";
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Parsed(10).Batch(4), InputWorkers::Uniform(1, 3), options);
  ASSERT_TRUE(dist.ok()) << dist.status();
  const std::string one_two =
      "tokens=SparseTensor(indices=[[0, 0], [0, 1]], values=[";
  const std::vector<std::vector<std::string>> want = {
      {"id=int64[2]{0, 1} tokens=SparseTensor(indices=[[1, 0]], values=[10], "
       "dense_shape=[2, 1])",
       "id=int64[1]{2} " + one_two + "20, 21], dense_shape=[1, 2])",
       "id=int64[1]{3} tokens=SparseTensor(indices=[[0, 0], [0, 1], [0, 2]], "
       "values=[30, 31, 32], dense_shape=[1, 3])"},
      {"id=int64[2]{4, 5} tokens=SparseTensor(indices=[[1, 0]], values=[50], "
       "dense_shape=[2, 1])",
       "id=int64[1]{6} " + one_two + "60, 61], dense_shape=[1, 2])",
       "id=int64[1]{7} tokens=SparseTensor(indices=[[0, 0], [0, 1], [0, 2]], "
       "values=[70, 71, 72], dense_shape=[1, 3])"},
      {"id=int64[2]{8, 9} tokens=SparseTensor(indices=[[1, 0]], values=[90], "
       "dense_shape=[2, 1])",
       "id=int64[0]{} tokens=SparseTensor(indices=[], values=[], "
       "dense_shape=[0, 0])",
       "id=int64[0]{} tokens=SparseTensor(indices=[], values=[], "
       "dense_shape=[0, 0])"}};
  EXPECT_EQ(Steps(*dist), want);
}

TEST(SparseDistributeTest, Semantics24LegacySplitSlicesBoxesOnTheirOwn) {
  // zip of batches of 4 and 2: no common batch size, so 2.4 splits every
  // batch into N = 3 pieces (RebatchDataset), the sparse boxes too.
  DistributeOptions options;
  options.semantics_version = "2.4";
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Dataset::Zip({Parsed(8).Batch(4), Dataset::Range(4).Batch(2)}),
      InputWorkers::Uniform(1, 3), options);
  ASSERT_TRUE(dist.ok()) << dist.status();
  const std::string none =
      "id=int64[0]{} tokens=SparseTensor(indices=[], values=[], "
      "dense_shape=[0, 0])";
  const std::vector<std::vector<std::string>> want = {
      {"id=int64[2]{0, 1} tokens=SparseTensor(indices=[[1, 0]], values=[10], "
       "dense_shape=[2, 1])",
       "id=int64[2]{2, 3} tokens=SparseTensor(indices=[[0, 0], [0, 1], [1, 0], "
       "[1, 1], [1, 2]], values=[20, 21, 30, 31, 32], dense_shape=[2, 3])",
       none},
      {"id=int64[2]{4, 5} tokens=SparseTensor(indices=[[1, 0]], values=[50], "
       "dense_shape=[2, 1])",
       "id=int64[2]{6, 7} tokens=SparseTensor(indices=[[0, 0], [0, 1], [1, 0], "
       "[1, 1], [1, 2]], values=[60, 61, 70, 71, 72], dense_shape=[2, 3])",
       none}};
  EXPECT_EQ(Steps(*dist), want);
}

TEST(SparseDistributeTest, DataShardingOverTwoWorkers) {
  // 2 workers x 1 replica, AUTO -> DATA (no reader): Case 1 batch(1), worker
  // i keeps minibatches i, i + 2, ...
  absl::StatusOr<DistributedDataset> dist =
      DistributeDataset(Parsed(4).Batch(2), InputWorkers::Uniform(2, 1));
  ASSERT_TRUE(dist.ok()) << dist.status();
  EXPECT_EQ(dist->applied_policy(0), AutoShardPolicy::kData);
  const std::vector<std::vector<std::string>> want = {
      {"id=int64[1]{0} tokens=SparseTensor(indices=[], values=[], "
       "dense_shape=[1, 0])",
       "id=int64[1]{1} tokens=SparseTensor(indices=[[0, 0]], values=[10], "
       "dense_shape=[1, 1])"},
      {"id=int64[1]{2} tokens=SparseTensor(indices=[[0, 0], [0, 1]], "
       "values=[20, 21], dense_shape=[1, 2])",
       "id=int64[1]{3} tokens=SparseTensor(indices=[[0, 0], [0, 1], [0, 2]], "
       "values=[30, 31, 32], dense_shape=[1, 3])"}};
  EXPECT_EQ(Steps(*dist), want);
}

TEST(SparseDistributeTest, UnbatchedSparseIsNotAScalar) {
  // TF's rank check reads the SparseTensor's own shape ([?]: rank 1), so an
  // unbatched sparse element passes it and fails in the fallback instead.
  MapFunction tokens_only;
  tokens_only.name = "tokens_only";
  tokens_only.fn = [](const Element& e) -> absl::StatusOr<Element> {
    return Element(*e.Flatten()[1]);
  };
  tokens_only.output_spec =
      ElementSpec(SparseComponentSpec(DType::kI64, Shape({-1})));
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      Parsed(4).Map(tokens_only), InputWorkers::Uniform(1, 2));
  EXPECT_THAT(dist.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("cannot use rebatching fallback")));
}

}  // namespace
}  // namespace tpusim::data
