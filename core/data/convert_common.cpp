// Shared converter helpers, source detection, dispatch and the largest-component filter.
#include "core/data/convert_common.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <zlib.h>

#include "core/data/split.hpp"
#include "core/data/zip.hpp"
#include "core/error.hpp"
#include "core/file_read.hpp"

namespace halognn {
namespace fs = std::filesystem;
namespace convert_detail {

std::vector<std::string_view> split_fields(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t p = line.find(sep, start);
    if (p == std::string_view::npos) {
      out.push_back(line.substr(start));
      return out;
    }
    out.push_back(line.substr(start, p - start));
    start = p + 1;
  }
}

std::int64_t parse_int(std::string_view field, const std::string& path, std::int64_t line) {
  std::int64_t v = 0;
  const char* b = field.data();
  const char* e = b + field.size();
  if (b != e && *b == '+') ++b;
  const auto [p, ec] = std::from_chars(b, e, v);
  GNN_CHECK_INPUT(ec == std::errc() && p == e && b != e, path, "line ", line,
                  ": expected an integer, found '", field, "'");
  return v;
}

float parse_float(std::string_view field, const std::string& path, std::int64_t line) {
  // std::from_chars for floating point is available in GCC 12's libstdc++.
  float v = 0;
  const char* b = field.data();
  const char* e = b + field.size();
  if (b != e && *b == '+') ++b;
  const auto [p, ec] = std::from_chars(b, e, v);
  GNN_CHECK_INPUT(ec == std::errc() && p == e && b != e, path, "line ", line,
                  ": expected a number, found '", field, "'");
  GNN_CHECK_INPUT(std::isfinite(v), path, "line ", line, ": non-finite value '", field, "'");
  return v;
}

std::string read_text_file(const std::string& path) {
  return halognn::read_file_text(path);
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t p = text.find('\n', start);
    if (p == std::string_view::npos) p = text.size();
    std::string_view l = text.substr(start, p - start);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.push_back(l);
    start = p + 1;
  }
  return lines;
}

Matrix csr_to_dense(std::int64_t rows, std::int64_t cols, const std::vector<std::int64_t>& indptr,
                    const std::vector<std::int64_t>& indices, const std::vector<float>& values,
                    const std::string& origin) {
  GNN_CHECK_INPUT(rows >= 0 && cols >= 0, origin, "negative matrix shape");
  GNN_CHECK_INPUT(static_cast<std::int64_t>(indptr.size()) == rows + 1, origin, "indptr has ",
                  indptr.size(), " entries, expected ", rows + 1);
  GNN_CHECK_INPUT(indices.size() == values.size(), origin, "indices (", indices.size(),
                  ") and data (", values.size(), ") differ in length");
  GNN_CHECK_INPUT(indptr.front() == 0 &&
                      indptr.back() == static_cast<std::int64_t>(indices.size()),
                  origin, "indptr does not span the ", indices.size(), " stored entries");
  for (std::int64_t r = 0; r < rows; ++r)
    GNN_CHECK_INPUT(indptr[r] <= indptr[r + 1], origin, "indptr decreases at row ", r);
  Matrix m(rows, cols);
  float* x = m.data();
  bool bad = false;
#pragma omp parallel for schedule(static) reduction(|| : bad)
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = indptr[r]; k < indptr[r + 1]; ++k) {
      const std::int64_t c = indices[k];
      if (c < 0 || c >= cols || !std::isfinite(values[k])) {
        bad = true;
        continue;
      }
      x[r * cols + c] += values[k];
    }
  GNN_CHECK_INPUT(!bad, origin, "a column index is outside [0, ", cols, ") or a value is not finite");
  return m;
}

void apply_shchur_split(Dataset& ds, const ConvertOptions& opts) {
  SplitIndices s =
      shchur_split(ds.labels, ds.num_classes, opts.seed, opts.train_per_class, opts.val_per_class);
  ds.train_idx = std::move(s.train);
  ds.val_idx = std::move(s.val);
  ds.test_idx = std::move(s.test);
  Json split = Json::object();
  split["kind"] = "shchur";
  split["seed"] = static_cast<std::int64_t>(opts.seed);
  split["train_per_class"] = opts.train_per_class;
  split["val_per_class"] = opts.val_per_class;
  ds.meta["split"] = std::move(split);
}

