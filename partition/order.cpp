// Locality orders of a part's owned vertices (docs/partitioning.md "Locality order").
#include <algorithm>
#include <limits>
#include <numeric>

#include <metis.h>

#include "core/error.hpp"
#include "partition/partition.hpp"

namespace halognn {

std::string to_string(LocalOrder::Kind k) {
  switch (k) {
    case LocalOrder::Kind::blocks: return "blocks";
    case LocalOrder::Kind::rcm: return "rcm";
    case LocalOrder::Kind::none: return "none";
  }
  return "?";
}

LocalOrder::Kind parse_local_order(const std::string& s) {
  if (s == "blocks") return LocalOrder::Kind::blocks;
  if (s == "rcm") return LocalOrder::Kind::rcm;
  if (s == "none") return LocalOrder::Kind::none;
  throw ConfigError("unknown local order '" + s + "' (expected blocks, rcm or none)");
}

namespace {

using Order = std::vector<std::int32_t>;

/// Reverse Cuthill-McKee: breadth-first from the lowest-degree unvisited vertex of each
/// component, neighbours in ascending (degree, id), the whole sequence reversed.
Order rcm(std::int64_t n, const std::vector<std::int64_t>& row_ptr,
          const std::vector<std::int32_t>& col) {
  auto degree = [&](std::int32_t v) { return row_ptr[v + 1] - row_ptr[v]; };
  auto by_degree = [&](std::int32_t a, std::int32_t b) {
    return degree(a) != degree(b) ? degree(a) < degree(b) : a < b;
  };
  Order starts(static_cast<std::size_t>(n));
  std::iota(starts.begin(), starts.end(), 0);
  std::sort(starts.begin(), starts.end(), by_degree);
  Order order;
  order.reserve(static_cast<std::size_t>(n));
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(n), 0);
  Order next;
  for (const std::int32_t s : starts) {
    if (seen[s]) continue;
    seen[s] = 1;
    std::size_t head = order.size();
    order.push_back(s);
    while (head < order.size()) {
      const std::int32_t v = order[head++];
      next.clear();
      for (std::int64_t e = row_ptr[v]; e < row_ptr[v + 1]; ++e) {
        const std::int32_t u = col[e];
        if (seen[u]) continue;
        seen[u] = 1;
        next.push_back(u);
      }
      std::sort(next.begin(), next.end(), by_degree);
      order.insert(order.end(), next.begin(), next.end());
    }
  }
  std::reverse(order.begin(), order.end());
  return order;
}

/// METIS k-way partition of the graph (xadj, adjncy) into nparts; part[v] is v's part.
std::vector<idx_t> kway(std::vector<idx_t>& xadj, std::vector<idx_t>& adjncy, idx_t nparts,
                        std::uint64_t seed) {
  idx_t nvtxs = static_cast<idx_t>(xadj.size() - 1), ncon = 1, cut = 0;
  std::vector<idx_t> part(static_cast<std::size_t>(nvtxs), 0);
  if (nparts < 2) return part;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>((seed ^ (seed >> 32)) & 0x7fffffffu);
  options[METIS_OPTION_NUMBERING] = 0;
  const int rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), nullptr, nullptr,
                                     nullptr, &nparts, nullptr, nullptr, options, &cut,
                                     part.data());
  if (rc != METIS_OK)
    throw Error(detail::concat("METIS_PartGraphKway failed (code ", rc, ") cutting ", nvtxs,
                               " vertices into ", nparts, " locality blocks"));
  for (const idx_t b : part) GNN_ASSERT(b >= 0 && b < nparts, "METIS returned block ", b);
  return part;
}

/// Blocks per METIS call at most: a k-way partition into thousands of blocks is slow (its initial
/// partitioning and refinement grow with k; 2*10^6 vertices into 1953 blocks took minutes), so
/// larger counts go in two levels: groups of about this many blocks, then each group's blocks.
constexpr std::int64_t kBlocksPerCall = 32;

