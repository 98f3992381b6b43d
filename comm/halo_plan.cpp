#include "comm/halo_plan.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "core/kernels/kernels.hpp"

namespace halognn {
namespace {

[[noreturn]] void plan_error(Rank rank, const std::string& what) {
  throw Error("halo plan for rank " + std::to_string(rank) + ": " + what);
}

}  // namespace

void SlotLink::add_slot(std::span<const LocalId> slot_rows, std::span<const float> slot_weights,
                        GlobalId key) {
  GNN_ASSERT(slot_weights.empty() || slot_weights.size() == slot_rows.size(),
             "slot of ", slot_rows.size(), " rows with ", slot_weights.size(), " weights");
  if (!slot_weights.empty() && weights.empty()) weights.assign(rows.size(), 1.0f);
  rows.insert(rows.end(), slot_rows.begin(), slot_rows.end());
  if (!slot_weights.empty()) {
    weights.insert(weights.end(), slot_weights.begin(), slot_weights.end());
  } else if (!weights.empty()) {
    weights.insert(weights.end(), slot_rows.size(), 1.0f);
  }
  ptr.push_back(static_cast<std::int32_t>(rows.size()));
  keys.push_back(key);
}

std::span<const GlobalId> SlotMap::keys_host(std::size_t k) const {
  return std::span<const GlobalId>(host_keys_)
      .subspan(static_cast<std::size_t>(offset(k)), static_cast<std::size_t>(count(k)));
}

std::span<const LocalId> SlotMap::rows_host(std::size_t k) const {
  GNN_ASSERT(selection_, "rows_host of a weighted slot map");
  return std::span<const LocalId>(host_rows_)
      .subspan(static_cast<std::size_t>(offset(k)), static_cast<std::size_t>(count(k)));
}

void SlotMap::pack(const Device& dev, ConstDenseView m, DenseView slots) const {
  GNN_ASSERT(m.rows == matrix_rows_ && slots.rows == total() && m.cols == slots.cols,
             "pack: matrix ", m.rows, "x", m.cols, ", slots ", slots.rows, "x", slots.cols,
             ", map ", total(), "x", matrix_rows_);
  if (slots.rows == 0 || slots.cols == 0) return;
  if (identity_) return kernels::copy(dev, m, slots);
  if (selection_) return kernels::gather_rows(dev, m, rows(), slots);
  kernels::spmm(dev, map(), m, 0.0f, slots);
}

void SlotMap::unpack(const Device& dev, ConstDenseView slots, DenseView m, bool accumulate) const {
  GNN_ASSERT(m.rows == matrix_rows_ && slots.rows == total() && m.cols == slots.cols,
             "unpack: slots ", slots.rows, "x", slots.cols, ", matrix ", m.rows, "x", m.cols,
             ", map ", total(), "x", matrix_rows_);
  if (m.rows == 0 || m.cols == 0) return;
  if (!selection_) return kernels::spmm(dev, map_transposed(), slots, accumulate ? 1.0f : 0.0f, m);
  if (identity_) {
    if (accumulate) return kernels::axpy(dev, 1.0f, slots, m);
    return kernels::copy(dev, slots, m);
  }
  if (!accumulate) kernels::fill(dev, m, 0.0f);
  kernels::scatter_add_rows(dev, slots, rows(), m);
}

std::shared_ptr<const SlotMap> HaloPlan::build_side(Rank rank, std::int64_t matrix_rows,
                                                     std::vector<SlotLink> links,
                                                     const char* side, const DevicePtr& dev) {
  auto map = std::make_shared<SlotMap>();
  SlotMap& s = *map;
  s.matrix_rows_ = matrix_rows;
  Rank prev = -1;
  for (const SlotLink& l : links) {
    const std::string where = std::string(side) + " link with peer " + std::to_string(l.peer);
    if (l.peer < 0) plan_error(rank, where + ": negative peer");
    if (l.peer == rank) plan_error(rank, std::string(side) + " list names the rank itself as a peer");
    if (l.peer <= prev)
      plan_error(rank, std::string(side) + " peers are not in strictly ascending order (" +
                           std::to_string(prev) + " then " + std::to_string(l.peer) + ")");
    prev = l.peer;
    if (l.ptr.empty() || l.ptr.front() != 0 ||
        l.ptr.back() != static_cast<std::int32_t>(l.rows.size()))
      plan_error(rank, where + ": slot pointer does not span the rows");
    for (std::size_t k = 1; k < l.ptr.size(); ++k)
      if (l.ptr[k] < l.ptr[k - 1]) plan_error(rank, where + ": slot pointer decreases");
    if (!l.weights.empty() && l.weights.size() != l.rows.size())
      plan_error(rank, where + ": " + std::to_string(l.weights.size()) + " weights for " +
                           std::to_string(l.rows.size()) + " rows");
    if (static_cast<std::int64_t>(l.keys.size()) != l.num_slots())
      plan_error(rank, where + ": " + std::to_string(l.keys.size()) + " keys for " +
                           std::to_string(l.num_slots()) + " slots");
    for (const LocalId r : l.rows)
      if (r < 0 || r >= matrix_rows)
        plan_error(rank, where + ": row " + std::to_string(r) + " outside [0, " +
                             std::to_string(matrix_rows) + ")");
    for (std::int64_t k = 0; k < l.num_slots(); ++k) {
      const bool single = l.ptr[k + 1] - l.ptr[k] == 1;
      const bool unit = l.weights.empty() || l.weights[static_cast<std::size_t>(l.ptr[k])] == 1.0f;
      if (!single || !unit) s.selection_ = false;
    }
    s.peers_.push_back(l.peer);
    s.offsets_.push_back(s.offsets_.back() + l.num_slots());
    s.host_keys_.insert(s.host_keys_.end(), l.keys.begin(), l.keys.end());
  }
  s.links_ = std::move(links);
  if (s.selection_) {
    s.host_rows_.reserve(static_cast<std::size_t>(s.total()));
    for (const SlotLink& l : s.links_) s.host_rows_.insert(s.host_rows_.end(), l.rows.begin(), l.rows.end());
    s.identity_ = s.total() == matrix_rows;
    for (std::size_t i = 0; s.identity_ && i < s.host_rows_.size(); ++i)
      s.identity_ = s.host_rows_[i] == static_cast<LocalId>(i);
    s.distinct_ = true;
    std::vector<std::uint8_t> seen(static_cast<std::size_t>(matrix_rows), 0);
    for (const SlotLink& l : s.links_) {
      for (const LocalId r : l.rows) {
        s.distinct_ = s.distinct_ && !seen[static_cast<std::size_t>(r)];
        seen[static_cast<std::size_t>(r)] = 1;
      }
      for (const LocalId r : l.rows) seen[static_cast<std::size_t>(r)] = 0;
    }
    s.rows_ = Buffer<LocalId>::from_host(s.host_rows_, dev);
  } else {
    // R (slots x matrix rows) as one CSR over all peers' slots, and its transpose.
    std::vector<std::int32_t> ptr{0};
    std::vector<LocalId> col;
    std::vector<float> val;
    for (const SlotLink& l : s.links_) {
      const std::int32_t base = ptr.back();
      for (std::size_t k = 1; k < l.ptr.size(); ++k) ptr.push_back(base + l.ptr[k]);
      col.insert(col.end(), l.rows.begin(), l.rows.end());
      if (l.weights.empty()) val.insert(val.end(), l.rows.size(), 1.0f);
      else val.insert(val.end(), l.weights.begin(), l.weights.end());
    }
    const auto rows = static_cast<std::size_t>(matrix_rows);
    std::vector<std::int32_t> t_ptr(rows + 1, 0);
    for (const LocalId c : col) ++t_ptr[static_cast<std::size_t>(c) + 1];
    for (std::size_t r = 0; r < rows; ++r) t_ptr[r + 1] += t_ptr[r];
    std::vector<std::int32_t> fill(t_ptr.begin(), t_ptr.end() - 1);
    std::vector<LocalId> t_col(col.size());
    std::vector<float> t_val(col.size());
    for (std::int64_t slot = 0; slot + 1 < static_cast<std::int64_t>(ptr.size()); ++slot) {
      for (std::int32_t k = ptr[static_cast<std::size_t>(slot)];
           k < ptr[static_cast<std::size_t>(slot) + 1]; ++k) {
        const std::int32_t at = fill[static_cast<std::size_t>(col[static_cast<std::size_t>(k)])]++;
        t_col[static_cast<std::size_t>(at)] = static_cast<LocalId>(slot);
        t_val[static_cast<std::size_t>(at)] = val[static_cast<std::size_t>(k)];
      }
    }
    s.map_ = CsrMatrix(s.total(), matrix_rows, ptr, col, val, dev);
    s.map_t_ = CsrMatrix(matrix_rows, s.total(), t_ptr, t_col, t_val, dev);
  }
  s.keys_ = Buffer<GlobalId>::from_host(s.host_keys_, dev);
  return map;
}

HaloPlan HaloPlan::from_links(Rank rank, LocalId num_owned, LocalId num_halo,
                              std::vector<SlotLink> send, std::vector<SlotLink> recv,
                              DevicePtr dev) {
  GNN_ASSERT(dev != nullptr, "halo plan needs a device");
  if (num_owned < 0 || num_halo < 0) plan_error(rank, "negative row counts");
  HaloPlan plan;
  plan.rank_ = rank;
  plan.send_ = build_side(rank, num_owned, std::move(send), "send", dev);
  plan.recv_ = build_side(rank, num_halo, std::move(recv), "receive", dev);
  plan.dev_ = std::move(dev);
  return plan;
}

HaloPlan HaloPlan::build(const LocalPartition& p, DevicePtr dev) {
  if (p.num_owned < 0 || p.num_halo < 0) plan_error(p.rank, "negative row counts");
  if (static_cast<std::int64_t>(p.global_ids.size()) != p.num_local())
    plan_error(p.rank, "global_ids has " + std::to_string(p.global_ids.size()) +
                           " entries for " + std::to_string(p.num_local()) + " local rows");
  auto check_peer = [&](Rank peer, const char* side) {
    if (peer < 0 || peer >= p.num_parts)
      plan_error(p.rank, std::string(side) + " peer " + std::to_string(peer) + " outside [0, " +
                             std::to_string(p.num_parts) + ")");
  };
  std::vector<SlotLink> send, recv;
  for (const PeerRows& pr : p.send) {
    check_peer(pr.peer, "send");
    SlotLink& l = send.emplace_back();
    l.peer = pr.peer;
    for (const LocalId r : pr.rows) {
      if (r < 0 || r >= p.num_owned)
        plan_error(p.rank, "send row " + std::to_string(r) + " for peer " +
                               std::to_string(pr.peer) + " is not an owned row (num_owned " +
                               std::to_string(p.num_owned) + ")");
      l.add_slot(std::span(&r, 1), {}, p.global_ids[static_cast<std::size_t>(r)]);
    }
  }
  std::int64_t received = 0;
  for (const PeerRows& pr : p.recv) {
    check_peer(pr.peer, "receive");
    SlotLink& l = recv.emplace_back();
    l.peer = pr.peer;
    for (const LocalId r : pr.rows) {
      // Halo rows arrive in local-id order, peer after peer: the i-th received row must be local
      // id num_owned + i, so that each peer's rows are one contiguous block of the halo.
      const std::int64_t expected = static_cast<std::int64_t>(p.num_owned) + received;
      if (r != expected)
        plan_error(p.rank, "receive row " + std::to_string(r) + " from peer " +
                               std::to_string(pr.peer) + " should be local id " +
                               std::to_string(expected) +
                               " (halo rows must be grouped by owner in peer order)");
      const LocalId halo_row = static_cast<LocalId>(r - p.num_owned);
      l.add_slot(std::span(&halo_row, 1), {}, p.global_ids[static_cast<std::size_t>(r)]);
      ++received;
    }
  }
  if (received != p.num_halo)
    plan_error(p.rank, "receives " + std::to_string(received) + " rows but has " +
                           std::to_string(p.num_halo) + " halo rows");
  return from_links(p.rank, p.num_owned, p.num_halo, std::move(send), std::move(recv),
                    std::move(dev));
}

HaloPlan HaloPlan::build_grouped(const LocalPartition& p,
                                 const std::function<float(LocalId)>& beta, DevicePtr dev) {
  if (!p.has_groups) plan_error(p.rank, "the partition has no semantic groups");
  auto key = [&](const LinkGroupRows& l, std::int32_t g, Rank receiver) {
    GlobalId smallest = std::numeric_limits<GlobalId>::max();
    for (std::int32_t m = l.ptr[static_cast<std::size_t>(g)]; m < l.ptr[static_cast<std::size_t>(g) + 1]; ++m)
      smallest = std::min(smallest, p.global_ids[static_cast<std::size_t>(l.rows[static_cast<std::size_t>(m)])]);
    return (GlobalId{1} << 62) | (static_cast<GlobalId>(receiver) << 40) | smallest;
  };
  std::vector<SlotLink> send, recv;
  for (const LinkGroupRows& l : p.send_groups) {
    SlotLink& s = send.emplace_back();
    s.peer = l.peer;
    for (std::int32_t g = 0; g < l.num_groups(); ++g) {
      std::vector<LocalId> rows;
      std::vector<float> w;
      for (std::int32_t m = l.ptr[static_cast<std::size_t>(g)]; m < l.ptr[static_cast<std::size_t>(g) + 1]; ++m) {
        const LocalId r = l.rows[static_cast<std::size_t>(m)];
        rows.push_back(r);
        w.push_back(l.weights[static_cast<std::size_t>(m)] * beta(r));
      }
      s.add_slot(rows, w, key(l, g, l.peer));
    }
  }
  for (const LinkGroupRows& l : p.recv_groups) {
    SlotLink& s = recv.emplace_back();
    s.peer = l.peer;
    for (std::int32_t g = 0; g < l.num_groups(); ++g) {
      std::vector<LocalId> rows;
      std::vector<float> w;
      for (std::int32_t m = l.ptr[static_cast<std::size_t>(g)]; m < l.ptr[static_cast<std::size_t>(g) + 1]; ++m) {
        const LocalId r = l.rows[static_cast<std::size_t>(m)];
        if (r < p.num_owned || r >= p.num_local())
          plan_error(p.rank, "receive group member " + std::to_string(r) + " is not a halo row");
        rows.push_back(r - p.num_owned);
        w.push_back(1.0f / beta(r));
      }
      s.add_slot(rows, w, key(l, g, p.rank));
    }
  }
  return from_links(p.rank, p.num_owned, p.num_halo, std::move(send), std::move(recv),
                    std::move(dev));
}

HaloPlan HaloPlan::reverse() const {
  HaloPlan r = *this;
  std::swap(r.send_, r.recv_);
  r.reversed_ = !reversed_;
  return r;
}

}  // namespace halognn
