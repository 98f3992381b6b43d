#pragma once
/// @file partition.hpp
/// Offline partitioning: assign every vertex of the symmetric graph to a part (METIS k-way or a
/// seeded balanced random assignment), cut the dataset into one LocalPartition per part (the
/// conventions are in local_partition.hpp) and summarise the cut in a PartitionReport.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/data/dataset.hpp"
#include "core/json.hpp"
#include "core/types.hpp"
#include "partition/local_partition.hpp"
#include "partition/semantic_groups.hpp"

namespace halognn {

/// How a part numbers its owned rows (local ids 0..num_owned-1). Kernels gather the rows of a
/// vertex's neighbours; numbering vertices that share neighbours close together keeps those rows
/// in cache (docs/partitioning.md "Locality order").
struct LocalOrder {
  enum class Kind {
    blocks,  ///< METIS k-way cut of the part's own subgraph into blocks of about block_rows
             ///< vertices, numbered block by block (ascending global id inside a block)
    rcm,     ///< reverse Cuthill-McKee of the part's own subgraph (good on meshes, fast)
    none,    ///< ascending global id
  };
  Kind kind = Kind::blocks;
  std::int64_t block_rows = 1024;  ///< blocks: target rows per block (1 MiB of 256-wide rows)
  std::uint64_t seed = 1;          ///< blocks: METIS_OPTION_SEED
};

/// "blocks" / "rcm" / "none".
std::string to_string(LocalOrder::Kind k);
/// Parses the names above; throws ConfigError otherwise.
LocalOrder::Kind parse_local_order(const std::string& s);

/// The locality order of the vertices of an undirected graph given as CSR (symmetric, no
/// self-loops, columns in [0, n)): order[i] is the vertex numbered i. A permutation of 0..n-1;
/// deterministic for a given (graph, cfg). Kind::none gives the identity.
std::vector<std::int32_t> locality_order(std::int64_t n, const std::vector<std::int64_t>& row_ptr,
                                         const std::vector<std::int32_t>& col,
                                         const LocalOrder& cfg);

/// How to split the graph.
struct PartitionConfig {
  /// parmetis: PT-Scotch's ParMETIS interface on K MPI ranks (distributed_partition.hpp); the
  /// serial assign_parts refuses it.
  enum class Method { metis, random, parmetis };
  enum class Objective { cut, vol };

  int parts = 1;                        ///< number of parts K (= MPI ranks of the training job)
  Method method = Method::metis;        ///< METIS k-way, or a balanced random assignment
  Objective objective = Objective::cut; ///< METIS objective: edge cut or communication volume
  std::uint64_t seed = 1;               ///< METIS_OPTION_SEED / random assignment seed
  LocalOrder order{};                   ///< numbering of each part's owned rows
  /// Semantic groups of every link, stored with the partition (--groups semantic).
  bool semantic_groups = false;
  GroupingConfig grouping{};
  /// Sparsified features (--sparsify-features k, core/data/feature_sparsify.hpp): 0 stores them
  /// dense; k in [1, 128] stores each row's positions and one codebook, drawn from a sample of
  /// about `sparsify_sample` nodes (keyed by `seed`).
  std::int32_t sparsify_k = 0;
  std::int64_t sparsify_sample = 100000;
  /// --method parmetis only (--sample-degree): PT-Scotch partitions a sample of the edges in
  /// which a vertex keeps about this many, refined on the whole graph
  /// (partition/sampled_partition.hpp); 0 hands PT-Scotch the whole graph.
  std::int64_t sample_degree = 8;
};

/// "metis" / "random" / "parmetis".
std::string to_string(PartitionConfig::Method m);
/// "cut" / "vol".
std::string to_string(PartitionConfig::Objective o);
/// Parses "metis" / "random" / "parmetis"; throws ConfigError otherwise.
PartitionConfig::Method parse_partition_method(const std::string& s);
/// Parses "cut" / "vol"; throws ConfigError otherwise.
PartitionConfig::Objective parse_partition_objective(const std::string& s);

/// Assigns each vertex of `g` a part in [0, cfg.parts). K = 1 never calls METIS (it crashes on
/// nparts = 1). Deterministic for a given (graph, cfg). Throws ConfigError when K < 1 or K exceeds
/// the number of vertices, and Error when the graph exceeds METIS' 32-bit index range.
std::vector<Rank> assign_parts(const GlobalGraph& g, const PartitionConfig& cfg);

/// What a partition costs: cut, per-part sizes and the halo traffic of one exchange.
struct PartitionReport {
  /// Rows part `from` sends part `to` per exchange (= |halo of `to` owned by `from`|).
  struct PairVolume {
    Rank from = 0;
    Rank to = 0;
    std::int64_t rows = 0;
  };

