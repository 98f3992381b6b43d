// The halo exchange as an operator (docs/halo_exchange.md): for plain and weighted plans on random
// partitions, through the real MPI transport,
// - the forward exchange computes halo = R_recvᵀ · R_send · owned (checked row by row),
// - the backward exchange is its adjoint: sum over ranks of <E x, y> equals that of <x, Eᵀ y>,
// - each side's pack and unpack are adjoint on their own,
// - variable-size exchanges carry empty, single-slot and all-slot messages, forward and backward.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "comm/halo_exchange.hpp"
#include "comm/halo_plan.hpp"
#include "comm/transport.hpp"
#include "core/rng.hpp"
#include "test/comm/random_partition.hpp"

namespace halognn {
namespace {

using test::feature_value;
using test::gradient_value;

double global_sum(double x) {
  double out = 0;
  MPI_Allreduce(&x, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

std::int64_t global_sum(std::int64_t x) {
  std::int64_t out = 0;
  MPI_Allreduce(&x, &out, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

/// The slots of the link p -> q as positions in the link's plain row list (length n) with the
/// sender's and the receiver's weights. Drawn from (seed, p, q) only, so both ends agree.
struct LinkShape {
  std::vector<std::vector<std::int32_t>> members;  // per slot, positions in the row list
  std::vector<std::vector<float>> send_w, recv_w;
};

LinkShape link_shape(std::uint64_t seed, Rank p, Rank q, std::int64_t n) {
  const CounterRng rng(RngKey{seed, RngPurpose::test, static_cast<std::uint64_t>(p),
                              static_cast<std::uint64_t>(q)});
  LinkShape s;
  if (n == 0) return s;
  const std::int64_t slots = 1 + static_cast<std::int64_t>(rng.uniform(0, 0) * n);
  for (std::int64_t k = 0; k < slots; ++k) {
    const auto kk = static_cast<std::uint64_t>(k) + 1;
    const int size = 1 + static_cast<int>(rng.uniform(kk, 1) * std::min<std::int64_t>(3, n));
    std::vector<std::int32_t> m;
    for (int i = 0; i < size; ++i) {
      const auto pos = static_cast<std::int32_t>(rng.uniform(kk, 10 + i) * n);
      if (std::find(m.begin(), m.end(), pos) == m.end()) m.push_back(pos);
    }
    std::vector<float> sw, rw;
    for (std::size_t i = 0; i < m.size(); ++i) {
      sw.push_back(0.25f + rng.uniform(kk, 100 + i));
      rw.push_back(0.5f + rng.uniform(kk, 200 + i));
    }
    s.members.push_back(std::move(m));
    s.send_w.push_back(std::move(sw));
    s.recv_w.push_back(std::move(rw));
  }
  return s;
}

GlobalId composite_key(Rank p, Rank q, std::size_t slot) {
  return (GlobalId{1} << 62) | (static_cast<GlobalId>(p) << 40) | (static_cast<GlobalId>(q) << 20) |
         static_cast<GlobalId>(slot);
}

/// A weighted plan with the plain plan's peers: every slot a weighted sum of a few rows.
HaloPlan weighted_plan(const LocalPartition& part, std::uint64_t seed) {
  std::vector<SlotLink> send, recv;
  for (const PeerRows& pr : part.send) {
    const LinkShape s = link_shape(seed, part.rank, pr.peer, static_cast<std::int64_t>(pr.rows.size()));
    SlotLink& l = send.emplace_back();
    l.peer = pr.peer;
    for (std::size_t k = 0; k < s.members.size(); ++k) {
      std::vector<LocalId> rows;
      for (const std::int32_t pos : s.members[k]) rows.push_back(pr.rows[static_cast<std::size_t>(pos)]);
      l.add_slot(rows, s.send_w[k], composite_key(part.rank, pr.peer, k));
    }
  }
  for (const PeerRows& pr : part.recv) {
    const LinkShape s = link_shape(seed, pr.peer, part.rank, static_cast<std::int64_t>(pr.rows.size()));
    SlotLink& l = recv.emplace_back();
    l.peer = pr.peer;
    for (std::size_t k = 0; k < s.members.size(); ++k) {
      std::vector<LocalId> rows;
      for (const std::int32_t pos : s.members[k])
        rows.push_back(pr.rows[static_cast<std::size_t>(pos)] - part.num_owned);
      l.add_slot(rows, s.recv_w[k], composite_key(pr.peer, part.rank, k));
    }
  }
  return HaloPlan::from_links(part.rank, part.num_owned, part.num_halo, std::move(send),
                              std::move(recv), cpu_device());
}

Matrix owned_features(const LocalPartition& p, std::uint64_t seed, std::int64_t f) {
  Matrix m(p.num_owned, f);
  for (LocalId i = 0; i < p.num_owned; ++i)
    for (std::int64_t j = 0; j < f; ++j) m(i, j) = feature_value(seed, p.global_ids[i], j);
  return m;
}

Matrix halo_values(const LocalPartition& p, std::uint64_t seed, std::int64_t f) {
  Matrix m(p.num_halo, f);
  for (LocalId h = 0; h < p.num_halo; ++h)
    for (std::int64_t j = 0; j < f; ++j)
      m(h, j) = gradient_value(seed, p.rank, p.global_ids[p.num_owned + h], j);
  return m;
}

Matrix nan_matrix(std::int64_t rows, std::int64_t f) {
  Matrix m(rows, f);
  for (float& x : m.host()) x = std::numeric_limits<float>::quiet_NaN();
  return m;
}

double dot(const Matrix& a, const Matrix& b) {
  double s = 0;
  for (std::int64_t i = 0; i < a.size(); ++i)
    s += static_cast<double>(a.host()[static_cast<std::size_t>(i)]) * b.host()[static_cast<std::size_t>(i)];
  return s;
}

/// The value slot k of the link p -> this rank must carry, from the owner's feature rows.
float expected_slot(const LocalPartition& part, const SlotMap& recv, std::size_t peer_index,
                    std::int64_t slot, bool weighted, std::uint64_t plan_seed,
                    std::uint64_t value_seed, std::int64_t j) {
  const PeerRows& pr = part.recv[peer_index];
  auto gid = [&](std::int32_t pos) { return part.global_ids[static_cast<std::size_t>(pr.rows[static_cast<std::size_t>(pos)])]; };
  if (!weighted) return feature_value(value_seed, gid(static_cast<std::int32_t>(slot)), j);
  const LinkShape s = link_shape(plan_seed, pr.peer, part.rank, static_cast<std::int64_t>(pr.rows.size()));
  float v = 0;
  for (std::size_t i = 0; i < s.members[static_cast<std::size_t>(slot)].size(); ++i)
    v += s.send_w[static_cast<std::size_t>(slot)][i] *
         feature_value(value_seed, gid(s.members[static_cast<std::size_t>(slot)][i]), j);
  (void)recv;
  return v;
}

class ExchangeOperator : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    transport = make_mpi_transport(MPI_COMM_WORLD);
    rank = transport->rank();
    size = transport->size();
    ASSERT_GE(size, 2) << "an exchange needs at least two ranks";
  }
  std::shared_ptr<const HaloPlan> plan_for(const LocalPartition& part, std::uint64_t seed) const {
    return std::make_shared<const HaloPlan>(GetParam() ? weighted_plan(part, seed)
                                                       : HaloPlan::build(part, cpu_device()));
  }
  std::unique_ptr<Transport> transport;
  Rank rank = 0, size = 1;
};

TEST_P(ExchangeOperator, ForwardComputesTheTransposedUnpackOfThePackedOwnedRows) {
  const std::uint64_t seed = 41;
  const auto g = test::make_random_graph(seed, 240, size, 3);
  const LocalPartition part = test::local_partition_of(g, rank);
  const auto plan = plan_for(part, seed);
  TrafficCounter traffic;
  HaloExchange ex(plan, *transport, traffic);
  const std::int64_t f = 5;
  const Matrix owned = owned_features(part, seed, f);
  Matrix halo = nan_matrix(part.num_halo, f);
  ex.start_forward(0, 0, seed, owned.cview(), halo.view()).wait();
  // halo = R_recvᵀ · slots, with every slot computed here from the owner's (known) rows.
  const SlotMap& recv = plan->recv();
  Matrix slots(recv.total(), f);
  for (std::size_t k = 0; k < recv.num_peers(); ++k)
    for (std::int64_t s = 0; s < recv.count(k); ++s)
      for (std::int64_t j = 0; j < f; ++j)
        slots(recv.offset(k) + s, j) = expected_slot(part, recv, k, s, GetParam(), seed, seed, j);
  // Unpack by hand from the links' host arrays (not through SlotMap::unpack, which is under test).
  Matrix expected(part.num_halo, f);
  for (std::size_t k = 0; k < recv.num_peers(); ++k) {
    const SlotLink& l = recv.link(k);
    for (std::int64_t s = 0; s < l.num_slots(); ++s)
      for (std::int32_t e = l.ptr[s]; e < l.ptr[s + 1]; ++e) {
        const float w = l.weights.empty() ? 1.0f : l.weights[static_cast<std::size_t>(e)];
        for (std::int64_t j = 0; j < f; ++j)
          expected(l.rows[static_cast<std::size_t>(e)], j) += w * slots(recv.offset(k) + s, j);
      }
  }
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < halo.size(); ++i)
    if (std::fabs(halo.host()[i] - expected.host()[i]) > 1e-5f * (1 + std::fabs(expected.host()[i])))
      ++bad;
  EXPECT_EQ(global_sum(bad), 0);
  EXPECT_EQ(traffic.total().total(), transport->bytes_sent());
}

TEST_P(ExchangeOperator, BackwardIsTheAdjointOfForwardThroughTheTransport) {
  for (const std::uint64_t seed : {51u, 52u}) {
    const auto g = test::make_random_graph(seed, 300, size, 3);
    const LocalPartition part = test::local_partition_of(g, rank);
    const auto plan = plan_for(part, seed);
    TrafficCounter traffic;
    HaloExchange ex(plan, *transport, traffic);
    const std::int64_t f = 4;
    const Matrix x = owned_features(part, seed, f);
    const Matrix y = halo_values(part, seed + 7, f);
    Matrix ex_x(part.num_halo, f), et_y(part.num_owned, f);
    ex.start_forward(1, 0, seed, x.cview(), ex_x.view()).wait();
    ex.start_backward(1, 0, seed, y.cview(), et_y.view()).wait();
    const double lhs = global_sum(dot(ex_x, y)), rhs = global_sum(dot(x, et_y));
    EXPECT_GT(std::fabs(lhs), 1.0) << "the operator is not zero";
    EXPECT_NEAR(lhs, rhs, 1e-5 * (std::fabs(lhs) + std::fabs(rhs))) << "seed " << seed;
  }
}

TEST_P(ExchangeOperator, PackAndUnpackOfEachSideAreAdjoint) {
  const std::uint64_t seed = 61;
  const auto g = test::make_random_graph(seed, 200, size, 3);
  const LocalPartition part = test::local_partition_of(g, rank);
  const auto plan = plan_for(part, seed);
  for (const SlotMap* side : {&plan->send(), &plan->recv()}) {
    const std::int64_t f = 3;
    Matrix m(side->matrix_rows(), f), s(side->total(), f), rm(side->total(), f),
        rts(side->matrix_rows(), f);
    const CounterRng rng(RngKey{seed, RngPurpose::test, static_cast<std::uint64_t>(rank), 5});
    for (std::int64_t i = 0; i < m.size(); ++i) m.host()[i] = rng.uniform(1, i) - 0.5f;
    for (std::int64_t i = 0; i < s.size(); ++i) s.host()[i] = rng.uniform(2, i) - 0.5f;
    side->pack(*cpu_device(), m.cview(), rm.view());
    side->unpack(*cpu_device(), s.cview(), rts.view(), false);
    const double a = dot(rm, s), b = dot(m, rts);
    EXPECT_NEAR(a, b, 1e-5 * (std::fabs(a) + std::fabs(b) + 1e-12));
  }
}

// Variable-size messages: the slots of link p -> q in round r: none, the middle one, or all, so
// that over three rounds every link carries each kind.
std::vector<std::int32_t> chosen_slots(Rank p, Rank q, int round, std::int64_t count) {
  std::vector<std::int32_t> out;
  switch ((p + 2 * q + round) % 3) {
    case 0: break;
    case 1:
      if (count > 0) out.push_back(static_cast<std::int32_t>(count / 2));
      break;
    default:
      for (std::int32_t s = 0; s < count; ++s) out.push_back(s);
  }
  return out;
}

TEST_P(ExchangeOperator, VariableSizeMessagesCarryEmptySingleAndAllSlotSelections) {
  const std::uint64_t seed = 71;
  const auto g = test::make_random_graph(seed, 260, size, 3);
  const LocalPartition part = test::local_partition_of(g, rank);
  const auto plan = plan_for(part, seed);
  const std::int64_t f = 6;
  for (const Direction dir : {Direction::forward, Direction::backward})
   for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(std::string(to_string(dir)) + " round " + std::to_string(round));
    TrafficCounter traffic;
    HaloExchange ex(plan, *transport, traffic);
    transport->reset_counters();
    const SlotMap& out = ex.sending_side(dir);
    const SlotMap& in = ex.receiving_side(dir);
    const bool fwd = dir == Direction::forward;
    const Matrix src = fwd ? owned_features(part, seed, f) : halo_values(part, seed, f);
    // What every slot of the sending side carries, to compare against after the exchange.
    Matrix packed(out.total(), f);
    out.pack(*cpu_device(), src.cview(), packed.view());
    SlotSelection sel;
    std::int64_t sent_slots = 0;
    for (std::size_t k = 0; k < out.num_peers(); ++k) {
      sel.push_back(chosen_slots(rank, out.peers()[k], round, out.count(k)));
      sent_slots += static_cast<std::int64_t>(sel.back().size());
    }
    Matrix slots = nan_matrix(in.total(), f);
    SlotSelection received;
    ex.start_selected(dir, 2, 3, seed, src.cview(), sel, slots.view(), &received).wait();

    std::int64_t bad = 0, single = 0, all = 0, empty = 0;
    ASSERT_EQ(received.size(), in.num_peers());
    for (std::size_t k = 0; k < in.num_peers(); ++k) {
      const std::vector<std::int32_t> want = chosen_slots(in.peers()[k], rank, round, in.count(k));
      EXPECT_EQ(received[k], want) << "from rank " << in.peers()[k];
      (want.empty() ? empty : static_cast<std::int64_t>(want.size()) == in.count(k) ? all : single) += 1;
      for (std::int64_t s = 0; s < in.count(k); ++s) {
        const bool arrived = std::find(want.begin(), want.end(), s) != want.end();
        for (std::int64_t j = 0; j < f; ++j) {
          const float got = slots(in.offset(k) + s, j);
          if (!arrived) {
            bad += !std::isnan(got);
            continue;
          }
          float expect = 0;
          if (fwd) {
            expect = expected_slot(part, in, k, s, GetParam(), seed, seed, j);
          } else {
            // Backward slots are packed halo gradients of the peer: recompute them from its plan.
            const PeerRows& pr = part.send[k];
            if (!GetParam()) {
              expect = gradient_value(seed, in.peers()[k],
                                      part.global_ids[static_cast<std::size_t>(pr.rows[s])], j);
            } else {
              const LinkShape ls = link_shape(seed, rank, in.peers()[k], static_cast<std::int64_t>(pr.rows.size()));
              for (std::size_t i = 0; i < ls.members[s].size(); ++i)
                expect += ls.recv_w[s][i] *
                          gradient_value(seed, in.peers()[k],
                                         part.global_ids[static_cast<std::size_t>(
                                             pr.rows[static_cast<std::size_t>(ls.members[s][i])])],
                                         j);
            }
          }
          bad += std::fabs(got - expect) > 1e-5f * (1 + std::fabs(expect));
        }
      }
    }
    EXPECT_EQ(global_sum(bad), 0);
    // Each round has messages of some kind; over the rounds every link carries each kind.
    EXPECT_GT(global_sum(empty) + global_sum(single) + global_sum(all), 0);
    // Accounting: header and indices are metadata, the values payload; it all crossed.
    const TrafficEntry e = traffic.at(2, dir);
    EXPECT_EQ(e.payload, static_cast<std::uint64_t>(sent_slots * f * 4));
    EXPECT_EQ(e.metadata, out.num_peers() * (4 + Transport::kVariableHeaderBytes) +
                              static_cast<std::uint64_t>(sent_slots) * 4);
    EXPECT_EQ(e.messages, out.num_peers());
    EXPECT_EQ(traffic.total().total(), transport->bytes_sent());
  }
}

TEST_P(ExchangeOperator, VariableSizeMessagesUseTheSlotKeysForStochasticCodecs) {
  // q1 on a selection: the receiver re-encodes the expected slot with the slot's key and must
  // decode exactly what arrived (a wrong key draws other rounding).
  const std::uint64_t seed = 81;
  const auto g = test::make_random_graph(seed, 200, size, 3);
  const LocalPartition part = test::local_partition_of(g, rank);
  const auto plan = plan_for(part, seed);
  TrafficCounter traffic;
  HaloExchange ex(plan, *transport, traffic);
  std::shared_ptr<const Codec> q1 = make_codec("q1");
  ex.set_codec(0, Direction::forward, q1);
  const std::int64_t f = 16;
  const SlotMap& out = plan->send();
  const SlotMap& in = plan->recv();
  SlotSelection sel;
  for (std::size_t k = 0; k < out.num_peers(); ++k) {
    std::vector<std::int32_t> odd;
    for (std::int32_t s = 1; s < out.count(k); s += 2) odd.push_back(s);
    sel.push_back(odd);
  }
  const Matrix owned = owned_features(part, seed, f);
  Matrix slots = nan_matrix(in.total(), f);
  ex.start_selected(Direction::forward, 0, 9, seed, owned.cview(), sel, slots.view(), nullptr).wait();
  std::int64_t bad = 0;
  for (std::size_t k = 0; k < in.num_peers(); ++k)
    for (std::int64_t s = 1; s < in.count(k); s += 2) {
      Matrix row(1, f), decoded(1, f);
      for (std::int64_t j = 0; j < f; ++j)
        row(0, j) = expected_slot(part, in, k, s, GetParam(), seed, seed, j);
      const GlobalId key = in.keys_host(k)[static_cast<std::size_t>(s)];
      CodecContext ctx{seed, 9, 0, Direction::forward, &key};
      std::vector<std::byte> bytes(q1->encoded_size(1, f).total());
      q1->encode(*cpu_device(), row.cview(), ctx, bytes);
      q1->decode(*cpu_device(), bytes, ctx, decoded.view());
      for (std::int64_t j = 0; j < f; ++j)
        bad += std::fabs(decoded(0, j) - slots(in.offset(k) + s, j)) > 1e-5f;
    }
  EXPECT_EQ(global_sum(bad), 0);
}

TEST_P(ExchangeOperator, VariableSizeExchangesOnOneTagMatchTheirOwnMessagesInAnyWaitOrder) {
  // Two exchanges of the same (layer, direction) in flight: the second one's size arrives before
  // anyone waited for the first; each must still receive its own bytes.
  const std::uint64_t seed = 91;
  const auto g = test::make_random_graph(seed, 220, size, 3);
  const LocalPartition part = test::local_partition_of(g, rank);
  const auto plan = plan_for(part, seed);
  TrafficCounter traffic;
  HaloExchange ex(plan, *transport, traffic);
  const std::int64_t f = 3;
  const SlotMap& out = plan->send();
  const SlotMap& in = plan->recv();
  SlotSelection all, first;
  for (std::size_t k = 0; k < out.num_peers(); ++k) {
    all.emplace_back();
    for (std::int32_t s = 0; s < out.count(k); ++s) all.back().push_back(s);
    first.push_back(out.count(k) > 0 ? std::vector<std::int32_t>{0} : std::vector<std::int32_t>{});
  }
  const Matrix a = owned_features(part, seed, f), b = owned_features(part, seed + 1, f);
  Matrix slots_a = nan_matrix(in.total(), f), slots_b = nan_matrix(in.total(), f);
  Request ra = ex.start_selected(Direction::forward, 1, 0, seed, a.cview(), first, slots_a.view(), nullptr);
  Request rb = ex.start_selected(Direction::forward, 1, 0, seed, b.cview(), all, slots_b.view(), nullptr);
  rb.wait();
  ra.wait();
  std::int64_t bad = 0;
  for (std::size_t k = 0; k < in.num_peers(); ++k)
    for (std::int64_t s = 0; s < in.count(k); ++s)
      for (std::int64_t j = 0; j < f; ++j) {
        const float va = slots_a(in.offset(k) + s, j), vb = slots_b(in.offset(k) + s, j);
        if (s == 0) {
          bad += std::fabs(va - expected_slot(part, in, k, s, GetParam(), seed, seed, j)) > 1e-5f;
        } else {
          bad += !std::isnan(va);
        }
        bad += std::fabs(vb - expected_slot(part, in, k, s, GetParam(), seed, seed + 1, j)) > 1e-5f;
      }
  EXPECT_EQ(global_sum(bad), 0);
}

INSTANTIATE_TEST_SUITE_P(Plans, ExchangeOperator, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "weighted" : "plain"; });

}  // namespace
}  // namespace halognn
