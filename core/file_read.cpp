#include "core/file_read.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.hpp"

namespace halognn {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

std::string os_reason() { return std::strerror(errno); }

/// Opens `path` for reading after checking what it is; returns the file and its size.
FilePtr open_input(const std::string& path, std::size_t& size) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(path, "cannot open: " + os_reason());
  if (S_ISDIR(st.st_mode)) throw InputError(path, "is a directory, not a file");
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) throw InputError(path, "cannot open: " + os_reason());
  // A FIFO or device has no size: read it to its end.
  size = S_ISREG(st.st_mode) ? static_cast<std::size_t>(st.st_size) : 0;
  return f;
}

template <typename Out>
void read_all(const std::string& path, Out& out) {
  std::size_t size = 0;
  FilePtr f = open_input(path, size);
  out.resize(size);
  std::size_t got = size > 0 ? std::fread(out.data(), 1, size, f.get()) : 0;
  if (got != size) {
    if (std::ferror(f.get())) throw InputError(path, "read failed: " + os_reason());
    out.resize(got);  // the file shrank while being read
    return;
  }
  // Whatever follows (a file that grew, or one without a size): read on to its end.
  char buf[1 << 16];
  for (;;) {
    const std::size_t n = std::fread(buf, 1, sizeof buf, f.get());
    if (n == 0) break;
    const std::size_t at = out.size();
    out.resize(at + n);
    std::memcpy(reinterpret_cast<char*>(out.data()) + at, buf, n);
  }
  if (std::ferror(f.get())) throw InputError(path, "read failed: " + os_reason());
}

}  // namespace

void check_input_file(const std::string& path) {
  std::size_t size = 0;
  open_input(path, size);
}

std::vector<std::byte> read_file_bytes(const std::string& path) {
  std::vector<std::byte> out;
  read_all(path, out);
  return out;
}

std::string read_file_text(const std::string& path) {
  std::string out;
  read_all(path, out);
  return out;
}

}  // namespace halognn
