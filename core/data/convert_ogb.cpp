// OGB node-property raw layout (Hu et al. 2020): raw/*.csv.gz plus split/<name>/*.csv.gz.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/data/convert_common.hpp"
#include "core/data/converters.hpp"
#include "core/error.hpp"

namespace halognn {
using namespace convert_detail;

namespace {

/// One id per line (split files); ids must lie in [0, n).
std::vector<GlobalId> read_id_file(const std::string& path, GlobalId n) {
  GzLineReader r(path);
  std::vector<GlobalId> ids;
  std::string l;
  while (r.next(l)) {
    if (l.empty()) continue;
    const GlobalId v = parse_int(l, path, r.line_number());
    GNN_CHECK_INPUT(v >= 0 && v < n, path, "line ", r.line_number(), ": node id ", v,
                    " outside [0, ", n, ")");
    ids.push_back(v);
  }
  std::sort(ids.begin(), ids.end());
  GNN_CHECK_INPUT(std::adjacent_find(ids.begin(), ids.end()) == ids.end(), path, "repeats a node id");
  return ids;
}

bool is_missing(std::string_view f) { return f.empty() || f == "nan" || f == "NaN" || f == "NAN"; }

}  // namespace

Dataset convert_ogb(const std::string& dir, const ConvertOptions& opts) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  const std::string edge_path = (root / "raw" / "edge.csv.gz").string();
  const std::string feat_path = (root / "raw" / "node-feat.csv.gz").string();
  const std::string label_path = (root / "raw" / "node-label.csv.gz").string();
  const std::string count_path = (root / "raw" / "num-node-list.csv.gz").string();
  GNN_CHECK_INPUT(is_file(edge_path), edge_path, "missing (not an OGB raw folder)");
  GNN_CHECK_INPUT(is_file(label_path), label_path, "missing (OGB node-property data needs labels)");
  Dataset ds;
  std::string l;

  // Labels first: they fix the node count when num-node-list is absent.
  std::vector<std::vector<std::string>> label_rows;
  std::int64_t label_cols = -1;
  {
    GzLineReader r(label_path);
    while (r.next(l)) {
      auto fields = split_fields(l, ',');
      if (label_cols < 0) label_cols = static_cast<std::int64_t>(fields.size());
      GNN_CHECK_INPUT(static_cast<std::int64_t>(fields.size()) == label_cols, label_path, "line ",
                      r.line_number(), ": ", fields.size(), " columns, expected ", label_cols);
      label_rows.emplace_back(fields.begin(), fields.end());
    }
  }
  GNN_CHECK_INPUT(!label_rows.empty(), label_path, "is empty");
  GlobalId n = static_cast<GlobalId>(label_rows.size());
  if (is_file(count_path)) {
    GzLineReader r(count_path);
    GNN_CHECK_INPUT(r.next(l), count_path, "is empty");
    const GlobalId declared = parse_int(l, count_path, 1);
    GNN_CHECK_INPUT(declared == n, count_path, "declares ", declared, " nodes but ", label_path,
                    " has ", n, " rows");
  }
  ds.num_nodes = n;

  if (label_cols == 1) {
    ds.labels.assign(static_cast<std::size_t>(n), -1);
    for (GlobalId v = 0; v < n; ++v) {
      const std::string& f = label_rows[v][0];
      if (is_missing(f)) continue;
      const float x = parse_float(f, label_path, v + 1);
      GNN_CHECK_INPUT(x >= 0 && x == std::floor(x) && x < 1e9f, label_path, "line ", v + 1,
                      ": label '", f, "' is not a non-negative integer");
      ds.labels[v] = static_cast<std::int32_t>(x);
    }
    ds.num_classes = count_classes(ds.labels, label_path);
  } else {
    ds.multilabel = true;
    ds.num_classes = static_cast<std::int32_t>(label_cols);
    ds.label_matrix.assign(static_cast<std::size_t>(n * label_cols), 0);
    for (GlobalId v = 0; v < n; ++v)
      for (std::int64_t c = 0; c < label_cols; ++c) {
        const std::string& f = label_rows[v][c];
        if (is_missing(f)) continue;
        const std::int64_t x = parse_int(f, label_path, v + 1);
        GNN_CHECK_INPUT(x == 0 || x == 1, label_path, "line ", v + 1, ": multi-label entry '", f,
                        "' is not 0 or 1");
        ds.label_matrix[v * label_cols + c] = static_cast<std::uint8_t>(x);
      }
  }
  label_rows.clear();
  label_rows.shrink_to_fit();