void add_warning(Dataset& ds, const std::string& warning) {
  if (!ds.meta.contains("warnings")) ds.meta["warnings"] = Json::array();
  ds.meta["warnings"].push_back(warning);
}

std::vector<GlobalId> mask_to_indices(const std::uint8_t* mask, std::int64_t n) {
  std::vector<GlobalId> idx;
  for (std::int64_t v = 0; v < n; ++v)
    if (mask[v]) idx.push_back(v);
  return idx;
}

const NpyArray& npz_member(const std::map<std::string, NpyArray>& npz, const std::string& name,
                           const std::string& path) {
  const auto it = npz.find(name);
  GNN_CHECK_INPUT(it != npz.end(), path, "has no member ", name, ".npy");
  return it->second;
}

void csr_edges(std::int64_t n, const std::vector<std::int64_t>& indptr,
               const std::vector<std::int64_t>& indices, const std::vector<float>& values,
               const std::string& origin, Dataset& ds) {
  GNN_CHECK_INPUT(static_cast<std::int64_t>(indptr.size()) == n + 1, origin, "adjacency indptr has ",
                  indptr.size(), " entries, expected ", n + 1);
  GNN_CHECK_INPUT(indptr.front() == 0 && indptr.back() == static_cast<std::int64_t>(indices.size()),
                  origin, "adjacency indptr does not span its ", indices.size(), " entries");
  GNN_CHECK_INPUT(values.empty() || values.size() == indices.size(), origin,
                  "adjacency data and indices differ in length");
  std::int64_t zeros = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    GNN_CHECK_INPUT(indptr[r] <= indptr[r + 1], origin, "adjacency indptr decreases at row ", r);
    for (std::int64_t k = indptr[r]; k < indptr[r + 1]; ++k) {
      GNN_CHECK_INPUT(indices[k] >= 0 && indices[k] < n, origin, "adjacency column ", indices[k],
                      " outside [0, ", n, ")");
      if (!values.empty() && values[k] == 0.0f) {
        ++zeros;
        continue;
      }
      ds.edge_src.push_back(r);
      ds.edge_dst.push_back(indices[k]);
    }
  }
  if (zeros > 0) ds.meta["explicit_zero_edges_skipped"] = zeros;
}

std::int32_t count_classes(const std::vector<std::int32_t>& labels, const std::string& origin) {
  std::int32_t mx = -1;
  for (std::size_t v = 0; v < labels.size(); ++v) {
    GNN_CHECK_INPUT(labels[v] >= -1, origin, "negative label ", labels[v], " at node ", v);
    mx = std::max(mx, labels[v]);
  }
  GNN_CHECK_INPUT(mx >= 0, origin, "no labelled node");
  return mx + 1;
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}
bool is_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

GzLineReader::GzLineReader(const std::string& path) : path_(path), buf_(1 << 20) {
  check_input_file(path);
  file_ = gzopen(path.c_str(), "rb");
  GNN_CHECK_INPUT(file_ != nullptr, path, "cannot open file");
}

GzLineReader::~GzLineReader() {
  if (file_) gzclose(static_cast<gzFile>(file_));
}

bool GzLineReader::fill() {
  if (eof_) return false;
  // Keep the unread tail at the front, then read behind it.
  std::copy(buf_.begin() + static_cast<std::ptrdiff_t>(pos_),
            buf_.begin() + static_cast<std::ptrdiff_t>(end_), buf_.begin());
  end_ -= pos_;
  pos_ = 0;
  if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
  const int got = gzread(static_cast<gzFile>(file_), buf_.data() + end_,
                         static_cast<unsigned>(buf_.size() - end_));
  if (got < 0) {
    int err = 0;
    const char* msg = gzerror(static_cast<gzFile>(file_), &err);
    throw InputError(path_, std::string("gzip read error: ") + (msg ? msg : "unknown"));
  }
  if (got == 0) {
    eof_ = true;
    // zlib reports a truncated stream only through gzerror after the last read.
    int err = 0;
    const char* msg = gzerror(static_cast<gzFile>(file_), &err);
    GNN_CHECK_INPUT(err == Z_OK || err == Z_STREAM_END, path_, "gzip read error: ",
                    msg ? msg : "unknown");
    return false;
  }
  end_ += static_cast<std::size_t>(got);
  return true;
}

