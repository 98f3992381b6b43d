// GraphData .npz (EdisonLeeeee/GraphData): pickled scipy CSR members inside a compressed .npz.
#include "core/data/convert_common.hpp"
#include "core/data/converters.hpp"
#include "core/data/pickle.hpp"
#include "core/data/zip.hpp"
#include "core/error.hpp"

namespace halognn {
using namespace convert_detail;

namespace {

/// The Python value inside a 0-d object array member (or the member's value itself).
PyValue unpickle_member(const std::map<std::string, NpyArray>& npz, const std::string& name,
                        const std::string& path) {
  const NpyArray& a = npz_member(npz, name, path);
  const std::string origin = path + ":" + name + ".npy";
  GNN_CHECK_INPUT(a.type == NpyType::object, origin, "expected an object (pickled) array");
  PyValue v = parse_pickle(a.data, origin);
  if (v.kind == PyValue::Kind::ndarray && v.items.size() == 1) return std::move(v.items[0]);
  return v;
}

}  // namespace

Dataset convert_graphdata(const std::string& npz_path, const ConvertOptions& opts) {
  const auto npz = read_npz(npz_path);
  const PyValue adj = unpickle_member(npz, "adj_matrix", npz_path);
  const PyValue attr = unpickle_member(npz, "node_attr", npz_path);
  GNN_CHECK_INPUT(adj.kind == PyValue::Kind::csr, npz_path + ":adj_matrix.npy",
                  "expected a scipy CSR matrix, found a Python ", adj.kind_name());
  GNN_CHECK_INPUT(attr.kind == PyValue::Kind::csr, npz_path + ":node_attr.npy",
                  "expected a scipy CSR matrix, found a Python ", attr.kind_name());
  GNN_CHECK_INPUT(adj.rows == adj.cols && adj.rows > 0, npz_path + ":adj_matrix.npy",
                  "adjacency is ", adj.rows, "x", adj.cols, ", not square");
  const std::int64_t n = adj.rows;
  GNN_CHECK_INPUT(attr.rows == n, npz_path + ":node_attr.npy", "has ", attr.rows,
                  " rows, the graph ", n, " nodes");

  Dataset ds;
  ds.num_nodes = n;
  csr_edges(n, adj.indptr, adj.indices, adj.data, npz_path + ":adj_matrix.npy", ds);
  ds.features = csr_to_dense(n, attr.cols, attr.indptr, attr.indices, attr.data,
                             npz_path + ":node_attr.npy");
  const std::string lorigin = npz_path + ":node_label.npy";
  const std::vector<std::int64_t> labels = npy_to_int64(npz_member(npz, "node_label", npz_path), lorigin);
  GNN_CHECK_INPUT(static_cast<std::int64_t>(labels.size()) == n, lorigin, "has ", labels.size(),
                  " entries, expected ", n);
  ds.labels.resize(labels.size());
  for (std::size_t v = 0; v < labels.size(); ++v) {
    GNN_CHECK_INPUT(labels[v] >= 0 && labels[v] < (1 << 30), lorigin, "label ", labels[v],
                    " of node ", v, " out of range");
    ds.labels[v] = static_cast<std::int32_t>(labels[v]);
  }
  ds.num_classes = count_classes(ds.labels, lorigin);
  ds.meta["source_format"] = "graphdata";
  ds.meta["source"] = Json(std::vector<std::string>{npz_path});
  if (npz.count("metadata")) {
    const PyValue meta = unpickle_member(npz, "metadata", npz_path);
    if (const PyValue* names = meta.find("class_names"))
      ds.meta["class_names"] = Json(py_to_strings(*names, npz_path + ":metadata.npy"));
  }
  apply_shchur_split(ds, opts);
  return ds;
}

}  // namespace halognn
