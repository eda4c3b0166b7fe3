#include "strategy/data/dataset.h"

#include <cstdint>
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
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

// The elements of a dataset of int64 tensors, each flattened to a vector.
std::vector<std::vector<int64_t>> Ints(const Dataset& ds) {
  absl::StatusOr<std::vector<Element>> all = ds.Collect();
  EXPECT_THAT(all, IsOk());
  std::vector<std::vector<int64_t>> out;
  if (!all.ok()) return out;
  for (const Element& e : *all) {
    auto v = e.leaf().values<int64_t>();
    out.emplace_back(v.begin(), v.end());
  }
  return out;
}

TEST(DatasetTest, RangeBatchGivesStackedBatches) {
  Dataset ds = Dataset::Range(10).Batch(4);
  ASSERT_THAT(ds.status(), IsOk());
  EXPECT_THAT(Ints(ds),
              ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7),
                          ElementsAre(8, 9)));
  EXPECT_EQ(ElementSpecToString(ds.element_spec()), "int64[?]");
}

}  // namespace
}  // namespace tpusim::data
