#include "training/metrics_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace halognn {
namespace fs = std::filesystem;
namespace {

std::string os_reason() { return std::strerror(errno); }

/// True when `inner` is `dir` or lies below it (both resolved; `inner` need not exist).
bool lies_within(const fs::path& inner, const fs::path& dir) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(inner, ec);
  if (ec) return false;
  const fs::path b = fs::weakly_canonical(dir, ec);
  if (ec) return false;
  auto ai = a.begin(), bi = b.begin();
  for (; bi != b.end(); ++ai, ++bi)
    if (ai == a.end() || *ai != *bi) return false;
  return true;
}

/// A halognn metrics file starts with an epoch line or a final/diverged event line.
bool looks_like_metrics(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  if (!std::getline(in, first)) return true;  // empty
  try {
    const Json j = parse_json(first, path);
    return j.is_object() && (j.contains("epoch") || j.contains("event"));
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

void MetricsLog::check_path(const std::string& path, const std::vector<std::string>& inputs) {
  GNN_CHECK_INPUT(!path.empty(), "--metrics", "empty file name");
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) throw InputError(path, "cannot use as metrics file: " + os_reason());
  GNN_CHECK_INPUT(!exists || !S_ISDIR(st.st_mode), path,
                  "is a directory; --metrics needs a file name");
  for (const std::string& in : inputs) {
    if (in.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      GNN_CHECK_INPUT(!lies_within(path, in), path, "lies inside ", in,
                      ", an input of this run; refusing to write metrics there");
    } else if (exists && fs::exists(in, ec)) {
      GNN_CHECK_INPUT(!fs::equivalent(path, in, ec), path, "is ", in,
                      ", an input of this run; refusing to overwrite it");
    }
  }
  if (exists && S_ISREG(st.st_mode))
    GNN_CHECK_INPUT(looks_like_metrics(path), path,
                    "exists and is not a halognn metrics file; refusing to overwrite it");
  if (exists) {
    // Opening for append changes nothing, and tells permission problems as the OS sees them.
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno != ENXIO)  // ENXIO: a FIFO nobody reads yet
      throw InputError(path, "cannot write: " + os_reason());
    if (fd >= 0) ::close(fd);
    return;
  }
  const fs::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0)
    throw InputError(path, "cannot create: directory " + dir + ": " + os_reason());
  GNN_CHECK_INPUT(S_ISDIR(ds.st_mode), path, "cannot create: ", dir, " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(path, "cannot create in " + dir + ": " + os_reason());
}

MetricsLog::MetricsLog(const std::string& path) : path_(path) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  regular_ = !exists || S_ISREG(st.st_mode);
  const int flags = O_WRONLY | O_CLOEXEC | (regular_ ? O_CREAT | O_TRUNC : 0);
  fd_ = ::open(path.c_str(), flags, 0644);
  if (fd_ < 0) throw InputError(path_, "cannot open for writing: " + os_reason());
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::append(const Json& line) {
  GNN_ASSERT(fd_ >= 0, "append to a closed metrics file ", path_);
  const std::string text = dump_json(line) + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw InputError(path_, "write failed: " + (n < 0 ? os_reason() : "no progress"));
    done += static_cast<std::size_t>(n);
  }
}

void MetricsLog::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  errno = 0;
  const bool synced = !regular_ || ::fsync(fd) == 0;
  const std::string why = os_reason();
  if (::close(fd) != 0 || !synced)
    throw InputError(path_, "write failed: " + (synced ? os_reason() : why));
}

}  // namespace halognn
