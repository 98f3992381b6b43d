// The OGB raw-CSV converter on a small OGB-shaped fixture written here with zlib.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <zlib.h>

#include "core/data/converters.hpp"
#include "core/data/dataset.hpp"
#include "core/error.hpp"
#include "test/data_convert/test_util.hpp"

namespace halognn {
namespace {
namespace fs = std::filesystem;

void write_gz(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  gzFile f = gzopen(path.string().c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

/// A 6-node OGB-style folder: directed edges, 3 features, single-label, split "time".
fs::path write_fixture(const std::string& tag) {
  const fs::path root = fs::path(test::fresh_temp_dir(tag)) / "ogbn_tiny";
  write_gz(root / "raw" / "edge.csv.gz", "0,1\n1,2\n2,0\n3,4\n4,5\n5,3\n0,3\n");
  write_gz(root / "raw" / "node-feat.csv.gz",
           "0.5,1,0\n-1.25,0,2\n0,0,0\n1e-3,2,3\n4,5,6\n7,8,9\n");
  write_gz(root / "raw" / "node-label.csv.gz", "0\n1\n2\n0\n1\nnan\n");
  write_gz(root / "raw" / "num-node-list.csv.gz", "6\n");
  write_gz(root / "split" / "time" / "train.csv.gz", "3\n0\n");
  write_gz(root / "split" / "time" / "valid.csv.gz", "1\n");
  write_gz(root / "split" / "time" / "test.csv.gz", "2\n4\n");
  return root;
}

TEST(OgbConverter, ReadsAnOgbShapedFolderWithItsSplit) {
  const fs::path root = write_fixture("ogb_ok");
  EXPECT_EQ(detect_source(root.string(), {}).format, SourceFormat::ogb);
  const Dataset ds = convert_dataset(root.string(), {});
  EXPECT_EQ(ds.name, "ogbn_tiny");
  EXPECT_EQ(ds.num_nodes, 6);
  EXPECT_EQ(ds.edge_src.size(), 7u);
  EXPECT_EQ(ds.edge_src[6], 0);
  EXPECT_EQ(ds.edge_dst[6], 3);
  ASSERT_EQ(ds.num_features(), 3);
  EXPECT_FLOAT_EQ(ds.features(1, 0), -1.25f);
  EXPECT_FLOAT_EQ(ds.features(3, 0), 1e-3f);
  EXPECT_FLOAT_EQ(ds.features(5, 2), 9.0f);
  EXPECT_EQ(ds.labels, (std::vector<std::int32_t>{0, 1, 2, 0, 1, -1}));
  EXPECT_EQ(ds.num_classes, 3);
  EXPECT_FALSE(ds.multilabel);
  EXPECT_EQ(ds.train_idx, (std::vector<GlobalId>{0, 3}));
  EXPECT_EQ(ds.val_idx, (std::vector<GlobalId>{1}));
  EXPECT_EQ(ds.test_idx, (std::vector<GlobalId>{2, 4}));
  EXPECT_EQ(ds.meta.at("split").at("name").get<std::string>(), "time");
  fs::remove_all(root.parent_path());
}

TEST(OgbConverter, SeveralLabelColumnsMakeAMultiLabelDataset) {
  const fs::path root = write_fixture("ogb_multi");
  write_gz(root / "raw" / "node-label.csv.gz", "1,0\n0,1\n1,1\n0,0\n1,0\n0,1\n");
  fs::remove(root / "raw" / "node-feat.csv.gz");
  const Dataset ds = convert_dataset(root.string(), {});
  EXPECT_TRUE(ds.multilabel);
  EXPECT_EQ(ds.num_classes, 2);
  EXPECT_EQ(ds.label_matrix, (std::vector<std::uint8_t>{1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 0, 1}));
  EXPECT_EQ(ds.num_features(), 0);
  EXPECT_EQ(dataset_warnings(ds).size(), 1u);
  fs::remove_all(root.parent_path());
}

/// Runs the converter and returns the InputError message (empty if none was thrown).
std::string input_error(const fs::path& root) {
  try {
    convert_dataset(root.string(), {});
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

TEST(OgbConverter, MalformedFilesGiveAnInputErrorNamingTheFile) {
  const fs::path root = write_fixture("ogb_bad");
  write_gz(root / "raw" / "edge.csv.gz", "0,1\n1,x\n");
  std::string msg = input_error(root);
  EXPECT_NE(msg.find("edge.csv.gz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;

  write_gz(root / "raw" / "edge.csv.gz", "0,1\n1,9\n");
  msg = input_error(root);
  EXPECT_NE(msg.find("edge.csv.gz"), std::string::npos) << msg;

  write_gz(root / "raw" / "edge.csv.gz", "0,1\n");
  write_gz(root / "raw" / "node-feat.csv.gz", "1,2,3\n1,2\n");
  msg = input_error(root);
  EXPECT_NE(msg.find("node-feat.csv.gz"), std::string::npos) << msg;

  write_gz(root / "raw" / "node-feat.csv.gz", "1,2,3\n1,2,3\n0,0,0\n0,0,0\n0,0,0\n0,0,0\n");
  write_gz(root / "split" / "time" / "valid.csv.gz", "99\n");
  msg = input_error(root);
  EXPECT_NE(msg.find("valid.csv.gz"), std::string::npos) << msg;

  // A truncated gzip stream is a read error, not a short file.
  write_gz(root / "split" / "time" / "valid.csv.gz", std::string(5000, '1') + "\n");
  const auto size = fs::file_size(root / "split" / "time" / "valid.csv.gz");
  fs::resize_file(root / "split" / "time" / "valid.csv.gz", size - 6);
  msg = input_error(root);
  EXPECT_NE(msg.find("valid.csv.gz"), std::string::npos) << msg;

  fs::remove(root / "split" / "time" / "valid.csv.gz");
  msg = input_error(root);
  EXPECT_NE(msg.find("valid.csv.gz"), std::string::npos) << msg;
  fs::remove_all(root.parent_path());
}

}  // namespace
}  // namespace halognn
