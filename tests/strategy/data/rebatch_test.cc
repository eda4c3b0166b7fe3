// tests/strategy/data/rebatch_test.cc
//
// The 2.2 rebatch graph rewrite (Case 1, Case 2, fallback, walking rules) and
// the 2.4 nodes.

#include "strategy/data/rebatch.h"

#include <optional>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/data/dataset.h"
#include "strategy/data/dataset_nodes.h"
#include "tests/strategy/data/distribute_test_util.h"

namespace tpusim::data {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;
using testing::DatasetValues;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Values;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

std::vector<Values> Rebatched(const Dataset& ds, int64_t n,
                              RebatchKind* kind = nullptr) {
  absl::StatusOr<RebatchResult> r = RebatchGraph(ds.node(), n);
  EXPECT_THAT(r, IsOk());
  if (!r.ok()) return {};
  if (kind) *kind = r->kind;
  absl::Status s;
  std::vector<Values> out = DatasetValues(Dataset(r->node), &s);
  EXPECT_THAT(s, IsOk());
  return out;
}

TEST(RebatchTest, Case1RewritesTheBatchOpInPlace) {
  absl::StatusOr<RebatchResult> r =
      RebatchGraph(Dataset::Range(10).Batch(8).node(), 2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kCase1);
  EXPECT_EQ(r->node->op(), BatchNode::kOp);
  EXPECT_EQ(static_cast<const BatchNode&>(*r->node).batch_size(), 4);
  EXPECT_EQ(DatasetValues(Dataset(r->node)),
            (std::vector<Values>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
}

TEST(RebatchTest, Case2InsertsAFlatMapSplittingIntoCeilPieces) {
  absl::StatusOr<RebatchResult> r =
      RebatchGraph(Dataset::Range(10).Batch(5).node(), 2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kCase2);
  EXPECT_EQ(r->node->op(), FlatMapNode::kOp);
  EXPECT_EQ(r->node->inputs()[0]->op(),
            BatchNode::kOp);  // the original batch(5) stays
  EXPECT_EQ(DatasetValues(Dataset(r->node)),
            (std::vector<Values>{{0, 1, 2}, {3, 4}, {5, 6, 7}, {8, 9}}));
}

TEST(RebatchTest, Case2PiecesFollowTheConstantNotThePartialBatch) {
  // range(7).batch(5), N=2: m = 3 from the constant; the partial batch [5,6]
  // stays whole (tpusim choice for the spec's open point; ceil(p/N) would give
  // [5] [6]).
  EXPECT_EQ(Rebatched(Dataset::Range(7).Batch(5), 2),
            (std::vector<Values>{{0, 1, 2}, {3, 4}, {5, 6}}));
}

TEST(RebatchTest, DropRemainderAlwaysTakesCase2) {
  RebatchKind kind;
  EXPECT_EQ(Rebatched(Dataset::Range(10).Batch(8, true), 2, &kind),
            (std::vector<Values>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(kind, RebatchKind::kCase2);
}

TEST(RebatchTest, Case2CanGiveFewerThanNPieces) {
  // Alignment hazard: B=4, N=3 → m=2 → 2 minibatches per global batch.
  EXPECT_EQ(Rebatched(Dataset::Range(8).Batch(4), 3),
            (std::vector<Values>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
}

TEST(RebatchTest, WalksThroughPassThroughOps) {
  MapFunction twice;
  twice.fn = [](const Element& e) -> absl::StatusOr<Element> {
    std::vector<int64_t> v;
    for (int64_t x : e.leaf().values<int64_t>()) v.push_back(2 * x);
    return Element(Tensor::Vector<int64_t>(v));
  };
  twice.output_spec =
      ElementSpec(TensorSpec{DType::kI64, Shape({runtime::kUnknownDim})});
  Dataset ds =
      Dataset::Range(8).Batch(4).Map(twice).Prefetch(2).Repeat(2).Skip(1).Take(
          5);
  RebatchKind kind;
  // Skip/take now count minibatches of 2.
  EXPECT_EQ(Rebatched(ds, 2, &kind),
            (std::vector<Values>{{4, 6}, {8, 10}, {12, 14}, {0, 2}, {4, 6}}));
  EXPECT_EQ(kind, RebatchKind::kCase1);
}

TEST(RebatchTest, OnlyTheOutermostBatchIsRewritten) {
  // batch(2).batch(4): the outer batch(4) → batch(2); the inner one is
  // untouched.
  absl::StatusOr<RebatchResult> r =
      RebatchGraph(Dataset::Range(16).Batch(2).Batch(4).node(), 2);
  ASSERT_THAT(r, IsOk());
  const auto& outer = static_cast<const BatchNode&>(*r->node);
  EXPECT_EQ(outer.batch_size(), 2);
  EXPECT_EQ(static_cast<const BatchNode&>(*outer.inputs()[0]).batch_size(), 2);
  EXPECT_EQ(r->node->element_spec().leaf().shape,
            Shape({runtime::kUnknownDim, runtime::kUnknownDim}));
}

TEST(RebatchTest, DescendsIntoEveryZipAndConcatenateInput) {
  Dataset zip = Dataset::Zip(
      {Dataset::Range(8).Batch(4), Dataset::Range(10, 18).Batch(4)});
  absl::StatusOr<RebatchResult> r = RebatchGraph(zip.node(), 2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kCase1);
  absl::StatusOr<std::vector<Element>> all = Dataset(r->node).Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[1].children()[0].leaf(), Tensor::Vector<int64_t>({2, 3}));
  EXPECT_EQ((*all)[1].children()[1].leaf(), Tensor::Vector<int64_t>({12, 13}));

  Dataset cat =
      Dataset::Range(4).Batch(4).Concatenate(Dataset::Range(10, 13).Batch(3));
  RebatchKind kind;
  EXPECT_EQ(Rebatched(cat, 2, &kind),
            (std::vector<Values>{{0, 1}, {2, 3}, {10, 11}, {12}}));
  EXPECT_EQ(kind, RebatchKind::kCase2);  // batch(3) is not divisible by 2
}

TEST(RebatchTest, DescendsIntoFlatMapBodies) {
  Dataset ds = Dataset::Range(2).FlatMap(
      [](const FunctionArg&) { return Dataset::Range(4).Batch(4); });
  absl::StatusOr<RebatchResult> r = RebatchGraph(ds.node(), 2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kCase1);
  ASSERT_EQ(r->node->op(), FlatMapNode::kOp);
  const auto& fn = static_cast<const FunctionNode&>(*r->node);
  EXPECT_EQ(static_cast<const BatchNode&>(*fn.body()).batch_size(), 2);
  EXPECT_EQ(DatasetValues(Dataset(r->node)),
            (std::vector<Values>{{0, 1}, {2, 3}, {0, 1}, {2, 3}}));
}

TEST(RebatchTest, RewritesTheBatchInsideAWindowFunction) {
  Dataset ds = Dataset::Range(6).Window(3).FlatMap(
      [](const WindowArg& w) { return w.dataset().Batch(4); });
  absl::StatusOr<RebatchResult> r = RebatchGraph(ds.node(), 2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kCase1);
  EXPECT_THAT(r->batch_sizes, ElementsAre(4));
  ASSERT_EQ(r->node->op(), FlatMapNode::kOp);
  const auto& fn = static_cast<const FunctionNode&>(*r->node);
  EXPECT_EQ(fn.inputs()[0]->op(), WindowNode::kOp);  // the window stays
  EXPECT_EQ(fn.body()->ShortString(),
            "BatchDatasetV2(batch_size=2, drop_remainder=false)");
  EXPECT_EQ(DatasetValues(Dataset(r->node)),
            (std::vector<Values>{{0, 1}, {2}, {3, 4}, {5}}));
}

TEST(RebatchTest, MapAndBatchIsABatchOp) {
  MapFunction identity;
  identity.name = "identity";
  identity.fn = [](const Element& e) -> absl::StatusOr<Element> { return e; };
  identity.output_spec = ElementSpec(TensorSpec{DType::kI64, Shape()});
  // Case 1: only batch_size changes (num_parallel_calls stays 8).
  absl::StatusOr<RebatchResult> r =
      RebatchGraph(Dataset::Range(10).MapAndBatch(identity, 8).node(), 2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kCase1);
  EXPECT_EQ(r->node->ShortString(),
            "MapAndBatchDataset(f=identity, batch_size=4, "
            "num_parallel_calls=8, drop_remainder=false)");
  EXPECT_EQ(DatasetValues(Dataset(r->node)),
            (std::vector<Values>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  // Case 2: a flat_map after it splits each batch into ceil(5/2) = 3 rows.
  r = RebatchGraph(Dataset::Range(10).MapAndBatch(identity, 5).node(), 2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kCase2);
  ASSERT_EQ(r->node->op(), FlatMapNode::kOp);
  EXPECT_EQ(r->node->inputs()[0]->op(), MapAndBatchNode::kOp);
  EXPECT_EQ(DatasetValues(Dataset(r->node)),
            (std::vector<Values>{{0, 1, 2}, {3, 4}, {5, 6, 7}, {8, 9}}));
  // 2.4 finds its batch size.
  EXPECT_EQ(ComputeBatchSize(
                Dataset::Range(10).MapAndBatch(identity, 5).Prefetch(1).node()),
            5);
}

TEST(RebatchTest, FallbackReshapesAStaticLeadingDimension) {
  std::vector<int64_t> v(24);
  for (int i = 0; i < 24; ++i) v[i] = i;
  Dataset ds = Dataset::FromTensors(
      TensorRefNest(TensorRef(Tensor::FromVector<int64_t>(Shape({8, 3}), v))));
  absl::StatusOr<RebatchResult> r = RebatchGraph(ds.node(), 2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kFallback);
  EXPECT_EQ(r->node->op(), FlatMapNode::kOp);
  EXPECT_EQ(r->node->inputs()[0]->op(), MapNode::kOp);
  absl::StatusOr<std::vector<Element>> all = Dataset(r->node).Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].leaf().shape(), Shape({4, 3}));
  EXPECT_EQ((*all)[1].leaf().values<int64_t>()[0], 12);
  EXPECT_EQ((*all)[1].leaf().values<int64_t>()[11], 23);
}

TEST(RebatchTest, FallbackNeedsAKnownLeadingDimension) {
  Dataset hidden = Dataset::Range(8).Batch(4).FlatMap(
      [](const FunctionArg& arg) { return Dataset::FromTensors(arg.nest()); });
  EXPECT_THAT(RebatchGraph(hidden.node(), 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("cannot use rebatching fallback"),
                             HasSubstr("0:?"), HasSubstr("num_replicas=2"))));
}

TEST(RebatchTest, FallbackNeedsEqualLeadingDimensions) {
  Dataset ds = Dataset::FromTensors(TensorRefNest::Tuple(
      {TensorRefNest(TensorRef(Tensor::Zeros(DType::kF32, Shape({4})))),
       TensorRefNest(TensorRef(Tensor::Zeros(DType::kF32, Shape({6}))))}));
  EXPECT_THAT(RebatchGraph(ds.node(), 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("cannot use rebatching fallback"),
                             HasSubstr("0:4"), HasSubstr("1:6"))));
}

TEST(RebatchTest, FallbackNeedsADivisibleLeadingDimension) {
  Dataset ds = Dataset::FromTensors(
      TensorRefNest(TensorRef(Tensor::Zeros(DType::kF32, Shape({6})))));
  EXPECT_THAT(RebatchGraph(ds.node(), 4),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("cannot use rebatching fallback"),
                             HasSubstr("0:6"), HasSubstr("num_replicas=4"))));
}

TEST(RebatchTest, PartialRewriteFailureFallsBackOnTheWholeGraph) {
  // zip(batched, unbatched-static): the second branch has no batch → fallback
  // for the whole.
  Dataset ds = Dataset::Zip(
      {Dataset::Range(4).Batch(2, true),
       Dataset::FromTensors(
           TensorRefNest(TensorRef(Tensor::Vector<int64_t>({7, 8}))))
           .Repeat(2)});
  absl::StatusOr<RebatchResult> r = RebatchGraph(ds.node(), 2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kFallback);
  absl::StatusOr<std::vector<Element>> all = Dataset(r->node).Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[1].children()[0].leaf(), Tensor::Vector<int64_t>({1}));
  EXPECT_EQ((*all)[1].children()[1].leaf(), Tensor::Vector<int64_t>({8}));
}

TEST(RebatchTest, ReportedSpecDividesKnownDivisibleDims) {
  ElementSpec spec = ElementSpec::Tuple(
      {ElementSpec(TensorSpec{DType::kF32, Shape({8, 3})}),
       ElementSpec(TensorSpec{DType::kI32, Shape({6})}),
       ElementSpec(TensorSpec{DType::kI64, Shape({runtime::kUnknownDim})})});
  ElementSpec out = RebatchedElementSpec(spec, 4);
  EXPECT_EQ(out.children()[0].leaf().shape, Shape({2, 3}));
  EXPECT_EQ(out.children()[1].leaf().shape, Shape({runtime::kUnknownDim}));
  EXPECT_EQ(out.children()[2].leaf().shape, Shape({runtime::kUnknownDim}));
}

TEST(RebatchTest, ScalarComponentsAreRejected) {
  EXPECT_THAT(CheckNoScalarComponents(
                  Dataset::Zip({Dataset::Range(3).Batch(2), Dataset::Range(3)})
                      .element_spec()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("component 1"), HasSubstr("batch"))));
  EXPECT_THAT(
      CheckNoScalarComponents(Dataset::Range(3).Batch(2).element_spec()),
      IsOk());
}

