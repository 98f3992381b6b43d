// The on-disk dataset format: a directory holding manifest.json and .npy arrays (described in
// docs/datasets.md, "The on-disk format"). Every check names the file at fault.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/atomic_output.hpp"
#include "core/data/dataset.hpp"
#include "core/data/npy.hpp"
#include "core/error.hpp"

namespace halognn {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "halognn-dataset";
constexpr std::int64_t kVersion = 1;
constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
const char* const kSplitNames[3] = {"train", "val", "test"};

std::string join(const std::string& dir, const std::string& file) {
  return (fs::path(dir) / file).string();
}

std::string shape_str(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) {
    s += std::to_string(shape[k]);
    if (shape.size() == 1 || k + 1 < shape.size()) s += ",";
    if (k + 1 < shape.size()) s += " ";
  }
  return s + ")";
}

std::string range_str(std::int64_t lo, std::int64_t hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
}

void expect_dtype(const NpyArray& a, std::initializer_list<NpyType> allowed, const char* what,
                  const std::string& origin) {
  for (auto t : allowed)
    if (a.type == t) return;
  throw InputError(origin, "dtype " + npy_descr(a.type, a.item_size) + " not allowed (expected " +
                               what + ")");
}

void expect_shape(const NpyArray& a, const std::vector<std::int64_t>& want, const char* pretty,
                  const std::string& origin) {
  if (a.shape != want)
    throw InputError(origin, "shape " + shape_str(a.shape) + " does not match the expected " +
                                 pretty + " = " + shape_str(want));
}

/// Element k (in stored order) of an int32/int64 array.
std::int64_t int_at(const NpyArray& a, std::int64_t k) {
  if (a.type == NpyType::i4) {
    std::int32_t v;
    std::memcpy(&v, a.data.data() + k * 4, 4);
    return v;
  }
  std::int64_t v;
  std::memcpy(&v, a.data.data() + k * 8, 8);
  return v;
}

/// Index of the first id outside [0, n) (kNone if all are in range).
std::int64_t first_out_of_range(const std::vector<GlobalId>& ids, std::int64_t n) {
  std::int64_t bad = kNone;
  const auto m = static_cast<std::int64_t>(ids.size());
#pragma omp parallel for reduction(min : bad) schedule(static)
  for (std::int64_t k = 0; k < m; ++k)
    if (ids[k] < 0 || ids[k] >= n) bad = std::min(bad, k);
  return bad;
}

void check_edges(const std::vector<GlobalId>& src, const std::vector<GlobalId>& dst,
                 std::int64_t n, const std::string& origin) {
  if (src.size() != dst.size())
    throw InputError(origin, "edge source and destination lists differ in length");
  const std::int64_t bs = first_out_of_range(src, n), bd = first_out_of_range(dst, n);
  if (bs == kNone && bd == kNone) return;
  const bool use_src = bs <= bd;
  const std::int64_t e = use_src ? bs : bd;
  throw InputError(origin, "node id " + std::to_string(use_src ? src[e] : dst[e]) +
                               " out of range " + range_str(0, n) + " (edge " + std::to_string(e) +
                               ")");
}

void check_features(const Matrix& x, std::int64_t n, const std::string& origin) {
  if (x.rows() != n)
    throw InputError(origin, "features have " + std::to_string(x.rows()) + " rows, expected " +
                                 std::to_string(n) + " (one per node)");
  const std::vector<float> host_copy = x.device().is_host() ? std::vector<float>{} : x.to_host();
  const float* p = x.device().is_host() ? x.data() : host_copy.data();
  const std::int64_t m = x.size();
  std::int64_t bad = kNone;
#pragma omp parallel for reduction(min : bad) schedule(static)
  for (std::int64_t k = 0; k < m; ++k)
    if (!std::isfinite(p[k])) bad = std::min(bad, k);
  if (bad != kNone)
    throw InputError(origin, "non-finite feature value " + std::to_string(p[bad]) + " at node " +
                                 std::to_string(bad / x.cols()) + ", column " +
                                 std::to_string(bad % x.cols()));
}

void check_labels(const std::vector<std::int32_t>& labels, std::int64_t n, std::int32_t classes,
                  const std::string& origin) {
  if (static_cast<std::int64_t>(labels.size()) != n)
    throw InputError(origin, std::to_string(labels.size()) + " labels for " + std::to_string(n) +
                                 " nodes");
  for (std::int64_t v = 0; v < n; ++v)
    if (labels[v] < -1 || labels[v] >= classes)
      throw InputError(origin, "label " + std::to_string(labels[v]) + " of node " +
                                   std::to_string(v) + " out of range [-1, " +
                                   std::to_string(classes) + ") (-1 = unlabelled)");
}

