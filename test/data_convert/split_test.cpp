// The Shchur et al. random split: sizes per class, disjointness and determinism.
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "core/data/split.hpp"

namespace halognn {
namespace {

std::vector<std::int32_t> toy_labels() {
  // Class 0: 100 nodes, class 1: 60 nodes, class 2: 25 nodes (fewer than 20 + 30), 7 unlabelled.
  std::vector<std::int32_t> l;
  for (int i = 0; i < 100; ++i) l.push_back(0);
  for (int i = 0; i < 60; ++i) l.push_back(1);
  for (int i = 0; i < 25; ++i) l.push_back(2);
  for (int i = 0; i < 7; ++i) l.push_back(-1);
  // Interleave so classes are not contiguous.
  std::vector<std::int32_t> out(l.size());
  for (std::size_t i = 0; i < l.size(); ++i) out[(i * 37) % l.size()] = l[i];
  return out;
}

std::vector<int> per_class(const std::vector<GlobalId>& idx, const std::vector<std::int32_t>& l) {
  std::vector<int> c(3, 0);
  for (GlobalId v : idx) ++c[l[v]];
  return c;
}

TEST(ShchurSplit, TakesTwentyAndThirtyPerClassAndTheRestAsTest) {
  const auto labels = toy_labels();
  const SplitIndices s = shchur_split(labels, 3, 7);
  EXPECT_EQ(per_class(s.train, labels), (std::vector<int>{20, 20, 20}));
  EXPECT_EQ(per_class(s.val, labels), (std::vector<int>{30, 30, 5}));
  EXPECT_EQ(per_class(s.test, labels), (std::vector<int>{50, 10, 0}));
  std::vector<GlobalId> all = s.train;
  all.insert(all.end(), s.val.begin(), s.val.end());
  all.insert(all.end(), s.test.begin(), s.test.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), 185u);
  for (GlobalId v : all) EXPECT_GE(labels[v], 0);
  EXPECT_TRUE(std::is_sorted(s.train.begin(), s.train.end()));
  EXPECT_TRUE(std::is_sorted(s.test.begin(), s.test.end()));
}

TEST(ShchurSplit, IsDeterministicForASeedAndChangesWithIt) {
  const auto labels = toy_labels();
  const SplitIndices a = shchur_split(labels, 3, 11), b = shchur_split(labels, 3, 11);
  const SplitIndices c = shchur_split(labels, 3, 12);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.val, b.val);
  EXPECT_EQ(a.test, b.test);
  EXPECT_NE(a.train, c.train);
}

TEST(ShchurSplit, CustomCountsAreHonoured) {
  const auto labels = toy_labels();
  const SplitIndices s = shchur_split(labels, 3, 1, 5, 10);
  EXPECT_EQ(per_class(s.train, labels), (std::vector<int>{5, 5, 5}));
  EXPECT_EQ(per_class(s.val, labels), (std::vector<int>{10, 10, 10}));
}

}  // namespace
}  // namespace halognn
