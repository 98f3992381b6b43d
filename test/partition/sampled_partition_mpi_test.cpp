// PT-Scotch on a sample of the edges, refined on the whole graph (partition/sampled_partition.hpp)
// at 2 and 4 ranks: the sample keeps both entries of an edge or neither and every edge of a
// low-degree vertex, the refinement keeps the part weight limit (and makes parts over it shed),
// lowers the cut, and the whole scheme cuts about as few edges as PT-Scotch on the whole graph.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <set>
#include <utility>

#include "core/data/generator.hpp"
#include "partition/dist_exchange.hpp"
#include "partition/sampled_partition.hpp"
#include "partition/scotch_kway.hpp"
#include "test/mpi_world.hpp"

namespace halognn {
namespace {

using dist::DistGraph;
using testing::world_rank;
using testing::world_size;

/// A degree-skewed SBM graph (the generator's power law), symmetric, held whole on every rank.
GlobalGraph test_graph(std::int64_t nodes, std::int64_t edges, double homophily) {
  SbmConfig c;
  c.num_nodes = nodes;
  c.num_edges = edges;
  c.num_classes = 8;
  c.num_features = 1;
  c.homophily = homophily;
  c.seed = 11;
  const Dataset ds = generate_sbm(c);
  return build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst);
}

/// This rank's block of `g` as a distributed graph.
DistGraph block_of(const GlobalGraph& g, std::uint64_t& sent) {
  const Rank k = world_size(), me = world_rank();
  std::vector<GlobalId> vtxdist(static_cast<std::size_t>(k) + 1);
  for (Rank r = 0; r <= k; ++r) vtxdist[r] = dist::block_begin(g.num_nodes, k, r);
  const GlobalId b = vtxdist[me], e = vtxdist[me + 1];
  std::vector<EdgeOffset> row_ptr;
  for (GlobalId v = b; v <= e; ++v) row_ptr.push_back(g.row_ptr[v] - g.row_ptr[b]);
  const std::vector<GlobalId> col(g.col.begin() + g.row_ptr[b], g.col.begin() + g.row_ptr[e]);
  return dist::dist_graph_from_global(MPI_COMM_WORLD, std::move(vtxdist), row_ptr, col, sent);
}

/// Every rank's values, concatenated in rank order (so indexed by global id for vertex values).
std::vector<std::int64_t> gather_all(const std::vector<std::int64_t>& mine) {
  const int k = world_size();
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(k)), displs(counts.size(), 0);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 1; r < k; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<std::int64_t> all(static_cast<std::size_t>(displs[k - 1] + counts[k - 1]));
  MPI_Allgatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(),
                 MPI_INT64_T, MPI_COMM_WORLD);
  return all;
}

/// The cut of `part` (indexed by global id) on the whole graph, counted on one process.
std::int64_t serial_cut(const GlobalGraph& g, const std::vector<std::int64_t>& part) {
  std::int64_t twice = 0;
  for (GlobalId v = 0; v < g.num_nodes; ++v)
    for (EdgeOffset e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e) twice += part[v] != part[g.col[e]];
  return twice / 2;
}

std::vector<std::int64_t> part_weights(const std::vector<std::int64_t>& part, Rank parts) {
  std::vector<std::int64_t> w(static_cast<std::size_t>(parts), 0);
  for (std::int64_t p : part) ++w[p];
  return w;
}