TEST(RebatchTest, SemanticsVersionParsing) {
  EXPECT_EQ(*ParseSemanticsVersion("2.2"), SemanticsVersion::k2_2);
  EXPECT_EQ(*ParseSemanticsVersion("2.4"), SemanticsVersion::k2_4);
  EXPECT_THAT(ParseSemanticsVersion("2.1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"2.1\""), HasSubstr("allowed"))));
  EXPECT_THAT(ParseSemanticsVersion(""),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

// ---- 2.4 ----

TEST(RebatchTest, BatchSizesForWorkerRotatesByWorkerReplicas) {
  EXPECT_THAT(BatchSizesForWorker(7, 2, 2, 0), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(BatchSizesForWorker(7, 2, 2, 1), ElementsAre(2, 1, 2, 2));
  EXPECT_THAT(BatchSizesForWorker(4, 1, 3, 0), ElementsAre(2, 1, 1));
  EXPECT_THAT(BatchSizesForWorker(8, 2, 2, 1), ElementsAre(2, 2, 2, 2));
  EXPECT_THAT(BatchSizesForWorker(3, 2, 2, 0), ElementsAre(1, 1, 1, 0));
  EXPECT_THAT(BatchSizesForWorker(3, 2, 2, 1), ElementsAre(1, 0, 1, 1));
  EXPECT_THAT(BatchSizesForWorker(10, 3, 1, 2), ElementsAre(3, 4, 3));
}

TEST(RebatchTest, RebatchV2CombinesAcrossInputBatches) {
  absl::StatusOr<NodePtr> v2 =
      RebatchV2Node::Make(Dataset::Range(8).Batch(4).node(), {2, 1, 1});
  ASSERT_THAT(v2, IsOk());
  EXPECT_EQ(DatasetValues(Dataset(*v2)),
            (std::vector<Values>{{0, 1}, {2}, {3}, {4, 5}, {6}, {7}}));
  v2 = RebatchV2Node::Make(Dataset::Range(16).Batch(4).node(), {6});
  ASSERT_THAT(v2, IsOk());
  EXPECT_EQ(DatasetValues(Dataset(*v2)),
            (std::vector<Values>{
                {0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}, {12, 13, 14, 15}}));
}

TEST(RebatchTest, RebatchV2ZeroSizesGiveEmptyBatches) {
  absl::StatusOr<NodePtr> v2 =
      RebatchV2Node::Make(Dataset::Range(3).Batch(3).node(), {1, 0});
  ASSERT_THAT(v2, IsOk());
  // As TF: the empty batch after the last row comes without reading the
  // input, so the input's end shows only at the next non-empty size.
  EXPECT_EQ(DatasetValues(Dataset(*v2)),
            (std::vector<Values>{{0}, {}, {1}, {}, {2}, {}}));
}

// The elements of `node` with their shapes, up to the end or the first error.
struct Listed {
  std::vector<Values> values;
  std::vector<Shape> shapes;
  absl::Status end;
};
Listed ListWithShapes(const NodePtr& node, int max = 100) {
  Listed out;
  absl::StatusOr<IteratorPtr> it = node->MakeIterator(IteratorContext());
  if (!it.ok()) {
    out.end = it.status();
    return out;
  }
  for (int i = 0; i < max; ++i) {
    absl::StatusOr<std::optional<Element>> e = (*it)->GetNext();
    if (!e.ok()) {
      out.end = e.status();
      return out;
    }
    if (!e->has_value()) return out;
    out.values.push_back(testing::ValuesOf(**e));
    out.shapes.push_back((*e)->Flatten().at(0)->shape());
  }
  out.end = absl::InternalError("too many elements");
  return out;
}

TEST(RebatchTest, RebatchV2ZeroSizeDoesNotTouchTheInput) {
  // Every input element fails; a first size of 0 still gives its empty batch
  // (TF never reads the input for it), and the error comes with size 2.
  MapFunction failing;
  failing.name = "fails";
  failing.output_spec =
      ElementSpec(TensorSpec{DType::kI64, Shape({runtime::kUnknownDim})});
  failing.fn = [](const Element&) -> absl::StatusOr<Element> {
    return absl::DataLossError("input read");
  };
  Dataset in = Dataset::Range(4).Batch(2).Map(failing);
  ASSERT_THAT(in.status(), IsOk());
  absl::StatusOr<NodePtr> v2 = RebatchV2Node::Make(in.node(), {0, 2});
  ASSERT_THAT(v2, IsOk());
  const Listed l = ListWithShapes(*v2);
  EXPECT_EQ(l.values, (std::vector<Values>{{}}));
  EXPECT_EQ(l.shapes, (std::vector<Shape>{Shape({0})}));
  EXPECT_THAT(l.end, StatusIs(absl::StatusCode::kDataLoss, "input read"));
}

TEST(RebatchTest, RebatchV2EmptyBatchSetsUnknownDimsToZero) {
  // Elements of spec [?, ?] (batches of batches); the empty batch is [0, 0]
  // (TF), not [0, 2] cut from the first input batch.
  Dataset in = Dataset::Range(8).Batch(2).Batch(2);
  ASSERT_EQ(in.element_spec().leaf().shape,
            Shape({runtime::kUnknownDim, runtime::kUnknownDim}));
  absl::StatusOr<NodePtr> v2 = RebatchV2Node::Make(in.node(), {0, 1});
  ASSERT_THAT(v2, IsOk());
  const Listed l = ListWithShapes(*v2);
  EXPECT_THAT(l.end, IsOk());
  EXPECT_EQ(l.values, (std::vector<Values>{
                          {}, {0, 1}, {}, {2, 3}, {}, {4, 5}, {}, {6, 7}, {}}));
  EXPECT_EQ(l.shapes,
            (std::vector<Shape>{Shape({0, 0}), Shape({1, 2}), Shape({0, 0}),
                                Shape({1, 2}), Shape({0, 0}), Shape({1, 2}),
                                Shape({0, 0}), Shape({1, 2}), Shape({0, 0})}));
}

TEST(RebatchTest, RebatchV2EndOfInputIsFinalEvenForSizeZero) {
  // The partial batch [2] ends the input; the next size (0) ends too.
  absl::StatusOr<NodePtr> v2 =
      RebatchV2Node::Make(Dataset::Range(3).Batch(3).node(), {2, 0});
  ASSERT_THAT(v2, IsOk());
  const Listed l = ListWithShapes(*v2);
  EXPECT_THAT(l.end, IsOk());
  EXPECT_EQ(l.values, (std::vector<Values>{{0, 1}, {}, {2}}));
  EXPECT_EQ(l.shapes, (std::vector<Shape>{Shape({2}), Shape({0}), Shape({1})}));
}

TEST(RebatchTest, RebatchV2JoiningRowsOfDifferentWidthsIsFailedPrecondition) {
  // Input batches [[7]] and [[8, 9]] (spec [1, ?]) joined into one batch of 2:
  // TF 2.21's dataset.rebatch([2]) fails with FailedPrecondition.
  Dataset in =
      Dataset::FromTensors(Element(Tensor::FromVector<int64_t>(Shape({1, 1}), {7})))
          .Concatenate(Dataset::FromTensors(
              Element(Tensor::FromVector<int64_t>(Shape({1, 2}), {8, 9}))));
  ASSERT_THAT(in.status(), IsOk());
  absl::StatusOr<NodePtr> v2 = RebatchV2Node::Make(in.node(), {2});
  ASSERT_THAT(v2, IsOk());
  absl::Status status;
  EXPECT_TRUE(DatasetValues(Dataset(*v2), &status).empty());
  EXPECT_THAT(status,
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("RebatchDatasetV2: cannot join rows of input "
                                 "batches of different shapes into one batch: "
                                 "cannot concatenate along dimension 0: part 0 "
                                 "is int64[1,1], part 1 is int64[1,2]")));
}

// A map adding 100 with a declared (fixed) output spec, as scenario maps do.
MapFunction PlusHundred(const Shape& declared) {
  MapFunction f;
  f.name = "plus100";
  f.output_spec = ElementSpec(TensorSpec{DType::kI64, declared});
  f.fn = [](const Element& e) -> absl::StatusOr<Element> {
    const Tensor& t = e.leaf();
    std::vector<int64_t> v;
    for (int64_t i = 0; i < t.num_elements(); ++i)
      v.push_back(t.AsInt64(i) + 100);
    return Element(Tensor::FromVector<int64_t>(t.shape(), v));
  };
  return f;
}

TEST(RebatchTest, Case2MapWithDeclaredSpecFollowsTheRewrittenBatch) {
  // batch(8, drop_remainder=True) then a map declaring [8]: Case 2 splits the
  // batches into [2] pieces, and the map's spec becomes [2] (TF 2.2 updates
  // the output shapes downstream of the rewritten batch).
  Dataset ds = Dataset::Range(16).Batch(8, true).Map(PlusHundred(Shape({8})));
  ASSERT_THAT(ds.status(), IsOk());
  absl::StatusOr<RebatchResult> r = RebatchGraph(ds.node(), 4);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kCase2);
  EXPECT_EQ(r->node->op(), MapNode::kOp);
  EXPECT_EQ(r->node->element_spec().leaf().shape, Shape({2}));
  const Listed l = ListWithShapes(r->node);
  EXPECT_THAT(l.end, IsOk());
  EXPECT_EQ(l.values, (std::vector<Values>{{100, 101},
                                           {102, 103},
                                           {104, 105},
                                           {106, 107},
                                           {108, 109},
                                           {110, 111},
                                           {112, 113},
                                           {114, 115}}));
}

