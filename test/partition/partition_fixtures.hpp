#pragma once
// Small graphs and datasets for the partition tests, plus a checker that verifies every
// convention of local_partition.hpp against the global graph.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/data/dataset.hpp"
#include "core/rng.hpp"
#include "partition/partition.hpp"

namespace halognn::test {

/// Edge lists of a graph under construction.
struct Edges {
  GlobalId n = 0;
  std::vector<GlobalId> src, dst;
  void add(GlobalId u, GlobalId v) {
    src.push_back(u);
    dst.push_back(v);
  }
};

/// Erdős-Rényi-like graph with `m` random edges (duplicates and self-loops included on purpose:
/// build_symmetric_graph removes them).
inline Edges random_edges(GlobalId n, std::int64_t m, std::uint64_t seed) {
  Edges e;
  e.n = n;
  const CounterRng rng(RngKey{seed, RngPurpose::test, 1, 0});
  for (std::int64_t i = 0; i < m; ++i)
    e.add(rng.word(i, 0) % n, rng.word(i, 1) % n);
  return e;
}

/// rows x cols 4-neighbour grid.
inline Edges grid_edges(GlobalId rows, GlobalId cols) {
  Edges e;
  e.n = rows * cols;
  for (GlobalId r = 0; r < rows; ++r)
    for (GlobalId c = 0; c < cols; ++c) {
      const GlobalId v = r * cols + c;
      if (c + 1 < cols) e.add(v, v + 1);
      if (r + 1 < rows) e.add(v, v + cols);
    }
  return e;
}

/// Random geometric graph: n points in the unit square, edges between points closer than
/// `radius` (cell buckets, so O(n * neighbours)).
inline Edges geometric_edges(GlobalId n, double radius, std::uint64_t seed) {
  Edges e;
  e.n = n;
  const CounterRng rng(RngKey{seed, RngPurpose::test, 2, 0});
  std::vector<double> x(n), y(n);
  for (GlobalId v = 0; v < n; ++v) {
    x[v] = rng.uniform_double(v, 0);
    y[v] = rng.uniform_double(v, 1);
  }
  const int cells = std::max(1, static_cast<int>(1.0 / radius));
  std::vector<std::vector<GlobalId>> bucket(static_cast<std::size_t>(cells) * cells);
  auto cell = [&](double t) { return std::min(cells - 1, static_cast<int>(t * cells)); };
  for (GlobalId v = 0; v < n; ++v) bucket[cell(x[v]) * cells + cell(y[v])].push_back(v);
  for (GlobalId v = 0; v < n; ++v) {
    const int cx = cell(x[v]), cy = cell(y[v]);
    for (int dx = -1; dx <= 1; ++dx)
      for (int dy = -1; dy <= 1; ++dy) {
        const int bx = cx + dx, by = cy + dy;
        if (bx < 0 || by < 0 || bx >= cells || by >= cells) continue;
        for (GlobalId u : bucket[bx * cells + by])
          if (u > v && std::hypot(x[u] - x[v], y[u] - y[v]) < radius) e.add(v, u);
      }
  }
  return e;
}

/// A dataset over `e` whose node data identify the node: feature (v, j) = v + j / 8, label
/// v % classes (every 7th node unlabelled), splits by v % 5.
inline Dataset make_dataset(const Edges& e, std::int32_t classes = 4, std::int64_t features = 3,
                            bool multilabel = false) {
  Dataset ds;
  ds.name = "test-graph";
  ds.num_nodes = e.n;
  ds.edge_src = e.src;
  ds.edge_dst = e.dst;
  ds.features = Matrix(e.n, features);
  for (GlobalId v = 0; v < e.n; ++v)
    for (std::int64_t j = 0; j < features; ++j)
      ds.features(v, j) = static_cast<float>(v) + static_cast<float>(j) / 8.0f;
  ds.num_classes = classes;
  ds.multilabel = multilabel;
  if (multilabel) {
    ds.label_matrix.resize(static_cast<std::size_t>(e.n) * classes);
    for (GlobalId v = 0; v < e.n; ++v)
      for (std::int32_t c = 0; c < classes; ++c) ds.label_matrix[v * classes + c] = (v >> c) & 1;
  } else {
    ds.labels.resize(static_cast<std::size_t>(e.n));
    for (GlobalId v = 0; v < e.n; ++v)
      ds.labels[v] = v % 7 == 3 ? -1 : static_cast<int>(v % classes);
  }
  for (GlobalId v = 0; v < e.n; ++v) {
    if (!multilabel && ds.labels[v] < 0) continue;
    if (v % 5 == 0) ds.train_idx.push_back(v);
    if (v % 5 == 1) ds.val_idx.push_back(v);
    if (v % 5 == 2) ds.test_idx.push_back(v);
  }
  return ds;
}

inline GlobalGraph graph_of(const Dataset& ds) {
  return build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst);
}

/// A fresh, empty scratch directory removed at destruction.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("halognn-partition-test-" + std::to_string(::getpid()) + "-" +
             std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::vector<GlobalId> gids_of(const LocalPartition& lp, const std::vector<LocalId>& rows) {
  std::vector<GlobalId> out;
  for (LocalId r : rows) out.push_back(lp.global_ids[r]);
  return out;
}

