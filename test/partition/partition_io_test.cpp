#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/data/feature_sparsify.hpp"
#include "core/json.hpp"
#include "core/rng.hpp"
#include "partition/partition_io.hpp"
#include "partition_fixtures.hpp"

namespace halognn {
namespace {

namespace fs = std::filesystem;

/// A partition of a small random graph written into a scratch directory.
class PartitionDir : public ::testing::Test {
 protected:
  void SetUp() override {
    ds_ = test::make_dataset(test::random_edges(400, 1600, 21));
    g_ = test::graph_of(ds_);
    cfg_ = PartitionConfig{4, PartitionConfig::Method::metis, PartitionConfig::Objective::cut, 3, {}};
    parts_ = assign_parts(g_, cfg_);
    out_ = tmp_ / "part";
    manifest_ = write_partition_dir(ds_, g_, parts_, cfg_, out_, &report_);
  }

  std::string rank_file(Rank r) const { return out_ + "/" + partition_file_name(r); }

  /// Expects read_local_partition(rank 1 of 4) to throw an InputError whose message names
  /// `file` and contains `fragment`.
  void expect_read_error(const std::string& file, const std::string& fragment, Rank world = 4) {
    try {
      read_local_partition(out_, 1, world);
      ADD_FAILURE() << "no error for " << fragment;
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(file, 0), 0u) << msg;
      EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }

  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static void spit(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }

