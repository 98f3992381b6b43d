// Cutting a dataset into local partitions, and the partition report.
//
// Key observation: vertex u (owned by q) is in part p's halo exactly when p != q and u has a
// neighbour in p; the same list, in ascending global id, is what q sends p. One pass over the
// vertices in ascending id therefore yields every halo group already sorted, and the send plans
// are the halo groups read from the other side. No per-part N-sized array is ever built.
// The plan serves the report; each part itself is built by build_part (build_part.hpp) from its
// owned vertices' neighbour lists, the code the distributed partitioner uses too.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>

#include <omp.h>

#include "core/error.hpp"
#include "partition/build_part.hpp"
#include "partition/partition.hpp"

namespace halognn {

namespace {

/// One halo group: the vertices of part `part` owned by `owner`, gids[begin, end).
struct HaloGroup {
  Rank part = 0;
  Rank owner = 0;
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

/// Everything shared by all parts: O(N) index arrays plus the halo lists.
class PartitionPlan {
 public:
  PartitionPlan(const GlobalGraph& g, const std::vector<Rank>& parts, Rank num_parts)
      : g_(g), parts_(parts), k_(num_parts) {
    GNN_ASSERT(num_parts >= 1, "num_parts must be positive");
    GNN_ASSERT(static_cast<GlobalId>(parts.size()) == g.num_nodes,
               "assignment has ", parts.size(), " entries for ", g.num_nodes, " vertices");
    build_owned();
    build_halo();
  }

  Rank num_parts() const { return k_; }
  GlobalId num_owned(Rank p) const { return owned_begin_[p + 1] - owned_begin_[p]; }
  /// p's owned vertices, ascending.
  std::span<const GlobalId> owned(Rank p) const {
    return {owned_order_.data() + owned_begin_[p], static_cast<std::size_t>(num_owned(p))};
  }
  std::int64_t num_halo(Rank p) const { return halo_begin_[p + 1] - halo_begin_[p]; }
  std::int64_t edge_cut() const { return edge_cut_; }
  GlobalId boundary(Rank p) const { return boundary_[p]; }

  /// p's halo groups, ascending owner.
  std::span<const HaloGroup> groups_of(Rank p) const {
    return {groups_.data() + group_begin_[p], groups_.data() + group_begin_[p + 1]};
  }
  /// Groups owned by p in other parts' halos (what p sends), ascending receiving part.
  std::vector<const HaloGroup*> sends_of(Rank p) const {
    std::vector<const HaloGroup*> out;
    for (std::int64_t i = sends_begin_[p]; i < sends_begin_[p + 1]; ++i)
      out.push_back(&groups_[send_groups_[i]]);
    return out;
  }


 private:
  void build_owned();
  void build_halo();

