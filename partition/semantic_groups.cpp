// Semantic grouping of the boundary graphs (see semantic_groups.hpp and docs/semantic_groups.md).
//
// Everything works on the sparse neighbour structure: similarities are only ever computed between
// a node and the centres it shares a neighbour with, or between clusters sharing a support node
// (found through inverted indexes over V), so no |U| x |U| matrix exists and a k-means iteration
// or a merge pass costs at most one walk of the link's two-hop structure. The elbow search runs
// k-means once, at the largest candidate count, and gets the smaller counts by merging clusters.
#include "partition/semantic_groups.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>

#include <omp.h>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace halognn {
namespace {

/// Cross edges from which a link's k-means and error use several threads.
constexpr std::int64_t kParallelEdges = 50000;

/// V's side of a boundary graph: for each v, the U indices adjacent to it (ascending).
struct VSide {
  std::vector<std::int64_t> ptr;
  std::vector<std::int32_t> col;
};

VSide v_side(const BoundaryGraph& b) {
  VSide s;
  s.ptr.assign(b.v.size() + 1, 0);
  for (const std::int32_t v : b.u_col) ++s.ptr[static_cast<std::size_t>(v) + 1];
  std::partial_sum(s.ptr.begin(), s.ptr.end(), s.ptr.begin());
  s.col.resize(b.u_col.size());
  std::vector<std::int64_t> fill(s.ptr.begin(), s.ptr.end() - 1);
  for (std::size_t u = 0; u + 1 < b.u_ptr.size(); ++u)
    for (std::int64_t e = b.u_ptr[u]; e < b.u_ptr[u + 1]; ++e)
      s.col[static_cast<std::size_t>(fill[static_cast<std::size_t>(b.u_col[e])]++)] =
          static_cast<std::int32_t>(u);
  return s;
}

std::int64_t degree_of(const BoundaryGraph& b, std::int32_t u) {
  return b.u_ptr[static_cast<std::size_t>(u) + 1] - b.u_ptr[static_cast<std::size_t>(u)];
}

/// Union-find over U (0..nu-1) and V (nu..nu+nv-1).
class Components {
 public:
  explicit Components(std::size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  std::size_t find(std::size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void unite(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<std::size_t> parent_;
};

/// Weighted sampling with updates (k-means++ draws proportional to D²).
class Fenwick {
 public:
  explicit Fenwick(std::size_t n) : t_(n + 1, 0.0) {}
  void add(std::size_t i, double d) {
    for (++i; i < t_.size(); i += i & (~i + 1)) t_[i] += d;
  }
  double total() const { return prefix(t_.size() - 1); }
  /// The smallest index whose prefix sum exceeds x (x in [0, total)).
  std::size_t find(double x) const {
    std::size_t pos = 0, step = 1;
    while (step * 2 < t_.size()) step *= 2;
    for (; step > 0; step /= 2)
      if (pos + step < t_.size() && t_[pos + step] <= x) {
        pos += step;
        x -= t_[pos];
      }
    return std::min(pos, t_.size() - 2);
  }

 private:
  double prefix(std::size_t i) const {
    double s = 0;
    for (; i > 0; i -= i & (~i + 1)) s += t_[i];
    return s;
  }
  std::vector<double> t_;
};

/// The centres of a clustering: per cluster, its support in V with the count of members adjacent
/// to each v (CSR, v ascending), its size and the sum of its members' degrees. The mean vector
/// is c = count / size, with |c|₁ = degrees / size.
struct Centres {
  std::vector<std::int64_t> ptr{0};
  std::vector<std::int32_t> v;
  std::vector<std::int32_t> count;
  std::vector<std::int64_t> size, degrees;
};

/// k-means of the U nodes of M2M components in the space of the normalised semantic similarity
/// ŝ(u, c) = S(u, c) / S(u, u) = 2 (A_u · c)² / (|N(u)| (|N(u)| + |c|₁)) ∈ [0, 1] between a node's
/// indicator vector A_u over V and a centre c (a mean of indicator vectors); distance 1 − ŝ.
/// Every step walks the sparse structure only: a node meets the centres that share one of its
/// neighbours, a cluster the clusters that share one of its support's nodes. `work()` counts
/// those meetings (one per (node or cluster, v, centre) triple visited, plus one per edge and
/// support entry scanned), the measure tests use to check that no step goes quadratic.
class SimilarityKMeans {
 public:
  /// @param points  U indices of the nodes to cluster, grouped by component, ascending within
  /// @param first   points[first[c] .. first[c+1]) belong to component c
  SimilarityKMeans(const BoundaryGraph& b, const VSide& vs, std::vector<std::int32_t> points,
                   std::vector<std::int32_t> first, std::uint64_t seed, Rank from, Rank to)
      : b_(b), vs_(vs), points_(std::move(points)), first_(std::move(first)),
        rng_(RngKey{seed, RngPurpose::grouping, static_cast<std::uint64_t>(from),
                    static_cast<std::uint64_t>(to)}),
        parallel_(b.edges() >= kParallelEdges) {
    point_of_u_.assign(b.u.size(), -1);
    for (std::size_t i = 0; i < points_.size(); ++i) point_of_u_[static_cast<std::size_t>(points_[i])] = static_cast<std::int32_t>(i);
  }

  int num_components() const { return static_cast<int>(first_.size()) - 1; }
  std::size_t num_points() const { return points_.size(); }
  std::int64_t work() const { return work_; }

  /// k-means++ centres, one per component first (a random node of each), then drawn with
  /// probability proportional to the squared distance to the nearest centre so far, up to
  /// `k_max` (fewer when every node already is at distance 0).
  std::vector<std::int32_t> seed_centers(std::size_t k_max) {
    const std::size_t n = points_.size();
    std::vector<double> d(n, 1.0);
    Fenwick weights(n);
    for (std::size_t i = 0; i < n; ++i) weights.add(i, 1.0);
    std::vector<std::int32_t> centers;
    std::vector<std::int32_t> overlap(n, 0), touched;
    auto add_center = [&](std::size_t c) {
      centers.push_back(static_cast<std::int32_t>(c));
      const std::int32_t cu = points_[c];
      const double nc = static_cast<double>(degree_of(b_, cu));
      for (std::int64_t e = b_.u_ptr[static_cast<std::size_t>(cu)]; e < b_.u_ptr[static_cast<std::size_t>(cu) + 1]; ++e) {
        const std::int32_t v = b_.u_col[static_cast<std::size_t>(e)];
        work_ += vs_.ptr[static_cast<std::size_t>(v) + 1] - vs_.ptr[static_cast<std::size_t>(v)];
        for (std::int64_t f = vs_.ptr[static_cast<std::size_t>(v)]; f < vs_.ptr[static_cast<std::size_t>(v) + 1]; ++f) {
          const std::int32_t p = point_of_u_[static_cast<std::size_t>(vs_.col[static_cast<std::size_t>(f)])];
          if (p < 0) continue;
          if (overlap[static_cast<std::size_t>(p)]++ == 0) touched.push_back(p);
        }
      }
      for (const std::int32_t p : touched) {
        const double nu = static_cast<double>(degree_of(b_, points_[static_cast<std::size_t>(p)]));
        const double ov = overlap[static_cast<std::size_t>(p)];
        const double dist = std::max(0.0, 1.0 - 2.0 * ov * ov / (nu * (nu + nc)));
        overlap[static_cast<std::size_t>(p)] = 0;
        if (dist < d[static_cast<std::size_t>(p)]) {
          weights.add(static_cast<std::size_t>(p), dist * dist - d[static_cast<std::size_t>(p)] * d[static_cast<std::size_t>(p)]);
          d[static_cast<std::size_t>(p)] = dist;
        }
      }
      touched.clear();
      if (d[c] > 0) {
        weights.add(c, -d[c] * d[c]);
        d[c] = 0;
      }
    };
    std::uint64_t draw = 0;
    for (int c = 0; c < num_components(); ++c) {
      const auto size = static_cast<std::size_t>(first_[c + 1] - first_[c]);
      const auto pick = static_cast<std::size_t>(rng_.uniform_double(draw++, 0) * static_cast<double>(size));
      add_center(static_cast<std::size_t>(first_[c]) + std::min(pick, size - 1));
    }
    while (centers.size() < k_max) {
      const double total = weights.total();
      if (!(total > 1e-12)) break;
      const double x = rng_.uniform_double(draw++, 0) * total;
      const std::size_t c = weights.find(x);
      if (d[c] <= 0) break;  // rounding: nothing left worth a centre
      add_center(c);
    }
    return centers;
  }

  /// Lloyd's iterations from the clustering `assign` (a cluster in [0, k) per point, -1: none;
  /// the centres start as the means of their members). Each iteration moves every point to the
  /// centre of largest ŝ among those it shares a neighbour with (a point sharing none is an
  /// orphan, -1: a group by itself, exact as a star), then makes the centres the means of their
  /// members. Stops when at most one point in a thousand moved (none below 1000 points) or after
  /// `max_iterations` assignment steps. `assign` receives the result.
  void lloyd(std::vector<std::int32_t>& assign, std::size_t k, int max_iterations) {
    const std::size_t n = points_.size(), nv = b_.v.size();
    const auto settled = static_cast<std::int64_t>(n / 1000);
    const int threads = omp_get_max_threads();
    for (int it = 0;; ++it) {
      const Centres c = centres_of(assign, k);
      // Inverted index: for each v, the centres whose support contains it, with c_v.
      std::vector<std::int64_t> inv_ptr(nv + 1, 0);
      for (const std::int32_t v : c.v) ++inv_ptr[static_cast<std::size_t>(v) + 1];
      std::partial_sum(inv_ptr.begin(), inv_ptr.end(), inv_ptr.begin());
      std::vector<std::int32_t> inv_g(c.v.size());
      std::vector<float> inv_w(c.v.size());
      {
        std::vector<std::int64_t> fill(inv_ptr.begin(), inv_ptr.end() - 1);
        for (std::size_t g = 0; g < k; ++g)
          for (std::int64_t e = c.ptr[g]; e < c.ptr[g + 1]; ++e) {
            const auto at = static_cast<std::size_t>(fill[static_cast<std::size_t>(c.v[static_cast<std::size_t>(e)])]++);
            inv_g[at] = static_cast<std::int32_t>(g);
            inv_w[at] = static_cast<float>(c.count[static_cast<std::size_t>(e)]) / static_cast<float>(c.size[g]);
          }
      }
      std::vector<double> norm(k, 0.0);
      for (std::size_t g = 0; g < k; ++g)
        if (c.size[g] > 0) norm[g] = static_cast<double>(c.degrees[g]) / static_cast<double>(c.size[g]);
      // Assignment step (parallel over points; each point's choice is independent).
      std::int64_t moved = 0, work = static_cast<std::int64_t>(c.v.size());
#pragma omp parallel num_threads(threads) reduction(+ : moved, work) if (parallel_)
      {
        std::vector<double> acc(k, 0.0);
        std::vector<std::int32_t> touched;
#pragma omp for schedule(dynamic, 64)
        for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
          const std::int32_t u = points_[static_cast<std::size_t>(i)];
          for (std::int64_t e = b_.u_ptr[static_cast<std::size_t>(u)]; e < b_.u_ptr[static_cast<std::size_t>(u) + 1]; ++e) {
            const std::int32_t v = b_.u_col[static_cast<std::size_t>(e)];
            work += 1 + inv_ptr[static_cast<std::size_t>(v) + 1] - inv_ptr[static_cast<std::size_t>(v)];
            for (std::int64_t f = inv_ptr[static_cast<std::size_t>(v)]; f < inv_ptr[static_cast<std::size_t>(v) + 1]; ++f) {
              const std::int32_t g = inv_g[static_cast<std::size_t>(f)];
              if (acc[static_cast<std::size_t>(g)] == 0.0) touched.push_back(g);
              acc[static_cast<std::size_t>(g)] += inv_w[static_cast<std::size_t>(f)];
            }
          }
          const double nu = static_cast<double>(degree_of(b_, u));
          double best = -1;
          std::int32_t best_g = -1;
          for (const std::int32_t g : touched) {
            const double dot = acc[static_cast<std::size_t>(g)];
            const double s = 2.0 * dot * dot / (nu * (nu + norm[static_cast<std::size_t>(g)]));
            if (s > best || (s == best && (best_g < 0 || g < best_g))) {
              best = s;
              best_g = g;
            }
            acc[static_cast<std::size_t>(g)] = 0.0;
          }
          touched.clear();
          moved += best_g != assign[static_cast<std::size_t>(i)];
          assign[static_cast<std::size_t>(i)] = best_g;
        }
      }
      work_ += work;
      if (moved <= settled || it + 1 >= max_iterations) break;
    }
  }

  /// The within-group inertia Σ (1 − ŝ(u, c_g))² of the clustering `assign` with k clusters,
  /// every point measured against its own cluster's mean (an orphan counts 1), per cluster.
  std::vector<double> cluster_inertia(const std::vector<std::int32_t>& assign, std::size_t k) {
    const Centres c = centres_of(assign, k);
    std::vector<std::int64_t> m_ptr;
    std::vector<std::int32_t> members;
    members_of(assign, k, m_ptr, members);
    std::vector<double> out(k, 0.0);
    std::int64_t work = 0;
#pragma omp parallel reduction(+ : work) if (parallel_)
    {
      std::vector<float> dense(b_.v.size(), 0.0f);
#pragma omp for schedule(dynamic, 16)
      for (std::int64_t g = 0; g < static_cast<std::int64_t>(k); ++g)
        out[static_cast<std::size_t>(g)] = inertia_of(c, static_cast<std::size_t>(g), members.data() + m_ptr[static_cast<std::size_t>(g)],
                                                      members.data() + m_ptr[static_cast<std::size_t>(g) + 1], dense, work);
    }
    work_ += work;
    return out;
  }

  /// Agglomerative merging after k-means, for the inertia curve of every count below the one
  /// k-means ran at. From the clustering `assign` (clusters 0..k-1, every one non-empty), passes
  /// merge pairs of clusters that share a support node: each cluster proposes its most similar
  /// partner (the normalised semantic similarity of the two means), and proposals are taken
  /// best first while both ends are unmatched and more merges are wanted. After reaching each
  /// count of `targets` (descending), (count, inertia) goes to `curve`. Stops early when no two
  /// clusters share a support node. Returns the merges in order, each as (kept, absorbed).
  std::vector<std::pair<std::int32_t, std::int32_t>> merge_down(
      const std::vector<std::int32_t>& assign, std::size_t k, const std::vector<std::size_t>& targets,
      double orphan_inertia, std::vector<std::pair<int, double>>& curve) {
    // Live clusters: sparse count vectors, members, and their inertia.
    const Centres c0 = centres_of(assign, k);
    std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>> vec(k);
    for (std::size_t g = 0; g < k; ++g)
      for (std::int64_t e = c0.ptr[g]; e < c0.ptr[g + 1]; ++e)
        vec[g].emplace_back(c0.v[static_cast<std::size_t>(e)], c0.count[static_cast<std::size_t>(e)]);
    std::vector<std::int64_t> size = c0.size, degrees = c0.degrees;
    std::vector<std::vector<std::int32_t>> members(k);
    for (std::size_t i = 0; i < assign.size(); ++i)
      if (assign[i] >= 0) members[static_cast<std::size_t>(assign[i])].push_back(points_[i]);
    std::vector<double> inertia = cluster_inertia(assign, k);
    std::vector<char> alive(k, 1);
    std::size_t live = k;
    std::vector<std::pair<std::int32_t, std::int32_t>> merges;
    const std::size_t nv = b_.v.size();
    auto total_inertia = [&] {
      double s = orphan_inertia;
      for (std::size_t g = 0; g < k; ++g)
        if (alive[g]) s += inertia[g];
      return s;
    };
    for (const std::size_t target : targets) {
      int passes = 0;
      while (live > target) {
        // Inverted index over the live clusters' supports.
        std::vector<std::int64_t> inv_ptr(nv + 1, 0);
        for (std::size_t g = 0; g < k; ++g)
          if (alive[g])
            for (const auto& [v, cnt] : vec[g]) ++inv_ptr[static_cast<std::size_t>(v) + 1];
        std::partial_sum(inv_ptr.begin(), inv_ptr.end(), inv_ptr.begin());
        std::vector<std::int32_t> inv_g(static_cast<std::size_t>(inv_ptr.back()));
        std::vector<std::int32_t> inv_c(inv_g.size());
        {
          std::vector<std::int64_t> fill(inv_ptr.begin(), inv_ptr.end() - 1);
          for (std::size_t g = 0; g < k; ++g)
            if (alive[g])
              for (const auto& [v, cnt] : vec[g]) {
                const auto at = static_cast<std::size_t>(fill[static_cast<std::size_t>(v)]++);
                inv_g[at] = static_cast<std::int32_t>(g);
                inv_c[at] = cnt;
              }
        }
        // Per cluster: ‖c‖² and |c|₁ of its mean.
        std::vector<double> sq(k, 0.0), l1(k, 0.0);
        for (std::size_t g = 0; g < k; ++g)
          if (alive[g]) {
            double s = 0;
            for (const auto& [v, cnt] : vec[g]) s += static_cast<double>(cnt) * cnt;
            const double n = static_cast<double>(size[g]);
            sq[g] = s / (n * n);
            l1[g] = static_cast<double>(degrees[g]) / n;
          }
        // Every live cluster's best partner (parallel; each choice is independent).
        std::vector<std::int32_t> partner(k, -1);
        std::vector<double> score(k, -1.0);
        std::int64_t work = static_cast<std::int64_t>(inv_g.size());
#pragma omp parallel reduction(+ : work) if (parallel_)
        {
          std::vector<double> dot(k, 0.0);
          std::vector<std::int32_t> touched;
#pragma omp for schedule(dynamic, 16)
          for (std::int64_t a = 0; a < static_cast<std::int64_t>(k); ++a) {
            if (!alive[static_cast<std::size_t>(a)]) continue;
            for (const auto& [v, cnt] : vec[static_cast<std::size_t>(a)]) {
              work += 1 + inv_ptr[static_cast<std::size_t>(v) + 1] - inv_ptr[static_cast<std::size_t>(v)];
              for (std::int64_t f = inv_ptr[static_cast<std::size_t>(v)]; f < inv_ptr[static_cast<std::size_t>(v) + 1]; ++f) {
                const std::int32_t bb = inv_g[static_cast<std::size_t>(f)];
                if (bb == a) continue;
                if (dot[static_cast<std::size_t>(bb)] == 0.0) touched.push_back(bb);
                dot[static_cast<std::size_t>(bb)] += static_cast<double>(cnt) * inv_c[static_cast<std::size_t>(f)];
              }
            }
            const double na = static_cast<double>(size[static_cast<std::size_t>(a)]);
            for (const std::int32_t bb : touched) {
              const auto bi = static_cast<std::size_t>(bb), ai = static_cast<std::size_t>(a);
              // Normalised semantic similarity of the two means: S(a, b) / sqrt(S(a, a) S(b, b))
              // with S(x, y) = (x · y)² / (|x|₁ + |y|₁), in [0, 1].
              const double xy = dot[bi] / (na * static_cast<double>(size[bi]));
              const double s = 2.0 * std::sqrt(l1[ai] * l1[bi]) * xy * xy / ((l1[ai] + l1[bi]) * sq[ai] * sq[bi]);
              if (s > score[ai] || (s == score[ai] && bb < partner[ai])) {
                score[ai] = s;
                partner[ai] = bb;
              }
              dot[bi] = 0.0;
            }
            touched.clear();
          }
        }
        work_ += work;
        // Greedy matching, best proposals first (ties by cluster ids: deterministic).
        std::vector<std::int32_t> order;
        for (std::size_t g = 0; g < k; ++g)
          if (alive[g] && partner[g] >= 0) order.push_back(static_cast<std::int32_t>(g));
        if (order.empty()) return merges;  // nothing shares a support node any more
        std::sort(order.begin(), order.end(), [&](std::int32_t x, std::int32_t y) {
          const auto xi = static_cast<std::size_t>(x), yi = static_cast<std::size_t>(y);
          if (score[xi] != score[yi]) return score[xi] > score[yi];
          return x < y;
        });
        // Greedy matching, best proposals first: a proposal a -> b is taken while neither end
        // has merged in this pass. From the third pass towards one count on, also stars: a
        // proposal is taken when b has absorbed (not been absorbed) in this pass. Matching
        // merges better (lower inertia at the same count than stars on Cora and Coauthor-CS)
        // but can merge as little as one pair per pass when many clusters propose the same
        // one; the stars keep the passes per count few.
        std::vector<char> role(k, 0);  // 0: untouched, 1: absorbs, 2: absorbed
        std::vector<std::pair<std::int32_t, std::int32_t>> pass;  // (keeper, absorbed)
        ++passes;
        for (const bool star : {false, true})
          for (const std::int32_t a : order) {
            if (star && passes < 3) break;
            if (live - pass.size() <= target) break;
            const std::int32_t bb = partner[static_cast<std::size_t>(a)];
            const char rb = role[static_cast<std::size_t>(bb)];
            if (role[static_cast<std::size_t>(a)] != 0 || rb == 2 || (rb == 1 && !star)) continue;
            role[static_cast<std::size_t>(a)] = 2;
            role[static_cast<std::size_t>(bb)] = 1;
            pass.emplace_back(bb, a);
          }
        // The absorbed clusters of each keeper, in the order they were taken.
        std::vector<std::int32_t> keepers, slot(k, -1);
        for (const auto& [keep, gone] : pass)
          if (slot[static_cast<std::size_t>(keep)] < 0) {
            slot[static_cast<std::size_t>(keep)] = static_cast<std::int32_t>(keepers.size());
            keepers.push_back(keep);
          }
        std::vector<std::int64_t> a_ptr(keepers.size() + 1, 0);
        for (const auto& [keep, gone] : pass) ++a_ptr[static_cast<std::size_t>(slot[static_cast<std::size_t>(keep)]) + 1];
        std::partial_sum(a_ptr.begin(), a_ptr.end(), a_ptr.begin());
        std::vector<std::int32_t> absorbed(pass.size());
        {
          std::vector<std::int64_t> fill(a_ptr.begin(), a_ptr.end() - 1);
          for (const auto& [keep, gone] : pass)
            absorbed[static_cast<std::size_t>(fill[static_cast<std::size_t>(slot[static_cast<std::size_t>(keep)])]++)] = gone;
        }
        std::int64_t merge_work = 0;
#pragma omp parallel reduction(+ : merge_work) if (parallel_)
        {
          std::vector<float> dense(nv, 0.0f);
          std::vector<std::int32_t> count(nv, 0), touched;
#pragma omp for schedule(dynamic, 4)
          for (std::int64_t s = 0; s < static_cast<std::int64_t>(keepers.size()); ++s) {
            const auto ki = static_cast<std::size_t>(keepers[static_cast<std::size_t>(s)]);
            auto add = [&](const std::vector<std::pair<std::int32_t, std::int32_t>>& x) {
              merge_work += static_cast<std::int64_t>(x.size());
              for (const auto& [v, cnt] : x) {
                if (count[static_cast<std::size_t>(v)] == 0) touched.push_back(v);
                count[static_cast<std::size_t>(v)] += cnt;
              }
            };
            add(vec[ki]);
            for (std::int64_t m = a_ptr[static_cast<std::size_t>(s)]; m < a_ptr[static_cast<std::size_t>(s) + 1]; ++m) {
              const auto gi = static_cast<std::size_t>(absorbed[static_cast<std::size_t>(m)]);
              add(vec[gi]);
              std::vector<std::pair<std::int32_t, std::int32_t>>().swap(vec[gi]);
              members[ki].insert(members[ki].end(), members[gi].begin(), members[gi].end());
              std::vector<std::int32_t>().swap(members[gi]);
              size[ki] += size[gi];
              degrees[ki] += degrees[gi];
            }
            std::sort(touched.begin(), touched.end());
            vec[ki].clear();
            for (const std::int32_t v : touched) {
              vec[ki].emplace_back(v, count[static_cast<std::size_t>(v)]);
              count[static_cast<std::size_t>(v)] = 0;
            }
            touched.clear();
            inertia[ki] = inertia_of_members(vec[ki], size[ki], degrees[ki], members[ki], dense, merge_work);
          }
        }
        work_ += merge_work;
        for (const auto& [keep, gone] : pass) {
          alive[static_cast<std::size_t>(gone)] = 0;
          merges.emplace_back(keep, gone);
        }
        live -= pass.size();
      }
      curve.emplace_back(static_cast<int>(live), total_inertia());
    }
    return merges;
  }

 private:
  /// The centres of clustering `assign` (k clusters; empty ones have size 0).
  Centres centres_of(const std::vector<std::int32_t>& assign, std::size_t k) {
    std::vector<std::int64_t> m_ptr;
    std::vector<std::int32_t> members;
    members_of(assign, k, m_ptr, members);
    Centres c;
    c.size.assign(k, 0);
    c.degrees.assign(k, 0);
    std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>> next(k);
    std::int64_t work = 0;
#pragma omp parallel reduction(+ : work) if (parallel_)
    {
      std::vector<std::int32_t> count(b_.v.size(), 0), touched;
#pragma omp for schedule(dynamic, 16)
      for (std::int64_t g = 0; g < static_cast<std::int64_t>(k); ++g) {
        const auto gi = static_cast<std::size_t>(g);
        c.size[gi] = m_ptr[gi + 1] - m_ptr[gi];
        for (std::int64_t m = m_ptr[gi]; m < m_ptr[gi + 1]; ++m) {
          const std::int32_t u = members[static_cast<std::size_t>(m)];
          c.degrees[gi] += degree_of(b_, u);
          work += degree_of(b_, u);
          for (std::int64_t e = b_.u_ptr[static_cast<std::size_t>(u)]; e < b_.u_ptr[static_cast<std::size_t>(u) + 1]; ++e) {
            const std::int32_t v = b_.u_col[static_cast<std::size_t>(e)];
            if (count[static_cast<std::size_t>(v)]++ == 0) touched.push_back(v);
          }
        }
        std::sort(touched.begin(), touched.end());
        next[gi].reserve(touched.size());
        for (const std::int32_t v : touched) {
          next[gi].emplace_back(v, count[static_cast<std::size_t>(v)]);
          count[static_cast<std::size_t>(v)] = 0;
        }
        touched.clear();
      }
    }
    work_ += work;
    for (std::size_t g = 0; g < k; ++g) {
      for (const auto& [v, cnt] : next[g]) {
        c.v.push_back(v);
        c.count.push_back(cnt);
      }
      c.ptr.push_back(static_cast<std::int64_t>(c.v.size()));
    }
    return c;
  }

  /// Members of each cluster as U indices, CSR over clusters, in point order.
  void members_of(const std::vector<std::int32_t>& assign, std::size_t k,
                  std::vector<std::int64_t>& m_ptr, std::vector<std::int32_t>& members) const {
    m_ptr.assign(k + 1, 0);
    for (const std::int32_t g : assign)
      if (g >= 0) ++m_ptr[static_cast<std::size_t>(g) + 1];
    std::partial_sum(m_ptr.begin(), m_ptr.end(), m_ptr.begin());
    members.resize(static_cast<std::size_t>(m_ptr.back()));
    std::vector<std::int64_t> fill(m_ptr.begin(), m_ptr.end() - 1);
    for (std::size_t i = 0; i < assign.size(); ++i)
      if (assign[i] >= 0) members[static_cast<std::size_t>(fill[static_cast<std::size_t>(assign[i])]++)] = points_[i];
  }

  /// Σ (1 − ŝ(u, c))² over the members [first, last) of cluster g of `c`; `dense` (zero on entry
  /// and on return) holds the centre while it is measured.
  double inertia_of(const Centres& c, std::size_t g, const std::int32_t* first, const std::int32_t* last,
                    std::vector<float>& dense, std::int64_t& work) const {
    if (first == last) return 0.0;
    for (std::int64_t e = c.ptr[g]; e < c.ptr[g + 1]; ++e)
      dense[static_cast<std::size_t>(c.v[static_cast<std::size_t>(e)])] = static_cast<float>(c.count[static_cast<std::size_t>(e)]);
    const double out = members_inertia(static_cast<double>(c.size[g]), static_cast<double>(c.degrees[g]), first, last, dense, work);
    for (std::int64_t e = c.ptr[g]; e < c.ptr[g + 1]; ++e) dense[static_cast<std::size_t>(c.v[static_cast<std::size_t>(e)])] = 0.0f;
    work += c.ptr[g + 1] - c.ptr[g];
    return out;
  }

  double inertia_of_members(const std::vector<std::pair<std::int32_t, std::int32_t>>& vec, std::int64_t size,
                            std::int64_t degrees, const std::vector<std::int32_t>& members,
                            std::vector<float>& dense, std::int64_t& work) const {
    for (const auto& [v, cnt] : vec) dense[static_cast<std::size_t>(v)] = static_cast<float>(cnt);
    const double out = members_inertia(static_cast<double>(size), static_cast<double>(degrees), members.data(),
                                       members.data() + members.size(), dense, work);
    for (const auto& [v, cnt] : vec) dense[static_cast<std::size_t>(v)] = 0.0f;
    work += static_cast<std::int64_t>(vec.size());
    return out;
  }

  /// Σ (1 − ŝ(u, c))² over members, with the centre's counts in `dense` (c = dense / size).
  double members_inertia(double size, double degrees, const std::int32_t* first, const std::int32_t* last,
                         const std::vector<float>& dense, std::int64_t& work) const {
    const double norm = degrees / size;
    double s = 0;
    for (const std::int32_t* m = first; m != last; ++m) {
      const std::int32_t u = *m;
      double dot = 0;
      for (std::int64_t e = b_.u_ptr[static_cast<std::size_t>(u)]; e < b_.u_ptr[static_cast<std::size_t>(u) + 1]; ++e)
        dot += dense[static_cast<std::size_t>(b_.u_col[static_cast<std::size_t>(e)])];
      dot /= size;
      const double nu = static_cast<double>(degree_of(b_, u));
      const double d = std::max(0.0, 1.0 - std::min(1.0, 2.0 * dot * dot / (nu * (nu + norm))));
      s += d * d;
      work += degree_of(b_, u);
    }
    return s;
  }

  const BoundaryGraph& b_;
  const VSide& vs_;
  std::vector<std::int32_t> points_, first_;
  std::vector<std::int32_t> point_of_u_;
  CounterRng rng_;
  bool parallel_;
  std::int64_t work_ = 0;
};

/// Renumbers the clusters of `assign` 0, 1, ... in order of first appearance (-1 stays);
/// returns how many there are.
std::size_t compact_clusters(std::vector<std::int32_t>& assign) {
  std::int32_t top = -1;
  for (const std::int32_t g : assign) top = std::max(top, g);
  std::vector<std::int32_t> id(static_cast<std::size_t>(top) + 1, -1);
  std::int32_t next = 0;
  for (std::int32_t& g : assign)
    if (g >= 0) {
      std::int32_t& r = id[static_cast<std::size_t>(g)];
      if (r < 0) r = next++;
      g = r;
    }
  return static_cast<std::size_t>(next);
}

/// The M2M group counts the elbow search tries: k_min times 1, 1.5, 2, 3, 4, 6, ... up to the
/// number of nodes.
std::vector<std::size_t> candidate_counts(std::size_t k_min, std::size_t points) {
  std::vector<std::size_t> ks;
  for (double f = 1;; f *= (ks.size() % 2 == 0 ? 1.5 : 4.0 / 3.0)) {
    const auto k = std::min(points, static_cast<std::size_t>(std::llround(static_cast<double>(k_min) * f)));
    if (ks.empty() || k > ks.back()) ks.push_back(k);
    if (k >= points || ks.size() >= 16) break;
  }
  return ks;
}

}  // namespace

const char* to_string(ConnectionKind k) {
  switch (k) {
    case ConnectionKind::o2o: return "o2o";
    case ConnectionKind::o2m: return "o2m";
    case ConnectionKind::m2o: return "m2o";
    case ConnectionKind::m2m: return "m2m";
  }
  return "?";
}

std::vector<BoundaryGraph> boundary_graphs(const GlobalGraph& g, const std::vector<Rank>& parts,
                                           Rank num_parts) {
  // One pass over the vertices in ascending id: each cross edge (u, v) goes to link
  // (part of u, part of v), so every link's U comes out ascending.
  const auto k = static_cast<std::size_t>(num_parts);
  std::vector<BoundaryGraph> links(k * k);
  std::vector<std::vector<GlobalId>> targets(k * k);
  for (std::size_t i = 0; i < links.size(); ++i) {
    links[i].from = static_cast<Rank>(i / k);
    links[i].to = static_cast<Rank>(i % k);
  }
  std::vector<std::size_t> touched;
  for (GlobalId u = 0; u < g.num_nodes; ++u) {
    const Rank own = parts[static_cast<std::size_t>(u)];
    for (EdgeOffset e = g.row_ptr[static_cast<std::size_t>(u)]; e < g.row_ptr[static_cast<std::size_t>(u) + 1]; ++e) {
      const GlobalId v = g.col[static_cast<std::size_t>(e)];
      const Rank q = parts[static_cast<std::size_t>(v)];
      if (q == own) continue;
      const std::size_t link = static_cast<std::size_t>(own) * k + static_cast<std::size_t>(q);
      if (links[link].u.empty() || links[link].u.back() != u) {
        links[link].u.push_back(u);
        touched.push_back(link);
      }
      targets[link].push_back(v);
    }
    for (const std::size_t link : touched) links[link].u_ptr.push_back(static_cast<std::int64_t>(targets[link].size()));
    touched.clear();
  }
  std::vector<BoundaryGraph> out;
  for (std::size_t i = 0; i < links.size(); ++i) {
    if (links[i].u.empty()) continue;
    BoundaryGraph& b = links[i];
    const std::vector<GlobalId>& t = targets[i];
    b.v = t;
    std::sort(b.v.begin(), b.v.end());
    b.v.erase(std::unique(b.v.begin(), b.v.end()), b.v.end());
    b.u_col.resize(t.size());
    for (std::size_t e = 0; e < t.size(); ++e)
      b.u_col[e] = static_cast<std::int32_t>(std::lower_bound(b.v.begin(), b.v.end(), t[e]) - b.v.begin());
    std::vector<GlobalId>().swap(targets[i]);
    out.push_back(std::move(b));
  }
  return out;
}

double grouping_error(const BoundaryGraph& b, const std::vector<std::int32_t>& group_of) {
  const std::size_t nu = b.u.size();
  GNN_ASSERT(group_of.size() == nu, "grouping of ", group_of.size(), " nodes for ", nu);
  if (b.edges() == 0) return 0.0;
  std::int32_t groups = 0;
  for (const std::int32_t g : group_of) groups = std::max(groups, g + 1);
  std::vector<std::int64_t> ptr(static_cast<std::size_t>(groups) + 1, 0);
  for (const std::int32_t g : group_of)
    if (g >= 0) ++ptr[static_cast<std::size_t>(g) + 1];
  std::partial_sum(ptr.begin(), ptr.end(), ptr.begin());
  std::vector<std::int32_t> members(static_cast<std::size_t>(ptr.back()));
  {
    std::vector<std::int64_t> fill(ptr.begin(), ptr.end() - 1);
    for (std::size_t u = 0; u < nu; ++u)
      if (group_of[u] >= 0) members[static_cast<std::size_t>(fill[static_cast<std::size_t>(group_of[u])]++)] = static_cast<std::int32_t>(u);
  }
  double err2 = 0;
  for (std::size_t u = 0; u < nu; ++u)
    if (group_of[u] < 0) err2 += static_cast<double>(degree_of(b, static_cast<std::int32_t>(u)));
  // Per group, summed in group order afterwards: the same value for every thread count.
  std::vector<double> group_err2(static_cast<std::size_t>(groups), 0.0);
#pragma omp parallel if (b.edges() >= kParallelEdges)
  {
    std::vector<std::int32_t> dv(b.v.size(), 0), touched;
#pragma omp for schedule(dynamic, 16)
    for (std::int64_t g = 0; g < groups; ++g) {
      double eg = 0, sum_du2 = 0;
      for (std::int64_t m = ptr[static_cast<std::size_t>(g)]; m < ptr[static_cast<std::size_t>(g) + 1]; ++m) {
        const std::int32_t u = members[static_cast<std::size_t>(m)];
        const double du = static_cast<double>(degree_of(b, u));
        eg += du;
        sum_du2 += du * du;
        for (std::int64_t e = b.u_ptr[static_cast<std::size_t>(u)]; e < b.u_ptr[static_cast<std::size_t>(u) + 1]; ++e) {
          const std::int32_t v = b.u_col[static_cast<std::size_t>(e)];
          if (dv[static_cast<std::size_t>(v)]++ == 0) touched.push_back(v);
        }
      }
      if (eg == 0) continue;
      double sum_dv2 = 0;
      for (const std::int32_t v : touched) sum_dv2 += static_cast<double>(dv[static_cast<std::size_t>(v)]) * dv[static_cast<std::size_t>(v)];
      // ‖B_g − B̃_g‖² = Σ_all b̃² − Σ_edges b̃² + Σ_edges (1 − b̃)², with b̃_vu = D(v) D(u) / |E_g|.
      double edges_term = 0;
      for (std::int64_t m = ptr[static_cast<std::size_t>(g)]; m < ptr[static_cast<std::size_t>(g) + 1]; ++m) {
        const std::int32_t u = members[static_cast<std::size_t>(m)];
        const double du = static_cast<double>(degree_of(b, u));
        for (std::int64_t e = b.u_ptr[static_cast<std::size_t>(u)]; e < b.u_ptr[static_cast<std::size_t>(u) + 1]; ++e) {
          const double bt = dv[static_cast<std::size_t>(b.u_col[static_cast<std::size_t>(e)])] * du / eg;
          edges_term += (1 - bt) * (1 - bt) - bt * bt;
        }
      }
      group_err2[static_cast<std::size_t>(g)] = sum_dv2 * sum_du2 / (eg * eg) + edges_term;
      for (const std::int32_t v : touched) dv[static_cast<std::size_t>(v)] = 0;
      touched.clear();
    }
  }
  for (const double x : group_err2) err2 += x;
  return std::sqrt(std::max(0.0, err2) / static_cast<double>(b.edges()));
}

std::size_t elbow_index(const std::vector<std::pair<int, double>>& curve) {
  if (curve.size() < 3) return 0;
  const double x0 = curve.front().first, x1 = curve.back().first;
  double ymax = 0, ymin = curve.front().second;
  for (const auto& [k, y] : curve) {
    ymax = std::max(ymax, y);
    ymin = std::min(ymin, y);
  }
  if (x1 <= x0 || ymax <= ymin) return 0;
  auto px = [&](std::size_t i) { return (curve[i].first - x0) / (x1 - x0); };
  auto py = [&](std::size_t i) { return (curve[i].second - ymin) / (ymax - ymin); };
  std::size_t best = 0;
  double best_k = -1;
  for (std::size_t i = 1; i + 1 < curve.size(); ++i) {
    // Menger curvature of three consecutive points: 4 * area / (product of the side lengths).
    const double ax = px(i - 1), ay = py(i - 1), bx = px(i), by = py(i), cx = px(i + 1), cy = py(i + 1);
    const double area2 = std::fabs((bx - ax) * (cy - ay) - (by - ay) * (cx - ax));
    const double ab = std::hypot(bx - ax, by - ay), bc = std::hypot(cx - bx, cy - by),
                 ca = std::hypot(ax - cx, ay - cy);
    const double kappa = ab * bc * ca > 0 ? 2.0 * area2 / (ab * bc * ca) : 0.0;
    if (kappa > best_k) {
      best_k = kappa;
      best = i;
    }
  }
  return best;
}

LinkGroups group_link(const BoundaryGraph& b, const GroupingConfig& cfg) {
  GNN_CHECK_CONFIG(cfg.groups_per_link >= 0, "--groups-per-link must be non-negative");
  GNN_CHECK_CONFIG(cfg.max_iterations >= 1, "grouping needs at least one k-means iteration");
  LinkGroups out;
  out.from = b.from;
  out.to = b.to;
  const std::size_t nu = b.u.size(), nv = b.v.size();
  out.u_nodes = static_cast<std::int64_t>(nu);
  out.v_nodes = static_cast<std::int64_t>(nv);
  out.edges = b.edges();
  if (nu == 0) return out;
  const VSide vs = v_side(b);

  // Components of U ∪ V, each classified by its sizes.
  Components comp(nu + nv);
  for (std::size_t u = 0; u < nu; ++u)
    for (std::int64_t e = b.u_ptr[u]; e < b.u_ptr[u + 1]; ++e)
      comp.unite(u, nu + static_cast<std::size_t>(b.u_col[static_cast<std::size_t>(e)]));
  std::vector<std::int64_t> cu(nu + nv, 0), cv(nu + nv, 0);
  for (std::size_t u = 0; u < nu; ++u) ++cu[comp.find(u)];
  for (std::size_t v = 0; v < nv; ++v) ++cv[comp.find(nu + v)];
  auto kind_of = [&](std::size_t root) {
    if (cu[root] == 1) return cv[root] == 1 ? ConnectionKind::o2o : ConnectionKind::o2m;
    return cv[root] == 1 ? ConnectionKind::m2o : ConnectionKind::m2m;
  };

  // group_of[u]: final group index; components that are groups as they are get theirs now.
  std::vector<std::int32_t> group_of(nu, -1);
  std::vector<ConnectionKind> kinds;
  std::vector<std::int32_t> comp_group(nu + nv, -1);
  std::vector<std::int32_t> m2m_points, m2m_first;
  std::vector<std::int32_t> m2m_index(nu + nv, -1);
  std::vector<std::vector<std::int32_t>> m2m_members;
  for (std::size_t u = 0; u < nu; ++u) {
    const std::size_t root = comp.find(u);
    const ConnectionKind k = kind_of(root);
    out.edges_by_kind[static_cast<std::size_t>(k)] += degree_of(b, static_cast<std::int32_t>(u));
    if (k == ConnectionKind::m2m) {
      if (m2m_index[root] < 0) {
        m2m_index[root] = static_cast<std::int32_t>(m2m_members.size());
        m2m_members.emplace_back();
      }
      m2m_members[static_cast<std::size_t>(m2m_index[root])].push_back(static_cast<std::int32_t>(u));
      continue;
    }
    if (k == ConnectionKind::o2o && cfg.drop_o2o) {
      ++out.dropped_rows;
      continue;
    }
    if (comp_group[root] < 0) {
      comp_group[root] = static_cast<std::int32_t>(kinds.size());
      kinds.push_back(k);
    }
    group_of[u] = comp_group[root];
  }
  out.m2m_components = static_cast<int>(m2m_members.size());

  if (!m2m_members.empty()) {
    m2m_first.push_back(0);
    for (const auto& members : m2m_members) {
      m2m_points.insert(m2m_points.end(), members.begin(), members.end());
      m2m_first.push_back(static_cast<std::int32_t>(m2m_points.size()));
    }
    SimilarityKMeans km(b, vs, m2m_points, m2m_first, cfg.seed, b.from, b.to);
    const std::size_t points = km.num_points(), k_min = m2m_members.size();
    std::vector<std::size_t> ks;
    if (cfg.groups_per_link > 0) {
      ks.push_back(std::clamp<std::size_t>(static_cast<std::size_t>(cfg.groups_per_link), k_min, points));
    } else {
      ks = candidate_counts(k_min, points);
    }
    // One k-means run, at the largest count, from k-means++ seeds.
    const std::vector<std::int32_t> seeds = km.seed_centers(ks.back());
    std::vector<std::int32_t> assign(points, -1);
    for (std::size_t g = 0; g < seeds.size(); ++g) assign[static_cast<std::size_t>(seeds[g])] = static_cast<std::int32_t>(g);
    km.lloyd(assign, seeds.size(), cfg.max_iterations);
    std::size_t k = compact_clusters(assign);
    const double orphans = static_cast<double>(std::count(assign.begin(), assign.end(), -1));
    double top = orphans;
    for (const double x : km.cluster_inertia(assign, k)) top += x;
    if (ks.size() > 1) {
      // The curve below k from merging its clusters pairwise (SimilarityKMeans::merge_down).
      std::vector<std::size_t> targets;
      for (auto it = ks.rbegin(); it != ks.rend(); ++it)
        if (*it < k) targets.push_back(*it);
      std::vector<std::pair<int, double>> down;
      const auto merges = km.merge_down(assign, k, targets, orphans, down);
      out.inertia_curve.assign(down.rbegin(), down.rend());
      out.inertia_curve.emplace_back(static_cast<int>(k), top);
      const auto k_pick = static_cast<std::size_t>(out.inertia_curve[elbow_index(out.inertia_curve)].first);
      if (k_pick < k) {
        // The clustering at the elbow (the first k - k_pick merges), refined by Lloyd's
        // iterations from its means.
        std::vector<std::int32_t> parent(k);
        std::iota(parent.begin(), parent.end(), 0);
        for (std::size_t m = 0; m < k - k_pick; ++m)
          parent[static_cast<std::size_t>(merges[m].second)] = merges[m].first;
        auto find = [&](std::int32_t g) {
          while (parent[static_cast<std::size_t>(g)] != g) g = parent[static_cast<std::size_t>(g)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(g)])];
          return g;
        };
        for (std::int32_t& g : assign)
          if (g >= 0) g = find(g);
        k = compact_clusters(assign);
        km.lloyd(assign, k, cfg.max_iterations);
        k = compact_clusters(assign);
      }
    } else {
      out.inertia_curve.emplace_back(static_cast<int>(k), top);
    }
    out.work = km.work();
    // Renumber the non-empty clusters after the fixed groups.
    std::vector<std::int32_t> renumber(k, -1);
    for (std::size_t i = 0; i < assign.size(); ++i) {
      if (assign[i] < 0) {  // an orphan: a group by itself
        group_of[static_cast<std::size_t>(m2m_points[i])] = static_cast<std::int32_t>(kinds.size());
        kinds.push_back(ConnectionKind::m2m);
        continue;
      }
      std::int32_t& r = renumber[static_cast<std::size_t>(assign[i])];
      if (r < 0) {
        r = static_cast<std::int32_t>(kinds.size());
        kinds.push_back(ConnectionKind::m2m);
      }
      group_of[static_cast<std::size_t>(m2m_points[i])] = r;
    }
  }
  out.error = grouping_error(b, group_of);

