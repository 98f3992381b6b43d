#pragma once
// Shared helpers of the data_convert tests.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace halognn::test {

/// <repo>/../shared/datasets, or "" when the folder is absent. The repository root comes from
/// HALOGNN_SOURCE_DIR (set by ctest), else from the build's configure-time source directory.
inline std::string shared_datasets() {
  const char* src = std::getenv("HALOGNN_SOURCE_DIR");
  if (!src) return {};
  const std::filesystem::path p = std::filesystem::path(src) / ".." / "shared" / "datasets";
  return std::filesystem::is_directory(p) ? p.lexically_normal().string() : std::string();
}

/// A fresh, empty temporary directory unique to this process and `tag`.
inline std::string fresh_temp_dir(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("halognn_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace halognn::test
