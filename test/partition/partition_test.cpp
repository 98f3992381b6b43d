#include <algorithm>
#include <numeric>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "partition/partition.hpp"
#include "partition_fixtures.hpp"

namespace halognn {
namespace {

using test::Edges;
using Method = PartitionConfig::Method;

enum class Shape { random, grid };

Edges edges_for(Shape s) {
  return s == Shape::random ? test::random_edges(600, 2400, 11) : test::grid_edges(20, 30);
}

class LocalPartitionConventions
    : public ::testing::TestWithParam<std::tuple<Shape, Method, int, LocalOrder::Kind>> {};

TEST_P(LocalPartitionConventions, HoldForEveryPart) {
  const auto [shape, method, k, order_kind] = GetParam();
  const Dataset ds = test::make_dataset(edges_for(shape));
  const GlobalGraph g = test::graph_of(ds);
  PartitionConfig cfg;
  cfg.parts = k;
  cfg.method = method;
  cfg.seed = 5;
  const std::vector<Rank> parts = assign_parts(g, cfg);
  ASSERT_EQ(static_cast<GlobalId>(parts.size()), g.num_nodes);
  PartitionReport report;
  // Blocks of 40 rows: every part of these 600-vertex graphs gets a non-trivial order.
  const LocalOrder order{order_kind, 40, 3};
  const auto lps = build_local_partitions(ds, g, parts, k, &report, order);
  test::expect_consistent(ds, g, parts, k, lps, order_kind == LocalOrder::Kind::none);

  // The report agrees with the partitions.
  EXPECT_EQ(report.num_parts, k);
  EXPECT_EQ(report.num_edges * 2, g.num_directed_edges());
  std::int64_t halo_cols = 0, total = 0;
  for (Rank p = 0; p < k; ++p) {
    EXPECT_EQ(report.owned[p], lps[p].num_owned);
    EXPECT_EQ(report.halo[p], lps[p].num_halo);
    EXPECT_EQ(report.local_edges[p], static_cast<std::int64_t>(lps[p].col.size()));
    std::int64_t sent = 0;
    std::set<LocalId> boundary;
    for (const PeerRows& pr : lps[p].send) {
      sent += static_cast<std::int64_t>(pr.rows.size());
      boundary.insert(pr.rows.begin(), pr.rows.end());
      const auto it = std::find_if(report.pair_volume.begin(), report.pair_volume.end(),
                                   [&](const auto& x) { return x.from == p && x.to == pr.peer; });
      ASSERT_NE(it, report.pair_volume.end());
      EXPECT_EQ(it->rows, static_cast<std::int64_t>(pr.rows.size()));
    }
    EXPECT_EQ(report.sent_rows[p], sent);
    EXPECT_EQ(report.boundary[p], static_cast<GlobalId>(boundary.size()));
    for (std::int32_t e = 0; e < lps[p].row_ptr.back(); ++e)
      halo_cols += lps[p].col[e] >= lps[p].num_owned;
    total += sent;
  }
  EXPECT_EQ(report.edge_cut * 2, halo_cols);
  EXPECT_EQ(report.total_volume, total);
  const GlobalId max_owned = *std::max_element(report.owned.begin(), report.owned.end());
  EXPECT_DOUBLE_EQ(report.imbalance, static_cast<double>(max_owned) * k / g.num_nodes);
  if (k == 1) {
    EXPECT_EQ(report.edge_cut, 0);
    EXPECT_EQ(lps[0].num_halo, 0);
  }
  const PartitionReport again = compute_partition_report(g, parts, k);
  EXPECT_EQ(again.to_json().dump(), report.to_json().dump());
}

INSTANTIATE_TEST_SUITE_P(
    ShapesMethodsAndPartCounts, LocalPartitionConventions,
    ::testing::Combine(::testing::Values(Shape::random, Shape::grid),
                       ::testing::Values(Method::metis, Method::random),
                       ::testing::Values(1, 2, 3, 4, 8),
                       ::testing::Values(LocalOrder::Kind::blocks, LocalOrder::Kind::rcm,
                                         LocalOrder::Kind::none)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) == Shape::random ? "Random" : "Grid") +
             (std::get<1>(info.param) == Method::metis ? "Metis" : "Shuffle") + "K" +
             std::to_string(std::get<2>(info.param)) + "Order" +
             to_string(std::get<3>(info.param));
    });

