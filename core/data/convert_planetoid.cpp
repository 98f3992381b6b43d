// Planetoid ind.<name>.* pickles (Yang et al. 2016): the public split of Cora, CiteSeer, PubMed.
#include <algorithm>
#include <filesystem>

#include "core/data/convert_common.hpp"
#include "core/data/converters.hpp"
#include "core/data/pickle.hpp"
#include "core/error.hpp"

namespace halognn {
using namespace convert_detail;

namespace {

const PyValue& expect_kind(const PyValue& v, PyValue::Kind k, const std::string& path,
                           const char* what) {
  GNN_CHECK_INPUT(v.kind == k, path, "expected ", what, ", found a Python ", v.kind_name());
  return v;
}

/// A one-hot label matrix (ndarray rows x classes) as class ids; an all-zero row is -1.
std::vector<std::int32_t> onehot_labels(const PyValue& v, const std::string& path,
                                        std::int64_t& classes) {
  expect_kind(v, PyValue::Kind::ndarray, path, "a numpy array");
  GNN_CHECK_INPUT(v.array.shape.size() == 2, path, "expected a 2-d label matrix");
  const std::int64_t rows = v.array.shape[0], cols = v.array.shape[1];
  if (classes < 0) classes = cols;
  GNN_CHECK_INPUT(cols == classes, path, "has ", cols, " label columns, expected ", classes);
  const std::vector<std::int64_t> y = npy_to_int64(v.array, path);
  std::vector<std::int32_t> out(static_cast<std::size_t>(rows), -1);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t ones = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t val = y[r * cols + c];
      GNN_CHECK_INPUT(val == 0 || val == 1, path, "row ", r, " is not one-hot");
      if (val) {
        ++ones;
        out[r] = static_cast<std::int32_t>(c);
      }
    }
    GNN_CHECK_INPUT(ones <= 1, path, "row ", r, " has ", ones, " ones (not one-hot)");
  }
  return out;
}

/// Copies the CSR rows of `m` into feature rows `target[i]` of `x`.
void scatter_rows(const PyValue& m, const std::string& path, const std::vector<GlobalId>& target,
                  Matrix& x) {
  expect_kind(m, PyValue::Kind::csr, path, "a scipy CSR matrix");
  GNN_CHECK_INPUT(m.cols == x.cols(), path, "has ", m.cols, " feature columns, expected ", x.cols());
  GNN_CHECK_INPUT(m.rows == static_cast<std::int64_t>(target.size()), path, "has ", m.rows,
                  " rows, expected ", target.size());
  const Matrix dense = csr_to_dense(m.rows, m.cols, m.indptr, m.indices, m.data, path);
  const std::int64_t f = x.cols();
  for (std::size_t i = 0; i < target.size(); ++i)
    std::copy_n(dense.data() + static_cast<std::int64_t>(i) * f, f, x.data() + target[i] * f);
}

}  // namespace

