#include "core/data/zip.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/error.hpp"
#include "core/file_read.hpp"

namespace halognn {
namespace {

constexpr std::uint32_t kEocdSig = 0x06054b50;
constexpr std::uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::uint32_t kZip64EocdSig = 0x06064b50;
constexpr std::uint32_t kCentralSig = 0x02014b50;
constexpr std::uint32_t kLocalSig = 0x04034b50;

std::uint64_t le(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

std::uint64_t file_size(std::ifstream& in) {
  in.seekg(0, std::ios::end);
  return static_cast<std::uint64_t>(in.tellg());
}

/// Reads `n` bytes at `offset`; false if the file is shorter.
bool read_at(std::ifstream& in, std::uint64_t offset, void* out, std::size_t n) {
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  return static_cast<bool>(in.read(static_cast<char*>(out), static_cast<std::streamsize>(n)));
}

}  // namespace

ZipArchive::ZipArchive(const std::string& path) : path_(path) {
  check_input_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open file (missing or unreadable)");
  const std::uint64_t size = file_size(in);
  if (size < 22) throw InputError(path, "not a ZIP archive (too short)");

  // The end-of-central-directory record is 22 bytes plus a comment of at most 65535 bytes.
  const std::uint64_t tail_len = std::min<std::uint64_t>(size, 22 + 0xFFFF);
  std::vector<unsigned char> tail(tail_len);
  if (!read_at(in, size - tail_len, tail.data(), tail_len)) throw InputError(path, "read failed");
  std::int64_t eocd = -1;
  for (std::int64_t p = static_cast<std::int64_t>(tail_len) - 22; p >= 0; --p) {
    if (le(&tail[p], 4) == kEocdSig &&
        static_cast<std::uint64_t>(p) + 22 + le(&tail[p + 20], 2) == tail_len) {
      eocd = p;
      break;
    }
  }
  if (eocd < 0) throw InputError(path, "not a ZIP archive (no end-of-central-directory record)");
  const unsigned char* e = &tail[eocd];
  std::uint64_t count = le(e + 10, 2);
  std::uint64_t cd_size = le(e + 12, 4);
  std::uint64_t cd_offset = le(e + 16, 4);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    // ZIP64: a 20-byte locator right before the EOCD points at the ZIP64 EOCD record.
    const std::uint64_t eocd_pos = size - tail_len + static_cast<std::uint64_t>(eocd);
    unsigned char loc[20], rec[56];
    if (eocd_pos < 20 || !read_at(in, eocd_pos - 20, loc, 20) || le(loc, 4) != kZip64LocatorSig)
      throw InputError(path, "corrupt ZIP archive (ZIP64 locator missing)");
    if (!read_at(in, le(loc + 8, 8), rec, 56) || le(rec, 4) != kZip64EocdSig)
      throw InputError(path, "corrupt ZIP archive (ZIP64 end record missing)");
    count = le(rec + 32, 8);
    cd_size = le(rec + 40, 8);
    cd_offset = le(rec + 48, 8);
  }
  if (cd_offset > size || cd_size > size - cd_offset)
    throw InputError(path, "corrupt ZIP archive (central directory outside the file)");

  std::vector<unsigned char> cd(cd_size);
  if (cd_size > 0 && !read_at(in, cd_offset, cd.data(), cd_size))
    throw InputError(path, "read failed");
  std::size_t p = 0;
  for (std::uint64_t k = 0; k < count; ++k) {
    if (p + 46 > cd.size() || le(&cd[p], 4) != kCentralSig)
      throw InputError(path, "corrupt ZIP central directory (entry " + std::to_string(k) + ")");
    Entry en;
    en.flags = static_cast<std::uint16_t>(le(&cd[p + 8], 2));
    en.method = static_cast<std::uint16_t>(le(&cd[p + 10], 2));
    en.crc = static_cast<std::uint32_t>(le(&cd[p + 16], 4));
    en.compressed_size = le(&cd[p + 20], 4);
    en.size = le(&cd[p + 24], 4);
    const std::size_t name_len = le(&cd[p + 28], 2);
    const std::size_t extra_len = le(&cd[p + 30], 2);
    const std::size_t comment_len = le(&cd[p + 32], 2);
    en.local_offset = le(&cd[p + 42], 4);
    if (p + 46 + name_len + extra_len + comment_len > cd.size())
      throw InputError(path, "corrupt ZIP central directory (entry " + std::to_string(k) + ")");
    en.name.assign(reinterpret_cast<const char*>(&cd[p + 46]), name_len);
    // ZIP64 extra field: 64-bit values for exactly those fields that are 0xFFFFFFFF, in order.
    const unsigned char* x = &cd[p + 46 + name_len];
    for (std::size_t q = 0; q + 4 <= extra_len;) {
      const auto tag = le(x + q, 2);
      const std::size_t len = le(x + q + 2, 2);
      if (q + 4 + len > extra_len) break;
      if (tag == 0x0001) {
        std::size_t r = q + 4;
        auto take = [&](std::uint64_t& field) {
          if (field != 0xFFFFFFFF) return;
          if (r + 8 > q + 4 + len) throw InputError(path, "corrupt ZIP64 extra field in " + en.name);
          field = le(x + r, 8);
          r += 8;
        };
        take(en.size);
        take(en.compressed_size);
        take(en.local_offset);
      }
      q += 4 + len;
    }
    entries_.push_back(std::move(en));
    p += 46 + name_len + extra_len + comment_len;
  }
}

std::vector<std::string> ZipArchive::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(e.name);
  return out;
}