bool GzLineReader::next(std::string& line) {
  for (;;) {
    const char* b = buf_.data() + pos_;
    const void* nl = std::memchr(b, '\n', end_ - pos_);
    if (nl) {
      const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - b);
      line.assign(b, len);
      pos_ += len + 1;
      break;
    }
    if (!fill()) {
      if (pos_ == end_) return false;
      line.assign(buf_.data() + pos_, end_ - pos_);  // last line without a newline
      pos_ = end_;
      break;
    }
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_no_;
  return true;
}

}  // namespace convert_detail

using namespace convert_detail;

std::vector<std::string> read_gzip_lines(const std::string& path) {
  GzLineReader r(path);
  std::vector<std::string> lines;
  std::string l;
  while (r.next(l)) lines.push_back(l);
  return lines;
}

std::string format_name(SourceFormat f) {
  switch (f) {
    case SourceFormat::planetoid: return "planetoid";
    case SourceFormat::linqs: return "linqs";
    case SourceFormat::gnn_benchmark: return "gnn-benchmark";
    case SourceFormat::graphdata: return "graphdata";
    case SourceFormat::heterophilous: return "heterophilous";
    case SourceFormat::musae: return "musae";
    case SourceFormat::ogb: return "ogb";
  }
  return "unknown";
}

SourceFormat parse_format(const std::string& name) {
  for (SourceFormat f : {SourceFormat::planetoid, SourceFormat::linqs, SourceFormat::gnn_benchmark,
                         SourceFormat::graphdata, SourceFormat::heterophilous, SourceFormat::musae,
                         SourceFormat::ogb})
    if (format_name(f) == name) return f;
  throw ConfigError("unknown format '" + name +
                    "' (valid: planetoid, linqs, gnn-benchmark, graphdata, heterophilous, musae, ogb)");
}

std::vector<std::string> dataset_warnings(const Dataset& ds) {
  std::vector<std::string> out;
  if (!ds.meta.is_object() || !ds.meta.contains("warnings") || !ds.meta["warnings"].is_array())
    return out;
  for (const Json& s : ds.meta["warnings"])
    if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

namespace {

std::vector<fs::path> sorted_entries(const fs::path& dir) {
  std::vector<fs::path> v;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

/// Picks one candidate name: the requested one, else the folder's own name, else the only one.
std::string choose(const std::vector<std::string>& names, const std::string& requested,
                   const std::string& folder_name, const std::string& where,
                   const std::string& what) {
  if (!requested.empty()) {
    if (std::find(names.begin(), names.end(), requested) != names.end()) return requested;
    return {};
  }
  if (names.size() == 1) return names[0];
  if (std::find(names.begin(), names.end(), folder_name) != names.end()) return folder_name;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw InputError(where, "several " + what + " found (" + list + "); choose one with --name");
}

std::optional<SourceLocation> find_planetoid(const fs::path& dir, const ConvertOptions& o,
                                             const std::string& folder) {
  for (const fs::path& d : {dir, dir / "planetoid"}) {
    std::vector<std::string> names;
    for (const auto& p : sorted_entries(d)) {
      const std::string f = p.filename().string();
      if (f.rfind("ind.", 0) == 0 && ends_with(f, ".graph") && is_file(p.string()))
        names.push_back(f.substr(4, f.size() - 4 - 6));
    }
    if (names.empty()) continue;
    const std::string n = choose(names, o.name, folder, d.string(), "Planetoid datasets");
    if (!n.empty()) return SourceLocation{SourceFormat::planetoid, d.string(), n};
  }
  return std::nullopt;
}

std::optional<SourceLocation> find_linqs(const fs::path& dir, const ConvertOptions& o,
                                         const std::string& folder) {
  std::vector<fs::path> dirs = {dir, dir / "linqs"};
  for (const auto& p : sorted_entries(dir / "linqs"))
    if (is_dir(p.string())) dirs.push_back(p);
  for (const fs::path& d : dirs) {
    std::vector<std::string> names;
    for (const auto& p : sorted_entries(d)) {
      const std::string f = p.filename().string();
      if (ends_with(f, ".content") && is_file((d / (f.substr(0, f.size() - 8) + ".cites")).string()))
        names.push_back(f.substr(0, f.size() - 8));
    }
    if (names.empty()) continue;
    const std::string n = choose(names, o.name, folder, d.string(), "LINQS datasets");
    if (!n.empty()) return SourceLocation{SourceFormat::linqs, (d / n).string(), n};
  }
  return std::nullopt;
}

std::optional<SourceLocation> find_musae(const fs::path& dir, const ConvertOptions& o,
                                         const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& p : sorted_entries(dir)) {
    const std::string f = p.filename().string();
    if (!ends_with(f, "_edges.csv")) continue;
    const std::string n = f.substr(0, f.size() - 10);
    if (is_file((dir / (n + ".json")).string()) && is_file((dir / (n + "_target.csv")).string()))
      names.push_back(n);
  }
  if (names.empty()) return std::nullopt;
  const std::string n = choose(names, o.name, folder, dir.string(), "MUSAE datasets");
  if (n.empty()) return std::nullopt;
  return SourceLocation{SourceFormat::musae, dir.string(), n};
}

/// Classifies an .npz by its member names.
std::optional<SourceFormat> npz_kind(const std::string& path) {
  const ZipArchive zip(path);
  if (zip.contains("adj_indptr.npy") && zip.contains("attr_indptr.npy")) return SourceFormat::gnn_benchmark;
  if (zip.contains("adj_matrix.npy") && zip.contains("node_attr.npy")) return SourceFormat::graphdata;
  if (zip.contains("edges.npy") && zip.contains("train_masks.npy")) return SourceFormat::heterophilous;
  return std::nullopt;
}

std::optional<SourceLocation> find_npz(const fs::path& dir, const ConvertOptions& o,
                                       const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& p : sorted_entries(dir))
    if (p.extension() == ".npz" && is_file(p.string())) names.push_back(p.stem().string());
  if (names.empty()) return std::nullopt;
  const std::string n = choose(names, o.name, folder, dir.string(), ".npz files");
  if (n.empty()) return std::nullopt;
  const std::string path = (dir / (n + ".npz")).string();
  const auto kind = npz_kind(path);
  if (!kind) return std::nullopt;
  return SourceLocation{*kind, path, n};
}

}  // namespace

