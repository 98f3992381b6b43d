#pragma once
/// @file distributed_partition.hpp
/// Partitioning on K MPI ranks, for graphs no single host can hold (halognn-partition --method
/// parmetis under mpirun; docs/partitioning.md "Distributed partitioning"). Rank r reads only
/// its slice of the dataset's arrays (the r-th block of edge rows and of node rows), the edges
/// travel to the rank owning their source, PT-Scotch assigns the parts on a sample of the edges
/// (seeded, deterministic) and label propagation refines them on the whole graph
/// (sampled_partition.hpp), every part's owned vertices move to the rank that writes it (part p: rank p mod K) with their
/// neighbour lists and rows, and that rank builds the part with build_part, the serial
/// partitioner's own code. Rank 0 writes the manifest last; the directory appears only when
/// every rank succeeded.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

#include "core/json.hpp"
#include "core/types.hpp"
#include "partition/partition.hpp"
#include "partition/sampled_partition.hpp"

namespace halognn {

/// What one rank of the distributed partitioner did.
struct DistributedPartitionStats {
  GlobalId node_begin = 0, node_end = 0;    ///< this rank's block of node ids
  std::int64_t edge_begin = 0, edge_end = 0;  ///< this rank's slice of edge rows
  std::uint64_t bytes_read = 0;   ///< .npy bytes read (headers and element data)
  std::uint64_t bytes_sent = 0;   ///< bytes sent to other ranks
  std::int64_t peak_rss_bytes = 0;  ///< getrusage maximum resident set size at the end
  /// The same high-water mark at the end of the read, graph, PT-Scotch, partition (refinement
  /// included) and move steps: the step after which it first reaches peak_rss_bytes
  /// is the one that peaked.
  std::int64_t peak_rss_after_read = 0, peak_rss_after_graph = 0, peak_rss_after_scotch = 0,
               peak_rss_after_partition = 0, peak_rss_after_move = 0;
  double read_s = 0, graph_s = 0, partition_s = 0, move_s = 0, write_s = 0;
};

/// The result, complete on rank 0 (report, manifest, per-rank stats); other ranks hold their own
/// stats only.
struct DistributedPartitionResult {
  PartitionReport report;
  Json manifest;
  std::vector<DistributedPartitionStats> ranks;  ///< rank 0: every rank's stats
  dist::SampledPartitionStats sampling;          ///< every rank: sample, cuts and times
  DistributedPartitionStats local;               ///< this rank's
  std::vector<std::string> removed_leftovers;    ///< rank 0: leftovers of killed runs removed
  std::string dataset_name;
  std::int64_t num_features = 0;
};

/// Test hook: the part of every vertex, used instead of PT-Scotch (so a test can give the serial
/// and the distributed writer the same assignment). Not reachable from the tool.
using PartAssignment = std::function<Rank(GlobalId)>;

/// Called on rank 0 when a step begins ("reading", "graph", ...), for a progress line.
using PartitionProgress = std::function<void(const char* step)>;

/// Partitions the dataset directory `data_dir` into `out` on every rank of `comm` (collective).
/// `cfg.parts` parts, any number of ranks up to the node count. Supported: objective cut, every
/// locality order, seed; refused (ConfigError naming the option): objective vol, semantic
/// groups, sparsified features. A failure on any rank throws on every rank (the lowest failing
/// rank's message) and leaves `out` as it was. The ranks must share the file system of `out`.
DistributedPartitionResult distributed_partition(MPI_Comm comm, const std::string& data_dir,
                                                 const PartitionConfig& cfg,
                                                 const std::string& out,
                                                 const PartAssignment& assignment = {},
                                                 const PartitionProgress& progress = {});

}  // namespace halognn
