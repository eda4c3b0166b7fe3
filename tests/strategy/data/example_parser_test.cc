#include "strategy/data/example_parser.h"

#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/data/example.pb.h"
#include "strategy/data/tfrecord.h"
#include "tests/strategy/data/test_files.h"

namespace tpusim::data {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::data::testing::FreshTempDir;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

// Example{features{feature{key: "a" value{int64_list{value: [1, 2]}}}}} in
// wire format, written out by hand from the field numbers in the spec.
const std::string kInt64Example(
    "\x0a\x0d"  // Example.features (1)
    "\x0a\x0b"  // Features.feature (1) entry
    "\x0a\x01"
    "a"                  // entry key (1)
    "\x12\x06"           // entry value (2): Feature
    "\x1a\x04"           // Feature.int64_list (3)
    "\x0a\x02\x01\x02",  // Int64List.value (1), packed
    15);

TEST(ExampleProtoTest, GeneratedClassSerializesTheDocumentedWireBytes) {
  tensorflow::Example ex;
  auto* list =
      (*ex.mutable_features()->mutable_feature())["a"].mutable_int64_list();
  list->add_value(1);
  list->add_value(2);
  EXPECT_EQ(ex.SerializeAsString(), kInt64Example);
}

TEST(ExampleProtoTest, FloatAndBytesListsUseFieldsTwoAndOne) {
  tensorflow::Feature f;
  f.mutable_float_list()->add_value(1.0f);
  EXPECT_EQ(f.SerializeAsString(),
            std::string("\x12\x06\x0a\x04\x00\x00\x80\x3f", 8));
  tensorflow::Feature b;
  b.mutable_bytes_list()->add_value("hi");
  b.mutable_bytes_list()->add_value("");
  EXPECT_EQ(b.SerializeAsString(),
            std::string("\x0a\x06\x0a\x02hi\x0a\x00", 8));
}

TEST(ExampleParserTest, ParsesHandBuiltWireBytes) {
  FeatureSpec spec = {{"a", FixedLenFeature{DType::kI64, Shape({2}), {}}}};
  absl::StatusOr<Element> e = ParseSingleExample(kInt64Example, spec);
  ASSERT_THAT(e, IsOk());
  ASSERT_TRUE(e->is_dict());
  EXPECT_THAT(e->keys(), ElementsAre("a"));
  EXPECT_THAT(e->children()[0].leaf().values<int64_t>(), ElementsAre(1, 2));
}

TEST(ExampleParserTest, AcceptsUnpackedInt64Encoding) {
  // Int64List.value as two unpacked varints (tag 0x08) instead of packed.
  const std::string unpacked(
      "\x0a\x0d\x0a\x0b\x0a\x01"
      "a"
      "\x12\x06\x1a\x04"
      "\x08\x01\x08\x02",
      15);
  FeatureSpec spec = {{"a", FixedLenFeature{DType::kI64, Shape({2}), {}}}};
  absl::StatusOr<Element> e = ParseSingleExample(unpacked, spec);
  ASSERT_THAT(e, IsOk());
  EXPECT_THAT(e->children()[0].leaf().values<int64_t>(), ElementsAre(1, 2));
}

std::string MakeExample(float x0, float x1, int64_t label,
                        const std::string& id) {
  tensorflow::Example ex;
  auto& m = *ex.mutable_features()->mutable_feature();
  m["x"].mutable_float_list()->add_value(x0);
  m["x"].mutable_float_list()->add_value(x1);
  m["label"].mutable_int64_list()->add_value(label);
  m["id"].mutable_bytes_list()->add_value(id);
  return ex.SerializeAsString();
}

FeatureSpec XLabelId() {
  return {{"x", FixedLenFeature{DType::kF32, Shape({2}), {}}},
          {"label", FixedLenFeature{DType::kI64, Shape(), {}}},
          {"id", FixedLenFeature{DType::kBytes, Shape(), {}}}};
}

TEST(ExampleParserTest, ProducesADictSortedByKey) {
  absl::StatusOr<Element> e =
      ParseSingleExample(MakeExample(1.5f, -2.0f, 7, "r1"), XLabelId());
  ASSERT_THAT(e, IsOk());
  EXPECT_THAT(e->keys(), ElementsAre("id", "label", "x"));
  EXPECT_EQ(e->children()[0].leaf().scalar<std::string>(), "r1");
  EXPECT_EQ(e->children()[1].leaf().scalar<int64_t>(), 7);
  EXPECT_THAT(e->children()[2].leaf().values<float>(),
              ElementsAre(1.5f, -2.0f));
  EXPECT_EQ(ElementSpecToString(SpecOf(*e)),
            "{id: string[], label: int64[], x: float32[2]}");
}

TEST(ExampleParserTest, MissingFeatureUsesDefaultOrFails) {
  FeatureSpec spec = {{"w", FixedLenFeature{DType::kF32, Shape(), {}}}};
  EXPECT_THAT(
      ParseSingleExample(MakeExample(1, 2, 3, "a"), spec),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("Feature: w (data type: float) is required but "
                         "could not be found.")));
  std::get<FixedLenFeature>(spec[0].second).default_value =
      Tensor::Scalar<float>(0.25f);
  absl::StatusOr<Element> e =
      ParseSingleExample(MakeExample(1, 2, 3, "a"), spec);
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->children()[0].leaf().scalar<float>(), 0.25f);
}