  {
    GzLineReader r(edge_path);
    while (r.next(l)) {
      if (l.empty()) continue;
      const auto fields = split_fields(l, ',');
      GNN_CHECK_INPUT(fields.size() == 2, edge_path, "line ", r.line_number(),
                      ": expected 'source,target'");
      const GlobalId u = parse_int(fields[0], edge_path, r.line_number());
      const GlobalId v = parse_int(fields[1], edge_path, r.line_number());
      GNN_CHECK_INPUT(u >= 0 && u < n && v >= 0 && v < n, edge_path, "line ", r.line_number(),
                      ": node id outside [0, ", n, ")");
      ds.edge_src.push_back(u);
      ds.edge_dst.push_back(v);
    }
  }

  if (is_file(feat_path)) {
    GzLineReader r(feat_path);
    std::int64_t f = -1;
    std::vector<float> x;
    GlobalId rows = 0;
    while (r.next(l)) {
      const auto fields = split_fields(l, ',');
      if (f < 0) {
        f = static_cast<std::int64_t>(fields.size());
        x.reserve(static_cast<std::size_t>(n * f));
      }
      GNN_CHECK_INPUT(static_cast<std::int64_t>(fields.size()) == f, feat_path, "line ",
                      r.line_number(), ": ", fields.size(), " columns, expected ", f);
      GNN_CHECK_INPUT(rows < n, feat_path, "has more than ", n, " rows");
      for (auto field : fields) x.push_back(parse_float(field, feat_path, r.line_number()));
      ++rows;
    }
    GNN_CHECK_INPUT(rows == n, feat_path, "has ", rows, " rows, expected ", n);
    ds.features = Matrix::from_host(n, f, x);
  } else {
    ds.features = Matrix(n, 0);
    add_warning(ds, feat_path + " is absent: the dataset has no node features");
  }

  // Split: split/<name>/ (the requested or the only subfolder).
  const fs::path split_root = root / "split";
  std::vector<std::string> split_names;
  if (is_dir(split_root.string()))
    for (const auto& e : fs::directory_iterator(split_root))
      if (e.is_directory()) split_names.push_back(e.path().filename().string());
  std::sort(split_names.begin(), split_names.end());
  ds.meta["source_format"] = "ogb";
  Json files = Json::array();
  for (const std::string& p : {edge_path, feat_path, label_path, count_path})
    if (is_file(p)) files.push_back(p);
  if (split_names.empty()) {
    GNN_CHECK_INPUT(!ds.multilabel, split_root.string(),
                    "missing: multi-label data needs the OGB split files");
    ds.meta["source"] = std::move(files);
    apply_shchur_split(ds, opts);
    return ds;
  }
  std::string chosen;
  if (split_names.size() == 1) chosen = split_names[0];
  else if (std::find(split_names.begin(), split_names.end(), opts.name) != split_names.end())
    chosen = opts.name;
  else {
    std::string list;
    for (const auto& s : split_names) list += (list.empty() ? "" : ", ") + s;
    throw InputError(split_root.string(), "has several splits (" + list + "); choose one with --name");
  }
  const fs::path sdir = split_root / chosen;
  for (const char* part : {"train", "valid", "test"}) {
    const std::string p = (sdir / (std::string(part) + ".csv.gz")).string();
    GNN_CHECK_INPUT(is_file(p), p, "missing");
    files.push_back(p);
  }
  ds.train_idx = read_id_file((sdir / "train.csv.gz").string(), n);
  ds.val_idx = read_id_file((sdir / "valid.csv.gz").string(), n);
  ds.test_idx = read_id_file((sdir / "test.csv.gz").string(), n);
  ds.meta["source"] = std::move(files);
  Json split = Json::object();
  split["kind"] = "file";
  split["name"] = chosen;
  ds.meta["split"] = std::move(split);
  return ds;
}

}  // namespace halognn
