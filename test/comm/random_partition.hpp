#pragma once
// Test helper: a random graph with a random owner per vertex, and the LocalPartition of any rank
// derived from it exactly by the conventions of partition/local_partition.hpp. Every rank builds
// the same graph from the same seed, so expected halo values and gradient sums are computable
// locally.
#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "core/rng.hpp"
#include "partition/local_partition.hpp"

namespace halognn::test {

struct RandomGraph {
  std::vector<std::vector<GlobalId>> adj;  // sorted, symmetric, no self-loops
  std::vector<Rank> owner;
  Rank parts = 1;
  GlobalId num_nodes() const { return static_cast<GlobalId>(adj.size()); }
};

/// n vertices, about `edges_per_node` random edges drawn per vertex, owners uniform over `parts`.
/// With `isolate_rank0`, edges between rank 0's vertices and others are dropped (rank 0 has no
/// peers).
inline RandomGraph make_random_graph(std::uint64_t seed, GlobalId n, Rank parts,
                                     int edges_per_node, bool isolate_rank0 = false) {
  RandomGraph g;
  g.parts = parts;
  g.owner.resize(static_cast<std::size_t>(n));
  const CounterRng rng(RngKey{seed, RngPurpose::test, 7, 0});
  for (GlobalId u = 0; u < n; ++u)
    g.owner[static_cast<std::size_t>(u)] =
        static_cast<Rank>(rng.word(static_cast<std::uint64_t>(u), 0) % static_cast<std::uint32_t>(parts));
  std::vector<std::set<GlobalId>> sets(static_cast<std::size_t>(n));
  for (GlobalId u = 0; u < n; ++u)
    for (int j = 0; j < edges_per_node; ++j) {
      const auto v = static_cast<GlobalId>(rng.word(static_cast<std::uint64_t>(u), 1 + j) %
                                           static_cast<std::uint64_t>(n));
      if (v == u) continue;
      const bool cross0 = (g.owner[static_cast<std::size_t>(u)] == 0) !=
                          (g.owner[static_cast<std::size_t>(v)] == 0);
      if (isolate_rank0 && cross0) continue;
      sets[static_cast<std::size_t>(u)].insert(v);
      sets[static_cast<std::size_t>(v)].insert(u);
    }
  g.adj.resize(static_cast<std::size_t>(n));
  for (GlobalId u = 0; u < n; ++u)
    g.adj[static_cast<std::size_t>(u)].assign(sets[static_cast<std::size_t>(u)].begin(),
                                              sets[static_cast<std::size_t>(u)].end());
  return g;
}

/// The LocalPartition of rank r (no features/labels: the comm layer does not read them).
inline LocalPartition local_partition_of(const RandomGraph& g, Rank r) {
  LocalPartition p;
  p.rank = r;
  p.num_parts = g.parts;
  p.global_num_nodes = g.num_nodes();
  std::vector<GlobalId> owned;
  for (GlobalId u = 0; u < g.num_nodes(); ++u)
    if (g.owner[static_cast<std::size_t>(u)] == r) owned.push_back(u);
  // Halo: neighbours owned elsewhere, ordered by (owner, global id).
  std::set<std::pair<Rank, GlobalId>> halo;
  for (GlobalId u : owned)
    for (GlobalId v : g.adj[static_cast<std::size_t>(u)])
      if (g.owner[static_cast<std::size_t>(v)] != r)
        halo.insert({g.owner[static_cast<std::size_t>(v)], v});
  p.num_owned = static_cast<LocalId>(owned.size());
  p.num_halo = static_cast<LocalId>(halo.size());
  p.global_ids = owned;
  for (const auto& [q, v] : halo) p.global_ids.push_back(v);
  auto local_of = [&](GlobalId v) {
    if (g.owner[static_cast<std::size_t>(v)] == r)
      return static_cast<LocalId>(std::lower_bound(owned.begin(), owned.end(), v) - owned.begin());
    const auto it = halo.find({g.owner[static_cast<std::size_t>(v)], v});
    return static_cast<LocalId>(p.num_owned + std::distance(halo.begin(), it));
  };
  p.row_ptr.push_back(0);
  for (GlobalId u : owned) {
    std::vector<LocalId> cols;
    for (GlobalId v : g.adj[static_cast<std::size_t>(u)]) cols.push_back(local_of(v));
    std::sort(cols.begin(), cols.end());
    p.col.insert(p.col.end(), cols.begin(), cols.end());
    p.row_ptr.push_back(static_cast<std::int32_t>(p.col.size()));
  }
  for (GlobalId v : p.global_ids)
    p.global_degree.push_back(static_cast<std::int64_t>(g.adj[static_cast<std::size_t>(v)].size()));
  for (Rank q = 0; q < g.parts; ++q) {
    if (q == r) continue;
    PeerRows send{q, {}}, recv{q, {}};
    for (std::size_t i = 0; i < owned.size(); ++i) {
      const auto& nb = g.adj[static_cast<std::size_t>(owned[i])];
      if (std::any_of(nb.begin(), nb.end(),
                      [&](GlobalId v) { return g.owner[static_cast<std::size_t>(v)] == q; }))
        send.rows.push_back(static_cast<LocalId>(i));
    }
    for (LocalId h = p.num_owned; h < p.num_local(); ++h)
      if (g.owner[static_cast<std::size_t>(p.global_ids[static_cast<std::size_t>(h)])] == q)
        recv.rows.push_back(h);
    if (!send.rows.empty()) p.send.push_back(std::move(send));
    if (!recv.rows.empty()) p.recv.push_back(std::move(recv));
  }
  return p;
}

/// Does rank q hold vertex v as a halo row?
inline bool in_halo_of(const RandomGraph& g, Rank q, GlobalId v) {
  if (g.owner[static_cast<std::size_t>(v)] == q) return false;
  const auto& nb = g.adj[static_cast<std::size_t>(v)];
  return std::any_of(nb.begin(), nb.end(),
                     [&](GlobalId u) { return g.owner[static_cast<std::size_t>(u)] == q; });
}

/// A feature value of vertex v, column j: exact multiples of 1/256 in [-4, 4), so sums in any
/// order are exact in float.
inline float feature_value(std::uint64_t seed, GlobalId v, std::int64_t j) {
  const CounterRng rng(RngKey{seed, RngPurpose::test, 11, 0});
  return static_cast<float>(static_cast<int>(rng.word(static_cast<std::uint64_t>(v),
                                                      static_cast<std::uint64_t>(j)) % 2048) -
                            1024) / 256.0f;
}

/// The gradient rank q sends back for its halo row of vertex v, column j (same grid of values).
inline float gradient_value(std::uint64_t seed, Rank q, GlobalId v, std::int64_t j) {
  const CounterRng rng(RngKey{seed, RngPurpose::test, 12, static_cast<std::uint64_t>(q)});
  return static_cast<float>(static_cast<int>(rng.word(static_cast<std::uint64_t>(v),
                                                      static_cast<std::uint64_t>(j)) % 2048) -
                            1024) / 256.0f;
}

}  // namespace halognn::test
