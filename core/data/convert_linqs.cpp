// LINQS text files (Sen et al. 2008): <name>.content (id, 0/1 words, class) and <name>.cites.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "core/data/convert_common.hpp"
#include "core/data/converters.hpp"
#include "core/error.hpp"

namespace halognn {
using namespace convert_detail;

Dataset convert_linqs(const std::string& content_path, const std::string& cites_path,
                      const ConvertOptions& opts) {
  const std::string content = read_text_file(content_path);
  const std::vector<std::string_view> lines = split_lines(content);
  GNN_CHECK_INPUT(!lines.empty(), content_path, "is empty");
  const std::int64_t width = static_cast<std::int64_t>(split_fields(lines[0], '\t').size());
  GNN_CHECK_INPUT(width >= 3, content_path, "line 1: expected id, features and class separated by TABs");
  const std::int64_t n = static_cast<std::int64_t>(lines.size()), f = width - 2;

  std::unordered_map<std::string_view, GlobalId> id_of;
  std::vector<std::string_view> class_of(static_cast<std::size_t>(n));
  Dataset ds;
  ds.num_nodes = n;
  ds.features = Matrix(n, f);
  for (std::int64_t v = 0; v < n; ++v) {
    const auto fields = split_fields(lines[v], '\t');
    GNN_CHECK_INPUT(static_cast<std::int64_t>(fields.size()) == width, content_path, "line ", v + 1,
                    ": ", fields.size(), " fields, expected ", width);
    GNN_CHECK_INPUT(id_of.emplace(fields[0], v).second, content_path, "line ", v + 1,
                    ": paper id '", fields[0], "' repeats");
    float* row = ds.features.data() + v * f;
    for (std::int64_t k = 0; k < f; ++k) row[k] = parse_float(fields[k + 1], content_path, v + 1);
    class_of[v] = fields.back();
    GNN_CHECK_INPUT(!class_of[v].empty(), content_path, "line ", v + 1, ": empty class label");
  }
  // Class ids follow the sorted class names, so they do not depend on line order.
  std::map<std::string_view, std::int32_t> classes;
  for (auto c : class_of) classes.emplace(c, 0);
  std::vector<std::string> names;
  for (auto& [name, id] : classes) {
    id = static_cast<std::int32_t>(names.size());
    names.emplace_back(name);
  }
  ds.labels.resize(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v) ds.labels[v] = classes.at(class_of[v]);
  ds.num_classes = static_cast<std::int32_t>(names.size());

  // "<cited>\t<citing>": stored as citing -> cited; citations of unknown papers are dropped.
  const std::string cites = read_text_file(cites_path);
  std::int64_t ln = 0, unknown = 0;
  for (std::string_view l : split_lines(cites)) {
    ++ln;
    if (l.empty()) continue;
    const auto fields = split_fields(l, '\t');
    GNN_CHECK_INPUT(fields.size() == 2, cites_path, "line ", ln, ": expected two TAB-separated ids");
    const auto a = id_of.find(fields[0]), b = id_of.find(fields[1]);
    if (a == id_of.end() || b == id_of.end()) {
      ++unknown;
      continue;
    }
    ds.edge_src.push_back(b->second);
    ds.edge_dst.push_back(a->second);
  }
  ds.meta["source_format"] = "linqs";
  ds.meta["source"] = Json(std::vector<std::string>{content_path, cites_path});
  ds.meta["class_names"] = Json(names);
  if (unknown > 0) {
    ds.meta["citations_dropped"] = unknown;
    add_warning(ds, std::to_string(unknown) + " citation lines of " + cites_path +
                        " name papers missing from the .content file and were dropped");
  }
  apply_shchur_split(ds, opts);
  return ds;
}

}  // namespace halognn