  test::TempDir tmp_;
  Dataset ds_;
  GlobalGraph g_;
  PartitionConfig cfg_;
  std::vector<Rank> parts_;
  std::string out_;
  Json manifest_;
  PartitionReport report_;
};

TEST_F(PartitionDir, RoundTripReproducesEveryPart) {
  const auto built = build_local_partitions(ds_, g_, parts_, 4);
  std::vector<LocalPartition> read;
  for (Rank r = 0; r < 4; ++r) read.push_back(read_local_partition(out_, r, 4));
  test::expect_consistent(ds_, g_, parts_, 4, read);
  for (Rank r = 0; r < 4; ++r) {
    const LocalPartition& a = built[r];
    const LocalPartition& b = read[r];
    EXPECT_EQ(a.global_ids, b.global_ids);
    EXPECT_EQ(a.row_ptr, b.row_ptr);
    EXPECT_EQ(a.col, b.col);
    EXPECT_EQ(a.global_degree, b.global_degree);
    EXPECT_EQ(a.features.to_host(), b.features.to_host());
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_EQ(a.train_mask, b.train_mask);
    EXPECT_EQ(a.test_mask, b.test_mask);
    EXPECT_EQ(a.global_val, b.global_val);
    ASSERT_EQ(a.send.size(), b.send.size());
    for (std::size_t k = 0; k < a.send.size(); ++k) EXPECT_EQ(a.send[k].rows, b.send[k].rows);
  }
}

TEST_F(PartitionDir, ManifestRecordsDatasetConfigReportAndFiles) {
  const Json m = read_partition_manifest(out_);
  EXPECT_EQ(m.at("format").get<std::string>(), "halognn-partition");
  EXPECT_EQ(m.at("version").get<std::int64_t>(), kPartitionFormatVersion);
  EXPECT_EQ(m.at("parts").get<std::int64_t>(), 4);
  EXPECT_EQ(m.at("method").get<std::string>(), "metis");
  EXPECT_EQ(m.at("objective").get<std::string>(), "cut");
  EXPECT_EQ(m.at("seed").get<std::int64_t>(), 3);
  EXPECT_EQ(m.at("edge_cut").get<std::int64_t>(), report_.edge_cut);
  EXPECT_EQ(m.at("dataset").at("name").get<std::string>(), "test-graph");
  EXPECT_EQ(m.at("dataset").at("fingerprint").get<std::string>(), dataset_fingerprint(ds_));
  EXPECT_EQ(m.at("dataset").at("num_nodes").get<std::int64_t>(), 400);
  EXPECT_EQ(m.at("pair_volume").size(), report_.pair_volume.size());
  const Json& files = m.at("files");
  ASSERT_EQ(files.size(), 4u);
  for (Rank r = 0; r < 4; ++r) {
    EXPECT_EQ(files[r].at("file").get<std::string>(), partition_file_name(r));
    EXPECT_EQ(files[r].at("bytes").get<std::int64_t>(),
              static_cast<std::int64_t>(fs::file_size(rank_file(r))));
  }
  EXPECT_EQ(m.dump(), manifest_.dump());
}

TEST_F(PartitionDir, FingerprintChangesWithTheGraph) {
  Dataset other = test::make_dataset(test::random_edges(400, 1600, 22));
  EXPECT_NE(dataset_fingerprint(other), dataset_fingerprint(ds_));
  EXPECT_EQ(dataset_fingerprint(test::make_dataset(test::random_edges(400, 1600, 21))),
            dataset_fingerprint(ds_));
}

TEST_F(PartitionDir, RankReadsOnlyManifestAndItsOwnFile) {
  fs::remove(rank_file(0));
  fs::remove(rank_file(2));
  EXPECT_NO_THROW(read_local_partition(out_, 1, 4));
}

TEST_F(PartitionDir, RewritingReplacesAnExistingPartitionDirectory) {
  PartitionConfig two = cfg_;
  two.parts = 2;
  const auto parts2 = assign_parts(g_, two);
  write_partition_dir(ds_, g_, parts2, two, out_ + "/");
  EXPECT_EQ(read_partition_manifest(out_).at("parts").get<std::int64_t>(), 2);
  EXPECT_FALSE(fs::exists(rank_file(3)));
  EXPECT_NO_THROW(read_local_partition(out_, 1, 2));
  // No temporary or backup directory is left behind.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(tmp_.str())) entries += e.path() != fs::path(out_);
  EXPECT_EQ(entries, 0);
}

TEST_F(PartitionDir, RefusesToReplaceSomethingThatIsNotAPartition) {
  const std::string other = tmp_ / "precious";
  fs::create_directories(other);
  spit(other + "/notes.txt", "keep me");
  EXPECT_THROW(write_partition_dir(ds_, g_, parts_, cfg_, other), InputError);
  EXPECT_EQ(slurp(other + "/notes.txt"), "keep me");
}

TEST_F(PartitionDir, WorldSizeMismatchTellsHowToRepartition) {
  try {
    read_local_partition(out_, 1, 2);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              out_ + "/manifest.json: partition has 4 parts but the job has 2 ranks; re-run "
                     "halognn-partition --parts 2");
  }
}

TEST_F(PartitionDir, TruncatedRankFileIsReported) {
  const std::string bytes = slurp(rank_file(1));
  spit(rank_file(1), bytes.substr(0, bytes.size() / 2));
  expect_read_error(rank_file(1), "truncated");
  // Also when the manifest is bypassed: the file's own sections run past its end.
  try {
    read_local_partition_file(rank_file(1));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(rank_file(1)), std::string::npos);
  }
}

TEST_F(PartitionDir, FlippedByteFailsTheChecksum) {
  std::string bytes = slurp(rank_file(1));
  bytes[bytes.size() / 2] ^= 0x10;
  spit(rank_file(1), bytes);
  expect_read_error(rank_file(1), "checksum mismatch");
}

TEST_F(PartitionDir, FlippedByteInTheTrailerFailsTheChecksum) {
  std::string bytes = slurp(rank_file(1));
  bytes.back() ^= 0x01;
  spit(rank_file(1), bytes);
  expect_read_error(rank_file(1), "checksum mismatch");
}

TEST_F(PartitionDir, UnknownManifestVersionIsRejected) {
  std::string text = slurp(out_ + "/manifest.json");
  const std::string current = "\"version\": " + std::to_string(kPartitionFormatVersion);
  const auto at = text.find(current);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, current.size(), "\"version\": 9");
  spit(out_ + "/manifest.json", text);
  expect_read_error(out_ + "/manifest.json", "version 9");
}

TEST_F(PartitionDir, UnknownRankFileVersionIsRejected) {
  std::string bytes = slurp(rank_file(1));
  bytes[8] = 7;  // the u32 version follows the 8-byte magic
  spit(rank_file(1), bytes);
  expect_read_error(rank_file(1), "version 7");
}

