#pragma once
/// @file types.hpp
/// Index types. Global ids name a vertex of the whole graph (64 bit, so graphs beyond 2^31
/// vertices stay representable); local ids index a rank's owned-then-halo rows (32 bit, half the
/// memory traffic in the SpMM hot loop); ranks are MPI ranks.
#include <cstdint>

namespace halognn {

using GlobalId = std::int64_t;  ///< vertex id in the whole graph
using LocalId = std::int32_t;   ///< row index on one rank: owned rows first, then halo rows
using Rank = int;               ///< MPI rank (matches MPI's own `int`)
using EdgeOffset = std::int64_t;  ///< offset into a global adjacency array

}  // namespace halognn
