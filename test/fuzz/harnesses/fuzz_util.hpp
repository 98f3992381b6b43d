#pragma once
// Shared by the libFuzzer harnesses: a scratch file for the readers that take a path.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace halognn::fuzz {

/// The per-process scratch file's path (under TMPDIR, else /tmp), removed when the process exits
/// normally (libFuzzer ends a timed run with exit(0)).
class ScratchPath {
 public:
  explicit ScratchPath(const char* suffix) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp && *tmp ? tmp : "/tmp") + "/halognn-fuzz-" + std::to_string(::getpid()) +
            suffix;
  }
  ~ScratchPath() { std::remove(path_.c_str()); }
  ScratchPath(const ScratchPath&) = delete;
  ScratchPath& operator=(const ScratchPath&) = delete;
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

/// Writes `data` to the per-process scratch file and returns its path.
inline std::string scratch_file(const char* suffix, const std::uint8_t* data, std::size_t size) {
  static const ScratchPath path(suffix);
  std::FILE* f = std::fopen(path.str().c_str(), "wb");
  if (!f) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path.str();
}

}  // namespace halognn::fuzz