/// METIS k-way blocks of about block_rows vertices, numbered block by block, ascending vertex
/// inside a block. Above kBlocksPerCall blocks: first groups of kBlocksPerCall blocks' worth of
/// vertices, then each group's own subgraph into its blocks; blocks are numbered group by group.
Order blocks(std::int64_t n, const std::vector<std::int64_t>& row_ptr,
             const std::vector<std::int32_t>& col, const LocalOrder& cfg) {
  const std::int64_t nblocks = (n + cfg.block_rows - 1) / cfg.block_rows;
  Order order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (nblocks < 2) return order;
  static_assert(sizeof(idx_t) == 4, "halognn expects METIS built with IDXTYPEWIDTH=32");
  GNN_CHECK_CONFIG(row_ptr[n] <= std::numeric_limits<idx_t>::max(),
                   "a part's own subgraph has ", row_ptr[n],
                   " adjacency entries, beyond METIS' 32-bit indices; use --order rcm or none");
  std::vector<idx_t> xadj(row_ptr.begin(), row_ptr.end());
  std::vector<idx_t> adjncy(col.begin(), col.end());
  // Level 1: groups (one group holding every vertex when a single call suffices).
  const std::int64_t ngroups =
      nblocks <= kBlocksPerCall ? 1 : (nblocks + kBlocksPerCall - 1) / kBlocksPerCall;
  const std::vector<idx_t> group =
      ngroups > 1 ? kway(xadj, adjncy, static_cast<idx_t>(ngroups), cfg.seed)
                  : std::vector<idx_t>(static_cast<std::size_t>(n), 0);
  // The vertices of each group, ascending.
  std::vector<std::int64_t> gstart(static_cast<std::size_t>(ngroups) + 1, 0);
  for (const idx_t g : group) ++gstart[static_cast<std::size_t>(g) + 1];
  std::partial_sum(gstart.begin(), gstart.end(), gstart.begin());
  std::vector<std::int32_t> members(static_cast<std::size_t>(n));
  {
    std::vector<std::int64_t> at(gstart.begin(), gstart.end() - 1);
    for (std::int32_t v = 0; v < n; ++v) members[at[group[v]]++] = v;
  }
  // Level 2: each group's own subgraph into its blocks, numbered after the earlier groups'.
  std::vector<std::int32_t> local(static_cast<std::size_t>(n), -1);
  std::int64_t written = 0;
  for (std::int64_t g = 0; g < ngroups; ++g) {
    const std::int64_t lo = gstart[g], hi = gstart[g + 1], size = hi - lo;
    const idx_t gblocks = static_cast<idx_t>((size + cfg.block_rows - 1) / cfg.block_rows);
    std::vector<idx_t> part;
    if (ngroups == 1) {
      part = kway(xadj, adjncy, gblocks, cfg.seed);
    } else {
      for (std::int64_t i = lo; i < hi; ++i) local[members[i]] = static_cast<std::int32_t>(i - lo);
      std::vector<idx_t> sx(static_cast<std::size_t>(size) + 1, 0), sa;
      for (std::int64_t i = lo; i < hi; ++i) {
        const std::int32_t v = members[i];
        for (std::int64_t k = row_ptr[v]; k < row_ptr[v + 1]; ++k)
          if (group[col[k]] == g) sa.push_back(local[col[k]]);
        sx[i - lo + 1] = static_cast<idx_t>(sa.size());
      }
      part = kway(sx, sa, gblocks, cfg.seed + static_cast<std::uint64_t>(g));
    }
    // Counting sort by block: stable, so a block keeps ascending vertex order.
    std::vector<std::int64_t> start(static_cast<std::size_t>(std::max<idx_t>(gblocks, 1)) + 1, 0);
    for (const idx_t b : part) ++start[static_cast<std::size_t>(b) + 1];
    std::partial_sum(start.begin(), start.end(), start.begin());
    for (std::int64_t i = 0; i < size; ++i) {
      const std::int32_t v = ngroups == 1 ? static_cast<std::int32_t>(i) : members[lo + i];
      order[written + start[part[i]]++] = v;
    }
    written += size;
  }
  return order;
}

}  // namespace

std::vector<std::int32_t> locality_order(std::int64_t n, const std::vector<std::int64_t>& row_ptr,
                                         const std::vector<std::int32_t>& col,
                                         const LocalOrder& cfg) {
  GNN_ASSERT(static_cast<std::int64_t>(row_ptr.size()) == n + 1, "locality_order: row_ptr has ",
             row_ptr.size(), " entries for ", n, " vertices");
  GNN_CHECK_CONFIG(cfg.block_rows >= 1, "--order-block must be at least 1 (got ", cfg.block_rows,
                   ")");
  switch (cfg.kind) {
    case LocalOrder::Kind::blocks: return blocks(n, row_ptr, col, cfg);
    case LocalOrder::Kind::rcm: return rcm(n, row_ptr, col);
    case LocalOrder::Kind::none: break;
  }
  Order order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

}  // namespace halognn
