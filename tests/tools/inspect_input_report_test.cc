#include "tools/inspect_input_report.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::tools {
namespace {

using runtime::Shape;
using runtime::Tensor;
using ::testing::HasSubstr;

// A 1 worker x 2 replica listing: step 0 gives replica 0 {a: [1, 2], b: "x"}
// and replica 1 an empty batch.
scenarios::InputListing SmallListing() {
  scenarios::InputListing l;
  l.name = "small";
  l.semantics = "2.2";
  l.shard_policy = "AUTO";
  l.api = "DISTRIBUTE_DATASET";
  l.workers = 1;
  l.replicas = 2;
  l.replica_workers = {0, 0};
  scenarios::InputStep step;
  step.step = 0;
  data::Element full = data::Element::Dict(
      {{"b", data::Element(Tensor::FromVector<std::string>(Shape({1}), {"x"}))},
       {"a",
        data::Element(Tensor::FromVector<int64_t>(Shape({1, 2}), {1, 2}))}});
  data::Element empty = data::Element::Dict(
      {{"b", data::Element(Tensor::Zeros(runtime::DType::kBytes, Shape({0})))},
       {"a",
        data::Element(Tensor::Zeros(runtime::DType::kI64, Shape({0, 2})))}});
  step.replicas.push_back({0, 0, full, {}});
  step.replicas.push_back({1, 0, empty, {}});
  l.steps.push_back(step);
  l.end = absl::OutOfRangeError("End of sequence");
  l.end_at_step = 1;
  l.warnings = {"be \"careful\""};
  return l;
}

TEST(InspectInputReportTest, JsonHasTheFixedSchemaAndLayout) {
  EXPECT_EQ(FormatListingJson(SmallListing()),
            "{\n"
            "  \"end\": {\"at_step\": 1, \"code\": \"OUT_OF_RANGE\", "
            "\"message\": \"End of "
            "sequence\"},\n"
            "  \"replica_workers\": [0, 0],\n"
            "  \"replicas\": 2,\n"
            "  \"semantics\": \"2.2\",\n"
            "  \"steps\": [\n"
            "    {\"replicas\": [\n"
            "      {\"components\": [{\"dtype\": \"int64\", \"path\": \"a\", "
            "\"shape\": [1, 2], "
            "\"values\": [1, 2]}, {\"dtype\": \"string\", \"path\": \"b\", "
            "\"shape\": [1], "
            "\"values\": [\"x\"]}], \"replica\": 0, \"worker\": 0},\n"
            "      {\"components\": [{\"dtype\": \"int64\", \"path\": \"a\", "
            "\"shape\": [0, 2], "
            "\"values\": []}, {\"dtype\": \"string\", \"path\": \"b\", "
            "\"shape\": [0], "
            "\"values\": []}], \"replica\": 1, \"worker\": 0}\n"
            "    ], \"step\": 0}\n"
            "  ],\n"
            "  \"warnings\": [\n"
            "    \"be \\\"careful\\\"\"\n"
            "  ],\n"
            "  \"workers\": 1\n"
            "}\n");
}

TEST(InspectInputReportTest, EmptyListingWritesEmptyArraysInline) {
  scenarios::InputListing l;
  l.semantics = "2.4";
  l.workers = 2;
  l.replicas = 2;
  l.replica_workers = {0, 1};
  l.end = absl::InvalidArgumentError("bad");
  EXPECT_EQ(FormatListingJson(l),
            "{\n"
            "  \"end\": {\"at_step\": 0, \"code\": \"INVALID_ARGUMENT\", "
            "\"message\": \"bad\"},\n"
            "  \"replica_workers\": [0, 1],\n"
            "  \"replicas\": 2,\n"
            "  \"semantics\": \"2.4\",\n"
            "  \"steps\": [],\n"
            "  \"warnings\": [],\n"
            "  \"workers\": 2\n"
            "}\n");
}

TEST(InspectInputReportTest, StoppedListingReportsOkWithTheStepCount) {
  scenarios::InputListing l = SmallListing();
  l.end = absl::OkStatus();
  EXPECT_THAT(
      FormatListingJson(l),
      HasSubstr(
          "\"end\": {\"at_step\": 1, \"code\": \"OK\", \"message\": \"stopped "
          "after 1 steps\"}"));
  EXPECT_THAT(FormatListingText(l),
              HasSubstr("end at step 1: stopped after 1 steps\n"));
}

TEST(InspectInputReportTest, TextListsPathValuePairsPerReplica) {
  EXPECT_EQ(
      FormatListingText(SmallListing()),
      "scenario small\n"
      "1 worker(s), 2 replica(s) (replica->worker: 0->0 1->0); semantics 2.2; "
      "DISTRIBUTE_DATASET; shard policy AUTO\n"
      "step 0\n"
      "  replica 0 (worker 0): a=[[1, 2]]; b=[\"x\"]\n"
      "  replica 1 (worker 0): a=[]; b=[]\n"
      "end at step 1: OUT_OF_RANGE: End of sequence\n"
      "warning: be \"careful\"\n");
}

// Replica 0 has tokens = SparseTensor([[1, 0], [1, 1]], [5, 6], [2, 2]),
// replica 1 the empty sparse dummy [0, 0]; the boxes themselves are not shown.
scenarios::InputListing SparseListing() {
  scenarios::InputListing l = SmallListing();
  l.steps[0].replicas[0].element = data::Element::Dict(
      {{"tokens", data::Element(Tensor::Scalar<std::string>("box"))}});
  l.steps[0].replicas[0].sparse = {
      {"tokens",
       data::SparseTensor{
           Tensor::FromVector<int64_t>(Shape({2, 2}), {1, 0, 1, 1}),
           Tensor::Vector<int64_t>({5, 6}), Tensor::Vector<int64_t>({2, 2})}}};
  l.steps[0].replicas[1].element = data::Element::Dict(
      {{"tokens",
        data::Element(Tensor::Zeros(runtime::DType::kBytes, Shape({0})))}});
  l.steps[0].replicas[1].sparse = {
      {"tokens",
       data::SparseTensor{Tensor::Zeros(runtime::DType::kI64, Shape({0, 2})),
                          Tensor::Zeros(runtime::DType::kI64, Shape({0})),
                          Tensor::Vector<int64_t>({0, 0})}}};
  return l;
}

TEST(InspectInputReportTest, SparseComponentsShowIndicesValuesDenseShape) {
  EXPECT_EQ(FormatStepText(SparseListing().steps[0]),
            "step 0\n"
            "  replica 0 (worker 0): tokens=SparseTensor(indices=[[1, 0], [1, "
            "1]], values=[5, 6], dense_shape=[2, 2])\n"
            "  replica 1 (worker 0): tokens=SparseTensor(indices=[], "
            "values=[], dense_shape=[0, 0])\n");
  const std::string json = FormatListingJson(SparseListing());
  EXPECT_THAT(json,
              HasSubstr("{\"components\": [{\"dtype\": \"int64\", "
                        "\"indices\": [[1, 0], [1, 1]], \"path\": \"tokens\", "
                        "\"shape\": [2, 2], \"sparse\": true, \"values\": [5, "
                        "6]}], \"replica\": 0, \"worker\": 0}"));
  EXPECT_THAT(
      json, HasSubstr("{\"components\": [{\"dtype\": \"int64\", "
                      "\"indices\": [], \"path\": \"tokens\", \"shape\": [0, "
                      "0], \"sparse\": true, \"values\": []}], \"replica\": 1, "
                      "\"worker\": 0}"));
}

TEST(InspectInputReportTest, SingleTensorElementsPrintBareValues) {
  EXPECT_EQ(FormatTensorValues(Tensor::Scalar<int32_t>(7)), "7");
  EXPECT_EQ(FormatTensorValues(
                Tensor::FromVector<float>(Shape({2, 2}), {0.5f, 1, 2, 3})),
            "[[0.5, 1], [2, 3]]");
  EXPECT_EQ(
      FormatTensorValues(Tensor::Zeros(runtime::DType::kF32, Shape({0, 3}))),
      "[]");
  EXPECT_EQ(
      FormatTensorValues(Tensor::Abstract(runtime::DType::kF32, Shape({2}))),
      "<abstract float32[2]>");
}

TEST(InspectInputReportTest, AbstractTensorsHaveNullValuesInJson) {
  scenarios::InputListing l = SmallListing();
  l.steps[0].replicas[0].element =
      data::Element(Tensor::Abstract(runtime::DType::kF32, Shape({2})));
  EXPECT_THAT(FormatListingJson(l),
              HasSubstr("{\"dtype\": \"float32\", \"path\": \"0\", \"shape\": "
                        "[2], \"values\": "
                        "null}"));
}

TEST(InspectInputReportTest, NestedDictComponentsAreNamedBySlashPaths) {
  scenarios::InputListing l = SmallListing();
  l.steps[0].replicas.resize(1);
  l.steps[0].replicas[0].element = data::Element::Dict(
      {{"label", data::Element(Tensor::Scalar<int64_t>(3))},
       {"features", data::Element::Dict(
                        {{"y", data::Element(Tensor::Scalar<float>(0.5f))},
                         {"x", data::Element(Tensor::Scalar<int64_t>(1))}})}});
  const std::string json = FormatListingJson(l);
  EXPECT_THAT(
      json,
      HasSubstr(
          "{\"components\": [{\"dtype\": \"int64\", \"path\": "
          "\"features/x\", \"shape\": [], \"values\": [1]}, {\"dtype\": "
          "\"float32\", \"path\": \"features/y\", \"shape\": [], "
          "\"values\": [0.5]}, {\"dtype\": \"int64\", \"path\": \"label\", "
          "\"shape\": [], \"values\": [3]}], \"replica\": 0, \"worker\": 0}"));
  EXPECT_THAT(
      FormatListingText(l),
      HasSubstr(
          "  replica 0 (worker 0): features/x=1; features/y=0.5; label=3\n"));
}

TEST(InspectInputReportTest, TupleComponentsAreNamedByIndex) {
  scenarios::InputListing l = SmallListing();
  l.steps[0].replicas.resize(1);
  l.steps[0].replicas[0].element =
      data::Element::Tuple({data::Element(Tensor::Scalar<int64_t>(1)),
                            data::Element(Tensor::Vector<double>({0.25, -1}))});
  EXPECT_THAT(FormatListingText(l),
              HasSubstr("  replica 0 (worker 0): 0=1; 1=[0.25, -1]\n"));
  EXPECT_THAT(FormatListingJson(l),
              HasSubstr("\"path\": \"1\", \"shape\": [2], \"values\": "
                        "[0.25, -1]}"));
}

TEST(InspectInputReportTest, GoldenDiffIsEmptyForIdenticalText) {
  EXPECT_EQ(GoldenDiff("a\nb\n", "a\nb\n", "g.json"), "");
}

TEST(InspectInputReportTest, GoldenDiffNamesTheFirstDifferingLineWithContext) {
  const std::string expected = "l1\nl2\nl3\nl4\nOLD\nl6\nl7\n";
  const std::string actual = "l1\nl2\nl3\nl4\nNEW\nl6\nl7\n";
  EXPECT_EQ(GoldenDiff(expected, actual, "g.json"),
            "first difference at line 5 (expected g.json: 7 lines; actual "
            "output: 7 lines)\n"
            "--- expected g.json\n"
            "+++ actual output\n"
            "@@ line 5 @@\n"
            "  l2\n"
            "  l3\n"
            "  l4\n"
            "- OLD\n"
            "+ NEW\n"
            "  l6\n"
            "  l7\n");
}

TEST(InspectInputReportTest, GoldenDiffShowsInsertedLines) {
  EXPECT_EQ(GoldenDiff("a\nc\n", "a\nb1\nb2\nc\n", "g"),
            "first difference at line 2 (expected g: 2 lines; actual output: 4 "
            "lines)\n"
            "--- expected g\n"
            "+++ actual output\n"
            "@@ line 2 @@\n"
            "  a\n"
            "+ b1\n"
            "+ b2\n"
            "  c\n");
}

TEST(InspectInputReportTest, GoldenDiffNotesAMissingFinalNewline) {
  EXPECT_THAT(GoldenDiff("a\n", "a", "g"),
              HasSubstr("(the files differ only in the final newline)"));
}

TEST(InspectInputReportTest, GoldenDiffCapsLongRegions) {
  std::string expected, actual;
  for (int i = 0; i < 20; ++i) {
    expected += "e" + std::to_string(i) + "\n";
    actual += "a" + std::to_string(i) + "\n";
  }
  const std::string diff = GoldenDiff(expected, actual, "g");
  EXPECT_THAT(diff, HasSubstr("- e11\n- ... (8 more expected lines)\n"));
  EXPECT_THAT(diff, HasSubstr("+ a11\n+ ... (8 more actual lines)\n"));
}

TEST(JsonListingCollectorTest, CountsValuesAndRefusesTheStepPastTheCap) {
  // A step of SmallListing holds 7 values: components b (1 value) and a (2)
  // of replica 0, the two empty components of replica 1, plus one per
  // component.
  const scenarios::InputListing l = SmallListing();
  JsonListingCollector collector(/*max_values=*/14);
  scenarios::InputListing header = l;
  header.steps.clear();
  ASSERT_TRUE(collector.Begin(header).ok());
  scenarios::InputStep step = l.steps[0];
  ASSERT_TRUE(collector.Step(step).ok());
  step.step = 1;
  ASSERT_TRUE(collector.Step(step).ok());
  step.step = 2;
  const absl::Status s = collector.Step(step);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "--format=json (and --golden) hold the whole listing until it is "
            "complete, and step 2 would take it past 14 values (tpusim's "
            "cap); list at most --steps 2, or use --format=text without "
            "--golden, which prints step by step");
  scenarios::InputListing result = header;
  result.end = l.end;
  result.end_at_step = 2;
  const scenarios::InputListing done = collector.Finish(result);
  ASSERT_EQ(done.steps.size(), 2u);
  EXPECT_EQ(done.steps[1].step, 1);
  EXPECT_EQ(done.end_at_step, 2);
}

TEST(JsonListingCollectorTest, AFirstStepPastTheCapSaysSo) {
  JsonListingCollector collector(/*max_values=*/6);
  const scenarios::InputListing l = SmallListing();
  ASSERT_TRUE(collector.Begin(l).ok());
  const absl::Status s = collector.Step(l.steps[0]);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("step 0 would take it past 6 values (tpusim's cap); "
                        "a single step is too large to list as JSON, or use "
                        "--format=text"));
}

TEST(InspectInputReportTest, TextListingIsHeaderStepsAndEnd) {
  const scenarios::InputListing l = SmallListing();
  EXPECT_EQ(FormatListingText(l), FormatListingHeaderText(l) +
                                      FormatStepText(l.steps[0]) +
                                      FormatListingEndText(l));
  EXPECT_EQ(FormatStepText(l.steps[0]),
            "step 0\n"
            "  replica 0 (worker 0): a=[[1, 2]]; b=[\"x\"]\n"
            "  replica 1 (worker 0): a=[]; b=[]\n");
}

}  // namespace
}  // namespace tpusim::tools
