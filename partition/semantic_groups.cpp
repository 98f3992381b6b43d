// Semantic grouping of the boundary graphs (see semantic_groups.hpp and docs/semantic_groups.md).
//
// Everything works on the sparse neighbour structure: similarities are only ever computed between
// a node and the centres it shares a neighbour with (found through V's adjacency), so no
// |U| x |U| matrix exists and a k-means iteration costs about one pass over the cross edges.
#include "partition/semantic_groups.hpp"

#include <algorithm>
#include <cmath>
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

/// k-means of the U nodes of M2M components in the space of the normalised semantic similarity
/// ŝ(u, c) = S(u, c) / S(u, u) = 2 (A_u · c)² / (|N(u)| (|N(u)| + |c|₁)) ∈ [0, 1] between a node's
/// indicator vector A_u over V and a centre c (a mean of indicator vectors); distance 1 − ŝ.
class SimilarityKMeans {
 public:
  /// @param points  U indices of the nodes to cluster, grouped by component, ascending within
  /// @param first   points[first[c] .. first[c+1]) belong to component c
  SimilarityKMeans(const BoundaryGraph& b, const VSide& vs, std::vector<std::int32_t> points,
                   std::vector<std::int32_t> first, std::uint64_t seed, Rank from, Rank to)
      : b_(b), vs_(vs), points_(std::move(points)), first_(std::move(first)),
        rng_(RngKey{seed, RngPurpose::grouping, static_cast<std::uint64_t>(from),
                    static_cast<std::uint64_t>(to)}) {
    const std::size_t nu = b.u.size();
    point_of_u_.assign(nu, -1);
    for (std::size_t i = 0; i < points_.size(); ++i) point_of_u_[static_cast<std::size_t>(points_[i])] = static_cast<std::int32_t>(i);
    comp_of_point_.resize(points_.size());
    for (std::size_t c = 0; c + 1 < first_.size(); ++c)
      for (std::int32_t i = first_[c]; i < first_[c + 1]; ++i) comp_of_point_[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(c);
  }

  int num_components() const { return static_cast<int>(first_.size()) - 1; }
  std::size_t num_points() const { return points_.size(); }

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

  /// Lloyd's iterations from the first k centres of `seeds`. Returns the within-group inertia
  /// Σ (1 − ŝ)²; `assign` receives the group (0..k-1) of every point.
  double run(const std::vector<std::int32_t>& seeds, std::size_t k, int max_iterations,
             std::vector<std::int32_t>& assign) {
    const std::size_t n = points_.size(), nv = b_.v.size();
    // Centres as CSR over groups: (v, weight), and their L1 norms.
    std::vector<std::int64_t> c_ptr{0};
    std::vector<std::int32_t> c_v;
    std::vector<float> c_w;
    std::vector<double> c_norm;
    for (std::size_t g = 0; g < k; ++g) {
      const std::int32_t u = points_[static_cast<std::size_t>(seeds[g])];
      for (std::int64_t e = b_.u_ptr[static_cast<std::size_t>(u)]; e < b_.u_ptr[static_cast<std::size_t>(u) + 1]; ++e) {
        c_v.push_back(b_.u_col[static_cast<std::size_t>(e)]);
        c_w.push_back(1.0f);
      }
      c_ptr.push_back(static_cast<std::int64_t>(c_v.size()));
      c_norm.push_back(static_cast<double>(degree_of(b_, u)));
    }
    // A point that shares no neighbour with any centre is an orphan (-1): it will be a group by
    // itself, exact as a star, and counts as distance 1 in the inertia.
    assign.assign(n, -1);
    std::vector<double> dist(n, 1.0);
    double inertia = 0;
    const int threads = omp_get_max_threads();
    // Threads pay off only on large links: small ones run on the calling thread.
    const bool parallel = b_.edges() >= kParallelEdges;
    for (int it = 0;; ++it) {
      // Inverted index: for each v, the centres whose support contains it.
      std::vector<std::int64_t> inv_ptr(nv + 1, 0);
      for (const std::int32_t v : c_v) ++inv_ptr[static_cast<std::size_t>(v) + 1];
      std::partial_sum(inv_ptr.begin(), inv_ptr.end(), inv_ptr.begin());
      std::vector<std::int32_t> inv_g(c_v.size());
      std::vector<float> inv_w(c_v.size());
      {
        std::vector<std::int64_t> fill(inv_ptr.begin(), inv_ptr.end() - 1);
        for (std::size_t g = 0; g < k; ++g)
          for (std::int64_t e = c_ptr[g]; e < c_ptr[g + 1]; ++e) {
            const auto at = static_cast<std::size_t>(fill[static_cast<std::size_t>(c_v[static_cast<std::size_t>(e)])]++);
            inv_g[at] = static_cast<std::int32_t>(g);
            inv_w[at] = c_w[static_cast<std::size_t>(e)];
          }
      }
      // Assignment step (parallel over points; each point's choice is independent).
      std::int64_t moved = 0;
      inertia = 0;
#pragma omp parallel num_threads(threads) reduction(+ : moved, inertia) if (parallel)
      {
        std::vector<double> acc(k, 0.0);
        std::vector<std::int32_t> touched;
#pragma omp for schedule(dynamic, 64)
        for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
          const std::int32_t u = points_[static_cast<std::size_t>(i)];
          for (std::int64_t e = b_.u_ptr[static_cast<std::size_t>(u)]; e < b_.u_ptr[static_cast<std::size_t>(u) + 1]; ++e) {
            const std::int32_t v = b_.u_col[static_cast<std::size_t>(e)];
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
            const double s = 2.0 * dot * dot / (nu * (nu + c_norm[static_cast<std::size_t>(g)]));
            if (s > best || (s == best && (best_g < 0 || g < best_g))) {
              best = s;
              best_g = g;
            }
            acc[static_cast<std::size_t>(g)] = 0.0;
          }
          touched.clear();
          const double d = best < 0 ? 1.0 : std::max(0.0, 1.0 - std::min(best, 1.0));
          dist[static_cast<std::size_t>(i)] = d;
          inertia += d * d;
          moved += best_g != assign[static_cast<std::size_t>(i)];
          assign[static_cast<std::size_t>(i)] = best_g;
        }
      }
      if ((moved == 0 && it > 0) || it >= max_iterations) break;
      // Update step: each centre becomes the mean of its members' indicator vectors.
      std::vector<std::int64_t> m_ptr(k + 1, 0);
      for (const std::int32_t g : assign)
        if (g >= 0) ++m_ptr[static_cast<std::size_t>(g) + 1];
      std::partial_sum(m_ptr.begin(), m_ptr.end(), m_ptr.begin());
      std::vector<std::int32_t> members(static_cast<std::size_t>(m_ptr.back()));
      {
        std::vector<std::int64_t> fill(m_ptr.begin(), m_ptr.end() - 1);
        for (std::size_t i = 0; i < n; ++i)
          if (assign[i] >= 0)
            members[static_cast<std::size_t>(fill[static_cast<std::size_t>(assign[i])]++)] = points_[i];
      }
      std::vector<std::vector<std::pair<std::int32_t, float>>> next(k);
      std::vector<double> next_norm(k, 0.0);
#pragma omp parallel num_threads(threads) if (parallel)
      {
        std::vector<std::int32_t> count(nv, 0), touched;
#pragma omp for schedule(dynamic, 16)
        for (std::int64_t g = 0; g < static_cast<std::int64_t>(k); ++g) {
          const std::int64_t size = m_ptr[static_cast<std::size_t>(g) + 1] - m_ptr[static_cast<std::size_t>(g)];
          if (size == 0) continue;
          std::int64_t degrees = 0;
          for (std::int64_t m = m_ptr[static_cast<std::size_t>(g)]; m < m_ptr[static_cast<std::size_t>(g) + 1]; ++m) {
            const std::int32_t u = members[static_cast<std::size_t>(m)];
            degrees += degree_of(b_, u);
            for (std::int64_t e = b_.u_ptr[static_cast<std::size_t>(u)]; e < b_.u_ptr[static_cast<std::size_t>(u) + 1]; ++e) {
              const std::int32_t v = b_.u_col[static_cast<std::size_t>(e)];
              if (count[static_cast<std::size_t>(v)]++ == 0) touched.push_back(v);
            }
          }
          std::sort(touched.begin(), touched.end());
          auto& out = next[static_cast<std::size_t>(g)];
          out.reserve(touched.size());
          for (const std::int32_t v : touched) {
            out.emplace_back(v, static_cast<float>(count[static_cast<std::size_t>(v)]) / static_cast<float>(size));
            count[static_cast<std::size_t>(v)] = 0;
          }
          touched.clear();
          next_norm[static_cast<std::size_t>(g)] = static_cast<double>(degrees) / static_cast<double>(size);
        }
      }
      c_ptr.assign(1, 0);
      c_v.clear();
      c_w.clear();
      for (std::size_t g = 0; g < k; ++g) {
        for (const auto& [v, w] : next[g]) {
          c_v.push_back(v);
          c_w.push_back(w);
        }
        c_ptr.push_back(static_cast<std::int64_t>(c_v.size()));
      }
      c_norm = std::move(next_norm);
    }
    return inertia;
  }