void check_label_matrix(const std::vector<std::uint8_t>& m, std::int64_t n, std::int32_t classes,
                        const std::string& origin) {
  if (static_cast<std::int64_t>(m.size()) != n * classes)
    throw InputError(origin, "label matrix has " + std::to_string(m.size()) +
                                 " entries, expected num_nodes x num_classes = " +
                                 std::to_string(n * classes));
  for (std::size_t k = 0; k < m.size(); ++k)
    if (m[k] > 1)
      throw InputError(origin, "multi-label entry (node " + std::to_string(k / classes) +
                                   ", class " + std::to_string(k % classes) + ") is " +
                                   std::to_string(m[k]) + ", expected 0 or 1");
}

/// Range, uniqueness and disjointness of one split (`taken` marks nodes of earlier splits with
/// 1 + split number) plus the label requirement. `idx` must be sorted.
void check_split(const std::vector<GlobalId>& idx, int split, std::int64_t n,
                 const std::vector<std::int32_t>* labels, std::vector<std::uint8_t>& taken,
                 const std::string& origin, const std::string& labels_name) {
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const GlobalId v = idx[k];
    if (v < 0 || v >= n)
      throw InputError(origin, "split index " + std::to_string(v) + " out of range " +
                                   range_str(0, n));
    if (k > 0 && idx[k - 1] == v)
      throw InputError(origin, "node " + std::to_string(v) + " is listed twice");
    if (taken[v] != 0)
      throw InputError(origin, "node " + std::to_string(v) + " is also in the " +
                                   kSplitNames[taken[v] - 1] +
                                   " split (splits must be disjoint)");
    taken[v] = static_cast<std::uint8_t>(split + 1);
    if (labels && (*labels)[v] < 0)
      throw InputError(origin, "split node " + std::to_string(v) + " has no label (-1 in " +
                                   labels_name + ")");
  }
}

std::int64_t manifest_int(const Json& m, const char* key, const std::string& origin) {
  const std::int64_t v = json_int(m, key, origin);
  if (v < 0) throw InputError(origin, std::string("\"") + key + "\" must be a non-negative integer");
  return v;
}

