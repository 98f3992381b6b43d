// One part's local partition from its owned vertices and their neighbour lists.
//
// Everything here is local to the part: u (owned by p) is in q's halo exactly when u has a
// neighbour in q, so p's send plans follow from p's own rows; p's halo is the set of its
// neighbours owned elsewhere. The serial and the distributed partitioner both end here.
#include <algorithm>
#include <limits>
#include <numeric>

#include "core/error.hpp"
#include "partition/build_part.hpp"

namespace halognn {

namespace {

/// Index of `v` in the ascending `ids` (which must hold it).
std::int64_t index_of(const std::vector<GlobalId>& ids, GlobalId v) {
  const auto it = std::lower_bound(ids.begin(), ids.end(), v);
  GNN_ASSERT(it != ids.end() && *it == v, "vertex ", v, " not found");
  return it - ids.begin();
}

struct HaloKey {
  Rank owner;
  GlobalId gid;
  bool operator<(const HaloKey& o) const {
    return owner != o.owner ? owner < o.owner : gid < o.gid;
  }
  bool operator==(const HaloKey& o) const { return owner == o.owner && gid == o.gid; }
};

}  // namespace

LocalPartition build_part(const OwnedRows& rows, const HaloDegree& halo_degree,
                          const LocalOrder& order, const FillOwnedRows& fill) {
  const Rank p = rows.part;
  const std::int64_t n = static_cast<std::int64_t>(rows.gids.size());
  GNN_ASSERT(static_cast<std::int64_t>(rows.row_ptr.size()) == n + 1, "row_ptr has ",
             rows.row_ptr.size(), " entries for ", n, " rows");
  GNN_ASSERT(rows.col.size() == rows.col_part.size(), "col and col_part differ in length");
  GNN_CHECK_CONFIG(n <= std::numeric_limits<LocalId>::max(), "part ", p, " owns ", n,
                   " vertices, more than 32-bit local ids allow; use more parts");

  // Locality order: the part's own subgraph in ascending-global-id local ids (each row's
  // columns ascend, as the neighbour lists do), then renumbered.
  std::vector<std::int32_t> perm;  // perm[i]: sorted index of the vertex numbered i
  if (order.kind != LocalOrder::Kind::none) {
    std::vector<std::int64_t> sub_ptr(static_cast<std::size_t>(n) + 1, 0);
#pragma omp parallel for schedule(dynamic, 1024)
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t c = 0;
      for (EdgeOffset e = rows.row_ptr[i]; e < rows.row_ptr[i + 1]; ++e) c += rows.col_part[e] == p;
      sub_ptr[i + 1] = c;
    }
    std::partial_sum(sub_ptr.begin(), sub_ptr.end(), sub_ptr.begin());
    std::vector<std::int32_t> sub_col(static_cast<std::size_t>(sub_ptr[n]));
#pragma omp parallel for schedule(dynamic, 1024)
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t k = sub_ptr[i];
      for (EdgeOffset e = rows.row_ptr[i]; e < rows.row_ptr[i + 1]; ++e)
        if (rows.col_part[e] == p)
          sub_col[k++] = static_cast<std::int32_t>(index_of(rows.gids, rows.col[e]));
    }
    perm = locality_order(n, sub_ptr, sub_col, order);
  } else {
    perm.resize(static_cast<std::size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
  }
  std::vector<LocalId> local_of(static_cast<std::size_t>(n));  // sorted index -> local id
  for (std::int64_t i = 0; i < n; ++i) local_of[perm[i]] = static_cast<LocalId>(i);

  // The halo: distinct neighbours owned elsewhere, by owner, ascending id within an owner.
  std::vector<HaloKey> halo;
  for (std::size_t e = 0; e < rows.col.size(); ++e)
    if (rows.col_part[e] != p) halo.push_back({rows.col_part[e], rows.col[e]});
  std::sort(halo.begin(), halo.end());
  halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
  const std::int64_t h = static_cast<std::int64_t>(halo.size());
  GNN_CHECK_CONFIG(n + h <= std::numeric_limits<LocalId>::max(), "part ", p, " has ", n + h,
                   " local vertices, more than 32-bit local ids allow; use more parts");
  const LocalId owned = static_cast<LocalId>(n);

  LocalPartition lp;
  lp.rank = p;
  lp.num_parts = rows.num_parts;
  lp.global_num_nodes = rows.global_num_nodes;
  lp.global_num_directed_edges = rows.global_num_directed_edges;
  lp.num_owned = owned;
  lp.num_halo = static_cast<LocalId>(h);
  lp.global_ids.resize(static_cast<std::size_t>(n + h));
  lp.global_degree.resize(lp.global_ids.size());
  for (std::int64_t i = 0; i < n; ++i) {
    lp.global_ids[i] = rows.gids[perm[i]];
    lp.global_degree[i] = rows.row_ptr[perm[i] + 1] - rows.row_ptr[perm[i]];
  }
  for (std::int64_t k = 0; k < h; ++k) {
    lp.global_ids[n + k] = halo[k].gid;
    lp.global_degree[n + k] = halo_degree(halo[k].gid);
  }

  // Local adjacency: local row i is sorted vertex perm[i]; every neighbour is owned or halo.
  std::vector<std::int64_t> row_len(static_cast<std::size_t>(n) + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) row_len[i + 1] = row_len[i] + lp.global_degree[i];
  GNN_CHECK_CONFIG(row_len[n] <= std::numeric_limits<std::int32_t>::max(), "part ", p, " has ",
                   row_len[n],
                   " local adjacency entries, more than 32-bit offsets allow; use more parts");
  lp.row_ptr.assign(row_len.begin(), row_len.end());
  lp.col.resize(static_cast<std::size_t>(row_len[n]));
#pragma omp parallel for schedule(dynamic, 256)
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t s = perm[i];
    LocalId* out = lp.col.data() + lp.row_ptr[i];
    std::int64_t k = 0;
    for (EdgeOffset e = rows.row_ptr[s]; e < rows.row_ptr[s + 1]; ++e) {
      const GlobalId u = rows.col[e];
      const Rank q = rows.col_part[e];
      out[k++] = q == p ? local_of[index_of(rows.gids, u)]
                        : owned + static_cast<LocalId>(
                                      std::lower_bound(halo.begin(), halo.end(), HaloKey{q, u}) -
                                      halo.begin());
    }
    std::sort(out, out + k);
  }

  // Receive plans: the halo groups, ascending owner.
  for (std::int64_t k = 0; k < h;) {
    PeerRows pr;
    pr.peer = halo[k].owner;
    for (; k < h && halo[k].owner == pr.peer; ++k) pr.rows.push_back(owned + static_cast<LocalId>(k));
    lp.recv.push_back(std::move(pr));
  }
  // Send plans: per peer q (ascending), the owned vertices with a neighbour in q, ascending
  // global id (the order of q's halo rows from p).
  std::vector<std::pair<Rank, std::int64_t>> sends;  // (peer, sorted index)
  std::vector<std::int64_t> stamp(static_cast<std::size_t>(rows.num_parts), -1);
  for (std::int64_t s = 0; s < n; ++s)
    for (EdgeOffset e = rows.row_ptr[s]; e < rows.row_ptr[s + 1]; ++e) {
      const Rank q = rows.col_part[e];
      if (q == p || stamp[q] == s) continue;
      stamp[q] = s;
      sends.push_back({q, s});
    }
  std::stable_sort(sends.begin(), sends.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t k = 0; k < sends.size();) {
    PeerRows pr;
    pr.peer = sends[k].first;
    for (; k < sends.size() && sends[k].first == pr.peer; ++k)
      pr.rows.push_back(local_of[sends[k].second]);
    lp.send.push_back(std::move(pr));
  }

  fill(std::span<const GlobalId>(lp.global_ids.data(), static_cast<std::size_t>(n)), lp);
  return lp;
}

}  // namespace halognn