/// The vertices 0..n-1 of `cliques` cliques of `size` vertices, with ids shuffled by `seed`:
/// returns (row_ptr, col) and, per vertex, its clique.
struct Cliques {
  std::vector<std::int64_t> row_ptr{0};
  std::vector<std::int32_t> col;
  std::vector<int> clique_of;
};
Cliques shuffled_cliques(int cliques, int size, std::uint64_t seed) {
  const int n = cliques * size;
  std::vector<int> id(static_cast<std::size_t>(n));  // id[position in clique order] = vertex
  std::iota(id.begin(), id.end(), 0);
  const CounterRng rng(RngKey{seed, RngPurpose::test, 9, 0});
  for (int i = n - 1; i > 0; --i) std::swap(id[i], id[rng.word(i, 0) % (i + 1)]);
  Cliques c;
  c.clique_of.resize(static_cast<std::size_t>(n));
  std::vector<std::vector<std::int32_t>> adj(static_cast<std::size_t>(n));
  for (int q = 0; q < cliques; ++q)
    for (int i = 0; i < size; ++i) {
      const int v = id[q * size + i];
      c.clique_of[v] = q;
      for (int j = 0; j < size; ++j)
        if (j != i) adj[v].push_back(id[q * size + j]);
    }
  for (auto& a : adj) {
    std::sort(a.begin(), a.end());
    c.col.insert(c.col.end(), a.begin(), a.end());
    c.row_ptr.push_back(static_cast<std::int64_t>(c.col.size()));
  }
  return c;
}

bool is_permutation_of_range(const std::vector<std::int32_t>& order, std::size_t n) {
  std::vector<std::int32_t> s = order;
  std::sort(s.begin(), s.end());
  std::vector<std::int32_t> want(n);
  std::iota(want.begin(), want.end(), 0);
  return s == want;
}

TEST(LocalityOrder, BlocksNumberEachCommunityContiguously) {
  // 12 cliques of 30 shuffled vertices, blocks of 30 rows: METIS finds the cliques, and each one
  // gets a contiguous range of new ids.
  const Cliques c = shuffled_cliques(12, 30, 1);
  const std::vector<std::int32_t> order =
      locality_order(360, c.row_ptr, c.col, LocalOrder{LocalOrder::Kind::blocks, 30, 1});
  ASSERT_TRUE(is_permutation_of_range(order, 360));
  for (int start = 0; start < 360; start += 30)
    for (int i = start; i < start + 30; ++i)
      EXPECT_EQ(c.clique_of[order[i]], c.clique_of[order[start]]) << "position " << i;
  // Inside a block the vertices keep ascending order; the same input gives the same order.
  for (int i = 1; i < 360; ++i) {
    if (i % 30 != 0) {
      EXPECT_LT(order[i - 1], order[i]);
    }
  }
  EXPECT_EQ(order, locality_order(360, c.row_ptr, c.col,
                                  LocalOrder{LocalOrder::Kind::blocks, 30, 1}));
}

TEST(LocalityOrder, ManyBlocksGoInTwoLevelsAndStillNumberEachCommunityContiguously) {
  // 80 cliques of 30 shuffled vertices, blocks of 30 rows: 80 blocks, above the 32 of one METIS
  // call, so groups of cliques first and then each group's blocks; every block is still one
  // clique, numbered contiguously, ascending inside, the same for the same input.
  const Cliques c = shuffled_cliques(80, 30, 2);
  const LocalOrder cfg{LocalOrder::Kind::blocks, 30, 1};
  const std::vector<std::int32_t> order = locality_order(2400, c.row_ptr, c.col, cfg);
  ASSERT_TRUE(is_permutation_of_range(order, 2400));
  for (int start = 0; start < 2400; start += 30)
    for (int i = start + 1; i < start + 30; ++i) {
      EXPECT_EQ(c.clique_of[order[i]], c.clique_of[order[start]]) << "position " << i;
      EXPECT_LT(order[i - 1], order[i]) << "position " << i;
    }
  EXPECT_EQ(order, locality_order(2400, c.row_ptr, c.col, cfg));
}

