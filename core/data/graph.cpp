#include <algorithm>
#include <numeric>

#include <omp.h>

#include "core/data/dataset.hpp"
#include "core/error.hpp"

namespace halognn {

GlobalGraph build_symmetric_graph(GlobalId num_nodes, const std::vector<GlobalId>& src,
                                  const std::vector<GlobalId>& dst, GraphBuildStats* stats) {
  GNN_ASSERT(src.size() == dst.size(), "edge arrays differ in length");
  GraphBuildStats st;
  st.input_edges = static_cast<std::int64_t>(src.size());
  // Count both directions of every non-loop edge, then fill, sort and unique each row.
  std::vector<EdgeOffset> count(static_cast<std::size_t>(num_nodes) + 1, 0);
  for (std::size_t e = 0; e < src.size(); ++e) {
    const GlobalId u = src[e], v = dst[e];
    GNN_ASSERT(u >= 0 && u < num_nodes && v >= 0 && v < num_nodes, "edge endpoint out of range");
    if (u == v) {
      ++st.self_loops_dropped;
      continue;
    }
    ++count[u + 1];
    ++count[v + 1];
  }
  std::partial_sum(count.begin(), count.end(), count.begin());
  std::vector<GlobalId> col(static_cast<std::size_t>(count.back()));
  std::vector<EdgeOffset> fill(count.begin(), count.end() - 1);
  for (std::size_t e = 0; e < src.size(); ++e) {
    const GlobalId u = src[e], v = dst[e];
    if (u == v) continue;
    col[fill[u]++] = v;
    col[fill[v]++] = u;
  }
  std::vector<EdgeOffset> kept(static_cast<std::size_t>(num_nodes), 0);
#pragma omp parallel for schedule(dynamic, 1024)
  for (GlobalId v = 0; v < num_nodes; ++v) {
    auto b = col.begin() + count[v], e = col.begin() + count[v + 1];
    std::sort(b, e);
    kept[v] = std::unique(b, e) - b;
  }
  GlobalGraph g;
  g.num_nodes = num_nodes;
  g.row_ptr.assign(static_cast<std::size_t>(num_nodes) + 1, 0);
  for (GlobalId v = 0; v < num_nodes; ++v) g.row_ptr[v + 1] = g.row_ptr[v] + kept[v];
  g.col.resize(static_cast<std::size_t>(g.row_ptr.back()));
#pragma omp parallel for schedule(dynamic, 1024)
  for (GlobalId v = 0; v < num_nodes; ++v)
    std::copy_n(col.begin() + count[v], kept[v], g.col.begin() + g.row_ptr[v]);
  st.duplicates_dropped = count.back() - g.row_ptr.back();
  if (stats) *stats = st;
  return g;
}

}  // namespace halognn
