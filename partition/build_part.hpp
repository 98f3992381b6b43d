#pragma once
/// @file build_part.hpp
/// Building one part's LocalPartition from what the part owns: its vertices, their complete
/// neighbour lists and the part that owns each neighbour. The serial partitioner
/// (for_each_local_partition) and the distributed one (distributed_partition.hpp) both build every
/// part through build_part, so a part's rank file depends only on the assignment, never on which
/// path wrote it.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/types.hpp"
#include "partition/local_partition.hpp"
#include "partition/partition.hpp"

namespace halognn {

/// One part's owned vertices with their neighbour lists in the symmetric graph
/// (build_symmetric_graph: no self-loops, no duplicates, each row ascending).
struct OwnedRows {
  Rank part = 0;
  Rank num_parts = 1;
  GlobalId global_num_nodes = 0;
  std::int64_t global_num_directed_edges = 0;
  std::vector<GlobalId> gids;         ///< owned vertices, ascending global id
  std::vector<EdgeOffset> row_ptr;    ///< gids.size() + 1 offsets into col
  std::vector<GlobalId> col;          ///< each owned vertex's complete neighbour list, ascending
  std::vector<Rank> col_part;         ///< the part owning col[e]
};

/// Global degree of a vertex that is not owned by the part (a halo vertex).
using HaloDegree = std::function<std::int64_t(GlobalId)>;

/// Fills lp's per-row payload (features, labels or label matrix, masks, global split sizes,
/// classes) for the owned vertices `owned` (global ids in local-row order).
using FillOwnedRows = std::function<void(std::span<const GlobalId> owned, LocalPartition& lp)>;

/// The local partition of `rows.part` under the conventions of local_partition.hpp: owned rows
/// in the locality order `order` of the part's own subgraph, halo rows by owner then ascending
/// global id, the complete local adjacency, the send and receive plans. O(E_p log E_p) for E_p
/// adjacency entries. Throws ConfigError when the part exceeds 32-bit local ids or offsets.
LocalPartition build_part(const OwnedRows& rows, const HaloDegree& halo_degree,
                          const LocalOrder& order, const FillOwnedRows& fill);

}  // namespace halognn
