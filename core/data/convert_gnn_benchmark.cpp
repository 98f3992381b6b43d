// gnn-benchmark .npz (Shchur et al. 2018): plain CSR arrays adj_* and attr_*, int labels.
#include <algorithm>

#include "core/data/convert_common.hpp"
#include "core/data/converters.hpp"
#include "core/data/zip.hpp"
#include "core/error.hpp"

namespace halognn {
using namespace convert_detail;

Dataset convert_gnn_benchmark(const std::string& npz_path, const ConvertOptions& opts) {
  const auto npz = read_npz(npz_path);
  auto ints = [&](const std::string& m) {
    return npy_to_int64(npz_member(npz, m, npz_path), npz_path + ":" + m + ".npy");
  };
  auto floats = [&](const std::string& m) {
    return npy_to_float32(npz_member(npz, m, npz_path), npz_path + ":" + m + ".npy");
  };
  const std::vector<std::int64_t> adj_shape = ints("adj_shape"), attr_shape = ints("attr_shape");
  GNN_CHECK_INPUT(adj_shape.size() == 2 && adj_shape[0] == adj_shape[1] && adj_shape[0] > 0,
                  npz_path, "adj_shape is not a square shape");
  const std::int64_t n = adj_shape[0];
  GNN_CHECK_INPUT(attr_shape.size() == 2 && attr_shape[0] == n, npz_path, "attr_shape has ",
                  attr_shape.empty() ? 0 : attr_shape[0], " rows, the graph ", n, " nodes");

  Dataset ds;
  ds.num_nodes = n;
  csr_edges(n, ints("adj_indptr"), ints("adj_indices"), floats("adj_data"), npz_path, ds);
  ds.features = csr_to_dense(n, attr_shape[1], ints("attr_indptr"), ints("attr_indices"),
                             floats("attr_data"), npz_path + ":attr_*");
  const std::vector<std::int64_t> labels = ints("labels");
  GNN_CHECK_INPUT(static_cast<std::int64_t>(labels.size()) == n, npz_path, "labels has ",
                  labels.size(), " entries, expected ", n);
  ds.labels.resize(labels.size());
  for (std::size_t v = 0; v < labels.size(); ++v) {
    GNN_CHECK_INPUT(labels[v] >= 0 && labels[v] < (1 << 30), npz_path, "label ", labels[v],
                    " of node ", v, " out of range");
    ds.labels[v] = static_cast<std::int32_t>(labels[v]);
  }
  ds.num_classes = count_classes(ds.labels, npz_path);
  ds.meta["source_format"] = "gnn-benchmark";
  ds.meta["source"] = Json(std::vector<std::string>{npz_path});
  if (npz.count("class_names"))
    ds.meta["class_names"] = Json(npy_to_strings(npz.at("class_names"), npz_path + ":class_names.npy"));
  apply_shchur_split(ds, opts);
  return ds;
}

}  // namespace halognn