  const std::vector<std::int32_t>& points() const { return points_; }

 private:
  const BoundaryGraph& b_;
  const VSide& vs_;
  std::vector<std::int32_t> points_, first_;
  std::vector<std::int32_t> point_of_u_, comp_of_point_;
  CounterRng rng_;
};

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
#pragma omp parallel reduction(+ : err2) if (b.edges() >= kParallelEdges)
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
      err2 += sum_dv2 * sum_du2 / (eg * eg) + edges_term;
      for (const std::int32_t v : touched) dv[static_cast<std::size_t>(v)] = 0;
      touched.clear();
    }
  }
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
    const std::vector<std::int32_t> seeds = km.seed_centers(ks.back());
    std::vector<std::vector<std::int32_t>> assignments;
    for (std::size_t k : ks) {
      k = std::min(k, seeds.size());
      if (!out.inertia_curve.empty() && static_cast<std::size_t>(out.inertia_curve.back().first) >= k) continue;
      std::vector<std::int32_t> assign;
      const double inertia = km.run(seeds, k, cfg.max_iterations, assign);
      out.inertia_curve.emplace_back(static_cast<int>(k), inertia);
      assignments.push_back(std::move(assign));
    }
    const std::size_t pick = elbow_index(out.inertia_curve);
    const std::vector<std::int32_t>& assign = assignments[pick];
    // Renumber the non-empty clusters after the fixed groups.
    std::vector<std::int32_t> renumber(static_cast<std::size_t>(out.inertia_curve[pick].first), -1);
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
  std::vector<LinkGroups> out;
  out.reserve(links.size());
  // Links one after another, each using every thread inside k-means.
  for (BoundaryGraph& b : links) {
    out.push_back(group_link(b, cfg));
    b = BoundaryGraph();
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
  const std::int64_t sent_nodes = u_nodes - dropped_rows;
  j["mean_group_size"] = num_groups() > 0 ? static_cast<double>(sent_nodes) / static_cast<double>(num_groups()) : 0.0;
  j["rows_plain"] = u_nodes;
  j["rows_semantic"] = rows_sent();
  j["dropped_o2o_rows"] = dropped_rows;
  j["error"] = error;
  Json curve = Json::array();
  for (const auto& [k, inertia] : inertia_curve) curve.push_back({k, inertia});
  j["inertia_curve"] = std::move(curve);
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
