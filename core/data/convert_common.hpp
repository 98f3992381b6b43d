#pragma once
/// @file convert_common.hpp
/// Internal helpers shared by the convert_*.cpp converters (not part of the public API).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <map>

#include "core/data/converters.hpp"
#include "core/data/dataset.hpp"
#include "core/data/npy.hpp"

namespace halognn::convert_detail {

/// Splits `line` at every `sep` (empty fields kept).
std::vector<std::string_view> split_fields(std::string_view line, char sep);

/// Parses a whole field as a decimal int64; InputError(path, "line L: ...") otherwise.
std::int64_t parse_int(std::string_view field, const std::string& path, std::int64_t line);

/// Parses a whole field as a finite float; InputError(path, "line L: ...") otherwise.
float parse_float(std::string_view field, const std::string& path, std::int64_t line);

/// Reads a whole text file; InputError when it cannot be opened.
std::string read_text_file(const std::string& path);

/// Splits text into lines (LF or CRLF), dropping a final empty line.
std::vector<std::string_view> split_lines(std::string_view text);

/// Expands a CSR matrix (int64 indptr/indices, float values) into a dense row-major matrix,
/// checking shapes and column ranges; duplicate entries are summed.
Matrix csr_to_dense(std::int64_t rows, std::int64_t cols, const std::vector<std::int64_t>& indptr,
                    const std::vector<std::int64_t>& indices, const std::vector<float>& values,
                    const std::string& origin);

/// Sets the Shchur et al. split (from labels, opts.seed and the per-class counts) and records it
/// in meta["split"].
void apply_shchur_split(Dataset& ds, const ConvertOptions& opts);

/// Appends a one-line warning to meta["warnings"].
void add_warning(Dataset& ds, const std::string& warning);

/// Node indices of a 0/1 mask, ascending.
std::vector<GlobalId> mask_to_indices(const std::uint8_t* mask, std::int64_t n);

/// Streams the lines of a gzip-compressed (or plain: zlib reads those transparently) text file.
class GzLineReader {
 public:
  /// Opens `path`; InputError when it cannot be opened.
  explicit GzLineReader(const std::string& path);
  ~GzLineReader();
  GzLineReader(const GzLineReader&) = delete;
  GzLineReader& operator=(const GzLineReader&) = delete;
  /// The next line without its line end (CR too); false at the end of the file. A read error
  /// (e.g. a truncated gzip stream) is an InputError naming the file.
  bool next(std::string& line);
  /// 1-based number of the line last returned.
  std::int64_t line_number() const { return line_no_; }
  const std::string& path() const { return path_; }

 private:
  bool fill();
  std::string path_;
  void* file_ = nullptr;  // gzFile, kept opaque so this header needs no zlib.h
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  std::int64_t line_no_ = 0;
};

/// The member `name` of an .npz read by read_npz; InputError naming the archive if absent.
const NpyArray& npz_member(const std::map<std::string, NpyArray>& npz, const std::string& name,
                           const std::string& path);

/// Edges (r, c) of every stored non-zero of a square CSR adjacency; explicit zeros are skipped.
void csr_edges(std::int64_t n, const std::vector<std::int64_t>& indptr,
               const std::vector<std::int64_t>& indices, const std::vector<float>& values,
               const std::string& origin, Dataset& ds);

/// Class count from labels (max + 1), checking every label is -1 or non-negative.
std::int32_t count_classes(const std::vector<std::int32_t>& labels, const std::string& origin);

/// True when `path` names an existing regular file / directory.
bool is_file(const std::string& path);
bool is_dir(const std::string& path);

}  // namespace halognn::convert_detail