Dataset convert_planetoid(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  auto file = [&](const std::string& ext) { return (fs::path(dir) / ("ind." + name + "." + ext)).string(); };
  const std::string px = file("x"), py = file("y"), ptx = file("tx"), pty = file("ty"),
                    pallx = file("allx"), pally = file("ally"), pgraph = file("graph"),
                    ptest = file("test.index");

  const PyValue x = read_pickle(px);
  const PyValue tx = read_pickle(ptx);
  std::int64_t classes = -1;
  const std::vector<std::int32_t> y = onehot_labels(read_pickle(py), py, classes);
  const std::vector<std::int32_t> ty = onehot_labels(read_pickle(pty), pty, classes);
  const std::vector<std::int32_t> ally = onehot_labels(read_pickle(pally), pally, classes);
  const PyValue graph = read_pickle(pgraph);
  expect_kind(x, PyValue::Kind::csr, px, "a scipy CSR matrix");
  expect_kind(graph, PyValue::Kind::dict, pgraph, "a dict of adjacency lists");

  std::vector<GlobalId> test_index;
  {
    const std::string text = read_text_file(ptest);
    std::int64_t ln = 0;
    for (std::string_view l : split_lines(text)) {
      ++ln;
      if (l.empty()) continue;
      test_index.push_back(parse_int(l, ptest, ln));
    }
  }
  GNN_CHECK_INPUT(test_index.size() == ty.size(), ptest, "has ", test_index.size(),
                  " ids but ", pty, " has ", ty.size(), " rows");
  const auto n_train = static_cast<GlobalId>(y.size());
  const auto n_all = static_cast<GlobalId>(ally.size());
  GNN_CHECK_INPUT(x.rows == n_train, px, "has ", x.rows, " rows, ", py, " has ", n_train);
  GNN_CHECK_INPUT(std::equal(y.begin(), y.end(), ally.begin()) && n_train <= n_all, pally,
                  "its first rows differ from ", py);

  // Edges: every (key, neighbour) entry as stored; node count covers keys, neighbours and ids.
  Dataset ds;
  ds.name = name;
  GlobalId n = n_all;
  for (const auto& [k, nbrs] : graph.dict) {
    GNN_CHECK_INPUT(k.kind == PyValue::Kind::integer && k.i >= 0, pgraph, "non-integer node key");
    const std::vector<std::int64_t> list = py_to_int64_list(nbrs, pgraph);
    for (std::int64_t u : list) {
      GNN_CHECK_INPUT(u >= 0, pgraph, "negative neighbour id ", u);
      ds.edge_src.push_back(k.i);
      ds.edge_dst.push_back(u);
      n = std::max(n, u + 1);
    }
    n = std::max(n, k.i + 1);
  }
  for (GlobalId t : test_index) {
    GNN_CHECK_INPUT(t >= n_all, ptest, "test id ", t, " overlaps the allx/ally ids 0..", n_all - 1);
    n = std::max(n, t + 1);
  }
  ds.num_nodes = n;
  ds.num_classes = static_cast<std::int32_t>(classes);
  const std::int64_t f = x.cols;

  // Features: rows 0..n_all-1 from allx (or only 0..n_train-1 from x when allx is missing),
  // test.index[i] from tx[i]; every other id keeps a zero row.
  ds.features = Matrix(n, f);
  std::vector<std::uint8_t> has_features(static_cast<std::size_t>(n), 0);
  const bool have_allx = is_file(pallx);
  std::vector<GlobalId> head(static_cast<std::size_t>(have_allx ? n_all : n_train));
  for (std::size_t i = 0; i < head.size(); ++i) head[i] = static_cast<GlobalId>(i);
  if (have_allx) scatter_rows(read_pickle(pallx), pallx, head, ds.features);
  else scatter_rows(x, px, head, ds.features);
  scatter_rows(tx, ptx, test_index, ds.features);
  for (GlobalId v : head) has_features[v] = 1;
  for (GlobalId v : test_index) has_features[v] = 1;

  ds.labels.assign(static_cast<std::size_t>(n), -1);
  for (GlobalId v = 0; v < n_all; ++v) ds.labels[v] = ally[v];
  for (std::size_t i = 0; i < test_index.size(); ++i) ds.labels[test_index[i]] = ty[i];

  // The public split: train = x's rows, val = the next 500 ids, test = test.index.
  const GlobalId n_val = std::min<GlobalId>(500, n_all - n_train);
  for (GlobalId v = 0; v < n_train; ++v) ds.train_idx.push_back(v);
  for (GlobalId v = n_train; v < n_train + n_val; ++v) ds.val_idx.push_back(v);
  ds.test_idx = test_index;
  std::sort(ds.test_idx.begin(), ds.test_idx.end());
  GNN_CHECK_INPUT(std::adjacent_find(ds.test_idx.begin(), ds.test_idx.end()) == ds.test_idx.end(),
                  ptest, "repeats a node id");

  const auto missing = static_cast<std::int64_t>(
      std::count(has_features.begin(), has_features.end(), std::uint8_t{0}));
  GlobalId unlabelled_ids = 0;  // ids that are neither in allx/ally nor in test.index
  for (GlobalId v = n_all; v < n; ++v) unlabelled_ids += ds.labels[v] < 0 ? 1 : 0;

  ds.meta["source_format"] = "planetoid";
  Json files = Json::array();
  for (const std::string& p : {px, py, ptx, pty, pallx, pally, pgraph, ptest})
    if (is_file(p)) files.push_back(p);
  ds.meta["source"] = std::move(files);
  Json split = Json::object();
  split["kind"] = "planetoid-public";
  split["train"] = "ids 0.." + std::to_string(n_train - 1);
  split["val"] = "ids " + std::to_string(n_train) + ".." + std::to_string(n_train + n_val - 1);
  split["test"] = "ind." + name + ".test.index";
  ds.meta["split"] = std::move(split);
  ds.meta["features_missing"] = missing;
  if (unlabelled_ids > 0) {
    ds.meta["ids_without_data"] = unlabelled_ids;
    add_warning(ds, std::to_string(unlabelled_ids) + " node ids in " + std::to_string(n_all) +
                        ".." + std::to_string(n - 1) +
                        " are absent from test.index: zero features, no label (as the reference "
                        "GCN loader does)");
  }
  if (!have_allx)
    add_warning(ds, "ind." + name + ".allx is missing: " + std::to_string(missing) + " of " +
                        std::to_string(n) +
                        " nodes have all-zero features (only x and tx rows are real); usable "
                        "for graph/partition tests, not for accuracy");
  return ds;
}

}  // namespace halognn