TEST_F(PartitionDir, MissingRankFileIsReported) {
  fs::remove(rank_file(1));
  expect_read_error(rank_file(1), "missing rank file");
}

TEST_F(PartitionDir, MissingManifestIsReported) {
  fs::remove(out_ + "/manifest.json");
  expect_read_error(out_ + "/manifest.json", "missing");
}

TEST_F(PartitionDir, RankFileSwappedWithAnotherRanksIsReported) {
  // Same size is unlikely; copy rank 2's file and fix the manifest entry so only the header
  // check can catch it.
  fs::copy_file(rank_file(2), rank_file(1), fs::copy_options::overwrite_existing);
  Json m = read_partition_manifest(out_);
  Json files = m.at("files");
  Json entry = files[1];
  entry["bytes"] = files[2].at("bytes");
  entry["crc32"] = files[2].at("crc32");
  files[1] = entry;
  m["files"] = files;
  spit(out_ + "/manifest.json", m.dump(2));
  expect_read_error(rank_file(1), "expected rank 1 of 4");
}

TEST_F(PartitionDir, APartitionOfTheOlderFormatIsRefusedWithAHintToRepartition) {
  std::string text = slurp(out_ + "/manifest.json");
  const std::string current = "\"version\": " + std::to_string(kPartitionFormatVersion);
  text.replace(text.find(current), current.size(), "\"version\": 1");
  spit(out_ + "/manifest.json", text);
  expect_read_error(out_ + "/manifest.json", "version 1, this build reads versions 2 and 3; re-run "
                                             "halognn-partition");
}

