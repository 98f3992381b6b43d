#pragma once
/// @file local_partition.hpp
/// What one rank knows about the graph: its owned vertices, its halo vertices (neighbours owned
/// elsewhere), its adjacency over owned+halo rows, and the send/receive plans per peer.
///
/// Conventions (the partition writer guarantees them, the reader validates them):
/// - Local ids 0..num_owned-1 are owned vertices, each once, in the partition's locality order
///   (PartitionConfig::order: vertices that share neighbours get nearby ids; global_ids[i] names
///   local row i; LocalOrder::Kind::none gives ascending global id); local ids
///   num_owned..num_owned+num_halo-1 are halo vertices grouped by owner rank ascending, and by
///   global id ascending within an owner.
/// - send[k] lists the owned local rows whose global ids are in peer send[k].peer's halo, in
///   ascending GLOBAL id order (so the local ids of a send plan need not ascend); recv[k] lists the
///   halo local rows received from recv[k].peer in the same order. So row i of p's send plan to q
///   is row i of q's receive plan from p.
/// - Peers appear in ascending rank order; a peer with nothing to exchange is absent.
#include <cstdint>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/data/feature_sparsify.hpp"
#include "core/types.hpp"

namespace halognn {

/// Rows exchanged with one peer.
struct PeerRows {
  Rank peer = -1;
  std::vector<LocalId> rows;
};

/// The semantic groups of one link as seen from one of its ends (partition/semantic_groups.hpp,
/// docs/semantic_groups.md): group g's members are rows[ptr[g] .. ptr[g+1]) — owned local ids on
/// the sending end, halo local ids on the receiving end, ascending global id in both — and, on the
/// sending end only, their weights w_u = D_g(u) / |E_g|. Both ends list the same groups in the
/// same order.
struct LinkGroupRows {
  Rank peer = -1;
  std::vector<std::int32_t> ptr{0};
  std::vector<LocalId> rows;
  std::vector<float> weights;        ///< sending end only (empty on the receiving end)
  std::vector<std::uint8_t> kinds;   ///< per group: ConnectionKind (o2o 0, o2m 1, m2o 2, m2m 3)
  std::int64_t num_groups() const { return static_cast<std::int64_t>(ptr.size()) - 1; }
};

struct LocalPartition {
  Rank rank = 0;
  Rank num_parts = 1;
  GlobalId global_num_nodes = 0;
  std::int64_t global_num_directed_edges = 0;
  LocalId num_owned = 0;
  LocalId num_halo = 0;
  std::vector<GlobalId> global_ids;  ///< num_owned + num_halo

  /// Adjacency: num_owned rows over num_owned + num_halo columns (no self-loops, sorted cols).
  std::vector<std::int32_t> row_ptr;
  std::vector<LocalId> col;
  /// Degree of every local row (owned and halo) in the whole symmetric graph, self-loops excluded.
  std::vector<std::int64_t> global_degree;

  std::vector<PeerRows> send;  ///< owned rows to send, per peer
  std::vector<PeerRows> recv;  ///< halo rows to receive, per peer

  Matrix features;  ///< num_owned x F
  std::int32_t num_classes = 0;
  bool multilabel = false;
  std::vector<std::int32_t> labels;         ///< num_owned (single-label), -1 = unlabelled
  std::vector<std::uint8_t> label_matrix;   ///< num_owned x num_classes (multi-label)
  std::vector<std::uint8_t> train_mask, val_mask, test_mask;  ///< num_owned
  /// Split sizes over the whole graph (so each rank can normalise the loss identically).
  std::int64_t global_train = 0, global_val = 0, global_test = 0;

  /// Semantic groups (when the partition was built with them): per send peer and per receive
  /// peer, in the order of `send` and `recv`.
  bool has_groups = false;
  std::vector<LinkGroupRows> send_groups, recv_groups;
  /// Identifies the halognn-partition run that wrote this part (also in the manifest): parts of
  /// one run share it, so a directory mixing files of two runs is refused at start-up. Last, so
  /// aggregate initialisers of the members above keep their meaning.
  std::uint64_t run_id = 0;
  /// Sparsified features (a partition written with --sparsify-features): when sparsified(),
  /// `features` is num_owned x 0 and the owned rows live here (positions in local row order, the
  /// codebook shared by every part).
  SparseFeatures sparse_features;

  LocalId num_local() const { return num_owned + num_halo; }
  bool sparsified() const { return sparse_features.layout.k > 0; }
  /// Feature columns (of the dense matrix, also when sparsified).
  std::int64_t num_features() const {
    return sparsified() ? sparse_features.layout.cols : features.cols();
  }
};

}  // namespace halognn