  const GlobalGraph& g_;
  const std::vector<Rank>& parts_;
  Rank k_;
  std::vector<GlobalId> owned_begin_;   // K+1 offsets into owned_order_
  std::vector<GlobalId> owned_order_;   // vertices by part, ascending within a part
  std::vector<std::int64_t> halo_begin_;  // K+1 offsets into halo_gids_
  std::vector<GlobalId> halo_gids_;     // per part, grouped by owner, ascending id
  std::vector<HaloGroup> groups_;       // all groups, ordered by (part, owner)
  std::vector<std::int64_t> group_begin_;  // K+1 offsets into groups_
  std::vector<std::int64_t> send_groups_;  // group indices ordered by (owner, part)
  std::vector<std::int64_t> sends_begin_;  // K+1 offsets into send_groups_
  std::vector<GlobalId> boundary_;
  std::int64_t edge_cut_ = 0;
};

void PartitionPlan::build_owned() {
  const GlobalId n = g_.num_nodes;
  owned_begin_.assign(static_cast<std::size_t>(k_) + 1, 0);
  for (GlobalId v = 0; v < n; ++v) {
    const Rank p = parts_[v];
    GNN_ASSERT(p >= 0 && p < k_, "vertex ", v, " assigned to part ", p, " outside [0, ", k_, ")");
    ++owned_begin_[p + 1];
  }
  std::partial_sum(owned_begin_.begin(), owned_begin_.end(), owned_begin_.begin());
  for (Rank p = 0; p < k_; ++p)
    GNN_CHECK_CONFIG(num_owned(p) <= std::numeric_limits<LocalId>::max(), "part ", p, " owns ",
                     num_owned(p), " vertices, more than 32-bit local ids allow; use more parts");
  owned_order_.resize(static_cast<std::size_t>(n));
  std::vector<GlobalId> fill(owned_begin_.begin(), owned_begin_.end() - 1);
  for (GlobalId v = 0; v < n; ++v) owned_order_[fill[parts_[v]]++] = v;
}

void PartitionPlan::build_halo() {
  const GlobalId n = g_.num_nodes;
  const int nthreads = omp_get_max_threads();
  // Pass 1 counts, per thread and part, the halo entries contributed by that thread's static
  // chunk of vertices; pass 2 fills them at thread-ordered offsets so each part's list stays in
  // ascending vertex order.
  std::vector<std::int64_t> counts(static_cast<std::size_t>(nthreads) * k_, 0);
  std::vector<GlobalId> boundary_t(static_cast<std::size_t>(nthreads) * k_, 0);
  std::int64_t cut_twice = 0;
  auto chunk = [&](int t) {
    const GlobalId per = (n + nthreads - 1) / nthreads;
    return std::pair<GlobalId, GlobalId>{std::min<GlobalId>(n, t * per),
                                         std::min<GlobalId>(n, (t + 1) * per)};
  };
  // For each vertex, visit every distinct foreign part among its neighbours. `stamp` (size K,
  // per thread) remembers the last vertex that visited a part.
  auto for_foreign_parts = [&](GlobalId u, std::vector<GlobalId>& stamp, auto&& fn) {
    const Rank own = parts_[u];
    for (EdgeOffset e = g_.row_ptr[u]; e < g_.row_ptr[u + 1]; ++e) {
      const Rank p = parts_[g_.col[e]];
      if (p == own || stamp[p] == u) continue;
      stamp[p] = u;
      fn(p);
    }
  };
#pragma omp parallel num_threads(nthreads) reduction(+ : cut_twice)
  {
    const int t = omp_get_thread_num();
    std::vector<GlobalId> stamp(static_cast<std::size_t>(k_), -1);
    const auto [lo, hi] = chunk(t);
    std::int64_t* cnt = counts.data() + static_cast<std::size_t>(t) * k_;
    GlobalId* bnd = boundary_t.data() + static_cast<std::size_t>(t) * k_;
    for (GlobalId u = lo; u < hi; ++u) {
      const Rank own = parts_[u];
      for (EdgeOffset e = g_.row_ptr[u]; e < g_.row_ptr[u + 1]; ++e)
        cut_twice += parts_[g_.col[e]] != own;
      bool is_boundary = false;
      for_foreign_parts(u, stamp, [&](Rank p) {
        ++cnt[p];
        is_boundary = true;
      });
      bnd[own] += is_boundary;
    }
  }
  edge_cut_ = cut_twice / 2;
  boundary_.assign(static_cast<std::size_t>(k_), 0);
  halo_begin_.assign(static_cast<std::size_t>(k_) + 1, 0);
  std::vector<std::int64_t> offsets(counts.size());
  for (Rank p = 0; p < k_; ++p) {
    std::int64_t total = 0;
    for (int t = 0; t < nthreads; ++t) {
      offsets[static_cast<std::size_t>(t) * k_ + p] = total;
      total += counts[static_cast<std::size_t>(t) * k_ + p];
      boundary_[p] += boundary_t[static_cast<std::size_t>(t) * k_ + p];
    }
    halo_begin_[p + 1] = halo_begin_[p] + total;
  }
  for (Rank p = 0; p < k_; ++p) {
    GNN_CHECK_CONFIG(num_owned(p) + num_halo(p) <= std::numeric_limits<LocalId>::max(), "part ",
                     p, " has ", num_owned(p) + num_halo(p),
                     " local vertices, more than 32-bit local ids allow; use more parts");
    for (int t = 0; t < nthreads; ++t)
      offsets[static_cast<std::size_t>(t) * k_ + p] += halo_begin_[p];
  }
  halo_gids_.resize(static_cast<std::size_t>(halo_begin_[k_]));
#pragma omp parallel num_threads(nthreads)
  {
    const int t = omp_get_thread_num();
    std::vector<GlobalId> stamp(static_cast<std::size_t>(k_), -1);
    const auto [lo, hi] = chunk(t);
    std::int64_t* pos = offsets.data() + static_cast<std::size_t>(t) * k_;
    for (GlobalId u = lo; u < hi; ++u)
      for_foreign_parts(u, stamp, [&](Rank p) { halo_gids_[pos[p]++] = u; });
  }
  // Group each part's halo by owner. A stable sort keeps ascending ids within an owner.
  std::vector<std::vector<HaloGroup>> per_part(static_cast<std::size_t>(k_));
#pragma omp parallel for schedule(dynamic, 1)
  for (Rank p = 0; p < k_; ++p) {
    auto b = halo_gids_.begin() + halo_begin_[p], e = halo_gids_.begin() + halo_begin_[p + 1];
    std::stable_sort(b, e, [&](GlobalId x, GlobalId y) { return parts_[x] < parts_[y]; });
    for (std::int64_t i = halo_begin_[p]; i < halo_begin_[p + 1];) {
      const Rank owner = parts_[halo_gids_[i]];
      std::int64_t j = i;
      while (j < halo_begin_[p + 1] && parts_[halo_gids_[j]] == owner) ++j;
      per_part[p].push_back(HaloGroup{p, owner, i, j});
      i = j;
    }
  }
  group_begin_.assign(static_cast<std::size_t>(k_) + 1, 0);
  for (Rank p = 0; p < k_; ++p) {
    group_begin_[p + 1] = group_begin_[p] + static_cast<std::int64_t>(per_part[p].size());
    groups_.insert(groups_.end(), per_part[p].begin(), per_part[p].end());
  }
  // Transpose: the groups each part sends, by receiving part ascending (groups_ is ordered by
  // part, so a counting sort by owner keeps that order).
  sends_begin_.assign(static_cast<std::size_t>(k_) + 1, 0);
  for (const auto& grp : groups_) ++sends_begin_[grp.owner + 1];
  std::partial_sum(sends_begin_.begin(), sends_begin_.end(), sends_begin_.begin());
  send_groups_.resize(groups_.size());
  std::vector<std::int64_t> fill(sends_begin_.begin(), sends_begin_.end() - 1);
  for (std::size_t i = 0; i < groups_.size(); ++i)
    send_groups_[fill[groups_[i].owner]++] = static_cast<std::int64_t>(i);
}

/// Part p of the whole dataset, through build_part: its owned vertices' rows of `g`, the parts of
/// their neighbours, and a fill that copies their rows of `ds`.
LocalPartition build_serial_part(const Dataset& ds, const GlobalGraph& g,
                                 const std::vector<Rank>& parts, const PartitionPlan& plan,
                                 const std::vector<std::uint8_t>& split, Rank p,
                                 const LocalOrder& order) {
  OwnedRows rows;
  rows.part = p;
  rows.num_parts = plan.num_parts();
  rows.global_num_nodes = g.num_nodes;
  rows.global_num_directed_edges = g.num_directed_edges();
  const std::span<const GlobalId> own = plan.owned(p);
  rows.gids.assign(own.begin(), own.end());
  const std::int64_t n = static_cast<std::int64_t>(own.size());
  rows.row_ptr.assign(static_cast<std::size_t>(n) + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) rows.row_ptr[i + 1] = rows.row_ptr[i] + g.degree(own[i]);
  rows.col.resize(static_cast<std::size_t>(rows.row_ptr[n]));
  rows.col_part.resize(rows.col.size());
#pragma omp parallel for schedule(dynamic, 1024)
  for (std::int64_t i = 0; i < n; ++i) {
    EdgeOffset k = rows.row_ptr[i];
    for (EdgeOffset e = g.row_ptr[own[i]]; e < g.row_ptr[own[i] + 1]; ++e, ++k) {
      rows.col[k] = g.col[e];
      rows.col_part[k] = parts[g.col[e]];
    }
  }
  const auto fill = [&](std::span<const GlobalId> owned_ids, LocalPartition& lp) {
    const LocalId owned = static_cast<LocalId>(owned_ids.size());
    const GlobalId* own_ids = owned_ids.data();
    const std::int64_t f = ds.features.cols();
    lp.features = Matrix(owned, f);
    if (f > 0) {
      const float* src = ds.features.data();
      float* dst = lp.features.data();
#pragma omp parallel for schedule(static)
      for (LocalId i = 0; i < owned; ++i)
        std::memcpy(dst + static_cast<std::int64_t>(i) * f, src + own_ids[i] * f,
                    static_cast<std::size_t>(f) * sizeof(float));
    }
    lp.num_classes = ds.num_classes;
    lp.multilabel = ds.multilabel;
    if (ds.multilabel) {
      const std::int64_t c = ds.num_classes;
      lp.label_matrix.resize(static_cast<std::size_t>(owned) * c);
      for (LocalId i = 0; i < owned; ++i)
        std::copy_n(ds.label_matrix.begin() + own_ids[i] * c, c, lp.label_matrix.begin() + i * c);
    } else {
      lp.labels.resize(static_cast<std::size_t>(owned));
      for (LocalId i = 0; i < owned; ++i) lp.labels[i] = ds.labels[own_ids[i]];
    }
    lp.train_mask.resize(static_cast<std::size_t>(owned));
    lp.val_mask.resize(static_cast<std::size_t>(owned));
    lp.test_mask.resize(static_cast<std::size_t>(owned));
    for (LocalId i = 0; i < owned; ++i) {
      const std::uint8_t s = split[own_ids[i]];
      lp.train_mask[i] = s == 1;
      lp.val_mask[i] = s == 2;
      lp.test_mask[i] = s == 3;
    }
    lp.global_train = static_cast<std::int64_t>(ds.train_idx.size());
    lp.global_val = static_cast<std::int64_t>(ds.val_idx.size());
    lp.global_test = static_cast<std::int64_t>(ds.test_idx.size());
  };
  return build_part(rows, [&](GlobalId u) { return g.degree(u); }, order, fill);
}

PartitionReport report_of(const GlobalGraph& g, const PartitionPlan& plan) {
  const Rank k = plan.num_parts();
  PartitionReport r;
  r.num_parts = k;
  r.num_nodes = g.num_nodes;
  r.num_edges = g.num_directed_edges() / 2;
  r.edge_cut = plan.edge_cut();
  r.owned.resize(k);
  r.halo.resize(k);
  r.boundary.resize(k);
  r.sent_rows.assign(k, 0);
  r.local_edges.assign(k, 0);
  GlobalId max_owned = 0;
  for (Rank p = 0; p < k; ++p) {
    r.owned[p] = plan.num_owned(p);
    r.halo[p] = plan.num_halo(p);
    r.boundary[p] = plan.boundary(p);
    max_owned = std::max(max_owned, r.owned[p]);
    for (const HaloGroup* grp : plan.sends_of(p)) {
      r.sent_rows[p] += grp->end - grp->begin;
      r.pair_volume.push_back({p, grp->part, grp->end - grp->begin});
    }
    r.total_volume += r.sent_rows[p];
  }
  r.imbalance = g.num_nodes > 0 ? static_cast<double>(max_owned) * k / g.num_nodes : 1.0;
  return r;
}

std::vector<std::uint8_t> split_codes(const Dataset& ds) {
  std::vector<std::uint8_t> split(static_cast<std::size_t>(ds.num_nodes), 0);
  const std::vector<GlobalId>* lists[3] = {&ds.train_idx, &ds.val_idx, &ds.test_idx};
  for (int s = 0; s < 3; ++s)
    for (GlobalId v : *lists[s]) {
      GNN_ASSERT(v >= 0 && v < ds.num_nodes, "split index ", v, " out of range");
      split[v] = static_cast<std::uint8_t>(s + 1);
    }
  return split;
}

void fill_local_edges(const GlobalGraph& g, const std::vector<Rank>& parts, PartitionReport& r) {
  for (GlobalId v = 0; v < g.num_nodes; ++v) r.local_edges[parts[v]] += g.degree(v);
}

}  // namespace

Json PartitionReport::to_json() const {
  Json j = Json::object();
  j["num_parts"] = num_parts;
  j["num_nodes"] = num_nodes;
  j["num_edges"] = num_edges;
  j["edge_cut"] = edge_cut;
  j["imbalance"] = imbalance;
  j["total_volume"] = total_volume;
  j["owned"] = owned;
  j["halo"] = halo;
  j["boundary"] = boundary;
  j["sent_rows"] = sent_rows;
  j["local_edges"] = local_edges;
  Json pv = Json::array();
  for (const auto& x : pair_volume) pv.push_back({x.from, x.to, x.rows});
  j["pair_volume"] = std::move(pv);
  return j;
}

PartitionReport compute_partition_report(const GlobalGraph& g, const std::vector<Rank>& parts,
                                         Rank num_parts) {
  const PartitionPlan plan(g, parts, num_parts);
  PartitionReport r = report_of(g, plan);
  fill_local_edges(g, parts, r);
  return r;
}

void for_each_local_partition(const Dataset& ds, const GlobalGraph& g,
                              const std::vector<Rank>& parts, Rank num_parts,
                              const std::function<void(LocalPartition&&)>& sink,
                              PartitionReport* report, const LocalOrder& order) {
  GNN_ASSERT(g.num_nodes == ds.num_nodes, "graph has ", g.num_nodes, " vertices, dataset ",
             ds.num_nodes);
  GNN_ASSERT(ds.features.rows() == ds.num_nodes, "feature rows ", ds.features.rows(),
             " != num_nodes ", ds.num_nodes);
  GNN_ASSERT(ds.multilabel ? static_cast<std::int64_t>(ds.label_matrix.size()) ==
                                 ds.num_nodes * ds.num_classes
                           : static_cast<GlobalId>(ds.labels.size()) == ds.num_nodes,
             "label array size does not match num_nodes");
  const PartitionPlan plan(g, parts, num_parts);
  if (report) {
    *report = report_of(g, plan);
    fill_local_edges(g, parts, *report);
  }
  const std::vector<std::uint8_t> split = split_codes(ds);
  for (Rank p = 0; p < num_parts; ++p)
    sink(build_serial_part(ds, g, parts, plan, split, p, order));
}

std::vector<LocalPartition> build_local_partitions(const Dataset& ds, const GlobalGraph& g,
                                                   const std::vector<Rank>& parts, Rank num_parts,
                                                   PartitionReport* report,
                                                   const LocalOrder& order) {
  std::vector<LocalPartition> out;
  out.reserve(static_cast<std::size_t>(num_parts));
  for_each_local_partition(
      ds, g, parts, num_parts, [&](LocalPartition&& lp) { out.push_back(std::move(lp)); }, report,
      order);
  return out;
}

}  // namespace halognn