TEST(LocalityOrder, RcmTurnsAShuffledPathIntoAPath) {
  // A path 0-1-...-99 relabelled by a shuffle: RCM numbers it end to end (bandwidth 1).
  const int n = 100;
  std::vector<int> label(n);
  std::iota(label.begin(), label.end(), 0);
  const CounterRng rng(RngKey{4, RngPurpose::test, 10, 0});
  for (int i = n - 1; i > 0; --i) std::swap(label[i], label[rng.word(i, 0) % (i + 1)]);
  std::vector<std::vector<std::int32_t>> adj(n);
  for (int i = 0; i + 1 < n; ++i) {
    adj[label[i]].push_back(label[i + 1]);
    adj[label[i + 1]].push_back(label[i]);
  }
  std::vector<std::int64_t> row_ptr{0};
  std::vector<std::int32_t> col;
  for (auto& a : adj) {
    std::sort(a.begin(), a.end());
    col.insert(col.end(), a.begin(), a.end());
    row_ptr.push_back(static_cast<std::int64_t>(col.size()));
  }
  const std::vector<std::int32_t> order =
      locality_order(n, row_ptr, col, LocalOrder{LocalOrder::Kind::rcm, 1, 1});
  ASSERT_TRUE(is_permutation_of_range(order, n));
  std::vector<int> pos(n);
  for (int i = 0; i < n; ++i) pos[order[i]] = i;
  for (int v = 0; v < n; ++v)
    for (const std::int32_t u : adj[v]) EXPECT_EQ(std::abs(pos[v] - pos[u]), 1);
}

TEST(LocalityOrder, NoneIsTheIdentityAndSmallGraphsStayInOrder) {
  const Cliques c = shuffled_cliques(4, 10, 2);
  std::vector<std::int32_t> identity(40);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(locality_order(40, c.row_ptr, c.col, LocalOrder{LocalOrder::Kind::none, 8, 1}),
            identity);
  // One block's worth of vertices: nothing to cut.
  EXPECT_EQ(locality_order(40, c.row_ptr, c.col, LocalOrder{LocalOrder::Kind::blocks, 40, 1}),
            identity);
  EXPECT_THROW(locality_order(40, c.row_ptr, c.col, LocalOrder{LocalOrder::Kind::blocks, 0, 1}),
               ConfigError);
  EXPECT_EQ(parse_local_order("rcm"), LocalOrder::Kind::rcm);
  EXPECT_THROW(parse_local_order("bfs"), ConfigError);
}

TEST(LocalityOrder, NumbersNeighboursCloserThanTheGivenIds) {
  // A random geometric graph with shuffled ids: mean |id(u) - id(v)| over edges drops several
  // times over once each part is renumbered (about 10x here for both orders).
  const Dataset ds = test::make_dataset(test::geometric_edges(2000, 0.04, 6));
  const GlobalGraph g = test::graph_of(ds);
  const auto parts = assign_parts(g, {2, Method::metis, PartitionConfig::Objective::cut, 1, {}});
  auto spread = [&](LocalOrder::Kind kind) {
    const auto lps = build_local_partitions(ds, g, parts, 2, nullptr, LocalOrder{kind, 64, 1});
    double sum = 0, count = 0;
    for (const LocalPartition& lp : lps)
      for (LocalId i = 0; i < lp.num_owned; ++i)
        for (std::int32_t e = lp.row_ptr[i]; e < lp.row_ptr[i + 1]; ++e)
          if (lp.col[e] < lp.num_owned) {
            sum += std::abs(lp.col[e] - i);
            count += 1;
          }
    return sum / count;
  };
  EXPECT_LT(5 * spread(LocalOrder::Kind::blocks), spread(LocalOrder::Kind::none));
  EXPECT_LT(5 * spread(LocalOrder::Kind::rcm), spread(LocalOrder::Kind::none));
}

TEST(PartitionAssignment, IsDeterministicForAGivenSeed) {
  const GlobalGraph g = test::graph_of(test::make_dataset(test::random_edges(500, 2000, 3)));
  for (Method m : {Method::metis, Method::random}) {
    PartitionConfig cfg{4, m, PartitionConfig::Objective::cut, 17, {}};
    EXPECT_EQ(assign_parts(g, cfg), assign_parts(g, cfg));
  }
  PartitionConfig a{4, Method::random, PartitionConfig::Objective::cut, 1, {}};
  PartitionConfig b = a;
  b.seed = 2;
  EXPECT_NE(assign_parts(g, a), assign_parts(g, b));
}

