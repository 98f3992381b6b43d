// PT-Scotch on a sample of the edges, label-propagation refinement on the whole graph
// (sampled_partition.hpp).
#include "partition/sampled_partition.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "comm/mpi_env.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/process_memory.hpp"
#include "core/rng.hpp"

namespace halognn::dist {

namespace {

std::int64_t sum_over_ranks(MPI_Comm comm, std::int64_t v) {
  GNN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_SUM, comm));
  return v;
}

std::int64_t max_over_ranks(MPI_Comm comm, std::int64_t v) {
  GNN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_MAX, comm));
  return v;
}

/// Sparse accumulator over a dense index range: add(i, w), then visit the touched indices in
/// the order first touched, then clear.
class Ratings {
 public:
  explicit Ratings(std::size_t n) : value_(n, 0) {}
  void add(std::size_t i, std::int64_t w) {
    if (value_[i] == 0) touched_.push_back(i);
    value_[i] += w;
  }
  std::int64_t operator[](std::size_t i) const { return value_[i]; }
  const std::vector<std::size_t>& touched() const { return touched_; }
  void clear() {
    for (std::size_t i : touched_) value_[i] = 0;
    touched_.clear();
  }

 private:
  std::vector<std::int64_t> value_;
  std::vector<std::size_t> touched_;
};

}  // namespace

DistGraph sample_edges(MPI_Comm comm, const DistGraph& g, std::int64_t degree, std::uint64_t seed,
                       std::uint64_t& sent) {
  const std::int64_t n = g.n();
  std::vector<std::int64_t> deg(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v) deg[v] = g.row_ptr[v + 1] - g.row_ptr[v];
  const std::vector<std::int64_t> ghost_deg = ghost_values(comm, g, deg, sent);
  DistGraph s;
  s.vtxdist = g.vtxdist;
  s.rank = g.rank;
  s.ghost = g.ghost;
  s.row_ptr.assign(1, 0);
  const double d = static_cast<double>(degree);
  for (std::int64_t v = 0; v < n; ++v) {
    const GlobalId gv = g.begin() + v;
    for (EdgeOffset e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e) {
      const std::int32_t u = g.adj[e];
      const std::int64_t du = u < n ? deg[u] : ghost_deg[u - n];
      const std::int64_t low = std::min(du, deg[v]);
      bool keep = low <= degree;
      if (!keep) {
        // The pair's hash, the same from either end: a uniform draw in [0, 1).
        const GlobalId gu = g.global(u);
        const std::uint64_t h = detail::splitmix64(
            detail::splitmix64(seed ^ static_cast<std::uint64_t>(std::min(gu, gv))) ^
            static_cast<std::uint64_t>(std::max(gu, gv)));
        keep = static_cast<double>(h >> 11) * 0x1.0p-53 * static_cast<double>(low) < d;
      }
      if (keep) {
        s.adj.push_back(u);
        if (!g.edge_weight.empty()) s.edge_weight.push_back(g.edge_weight[e]);
      }
    }
    s.row_ptr.push_back(static_cast<EdgeOffset>(s.adj.size()));
  }
  s.vertex_weight = g.vertex_weight;
  return s;
}

std::int64_t max_part_weight(std::int64_t total, std::int64_t heaviest, Rank parts,
                             double imbalance) {
  const std::int64_t avg_up = (total + parts - 1) / parts;
  const auto limit = static_cast<std::int64_t>(
      std::floor((1.0 + imbalance) * static_cast<double>(total) / static_cast<double>(parts)));
  return std::max({limit, avg_up, heaviest});
}

