#pragma once
/// @file planted_link.hpp
/// A generated boundary graph with planted shared-neighbour structure, for the grouping
/// benchmark (halognn-bench-grouping) and the tests of how grouping scales.
#include <cstdint>

#include "partition/semantic_groups.hpp"

namespace halognn {

struct PlantedLinkConfig {
  std::int64_t u = 100000;        ///< |U|
  std::int64_t v = 0;             ///< |V| (0: as |U|)
  std::int64_t degree = 10;       ///< cross edges per U node
  std::int64_t communities = 2000;
  double mix = 0.2;               ///< probability that an edge leaves its community
  std::uint64_t seed = 1;
};

/// One link 0 -> 1: U (global ids 0..|U|-1) is split into `communities` equal runs, V (ids
/// |U|..|U|+|V|-1) likewise; each u draws `degree` distinct neighbours, from its community's part
/// of V with probability 1 - mix and uniformly from all of V otherwise. Deterministic for the
/// config. ConfigError on sizes that cannot be drawn.
BoundaryGraph planted_link(const PlantedLinkConfig& c);

}  // namespace halognn