TEST(PartitionAssignment, RandomMethodBalancesPartsToWithinOneVertex) {
  const GlobalGraph g = test::graph_of(test::make_dataset(test::random_edges(1003, 3000, 4)));
  for (int k : {2, 3, 7, 8}) {
    const auto parts = assign_parts(g, {k, Method::random, PartitionConfig::Objective::cut, 9, {}});
    std::vector<GlobalId> size(k, 0);
    for (Rank p : parts) ++size[p];
    const auto [lo, hi] = std::minmax_element(size.begin(), size.end());
    EXPECT_LE(*hi - *lo, 1) << "k=" << k;
  }
}

TEST(PartitionAssignment, MetisCutsAGridFarLessThanRandom) {
  const GlobalGraph g = test::graph_of(test::make_dataset(test::grid_edges(40, 40)));
  const auto metis = assign_parts(g, {4, Method::metis, PartitionConfig::Objective::cut, 1, {}});
  const auto rnd = assign_parts(g, {4, Method::random, PartitionConfig::Objective::cut, 1, {}});
  const auto cut_metis = compute_partition_report(g, metis, 4).edge_cut;
  const auto cut_random = compute_partition_report(g, rnd, 4).edge_cut;
  // An optimal 4-way cut of a 40x40 grid is 80 edges; random cuts about 3/4 of 3120.
  EXPECT_LE(cut_metis, 120);
  EXPECT_GT(cut_random, 2000);
}

TEST(PartitionAssignment, VolumeObjectiveGivesALowVolumeBalancedPartition) {
  const GlobalGraph g = test::graph_of(test::make_dataset(test::geometric_edges(1500, 0.05, 2)));
  const auto vol = assign_parts(g, {4, Method::metis, PartitionConfig::Objective::vol, 1, {}});
  const auto rnd = assign_parts(g, {4, Method::random, PartitionConfig::Objective::vol, 1, {}});
  const auto r_vol = compute_partition_report(g, vol, 4);
  const auto r_rnd = compute_partition_report(g, rnd, 4);
  EXPECT_LT(r_vol.total_volume * 4, r_rnd.total_volume);
  EXPECT_LE(r_vol.imbalance, 1.1);
}

TEST(PartitionAssignment, RejectsInvalidPartCounts) {
  const GlobalGraph g = test::graph_of(test::make_dataset(test::grid_edges(2, 3)));
  EXPECT_THROW(assign_parts(g, {0, Method::metis, PartitionConfig::Objective::cut, 1, {}}),
               ConfigError);
  EXPECT_THROW(assign_parts(g, {7, Method::metis, PartitionConfig::Objective::cut, 1, {}}),
               ConfigError);
  EXPECT_EQ(assign_parts(g, {6, Method::random, PartitionConfig::Objective::cut, 1, {}}).size(), 6u);
}

TEST(PartitionAssignment, SingleGridRowSplitsIntoContiguousHalves) {
  const GlobalGraph g = test::graph_of(test::make_dataset(test::grid_edges(1, 8)));
  const auto parts = assign_parts(g, {2, Method::metis, PartitionConfig::Objective::cut, 1, {}});
  EXPECT_EQ(compute_partition_report(g, parts, 2).edge_cut, 1);
}

TEST(PartitionAssignment, ParsesMethodAndObjectiveNames) {
  EXPECT_EQ(parse_partition_method("metis"), Method::metis);
  EXPECT_EQ(parse_partition_method("random"), Method::random);
  EXPECT_EQ(parse_partition_objective("vol"), PartitionConfig::Objective::vol);
  EXPECT_EQ(to_string(parse_partition_objective("cut")), "cut");
  EXPECT_THROW(parse_partition_method("kahip"), ConfigError);
  EXPECT_THROW(parse_partition_objective("edges"), ConfigError);
}