  // Groups ordered by their smallest member (U is ascending global id), members ascending.
  const auto num_groups = static_cast<std::int32_t>(kinds.size());
  std::vector<std::int32_t> order(static_cast<std::size_t>(num_groups), -1), rank_of(static_cast<std::size_t>(num_groups), -1);
  std::int32_t next = 0;
  for (std::size_t u = 0; u < nu; ++u) {
    const std::int32_t g = group_of[u];
    if (g >= 0 && rank_of[static_cast<std::size_t>(g)] < 0) {
      rank_of[static_cast<std::size_t>(g)] = next;
      order[static_cast<std::size_t>(next++)] = g;
    }
  }
  std::vector<std::int64_t> count(static_cast<std::size_t>(num_groups) + 1, 0), degrees(static_cast<std::size_t>(num_groups), 0);
  for (std::size_t u = 0; u < nu; ++u)
    if (group_of[u] >= 0) {
      const auto r = static_cast<std::size_t>(rank_of[static_cast<std::size_t>(group_of[u])]);
      ++count[r + 1];
      degrees[r] += degree_of(b, static_cast<std::int32_t>(u));
    }
  std::partial_sum(count.begin(), count.end(), count.begin());
  out.ptr.assign(count.begin(), count.end());
  out.members.resize(static_cast<std::size_t>(count.back()));
  out.weight.resize(out.members.size());
  std::vector<std::int64_t> fill(count.begin(), count.end() - 1);
  for (std::size_t u = 0; u < nu; ++u) {
    if (group_of[u] < 0) continue;
    const auto r = static_cast<std::size_t>(rank_of[static_cast<std::size_t>(group_of[u])]);
    const auto at = static_cast<std::size_t>(fill[r]++);
    out.members[at] = b.u[u];
    out.weight[at] = static_cast<float>(static_cast<double>(degree_of(b, static_cast<std::int32_t>(u))) /
                                        static_cast<double>(degrees[r]));
  }
  out.kind.resize(static_cast<std::size_t>(num_groups));
  for (std::int32_t r = 0; r < num_groups; ++r) out.kind[static_cast<std::size_t>(r)] = kinds[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])];
  return out;
}

