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
#include "core/data/state_io.hpp"
#include "core/data/npy.hpp"
#include "core/error.hpp"

namespace halognn {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "halognn-dataset";
/// Version 1: dense features only; version 2 added sparsified features (written only for them,
/// so a dense dataset stays readable by builds that read version 1).
constexpr std::int64_t kVersionDense = 1;
constexpr std::int64_t kVersionSparse = 2;
constexpr const char* kSparseKey = "sparsified_features";
constexpr const char* kDenseFile = "features.npy";
constexpr const char* kPositionsFile = "feature_positions.npy";
constexpr const char* kCodebookFile = "feature_codebook.npy";
constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
const char* const kSplitNames[3] = {"train", "val", "test"};

std::string join(const std::string& dir, const std::string& file) {
  return (fs::path(dir) / file).string();
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
    throw InputError(origin, "shape " + format_shape(a.shape) + " does not match the expected " +
                                 pretty + " = " + format_shape(want));
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

/// Rows [first_row, first_row + rows) of a row-major feature matrix hold finite values only;
/// else an InputError naming the first non-finite value's node and column.
void check_finite_rows(const float* p, std::int64_t rows, std::int64_t cols,
                       std::int64_t first_row, const std::string& origin) {
  const std::int64_t m = rows * cols;
  std::int64_t bad = kNone;
#pragma omp parallel for reduction(min : bad) schedule(static)
  for (std::int64_t k = 0; k < m; ++k)
    if (!std::isfinite(p[k])) bad = std::min(bad, k);
  if (bad != kNone)
    throw InputError(origin, "non-finite feature value " + std::to_string(p[bad]) + " at node " +
                                 std::to_string(first_row + bad / cols) + ", column " +
                                 std::to_string(bad % cols));
}

void check_features(const Matrix& x, std::int64_t n, const std::string& origin) {
  if (x.rows() != n)
    throw InputError(origin, "features have " + std::to_string(x.rows()) + " rows, expected " +
                                 std::to_string(n) + " (one per node)");
  const std::vector<float> host_copy = x.device().is_host() ? std::vector<float>{} : x.to_host();
  const float* p = x.device().is_host() ? x.data() : host_copy.data();
  check_finite_rows(p, x.rows(), x.cols(), 0, origin);
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

/// The sparsified form's invariants: a layout make_sparsify_layout gives, one row per node, no
/// dense matrix beside it, and validate_sparse_features.
void check_sparse_features(const Dataset& ds, const std::string& origin) {
  const SparseFeatures& f = ds.sparse_features;
  const SparsifyLayout& l = f.layout;
  GNN_CHECK_INPUT(l.k >= 1 && l.k <= kSparsifyMaxK && l.cols >= 2, origin,
                  "sparsified features: k = ", l.k, " over ", l.cols, " columns (k must be in [1, ",
                  kSparsifyMaxK, "], columns at least 2)");
  const SparsifyLayout want = make_sparsify_layout(l.cols, l.k);
  GNN_CHECK_INPUT(l.chunk_k == want.chunk_k && l.slot_base == want.slot_base, origin,
                  "sparsified features: the layout is not the one of k = ", l.k, " over ", l.cols,
                  " columns");
  GNN_CHECK_INPUT(f.rows == ds.num_nodes, origin, "sparsified features have ", f.rows,
                  " rows, expected ", ds.num_nodes, " (one per node)");
  GNN_CHECK_INPUT(ds.features.rows() == ds.num_nodes && ds.features.cols() == 0, origin,
                  "sparsified features beside a dense matrix of ", ds.features.rows(), " x ",
                  ds.features.cols(), " (keep one form)");
  GNN_CHECK_INPUT(f.codebook_rows >= 0 && f.codebook_rows <= ds.num_nodes, origin,
                  "sparsified features: codebook from ", f.codebook_rows, " rows of ",
                  ds.num_nodes);
  GNN_CHECK_INPUT(f.codebook_sample >= 1 &&
                      f.codebook_seed <= static_cast<std::uint64_t>(
                                             std::numeric_limits<std::int64_t>::max()),
                  origin, "sparsified features: codebook sample ", f.codebook_sample, ", seed ",
                  f.codebook_seed, " (sample at least 1, seed below 2^63)");
  validate_sparse_features(f, origin);
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
    throw InputError(idx_path, "shape " + format_shape(a.shape) + " is not 1-D (k,)");
  idx.resize(static_cast<std::size_t>(a.count()));
  for (std::int64_t k = 0; k < a.count(); ++k) idx[k] = int_at(a, k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

/// features.npy's header: float32 or float64, shape (num_nodes, num_features) of the manifest.
void check_dense_header(const NpyArray& h, const std::string& path, std::int64_t n,
                        std::int64_t num_features) {
  expect_dtype(h, {NpyType::f4, NpyType::f8}, "float32 or float64", path);
  if (h.shape.size() != 2 || h.shape[0] != n)
    throw InputError(path, "shape " + format_shape(h.shape) + " is not (num_nodes, num_features) "
                               "with num_nodes = " + std::to_string(n) + " from manifest.json");
  if (h.shape[1] != num_features)
    throw InputError(path, std::to_string(h.shape[1]) +
                               " columns but manifest.json says num_features = " +
                               std::to_string(num_features));
}

/// features.npy: (N, F) float32/float64, read whole.
void read_dense_features(const std::string& dir, std::int64_t n, std::int64_t num_features,
                         Dataset& ds) {
  const std::string path = join(dir, kDenseFile);
  NpyArray a = read_npy(path);
  check_dense_header(a, path, n, num_features);
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

/// features.npy streamed in blocks of rows through the encoder: the positions of every row and
/// the codebook, never the dense matrix (halognn-data sparsify).
void stream_sparsified_features(const std::string& dir, std::int64_t n, std::int64_t num_features,
                                const SparsifyOnRead& opt, Dataset& ds) {
  const std::string path = join(dir, kDenseFile);
  NpyRowReader in(path);
  const NpyArray& h = in.header();
  check_dense_header(h, path, n, num_features);
  GNN_CHECK_CONFIG(opt.sample >= 1, opt.sample_option, " must be at least 1, got ", opt.sample);
  SparseFeatures& f = ds.sparse_features;
  f.layout = make_sparsify_layout(num_features, opt.k, opt.k_option);
  f.rows = n;
  const std::int64_t slots = f.layout.slots(), cols = num_features;
  f.positions.assign(static_cast<std::size_t>(n * slots), 0);
  FeatureSparsifier enc(f.layout, opt.seed, sparsify_sample_fraction(opt.sample, n));
  const std::int64_t batch = std::min(
      n, std::max<std::int64_t>(1, opt.batch_bytes / (cols * static_cast<std::int64_t>(sizeof(float)))));
  std::vector<float> x(static_cast<std::size_t>(batch * cols));
  std::vector<double> wide(h.type == NpyType::f8 ? x.size() : 0);
  for (std::int64_t r0 = 0; r0 < n; r0 += batch) {
    const std::int64_t rows = std::min(batch, n - r0), m = rows * cols;
    if (h.type == NpyType::f4) {
      in.read_rows(r0, rows, reinterpret_cast<std::byte*>(x.data()));
    } else {
      in.read_rows(r0, rows, reinterpret_cast<std::byte*>(wide.data()));
      for (std::int64_t k = 0; k < m; ++k) x[k] = static_cast<float>(wide[k]);
    }
    // The check of check_features, block by block (after narrowing float64, as there).
    check_finite_rows(x.data(), rows, cols, r0, path);
    enc.encode_rows(r0, x.data(), rows, f.positions.data() + r0 * slots);
    if (opt.progress) opt.progress(r0 + rows, n);
  }
  f.codebook = enc.codebook();
  f.codebook_rows = enc.sampled_rows();
  f.codebook_sample = opt.sample;
  f.codebook_seed = opt.seed;
  ds.features = Matrix(n, 0);
}

/// feature_positions.npy (N, slots) uint8 and feature_codebook.npy (slots,) float32, as the
/// manifest's "sparsified_features" entry describes them.
void read_sparse_features(const std::string& dir, const StoredFeatures& form, std::int64_t n,
                          Dataset& ds) {
  const std::int64_t num_features = form.num_features, k = form.k;
  const std::string dense = join(dir, kDenseFile);
  if (fs::exists(dense))
    throw InputError(dense, std::string("dense features beside sparsified ones (manifest.json has "
                                        "\"") + kSparseKey + "\"; keep one form)");
  SparseFeatures& f = ds.sparse_features;
  f.layout = make_sparsify_layout(num_features, static_cast<std::int32_t>(k));
  f.rows = n;
  f.codebook_sample = form.codebook_sample;
  f.codebook_seed = form.codebook_seed;
  f.codebook_rows = form.codebook_rows;
  const std::int64_t slots = f.layout.slots();
  const std::string layout = "slots of k = " + std::to_string(k) + " over " +
                             std::to_string(num_features) + " columns";

  const std::string ppath = join(dir, kPositionsFile), cpath = join(dir, kCodebookFile);
  for (const std::string& p : {ppath, cpath})
    if (!fs::exists(p))
      throw InputError(p, std::string("missing (manifest.json has \"") + kSparseKey +
                              "\": the features are sparsified)");
  {  // Read straight into the positions: no second copy of the largest array.
    NpyRowReader pos(ppath);
    expect_dtype(pos.header(), {NpyType::u1}, "uint8", ppath);
    expect_shape(pos.header(), {n, slots}, ("(num_nodes, " + layout + ")").c_str(), ppath);
    f.positions.resize(static_cast<std::size_t>(n * slots));
    pos.read_rows(0, n, reinterpret_cast<std::byte*>(f.positions.data()));
  }
  {
    const NpyArray a = read_npy(cpath);
    expect_dtype(a, {NpyType::f4}, "float32", cpath);
    expect_shape(a, {slots}, ("(" + layout + ",)").c_str(), cpath);
    f.codebook = npy_to_float32(a, cpath);
    for (std::int64_t s = 0; s < slots; ++s)
      if (!std::isfinite(f.codebook[s]))
        throw InputError(cpath, "non-finite codebook value " + std::to_string(f.codebook[s]) +
                                    " at slot " + std::to_string(s));
  }
  validate_sparse_features(f, ppath);
  ds.features = Matrix(n, 0);
}

/// manifest.json of a dataset directory, its format and version checked.
Json read_manifest(const std::string& dir) {
  if (!fs::is_directory(dir)) throw InputError(dir, "not a directory (missing dataset)");
  const std::string manifest_path = join(dir, "manifest.json");
  if (!fs::exists(manifest_path)) throw InputError(manifest_path, "missing");
  Json m = read_json_file(manifest_path);
  if (!m.is_object()) throw InputError(manifest_path, "not a JSON object");
  if (!m.contains("format") || m["format"] != kFormat)
    throw InputError(manifest_path, std::string("not a halognn dataset manifest (\"format\" must be \"") +
                                        kFormat + "\")");
  const std::int64_t version = manifest_int(m, "version", manifest_path);
  if (version != kVersionDense && version != kVersionSparse)
    throw InputError(manifest_path, "unknown format version " + std::to_string(version) +
                                        " (this build reads versions 1 and 2)");
  if (m.contains(kSparseKey)) {
    if (!m[kSparseKey].is_object())
      throw InputError(manifest_path, std::string("\"") + kSparseKey + "\" must be an object");
    if (version < kVersionSparse)
      throw InputError(manifest_path, std::string("\"") + kSparseKey +
                                          "\" needs format version 2, the manifest says 1");
  }
  return m;
}

/// The manifest's "sparsified_features" entry, checked (k = 0 when there is none).
StoredFeatures parse_feature_form(const Json& m, const std::string& manifest) {
  StoredFeatures f;
  const std::int64_t n = manifest_int(m, "num_nodes", manifest);
  f.num_features = manifest_int(m, "num_features", manifest);
  if (!m.contains(kSparseKey)) return f;
  const Json& spec = m[kSparseKey];
  const std::string key = std::string("\"") + kSparseKey + "\": ";
  const std::int64_t k = json_int(spec, "k", manifest);
  if (k < 1 || k > kSparsifyMaxK)
    throw InputError(manifest, key + "k = " + std::to_string(k) + " (must be in [1, " +
                                   std::to_string(kSparsifyMaxK) + "])");
  if (f.num_features < 2)
    throw InputError(manifest, key + "num_features = " + std::to_string(f.num_features) +
                                   ", sparsified features need at least 2 columns");
  const std::int64_t sample = json_int(spec, "codebook_sample", manifest);
  const std::int64_t seed = json_int(spec, "codebook_seed", manifest);
  const std::int64_t sampled = json_int(spec, "codebook_rows", manifest);
  if (sample < 1 || seed < 0 || sampled < 0 || sampled > n)
    throw InputError(manifest, key + "codebook_sample " + std::to_string(sample) +
                                   ", codebook_seed " + std::to_string(seed) + ", codebook_rows " +
                                   std::to_string(sampled) + " (sample at least 1, seed at least "
                                   "0, rows in [0, num_nodes = " + std::to_string(n) + "])");
  f.k = static_cast<std::int32_t>(k);
  f.codebook_sample = sample;
  f.codebook_seed = static_cast<std::uint64_t>(seed);
  f.codebook_rows = sampled;
  return f;
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
  if (ds.sparsified()) check_sparse_features(ds, origin);
  else check_features(ds.features, n, origin);
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

Dataset read_dataset(const std::string& dir, const SparsifyOnRead& sparsify) {
  const std::string manifest_path = join(dir, "manifest.json");
  const Json m = read_manifest(dir);
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
      throw InputError(path, "shape " + format_shape(a.shape) + " is not (num_edges, 2)");
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

  // The features last: streaming them through the encoder is the slow part, and every cheaper
  // check has been made by then.
  const StoredFeatures form = parse_feature_form(m, manifest_path);
  if (form.k > 0) {
    if (sparsify.k > 0)
      throw InputError(dir, "its features are sparsified already (k = " + std::to_string(form.k) +
                                "); sparsifying needs a dataset with a dense features.npy");
    read_sparse_features(dir, form, n, ds);
  } else {
    for (const char* f : {kPositionsFile, kCodebookFile})
      if (fs::exists(join(dir, f)))
        throw InputError(join(dir, f), std::string("sparsified features, but manifest.json has no "
                                                   "\"") + kSparseKey +
                                           "\" entry and the features are dense (keep one form)");
    if (sparsify.k > 0) stream_sparsified_features(dir, n, num_features, sparsify, ds);
    else read_dense_features(dir, n, num_features, ds);
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
  if (ds.sparsified()) {
    const SparseFeatures& f = ds.sparse_features;
    write_npy(tmp(kPositionsFile), NpyType::u1, {n, f.layout.slots()}, f.positions);
    write_npy(tmp(kCodebookFile), NpyType::f4, {f.layout.slots()}, f.codebook);
  } else {
    const std::vector<float> host_copy =
        ds.features.device().is_host() ? std::vector<float>{} : ds.features.to_host();
    const float* p = ds.features.device().is_host() ? ds.features.data() : host_copy.data();
    write_npy(tmp(kDenseFile), NpyType::f4, {n, ds.features.cols()},
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
  m["version"] = ds.sparsified() ? kVersionSparse : kVersionDense;
  m["name"] = ds.name;
  m["num_nodes"] = n;
  m["num_edges"] = e;
  m["num_features"] = ds.num_features();
  m["num_classes"] = ds.num_classes;
  m["multilabel"] = ds.multilabel;
  if (ds.sparsified()) {
    const SparseFeatures& f = ds.sparse_features;
    Json sp = Json::object();
    sp["k"] = f.layout.k;
    sp["codebook_sample"] = f.codebook_sample;
    sp["codebook_seed"] = static_cast<std::int64_t>(f.codebook_seed);
    sp["codebook_rows"] = f.codebook_rows;
    m[kSparseKey] = std::move(sp);
  }
  m["meta"] = ds.meta.is_object() ? ds.meta : Json::object();
  // The manifest goes last: a directory without one is recognisably incomplete.
  write_file_atomic(tmp("manifest.json"), dump_json(m, 2) + "\n");
  out.commit();
}

StoredFeatures read_stored_features(const std::string& dir) {
  return parse_feature_form(read_manifest(dir), join(dir, "manifest.json"));
}

void sparsify_dataset(Dataset& ds, std::int32_t k, std::int64_t sample, std::uint64_t seed) {
  GNN_CHECK_CONFIG(!ds.sparsified(), "--sparsify-features: the features of ", ds.name,
                   " are sparsified already (k = ", ds.sparse_features.layout.k, ")");
  GNN_CHECK_CONFIG(sample >= 1, "--sparsify-sample must be at least 1, got ", sample);
  GNN_CHECK_CONFIG(ds.features.device().is_host(), "sparsify_dataset: features must be on the host");
  SparseFeatures f = sparsify_features(ds.features.data(), ds.num_nodes, ds.features.cols(), k,
                                       seed, sparsify_sample_fraction(sample, ds.num_nodes));
  f.codebook_sample = sample;
  f.codebook_seed = seed;
  ds.sparse_features = std::move(f);
  ds.features = Matrix(ds.num_nodes, 0);
}

}  // namespace halognn
