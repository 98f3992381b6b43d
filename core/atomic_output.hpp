#pragma once
/// @file atomic_output.hpp
/// Every output of the tools (datasets, partitions, metrics, checkpoints) is written so that a
/// crash or a full disk leaves either the old content or the new one, never a mixture: files go to
/// "<path>.tmp.<pid>", are fsync'ed and renamed into place; directories are built under
/// "<dir>.tmp.<pid>" and swapped into place. Errors are InputError naming the path and carrying
/// the operating system's reason ("No space left on device").
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace halognn {

/// A file written under a temporary name and renamed over `path` by commit(). Destroying an
/// uncommitted one removes the temporary file.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  void write(const void* data, std::size_t n);
  void write(std::string_view text) { write(text.data(), text.size()); }
  /// Flushes, fsyncs, closes and renames the file into place, then fsyncs its directory.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
};

/// AtomicFile in one call.
void write_file_atomic(const std::string& path, std::string_view contents);

/// fsync of a directory, so a rename inside it is durable (best effort: some file systems refuse).
void fsync_directory(const std::filesystem::path& dir);

/// The "<base>.tmp.<pid>" siblings of `base` whose process is gone (leftovers of killed runs):
/// removes them and returns their names. A sibling of a live process is left alone.
std::vector<std::string> remove_stale_temporaries(const std::filesystem::path& base);

/// A directory built under "<target>.tmp.<pid>" and swapped into place by commit(): an existing
/// target is moved aside first and removed after the swap, so a crash leaves the old directory or
/// the new one. Destroying an uncommitted one removes the temporary directory.
class StagedDirectory {
 public:
  /// @param target       the directory to produce (a trailing '/' is ignored)
  /// @param may_replace  called when `target` exists; false refuses with a ConfigError (for
  ///                     example: it is not a directory of the kind being written)
  /// @param what         "dataset", "partition", ... for messages
  StagedDirectory(const std::string& target,
                  const std::function<bool(const std::filesystem::path&)>& may_replace,
                  const std::string& what);
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;
  ~StagedDirectory();

  /// The temporary directory to fill.
  const std::filesystem::path& staging() const { return tmp_; }
  /// staging() / name, as a string.
  std::string file(std::string_view name) const;
  const std::filesystem::path& target() const { return target_; }
  /// Leftover temporaries of killed runs on the same target, removed at construction.
  const std::vector<std::string>& removed_leftovers() const { return leftovers_; }
  /// fsyncs the staging directory, swaps it into place, fsyncs the parent.
  void commit();

 private:
  std::filesystem::path target_, tmp_;
  std::vector<std::string> leftovers_;
  bool committed_ = false;
};

}  // namespace halognn