// protobuf parses at most INT_MAX bytes; a larger input used to be cut to the
// low 32 bits of its size, so 2^32 + 2 bytes parsed as their first two (an
// empty Example here) and gave the defaults. Only the first two bytes of the
// view are readable: the parser must fail before reading any.
TEST(ExampleParserTest, InputBeyondIntMaxIsAnErrorNotATruncatedParse) {
  const std::string empty_features("\x0a\x00", 2);
  const absl::string_view huge(empty_features.data(), (size_t{1} << 32) + 2);
  FeatureSpec spec = {
      {"w", FixedLenFeature{DType::kF32, Shape(), Tensor::Scalar<float>(1)}}};
  EXPECT_THAT(ParseSingleExample(huge, spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Could not parse example input: 4294967298 bytes; a "
                       "serialized Example has at most 2147483647"));
  // The first two bytes alone are a valid Example.
  EXPECT_THAT(ParseSingleExample(huge.substr(0, 2), spec), IsOk());
}

TEST(ExampleParserTest, WrongTypeAndWrongCountAreInvalidArgument) {
  FeatureSpec wrong_type = {
      {"label", FixedLenFeature{DType::kF32, Shape(), {}}}};
  EXPECT_THAT(ParseSingleExample(MakeExample(1, 2, 3, "a"), wrong_type),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Data types don't match. Data type: int64 but "
                                 "expected type: float")));
  FeatureSpec wrong_count = {
      {"x", FixedLenFeature{DType::kF32, Shape({3}), {}}}};
  EXPECT_THAT(ParseSingleExample(MakeExample(1, 2, 3, "a"), wrong_count),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Number of float values != expected.  Values "
                                 "size: 2 but output shape: [3]")));
}

TEST(ExampleParserTest, GarbageIsInvalidArgument) {
  EXPECT_THAT(ParseSingleExample("\xff\xff\xff", XLabelId()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Could not parse example input")));
}

TEST(ExampleParserTest, FeatureSpecIsValidated) {
  FeatureSpec bad = {{"x", FixedLenFeature{DType::kI32, Shape(), {}}}};
  EXPECT_THAT(ParsedSpec(bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("allowed: float32, int64, string")));
  FeatureSpec partial = {
      {"x", FixedLenFeature{DType::kF32, Shape({runtime::kUnknownDim}), {}}}};
  EXPECT_THAT(ParsedSpec(partial).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("needs a fully defined shape")));
}

TEST(ExampleParserTest, ParseSingleExampleInsideMapOverTFRecordFile) {
  const std::string path = FreshTempDir() + "/ex.tfrecord";
  ASSERT_THAT(WriteTFRecordFile(
                  path, {MakeExample(1, 2, 10, "a"), MakeExample(3, 4, 11, "b"),
                         MakeExample(5, 6, 12, "c")}),
              IsOk());
  Dataset ds = Dataset::TFRecord({path}).Map(ParseSingleExampleFn(XLabelId()));
  ASSERT_THAT(ds.status(), IsOk());
  EXPECT_EQ(ElementSpecToString(ds.element_spec()),
            "{id: string[], label: int64[], x: float32[2]}");
  Dataset batched = ds.Batch(2);
  EXPECT_EQ(ElementSpecToString(batched.element_spec()),
            "{id: string[?], label: int64[?], x: float32[?,2]}");
  absl::StatusOr<std::vector<Element>> all = batched.Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_THAT((*all)[0].children()[1].leaf().values<int64_t>(),
              ElementsAre(10, 11));
  EXPECT_THAT((*all)[0].children()[2].leaf().values<float>(),
              ElementsAre(1, 2, 3, 4));
  EXPECT_THAT((*all)[1].children()[0].leaf().values<std::string>(),
              ElementsAre("c"));
}

TEST(ExampleParserTest, ParseExampleAfterBatchKeepsTheBatchDimension) {
  const std::string path = FreshTempDir() + "/ex.tfrecord";
  ASSERT_THAT(WriteTFRecordFile(
                  path, {MakeExample(1, 2, 10, "a"), MakeExample(3, 4, 11, "b"),
                         MakeExample(5, 6, 12, "c")}),
              IsOk());
  Dataset ds =
      Dataset::TFRecord({path}).Batch(2, true).Map(ParseExampleFn(XLabelId()));
  ASSERT_THAT(ds.status(), IsOk());
  EXPECT_EQ(ElementSpecToString(ds.element_spec()),
            "{id: string[2], label: int64[2], x: float32[2,2]}");
  absl::StatusOr<std::vector<Element>> all = ds.Collect();
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_THAT((*all)[0].children()[2].leaf().values<float>(),
              ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(Dataset::Range(3).Map(ParseExampleFn(XLabelId())).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must be string vectors")));
}

}  // namespace
}  // namespace tpusim::data
