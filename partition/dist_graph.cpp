// Block-distributed graphs with ghost plans (dist_graph.hpp).
#include "partition/dist_graph.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "comm/mpi_env.hpp"
#include "core/error.hpp"
#include "partition/dist_exchange.hpp"

namespace halognn::dist {

DistGraph dist_graph_from_global(MPI_Comm comm, std::vector<GlobalId> vtxdist,
                                 const std::vector<EdgeOffset>& row_ptr,
                                 const std::vector<GlobalId>& col, std::uint64_t& sent) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  DistGraph g;
  g.vtxdist = std::move(vtxdist);
  g.rank = me;
  g.row_ptr = row_ptr;
  const GlobalId b = g.begin(), e = g.vtxdist[static_cast<std::size_t>(me) + 1];
  const std::int64_t n = e - b;
  for (GlobalId u : col)
    if (u < b || u >= e) g.ghost.push_back(u);
  std::sort(g.ghost.begin(), g.ghost.end());
  g.ghost.erase(std::unique(g.ghost.begin(), g.ghost.end()), g.ghost.end());
  collective_try(comm, [&] {
    GNN_CHECK_CONFIG(
        n + static_cast<std::int64_t>(g.ghost.size()) <= std::numeric_limits<std::int32_t>::max(),
        "a rank's block of ", n, " vertices with ", g.ghost.size(),
        " distinct foreign neighbours exceeds 32-bit local indices (use more ranks)");
  });
  g.adj.resize(col.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(col.size()); ++i) {
    const GlobalId u = col[i];
    g.adj[i] = static_cast<std::int32_t>(
        u >= b && u < e ? u - b
                        : n + (std::lower_bound(g.ghost.begin(), g.ghost.end(), u) - g.ghost.begin()));
  }
  plan_ghosts(comm, g, sent);
  return g;
}

void plan_ghosts(MPI_Comm comm, DistGraph& g, std::uint64_t& sent) {
  int k = 1;
  MPI_Comm_size(comm, &k);
  g.ghost_at.assign(static_cast<std::size_t>(k) + 1, 0);
  std::vector<std::vector<std::byte>> ask(static_cast<std::size_t>(k));
  {
    Rank s = 0;
    for (std::size_t j = 0; j < g.ghost.size(); ++j) {
      while (g.ghost[j] >= g.vtxdist[static_cast<std::size_t>(s) + 1]) ++s;
      ++g.ghost_at[static_cast<std::size_t>(s) + 1];
      put(ask[s], static_cast<std::int32_t>(g.ghost[j] - g.vtxdist[s]));
    }
  }
  for (int s = 0; s < k; ++s) g.ghost_at[s + 1] += g.ghost_at[s];
  std::vector<std::int64_t> n_ask(static_cast<std::size_t>(k)), n_got(n_ask.size());
  for (int d = 0; d < k; ++d) n_ask[d] = static_cast<std::int64_t>(ask[d].size() / sizeof(std::int32_t));
  GNN_CHECK_MPI(MPI_Alltoall(n_ask.data(), 1, MPI_INT64_T, n_got.data(), 1, MPI_INT64_T, comm));
  const std::vector<std::byte> got = exchange(comm, ask, sent);
  g.send.resize(got.size() / sizeof(std::int32_t));
  std::memcpy(g.send.data(), got.data(), got.size());
  g.send_at.assign(static_cast<std::size_t>(k) + 1, 0);
  for (int s = 0; s < k; ++s) g.send_at[s + 1] = g.send_at[s] + n_got[s];
}

std::vector<std::int64_t> ghost_values(MPI_Comm comm, const DistGraph& g,
                                       const std::vector<std::int64_t>& local, std::uint64_t& sent) {
  const std::size_t k = g.send_at.size() - 1;
  std::vector<std::vector<std::byte>> out(k);
  for (std::size_t d = 0; d < k; ++d) {
    out[d].reserve(static_cast<std::size_t>(g.send_at[d + 1] - g.send_at[d]) * sizeof(std::int64_t));
    for (std::int64_t i = g.send_at[d]; i < g.send_at[d + 1]; ++i) put(out[d], local[g.send[i]]);
  }
  const std::vector<std::byte> got = exchange(comm, out, sent);
  std::vector<std::int64_t> v(got.size() / sizeof(std::int64_t));
  GNN_ASSERT(v.size() == g.ghost.size(), "ghost exchange returned ", v.size(), " values for ",
             g.ghost.size(), " ghosts");
  std::memcpy(v.data(), got.data(), got.size());
  return v;
}

std::int64_t dist_edge_cut(MPI_Comm comm, const DistGraph& g, const std::vector<std::int64_t>& part,
                           std::uint64_t& sent) {
  const std::vector<std::int64_t> gp = ghost_values(comm, g, part, sent);
  const std::int64_t n = g.n();
  std::int64_t cut = 0;
  for (std::int64_t v = 0; v < n; ++v)
    for (EdgeOffset e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e) {
      const std::int32_t u = g.adj[e];
      if ((u < n ? part[u] : gp[u - n]) != part[v]) cut += g.ew(e);
    }
  GNN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &cut, 1, MPI_INT64_T, MPI_SUM, comm));
  return cut / 2;
}

}  // namespace halognn::dist