/// Reads one split in either form; returns sorted indices (duplicates kept for the checker).
std::vector<GlobalId> read_split(const std::string& dir, int split, std::int64_t n,
                                 std::string& origin) {
  const std::string name = kSplitNames[split];
  const std::string idx_path = join(dir, name + "_idx.npy");
  const std::string mask_path = join(dir, name + "_mask.npy");
  const bool has_idx = fs::exists(idx_path), has_mask = fs::exists(mask_path);
  if (has_idx && has_mask)
    throw InputError(idx_path, "both " + name + "_idx.npy and " + name +
                                   "_mask.npy exist; keep exactly one form of each split");
  std::vector<GlobalId> idx;
  if (has_mask) {
    origin = mask_path;
    const NpyArray a = read_npy(mask_path);
    expect_dtype(a, {NpyType::b1, NpyType::u1}, "bool or uint8", mask_path);
    expect_shape(a, {n}, "(num_nodes,)", mask_path);
    for (std::int64_t v = 0; v < n; ++v) {
      const auto x = static_cast<std::uint8_t>(a.data[v]);
      if (x > 1)
        throw InputError(mask_path, "mask entry of node " + std::to_string(v) + " is " +
                                        std::to_string(x) + ", expected 0 or 1");
      if (x) idx.push_back(v);
    }
    return idx;
  }
  origin = idx_path;
  if (!has_idx)
    throw InputError(idx_path, "missing (neither " + name + "_idx.npy nor " + name +
                                   "_mask.npy exists)");
  const NpyArray a = read_npy(idx_path);
  expect_dtype(a, {NpyType::i8, NpyType::i4}, "int64 or int32", idx_path);
  if (a.shape.size() != 1)
    throw InputError(idx_path, "shape " + shape_str(a.shape) + " is not 1-D (k,)");
  idx.resize(static_cast<std::size_t>(a.count()));
  for (std::int64_t k = 0; k < a.count(); ++k) idx[k] = int_at(a, k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

bool is_dataset_dir(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return false;
  if (fs::is_empty(p, ec)) return true;
  const fs::path m = p / "manifest.json";
  if (!fs::exists(m, ec)) return false;
  try {
    const Json j = read_json_file(m.string());
    return j.is_object() && j.contains("format") && j["format"] == kFormat;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

void validate_dataset(const Dataset& ds, const std::string& origin) {
  const std::int64_t n = ds.num_nodes;
  if (n < 0) throw InputError(origin, "negative num_nodes");
  check_edges(ds.edge_src, ds.edge_dst, n, origin);
  check_features(ds.features, n, origin);
  if (ds.num_classes < 1) throw InputError(origin, "num_classes must be at least 1");
  if (ds.multilabel) check_label_matrix(ds.label_matrix, n, ds.num_classes, origin);
  else check_labels(ds.labels, n, ds.num_classes, origin);
  std::vector<std::uint8_t> taken(static_cast<std::size_t>(n), 0);
  const std::vector<GlobalId>* splits[3] = {&ds.train_idx, &ds.val_idx, &ds.test_idx};
  for (int s = 0; s < 3; ++s) {
    if (!std::is_sorted(splits[s]->begin(), splits[s]->end()))
      throw InputError(origin, std::string(kSplitNames[s]) + " split is not sorted");
    check_split(*splits[s], s, n, ds.multilabel ? nullptr : &ds.labels, taken,
                origin + " (" + kSplitNames[s] + " split)", "labels");
  }
}

Dataset read_dataset(const std::string& dir) {
  if (!fs::is_directory(dir)) throw InputError(dir, "not a directory (missing dataset)");
  const std::string manifest_path = join(dir, "manifest.json");
  if (!fs::exists(manifest_path)) throw InputError(manifest_path, "missing");
  const Json m = read_json_file(manifest_path);
  if (!m.is_object()) throw InputError(manifest_path, "not a JSON object");
  if (!m.contains("format") || m["format"] != kFormat)
    throw InputError(manifest_path, std::string("not a halognn dataset manifest (\"format\" must be \"") +
                                        kFormat + "\")");
  const std::int64_t version = manifest_int(m, "version", manifest_path);
  if (version != kVersion)
    throw InputError(manifest_path, "unknown format version " + std::to_string(version) +
                                        " (this build reads version " + std::to_string(kVersion) + ")");

  Dataset ds;
  ds.name = m.contains("name") ? json_string(m, "name", manifest_path)
                               : fs::path(dir).filename().string();
  const std::int64_t n = manifest_int(m, "num_nodes", manifest_path);
  const std::int64_t num_edges = manifest_int(m, "num_edges", manifest_path);
  const std::int64_t num_features = manifest_int(m, "num_features", manifest_path);
  const std::int64_t num_classes = manifest_int(m, "num_classes", manifest_path);
  if (num_classes < 1 || num_classes > std::numeric_limits<std::int32_t>::max())
    throw InputError(manifest_path, "\"num_classes\" must be in [1, 2^31)");
  ds.num_nodes = n;
  ds.num_classes = static_cast<std::int32_t>(num_classes);
  ds.multilabel = m.contains("multilabel") && json_bool(m, "multilabel", manifest_path);
  if (m.contains("meta")) {
    if (!m["meta"].is_object()) throw InputError(manifest_path, "\"meta\" must be an object");
    ds.meta = m["meta"];
  }

  {  // edges.npy: (E, 2) int64/int32, each row (src, dst)
    const std::string path = join(dir, "edges.npy");
    NpyArray a = read_npy(path);
    expect_dtype(a, {NpyType::i8, NpyType::i4}, "int64 or int32", path);
    if (a.shape.size() != 2 || a.shape[1] != 2)
      throw InputError(path, "shape " + shape_str(a.shape) + " is not (num_edges, 2)");
    const std::int64_t e = a.shape[0];
    if (e != num_edges)
      throw InputError(path, std::to_string(e) + " rows but manifest.json says num_edges = " +
                                 std::to_string(num_edges));
    ds.edge_src.resize(static_cast<std::size_t>(e));
    ds.edge_dst.resize(static_cast<std::size_t>(e));
    // Row-major: (src, dst) pairs; column-major: all sources, then all destinations.
    const std::int64_t stride = a.fortran_order ? 1 : 2, dst_off = a.fortran_order ? e : 1;
#pragma omp parallel for schedule(static)
    for (std::int64_t k = 0; k < e; ++k) {
      ds.edge_src[k] = int_at(a, k * stride);
      ds.edge_dst[k] = int_at(a, k * stride + dst_off);
    }
    check_edges(ds.edge_src, ds.edge_dst, n, path);
  }

  {  // features.npy: (N, F) float32/float64
    const std::string path = join(dir, "features.npy");
    NpyArray a = read_npy(path);
    expect_dtype(a, {NpyType::f4, NpyType::f8}, "float32 or float64", path);
    if (a.shape.size() != 2 || a.shape[0] != n)
      throw InputError(path, "shape " + shape_str(a.shape) + " is not (num_nodes, num_features) "
                                 "with num_nodes = " + std::to_string(n) + " from manifest.json");
    if (a.shape[1] != num_features)
      throw InputError(path, std::to_string(a.shape[1]) +
                                 " columns but manifest.json says num_features = " +
                                 std::to_string(num_features));
    ds.features = Matrix(n, num_features);
    if (a.type == NpyType::f4 && !a.fortran_order) {
      if (!a.data.empty()) std::memcpy(ds.features.data(), a.data.data(), a.data.size());
    } else {
      const std::vector<float> f = npy_to_float32(a, path);
      std::copy(f.begin(), f.end(), ds.features.data());
    }
    a.data = {};
    check_features(ds.features, n, path);
  }

  const std::string labels_path = join(dir, "labels.npy");
  {  // labels.npy
    const NpyArray a = read_npy(labels_path);
    if (ds.multilabel) {
      expect_dtype(a, {NpyType::u1, NpyType::b1}, "uint8 or bool for multilabel data", labels_path);
      expect_shape(a, {n, num_classes}, "(num_nodes, num_classes)", labels_path);
      ds.label_matrix = npy_to_uint8(a, labels_path);
      check_label_matrix(ds.label_matrix, n, ds.num_classes, labels_path);
    } else {
      expect_dtype(a, {NpyType::i8, NpyType::i4}, "int64 or int32", labels_path);
      expect_shape(a, {n}, "(num_nodes,)", labels_path);
      ds.labels.resize(static_cast<std::size_t>(n));
      for (std::int64_t v = 0; v < n; ++v) {
        const std::int64_t l = int_at(a, v);
        if (l < -1 || l >= num_classes)
          throw InputError(labels_path, "label " + std::to_string(l) + " of node " +
                                            std::to_string(v) + " out of range [-1, " +
                                            std::to_string(num_classes) + ") (-1 = unlabelled)");
        ds.labels[v] = static_cast<std::int32_t>(l);
      }
    }
  }

  std::vector<std::uint8_t> taken(static_cast<std::size_t>(n), 0);
  std::vector<GlobalId>* splits[3] = {&ds.train_idx, &ds.val_idx, &ds.test_idx};
  for (int s = 0; s < 3; ++s) {
    std::string origin;
    *splits[s] = read_split(dir, s, n, origin);
    check_split(*splits[s], s, n, ds.multilabel ? nullptr : &ds.labels, taken, origin,
                "labels.npy");
  }
  return ds;
}

void write_dataset(const Dataset& ds, const std::string& dir,
                   std::vector<std::string>* removed_leftovers) {
  StagedDirectory out(dir, is_dataset_dir, "halognn dataset");
  if (removed_leftovers) *removed_leftovers = out.removed_leftovers();
  const std::string target_str = out.target().string();
  validate_dataset(ds, target_str);
  const auto tmp = [&](const std::string& name) { return out.file(name); };
  const std::int64_t n = ds.num_nodes;
  const auto e = static_cast<std::int64_t>(ds.edge_src.size());
  {
    std::vector<std::int64_t> edges(static_cast<std::size_t>(2 * e));
#pragma omp parallel for schedule(static)
    for (std::int64_t k = 0; k < e; ++k) {
      edges[2 * k] = ds.edge_src[k];
      edges[2 * k + 1] = ds.edge_dst[k];
    }
    write_npy(tmp("edges.npy"), NpyType::i8, {e, 2}, edges);
  }
  {
    const std::vector<float> host_copy =
        ds.features.device().is_host() ? std::vector<float>{} : ds.features.to_host();
    const float* p = ds.features.device().is_host() ? ds.features.data() : host_copy.data();
    write_npy(tmp("features.npy"), NpyType::f4, {n, ds.features.cols()},
              std::as_bytes(std::span<const float>(p, static_cast<std::size_t>(ds.features.size()))));
  }
  if (ds.multilabel) {
    write_npy(tmp("labels.npy"), NpyType::u1, {n, ds.num_classes}, ds.label_matrix);
  } else {
    const std::vector<std::int64_t> labels(ds.labels.begin(), ds.labels.end());
    write_npy(tmp("labels.npy"), NpyType::i8, {n}, labels);
  }
  const std::vector<GlobalId>* splits[3] = {&ds.train_idx, &ds.val_idx, &ds.test_idx};
  for (int s = 0; s < 3; ++s)
    write_npy(tmp(std::string(kSplitNames[s]) + "_idx.npy"), NpyType::i8,
              {static_cast<std::int64_t>(splits[s]->size())}, *splits[s]);

  Json m = Json::object();
  m["format"] = kFormat;
  m["version"] = kVersion;
  m["name"] = ds.name;
  m["num_nodes"] = n;
  m["num_edges"] = e;
  m["num_features"] = ds.features.cols();
  m["num_classes"] = ds.num_classes;
  m["multilabel"] = ds.multilabel;
  m["meta"] = ds.meta.is_object() ? ds.meta : Json::object();
  // The manifest goes last: a directory without one is recognisably incomplete.
  write_file_atomic(tmp("manifest.json"), dump_json(m, 2) + "\n");
  out.commit();
}

}  // namespace halognn
