#pragma once
/// @file halo_plan.hpp
/// Which rows one rank sends to and receives from each peer, built once from the LocalPartition
/// and kept on the device (Tpetra's Distributor/Import idea: plan once, run forward and reverse).
///
/// A plan has a send side and a receive side. Each side lists peers (ascending rank) and, per
/// peer, a contiguous block of row indices into the matrix that side reads or writes, plus the
/// GLOBAL id of each of those rows (what stochastic codecs key their randomness on). In the
/// forward plan built from a partition:
/// - send rows index the owned rows (local ids 0..num_owned-1) in the partition's send order;
/// - receive rows index the halo rows (halo row i = local id num_owned + i); the rows of peer k are
///   contiguous, starting at recv_offset(k), and together they are exactly 0..num_halo-1.
/// reverse() swaps the two sides: the backward pass sends halo rows back to their owners, which
/// add them into the owned rows named by the forward send side.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/buffer.hpp"
#include "core/types.hpp"
#include "partition/local_partition.hpp"

namespace halognn {

class HaloPlan {
 public:
  /// Builds the forward plan and copies its index arrays to `dev`. Throws Error when the
  /// partition breaks the conventions of local_partition.hpp (peer order, row ranges, the halo
  /// rows of each peer being contiguous in peer order and covering all halo rows).
  static HaloPlan build(const LocalPartition& part, DevicePtr dev);

  /// The same plan with send and receive sides swapped (shares the index arrays).
  HaloPlan reverse() const;
  /// True for a plan made by reverse() (an odd number of times).
  bool reversed() const { return reversed_; }

  Rank rank() const { return rank_; }
  const DevicePtr& device() const { return dev_; }

  // ---- send side --------------------------------------------------------------------------
  const std::vector<Rank>& send_peers() const { return send_->peers; }
  std::size_t num_send_peers() const { return send_->peers.size(); }
  /// Rows sent to send_peers()[k].
  std::int64_t send_count(std::size_t k) const { return send_->count(k); }
  /// Position of peer k's rows in the concatenation of all send rows.
  std::int64_t send_offset(std::size_t k) const { return send_->offsets[k]; }
  std::int64_t total_send_rows() const { return send_->offsets.back(); }
  /// Device array: the row indices sent to peer k (into the matrix the send side reads).
  const LocalId* send_rows(std::size_t k) const { return send_->rows.data() + send_->offsets[k]; }
  /// Device array of all send rows, peer blocks in peer order (total_send_rows() entries).
  const LocalId* all_send_rows() const { return send_->rows.data(); }
  /// Device array: the global ids of the rows sent to peer k.
  const GlobalId* send_global_ids(std::size_t k) const {
    return send_->global_ids.data() + send_->offsets[k];
  }
  /// Host copies of the above (for tests, plan statistics and host-side policies).
  std::span<const LocalId> send_rows_host(std::size_t k) const { return send_->rows_host(k); }
  std::span<const GlobalId> send_global_ids_host(std::size_t k) const {
    return send_->gids_host(k);
  }
  /// True when the send rows are exactly 0, 1, ..., total_send_rows()-1 (no gather needed).
  bool send_contiguous() const { return send_->contiguous; }
  /// Number of rows of the matrix the send side reads (num_owned forward, num_halo reversed).
  std::int64_t send_source_rows() const { return send_->matrix_rows; }

  // ---- receive side -----------------------------------------------------------------------
  const std::vector<Rank>& recv_peers() const { return recv_->peers; }
  std::size_t num_recv_peers() const { return recv_->peers.size(); }
  std::int64_t recv_count(std::size_t k) const { return recv_->count(k); }
  /// Forward plan: the halo row index (not the local id) of peer k's first row.
  std::int64_t recv_offset(std::size_t k) const { return recv_->offsets[k]; }
  std::int64_t total_recv_rows() const { return recv_->offsets.back(); }
  const LocalId* recv_rows(std::size_t k) const { return recv_->rows.data() + recv_->offsets[k]; }
  const LocalId* all_recv_rows() const { return recv_->rows.data(); }
  const GlobalId* recv_global_ids(std::size_t k) const {
    return recv_->global_ids.data() + recv_->offsets[k];
  }
  std::span<const LocalId> recv_rows_host(std::size_t k) const { return recv_->rows_host(k); }
  std::span<const GlobalId> recv_global_ids_host(std::size_t k) const {
    return recv_->gids_host(k);
  }
  bool recv_contiguous() const { return recv_->contiguous; }
  /// Number of rows of the matrix the receive side writes (num_halo forward, num_owned reversed).
  std::int64_t recv_dest_rows() const { return recv_->matrix_rows; }

 private:
  HaloPlan() = default;
  struct Side {
    std::vector<Rank> peers;
    std::vector<std::int64_t> offsets{0};  // peers.size() + 1 entries
    std::vector<LocalId> host_rows;
    std::vector<GlobalId> host_gids;
    Buffer<LocalId> rows;
    Buffer<GlobalId> global_ids;
    bool contiguous = true;
    std::int64_t matrix_rows = 0;
    std::int64_t count(std::size_t k) const { return offsets[k + 1] - offsets[k]; }
    std::span<const LocalId> rows_host(std::size_t k) const {
      return std::span<const LocalId>(host_rows).subspan(static_cast<std::size_t>(offsets[k]),
                                                         static_cast<std::size_t>(count(k)));
    }
    std::span<const GlobalId> gids_host(std::size_t k) const {
      return std::span<const GlobalId>(host_gids).subspan(static_cast<std::size_t>(offsets[k]),
                                                          static_cast<std::size_t>(count(k)));
    }
  };

  Rank rank_ = 0;
  bool reversed_ = false;
  DevicePtr dev_;
  std::shared_ptr<const Side> send_;
  std::shared_ptr<const Side> recv_;
};

}  // namespace halognn
