#pragma once
/// @file split.hpp
/// The random split protocol of Shchur et al., "Pitfalls of Graph Neural Network Evaluation"
/// (2018), for datasets that ship no split: per class, `train_per_class` training and
/// `val_per_class` validation nodes drawn uniformly at random; every other labelled node is a
/// test node. Unlabelled nodes (label -1) are in no split.
#include <cstdint>
#include <vector>

#include "core/types.hpp"

namespace halognn {

/// The three index sets, each sorted ascending and pairwise disjoint.
struct SplitIndices {
  std::vector<GlobalId> train, val, test;
};

/// Draws the split from `labels` (-1 = unlabelled; classes in [0, num_classes)). The draw is a
/// pure function of (labels, seed): every node gets the key CounterRng({seed, split}).word(v),
/// and each class takes its nodes in (key, id) order — the first `train_per_class` for training,
/// the next `val_per_class` for validation. A class with fewer nodes takes what there is
/// (training first), so it may contribute no validation or test nodes.
SplitIndices shchur_split(const std::vector<std::int32_t>& labels, std::int32_t num_classes,
                          std::uint64_t seed, std::int32_t train_per_class = 20,
                          std::int32_t val_per_class = 30);

}  // namespace halognn