/// Rewrites bytes of rank file `r` at `offset` and repairs its CRC32 trailer and the manifest's
/// entry, as a forged (or buggy) file that passes every checksum would be.
void forge(const std::string& dir, Rank r, std::size_t offset, const void* value, std::size_t n) {
  const std::string path = dir + "/" + partition_file_name(r);
  std::ifstream in(path, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  in.close();
  std::memcpy(bytes.data() + offset, value, n);
  const std::uint32_t crc = static_cast<std::uint32_t>(
      ::crc32(::crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(bytes.data()),
              static_cast<uInt>(bytes.size() - 4)));
  std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  Json m = read_json_file(dir + "/manifest.json");
  m["files"][static_cast<std::size_t>(r)]["crc32"] = crc;
  std::ofstream(dir + "/manifest.json", std::ios::trunc) << m.dump(2);
}

TEST_F(PartitionDir, AHugeFeatureCountThatPassesItsChecksumIsAnOverflowNotACrash) {
  const std::int64_t f = std::int64_t{1} << 60;  // owned x F wraps around 64 bits
  forge(out_, 1, 48, &f, sizeof f);                // header field num_features
  expect_read_error(rank_file(1), "header sizes overflow: owned x features");
}

TEST_F(PartitionDir, FeatureAndClassCountsMustMatchTheManifest) {
  Json m = read_partition_manifest(out_);
  m["dataset"]["num_features"] = m["dataset"]["num_features"].get<std::int64_t>() + 1;
  spit(out_ + "/manifest.json", m.dump(2));
  expect_read_error(rank_file(1), "features per node but the manifest says");
  m["dataset"]["num_features"] = m["dataset"]["num_features"].get<std::int64_t>() - 1;
  m["dataset"]["num_classes"] = 2000000000;
  spit(out_ + "/manifest.json", m.dump(2));
  expect_read_error(rank_file(1), "classes but the manifest says 2000000000");
}

TEST_F(PartitionDir, ARankFileOfAnotherPartitionRunIsRefused) {
  const std::uint64_t other = 0x0123456789abcdefull;
  forge(out_, 1, 88, &other, sizeof other);  // header field run_id
  expect_read_error(rank_file(1), "written by partition run 0123456789abcdef but");
}

TEST_F(PartitionDir, EveryRankFileAndTheManifestCarryOneRunId) {
  const Json m = read_partition_manifest(out_);
  const std::string id = m.at("run_id").get<std::string>();
  EXPECT_EQ(id.size(), 16u);
  for (Rank r = 0; r < 4; ++r) EXPECT_EQ(format_run_id(read_local_partition(out_, r, 4).run_id), id);
  // A second run of the same data and options is another run.
  const std::string again = tmp_ / "again";
  write_partition_dir(ds_, g_, parts_, cfg_, again);
  EXPECT_NE(read_partition_manifest(again).at("run_id").get<std::string>(), id);
}

/// The fixture's graph with 300 random features, partitioned with sparsified features (k = 5).
class SparsifiedPartitionDir : public PartitionDir {
 protected:
  void SetUp() override {
    PartitionDir::SetUp();
    wide_ = test::make_dataset(test::random_edges(400, 1600, 21), 4, 300);
    const CounterRng rng(RngKey{4, RngPurpose::test, 0, 0});
    for (std::int64_t i = 0; i < wide_.features.size(); ++i)
      wide_.features.data()[i] = rng.uniform(static_cast<std::uint64_t>(i), 0);
    PartitionConfig cfg = cfg_;
    cfg.sparsify_k = 5;
    cfg.sparsify_sample = 1000;  // more than the nodes: every node
    out_ = tmp_ / "sparse";
    manifest_ = write_partition_dir(wide_, g_, parts_, cfg, out_, &report_);
  }
  /// Byte offset of section `tag`'s data in `bytes` (after its 16-byte header).
  static std::size_t section_data(const std::string& bytes, const char* tag) {
    const std::size_t at = bytes.find(std::string(tag, 4) + std::string("\x01\0\0\0", 4));
    return at == std::string::npos ? at : at + 16;
  }
  Dataset wide_;
};

TEST_F(SparsifiedPartitionDir, StoresPositionsAndTheCodebookAndReportsTheBytes) {
  const SparseFeatures all = sparsify_features(wide_.features.data(), 400, 300, 5, cfg_.seed, 2.5);
  const std::int64_t slots = all.layout.slots();
  ASSERT_EQ(slots, 20);
  std::int64_t dense = 0, stored = 0;
  for (Rank r = 0; r < 4; ++r) {
    const LocalPartition lp = read_local_partition(out_, r, 4);
    ASSERT_TRUE(lp.sparsified());
    EXPECT_EQ(lp.num_features(), 300);
    EXPECT_EQ(lp.features.size(), 0);
    EXPECT_EQ(lp.sparse_features.codebook, all.codebook);
    for (LocalId i = 0; i < lp.num_owned; ++i)
      for (std::int64_t s = 0; s < slots; ++s)
        ASSERT_EQ(lp.sparse_features.positions[static_cast<std::size_t>(i * slots + s)],
                  all.positions[static_cast<std::size_t>(lp.global_ids[i] * slots + s)]);
    dense += lp.num_owned * 300 * 4;
    stored += lp.num_owned * slots + slots * 4;
  }
  EXPECT_EQ(report_.feature_bytes_dense, dense);
  EXPECT_EQ(report_.feature_bytes_stored, stored);
  EXPECT_EQ(manifest_.at("features").at("sparsify_k").get<int>(), 5);
  EXPECT_DOUBLE_EQ(manifest_.at("features").at("ratio").get<double>(), 300.0 * 4 / 20);
  EXPECT_EQ(manifest_.at("features").at("codebook_rows").get<std::int64_t>(), 400);
}

TEST_F(SparsifiedPartitionDir, APositionTwiceInOneChunkIsRefused) {
  const std::string bytes = slurp(rank_file(1));
  const std::size_t at = section_data(bytes, "SPPO");
  ASSERT_NE(at, std::string::npos);
  forge(out_, 1, at + 1, bytes.data() + at, 1);  // slot 1 = slot 0
  expect_read_error(rank_file(1), "has a position outside its chunk or twice in one chunk");
}

TEST_F(SparsifiedPartitionDir, APositionPastItsChunkIsRefused) {
  const std::string bytes = slurp(rank_file(1));
  const std::size_t at = section_data(bytes, "SPPO");
  ASSERT_NE(at, std::string::npos);
  const std::uint8_t past = 44;  // slot 10 lies in the second chunk, 44 columns wide
  forge(out_, 1, at + 10, &past, 1);
  expect_read_error(rank_file(1), "sparsified features: row 0 has a position outside its chunk");
}

TEST_F(SparsifiedPartitionDir, AnImpossibleKOrAMissingCodebookIsRefused) {
  const std::int32_t k = 200;
  forge(out_, 1, 96, &k, sizeof k);  // header field sparse k, after the run id
  expect_read_error(rank_file(1), "sparsified features: k = 200");
  const std::int32_t k4 = 4;  // another k: 16 slots, but the sections hold 20
  forge(out_, 1, 96, &k4, sizeof k4);
  expect_read_error(rank_file(1), "section SPCB has 20 elements, expected 16");
}

TEST_F(SparsifiedPartitionDir, AHugeFeatureCountIsRefusedBeforeItsLayoutIsBuilt) {
  // Found by fuzz_rank_file: F = 2^40 made the reader build a layout of 2^33 entries (minutes and
  // gigabytes) before the codebook's size could refuse it.
  const std::int64_t f = std::int64_t{1} << 40;
  forge(out_, 1, 48, &f, sizeof f);  // header field num_features
  expect_read_error(rank_file(1), "sparsified features, more than the");
}

TEST_F(SparsifiedPartitionDir, TheManifestMustAgreeOnK) {
  Json m = read_partition_manifest(out_);
  m["features"]["sparsify_k"] = 6;
  spit(out_ + "/manifest.json", m.dump(2));
  expect_read_error(rank_file(1), "holds features sparsified with k = 5 but the manifest says k = 6");
}

/// A sparsified dataset (halognn-data sparsify: features.npy streamed through the encoder,
/// written, read back) partitions into the rank files halognn-partition --sparsify-features
/// writes from the dense dataset, byte for byte but the run id, at 2 and 4 parts; the codebook
/// comes from a sample of 100 of the 400 nodes.
TEST(SparsifiedDatasetPartition, RankFilesEqualThoseOfSparsifyingAtPartitionTime) {
  test::TempDir tmp;
  Dataset wide = test::make_dataset(test::random_edges(400, 1600, 21), 4, 300);
  const CounterRng rng(RngKey{4, RngPurpose::test, 0, 0});
  for (std::int64_t i = 0; i < wide.features.size(); ++i)
    wide.features.data()[i] = rng.uniform(static_cast<std::uint64_t>(i), 0);
  write_dataset(wide, tmp / "dense");
  SparsifyOnRead opt;
  opt.k = 5;
  opt.sample = 100;
  opt.seed = 7;
  opt.batch_bytes = 33 * 300 * 4;
  write_dataset(read_dataset(tmp / "dense", opt), tmp / "sparse");
  const Dataset dense = read_dataset(tmp / "dense"), sparse = read_dataset(tmp / "sparse");
  ASSERT_TRUE(sparse.sparsified());
  EXPECT_GT(sparse.sparse_features.codebook_rows, 0);
  EXPECT_LT(sparse.sparse_features.codebook_rows, 400);
  EXPECT_EQ(dataset_fingerprint(sparse), dataset_fingerprint(dense));
  const GlobalGraph g = test::graph_of(dense);
  // The run id (header bytes 88..95) differs between runs, and with it the CRC32 trailer.
  const auto body = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    const std::string b{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    return b.size() < 100 ? b : b.substr(0, 88) + b.substr(96, b.size() - 100);
  };
  for (const int parts : {2, 4}) {
    PartitionConfig cfg{parts, PartitionConfig::Method::metis, PartitionConfig::Objective::cut, 7,
                        {}};
    const std::vector<Rank> assignment = assign_parts(g, cfg);
    PartitionConfig at_partition = cfg;
    at_partition.sparsify_k = 5;
    at_partition.sparsify_sample = 100;
    const std::string a = tmp / ("a" + std::to_string(parts)),
                      b = tmp / ("b" + std::to_string(parts)),
                      c = tmp / ("c" + std::to_string(parts));
    const Json ma = write_partition_dir(dense, g, assignment, at_partition, a);
    const Json mb = write_partition_dir(sparse, g, assignment, cfg, b);          // as stored
    const Json mc = write_partition_dir(sparse, g, assignment, at_partition, c); // same k named
    for (Rank r = 0; r < parts; ++r) {
      const std::string name = "/" + partition_file_name(r);
      const std::string fa = body(a + name);
      ASSERT_GT(fa.size(), 100u);
      EXPECT_EQ(fa, body(b + name)) << parts << " parts, rank " << r;
      EXPECT_EQ(fa, body(c + name)) << parts << " parts, rank " << r;
    }
    for (const Json* m : {&mb, &mc}) {
      EXPECT_EQ(m->at("features").at("encoded_by").get<std::string>(), "dataset");
      for (const char* key : {"sparsify_k", "slots_per_row", "codebook_sample", "codebook_seed",
                              "codebook_rows"})
        EXPECT_EQ(m->at("features").at(key), ma.at("features").at(key)) << key;
      EXPECT_EQ(m->at("dataset").at("fingerprint"), ma.at("dataset").at("fingerprint"));
      EXPECT_EQ(m->at("feature_bytes_stored"), ma.at("feature_bytes_stored"));
      EXPECT_EQ(m->at("feature_bytes_dense"), ma.at("feature_bytes_dense"));
    }
    EXPECT_EQ(ma.at("features").at("encoded_by").get<std::string>(), "partition");
  }
  // Another k cannot be had from positions that are fixed already.
  PartitionConfig other{2, PartitionConfig::Method::metis, PartitionConfig::Objective::cut, 7, {}};
  other.sparsify_k = 6;
  try {
    write_partition_dir(sparse, g, assign_parts(g, other), other, tmp / "d");
    ADD_FAILURE() << "a different k was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--sparsify-features 6: the features of dataset "
                                         "test-graph are sparsified with k = 5 already"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp / "d"));
}