std::vector<LinkGroups> group_links(const GlobalGraph& g, const std::vector<Rank>& parts,
                                    Rank num_parts, const GroupingConfig& cfg) {
  std::vector<BoundaryGraph> links = boundary_graphs(g, parts, num_parts);
  std::vector<LinkGroups> out(links.size());
  // Small links run side by side, one thread each; large ones one after another, each using
  // every thread inside (group_link gives the same result on any number of threads).
  std::vector<std::int64_t> small, large;
  for (std::size_t i = 0; i < links.size(); ++i)
    (links[i].edges() >= kParallelEdges ? large : small).push_back(static_cast<std::int64_t>(i));
  std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t s = 0; s < static_cast<std::int64_t>(small.size()); ++s) {
    const auto i = static_cast<std::size_t>(small[static_cast<std::size_t>(s)]);
    try {
      out[i] = group_link(links[i], cfg);
    } catch (...) {
#pragma omp critical(group_links_failure)
      if (!failure) failure = std::current_exception();
    }
    links[i] = BoundaryGraph();
  }
  if (failure) std::rethrow_exception(failure);
  for (const std::int64_t i : large) {
    out[static_cast<std::size_t>(i)] = group_link(links[static_cast<std::size_t>(i)], cfg);
    links[static_cast<std::size_t>(i)] = BoundaryGraph();
  }
  return out;
}