  Rank num_parts = 0;
  GlobalId num_nodes = 0;
  std::int64_t num_edges = 0;       ///< undirected edges of the symmetric graph
  std::int64_t edge_cut = 0;        ///< undirected edges whose endpoints lie in different parts
  std::vector<GlobalId> owned;      ///< per part: owned vertices
  std::vector<GlobalId> halo;       ///< per part: distinct off-part neighbours
  std::vector<GlobalId> boundary;   ///< per part: owned vertices with an off-part neighbour
  std::vector<std::int64_t> sent_rows;    ///< per part: rows sent per exchange, summed over peers
  std::vector<std::int64_t> local_edges;  ///< per part: directed entries of the local adjacency
  std::vector<PairVolume> pair_volume;    ///< non-zero pairs, ordered by (from, to)
  double imbalance = 1.0;           ///< max owned / mean owned
  std::int64_t total_volume = 0;    ///< rows crossing ranks per exchange (= sum of halo sizes)
  /// Semantic groups (when built): the per-link report, and the seconds the grouping took.
  std::vector<Json> group_links;
  double grouping_seconds = 0;
  /// Feature bytes of all parts' owned rows as fp32 and as stored (equal unless sparsified; the
  /// stored size counts the codebook once per part).
  std::int64_t feature_bytes_dense = 0, feature_bytes_stored = 0;

  /// The report as JSON (the fields above, names unchanged).
  Json to_json() const;
};

/// Computes the report of an assignment without building the local partitions. O(N + E).
PartitionReport compute_partition_report(const GlobalGraph& g, const std::vector<Rank>& parts,
                                         Rank num_parts);

/// Builds the local partitions one at a time, in rank order, handing each to `sink` (so a writer
/// never holds more than one part's features). `g` must be build_symmetric_graph of `ds`'s
/// edges; parts[v] in [0, num_parts). O(N + E) time apart from sorting rows and the locality
/// order; memory is the dataset, the graph, O(N) bytes of index arrays, the halo lists, one
/// part's own subgraph (for the order) and one part.
/// @param report  when not null, receives the partition report
/// @param order   how each part numbers its owned rows
void for_each_local_partition(const Dataset& ds, const GlobalGraph& g,
                              const std::vector<Rank>& parts, Rank num_parts,
                              const std::function<void(LocalPartition&&)>& sink,
                              PartitionReport* report = nullptr,
                              const LocalOrder& order = LocalOrder{});

/// All local partitions at once (rank order). Convenient for tests and small graphs.
std::vector<LocalPartition> build_local_partitions(const Dataset& ds, const GlobalGraph& g,
                                                   const std::vector<Rank>& parts, Rank num_parts,
                                                   PartitionReport* report = nullptr,
                                                   const LocalOrder& order = LocalOrder{});

/// Checks every convention of local_partition.hpp that one part can check on its own (ids in
/// range, owned ids distinct, halo grouped by owner, plan sizes consistent, degrees, labels,
/// masks). Throws InputError(origin, ...) naming the first violation.
void validate_local_partition(const LocalPartition& lp, const std::string& origin);

}  // namespace halognn