bool ZipArchive::contains(const std::string& name) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.name == name; });
}

const ZipArchive::Entry& ZipArchive::entry(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return e;
  throw InputError(path_, "no member named '" + name + "'");
}

std::vector<std::byte> ZipArchive::read(const std::string& name) const {
  const Entry& en = entry(name);
  const std::string origin = path_ + ":" + name;
  if (en.flags & 0x1) throw InputError(origin, "encrypted ZIP members are not supported");
  if (en.method != 0 && en.method != 8)
    throw InputError(origin, "unsupported ZIP compression method " + std::to_string(en.method));

  std::ifstream in(path_, std::ios::binary);
  if (!in) throw InputError(path_, "cannot open file (missing or unreadable)");
  const std::uint64_t fsize = file_size(in);
  unsigned char local[30];
  if (!read_at(in, en.local_offset, local, 30) || le(local, 4) != kLocalSig)
    throw InputError(origin, "corrupt ZIP local header");
  // Sizes come from the central directory: the local header may hold zeros (data descriptor).
  const std::uint64_t start = en.local_offset + 30 + le(local + 26, 2) + le(local + 28, 2);
  if (start > fsize || en.compressed_size > fsize - start)
    throw InputError(origin, "ZIP member data runs past the end of the file");

  std::vector<unsigned char> packed(en.compressed_size);
  if (!packed.empty() && !read_at(in, start, packed.data(), packed.size()))
    throw InputError(origin, "read failed");
  std::vector<std::byte> out;
  if (en.method == 0) {
    if (en.compressed_size != en.size)
      throw InputError(origin, "stored ZIP member with differing sizes");
    out.resize(packed.size());
    if (!packed.empty()) std::memcpy(out.data(), packed.data(), packed.size());
  } else {
    // DEFLATE expands at most 1032:1 (a 258-byte match per ~2 bits), so a larger declared size
    // is corrupt; checked before allocating it (found by fuzz_npz: 2.8 GB declared by a 1 KB file,
    // test/fuzz/corpus/npz/regress-deflate-declared-size.npz).
    if (en.size > en.compressed_size * 1032 + 1024)
      throw InputError(origin, "ZIP member declares " + std::to_string(en.size) +
                                   " uncompressed bytes, more than DEFLATE can expand " +
                                   std::to_string(en.compressed_size) + " bytes to");
    // One spare byte: a stream longer than the directory says then shows as a size mismatch
    // instead of a full buffer, and an empty member still has somewhere to inflate into.
    out.resize(en.size + 1);
    z_stream zs{};
    if (inflateInit2(&zs, -15) != Z_OK) throw InputError(origin, "zlib inflateInit2 failed");
    // zlib counts in 32-bit uInt: feed input and output in chunks below 4 GiB.
    constexpr std::uint64_t kChunk = std::uint64_t{1} << 30;
    std::uint64_t in_pos = 0, out_pos = 0;
    int rc = Z_OK;
    while (rc == Z_OK) {
      if (zs.avail_in == 0 && in_pos < packed.size()) {
        zs.next_in = packed.data() + in_pos;
        zs.avail_in = static_cast<uInt>(std::min<std::uint64_t>(kChunk, packed.size() - in_pos));
        in_pos += zs.avail_in;
      }
      if (zs.avail_out == 0 && out_pos < out.size()) {
        zs.next_out = reinterpret_cast<Bytef*>(out.data()) + out_pos;
        zs.avail_out = static_cast<uInt>(std::min<std::uint64_t>(kChunk, out.size() - out_pos));
        out_pos += zs.avail_out;
      }
      const uInt before_in = zs.avail_in, before_out = zs.avail_out;
      rc = inflate(&zs, Z_NO_FLUSH);
      if (rc == Z_BUF_ERROR || (rc == Z_OK && zs.avail_in == before_in &&
                                zs.avail_out == before_out)) {
        rc = Z_DATA_ERROR;  // no progress possible: input truncated or output too small
        break;
      }
    }
    const std::uint64_t produced = zs.total_out;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) throw InputError(origin, "corrupt DEFLATE data");
    if (produced != en.size)
      throw InputError(origin, "inflated size " + std::to_string(produced) +
                                   " differs from the directory's " + std::to_string(en.size));
    out.resize(en.size);
  }
  const auto crc = static_cast<std::uint32_t>(
      crc32_z(0L, reinterpret_cast<const Bytef*>(out.data()), out.size()));
  if (crc != en.crc) throw InputError(origin, "CRC32 mismatch (member data is corrupt)");
  return out;
}

std::map<std::string, NpyArray> read_npz(const std::string& path) {
  const ZipArchive zip(path);
  std::map<std::string, NpyArray> out;
  for (const auto& name : zip.names()) {
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".npy") != 0) continue;
    out.emplace(name.substr(0, name.size() - 4), parse_npy(zip.read(name), path + ":" + name));
  }
  return out;
}

}  // namespace halognn