/// Checks the local partitions against the global graph, assignment and dataset. `ascending`:
/// the owned rows must also be in ascending global id (LocalOrder::Kind::none).
inline void expect_consistent(const Dataset& ds, const GlobalGraph& g,
                              const std::vector<Rank>& parts, Rank k,
                              const std::vector<LocalPartition>& lps, bool ascending = true) {
  ASSERT_EQ(static_cast<Rank>(lps.size()), k);
  std::vector<std::pair<GlobalId, GlobalId>> directed;  // every local adjacency entry, as gids
  std::map<std::pair<Rank, Rank>, std::vector<GlobalId>> sent, received;
  std::int64_t halo_entries = 0;
  for (Rank p = 0; p < k; ++p) {
    const LocalPartition& lp = lps[p];
    SCOPED_TRACE("part " + std::to_string(p) + " of " + std::to_string(k));
    ASSERT_NO_THROW(validate_local_partition(lp, "part"));
    EXPECT_EQ(lp.rank, p);
    EXPECT_EQ(lp.num_parts, k);
    EXPECT_EQ(lp.global_num_nodes, g.num_nodes);
    EXPECT_EQ(lp.global_num_directed_edges, g.num_directed_edges());

    // Owned: exactly the vertices assigned to p (ascending, or in a locality order).
    std::vector<GlobalId> owned;
    for (GlobalId v = 0; v < g.num_nodes; ++v)
      if (parts[v] == p) owned.push_back(v);
    ASSERT_EQ(lp.num_owned, static_cast<LocalId>(owned.size()));
    std::vector<GlobalId> got(lp.global_ids.begin(), lp.global_ids.begin() + lp.num_owned);
    if (ascending) {
      EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
    }
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, owned);

    // Halo: exactly the off-part neighbours, ordered by (owner, gid).
    std::vector<std::pair<Rank, GlobalId>> halo;
    for (GlobalId u = 0; u < g.num_nodes; ++u) {
      if (parts[u] == p) continue;
      for (EdgeOffset e = g.row_ptr[u]; e < g.row_ptr[u + 1]; ++e)
        if (parts[g.col[e]] == p) {
          halo.emplace_back(parts[u], u);
          break;
        }
    }
    std::sort(halo.begin(), halo.end());
    ASSERT_EQ(lp.num_halo, static_cast<LocalId>(halo.size()));
    for (std::size_t i = 0; i < halo.size(); ++i)
      EXPECT_EQ(lp.global_ids[lp.num_owned + i], halo[i].second);

    for (LocalId r = 0; r < lp.num_local(); ++r)
      EXPECT_EQ(lp.global_degree[r], g.degree(lp.global_ids[r]));
    for (LocalId i = 0; i < lp.num_owned; ++i)
      for (std::int32_t e = lp.row_ptr[i]; e < lp.row_ptr[i + 1]; ++e) {
        directed.emplace_back(lp.global_ids[i], lp.global_ids[lp.col[e]]);
        halo_entries += lp.col[e] >= lp.num_owned;
      }
    for (const PeerRows& pr : lp.send) {
      sent[{p, pr.peer}] = gids_of(lp, pr.rows);
      // Send plans list rows in ascending global id, whatever the owned order.
      EXPECT_TRUE(std::is_sorted(sent[{p, pr.peer}].begin(), sent[{p, pr.peer}].end()));
    }
    for (const PeerRows& pr : lp.recv) received[{pr.peer, p}] = gids_of(lp, pr.rows);

    // Node data routed to the owner.
    ASSERT_EQ(lp.features.cols(), ds.features.cols());
    for (LocalId i = 0; i < lp.num_owned; ++i) {
      const GlobalId v = lp.global_ids[i];
      for (std::int64_t j = 0; j < ds.features.cols(); ++j)
        EXPECT_EQ(lp.features(i, j), ds.features(v, j));
      if (ds.multilabel) {
        for (std::int32_t c = 0; c < ds.num_classes; ++c)
          EXPECT_EQ(lp.label_matrix[i * ds.num_classes + c],
                    ds.label_matrix[v * ds.num_classes + c]);
      } else {
        EXPECT_EQ(lp.labels[i], ds.labels[v]);
      }
      EXPECT_EQ(lp.train_mask[i], std::binary_search(ds.train_idx.begin(), ds.train_idx.end(), v));
      EXPECT_EQ(lp.val_mask[i], std::binary_search(ds.val_idx.begin(), ds.val_idx.end(), v));
      EXPECT_EQ(lp.test_mask[i], std::binary_search(ds.test_idx.begin(), ds.test_idx.end(), v));
    }
    EXPECT_EQ(lp.global_train, static_cast<std::int64_t>(ds.train_idx.size()));
  }
  // Every directed edge of the graph appears exactly once, in the part owning its source; so an
  // undirected cut edge appears once in each endpoint's part, as a halo column.
  std::vector<std::pair<GlobalId, GlobalId>> expected;
  std::int64_t cut_twice = 0;
  for (GlobalId v = 0; v < g.num_nodes; ++v)
    for (EdgeOffset e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e) {
      expected.emplace_back(v, g.col[e]);
      cut_twice += parts[v] != parts[g.col[e]];
    }
  std::sort(directed.begin(), directed.end());
  EXPECT_EQ(directed, expected);
  EXPECT_EQ(halo_entries, cut_twice);
  // What p plans to send q is what q plans to receive from p, in the same order.
  EXPECT_EQ(sent, received);
}

}  // namespace halognn::test
