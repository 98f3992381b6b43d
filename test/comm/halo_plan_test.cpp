// HaloPlan construction and validation, and the halo exchange between simulated ranks of one
// process (LoopbackTransport), without MPI.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "comm/halo_exchange.hpp"
#include "comm/halo_plan.hpp"
#include "test/comm/checking_codec.hpp"
#include "test/comm/loopback_transport.hpp"
#include "test/comm/random_partition.hpp"

namespace halognn {
namespace {

// Rank 1 of 3: owns global {2, 5, 9} (local 0..2); halo: 1 and 4 from rank 0, 7 from rank 2.
LocalPartition small_partition() {
  LocalPartition p;
  p.rank = 1;
  p.num_parts = 3;
  p.num_owned = 3;
  p.num_halo = 3;
  p.global_ids = {2, 5, 9, 1, 4, 7};
  p.send = {{0, {0, 2}}, {2, {1}}};
  p.recv = {{0, {3, 4}}, {2, {5}}};
  return p;
}

template <typename T>
std::vector<T> vec(std::span<const T> s) {
  return std::vector<T>(s.begin(), s.end());
}

TEST(HaloPlan, ListsPeersCountsOffsetsRowsAndKeys) {
  const HaloPlan plan = HaloPlan::build(small_partition(), cpu_device());
  const SlotMap& send = plan.send();
  const SlotMap& recv = plan.recv();
  EXPECT_EQ(plan.rank(), 1);
  EXPECT_EQ(send.peers(), (std::vector<Rank>{0, 2}));
  EXPECT_EQ(recv.peers(), (std::vector<Rank>{0, 2}));
  EXPECT_EQ(send.count(0), 2);
  EXPECT_EQ(send.count(1), 1);
  EXPECT_EQ(send.offset(1), 2);
  EXPECT_EQ(send.total(), 3);
  EXPECT_EQ(recv.total(), 3);
  EXPECT_EQ(recv.offset(1), 2);
  EXPECT_TRUE(send.is_selection());
  EXPECT_FALSE(send.is_identity());
  EXPECT_TRUE(recv.is_identity());
  EXPECT_EQ(send.matrix_rows(), 3);
  EXPECT_EQ(recv.matrix_rows(), 3);
  // Device arrays (the CPU device here) hold the same as the host copies.
  EXPECT_EQ(send.rows()[1], 2);
  EXPECT_EQ(send.rows()[2], 1);
  EXPECT_EQ(send.keys()[1], 9);
  EXPECT_EQ(recv.rows()[2], 2);  // halo row index, not local id
  EXPECT_EQ(recv.keys()[1], 4);
  EXPECT_EQ(vec(recv.keys_host(0)), (std::vector<GlobalId>{1, 4}));
  EXPECT_EQ(vec(send.rows_host(0)), (std::vector<LocalId>{0, 2}));
}

TEST(HaloPlan, ReverseSwapsSendAndReceiveSides) {
  const HaloPlan plan = HaloPlan::build(small_partition(), cpu_device());
  const HaloPlan rev = plan.reverse();
  EXPECT_TRUE(rev.reversed());
  EXPECT_EQ(&rev.send(), &plan.recv());
  EXPECT_EQ(&rev.recv(), &plan.send());
  EXPECT_FALSE(rev.reverse().reversed());
}

// A weighted map packs weighted sums of rows and unpacks with the transpose.
TEST(SlotMap, WeightedPackAndUnpackAreRAndItsTranspose) {
  // Owned rows 0..3; peer 0 gets slot {0.5 r0 + 2 r3}, peer 2 gets {r1, 3 r2}.
  SlotLink a;
  a.peer = 0;
  const std::vector<LocalId> r03{0, 3}, r1{1}, r2{2};
  const std::vector<float> w03{0.5f, 2.0f}, w2{3.0f};
  a.add_slot(r03, w03, 100);
  SlotLink b;
  b.peer = 2;
  b.add_slot(r1, {}, 101);
  b.add_slot(r2, w2, 102);
  const HaloPlan plan = HaloPlan::from_links(1, 4, 0, {a, b}, {}, cpu_device());
  const SlotMap& send = plan.send();
  EXPECT_FALSE(send.is_selection());
  EXPECT_EQ(send.total(), 3);
  Matrix m(4, 2), slots(3, 2);
  for (int i = 0; i < 4; ++i) {
    m(i, 0) = static_cast<float>(i + 1);
    m(i, 1) = static_cast<float>(10 * (i + 1));
  }
  send.pack(*cpu_device(), m.cview(), slots.view());
  EXPECT_FLOAT_EQ(slots(0, 0), 0.5f * 1 + 2.0f * 4);
  EXPECT_FLOAT_EQ(slots(1, 1), 20.0f);
  EXPECT_FLOAT_EQ(slots(2, 0), 9.0f);
  Matrix back(4, 2);
  back(1, 1) = 7.0f;  // unpack without accumulate overwrites everything
  send.unpack(*cpu_device(), slots.cview(), back.view(), false);
  EXPECT_FLOAT_EQ(back(0, 0), 0.5f * slots(0, 0));
  EXPECT_FLOAT_EQ(back(3, 1), 2.0f * slots(0, 1));
  EXPECT_FLOAT_EQ(back(1, 1), slots(1, 1));
  EXPECT_FLOAT_EQ(back(2, 0), 3.0f * slots(2, 0));
  send.unpack(*cpu_device(), slots.cview(), back.view(), true);
  EXPECT_FLOAT_EQ(back(2, 0), 6.0f * slots(2, 0));
}

TEST(SlotMap, RejectsInconsistentLinks) {
  auto bad = [](std::vector<SlotLink> send, const char* why) {
    EXPECT_THROW(HaloPlan::from_links(1, 4, 0, std::move(send), {}, cpu_device()), Error) << why;
  };
  SlotLink l;
  l.peer = 0;
  const std::vector<LocalId> r{5};
  l.add_slot(r, {}, 1);
  bad({l}, "row outside the matrix");
  SlotLink k;
  k.peer = 0;
  const std::vector<LocalId> ok{1};
  k.add_slot(ok, {}, 1);
  k.keys.push_back(2);
  bad({k}, "more keys than slots");
  SlotLink m;
  m.peer = 2;
  m.add_slot(ok, {}, 1);
  SlotLink n = m;
  n.peer = 0;
  bad({m, n}, "peers out of order");
}

TEST(HaloPlan, RejectsPartitionsThatBreakTheConventions) {
  auto expect_rejected = [](const LocalPartition& p, const char* why) {
    EXPECT_THROW(HaloPlan::build(p, cpu_device()), Error) << why;
  };
  {
    auto p = small_partition();
    p.recv = {{0, {4, 3}}, {2, {5}}};
    expect_rejected(p, "halo rows out of order");
  }
  {
    auto p = small_partition();
    p.recv = {{2, {5}}, {0, {3, 4}}};
    expect_rejected(p, "peers out of order");
  }
  {
    auto p = small_partition();
    p.send[1].rows = {3};
    expect_rejected(p, "sending a halo row");
  }
  {
    auto p = small_partition();
    p.send[1].peer = 1;
    expect_rejected(p, "the rank itself as a peer");
  }
  {
    auto p = small_partition();
    p.recv.pop_back();
    expect_rejected(p, "a halo row never received");
  }
  {
    auto p = small_partition();
    p.global_ids.pop_back();
    expect_rejected(p, "global ids missing");
  }
  {
    auto p = small_partition();
    p.send[0].peer = 5;
    expect_rejected(p, "peer beyond num_parts");
  }
}

TEST(HaloPlan, RandomPartitionsGiveMatchingPlansOnBothSides) {
  const Rank parts = 4;
  const auto g = test::make_random_graph(21, 300, parts, 3);
  std::vector<HaloPlan> plans;
  for (Rank r = 0; r < parts; ++r)
    plans.push_back(HaloPlan::build(test::local_partition_of(g, r), cpu_device()));
  // Row i of p's send plan to q is row i of q's receive plan from p (same global id).
  for (Rank p = 0; p < parts; ++p)
    for (std::size_t k = 0; k < plans[p].send().num_peers(); ++k) {
      const Rank q = plans[p].send().peers()[k];
      const auto& rp = plans[q].recv().peers();
      const auto it = std::find(rp.begin(), rp.end(), p);
      ASSERT_NE(it, rp.end());
      const auto kq = static_cast<std::size_t>(it - rp.begin());
      const auto a = plans[p].send().keys_host(k);
      const auto b = plans[q].recv().keys_host(kq);
      EXPECT_EQ(std::vector<GlobalId>(a.begin(), a.end()), std::vector<GlobalId>(b.begin(), b.end()));
    }
}

/// P simulated ranks exchanging through one LoopbackHub.
struct SimulatedRanks {
  explicit SimulatedRanks(std::uint64_t seed, Rank parts, GlobalId n)
      : graph(test::make_random_graph(seed, n, parts, 3)) {
    auto hub = std::make_shared<test::LoopbackHub>();
    for (Rank r = 0; r < parts; ++r) {
      partitions.push_back(test::local_partition_of(graph, r));
      transports.push_back(std::make_unique<test::LoopbackTransport>(hub, r, parts));
      traffic.emplace_back();
    }
    for (Rank r = 0; r < parts; ++r)
      exchanges.push_back(std::make_unique<HaloExchange>(
          std::make_shared<const HaloPlan>(HaloPlan::build(partitions[r], cpu_device())),
          *transports[r], traffic[r]));
  }
  test::RandomGraph graph;
  std::vector<LocalPartition> partitions;
  std::vector<std::unique_ptr<test::LoopbackTransport>> transports;
  std::vector<TrafficCounter> traffic;
  std::vector<std::unique_ptr<HaloExchange>> exchanges;
};

TEST(HaloExchangeLoopback, ForwardThenBackwardMatchesTheGraph) {
  const std::uint64_t seed = 31;
  const Rank parts = 3;
  const std::int64_t f = 4;
  SimulatedRanks sim(seed, parts, 150);
  std::vector<Matrix> owned, halo, halo_grad, owned_grad;
  for (Rank r = 0; r < parts; ++r) {
    const auto& p = sim.partitions[r];
    owned.emplace_back(p.num_owned, f);
    halo.emplace_back(p.num_halo, f);
    halo_grad.emplace_back(p.num_halo, f);
    owned_grad.emplace_back(p.num_owned, f);
    for (LocalId i = 0; i < p.num_owned; ++i)
      for (std::int64_t j = 0; j < f; ++j) owned[r](i, j) = test::feature_value(seed, p.global_ids[i], j);
    for (LocalId h = 0; h < p.num_halo; ++h)
      for (std::int64_t j = 0; j < f; ++j) {
        halo[r](h, j) = std::numeric_limits<float>::quiet_NaN();
        halo_grad[r](h, j) = test::gradient_value(seed, r, p.global_ids[p.num_owned + h], j);
      }
  }
  auto checking = std::make_shared<const test::CheckingCodec>();
  std::vector<Request> reqs;
  for (Rank r = 0; r < parts; ++r) {
    sim.exchanges[r]->set_codec(0, Direction::backward, checking);
    reqs.push_back(sim.exchanges[r]->start_forward(0, 1, seed, owned[r].cview(), halo[r].view()));
    reqs.push_back(
        sim.exchanges[r]->start_backward(0, 1, seed, halo_grad[r].cview(), owned_grad[r].view()));
  }
  for (Request& q : reqs) q.wait();
  for (Rank r = 0; r < parts; ++r) {
    const auto& p = sim.partitions[r];
    for (LocalId h = 0; h < p.num_halo; ++h)
      for (std::int64_t j = 0; j < f; ++j)
        ASSERT_EQ(halo[r](h, j), test::feature_value(seed, p.global_ids[p.num_owned + h], j));
    for (LocalId i = 0; i < p.num_owned; ++i)
      for (std::int64_t j = 0; j < f; ++j) {
        float expected = 0;
        for (Rank q = 0; q < parts; ++q)
          if (test::in_halo_of(sim.graph, q, p.global_ids[i]))
            expected += test::gradient_value(seed, q, p.global_ids[i], j);
        ASSERT_EQ(owned_grad[r](i, j), expected) << "rank " << r << " row " << i;
      }
    // Accounting: forward is fp32 (no metadata), backward carries the checking codec's ids.
    EXPECT_EQ(sim.traffic[r].at(0, Direction::forward).payload,
              static_cast<std::uint64_t>(sim.exchanges[r]->plan().send().total() * f * 4));
    EXPECT_EQ(sim.traffic[r].at(0, Direction::forward).metadata, 0u);
    EXPECT_EQ(sim.traffic[r].at(0, Direction::backward).metadata,
              sim.exchanges[r]->plan().recv().num_peers() * 16 +
                  static_cast<std::uint64_t>(sim.exchanges[r]->plan().recv().total()) * 8);
    EXPECT_EQ(sim.traffic[r].total().total(), sim.transports[r]->bytes_sent());
    EXPECT_EQ(sim.traffic[r].total().messages, sim.transports[r]->messages_sent());
    EXPECT_GE(sim.exchanges[r]->codec_seconds(), 0.0);
  }
}

TEST(HaloExchangeLoopback, TagsAreDistinctPerLayerAndDirectionAndCodecsArePerLayer) {
  SimulatedRanks sim(32, 2, 40);
  HaloExchange& ex = *sim.exchanges[0];
  std::vector<int> tags;
  for (int layer = 0; layer < 4; ++layer)
    for (Direction d : {Direction::forward, Direction::backward}) tags.push_back(ex.tag(layer, d));
  std::sort(tags.begin(), tags.end());
  EXPECT_EQ(std::adjacent_find(tags.begin(), tags.end()), tags.end());
  EXPECT_EQ(ex.codec(3, Direction::backward).name(), "fp32");
  ex.set_default_codec(Direction::backward, std::make_shared<const test::CheckingCodec>());
  ex.set_codec(1, Direction::backward, make_codec("fp32"));
  EXPECT_EQ(ex.codec(3, Direction::backward).name(), "checking");
  EXPECT_EQ(ex.codec(1, Direction::backward).name(), "fp32");
  EXPECT_EQ(ex.codec(3, Direction::forward).name(), "fp32");
}

}  // namespace
}  // namespace halognn
