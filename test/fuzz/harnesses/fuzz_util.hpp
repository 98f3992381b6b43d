#pragma once
// Shared by the libFuzzer harnesses: a scratch file for the readers that take a path.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace halognn::fuzz {

/// Writes `data` to a per-process scratch file (under TMPDIR, else /tmp) and returns its path.
inline std::string scratch_file(const char* suffix, const std::uint8_t* data, std::size_t size) {
  static const std::string path = [&] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp") + "/halognn-fuzz-" + std::to_string(::getpid()) +
           suffix;
  }();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace halognn::fuzz