int refine(MPI_Comm comm, const DistGraph& g, std::vector<std::int64_t>& part, Rank parts,
           std::int64_t wmax, int rounds, std::uint64_t& sent) {
  int k_int = 1, me = 0;
  MPI_Comm_size(comm, &k_int);
  MPI_Comm_rank(comm, &me);
  const std::int64_t K = k_int;
  const std::int64_t n = g.n();
  const auto P = static_cast<std::size_t>(parts);
  std::vector<std::int64_t> local_w(P, 0), total_w(P, 0);
  for (std::int64_t v = 0; v < n; ++v) local_w[part[v]] += g.vw(v);
  Ratings conn(P);
  int round = 0;
  while (round < rounds) {
    ++round;
    GNN_CHECK_MPI(MPI_Allreduce(local_w.data(), total_w.data(), static_cast<int>(P), MPI_INT64_T,
                                MPI_SUM, comm));
    const std::vector<std::int64_t> gp = ghost_values(comm, g, part, sent);
    // This rank's room in every part: its share of the free weight, or minus its share of the
    // excess (in proportion to the weight it holds there). The shares sum to at most the free
    // weight, so moves within them keep every part under the limit (or shrinking).
    std::vector<std::int64_t> room(P);
    bool over = false;
    for (std::size_t q = 0; q < P; ++q) {
      const std::int64_t free = wmax - total_w[q];
      if (free >= 0) {
        room[q] = free / K + (me < free % K ? 1 : 0);
      } else {
        over = true;
        room[q] = -static_cast<std::int64_t>(
            (static_cast<__int128>(-free) * local_w[q] + total_w[q] - 1) / total_w[q]);
      }
    }
    const auto part_of = [&](std::int32_t u) { return u < n ? part[u] : gp[u - n]; };
    const auto rate = [&](std::int64_t v) {
      for (EdgeOffset e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e)
        conn.add(static_cast<std::size_t>(part_of(g.adj[e])), g.ew(e));
    };
    const auto move = [&](std::int64_t v, std::int64_t q) {
      const std::int64_t w = g.vw(v), p = part[v];
      room[p] += w;
      room[q] -= w;
      local_w[p] -= w;
      local_w[q] += w;
      part[v] = q;
    };
    std::int64_t moved = 0;
    if (over) {
      // Shedding: the vertices of parts over the limit, each with its best target that has room
      // (a neighbouring part, else the part with the most room), best gain first.
      struct Candidate {
        std::int64_t gain, v, to;
      };
      std::vector<Candidate> cand;
      std::int64_t roomiest = std::max_element(room.begin(), room.end()) - room.begin();
      for (std::int64_t v = 0; v < n; ++v) {
        const std::int64_t p = part[v];
        if (room[p] >= 0) continue;
        rate(v);
        std::int64_t to = -1, best = std::numeric_limits<std::int64_t>::min();
        for (std::size_t q : conn.touched())
          if (static_cast<std::int64_t>(q) != p && room[q] >= g.vw(v) && conn[q] > best)
            best = conn[q], to = static_cast<std::int64_t>(q);
        if (to < 0 && roomiest != p && room[roomiest] >= g.vw(v)) to = roomiest, best = 0;
        if (to >= 0) cand.push_back({best - conn[static_cast<std::size_t>(p)], v, to});
        conn.clear();
      }
      std::stable_sort(cand.begin(), cand.end(),
                       [](const Candidate& a, const Candidate& b) { return a.gain > b.gain; });
      for (const Candidate& c : cand)
        if (room[part[c.v]] < 0 && room[c.to] >= g.vw(c.v)) move(c.v, c.to), ++moved;
    }
    // Gain moves: to the most connected part with room when that cuts less.
    for (std::int64_t v = 0; v < n; ++v) {
      rate(v);
      const std::int64_t p = part[v], w = g.vw(v);
      std::int64_t to = -1, best = conn[static_cast<std::size_t>(p)];
      for (std::size_t q : conn.touched())
        if (static_cast<std::int64_t>(q) != p && room[q] >= w && conn[q] > best)
          best = conn[q], to = static_cast<std::int64_t>(q);
      conn.clear();
      if (to >= 0) move(v, to), ++moved;
    }
    if (sum_over_ranks(comm, moved) == 0) break;
  }
  return round;
}

std::vector<std::int64_t> sampled_partition(MPI_Comm comm, const DistGraph& g,
                                            const SampledPartitionOptions& opt,
                                            const InitialPartitioner& initial,
                                            SampledPartitionStats& stats, std::uint64_t& sent) {
  auto t0 = Clock::now();
  stats.entries = sum_over_ranks(comm, static_cast<std::int64_t>(g.adj.size()));
  std::vector<std::int64_t> part;
  if (opt.sample_degree > 0) {
    DistGraph s = sample_edges(comm, g, opt.sample_degree, opt.seed, sent);
    stats.sampled_entries = sum_over_ranks(comm, static_cast<std::int64_t>(s.adj.size()));
    stats.sample_s = seconds_since(t0);
    t0 = Clock::now();
    part = initial(comm, s);
  } else {
    stats.sampled_entries = stats.entries;
    part = initial(comm, g);
  }
  stats.initial_s = seconds_since(t0);
  stats.peak_rss_after_initial = peak_rss_bytes();
  t0 = Clock::now();
  stats.initial_cut = dist_edge_cut(comm, g, part, sent);

  std::int64_t total = 0, heaviest = 0;
  for (std::int64_t v = 0; v < g.n(); ++v) {
    total += g.vw(v);
    heaviest = std::max(heaviest, g.vw(v));
  }
  stats.max_part_weight = max_part_weight(sum_over_ranks(comm, total), max_over_ranks(comm, heaviest),
                                          opt.parts, opt.imbalance);
  stats.refine_rounds = refine(comm, g, part, opt.parts, stats.max_part_weight, opt.refine_rounds, sent);
  stats.final_cut = dist_edge_cut(comm, g, part, sent);
  std::vector<std::int64_t> w(static_cast<std::size_t>(opt.parts), 0);
  for (std::int64_t v = 0; v < g.n(); ++v) w[part[v]] += g.vw(v);
  GNN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, w.data(), opt.parts, MPI_INT64_T, MPI_SUM, comm));
  stats.heaviest_part = *std::max_element(w.begin(), w.end());
  stats.refine_s = seconds_since(t0);
  return part;
}

}  // namespace halognn::dist