TEST_F(PartitionDir, APartitionOfFormatVersion2StillLoads) {
  // Rewrite every rank file as version 2 wrote it: no sparse-k header field, no SPCB and SPPO
  // sections; and the manifest's version.
  Json m = read_partition_manifest(out_);
  for (Rank r = 0; r < 4; ++r) {
    std::string bytes = slurp(rank_file(r));
    const std::size_t spcb = bytes.find(std::string("SPCB\x04\0\0\0", 8));
    ASSERT_NE(spcb, std::string::npos);
    bytes.erase(spcb, 32);  // two empty sections of 16 header bytes
    bytes.erase(96, 4);     // the sparse-k field
    const std::uint32_t version = 2, sections = 12;
    std::memcpy(bytes.data() + 8, &version, 4);
    std::memcpy(bytes.data() + 12, &sections, 4);
    const auto crc = static_cast<std::uint32_t>(
        ::crc32(::crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(bytes.data()),
                static_cast<uInt>(bytes.size() - 4)));
    std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
    spit(rank_file(r), bytes);
    m["files"][static_cast<std::size_t>(r)]["crc32"] = crc;
    m["files"][static_cast<std::size_t>(r)]["bytes"] = bytes.size();
  }
  m["version"] = 2;
  spit(out_ + "/manifest.json", m.dump(2));
  const auto built = build_local_partitions(ds_, g_, parts_, 4);
  for (Rank r = 0; r < 4; ++r) {
    const LocalPartition lp = read_local_partition(out_, r, 4);
    EXPECT_FALSE(lp.sparsified());
    EXPECT_EQ(lp.features.to_host(), built[r].features.to_host());
    EXPECT_EQ(lp.global_ids, built[r].global_ids);
  }
}

TEST(PartitionMetisGraph, WritesOneBasedAdjacencyWithUndirectedEdgeCount) {
  test::TempDir tmp;
  const GlobalGraph g = test::graph_of(test::make_dataset(test::grid_edges(2, 2)));
  write_metis_graph(g, tmp / "g.graph");
  std::ifstream in(tmp / "g.graph");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_EQ(text, "4 4\n2 3\n1 4\n1 4\n2 3\n");
}

}  // namespace
}  // namespace halognn