TEST(RebatchTest, Case2MapSpecIsUnknownWhenNDoesNotDivideTheBatch) {
  // batch(6, drop) over 4 replicas: pieces of ceil(6/4) = 2 rows, 3 pieces.
  Dataset ds = Dataset::Range(12).Batch(6, true).Map(PlusHundred(Shape({6})));
  absl::StatusOr<RebatchResult> r = RebatchGraph(ds.node(), 4);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kCase2);
  EXPECT_EQ(r->node->element_spec().leaf().shape,
            Shape({runtime::kUnknownDim}));
  const Listed l = ListWithShapes(r->node);
  EXPECT_THAT(l.end, IsOk());
  EXPECT_EQ(l.values, (std::vector<Values>{{100, 101},
                                           {102, 103},
                                           {104, 105},
                                           {106, 107},
                                           {108, 109},
                                           {110, 111}}));
}

TEST(RebatchTest, Case2EveryDownstreamNodeRederivesItsSpec) {
  // Every pass-through op tpusim has, downstream of a rewritten batch.
  Dataset ds =
      Dataset::Range(32)
          .Batch(8, true)
          .Map(PlusHundred(Shape({8})))
          .Filter([](const Element&) -> absl::StatusOr<bool> { return true; })
          .Shard(1, 0)
          .Repeat(2)
          .Skip(1)
          .Take(5)
          .Prefetch(1)
          .Cache()
          .Map(PlusHundred(Shape({8})));
  ASSERT_THAT(ds.status(), IsOk());
  absl::StatusOr<RebatchResult> r = RebatchGraph(ds.node(), 4);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kCase2);
  for (NodePtr n = r->node; n->op() != FlatMapNode::kOp; n = n->inputs()[0]) {
    EXPECT_EQ(n->element_spec().leaf().shape, Shape({2})) << n->op();
  }
  const Listed l = ListWithShapes(r->node);
  EXPECT_THAT(l.end, IsOk());
  EXPECT_EQ(l.values,
            (std::vector<Values>{
                {202, 203}, {204, 205}, {206, 207}, {208, 209}, {210, 211}}));
}

