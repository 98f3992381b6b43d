#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/atomic_output.hpp"
#include "core/data/dataset.hpp"
#include "core/data/npy.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/rng.hpp"
#include "test/data_io/test_util.hpp"

namespace halognn {
namespace {

namespace fs = std::filesystem;

/// A small valid dataset: a ring plus chords, seeded features, 3 classes, a few unlabelled nodes.
Dataset small_dataset(std::int64_t n = 40, std::int64_t f = 5) {
  Dataset ds;
  ds.name = "tiny";
  ds.num_nodes = n;
  for (std::int64_t v = 0; v < n; ++v) {
    ds.edge_src.push_back(v);
    ds.edge_dst.push_back((v + 1) % n);
    if (v % 3 == 0) {
      ds.edge_src.push_back(v);
      ds.edge_dst.push_back((v * 7 + 5) % n);
    }
  }
  std::vector<float> x(static_cast<std::size_t>(n * f));
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>((k * 2654435761u) % 1000) / 37.0f;
  ds.features = Matrix::from_host(n, f, x);
  ds.num_classes = 3;
  ds.labels.resize(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v) ds.labels[v] = v % 10 == 9 ? -1 : static_cast<std::int32_t>(v % 3);
  for (std::int64_t v = 0; v < 10; ++v) ds.train_idx.push_back(v);
  for (std::int64_t v = 10; v < 15; ++v) ds.val_idx.push_back(v);
  for (std::int64_t v = 20; v < 29; ++v) ds.test_idx.push_back(v);
  ds.train_idx.erase(ds.train_idx.begin() + 9);  // node 9 is unlabelled
  ds.meta = Json::object();
  ds.meta["source"] = "unit test";
  return ds;
}

void expect_same(const Dataset& a, const Dataset& b) {
  test::expect_same_except_features(a, b);
  EXPECT_EQ(a.features.rows(), b.features.rows());
  EXPECT_EQ(a.features.cols(), b.features.cols());
  EXPECT_EQ(a.features.to_host(), b.features.to_host());
}

/// Expects read_dataset(dir) to fail with a message naming `file` and containing `needle`.
void expect_read_error(const std::string& dir, const std::string& file, const std::string& needle) {
  try {
    read_dataset(dir);
    ADD_FAILURE() << "read_dataset accepted a bad dataset; expected: " << needle;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find((fs::path(dir) / file).string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

class DatasetIo : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = scratch_.file("tiny");
    write_dataset(small_dataset(), path_);
  }
  std::string file(const std::string& name) const { return (fs::path(path_) / name).string(); }
  Json manifest() const { return read_json_file(file("manifest.json")); }
  void set_manifest(const std::string& key, Json value) const {
    Json m = manifest();
    m[key] = std::move(value);
    write_file_atomic(file("manifest.json"), m.dump(2));
  }
  template <typename T>
  void put(const std::string& name, NpyType t, std::vector<std::int64_t> shape,
           const std::vector<T>& v) const {
    write_npy(file(name), t, shape, v);
  }
  void put_raw(const std::string& name, const std::string& bytes) const {
    std::ofstream(file(name), std::ios::binary | std::ios::trunc) << bytes;
  }
  std::string raw(const std::string& name) const {
    std::ifstream in(file(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  test::ScratchDir scratch_;
  std::string path_;
};

TEST_F(DatasetIo, RoundTripsASingleLabelDataset) {
  const Dataset back = read_dataset(path_);
  expect_same(small_dataset(), back);
  const Json m = manifest();
  EXPECT_EQ(m.at("format").get<std::string>(), "halognn-dataset");
  EXPECT_EQ(m.at("version").get<std::int64_t>(), 1);
  EXPECT_EQ(m.at("num_edges").get<std::int64_t>(), static_cast<std::int64_t>(back.edge_src.size()));
  EXPECT_EQ(read_npy(file("edges.npy")).type, NpyType::i8);
  EXPECT_EQ(read_npy(file("features.npy")).type, NpyType::f4);
  EXPECT_TRUE(fs::exists(file("train_idx.npy")));
}

TEST_F(DatasetIo, RoundTripsAMultiLabelDatasetAndReplacesTheOldOne) {
  Dataset ds = small_dataset();
  ds.multilabel = true;
  ds.labels.clear();
  ds.label_matrix.assign(static_cast<std::size_t>(ds.num_nodes * ds.num_classes), 0);
  for (std::size_t k = 0; k < ds.label_matrix.size(); k += 4) ds.label_matrix[k] = 1;
  ds.train_idx.push_back(19);  // an unlabelled-looking node is fine in multi-label data
  write_dataset(ds, path_ + "/");
  expect_same(ds, read_dataset(path_));
  EXPECT_EQ(read_npy(file("labels.npy")).shape,
            (std::vector<std::int64_t>{ds.num_nodes, ds.num_classes}));
  for (const auto& e : fs::directory_iterator(scratch_.path()))
    EXPECT_EQ(e.path().filename(), "tiny") << "leftover " << e.path();
}

TEST_F(DatasetIo, AcceptsAlternativeDtypesAndMaskSplits) {
  const Dataset ref = read_dataset(path_);
  std::vector<std::int32_t> e32;
  for (std::size_t k = 0; k < ref.edge_src.size(); ++k) {
    e32.push_back(static_cast<std::int32_t>(ref.edge_src[k]));
    e32.push_back(static_cast<std::int32_t>(ref.edge_dst[k]));
  }
  put("edges.npy", NpyType::i4, {static_cast<std::int64_t>(ref.edge_src.size()), 2}, e32);
  const auto x = ref.features.to_host();
  put("features.npy", NpyType::f8, {ref.num_nodes, ref.features.cols()},
      std::vector<double>(x.begin(), x.end()));
  put("labels.npy", NpyType::i4, {ref.num_nodes}, ref.labels);
  fs::remove(file("val_idx.npy"));
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(ref.num_nodes), 0);
  for (auto v : ref.val_idx) mask[v] = 1;
  put("val_mask.npy", NpyType::b1, {ref.num_nodes}, mask);
  std::vector<std::int32_t> test32(ref.test_idx.rbegin(), ref.test_idx.rend());  // unsorted on disk
  put("test_idx.npy", NpyType::i4, {static_cast<std::int64_t>(test32.size())}, test32);
  expect_same(ref, read_dataset(path_));
}

TEST_F(DatasetIo, RejectsMissingAndCorruptFilesNamingThem) {
  const std::string edges = raw("edges.npy");
  fs::remove(file("edges.npy"));
  expect_read_error(path_, "edges.npy", "cannot open");
  put_raw("edges.npy", "garbage that is not an npy file");
  expect_read_error(path_, "edges.npy", "bad magic");
  put_raw("edges.npy", edges.substr(0, 70));
  expect_read_error(path_, "edges.npy", "truncated");
  put_raw("edges.npy", edges.substr(0, edges.size() - 8));
  expect_read_error(path_, "edges.npy", "data truncated");
  std::string bad_header = edges;
  bad_header.replace(bad_header.find("'shape'"), 7, "'shope'");
  put_raw("edges.npy", bad_header);
  expect_read_error(path_, "edges.npy", "malformed .npy header");
  put_raw("edges.npy", edges);
  fs::remove(file("labels.npy"));
  expect_read_error(path_, "labels.npy", "cannot open");
  fs::remove(file("manifest.json"));
  expect_read_error(path_, "manifest.json", "missing");
  EXPECT_THROW(read_dataset(scratch_.file("nope")), InputError);
}

TEST_F(DatasetIo, RejectsWrongDtypesAndShapes) {
  const Dataset ref = read_dataset(path_);
  const auto e = static_cast<std::int64_t>(ref.edge_src.size());
  put("edges.npy", NpyType::f4, {e, 2}, std::vector<float>(static_cast<std::size_t>(2 * e), 0.0f));
  expect_read_error(path_, "edges.npy", "dtype <f4 not allowed");
  put("edges.npy", NpyType::i8, {e}, ref.edge_src);
  expect_read_error(path_, "edges.npy", "not (num_edges, 2)");
  put("edges.npy", NpyType::i8, {e / 2, 2}, ref.edge_src);
  expect_read_error(path_, "edges.npy", "manifest.json says num_edges");
  write_dataset(ref, path_);
  put("features.npy", NpyType::i4, {ref.num_nodes, 5}, std::vector<std::int32_t>(ref.num_nodes * 5));
  expect_read_error(path_, "features.npy", "expected float32 or float64");
  put("features.npy", NpyType::f4, {ref.num_nodes - 1, 5}, std::vector<float>((ref.num_nodes - 1) * 5));
  expect_read_error(path_, "features.npy", "not (num_nodes, num_features)");
  put("features.npy", NpyType::f4, {ref.num_nodes, 4}, std::vector<float>(ref.num_nodes * 4));
  expect_read_error(path_, "features.npy", "manifest.json says num_features");
  write_dataset(ref, path_);
  put("labels.npy", NpyType::f4, {ref.num_nodes}, std::vector<float>(ref.num_nodes));
  expect_read_error(path_, "labels.npy", "not allowed");
  put("labels.npy", NpyType::i8, {ref.num_nodes, 1}, std::vector<std::int64_t>(ref.num_nodes));
  expect_read_error(path_, "labels.npy", "(num_nodes,)");
  put("labels.npy", NpyType::i8, {ref.num_nodes, ref.num_classes},
      std::vector<std::int64_t>(ref.num_nodes * ref.num_classes));
  expect_read_error(path_, "labels.npy", "(num_nodes,)");
  write_dataset(ref, path_);
  put("val_idx.npy", NpyType::u1, {2}, std::vector<std::uint8_t>{1, 2});
  expect_read_error(path_, "val_idx.npy", "int64 or int32");
  put("val_idx.npy", NpyType::i8, {1, 2}, std::vector<std::int64_t>{10, 11});
  expect_read_error(path_, "val_idx.npy", "not 1-D");
  fs::remove(file("val_idx.npy"));
  put("val_mask.npy", NpyType::b1, {ref.num_nodes + 1}, std::vector<std::uint8_t>(ref.num_nodes + 1));
  expect_read_error(path_, "val_mask.npy", "(num_nodes,)");
  put("val_mask.npy", NpyType::u1, {ref.num_nodes}, std::vector<std::uint8_t>(ref.num_nodes, 2));
  expect_read_error(path_, "val_mask.npy", "expected 0 or 1");
  put("val_idx.npy", NpyType::i8, {1}, std::vector<std::int64_t>{10});
  expect_read_error(path_, "val_idx.npy", "both");
  fs::remove(file("val_idx.npy"));
  fs::remove(file("val_mask.npy"));
  expect_read_error(path_, "val_idx.npy", "neither");
}

TEST_F(DatasetIo, RejectsOutOfRangeIdsLabelsAndNonFiniteFeatures) {
  const Dataset ref = read_dataset(path_);
  const auto e = static_cast<std::int64_t>(ref.edge_src.size());
  std::vector<std::int64_t> edges;
  for (std::int64_t k = 0; k < e; ++k) {
    edges.push_back(ref.edge_src[k]);
    edges.push_back(ref.edge_dst[k]);
  }
  edges[7] = ref.num_nodes;
  put("edges.npy", NpyType::i8, {e, 2}, edges);
  expect_read_error(path_, "edges.npy", "node id 40 out of range [0, 40)");
  edges[7] = -1;
  put("edges.npy", NpyType::i8, {e, 2}, edges);
  expect_read_error(path_, "edges.npy", "node id -1 out of range");
  write_dataset(ref, path_);

  auto x = ref.features.to_host();
  x[3 * 5 + 2] = std::numeric_limits<float>::quiet_NaN();
  put("features.npy", NpyType::f4, {ref.num_nodes, 5}, x);
  expect_read_error(path_, "features.npy", "non-finite feature value nan at node 3, column 2");
  x[3 * 5 + 2] = 0;
  std::vector<double> xd(x.begin(), x.end());
  xd[0] = 1e300;  // finite as float64, infinite after narrowing to float32
  put("features.npy", NpyType::f8, {ref.num_nodes, 5}, xd);
  expect_read_error(path_, "features.npy", "non-finite feature value inf at node 0");
  write_dataset(ref, path_);

  std::vector<std::int64_t> labels(ref.labels.begin(), ref.labels.end());
  labels[5] = 3;
  put("labels.npy", NpyType::i8, {ref.num_nodes}, labels);
  expect_read_error(path_, "labels.npy", "label 3 of node 5 out of range [-1, 3)");
  labels[5] = -2;
  put("labels.npy", NpyType::i8, {ref.num_nodes}, labels);
  expect_read_error(path_, "labels.npy", "label -2 of node 5");
}

TEST_F(DatasetIo, RejectsBadSplits) {
  put("train_idx.npy", NpyType::i8, {2}, std::vector<std::int64_t>{0, 40});
  expect_read_error(path_, "train_idx.npy", "split index 40 out of range [0, 40)");
  put("train_idx.npy", NpyType::i8, {3}, std::vector<std::int64_t>{4, 0, 4});
  expect_read_error(path_, "train_idx.npy", "node 4 is listed twice");
  put("train_idx.npy", NpyType::i8, {2}, std::vector<std::int64_t>{0, 9});
  expect_read_error(path_, "train_idx.npy", "split node 9 has no label (-1 in labels.npy)");
  put("train_idx.npy", NpyType::i8, {2}, std::vector<std::int64_t>{0, 1});
  put("test_idx.npy", NpyType::i8, {2}, std::vector<std::int64_t>{20, 1});
  expect_read_error(path_, "test_idx.npy", "node 1 is also in the train split");
  put("test_idx.npy", NpyType::i8, {1}, std::vector<std::int64_t>{12});
  expect_read_error(path_, "test_idx.npy", "node 12 is also in the val split");
  put("test_idx.npy", NpyType::i8, {0}, std::vector<std::int64_t>{});
  EXPECT_TRUE(read_dataset(path_).test_idx.empty());
}

TEST_F(DatasetIo, RejectsBadManifests) {
  set_manifest("version", 3);
  expect_read_error(path_, "manifest.json", "unknown format version 3 (this build reads versions 1 and 2)");
  set_manifest("version", 2);  // version 2 may hold sparsified features; this dataset has none
  EXPECT_NO_THROW(read_dataset(path_));
  set_manifest("version", 1);
  set_manifest("format", "something-else");
  expect_read_error(path_, "manifest.json", "not a halognn dataset manifest");
  set_manifest("format", "halognn-dataset");
  set_manifest("num_nodes", 41);
  // The features are read last (streaming them is the long part), so labels.npy tells first.
  expect_read_error(path_, "labels.npy", "shape (40,) does not match the expected (num_nodes,) = (41,)");
  set_manifest("num_nodes", "forty");
  expect_read_error(path_, "manifest.json", "\"num_nodes\" must be an integer");
  set_manifest("num_nodes", 40);
  set_manifest("num_classes", 2);
  expect_read_error(path_, "labels.npy", "out of range [-1, 2)");
  set_manifest("num_classes", 3);
  set_manifest("multilabel", true);
  expect_read_error(path_, "labels.npy", "uint8 or bool");
  set_manifest("multilabel", false);
  put_raw("manifest.json", "{\"format\": ");
  expect_read_error(path_, "manifest.json", "invalid JSON");
  // A directory whose manifest is unreadable is not recognisably a dataset: never replaced.
  EXPECT_THROW(write_dataset(small_dataset(), path_), InputError);
}

TEST(DatasetIoWrite, RefusesToReplaceADirectoryThatIsNotADataset) {
  test::ScratchDir dir;
  const std::string target = dir.file("precious");
  fs::create_directories(target);
  std::ofstream(target + "/thesis.tex") << "do not delete";
  EXPECT_THROW(write_dataset(small_dataset(), target), InputError);
  EXPECT_TRUE(fs::exists(target + "/thesis.tex"));
  const std::string fresh = dir.file("a/b/fresh");
  write_dataset(small_dataset(), fresh);
  EXPECT_EQ(read_dataset(fresh).num_nodes, 40);
}

TEST(DatasetIoValidate, ChecksInMemoryInvariants) {
  EXPECT_NO_THROW(validate_dataset(small_dataset(), "mem"));
  auto expect_bad = [](const Dataset& ds, const std::string& needle) {
    try {
      validate_dataset(ds, "in-memory tiny");
      ADD_FAILURE() << "accepted; expected " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("in-memory tiny"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  Dataset a = small_dataset();
  a.edge_dst[3] = 99;
  expect_bad(a, "node id 99 out of range");
  Dataset b = small_dataset();
  b.edge_dst.pop_back();
  expect_bad(b, "differ in length");
  Dataset c = small_dataset();
  c.features(2, 1) = std::numeric_limits<float>::infinity();
  expect_bad(c, "non-finite");
  Dataset d = small_dataset();
  d.val_idx = {12, 11};
  expect_bad(d, "not sorted");
  Dataset e = small_dataset();
  e.test_idx.push_back(39);  // label -1
  expect_bad(e, "has no label");
  Dataset f = small_dataset();
  f.labels.pop_back();
  expect_bad(f, "39 labels for 40 nodes");
  Dataset g = small_dataset();
  g.multilabel = true;
  expect_bad(g, "label matrix");
  // write_dataset validates first and leaves nothing behind.
  test::ScratchDir dir;
  EXPECT_THROW(write_dataset(a, dir.file("x")), InputError);
  EXPECT_FALSE(fs::exists(dir.file("x")));
}

}  // namespace
}  // namespace halognn