Json LinkGroups::to_json() const {
  Json j = Json::object();
  j["from"] = from;
  j["to"] = to;
  j["u_nodes"] = u_nodes;
  j["v_nodes"] = v_nodes;
  j["edges"] = edges;
  Json by_kind = Json::object();
  for (int k = 0; k < 4; ++k)
    by_kind[to_string(static_cast<ConnectionKind>(k))] = edges_by_kind[static_cast<std::size_t>(k)];
  j["edges_by_kind"] = std::move(by_kind);
  j["groups"] = num_groups();
  j["m2m_components"] = m2m_components;
  j["m2m_groups"] = std::count(kind.begin(), kind.end(), ConnectionKind::m2m);
  const std::int64_t sent_nodes = u_nodes - dropped_rows;
  j["mean_group_size"] = num_groups() > 0 ? static_cast<double>(sent_nodes) / static_cast<double>(num_groups()) : 0.0;
  j["rows_plain"] = u_nodes;
  j["rows_semantic"] = rows_sent();
  j["dropped_o2o_rows"] = dropped_rows;
  j["error"] = error;
  Json curve = Json::array();
  for (const auto& [k, inertia] : inertia_curve) curve.push_back({k, inertia});
  j["inertia_curve"] = std::move(curve);
  j["work"] = work;
  // Group sizes (members) in power-of-two bins: entry b counts groups of 2^b .. 2^(b+1) - 1.
  Json sizes = Json::array();
  std::vector<std::int64_t> bins;
  for (std::size_t g = 0; g + 1 < ptr.size(); ++g) {
    std::int64_t n = ptr[g + 1] - ptr[g];
    std::size_t b = 0;
    while (n > 1) {
      n >>= 1;
      ++b;
    }
    if (bins.size() <= b) bins.resize(b + 1, 0);
    ++bins[b];
  }
  for (std::int64_t c : bins) sizes.push_back(c);
  j["group_sizes_log2"] = std::move(sizes);
  return j;
}

}  // namespace halognn

