#include "core/atomic_output.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace halognn {
namespace fs = std::filesystem;
namespace {

std::string os_reason() { return std::strerror(errno); }

std::string temporary_name(const std::string& base) {
  return base + ".tmp." + std::to_string(::getpid());
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(temporary_name(path_)) {
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) throw InputError(path_, "cannot create temporary file " + tmp_ + ": " + os_reason());
}

AtomicFile::~AtomicFile() {
  if (!f_) return;
  std::fclose(f_);
  std::remove(tmp_.c_str());
}

void AtomicFile::write(const void* data, std::size_t n) {
  GNN_ASSERT(f_ != nullptr, "write to a committed file ", path_);
  if (n == 0) return;
  if (std::fwrite(data, 1, n, f_) != n) throw InputError(path_, "write failed: " + os_reason());
}

void AtomicFile::commit() {
  GNN_ASSERT(f_ != nullptr, "file ", path_, " committed twice");
  std::FILE* f = f_;
  f_ = nullptr;
  errno = 0;
  const bool ok = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const std::string reason = os_reason();
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp_.c_str());
    throw InputError(path_, "write failed: " + (ok ? os_reason() : reason));
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string why = os_reason();
    std::remove(tmp_.c_str());
    throw InputError(path_, "cannot rename " + tmp_ + " into place: " + why);
  }
  fsync_directory(fs::path(path_).parent_path());
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  AtomicFile f(path);
  f.write(contents);
  f.commit();
}

void fsync_directory(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::vector<std::string> remove_stale_temporaries(const fs::path& base) {
  std::vector<std::string> removed;
  const fs::path dir = base.has_parent_path() ? base.parent_path() : fs::path(".");
  const std::string prefix = base.filename().string() + ".tmp.";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    // kill(pid, 0) fails with ESRCH when no such process exists: the writer is gone.
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
    if (!rm) removed.push_back(it->path().string());
  }
  return removed;
}

StagedDirectory::StagedDirectory(const std::string& target_arg,
                                 const std::function<bool(const fs::path&)>& may_replace,
                                 const std::string& what) {
  fs::path target(target_arg);
  if (!target.has_filename()) target = target.parent_path();  // "out/" -> "out"
  GNN_CHECK_CONFIG(!target.empty(), "empty output directory name");
  target_ = target;
  std::error_code ec;
  if (fs::exists(target_, ec)) {
    GNN_CHECK_INPUT(fs::is_directory(target_, ec) && may_replace(target_), target_.string(),
                    "exists and is not a ", what, " directory; refusing to replace it");
  }
  if (target_.has_parent_path()) {
    fs::create_directories(target_.parent_path(), ec);
    if (ec) throw InputError(target_.parent_path().string(), "cannot create directory: " + ec.message());
  }
  leftovers_ = remove_stale_temporaries(target_);
  tmp_ = temporary_name(target_.string());
  fs::remove_all(tmp_, ec);
  if (!fs::create_directory(tmp_, ec) || ec)
    throw InputError(tmp_.string(), "cannot create directory: " + ec.message());
}

StagedDirectory::~StagedDirectory() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

std::string StagedDirectory::file(std::string_view name) const { return (tmp_ / name).string(); }

void StagedDirectory::commit() {
  GNN_ASSERT(!committed_, "directory ", target_.string(), " committed twice");
  fsync_directory(tmp_);
  try {
    if (fs::exists(target_)) {
      const fs::path old(target_.string() + ".old." + std::to_string(::getpid()));
      std::error_code ec;
      fs::remove_all(old, ec);
      fs::rename(target_, old);
      try {
        fs::rename(tmp_, target_);
      } catch (...) {
        fs::rename(old, target_, ec);
        throw;
      }
      fs::remove_all(old, ec);
    } else {
      fs::rename(tmp_, target_);
    }
  } catch (const fs::filesystem_error& e) {
    throw InputError(target_.string(), std::string("cannot move the new directory into place: ") +
                                           e.code().message());
  }
  committed_ = true;
  fsync_directory(target_.has_parent_path() ? target_.parent_path() : fs::path("."));
}

}  // namespace halognn
