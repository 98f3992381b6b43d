#pragma once
// Helpers shared by the data_io tests: scratch directories and the shared dataset folder.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/data/dataset.hpp"

namespace halognn::test {

/// A fresh directory under the system temp dir, removed again on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("halognn_data_io_" + std::to_string(::getpid()) + "_" +
             (info ? std::string(info->test_suite_name()) + "_" + info->name() : "x"));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Everything of two datasets but their features is equal: name, graph, labels, splits, meta.
inline void expect_same_except_features(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.num_nodes, b.num_nodes);
  EXPECT_EQ(a.edge_src, b.edge_src);
  EXPECT_EQ(a.edge_dst, b.edge_dst);
  EXPECT_EQ(a.num_classes, b.num_classes);
  EXPECT_EQ(a.multilabel, b.multilabel);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.label_matrix, b.label_matrix);
  EXPECT_EQ(a.train_idx, b.train_idx);
  EXPECT_EQ(a.val_idx, b.val_idx);
  EXPECT_EQ(a.test_idx, b.test_idx);
  EXPECT_EQ(a.meta.dump(), b.meta.dump());
}

/// $HALOGNN_SOURCE_DIR/../shared/datasets, or "" when absent.
inline std::string shared_datasets() {
  const char* src = std::getenv("HALOGNN_SOURCE_DIR");
  if (!src) return "";
  const auto p = std::filesystem::path(src) / ".." / "shared" / "datasets";
  return std::filesystem::is_directory(p) ? p.lexically_normal().string() : "";
}

}  // namespace halognn::test
