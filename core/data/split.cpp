#include "core/data/split.hpp"

#include <algorithm>
#include <utility>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace halognn {

SplitIndices shchur_split(const std::vector<std::int32_t>& labels, std::int32_t num_classes,
                          std::uint64_t seed, std::int32_t train_per_class,
                          std::int32_t val_per_class) {
  GNN_CHECK_CONFIG(num_classes > 0, "split: the number of classes must be positive");
  GNN_CHECK_CONFIG(train_per_class >= 0 && val_per_class >= 0,
                   "split: per-class counts must be non-negative");
  const CounterRng rng(RngKey{seed, RngPurpose::split, 0, 0});
  // Bucket the labelled nodes by class with their random keys; sorting by (key, id) is a
  // uniform random order that does not depend on how the labels were produced.
  std::vector<std::vector<std::pair<std::uint32_t, GlobalId>>> by_class(num_classes);
  for (std::size_t v = 0; v < labels.size(); ++v) {
    const std::int32_t c = labels[v];
    if (c < 0) continue;
    GNN_ASSERT(c < num_classes, "label ", c, " out of range");
    by_class[c].emplace_back(rng.word(v, 0), static_cast<GlobalId>(v));
  }
  std::vector<std::uint8_t> role(labels.size(), 0);  // 0 none/unlabelled, 1 train, 2 val, 3 test
  for (auto& members : by_class) {
    std::sort(members.begin(), members.end());
    const std::size_t n = members.size();
    const std::size_t n_train = std::min<std::size_t>(n, train_per_class);
    const std::size_t n_val = std::min<std::size_t>(n - n_train, val_per_class);
    for (std::size_t i = 0; i < n; ++i)
      role[members[i].second] = i < n_train ? 1 : (i < n_train + n_val ? 2 : 3);
  }
  SplitIndices s;
  for (std::size_t v = 0; v < role.size(); ++v) {
    if (role[v] == 1) s.train.push_back(static_cast<GlobalId>(v));
    else if (role[v] == 2) s.val.push_back(static_cast<GlobalId>(v));
    else if (role[v] == 3) s.test.push_back(static_cast<GlobalId>(v));
  }
  return s;
}

}  // namespace halognn