TEST(RebatchTest, Case2ZipAndConcatenateRederiveFromRewrittenInputs) {
  Dataset a = Dataset::Range(8).Batch(4, true).Map(PlusHundred(Shape({4})));
  Dataset b = Dataset::Range(8).Batch(4, true);
  Dataset zipped = Dataset::Zip({a, b});
  ASSERT_THAT(zipped.status(), IsOk());
  absl::StatusOr<RebatchResult> r = RebatchGraph(zipped.node(), 2);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kind, RebatchKind::kCase2);
  for (const TensorSpec* leaf : r->node->element_spec().Flatten()) {
    EXPECT_EQ(leaf->shape, Shape({2}));
  }
  EXPECT_EQ(
      ListWithShapes(r->node).values,
      (std::vector<Values>{{100, 101}, {102, 103}, {104, 105}, {106, 107}}));

  Dataset cat = a.Concatenate(
      b.Map(PlusHundred(Shape({4}))).Map(PlusHundred(Shape({4}))));
  ASSERT_THAT(cat.status(), IsOk());
  absl::StatusOr<RebatchResult> rc = RebatchGraph(cat.node(), 2);
  ASSERT_THAT(rc, IsOk());
  EXPECT_EQ(rc->node->element_spec().leaf().shape, Shape({2}));
  const Listed l = ListWithShapes(rc->node);
  EXPECT_THAT(l.end, IsOk());
  EXPECT_EQ(l.values, (std::vector<Values>{{100, 101},
                                           {102, 103},
                                           {104, 105},
                                           {106, 107},
                                           {200, 201},
                                           {202, 203},
                                           {204, 205},
                                           {206, 207}}));
}

