#pragma once
/// @file halo_plan.hpp
/// The halo exchange of one rank as a pair of sparse operators, built once (docs/halo_exchange.md,
/// "The exchange as one operator"; Tpetra's Distributor/Import idea: plan once, run forward and
/// in reverse).
///
/// Each side of a plan is a SlotMap R: per peer a block of message *slots*, and the sparse matrix
/// R (all slots x the rows of the matrix this side reads or writes). The sending rank computes its
/// slots as R_send · M (the *pack*), the receiving rank writes R_recvᵀ · slots into its matrix (the
/// *unpack*), so the forward exchange from p to q is  halo_q = R_recv,qpᵀ · R_send,pq · owned_p.
/// The backward pass is the exact transpose: reverse() swaps the two sides, so the receiver packs
/// its halo gradients with R_recv and the owner adds R_sendᵀ · slots into its owned gradients.
///
/// Plain halo exchange is the case where both maps are selections (one row, weight 1, per slot):
/// the pack is a gather and the unpack a scatter (or nothing at all, when the received slots are
/// the halo rows in order), so it costs no SpMM. A weighted slot (semantic groups) is a weighted
/// sum of rows. Every slot has a key that stochastic codecs seed their randomness with: the global
/// id of a plain row, a stable id for a composite slot, so an encoding never depends on the rank
/// count.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/buffer.hpp"
#include "core/types.hpp"
#include "partition/local_partition.hpp"

namespace halognn {

/// The slots exchanged with one peer, as rows of a sparse map: slot s is the weighted sum of the
/// rows rows[ptr[s] .. ptr[s+1]) with `weights` (empty: every weight is 1), and keys[s] seeds
/// stochastic codecs. A plain slot is one row with weight 1, keyed by its global id.
struct SlotLink {
  Rank peer = -1;
  std::vector<std::int32_t> ptr{0};
  std::vector<LocalId> rows;
  std::vector<float> weights;
  std::vector<GlobalId> keys;

  std::int64_t num_slots() const { return static_cast<std::int64_t>(ptr.size()) - 1; }
  /// Appends a slot of the given rows and weights (weights empty: all 1).
  void add_slot(std::span<const LocalId> slot_rows, std::span<const float> slot_weights,
                GlobalId key);
};

/// One side of a plan: what a rank sends to (or receives from) each of its peers, as the sparse
/// map R between the side's slots and the rows of one matrix. Immutable once built.
class SlotMap {
 public:
  const std::vector<Rank>& peers() const { return peers_; }
  std::size_t num_peers() const { return peers_.size(); }
  /// Slots of peer k.
  std::int64_t count(std::size_t k) const { return offsets_[k + 1] - offsets_[k]; }
  /// Position of peer k's first slot among all slots of this side.
  std::int64_t offset(std::size_t k) const { return offsets_[k]; }
  std::int64_t total() const { return offsets_.back(); }
  /// Rows of the matrix this side reads (send) or writes (receive).
  std::int64_t matrix_rows() const { return matrix_rows_; }

  /// Every slot is one row with weight 1 (plain halo exchange).
  bool is_selection() const { return selection_; }
  /// A selection whose slot s is row s, for every row of the matrix: packing reads the matrix
  /// as it is, unpacking writes it in place.
  bool is_identity() const { return identity_; }
  /// A selection in which no row appears twice among one peer's slots (a plain plan: every
  /// node is sent to a peer once), so a peer's slots can be added into their rows in parallel.
  bool rows_distinct_per_peer() const { return distinct_; }

  /// Device array, selections only: the row of each slot.
  const LocalId* rows() const { return rows_.data(); }
  /// Device array: the codec key of each slot.
  const GlobalId* keys() const { return keys_.data(); }
  /// R (slots x matrix rows) and Rᵀ, on the device; weighted maps only.
  CsrView map() const { return map_.view(); }
  CsrView map_transposed() const { return map_t_.view(); }

  /// Host copies, for plan statistics, host-side policies and tests.
  std::span<const GlobalId> keys_host(std::size_t k) const;
  /// Selections only: the rows of peer k's slots.
  std::span<const LocalId> rows_host(std::size_t k) const;
  /// The whole map as host CSR arrays (slot pointer, rows, weights) of peer k's slots.
  const SlotLink& link(std::size_t k) const { return links_[k]; }

  /// slots = R · m  (m: matrix_rows x F, slots: total x F).
  void pack(const Device& dev, ConstDenseView m, DenseView slots) const;
  /// m = Rᵀ · slots (rows of m no slot maps to become zero), or m += Rᵀ · slots.
  void unpack(const Device& dev, ConstDenseView slots, DenseView m, bool accumulate) const;

 private:
  friend class HaloPlan;
  std::vector<Rank> peers_;
  std::vector<std::int64_t> offsets_{0};
  std::int64_t matrix_rows_ = 0;
  bool selection_ = true, identity_ = false, distinct_ = false;
  std::vector<SlotLink> links_;
  std::vector<GlobalId> host_keys_;
  std::vector<LocalId> host_rows_;  // selections only
  Buffer<LocalId> rows_;
  Buffer<GlobalId> keys_;
  CsrMatrix map_, map_t_;
};

class HaloPlan {
 public:
  /// The plain plan of a partition: rank p sends q the owned rows in q's halo (selections, keyed
  /// by global id), q receives them into its halo rows. Throws Error when the partition breaks the
  /// conventions of local_partition.hpp (peer order, row ranges, each peer's halo rows contiguous
  /// in peer order and covering all halo rows).
  static HaloPlan build(const LocalPartition& part, DevicePtr dev);

  /// The semantic-groups plan of a partition built with groups (part.has_groups): one slot per
  /// group. The sender's slot is Σ_u w_u β_u h_u over the group's members, and every member's halo
  /// row receives slot / β_u, so a layer aggregating α_v β_u h_u over its neighbours computes
  /// α_v D_g(v) m_g per group (docs/semantic_groups.md). `beta` gives β of a local row. Slot keys
  /// are (1 << 62) | (receiving rank << 40) | the group's smallest member's global id.
  static HaloPlan build_grouped(const LocalPartition& part,
                                const std::function<float(LocalId)>& beta, DevicePtr dev);

  /// A plan from explicit slot maps: `send` maps slots to owned rows (0..num_owned-1), `recv` to
  /// halo rows (0..num_halo-1, not local ids). Peers ascending, each at most once, never `rank`.
  /// The caller guarantees that the slots of p's send link to q are, in order, the slots of q's
  /// receive link from p (plan_test checks it through the transport). Throws Error otherwise.
  static HaloPlan from_links(Rank rank, LocalId num_owned, LocalId num_halo,
                             std::vector<SlotLink> send, std::vector<SlotLink> recv,
                             DevicePtr dev);

  /// The transpose, for the backward pass: the sides swapped (shares the arrays).
  HaloPlan reverse() const;
  bool reversed() const { return reversed_; }

  Rank rank() const { return rank_; }
  const DevicePtr& device() const { return dev_; }
  const SlotMap& send() const { return *send_; }
  const SlotMap& recv() const { return *recv_; }

 private:
  HaloPlan() = default;
  /// Validates one side's links and builds its map over a matrix of `matrix_rows` rows.
  static std::shared_ptr<const SlotMap> build_side(Rank rank, std::int64_t matrix_rows,
                                                   std::vector<SlotLink> links, const char* side,
                                                   const DevicePtr& dev);
  Rank rank_ = 0;
  bool reversed_ = false;
  DevicePtr dev_;
  std::shared_ptr<const SlotMap> send_;
  std::shared_ptr<const SlotMap> recv_;
};

}  // namespace halognn