TEST(LocalPartitionBuild, HandlesIsolatedVerticesAndEmptyParts) {
  test::Edges e;
  e.n = 10;
  e.add(0, 1);
  e.add(1, 2);
  e.add(5, 5);  // a self-loop only: vertex 5 ends up isolated
  const Dataset ds = test::make_dataset(e);
  const GlobalGraph g = test::graph_of(ds);
  // Part 3 owns nothing; part 2 owns only isolated vertices.
  const std::vector<Rank> parts = {0, 1, 0, 2, 2, 2, 0, 1, 1, 0};
  const auto lps = build_local_partitions(ds, g, parts, 4);
  test::expect_consistent(ds, g, parts, 4, lps);
  EXPECT_EQ(lps[3].num_owned, 0);
  EXPECT_EQ(lps[2].num_halo, 0);
  EXPECT_TRUE(lps[2].send.empty());
  ASSERT_EQ(lps[0].send.size(), 1u);
  EXPECT_EQ(lps[0].send[0].peer, 1);
  EXPECT_EQ(test::gids_of(lps[0], lps[0].send[0].rows), (std::vector<GlobalId>{0, 2}));
  EXPECT_EQ(test::gids_of(lps[1], lps[1].recv[0].rows), (std::vector<GlobalId>{0, 2}));
}

TEST(LocalPartitionBuild, RoutesMultilabelTargetsToOwners) {
  const Dataset ds = test::make_dataset(test::random_edges(300, 900, 8), 5, 2, true);
  const GlobalGraph g = test::graph_of(ds);
  const auto parts = assign_parts(g, {3, Method::metis, PartitionConfig::Objective::cut, 3, {}});
  test::expect_consistent(ds, g, parts, 3, build_local_partitions(ds, g, parts, 3));
}

TEST(ValidateLocalPartition, RejectsBrokenConventions) {
  const Dataset ds = test::make_dataset(test::grid_edges(6, 6));
  const GlobalGraph g = test::graph_of(ds);
  const auto parts = assign_parts(g, {2, Method::metis, PartitionConfig::Objective::cut, 1, {}});
  const auto lps = build_local_partitions(ds, g, parts, 2);
  auto copy = [&](const LocalPartition& src) {
    LocalPartition lp;
    lp.rank = src.rank;
    lp.num_parts = src.num_parts;
    lp.global_num_nodes = src.global_num_nodes;
    lp.global_num_directed_edges = src.global_num_directed_edges;
    lp.num_owned = src.num_owned;
    lp.num_halo = src.num_halo;
    lp.global_ids = src.global_ids;
    lp.row_ptr = src.row_ptr;
    lp.col = src.col;
    lp.global_degree = src.global_degree;
    lp.send = src.send;
    lp.recv = src.recv;
    lp.features = src.features.clone();
    lp.num_classes = src.num_classes;
    lp.labels = src.labels;
    lp.train_mask = src.train_mask;
    lp.val_mask = src.val_mask;
    lp.test_mask = src.test_mask;
    lp.global_train = src.global_train;
    lp.global_val = src.global_val;
    lp.global_test = src.global_test;
    return lp;
  };
  auto expect_rejected = [&](const char* what, auto&& mutate) {
    LocalPartition lp = copy(lps[0]);
    mutate(lp);
    EXPECT_THROW(validate_local_partition(lp, "origin"), InputError) << what;
  };
  EXPECT_NO_THROW(validate_local_partition(copy(lps[0]), "origin"));
  expect_rejected("owned id twice",
                  [](LocalPartition& lp) { lp.global_ids[1] = lp.global_ids[0]; });
  expect_rejected("send plan out of global id order", [](LocalPartition& lp) {
    std::reverse(lp.send[0].rows.begin(), lp.send[0].rows.end());
  });
  expect_rejected("column out of range",
                  [](LocalPartition& lp) { lp.col[0] = lp.num_local(); });
  expect_rejected("degree",
                  [](LocalPartition& lp) { lp.global_degree[0] += 1; });
  expect_rejected("send row not owned",
                  [](LocalPartition& lp) { lp.send[0].rows.push_back(lp.num_owned); });
  expect_rejected("recv short",
                  [](LocalPartition& lp) { lp.recv[0].rows.pop_back(); });
  expect_rejected("send to self",
                  [](LocalPartition& lp) { lp.send[0].peer = 0; });
  expect_rejected("label range",
                  [](LocalPartition& lp) { lp.labels[0] = 99; });
  expect_rejected("overlapping splits",
                  [](LocalPartition& lp) { lp.train_mask[0] = lp.val_mask[0] = 1; });
  expect_rejected("gid out of range",
                  [](LocalPartition& lp) { lp.global_ids[0] = lp.global_num_nodes; });
}

}  // namespace
}  // namespace halognn
