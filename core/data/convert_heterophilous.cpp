// Heterophilous-graphs .npz (Platonov et al. 2023): dense features, edge list, 10 fixed splits.
#include <algorithm>

#include "core/data/convert_common.hpp"
#include "core/data/converters.hpp"
#include "core/data/zip.hpp"
#include "core/error.hpp"

namespace halognn {
using namespace convert_detail;

Dataset convert_heterophilous(const std::string& npz_path, const ConvertOptions& opts) {
  const auto npz = read_npz(npz_path);
  auto origin = [&](const std::string& m) { return npz_path + ":" + m + ".npy"; };
  const NpyArray& feat = npz_member(npz, "node_features", npz_path);
  GNN_CHECK_INPUT(feat.shape.size() == 2, origin("node_features"), "expected a 2-d array");
  const std::int64_t n = feat.shape[0], f = feat.shape[1];
  Dataset ds;
  ds.num_nodes = n;
  ds.features = Matrix::from_host(n, f, npy_to_float32(feat, origin("node_features")));

  const std::vector<std::int64_t> labels =
      npy_to_int64(npz_member(npz, "node_labels", npz_path), origin("node_labels"));
  GNN_CHECK_INPUT(static_cast<std::int64_t>(labels.size()) == n, origin("node_labels"), "has ",
                  labels.size(), " entries, expected ", n);
  ds.labels.resize(labels.size());
  for (std::size_t v = 0; v < labels.size(); ++v) {
    GNN_CHECK_INPUT(labels[v] >= 0 && labels[v] < (1 << 30), origin("node_labels"), "label ",
                    labels[v], " of node ", v, " out of range");
    ds.labels[v] = static_cast<std::int32_t>(labels[v]);
  }
  ds.num_classes = count_classes(ds.labels, origin("node_labels"));

  const NpyArray& edges = npz_member(npz, "edges", npz_path);
  GNN_CHECK_INPUT(edges.shape.size() == 2 && edges.shape[1] == 2, origin("edges"),
                  "expected shape (E, 2)");
  const std::vector<std::int64_t> e = npy_to_int64(edges, origin("edges"));
  const std::int64_t m = edges.shape[0];
  ds.edge_src.resize(static_cast<std::size_t>(m));
  ds.edge_dst.resize(static_cast<std::size_t>(m));
  for (std::int64_t k = 0; k < m; ++k) {
    GNN_CHECK_INPUT(e[2 * k] >= 0 && e[2 * k] < n && e[2 * k + 1] >= 0 && e[2 * k + 1] < n,
                    origin("edges"), "row ", k, " names a node outside [0, ", n, ")");
    ds.edge_src[k] = e[2 * k];
    ds.edge_dst[k] = e[2 * k + 1];
  }

  // Masks are (splits, N); npy_to_uint8 returns C order even for the Fortran-order files.
  std::int64_t num_splits = -1;
  auto mask_rows = [&](const std::string& m) {
    const NpyArray& a = npz_member(npz, m, npz_path);
    GNN_CHECK_INPUT(a.shape.size() == 2 && a.shape[1] == n, origin(m), "expected shape (S, ", n, ")");
    if (num_splits < 0) num_splits = a.shape[0];
    GNN_CHECK_INPUT(a.shape[0] == num_splits, origin(m), "has ", a.shape[0], " splits, expected ",
                    num_splits);
    GNN_CHECK_CONFIG(opts.split_index >= 0 && opts.split_index < num_splits, "--split ",
                     opts.split_index, " is out of range: ", npz_path, " has ", num_splits,
                     " splits (0..", num_splits - 1, ")");
    const std::vector<std::uint8_t> all = npy_to_uint8(a, origin(m));
    return mask_to_indices(all.data() + static_cast<std::int64_t>(opts.split_index) * n, n);
  };
  ds.train_idx = mask_rows("train_masks");
  ds.val_idx = mask_rows("val_masks");
  ds.test_idx = mask_rows("test_masks");

  ds.meta["source_format"] = "heterophilous";
  ds.meta["source"] = Json(std::vector<std::string>{npz_path});
  Json split = Json::object();
  split["kind"] = "file";
  split["index"] = opts.split_index;
  split["num_splits"] = num_splits;
  ds.meta["split"] = std::move(split);
  return ds;
}

}  // namespace halognn