TEST(RebatchTest, RebatchV2ValidatesSizes) {
  NodePtr in = Dataset::Range(8).Batch(4).node();
  EXPECT_THAT(RebatchV2Node::Make(in, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(RebatchV2Node::Make(in, {2, -1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-1")));
  EXPECT_THAT(RebatchV2Node::Make(in, {0, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("all 0")));
  EXPECT_THAT(
      RebatchV2Node::Make(Dataset::Range(8).node(), {1}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank >= 1")));
}

TEST(RebatchTest, RebatchV2SpecIsStaticOnlyWithoutPartialBatches) {
  absl::StatusOr<NodePtr> a =
      RebatchV2Node::Make(Dataset::Range(16).Batch(8, true).node(), {4, 4});
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ((*a)->element_spec().leaf().shape, Shape({4}));
  absl::StatusOr<NodePtr> b =
      RebatchV2Node::Make(Dataset::Range(16).Batch(8).node(), {4, 4});
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ((*b)->element_spec().leaf().shape, Shape({runtime::kUnknownDim}));
  absl::StatusOr<NodePtr> c =
      RebatchV2Node::Make(Dataset::Range(16).Batch(7, true).node(), {4, 3});
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ((*c)->element_spec().leaf().shape, Shape({runtime::kUnknownDim}));
}

TEST(RebatchTest, LegacySplitGivesExactlyNPiecesWithEmpties) {
  absl::StatusOr<NodePtr> legacy =
      LegacyRebatchNode::Make(Dataset::Range(8).Batch(4).node(), 3);
  ASSERT_THAT(legacy, IsOk());
  EXPECT_EQ(DatasetValues(Dataset(*legacy)),
            (std::vector<Values>{{0, 1}, {2, 3}, {}, {4, 5}, {6, 7}, {}}));
  EXPECT_THAT(LegacyRebatchNode::Make(Dataset::Range(8).Batch(4).node(), 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("num_replicas=0")));
}

// Every component's values, one list per component.
std::vector<Values> ComponentValues(const Element& e) {
  std::vector<Values> out;
  for (const Tensor* t : e.Flatten()) out.push_back(testing::ValuesOf(*t));
  return out;
}

TEST(RebatchTest, LegacySplitSlicesEachComponentOnItsOwnDim0) {
  // zip(range(8).batch(4), range(4).batch(2)), N=3: component 0 splits in
  // pieces of ceil(4/3)=2, component 1 in pieces of ceil(2/3)=1; both run out
  // before the third piece, which is empty in both.
  Dataset zipped =
      Dataset::Zip({Dataset::Range(8).Batch(4), Dataset::Range(4).Batch(2)});
  absl::StatusOr<NodePtr> legacy = LegacyRebatchNode::Make(zipped.node(), 3);
  ASSERT_THAT(legacy, IsOk());
  absl::StatusOr<IteratorPtr> it = Dataset(*legacy).MakeIterator();
  ASSERT_THAT(it, IsOk());
  std::vector<std::vector<Values>> got;
  while (true) {
    absl::StatusOr<std::optional<Element>> e = (*it)->GetNext();
    ASSERT_THAT(e, IsOk());
    if (!e->has_value()) break;
    got.push_back(ComponentValues(**e));
  }
  EXPECT_EQ(got, (std::vector<std::vector<Values>>{{{0, 1}, {0}},
                                                   {{2, 3}, {1}},
                                                   {{}, {}},
                                                   {{4, 5}, {2}},
                                                   {{6, 7}, {3}},
                                                   {{}, {}}}));
  // Uneven: 5 rows and 3 rows, N=2 → pieces of 3 and 2 rows.
  legacy = LegacyRebatchNode::Make(
      Dataset::Zip({Dataset::Range(5).Batch(5), Dataset::Range(3).Batch(3)})
          .node(),
      2);
  ASSERT_THAT(legacy, IsOk());
  it = Dataset(*legacy).MakeIterator();
  ASSERT_THAT(it, IsOk());
  got.clear();
  while (true) {
    absl::StatusOr<std::optional<Element>> e = (*it)->GetNext();
    ASSERT_THAT(e, IsOk());
    if (!e->has_value()) break;
    got.push_back(ComponentValues(**e));
  }
  EXPECT_EQ(got, (std::vector<std::vector<Values>>{{{0, 1, 2}, {0, 1}},
                                                   {{3, 4}, {2}}}));
}

TEST(RebatchTest, ComputeBatchSizeFindsTheOutermostBatch) {
  EXPECT_EQ(ComputeBatchSize(Dataset::Range(8).Batch(4).Prefetch(1).node()), 4);
  EXPECT_EQ(ComputeBatchSize(Dataset::Range(8).Batch(4, true).node()), 4);
  EXPECT_EQ(ComputeBatchSize(Dataset::Zip({Dataset::Range(8).Batch(4),
                                           Dataset::Range(8).Batch(4)})
                                 .node()),
            4);
  EXPECT_EQ(ComputeBatchSize(Dataset::Zip({Dataset::Range(8).Batch(4),
                                           Dataset::Range(8).Batch(2)})
                                 .node()),
            -1);
  EXPECT_EQ(ComputeBatchSize(Dataset::Range(8)
                                 .Batch(4)
                                 .FlatMap([](const FunctionArg& a) {
                                   return Dataset::FromTensors(a.nest());
                                 })
                                 .node()),
            -1);
  EXPECT_EQ(ComputeBatchSize(
                Dataset::FromTensors(TensorRefNest(TensorRef(Tensor::Zeros(
                                         DType::kF32, Shape({6})))))
                    .node()),
            6);
}

}  // namespace
}  // namespace tpusim::data