SourceLocation detect_source(const std::string& input, const ConvertOptions& opts) {
  const fs::path in(input);
  if (is_file(input)) {
    GNN_CHECK_INPUT(in.extension() == ".npz", input,
                    "not a recognised source file (give a dataset folder or an .npz file)");
    const auto kind = npz_kind(input);
    GNN_CHECK_INPUT(kind.has_value(), input,
                    "unrecognised .npz layout (expected gnn-benchmark, GraphData or "
                    "heterophilous members)");
    GNN_CHECK_INPUT(!opts.format || *opts.format == *kind, input, "is a ", format_name(*kind),
                    " file, not ", format_name(*opts.format));
    return {*kind, input, in.stem().string()};
  }
  GNN_CHECK_INPUT(is_dir(input), input, "no such file or directory");
  // The folder's own name, without a trailing slash.
  fs::path norm = in.lexically_normal();
  if (norm.filename().empty()) norm = norm.parent_path();
  const std::string folder = fs::absolute(norm).filename().string();
  const auto want = [&](SourceFormat f) { return !opts.format || *opts.format == f; };
  if (want(SourceFormat::planetoid))
    if (auto s = find_planetoid(in, opts, folder)) return *s;
  if (want(SourceFormat::ogb) && is_file((in / "raw" / "edge.csv.gz").string()))
    return {SourceFormat::ogb, input, opts.name.empty() ? folder : opts.name};
  if (auto s = find_npz(in, opts, folder); s && want(s->format)) return *s;
  if (want(SourceFormat::linqs))
    if (auto s = find_linqs(in, opts, folder)) return *s;
  if (want(SourceFormat::musae))
    if (auto s = find_musae(in, opts, folder)) return *s;
  std::string msg = "no convertible dataset found";
  if (opts.format) msg += " in " + format_name(*opts.format) + " layout";
  if (!opts.name.empty()) msg += " named '" + opts.name + "'";
  throw InputError(input, msg);
}