TEST(SampleEdges, KeepsBothEntriesOfAnEdgeOrNeitherAndEveryEdgeOfALowDegreeVertex) {
  const GlobalGraph g = test_graph(3000, 90000, 0.7);  // degrees from about 16 to hundreds
  std::uint64_t sent = 0;
  const DistGraph d = block_of(g, sent);
  for (const std::int64_t degree : {8, 24}) {
    SCOPED_TRACE(degree);
    const DistGraph s = dist::sample_edges(MPI_COMM_WORLD, d, degree, 7, sent);
    // The kept entries as (global u, global v) pairs, from every rank.
    std::vector<std::int64_t> mine;
    for (std::int64_t v = 0; v < s.n(); ++v)
      for (EdgeOffset e = s.row_ptr[v]; e < s.row_ptr[v + 1]; ++e)
        mine.insert(mine.end(), {d.begin() + v, s.global(s.adj[e])});
    const std::vector<std::int64_t> all = gather_all(mine);
    std::set<std::pair<GlobalId, GlobalId>> kept;
    for (std::size_t i = 0; i < all.size(); i += 2) kept.insert({all[i], all[i + 1]});
    ASSERT_EQ(kept.size() * 2, all.size()) << "an entry kept twice";
    for (const auto& [u, v] : kept) {
      ASSERT_TRUE(kept.count({v, u})) << "edge " << u << "-" << v << " kept from one end only";
      ASSERT_TRUE(std::binary_search(g.col.begin() + g.row_ptr[u],
                                     g.col.begin() + g.row_ptr[u + 1], v))
          << "a kept edge that is not in the graph";
    }
    std::int64_t low_degree_vertices = 0;
    for (GlobalId v = 0; v < g.num_nodes; ++v) {
      if (g.degree(v) > degree) continue;
      ++low_degree_vertices;
      for (EdgeOffset e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e)
        ASSERT_TRUE(kept.count({v, g.col[e]})) << "vertex " << v << " of degree " << g.degree(v)
                                               << " lost its edge to " << g.col[e];
    }
    if (degree == 24) {
      EXPECT_GT(low_degree_vertices, 100);  // the rule is exercised
    }
    // A vertex keeps about `degree` edges (more where its neighbours have low degree).
    const double mean_kept = static_cast<double>(kept.size()) / static_cast<double>(g.num_nodes);
    EXPECT_GT(mean_kept, degree * 0.7);
    EXPECT_LT(mean_kept, degree * 1.6);
    if (degree == 8) {
      EXPECT_LT(static_cast<double>(kept.size()), 0.25 * static_cast<double>(g.col.size()));
    }
    // The same seed gives the same sample, another seed another.
    EXPECT_EQ(dist::sample_edges(MPI_COMM_WORLD, d, degree, 7, sent).adj, s.adj);
    int differs = dist::sample_edges(MPI_COMM_WORLD, d, degree, 8, sent).adj != s.adj;
    MPI_Allreduce(MPI_IN_PLACE, &differs, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_TRUE(differs);
  }
}

TEST(Refine, LowersTheCutOfABalancedAssignmentAndKeepsTheLimit) {
  const GlobalGraph g = test_graph(4000, 40000, 0.8);
  std::uint64_t sent = 0;
  const DistGraph d = block_of(g, sent);
  const Rank parts = 4;
  // A balanced assignment that ignores the graph: vertex v to part v mod 4.
  std::vector<std::int64_t> part(static_cast<std::size_t>(d.n()));
  for (std::int64_t v = 0; v < d.n(); ++v) part[v] = (d.begin() + v) % parts;
  const std::int64_t wmax = dist::max_part_weight(g.num_nodes, 1, parts, 0.03);
  EXPECT_EQ(wmax, 1030);
  const std::int64_t before = serial_cut(g, gather_all(part));
  const int sweeps = dist::refine(MPI_COMM_WORLD, d, part, parts, wmax, 8, sent);
  EXPECT_GE(sweeps, 2);
  const std::vector<std::int64_t> all = gather_all(part);
  const std::int64_t after = serial_cut(g, all);
  EXPECT_EQ(after, dist::dist_edge_cut(MPI_COMM_WORLD, d, part, sent));
  EXPECT_LT(after, before * 7 / 10) << "cut " << before << " -> " << after;
  for (std::int64_t w : part_weights(all, parts)) EXPECT_LE(w, wmax);
}

TEST(Refine, PartsOverTheLimitShedTheirExcess) {
  const GlobalGraph g = test_graph(4000, 40000, 0.8);
  std::uint64_t sent = 0;
  const DistGraph d = block_of(g, sent);
  const Rank parts = 4;
  // Everything in part 0 but a few vertices in each other part.
  std::vector<std::int64_t> part(static_cast<std::size_t>(d.n()), 0);
  for (std::int64_t v = 0; v < d.n(); ++v)
    if ((d.begin() + v) % 100 == 0) part[v] = 1 + (d.begin() + v) / 100 % 3;
  const std::int64_t wmax = dist::max_part_weight(g.num_nodes, 1, parts, 0.03);
  dist::refine(MPI_COMM_WORLD, d, part, parts, wmax, 8, sent);
  const std::vector<std::int64_t> w = part_weights(gather_all(part), parts);
  for (Rank p = 0; p < parts; ++p) EXPECT_LE(w[p], wmax) << "part " << p;
}

TEST(SampledPartition, CutsAboutAsFewEdgesAsPtScotchOnTheWholeGraph) {
  const GlobalGraph g = test_graph(6000, 120000, 0.6);
  std::uint64_t sent = 0;
  const DistGraph d = block_of(g, sent);
  const Rank parts = 4;
  const auto run = [&](std::int64_t degree, dist::SampledPartitionStats& st) {
    dist::SampledPartitionOptions opt;
    opt.parts = parts;
    opt.seed = 3;
    opt.sample_degree = degree;
    return dist::sampled_partition(
        MPI_COMM_WORLD, d, opt,
        [&](MPI_Comm c, const DistGraph& s) { return dist::scotch_kway(c, s, parts, 0.03, 3); }, st,
        sent);
  };
  dist::SampledPartitionStats whole, sampled;
  const std::vector<std::int64_t> pw = gather_all(run(0, whole));
  const std::vector<std::int64_t> ps = gather_all(run(6, sampled));
  EXPECT_EQ(whole.sampled_entries, whole.entries);
  EXPECT_LT(sampled.sampled_entries * 3, sampled.entries);  // PT-Scotch saw under a third
  EXPECT_EQ(serial_cut(g, ps), sampled.final_cut);
  EXPECT_LE(sampled.final_cut, sampled.initial_cut);
  EXPECT_LT(sampled.final_cut, whole.final_cut * 105 / 100)
      << "sampled " << sampled.final_cut << " (PT-Scotch's " << sampled.initial_cut << "), whole "
      << whole.final_cut;
  for (const auto& p : {pw, ps})
    for (std::int64_t w : part_weights(p, parts)) EXPECT_LE(w, sampled.max_part_weight);
  const std::vector<std::int64_t> w = part_weights(ps, parts);
  EXPECT_EQ(sampled.heaviest_part, *std::max_element(w.begin(), w.end()));
}

}  // namespace
}  // namespace halognn
