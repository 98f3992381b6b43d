#pragma once
/// @file zip.hpp
/// ZIP archives (reading: stored and DEFLATE members, ZIP64 sizes and offsets; writing: stored
/// members) and NumPy `.npz` files on top of them. Members are located through the central directory, so archives whose
/// local headers carry zero sizes (general-purpose flag bit 3, data descriptor) read correctly.
/// Every member is CRC32-checked. Errors are InputError naming the archive (and the member).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/data/npy.hpp"

namespace halognn {

/// A ZIP archive opened for reading. The constructor reads only the central directory;
/// `read` opens the file again for each member, so the object holds no file descriptor.
class ZipArchive {
 public:
  /// Opens `path` and reads its central directory.
  /// @throws InputError if the file is missing, not a ZIP archive, or its directory is corrupt.
  explicit ZipArchive(const std::string& path);

  /// Member names in central-directory order.
  std::vector<std::string> names() const;
  /// Whether a member of exactly this name exists.
  bool contains(const std::string& name) const;
  /// The uncompressed bytes of one member, CRC32-verified.
  /// @throws InputError("<archive>:<member>", ...) for a missing member, an unsupported
  ///         compression method or encryption, corrupt DEFLATE data, or a size/CRC mismatch.
  std::vector<std::byte> read(const std::string& name) const;

 private:
  struct Entry {
    std::string name;
    std::uint16_t flags = 0;
    std::uint16_t method = 0;
    std::uint32_t crc = 0;
    std::uint64_t compressed_size = 0;
    std::uint64_t size = 0;
    std::uint64_t local_offset = 0;
  };
  const Entry& entry(const std::string& name) const;

  std::string path_;
  std::vector<Entry> entries_;
};

/// Reads every `.npy` member of an `.npz` archive. The key is the member name without the
/// trailing ".npy" (numpy's own naming); members not ending in ".npy" are skipped.
/// Errors inside a member name it as "<archive>:<member>".
std::map<std::string, NpyArray> read_npz(const std::string& path);

/// Size and CRC32 (zlib) of every byte of a file just written (for manifests).
struct WrittenFile {
  std::uint64_t bytes = 0;
  std::uint32_t crc32 = 0;
};

/// Writes `arrays` as a NumPy `.npz` archive that `numpy.load` reads: one stored (uncompressed)
/// member "<key>.npy" per array, in key order, each a C-order `.npy` image (Fortran-order arrays
/// are reordered) with its CRC32. A member or offset past 4 GiB gets ZIP64 records
/// (`force_zip64` writes them everywhere, for tests). The file is written atomically
/// (core/atomic_output.hpp) with fixed timestamps, so equal arrays give equal bytes.
/// @throws InputError(path, ...) when the file cannot be written.
WrittenFile write_npz(const std::string& path, const std::map<std::string, NpyArray>& arrays,
                      bool force_zip64 = false);

}  // namespace halognn
