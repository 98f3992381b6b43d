#pragma once
/// @file sampled_partition.hpp
/// How the distributed partitioner assigns parts without handing PT-Scotch the whole graph
/// (docs/partitioning.md "Distributed partitioning"): PT-Scotch's working memory is about 8
/// times the 64-bit ids of the graph it is given, more than the graph itself, so it partitions a
/// sample of the edges in which every vertex keeps about `sample_degree` of its edges, and
/// balance-constrained label propagation on the whole graph refines the result: a vertex moves
/// to the neighbouring part it is most connected to when that cuts fewer edges and the part has
/// room.
#include <cstdint>
#include <functional>
#include <vector>

#include <mpi.h>

#include "partition/dist_graph.hpp"

namespace halognn::dist {

struct SampledPartitionOptions {
  Rank parts = 2;
  double imbalance = 0.03;  ///< part weight limit: (1 + imbalance) x the average
  std::uint64_t seed = 1;   ///< which edges the sample keeps
  /// About how many edges a vertex keeps in the sample (sample_edges); 0: the whole graph.
  std::int64_t sample_degree = 8;
  int refine_rounds = 8;  ///< refinement sweeps over the whole graph (fewer when none moves)
};

/// What the scheme did: the same on every rank but peak_rss_after_initial, which is this rank's.
struct SampledPartitionStats {
  std::int64_t entries = 0, sampled_entries = 0;  ///< adjacency entries, all ranks
  std::int64_t initial_cut = 0;  ///< cut of the initial partitioner's parts, on the whole graph
  std::int64_t final_cut = 0;    ///< after refining
  std::int64_t max_part_weight = 0, heaviest_part = 0;
  int refine_rounds = 0;  ///< sweeps run
  double sample_s = 0, initial_s = 0, refine_s = 0;
  std::int64_t peak_rss_after_initial = 0;  ///< this rank's high-water mark after PT-Scotch
};

/// Partitions a (sampled) graph: the part of every local vertex, in [0, parts).
using InitialPartitioner =
    std::function<std::vector<std::int64_t>(MPI_Comm comm, const DistGraph& graph)>;

/// The part of every local vertex of `g` (collective).
std::vector<std::int64_t> sampled_partition(MPI_Comm comm, const DistGraph& g,
                                            const SampledPartitionOptions& opt,
                                            const InitialPartitioner& initial,
                                            SampledPartitionStats& stats, std::uint64_t& sent);

// --- the steps, for tests ------------------------------------------------------------------

/// A symmetric sample of `g`'s edges (collective: it learns the ghosts' degrees): edge {u, v}
/// stays with probability min(1, degree / min(deg u, deg v)), decided by a seeded hash of the
/// pair, so both of its entries stay or go together and a vertex of degree at most `degree`
/// keeps every edge. Keeps the ghost list (and so `global`), not the ghost plan.
DistGraph sample_edges(MPI_Comm comm, const DistGraph& g, std::int64_t degree, std::uint64_t seed,
                       std::uint64_t& sent);

/// The heaviest a part may be: floor((1 + imbalance) x total / parts), at least ceil(total /
/// parts) and at least the heaviest vertex.
std::int64_t max_part_weight(std::int64_t total, std::int64_t heaviest, Rank parts,
                             double imbalance);

/// Balance-constrained label propagation (collective), up to `rounds` sweeps; returns the
/// sweeps run. Each sweep first makes every part above `wmax` shed this rank's share of its
/// excess, best-placed vertices first, then moves vertices to the neighbouring part they are
/// most connected to when that lowers the cut and the part has room. Every rank moves within
/// its share of each part's room, so a part at or under `wmax` never goes over it and one over
/// it never grows.
int refine(MPI_Comm comm, const DistGraph& g, std::vector<std::int64_t>& part, Rank parts,
           std::int64_t wmax, int rounds, std::uint64_t& sent);

}  // namespace halognn::dist
