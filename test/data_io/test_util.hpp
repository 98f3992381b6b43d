#pragma once
// Helpers shared by the data_io tests: scratch directories and the shared dataset folder.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

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

/// $HALOGNN_SOURCE_DIR/../shared/datasets, or "" when absent.
inline std::string shared_datasets() {
  const char* src = std::getenv("HALOGNN_SOURCE_DIR");
  if (!src) return "";
  const auto p = std::filesystem::path(src) / ".." / "shared" / "datasets";
  return std::filesystem::is_directory(p) ? p.lexically_normal().string() : "";
}

}  // namespace halognn::test
