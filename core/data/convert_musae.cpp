// MUSAE CSV/JSON (Rozemberczki et al. 2021): <name>_edges.csv, <name>.json, <name>_target.csv.
#include <algorithm>
#include <filesystem>
#include <map>

#include "core/data/convert_common.hpp"
#include "core/data/converters.hpp"
#include "core/error.hpp"

namespace halognn {
using namespace convert_detail;

Dataset convert_musae(const std::string& dir, const std::string& name, const ConvertOptions& opts) {
  namespace fs = std::filesystem;
  const std::string edges_path = (fs::path(dir) / (name + "_edges.csv")).string();
  const std::string feat_path = (fs::path(dir) / (name + ".json")).string();
  const std::string target_path = (fs::path(dir) / (name + "_target.csv")).string();

  // Targets: the id is the first field and the class the last one; the middle may hold quoted
  // commas (page names), so it is never split.
  const std::string target = read_text_file(target_path);
  const auto tlines = split_lines(target);
  GNN_CHECK_INPUT(tlines.size() >= 2, target_path, "has no data rows");
  std::vector<std::pair<GlobalId, std::string_view>> rows;
  for (std::size_t i = 1; i < tlines.size(); ++i) {
    const std::string_view l = tlines[i];
    const auto ln = static_cast<std::int64_t>(i + 1);
    if (l.empty()) continue;
    const std::size_t first = l.find(','), last = l.rfind(',');
    GNN_CHECK_INPUT(first != std::string_view::npos, target_path, "line ", ln, ": no comma");
    const GlobalId id = parse_int(l.substr(0, first), target_path, ln);
    GNN_CHECK_INPUT(id >= 0, target_path, "line ", ln, ": negative node id");
    rows.emplace_back(id, l.substr(last + 1));
  }
  const auto n = static_cast<GlobalId>(rows.size());
  std::map<std::string_view, std::int32_t> classes;
  for (const auto& r : rows) classes.emplace(r.second, 0);
  std::vector<std::string> names;
  for (auto& [cname, id] : classes) {
    id = static_cast<std::int32_t>(names.size());
    names.emplace_back(cname);
  }
  Dataset ds;
  ds.name = name;
  ds.num_nodes = n;
  ds.num_classes = static_cast<std::int32_t>(names.size());
  ds.labels.assign(static_cast<std::size_t>(n), -1);
  for (const auto& [id, cname] : rows) {
    GNN_CHECK_INPUT(id < n, target_path, "node id ", id, " outside [0, ", n, ") (ids must be 0..rows-1)");
    GNN_CHECK_INPUT(ds.labels[id] < 0, target_path, "node id ", id, " repeats");
    ds.labels[id] = classes.at(cname);
  }

  const std::string etext = read_text_file(edges_path);
  const auto elines = split_lines(etext);
  for (std::size_t i = 1; i < elines.size(); ++i) {
    const auto ln = static_cast<std::int64_t>(i + 1);
    if (elines[i].empty()) continue;
    const auto fields = split_fields(elines[i], ',');
    GNN_CHECK_INPUT(fields.size() == 2, edges_path, "line ", ln, ": expected 'id_1,id_2'");
    const GlobalId u = parse_int(fields[0], edges_path, ln), v = parse_int(fields[1], edges_path, ln);
    GNN_CHECK_INPUT(u >= 0 && u < n && v >= 0 && v < n, edges_path, "line ", ln,
                    ": node id outside [0, ", n, ")");
    ds.edge_src.push_back(u);
    ds.edge_dst.push_back(v);
  }

  // Features: {"node": [feature ids]}; the width is the largest id + 1.
  const Json feats = parse_json(read_text_file(feat_path), feat_path);
  GNN_CHECK_INPUT(feats.is_object(), feat_path, "expected a JSON object of feature-id lists");
  std::int64_t width = 0, pairs = 0;
  std::vector<std::pair<GlobalId, std::vector<std::int64_t>>> lists;
  for (const auto& [key, val] : feats.items()) {
    const GlobalId v = parse_int(key, feat_path, 1);
    GNN_CHECK_INPUT(v >= 0 && v < n, feat_path, "node key ", key, " outside [0, ", n, ")");
    GNN_CHECK_INPUT(val.is_array(), feat_path, "node ", key, ": expected an array of feature ids");
    std::vector<std::int64_t> ids;
    for (const Json& x : val) {
      GNN_CHECK_INPUT(x.is_number_integer() && x.get<std::int64_t>() >= 0, feat_path, "node ", key,
                      ": feature ids must be non-negative integers");
      ids.push_back(x.get<std::int64_t>());
      width = std::max(width, x.get<std::int64_t>() + 1);
    }
    lists.emplace_back(v, std::move(ids));
  }
  ds.features = Matrix(n, width);
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(n), 0);
  for (const auto& [v, ids] : lists) {
    GNN_CHECK_INPUT(!seen[v], feat_path, "node ", v, " repeats");
    seen[v] = 1;
    for (std::int64_t k : ids) {
      float& x = ds.features(v, k);
      pairs += x == 0.0f ? 1 : 0;
      x = 1.0f;
    }
  }
  const auto missing = static_cast<std::int64_t>(std::count(seen.begin(), seen.end(), std::uint8_t{0}));
  ds.meta["source_format"] = "musae";
  ds.meta["source"] = Json(std::vector<std::string>{edges_path, feat_path, target_path});
  ds.meta["class_names"] = Json(names);
  ds.meta["feature_pairs"] = pairs;
  ds.meta["features_missing"] = missing;
  if (missing > 0)
    add_warning(ds, std::to_string(missing) + " nodes have no entry in " + feat_path +
                        " (all-zero features)");
  apply_shchur_split(ds, opts);
  return ds;
}

}  // namespace halognn