Dataset convert_dataset(const std::string& input, const ConvertOptions& opts) {
  const SourceLocation src = detect_source(input, opts);
  Dataset ds;
  switch (src.format) {
    case SourceFormat::planetoid: ds = convert_planetoid(src.path, src.name); break;
    case SourceFormat::linqs:
      ds = convert_linqs(src.path + ".content", src.path + ".cites", opts);
      break;
    case SourceFormat::gnn_benchmark: ds = convert_gnn_benchmark(src.path, opts); break;
    case SourceFormat::graphdata: ds = convert_graphdata(src.path, opts); break;
    case SourceFormat::heterophilous: ds = convert_heterophilous(src.path, opts); break;
    case SourceFormat::musae: ds = convert_musae(src.path, src.name, opts); break;
    case SourceFormat::ogb: ds = convert_ogb(src.path, opts); break;
  }
  if (ds.name.empty()) ds.name = src.name;
  if (opts.largest_component) {
    keep_largest_component(ds);
    // A random split is redrawn on the component; a fixed split is only restricted to it.
    if (ds.meta.contains("split") && ds.meta["split"].is_object() &&
        ds.meta["split"].value("kind", "") == "shchur")
      apply_shchur_split(ds, opts);
  }
  if (opts.binary_features) binarize_features(ds);
  validate_dataset(ds, src.path);
  return ds;
}

void binarize_features(Dataset& ds) {
  std::int64_t changed = 0, nonzero = 0;
  for (float& v : ds.features.host()) {
    if (v == 0.0f) continue;
    ++nonzero;
    changed += v != 1.0f;
    v = 1.0f;
  }
  ds.meta["binary_features"] = Json{{"nonzero", nonzero}, {"entries_changed", changed}};
}

void keep_largest_component(Dataset& ds) {
  const GlobalId n = ds.num_nodes;
  const GlobalGraph g = build_symmetric_graph(n, ds.edge_src, ds.edge_dst);
  std::vector<GlobalId> comp(static_cast<std::size_t>(n), -1);
  std::vector<GlobalId> queue;
  GlobalId best = -1, best_size = 0, num_comp = 0;
  for (GlobalId s = 0; s < n; ++s) {
    if (comp[s] >= 0) continue;
    const GlobalId id = num_comp++;
    queue.assign(1, s);
    comp[s] = id;
    for (std::size_t q = 0; q < queue.size(); ++q)
      for (EdgeOffset k = g.row_ptr[queue[q]]; k < g.row_ptr[queue[q] + 1]; ++k)
        if (comp[g.col[k]] < 0) {
          comp[g.col[k]] = id;
          queue.push_back(g.col[k]);
        }
    if (static_cast<GlobalId>(queue.size()) > best_size) {  // strict: ties keep the earlier one
      best_size = static_cast<GlobalId>(queue.size());
      best = id;
    }
  }
  std::vector<GlobalId> new_id(static_cast<std::size_t>(n), -1);
  GlobalId kept = 0;
  for (GlobalId v = 0; v < n; ++v)
    if (comp[v] == best) new_id[v] = kept++;
  std::vector<GlobalId> src, dst;
  for (std::size_t e = 0; e < ds.edge_src.size(); ++e) {
    const GlobalId u = new_id[ds.edge_src[e]], v = new_id[ds.edge_dst[e]];
    if (u < 0 || v < 0) continue;
    src.push_back(u);
    dst.push_back(v);
  }
  const std::int64_t f = ds.num_features();
  Matrix x(kept, f);
  std::vector<std::int32_t> labels;
  std::vector<std::uint8_t> label_matrix;
  const std::int64_t c = ds.num_classes;
  for (GlobalId v = 0; v < n; ++v) {
    if (new_id[v] < 0) continue;
    std::copy_n(ds.features.data() + v * f, f, x.data() + new_id[v] * f);
    if (!ds.labels.empty()) labels.push_back(ds.labels[v]);
    if (!ds.label_matrix.empty())
      label_matrix.insert(label_matrix.end(), ds.label_matrix.begin() + v * c,
                          ds.label_matrix.begin() + (v + 1) * c);
  }
  auto remap = [&](std::vector<GlobalId>& idx) {
    std::vector<GlobalId> out;
    for (GlobalId v : idx)
      if (new_id[v] >= 0) out.push_back(new_id[v]);
    idx = std::move(out);
  };
  remap(ds.train_idx);
  remap(ds.val_idx);
  remap(ds.test_idx);
  Json lcc = Json::object();
  lcc["nodes_before"] = n;
  lcc["components_before"] = num_comp;
  lcc["nodes_kept"] = kept;
  lcc["stored_edges_kept"] = static_cast<std::int64_t>(src.size());
  ds.meta["largest_component"] = std::move(lcc);
  ds.num_nodes = kept;
  ds.edge_src = std::move(src);
  ds.edge_dst = std::move(dst);
  ds.features = std::move(x);
  ds.labels = std::move(labels);
  ds.label_matrix = std::move(label_matrix);
}

}  // namespace halognn
