#include "strategy/runtime/nest.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(NestTest, FlattensTuplesInOrderAndDictsBySortedKey) {
  Nest<int> n = Nest<int>::Tuple(
      {Nest<int>(1),
       Nest<int>::Dict({{"y", Nest<int>(3)}, {"x", Nest<int>(2)}}),
       Nest<int>()});
  std::vector<std::pair<std::string, int>> flat;
  for (const auto& [path, leaf] : n.FlattenWithPaths())
    flat.emplace_back(path, *leaf);
  EXPECT_THAT(flat, ElementsAre(Pair("0", 1), Pair("1/x", 2), Pair("1/y", 3)));
  EXPECT_EQ(n.StructureString(), "(*, {x: *, y: *}, None)");
}

TEST(NestTest, ABareLeafHasPathZero) {
  Nest<int> n(7);
  EXPECT_THAT(n.FlattenWithPaths().front().first, "0");
  EXPECT_EQ(n.num_leaves(), 1);
}

TEST(NestTest, MapAndUnflattenKeepTheStructure) {
  Nest<int> n = Nest<int>::Tuple({Nest<int>(1), Nest<int>(2)});
  Nest<double> d = n.Map([](int v) { return v * 0.5; });
  EXPECT_TRUE(n.SameStructure(d));
  EXPECT_EQ(d.children()[1].leaf(), 1.0);
  absl::StatusOr<Nest<int>> u = n.Unflatten<int>({5, 6});
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->children()[0].leaf(), 5);
  EXPECT_FALSE(n.Unflatten<int>({5}).ok());
  EXPECT_FALSE(n.Unflatten<int>({5, 6, 7}).ok());
}

// Tuple and dict children live out of line; copies are deep and
// independent, moves leave the source None-like and usable.
TEST(NestTest, CopiesAreDeepAndMovesKeepTheStructure) {
  Nest<int> n = Nest<int>::Tuple(
      {Nest<int>(1),
       Nest<int>::Dict({{"b", Nest<int>(3)}, {"a", Nest<int>(2)}})});
  Nest<int> copy = n;
  copy.mutable_children()[0].mutable_leaf() = 10;
  EXPECT_EQ(n.children()[0].leaf(), 1);
  EXPECT_EQ(copy.children()[0].leaf(), 10);
  EXPECT_EQ(copy.StructureString(), "(*, {a: *, b: *})");
  Nest<int> assigned(5);
  assigned = n;
  EXPECT_TRUE(assigned.SameStructure(n));
  EXPECT_THAT(assigned.children()[1].keys(), ElementsAre("a", "b"));
  Nest<int> moved = std::move(assigned);
  EXPECT_EQ(moved.StructureString(), "(*, {a: *, b: *})");
  std::vector<int> leaves;
  moved.ForEachLeaf([&](int v) { leaves.push_back(v); });
  EXPECT_THAT(leaves, ElementsAre(1, 2, 3));
  moved.ForEachMutableLeaf([](int& v) { v *= 2; });
  leaves.clear();
  moved.ForEachLeaf([&](int v) { leaves.push_back(v); });
  EXPECT_THAT(leaves, ElementsAre(2, 4, 6));
  EXPECT_TRUE(Nest<int>(4).children().empty());
  EXPECT_TRUE(Nest<int>(4).keys().empty());
  leaves.clear();
  Nest<int>::None().ForEachLeaf([&](int v) { leaves.push_back(v); });
  EXPECT_TRUE(leaves.empty());
}

}  // namespace
}  // namespace tpusim::runtime
