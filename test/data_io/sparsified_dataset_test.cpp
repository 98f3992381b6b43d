// Datasets with sparsified features (docs/datasets.md "Sparsified features"): the round trip,
// streaming features.npy through the encoder against encoding the matrix in memory, and every
// malformed sparsified dataset refused in one line naming the file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/atomic_output.hpp"
#include "core/data/dataset.hpp"
#include "core/data/feature_sparsify.hpp"
#include "core/data/npy.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/rng.hpp"
#include "test/data_io/test_util.hpp"

namespace halognn {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kNodes = 60, kCols = 300;  // a full 256-wide chunk and a 44-wide tail
constexpr std::int32_t kK = 5;                    // 10 + 10 slots
constexpr std::int64_t kSample = 20;              // of 60 nodes: the sample path matters
constexpr std::uint64_t kSeed = 3;

/// A ring plus chords with seeded uniform features, 3 classes.
Dataset wide_dataset() {
  Dataset ds;
  ds.name = "wide";
  ds.num_nodes = kNodes;
  for (std::int64_t v = 0; v < kNodes; ++v) {
    ds.edge_src.push_back(v);
    ds.edge_dst.push_back((v + 1) % kNodes);
    ds.edge_src.push_back(v);
    ds.edge_dst.push_back((v * 7 + 5) % kNodes);
  }
  const CounterRng rng(RngKey{11, RngPurpose::test, 0, 0});
  std::vector<float> x(static_cast<std::size_t>(kNodes * kCols));
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = rng.uniform(k, 0) * 4.0f - 2.0f;
  ds.features = Matrix::from_host(kNodes, kCols, x);
  ds.num_classes = 3;
  for (std::int64_t v = 0; v < kNodes; ++v) ds.labels.push_back(static_cast<std::int32_t>(v % 3));
  for (std::int64_t v = 0; v < 12; ++v) ds.train_idx.push_back(v);
  for (std::int64_t v = 12; v < 24; ++v) ds.val_idx.push_back(v);
  for (std::int64_t v = 24; v < kNodes; ++v) ds.test_idx.push_back(v);
  ds.meta = Json::object();
  ds.meta["source"] = "unit test";
  return ds;
}

/// Expects `f` to throw an InputError naming `path` and containing `needle`, on one line.
template <typename F>
void expect_input_error(F&& f, const std::string& path, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming " << path << " with: " << needle;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

class SparsifiedDataset : public ::testing::Test {
 protected:
  void SetUp() override {
    dense_ = wide_dataset();
    dense_dir_ = scratch_.file("dense");
    write_dataset(dense_, dense_dir_);
    sparse_ = sparsified();
    dir_ = scratch_.file("sparse");
    write_dataset(sparse_, dir_);
  }
  static Dataset sparsified() {
    Dataset ds = wide_dataset();
    sparsify_dataset(ds, kK, kSample, kSeed);
    return ds;
  }
  std::string file(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  Json manifest() const { return read_json_file(file("manifest.json")); }
  void write_manifest(const Json& m) const { write_file_atomic(file("manifest.json"), m.dump(2)); }
  void expect_read_error(const std::string& name, const std::string& needle) const {
    expect_input_error([&] { read_dataset(dir_); }, file(name), needle);
  }

  test::ScratchDir scratch_;
  Dataset dense_, sparse_;
  std::string dense_dir_, dir_;
};

TEST_F(SparsifiedDataset, RoundTripsPositionsCodebookAndProvenance) {
  // In memory: the encoder over the matrix, with the sample fraction halognn-partition uses.
  const SparseFeatures want = sparsify_features(dense_.features.data(), kNodes, kCols, kK, kSeed,
                                                static_cast<double>(kSample) / kNodes);
  const SparseFeatures& f = sparse_.sparse_features;
  ASSERT_TRUE(sparse_.sparsified());
  EXPECT_EQ(f.positions, want.positions);
  EXPECT_EQ(f.codebook, want.codebook);
  EXPECT_EQ(f.codebook_rows, want.codebook_rows);
  EXPECT_GT(f.codebook_rows, 0);
  EXPECT_LT(f.codebook_rows, kNodes);  // a real sample, not every node
  EXPECT_EQ(sparse_.features.rows(), kNodes);
  EXPECT_EQ(sparse_.features.cols(), 0);
  EXPECT_EQ(sparse_.num_features(), kCols);

  const Dataset back = read_dataset(dir_);
  ASSERT_TRUE(back.sparsified());
  EXPECT_EQ(back.num_features(), kCols);
  EXPECT_EQ(back.features.rows(), kNodes);
  EXPECT_EQ(back.features.cols(), 0);
  const SparseFeatures& b = back.sparse_features;
  EXPECT_EQ(b.layout.k, kK);
  EXPECT_EQ(b.layout.slots(), 20);
  EXPECT_EQ(b.rows, kNodes);
  EXPECT_EQ(b.positions, f.positions);
  EXPECT_EQ(b.codebook, f.codebook);
  EXPECT_EQ(b.codebook_rows, f.codebook_rows);
  EXPECT_EQ(b.codebook_sample, kSample);
  EXPECT_EQ(b.codebook_seed, kSeed);
  test::expect_same_except_features(back, dense_);

  EXPECT_FALSE(fs::exists(file("features.npy")));
  const Json m = manifest();
  EXPECT_EQ(m.at("version").get<int>(), 2);
  EXPECT_EQ(m.at("num_features").get<std::int64_t>(), kCols);
  EXPECT_EQ(m.at("sparsified_features").at("k").get<int>(), kK);
  EXPECT_EQ(m.at("sparsified_features").at("codebook_sample").get<std::int64_t>(), kSample);
  EXPECT_EQ(m.at("sparsified_features").at("codebook_seed").get<std::int64_t>(), 3);
  EXPECT_EQ(m.at("sparsified_features").at("codebook_rows").get<std::int64_t>(), f.codebook_rows);
  // A dense dataset keeps version 1 (what builds before sparsified datasets read).
  EXPECT_EQ(read_json_file(dense_dir_ + "/manifest.json").at("version").get<int>(), 1);

  const StoredFeatures sf = read_stored_features(dir_), df = read_stored_features(dense_dir_);
  EXPECT_EQ(sf.k, kK);
  EXPECT_EQ(sf.num_features, kCols);
  EXPECT_EQ(sf.codebook_sample, kSample);
  EXPECT_EQ(sf.codebook_seed, kSeed);
  EXPECT_EQ(sf.codebook_rows, f.codebook_rows);
  EXPECT_EQ(df.k, 0);
  EXPECT_EQ(df.num_features, kCols);
}

TEST_F(SparsifiedDataset, StreamingTheDenseFileEqualsEncodingTheMatrixInMemory) {
  // One row per block, 7 rows per block (the last block short), everything in one block.
  for (const std::int64_t rows_per_block : {std::int64_t{1}, std::int64_t{7}, kNodes}) {
    SparsifyOnRead opt;
    opt.k = kK;
    opt.sample = kSample;
    opt.seed = kSeed;
    opt.batch_bytes = rows_per_block * kCols * 4;
    std::vector<std::int64_t> done;
    opt.progress = [&](std::int64_t d, std::int64_t total) {
      EXPECT_EQ(total, kNodes);
      done.push_back(d);
    };
    const Dataset got = read_dataset(dense_dir_, opt);
    ASSERT_TRUE(got.sparsified());
    EXPECT_EQ(got.features.cols(), 0);
    EXPECT_EQ(got.sparse_features.positions, sparse_.sparse_features.positions) << rows_per_block;
    EXPECT_EQ(got.sparse_features.codebook, sparse_.sparse_features.codebook) << rows_per_block;
    EXPECT_EQ(got.sparse_features.codebook_rows, sparse_.sparse_features.codebook_rows);
    EXPECT_EQ(got.sparse_features.codebook_sample, kSample);
    EXPECT_EQ(got.sparse_features.codebook_seed, kSeed);
    ASSERT_EQ(static_cast<std::int64_t>(done.size()), (kNodes + rows_per_block - 1) / rows_per_block);
    EXPECT_EQ(done.back(), kNodes);
    EXPECT_EQ(got.labels, dense_.labels);
  }
  // Another seed draws another sample: the seed reaches the encoder.
  SparsifyOnRead other;
  other.k = kK;
  other.sample = kSample;
  other.seed = kSeed + 1;
  EXPECT_NE(read_dataset(dense_dir_, other).sparse_features.codebook,
            sparse_.sparse_features.codebook);
}

TEST_F(SparsifiedDataset, StreamingReadsFloat64AndFortranOrderFeatures) {
  // The same values as float64 in Fortran order (exact: they are float32 values).
  const std::vector<float> x = dense_.features.to_host();
  std::vector<double> cols(x.size());
  for (std::int64_t i = 0; i < kNodes; ++i)
    for (std::int64_t j = 0; j < kCols; ++j) cols[j * kNodes + i] = x[i * kCols + j];
  std::string head = npy_header(NpyType::f8, {kNodes, kCols}, cols.size() * 8);
  const std::size_t at = head.find("'fortran_order': False");
  ASSERT_NE(at, std::string::npos);
  head.replace(at, 22, "'fortran_order': True ");
  AtomicFile out(dense_dir_ + "/features.npy");
  out.write(head);
  out.write(cols.data(), cols.size() * 8);
  out.commit();
  ASSERT_TRUE(read_npy(dense_dir_ + "/features.npy").fortran_order);
  SparsifyOnRead opt;
  opt.k = kK;
  opt.sample = kSample;
  opt.seed = kSeed;
  opt.batch_bytes = 9 * kCols * 4;
  const Dataset got = read_dataset(dense_dir_, opt);
  EXPECT_EQ(got.sparse_features.positions, sparse_.sparse_features.positions);
  EXPECT_EQ(got.sparse_features.codebook, sparse_.sparse_features.codebook);
}

TEST_F(SparsifiedDataset, StreamingRefusesNonFiniteValuesAndASparsifiedInput) {
  std::vector<float> x = dense_.features.to_host();
  x[41 * kCols + 260] = std::numeric_limits<float>::quiet_NaN();
  write_npy(dense_dir_ + "/features.npy", NpyType::f4, {kNodes, kCols}, x);
  SparsifyOnRead opt;
  opt.k = kK;
  opt.batch_bytes = 8 * kCols * 4;  // the bad row is in the sixth block
  expect_input_error([&] { read_dataset(dense_dir_, opt); }, dense_dir_ + "/features.npy",
                     "non-finite feature value nan at node 41, column 260");
  // float64 beyond the float32 range is infinite after narrowing, as the dense reader sees it.
  std::vector<double> wide(x.begin(), x.end());
  wide[41 * kCols + 260] = 0.0;
  wide[3 * kCols + 7] = 1e300;
  write_npy(dense_dir_ + "/features.npy", NpyType::f8, {kNodes, kCols}, wide);
  expect_input_error([&] { read_dataset(dense_dir_, opt); }, dense_dir_ + "/features.npy",
                     "non-finite feature value inf at node 3, column 7");
  expect_input_error([&] { read_dataset(dense_dir_); }, dense_dir_ + "/features.npy",
                     "non-finite feature value inf at node 3, column 7");
  // Shape against the manifest before anything is encoded.
  write_npy(dense_dir_ + "/features.npy", NpyType::f4, {kNodes, kCols - 1},
            std::vector<float>(static_cast<std::size_t>(kNodes * (kCols - 1))));
  expect_input_error([&] { read_dataset(dense_dir_, opt); }, dense_dir_ + "/features.npy",
                     "299 columns but manifest.json says num_features = 300");
  expect_input_error([&] { read_dataset(dir_, opt); }, dir_,
                     "its features are sparsified already (k = 5)");
}

TEST_F(SparsifiedDataset, PositionsOfTheWrongShapeOrDtypeAreRefused) {
  write_npy(file("feature_positions.npy"), NpyType::u1, {kNodes, 19},
            std::vector<std::uint8_t>(static_cast<std::size_t>(kNodes * 19)));
  expect_read_error("feature_positions.npy",
                    "shape (60, 19) does not match the expected (num_nodes, slots of k = 5 over 300 "
                    "columns) = (60, 20)");
  write_npy(file("feature_positions.npy"), NpyType::u1, {kNodes - 1, 20},
            std::vector<std::uint8_t>(static_cast<std::size_t>((kNodes - 1) * 20)));
  expect_read_error("feature_positions.npy", "shape (59, 20) does not match");
  write_npy(file("feature_positions.npy"), NpyType::i8, {kNodes, 20},
            std::vector<std::int64_t>(static_cast<std::size_t>(kNodes * 20)));
  expect_read_error("feature_positions.npy", "dtype <i8 not allowed (expected uint8)");
}

TEST_F(SparsifiedDataset, APositionOutsideItsChunkOrTwiceInOneIsRefused) {
  std::vector<std::uint8_t> p = sparse_.sparse_features.positions;
  p[7 * 20 + 12] = 44;  // slot 12 is in the 44-wide tail chunk: positions 0..43
  write_npy(file("feature_positions.npy"), NpyType::u1, {kNodes, 20}, p);
  expect_read_error("feature_positions.npy",
                    "sparsified features: row 7 has a position outside its chunk");
  p = sparse_.sparse_features.positions;
  p[9 * 20 + 1] = p[9 * 20 + 0];
  write_npy(file("feature_positions.npy"), NpyType::u1, {kNodes, 20}, p);
  expect_read_error("feature_positions.npy", "row 9 has a position outside its chunk or twice");
}

TEST_F(SparsifiedDataset, ACodebookOfTheWrongLengthOrNotFiniteIsRefused) {
  std::vector<float> cb = sparse_.sparse_features.codebook;
  cb.pop_back();
  write_npy(file("feature_codebook.npy"), NpyType::f4, {19}, cb);
  expect_read_error("feature_codebook.npy",
                    "shape (19,) does not match the expected (slots of k = 5 over 300 columns,) = "
                    "(20,)");
  cb = sparse_.sparse_features.codebook;
  cb[3] = std::numeric_limits<float>::infinity();
  write_npy(file("feature_codebook.npy"), NpyType::f4, {20}, cb);
  expect_read_error("feature_codebook.npy", "non-finite codebook value inf at slot 3");
  cb[3] = std::numeric_limits<float>::quiet_NaN();
  write_npy(file("feature_codebook.npy"), NpyType::f4, {20}, cb);
  expect_read_error("feature_codebook.npy", "non-finite codebook value nan at slot 3");
  write_npy(file("feature_codebook.npy"), NpyType::f8, {20}, std::vector<double>(20, 0.5));
  expect_read_error("feature_codebook.npy", "dtype <f8 not allowed (expected float32)");
}

TEST_F(SparsifiedDataset, AMissingFileOrBothFormsAreRefused) {
  fs::remove(file("feature_codebook.npy"));
  expect_read_error("feature_codebook.npy",
                    "missing (manifest.json has \"sparsified_features\": the features are "
                    "sparsified)");
  write_dataset(sparse_, dir_);
  fs::remove(file("feature_positions.npy"));
  expect_read_error("feature_positions.npy", "missing (manifest.json has \"sparsified_features\"");
  // Dense features beside sparsified ones, and sparsified files beside dense ones.
  write_dataset(sparse_, dir_);
  fs::copy_file(dense_dir_ + "/features.npy", file("features.npy"));
  expect_read_error("features.npy", "dense features beside sparsified ones");
  fs::copy_file(file("feature_positions.npy"), dense_dir_ + "/feature_positions.npy");
  expect_input_error([&] { read_dataset(dense_dir_); }, dense_dir_ + "/feature_positions.npy",
                     "sparsified features, but manifest.json has no \"sparsified_features\" entry");
  fs::remove(dense_dir_ + "/feature_positions.npy");
  fs::copy_file(file("feature_codebook.npy"), dense_dir_ + "/feature_codebook.npy");
  expect_input_error([&] { read_dataset(dense_dir_); }, dense_dir_ + "/feature_codebook.npy",
                     "keep one form");
}

TEST_F(SparsifiedDataset, ManifestEntriesOutOfRangeAreRefused) {
  const Json good = manifest();
  auto with = [&](const char* key, Json value) {
    Json m = good;
    m["sparsified_features"][key] = std::move(value);
    write_manifest(m);
  };
  with("k", 0);
  expect_read_error("manifest.json", "\"sparsified_features\": k = 0 (must be in [1, 128])");
  with("k", 129);
  expect_read_error("manifest.json", "k = 129");
  with("k", 6);  // a valid k that the arrays do not have
  expect_read_error("feature_positions.npy", "(num_nodes, slots of k = 6 over 300 columns) = (60, 24)");
  with("k", "5");
  expect_read_error("manifest.json", "\"k\"");
  with("codebook_rows", kNodes + 1);
  expect_read_error("manifest.json", "codebook_rows 61");
  with("codebook_sample", 0);
  expect_read_error("manifest.json", "codebook_sample 0");
  with("codebook_seed", -1);
  expect_read_error("manifest.json", "codebook_seed -1");
  Json m = good;
  m["sparsified_features"].erase("codebook_seed");
  write_manifest(m);
  expect_read_error("manifest.json", "codebook_seed");
  auto with_top = [&](const char* key, Json value) {
    Json t = good;
    t[key] = std::move(value);
    write_manifest(t);
  };
  with_top("version", 1);
  expect_read_error("manifest.json", "\"sparsified_features\" needs format version 2");
  with_top("version", 3);
  expect_read_error("manifest.json", "unknown format version 3 (this build reads versions 1 and 2)");
  with_top("num_features", 1);
  expect_read_error("manifest.json", "sparsified features need at least 2 columns");
  with_top("sparsified_features", 5);
  expect_read_error("manifest.json", "\"sparsified_features\" must be an object");
}

TEST_F(SparsifiedDataset, InMemoryChecksAndSparsifyingTwiceAreRefused) {
  Dataset both = sparsified();
  both.features = Matrix(kNodes, 3);
  expect_input_error([&] { validate_dataset(both, "mem"); }, "mem",
                     "sparsified features beside a dense matrix of 60 x 3");
  Dataset short_rows = sparsified();
  short_rows.sparse_features.rows = kNodes - 1;
  expect_input_error([&] { validate_dataset(short_rows, "mem"); }, "mem",
                     "sparsified features have 59 rows, expected 60");
  Dataset bad_pos = sparsified();
  bad_pos.sparse_features.positions[15] = 255;  // slot 15: the 44-wide tail chunk
  expect_input_error([&] { write_dataset(bad_pos, scratch_.file("never")); },
                     scratch_.file("never"), "has a position outside its chunk");
  EXPECT_FALSE(fs::exists(scratch_.file("never")));
  Dataset again = sparsified();
  EXPECT_THROW(sparsify_dataset(again, kK, kSample, kSeed), ConfigError);
  Dataset zero = wide_dataset();
  EXPECT_THROW(sparsify_dataset(zero, 0, kSample, kSeed), ConfigError);
  EXPECT_THROW(sparsify_dataset(zero, kK, 0, kSeed), ConfigError);
}

}  // namespace
}  // namespace halognn
