#pragma once
/// @file dist_graph.hpp
/// A graph distributed over MPI ranks by contiguous blocks of vertex ids, in the form the
/// distributed multilevel partitioner (dist_multilevel.hpp) works on: each rank holds the rows of
/// its block with neighbours as 32-bit local indices (its own vertices first, then the ghosts,
/// the distinct neighbours other ranks own) and the plan to refresh a value per ghost from its
/// owner in one all-to-all.
#include <cstdint>
#include <vector>

#include <mpi.h>

#include "core/types.hpp"

namespace halognn::dist {

struct DistGraph {
  /// K + 1 entries: rank r owns the global ids [vtxdist[r], vtxdist[r + 1]).
  std::vector<GlobalId> vtxdist;
  Rank rank = 0;
  std::vector<EdgeOffset> row_ptr;  ///< n + 1
  /// Neighbour of each entry: < n a local vertex, n + j the ghost ghost[j].
  std::vector<std::int32_t> adj;
  std::vector<std::int64_t> edge_weight;    ///< per entry; empty: every entry weighs 1
  std::vector<std::int64_t> vertex_weight;  ///< per local vertex; empty: every vertex weighs 1
  /// Global ids of the ghosts, ascending (so grouped by owner rank, ranks ascending).
  std::vector<GlobalId> ghost;
  std::vector<std::int64_t> ghost_at;  ///< K + 1: the ghosts rank s owns are [ghost_at[s], ghost_at[s+1])
  /// The local vertices other ranks hold as ghosts, grouped by that rank: rank d's are
  /// send[send_at[d] .. send_at[d + 1]), in the order of d's ghost list.
  std::vector<std::int32_t> send;
  std::vector<std::int64_t> send_at;

  std::int64_t n() const { return static_cast<std::int64_t>(row_ptr.size()) - 1; }
  GlobalId begin() const { return vtxdist[static_cast<std::size_t>(rank)]; }
  std::int64_t vw(std::int64_t v) const { return vertex_weight.empty() ? 1 : vertex_weight[v]; }
  std::int64_t ew(EdgeOffset e) const { return edge_weight.empty() ? 1 : edge_weight[e]; }
  /// The global id of local index i (a local vertex or a ghost).
  GlobalId global(std::int64_t i) const { return i < n() ? begin() + i : ghost[i - n()]; }
};

/// The distributed graph of this rank's block [vtxdist[me], vtxdist[me + 1]) with neighbour
/// lists `col` (global ids) in CSR form; builds the ghost plan (collective). Adds the bytes sent
/// to `sent`. Throws on every rank when a block's local and ghost vertices do not fit 32-bit
/// indices.
DistGraph dist_graph_from_global(MPI_Comm comm, std::vector<GlobalId> vtxdist,
                                 const std::vector<EdgeOffset>& row_ptr,
                                 const std::vector<GlobalId>& col, std::uint64_t& sent);

/// Finishes `g` whose vtxdist, rank, rows and ghost list are set: ghost_at, send and send_at
/// (collective: every rank tells each owner which of its vertices it holds as ghosts).
void plan_ghosts(MPI_Comm comm, DistGraph& g, std::uint64_t& sent);

/// The value of every ghost, given the value of every local vertex (collective).
std::vector<std::int64_t> ghost_values(MPI_Comm comm, const DistGraph& g,
                                       const std::vector<std::int64_t>& local, std::uint64_t& sent);

/// The summed weight of the entries whose ends lie in different parts, over all ranks, halved:
/// the edge cut of the assignment `part` (local vertices; collective).
std::int64_t dist_edge_cut(MPI_Comm comm, const DistGraph& g, const std::vector<std::int64_t>& part,
                           std::uint64_t& sent);

}  // namespace halognn::dist
