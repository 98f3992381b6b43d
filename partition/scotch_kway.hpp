#pragma once
/// @file scotch_kway.hpp
/// PT-Scotch's k-way partitioning of a distributed graph, seeded and deterministic: the initial
/// partitioner of the distributed multilevel scheme (dist_multilevel.hpp).
#include <cstdint>
#include <vector>

#include <mpi.h>

#include "partition/dist_graph.hpp"

namespace halognn::dist {

/// The part in [0, parts) of every local vertex of `g` (vertex and edge weights as given),
/// balanced to `imbalance` (0.03: METIS' default). Collective. The result is a function of
/// (graph, parts, imbalance, seed, rank count).
///
/// Why not ParMETIS_V3_PartKway of PT-Scotch's ParMETIS interface, which wraps the same
/// routines: it ignores ubvec and options, so neither the balance nor a seed can be set, and it
/// runs in Scotch's default (threaded, non-deterministic) context: three calls on one graph gave
/// three partitions. Here the graph is bound to a context with Scotch's deterministic and
/// fixed-seed options and the seed `seed`.
std::vector<std::int64_t> scotch_kway(MPI_Comm comm, const DistGraph& g, Rank parts,
                                      double imbalance, std::uint64_t seed);

}  // namespace halognn::dist