namespace halognn {
namespace {

/// Sorted (global id, local id) pairs of a range of local rows, for translating members.
std::vector<std::pair<GlobalId, LocalId>> id_index(const LocalPartition& lp, LocalId begin,
                                                   LocalId end) {
  std::vector<std::pair<GlobalId, LocalId>> idx;
  idx.reserve(static_cast<std::size_t>(end - begin));
  for (LocalId i = begin; i < end; ++i) idx.emplace_back(lp.global_ids[static_cast<std::size_t>(i)], i);
  std::sort(idx.begin(), idx.end());
  return idx;
}

LocalId local_of(const std::vector<std::pair<GlobalId, LocalId>>& idx, GlobalId gid, Rank rank) {
  const auto it = std::lower_bound(idx.begin(), idx.end(), std::pair<GlobalId, LocalId>{gid, -1});
  GNN_ASSERT(it != idx.end() && it->first == gid, "group member ", gid, " is not a row of rank ",
             rank);
  return it->second;
}

}  // namespace

void attach_groups(LocalPartition& lp, const std::vector<LinkGroups>& links) {
  const auto owned = id_index(lp, 0, lp.num_owned);
  const auto halo = id_index(lp, lp.num_owned, lp.num_local());
  auto find_link = [&](Rank from, Rank to) -> const LinkGroups* {
    for (const LinkGroups& l : links)
      if (l.from == from && l.to == to) return &l;
    return nullptr;
  };
  auto convert = [&](const LinkGroups* l, Rank peer, bool sending) {
    LinkGroupRows out;
    out.peer = peer;
    if (!l) return out;
    const auto& idx = sending ? owned : halo;
    for (std::int64_t g = 0; g < l->num_groups(); ++g) {
      for (std::int64_t m = l->ptr[static_cast<std::size_t>(g)]; m < l->ptr[static_cast<std::size_t>(g) + 1]; ++m) {
        out.rows.push_back(local_of(idx, l->members[static_cast<std::size_t>(m)], lp.rank));
        if (sending) out.weights.push_back(l->weight[static_cast<std::size_t>(m)]);
      }
      out.ptr.push_back(static_cast<std::int32_t>(out.rows.size()));
      out.kinds.push_back(static_cast<std::uint8_t>(l->kind[static_cast<std::size_t>(g)]));
    }
    return out;
  };
  lp.send_groups.clear();
  lp.recv_groups.clear();
  for (const PeerRows& pr : lp.send) lp.send_groups.push_back(convert(find_link(lp.rank, pr.peer), pr.peer, true));
  for (const PeerRows& pr : lp.recv) lp.recv_groups.push_back(convert(find_link(pr.peer, lp.rank), pr.peer, false));
  lp.has_groups = true;
}

void validate_groups(const LocalPartition& lp, const std::string& origin) {
  auto check_side = [&](const std::vector<LinkGroupRows>& groups, const std::vector<PeerRows>& plan,
                        bool sending) {
    const char* side = sending ? "send" : "receive";
    GNN_CHECK_INPUT(groups.size() == plan.size(), origin, "has groups for ", groups.size(), " ",
                    side, " peers, the plan has ", plan.size());
    for (std::size_t k = 0; k < plan.size(); ++k) {
      const LinkGroupRows& l = groups[k];
      GNN_CHECK_INPUT(l.peer == plan[k].peer, origin, side, " groups of peer ", l.peer,
                      " where the plan has peer ", plan[k].peer);
      GNN_CHECK_INPUT(!l.ptr.empty() && l.ptr.front() == 0 &&
                          l.ptr.back() == static_cast<std::int32_t>(l.rows.size()) &&
                          static_cast<std::int64_t>(l.kinds.size()) == l.num_groups(),
                      origin, side, " groups of peer ", l.peer, " are inconsistent");
      GNN_CHECK_INPUT(sending ? l.weights.size() == l.rows.size() : l.weights.empty(), origin,
                      side, " groups of peer ", l.peer, " have ", l.weights.size(),
                      " weights for ", l.rows.size(), " members");
      std::vector<LocalId> allowed = plan[k].rows;
      std::sort(allowed.begin(), allowed.end());
      std::vector<LocalId> seen;
      for (std::int64_t g = 0; g < l.num_groups(); ++g) {
        GNN_CHECK_INPUT(l.ptr[static_cast<std::size_t>(g) + 1] > l.ptr[static_cast<std::size_t>(g)] && l.kinds[static_cast<std::size_t>(g)] <= 3, origin, side,
                        " group ", g, " of peer ", l.peer, " is empty or of an unknown kind");
        double sum = 0;
        for (std::int32_t m = l.ptr[static_cast<std::size_t>(g)]; m < l.ptr[static_cast<std::size_t>(g) + 1]; ++m) {
          const LocalId r = l.rows[static_cast<std::size_t>(m)];
          GNN_CHECK_INPUT(std::binary_search(allowed.begin(), allowed.end(), r), origin, side,
                          " group ", g, " of peer ", l.peer, " has row ", r,
                          ", which the plan does not exchange with that peer");
          seen.push_back(r);
          if (sending) {
            const float w = l.weights[static_cast<std::size_t>(m)];
            GNN_CHECK_INPUT(w > 0 && std::isfinite(w), origin, side, " group ", g, " of peer ",
                            l.peer, " has weight ", w);
            sum += w;
          }
        }
        GNN_CHECK_INPUT(!sending || std::fabs(sum - 1.0) < 1e-3, origin, side, " group ", g,
                        " of peer ", l.peer, " has weights summing to ", sum, ", not 1");
      }
      std::sort(seen.begin(), seen.end());
      GNN_CHECK_INPUT(std::adjacent_find(seen.begin(), seen.end()) == seen.end(), origin, side,
                      " groups of peer ", l.peer, " list a row twice");
    }
  };
  check_side(lp.send_groups, lp.send, true);
  check_side(lp.recv_groups, lp.recv, false);
}

}  // namespace halognn
