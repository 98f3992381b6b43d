#include "models/local_graph.hpp"

#include <string>
#include <vector>

#include "core/error.hpp"

namespace halognn {
namespace {

/// Transposes a host CSR (rows x cols) by counting sort; entries of a transposed row keep the
/// ascending order of their source rows. Returns the entry map transposed -> original.
std::vector<std::int32_t> transpose_host(std::int64_t rows, std::int64_t cols,
                                         const std::vector<std::int32_t>& row_ptr,
                                         const std::vector<LocalId>& col,
                                         std::vector<std::int32_t>& t_ptr,
                                         std::vector<LocalId>& t_col) {
  t_ptr.assign(static_cast<std::size_t>(cols) + 1, 0);
  for (const LocalId c : col) ++t_ptr[static_cast<std::size_t>(c) + 1];
  for (std::int64_t c = 0; c < cols; ++c) t_ptr[c + 1] += t_ptr[c];
  std::vector<std::int32_t> pos(t_ptr.begin(), t_ptr.end() - 1);
  t_col.resize(col.size());
  std::vector<std::int32_t> t_to_a(col.size());
  for (std::int64_t v = 0; v < rows; ++v) {
    for (std::int32_t k = row_ptr[v]; k < row_ptr[v + 1]; ++k) {
      const std::int32_t p = pos[static_cast<std::size_t>(col[k])]++;
      t_col[p] = static_cast<LocalId>(v);
      t_to_a[p] = k;
    }
  }
  return t_to_a;
}

}  // namespace

LocalGraph LocalGraph::build(const LocalPartition& part, DevicePtr dev) {
  const std::string origin = "partition rank " + std::to_string(part.rank);
  GNN_CHECK_INPUT(part.num_owned >= 0 && part.num_halo >= 0, origin, "negative row counts");
  const std::int64_t n_local = part.num_local();
  GNN_CHECK_INPUT(static_cast<std::int64_t>(part.row_ptr.size()) == part.num_owned + 1, origin,
                  "row_ptr has ", part.row_ptr.size(), " entries, expected ", part.num_owned + 1);
  GNN_CHECK_INPUT(part.row_ptr.front() == 0 &&
                      part.row_ptr.back() == static_cast<std::int32_t>(part.col.size()),
                  origin, "row_ptr does not span the column array");
  GNN_CHECK_INPUT(static_cast<std::int64_t>(part.global_degree.size()) == n_local, origin,
                  "global_degree has ", part.global_degree.size(), " entries, expected ", n_local);
  GNN_CHECK_INPUT(static_cast<std::int64_t>(part.global_ids.size()) == n_local, origin,
                  "global_ids has ", part.global_ids.size(), " entries, expected ", n_local);
  for (LocalId v = 0; v < part.num_owned; ++v) {
    GNN_CHECK_INPUT(part.row_ptr[v] <= part.row_ptr[v + 1], origin, "row_ptr decreases at row ", v);
  }
  for (const LocalId c : part.col) {
    GNN_CHECK_INPUT(c >= 0 && c < n_local, origin, "column ", c, " outside [0, ", n_local, ")");
  }

  LocalGraph g;
  g.dev = dev;
  g.num_owned = part.num_owned;
  g.num_halo = part.num_halo;
  g.adj = CsrMatrix(part.num_owned, n_local, part.row_ptr, part.col, {}, dev);
  std::vector<float> degree(part.global_degree.begin(), part.global_degree.end());
  g.degree = Buffer<float>::from_host(degree, dev);
  g.global_ids = Buffer<GlobalId>::from_host(part.global_ids, dev);
  return g;
}

namespace {

/// The host arrays of one CSR matrix.
struct HostArrays {
  std::vector<std::int32_t> ptr{0};
  std::vector<LocalId> col;
  std::vector<float> val;
};

/// Entries of `m` whose column is in [c0, c1), columns shifted down by c0 (rows and their order kept).
HostArrays column_range(const HostArrays& m, LocalId c0, LocalId c1) {
  HostArrays r;
  r.ptr.reserve(m.ptr.size());
  for (std::size_t v = 0; v + 1 < m.ptr.size(); ++v) {
    for (std::int32_t k = m.ptr[v]; k < m.ptr[v + 1]; ++k) {
      if (m.col[k] < c0 || m.col[k] >= c1) continue;
      r.col.push_back(m.col[k] - c0);
      if (!m.val.empty()) r.val.push_back(m.val[k]);
    }
    r.ptr.push_back(static_cast<std::int32_t>(r.col.size()));
  }
  return r;
}

/// The transpose (cols x rows) of `m`; returns the entry map transposed -> original in `t_to_a`.
HostArrays transposed(const HostArrays& m, std::int64_t cols, std::vector<std::int32_t>* t_to_a) {
  HostArrays t;
  const auto rows = static_cast<std::int64_t>(m.ptr.size()) - 1;
  std::vector<std::int32_t> map = transpose_host(rows, cols, m.ptr, m.col, t.ptr, t.col);
  if (!m.val.empty()) {
    t.val.resize(m.val.size());
    for (std::size_t k = 0; k < map.size(); ++k) t.val[k] = m.val[static_cast<std::size_t>(map[k])];
  }
  if (t_to_a) *t_to_a = std::move(map);
  return t;
}

CsrMatrix on_device(const HostArrays& m, std::int64_t cols, const DevicePtr& dev) {
  return CsrMatrix(static_cast<std::int64_t>(m.ptr.size()) - 1, cols, m.ptr, m.col, m.val, dev);
}

}  // namespace

GraphOperator build_graph_operator(const LocalGraph& g, OperatorForm form, bool self_loops,
                                   const std::function<float(LocalId v, LocalId u)>& weight) {
  const std::vector<std::int32_t> row_ptr = g.adj.row_ptr().to_host();
  const std::vector<LocalId> col = g.adj.col().to_host();
  const std::int64_t rows = g.num_owned, cols = g.num_local();
  HostArrays a;
  a.ptr.reserve(static_cast<std::size_t>(rows) + 1);
  a.col.reserve(col.size() + (self_loops ? static_cast<std::size_t>(rows) : 0));
  for (LocalId v = 0; v < rows; ++v) {
    // Keep columns sorted: the diagonal goes before the first larger column.
    bool diagonal_pending = self_loops;
    auto emit = [&](LocalId u) {
      a.col.push_back(u);
      if (weight) a.val.push_back(weight(v, u));
    };
    for (std::int32_t k = row_ptr[v]; k < row_ptr[v + 1]; ++k) {
      if (diagonal_pending && col[k] > v) {
        emit(v);
        diagonal_pending = false;
      }
      emit(col[k]);
    }
    if (diagonal_pending) emit(v);
    a.ptr.push_back(static_cast<std::int32_t>(a.col.size()));
  }
  GraphOperator op;
  op.form = form;
  if (form == OperatorForm::whole) {
    std::vector<std::int32_t> t_to_a;
    const HostArrays t = transposed(a, cols, &t_to_a);
    op.a = on_device(a, cols, g.dev);
    op.a_t = on_device(t, rows, g.dev);
    op.t_to_a = Buffer<std::int32_t>::from_host(t_to_a, g.dev);
    return op;
  }
  const auto own = static_cast<LocalId>(rows), local = static_cast<LocalId>(cols);
  const HostArrays a_owned = column_range(a, 0, own), a_halo = column_range(a, own, local);
  a = {};  // only its two column ranges are kept
  op.a_owned = on_device(a_owned, own, g.dev);
  op.a_halo = on_device(a_halo, g.num_halo, g.dev);
  op.t_owned = on_device(transposed(a_owned, own, nullptr), own, g.dev);
  op.t_halo = on_device(transposed(a_halo, g.num_halo, nullptr), own, g.dev);
  return op;
}

std::shared_ptr<const GraphOperator> shared_graph_operator(
    const LocalGraph& g, const std::string& kind, OperatorForm form, bool self_loops,
    const std::function<float(LocalId v, LocalId u)>& weight) {
  auto& slot = g.operators[kind];
  if (!slot) {
    slot = std::make_shared<const GraphOperator>(build_graph_operator(g, form, self_loops, weight));
  }
  return slot;
}

}  // namespace halognn
