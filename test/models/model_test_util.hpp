#pragma once
// Helpers for the model tests: small random graphs and hand-built LocalPartitions of them.
#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "core/rng.hpp"
#include "partition/local_partition.hpp"

namespace halognn::test {

/// An undirected simple graph as sorted adjacency lists.
struct SmallGraph {
  std::vector<std::vector<GlobalId>> adj;
  GlobalId size() const { return static_cast<GlobalId>(adj.size()); }
};

/// Each pair (u, v) is an edge with probability p (seeded); vertex `isolated` (if >= 0) gets none.
inline SmallGraph random_graph(GlobalId n, double p, std::uint64_t seed, GlobalId isolated = -1) {
  SmallGraph g;
  g.adj.resize(static_cast<std::size_t>(n));
  const CounterRng rng(RngKey{seed, RngPurpose::test, 77, 0});
  for (GlobalId u = 0; u < n; ++u) {
    for (GlobalId v = u + 1; v < n; ++v) {
      if (u == isolated || v == isolated) continue;
      if (rng.uniform_double(static_cast<std::uint64_t>(u * n + v), 0) < p) {
        g.adj[u].push_back(v);
        g.adj[v].push_back(u);
      }
    }
  }
  return g;
}

/// The LocalPartition of the vertices in `owned` (any order; stored ascending): halo = their
/// neighbours outside `owned`, ascending by global id. Plans are left empty (single-process
/// tests move rows by global id themselves).
inline LocalPartition make_partition(const SmallGraph& g, std::vector<GlobalId> owned) {
  std::sort(owned.begin(), owned.end());
  const std::set<GlobalId> own_set(owned.begin(), owned.end());
  std::set<GlobalId> halo_set;
  for (GlobalId v : owned) {
    for (GlobalId u : g.adj[v]) {
      if (!own_set.count(u)) halo_set.insert(u);
    }
  }
  LocalPartition p;
  p.global_num_nodes = g.size();
  p.num_owned = static_cast<LocalId>(owned.size());
  p.num_halo = static_cast<LocalId>(halo_set.size());
  p.global_ids = owned;
  p.global_ids.insert(p.global_ids.end(), halo_set.begin(), halo_set.end());
  std::vector<LocalId> local(static_cast<std::size_t>(g.size()), -1);
  for (std::size_t i = 0; i < p.global_ids.size(); ++i)
    local[p.global_ids[i]] = static_cast<LocalId>(i);
  p.row_ptr.push_back(0);
  for (GlobalId v : owned) {
    std::vector<LocalId> cols;
    for (GlobalId u : g.adj[v]) cols.push_back(local[u]);
    std::sort(cols.begin(), cols.end());
    p.col.insert(p.col.end(), cols.begin(), cols.end());
    p.row_ptr.push_back(static_cast<std::int32_t>(p.col.size()));
  }
  for (GlobalId v : p.global_ids)
    p.global_degree.push_back(static_cast<std::int64_t>(g.adj[v].size()));
  return p;
}

/// All vertices owned by one rank.
inline LocalPartition whole_graph(const SmallGraph& g) {
  std::vector<GlobalId> all(static_cast<std::size_t>(g.size()));
  for (GlobalId v = 0; v < g.size(); ++v) all[v] = v;
  return make_partition(g, all);
}

}  // namespace halognn::test
