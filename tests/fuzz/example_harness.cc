// tf.train.Example parsing on hostile bytes: ParseSingleExample and
// ParseExample with two fixed feature specs, one with required features of
// every kind and one where every feature has a default.
//
// Contract (strategy/data/example_parser.h):
// - every error is InvalidArgument;
// - a parsed example has exactly the spec's dtypes and shapes;
// - ParseExample on [input, input] fails with the same status as
//   ParseSingleExample on input, or succeeds with both rows equal to it.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "strategy/data/example_parser.h"
#include "tests/fuzz/contract.h"
#include "tests/fuzz/harnesses.h"

namespace tpusim::fuzz {
namespace {

using data::Element;
using data::ElementSpec;
using data::FeatureSpec;
using data::FixedLenFeature;
using runtime::DType;
using runtime::Shape;
using runtime::Tensor;

const std::vector<FeatureSpec>& Specs() {
  static const auto* specs = new std::vector<FeatureSpec>{
      {{"x", FixedLenFeature{DType::kF32, Shape({2}), {}}},
       {"label", FixedLenFeature{DType::kI64, Shape(), {}}},
       {"id", FixedLenFeature{DType::kBytes, Shape(), {}}}},
      {{"x", FixedLenFeature{DType::kF32, Shape({3}),
                             Tensor::Vector<float>({1, 2, 3})}},
       {"n", FixedLenFeature{DType::kI64, Shape({2, 2}),
                             Tensor::FromVector<int64_t>(Shape({2, 2}),
                                                         {1, 2, 3, 4})}},
       {"s", FixedLenFeature{DType::kBytes, Shape({1}),
                             Tensor::Vector<std::string>({"d"})}}},
      // Variable length: a SparseTensor and a padded dense sequence.
      {{"x", data::VarLenFeature{DType::kF32}},
       {"label", data::FixedLenSequenceFeature{DType::kI64, Shape(), true, {}}},
       {"id", data::VarLenFeature{DType::kBytes}}},
  };
  return *specs;
}

void CheckSpec(const FeatureSpec& spec, absl::string_view input) {
  absl::StatusOr<ElementSpec> want = data::ParsedSpec(spec);
  FUZZ_EXPECT(want.ok(), "example", "spec: ", want.status().ToString());
  absl::StatusOr<Element> single = data::ParseSingleExample(input, spec);
  FUZZ_EXPECT(single.ok() ||
                  single.status().code() == absl::StatusCode::kInvalidArgument,
              "example", "ParseSingleExample: ", single.status().ToString());
  if (single.ok()) {
    // Compatible: a sequence's length is unknown in the spec, and a sparse
    // component's box is a string tensor in the element.
    const std::string got = data::ElementSpecToString(data::SpecOf(*single));
    FUZZ_EXPECT(data::IsCompatible(data::SpecOf(*single), *want), "example",
                "ParseSingleExample gave ", got, ", spec says ",
                data::ElementSpecToString(*want));
  }

  const std::string copy(input);
  absl::StatusOr<Element> batch =
      data::ParseExample(Tensor::Vector<std::string>({copy, copy}), spec);
  if (!single.ok()) {
    FUZZ_EXPECT(batch.status() == single.status(), "example",
                "ParseExample: ", batch.status().ToString(),
                " but ParseSingleExample: ", single.status().ToString());
    return;
  }
  FUZZ_EXPECT(batch.ok(), "example",
              "ParseExample failed on an example "
              "ParseSingleExample accepts: ",
              batch.status().ToString());
  const std::vector<const Tensor*> rows = batch->Flatten();
  const std::vector<const Tensor*> leaves = single->Flatten();
  FUZZ_EXPECT(rows.size() == leaves.size(), "example", "ParseExample gave ",
              rows.size(), " features, ParseSingleExample ", leaves.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    FUZZ_EXPECT(
        rows[i]->rank() >= 1 && rows[i]->shape().dim(0) == 2 &&
            rows[i]->Row(0) == *leaves[i] && rows[i]->Row(1) == *leaves[i],
        "example", "ParseExample feature ", i, " is ", rows[i]->DebugString(),
        ", ParseSingleExample's ", leaves[i]->DebugString());
  }
}

}  // namespace

void FuzzExample(absl::string_view input) {
  for (const FeatureSpec& spec : Specs()) CheckSpec(spec, input);
}

}  // namespace tpusim::fuzz
