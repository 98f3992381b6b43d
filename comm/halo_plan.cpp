#include "comm/halo_plan.hpp"

#include <string>

#include "core/error.hpp"

namespace halognn {
namespace {

[[noreturn]] void plan_error(Rank rank, const std::string& what) {
  throw Error("halo plan for rank " + std::to_string(rank) + ": " + what);
}

void check_peers(const LocalPartition& p, const std::vector<PeerRows>& lists, const char* side) {
  Rank prev = -1;
  for (const PeerRows& pr : lists) {
    if (pr.peer < 0 || pr.peer >= p.num_parts)
      plan_error(p.rank, std::string(side) + " peer " + std::to_string(pr.peer) +
                             " outside [0, " + std::to_string(p.num_parts) + ")");
    if (pr.peer == p.rank)
      plan_error(p.rank, std::string(side) + " list names the rank itself as a peer");
    if (pr.peer <= prev)
      plan_error(p.rank, std::string(side) + " peers are not in strictly ascending order (" +
                             std::to_string(prev) + " then " + std::to_string(pr.peer) + ")");
    prev = pr.peer;
  }
}

}  // namespace

HaloPlan HaloPlan::build(const LocalPartition& p, DevicePtr dev) {
  GNN_ASSERT(dev != nullptr, "halo plan needs a device");
  if (p.num_owned < 0 || p.num_halo < 0)
    plan_error(p.rank, "negative row counts");
  if (static_cast<std::int64_t>(p.global_ids.size()) != p.num_local())
    plan_error(p.rank, "global_ids has " + std::to_string(p.global_ids.size()) +
                           " entries for " + std::to_string(p.num_local()) + " local rows");
  check_peers(p, p.send, "send");
  check_peers(p, p.recv, "receive");

  auto send = std::make_shared<Side>();
  send->matrix_rows = p.num_owned;
  for (const PeerRows& pr : p.send) {
    send->peers.push_back(pr.peer);
    for (LocalId r : pr.rows) {
      if (r < 0 || r >= p.num_owned)
        plan_error(p.rank, "send row " + std::to_string(r) + " for peer " +
                               std::to_string(pr.peer) + " is not an owned row (num_owned " +
                               std::to_string(p.num_owned) + ")");
      if (r != static_cast<LocalId>(send->host_rows.size())) send->contiguous = false;
      send->host_rows.push_back(r);
      send->host_gids.push_back(p.global_ids[static_cast<std::size_t>(r)]);
    }
    send->offsets.push_back(static_cast<std::int64_t>(send->host_rows.size()));
  }

  auto recv = std::make_shared<Side>();
  recv->matrix_rows = p.num_halo;
  for (const PeerRows& pr : p.recv) {
    recv->peers.push_back(pr.peer);
    for (LocalId r : pr.rows) {
      // Halo rows arrive in local-id order, peer after peer: the i-th received row must be
      // local id num_owned + i, so that each peer's rows are one contiguous block of the halo.
      const auto expected = static_cast<std::int64_t>(p.num_owned) +
                            static_cast<std::int64_t>(recv->host_rows.size());
      if (r != expected)
        plan_error(p.rank, "receive row " + std::to_string(r) + " from peer " +
                               std::to_string(pr.peer) + " should be local id " +
                               std::to_string(expected) +
                               " (halo rows must be grouped by owner in peer order)");
      recv->host_rows.push_back(static_cast<LocalId>(r - p.num_owned));
      recv->host_gids.push_back(p.global_ids[static_cast<std::size_t>(r)]);
    }
    recv->offsets.push_back(static_cast<std::int64_t>(recv->host_rows.size()));
  }
  if (static_cast<std::int64_t>(recv->host_rows.size()) != p.num_halo)
    plan_error(p.rank, "receives " + std::to_string(recv->host_rows.size()) + " rows but has " +
                           std::to_string(p.num_halo) + " halo rows");

  for (Side* s : {send.get(), recv.get()}) {
    s->rows = Buffer<LocalId>::from_host(s->host_rows, dev);
    s->global_ids = Buffer<GlobalId>::from_host(s->host_gids, dev);
  }
  HaloPlan plan;
  plan.rank_ = p.rank;
  plan.dev_ = std::move(dev);
  plan.send_ = std::move(send);
  plan.recv_ = std::move(recv);
  return plan;
}

HaloPlan HaloPlan::reverse() const {
  HaloPlan r = *this;
  std::swap(r.send_, r.recv_);
  r.reversed_ = !reversed_;
  return r;
}

}  // namespace halognn
