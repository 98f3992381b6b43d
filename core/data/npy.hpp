#pragma once
/// @file npy.hpp
/// Reader and writer for NumPy `.npy` files (format versions 1.0, 2.0 and 3.0), plus lossless
/// conversions of the raw element bytes to the element types halognn uses. Every error is an
/// InputError naming the file (the `origin` argument) and the problem.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace halognn {

/// Element types a `.npy` file may hold (little-endian or byte-order-free only).
enum class NpyType { f4, f8, i1, i2, i4, i8, u1, u2, u4, u8, b1, unicode, object };

/// A `.npy` array as stored: dtype, shape, memory order and the raw element bytes.
struct NpyArray {
  NpyType type = NpyType::f4;
  std::size_t item_size = 4;            ///< bytes per element (unicode: 4 * characters)
  std::vector<std::int64_t> shape;      ///< empty for a 0-d array
  bool fortran_order = false;           ///< column-major element order
  std::vector<std::byte> data;          ///< raw little-endian elements (object: the pickle bytes)

  /// Number of elements: the product of `shape` (1 for shape `()`).
  std::int64_t count() const;
};

/// The numpy `descr` string of a type, e.g. "<f4", "|b1", "<U8" (unicode needs `item_size`).
std::string npy_descr(NpyType type, std::size_t item_size);

/// Maps a numpy descr string ("<f4", "|b1", "<U8", "|O", ...) to (type, bytes per element).
/// Accepts the byte orders '<', '|' and '='; '>' and structured dtypes are InputError(origin).
std::pair<NpyType, std::size_t> npy_parse_descr(const std::string& descr, const std::string& origin);

/// Parses a complete `.npy` image held in memory.
/// @param bytes   the whole file
/// @param origin  names the file in error messages
/// @throws InputError on a bad magic, unsupported version, malformed header, unsupported dtype
///         (big-endian, structured, ...), or data shorter or longer than the shape requires.
NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& origin);

/// Reads and parses a `.npy` file; a missing or unreadable file is an InputError.
NpyArray read_npy(const std::string& path);

/// A `.npy` file read in blocks of rows (slices along the first axis) without holding it whole,
/// for arrays larger than the memory one wants to spend on them. Opening parses the header and
/// checks the file's size against the shape, with the errors of read_npy; read_rows then reads
/// the rows it is asked for. Fortran-order arrays of up to two dimensions are gathered column by
/// column. Not for `object` arrays.
class NpyRowReader {
 public:
  explicit NpyRowReader(const std::string& path);
  NpyRowReader(const NpyRowReader&) = delete;
  NpyRowReader& operator=(const NpyRowReader&) = delete;
  ~NpyRowReader();

  /// dtype, shape and order as stored; `data` stays empty.
  const NpyArray& header() const { return header_; }
  const std::string& path() const { return path_; }
  /// shape[0] (1 for a 0-d array).
  std::int64_t rows() const;
  /// Elements per row: the product of shape[1:] (checked against overflow at opening).
  std::int64_t row_elements() const { return row_elements_; }
  /// Copies rows [first, first + n) into `out` (n * row_elements() * item_size bytes), in C
  /// order, elements as stored. Errors name the file: a read that fails or comes up short (the
  /// file changed underneath), Fortran order beyond 2-D.
  void read_rows(std::int64_t first, std::int64_t n, std::byte* out);

  /// Rows [first, first + n) as an array of shape (n, shape[1:]...) in C order (a 0-d array is
  /// refused naming the file).
  NpyArray read_rows(std::int64_t first, std::int64_t n);
  /// Bytes read from the file: its header once, then every row read (a caller shows with it that
  /// it read only its slice).
  std::uint64_t bytes_read() const { return bytes_read_; }

 private:
  void read_at(std::uint64_t offset, std::size_t bytes, std::byte* out) const;

  std::string path_;
  int fd_ = -1;
  NpyArray header_;
  std::uint64_t data_offset_ = 0;
  std::int64_t row_elements_ = 1;
  std::uint64_t bytes_read_ = 0;
};

/// Integer (or bool) elements as int64 in C order. Throws InputError(origin, ...) for float,
/// unicode or object arrays and for uint64 values above INT64_MAX. Fortran-order arrays of any
/// rank are reordered into C order.
std::vector<std::int64_t> npy_to_int64(const NpyArray& a, const std::string& origin);

/// Float, integer or bool elements as float32 in C order. float64 is narrowed (allowed);
/// integers must be exactly representable in float32, otherwise InputError.
std::vector<float> npy_to_float32(const NpyArray& a, const std::string& origin);

/// Bool or integer elements as uint8 in C order; integer values must lie in [0, 255].
std::vector<std::uint8_t> npy_to_uint8(const NpyArray& a, const std::string& origin);

/// Unicode (`<U n`) elements as UTF-8 strings in C order, trailing NULs removed.
std::vector<std::string> npy_to_strings(const NpyArray& a, const std::string& origin);

/// The raw element bytes of `a` in C order (a copy; reorders Fortran-order arrays).
std::vector<std::byte> npy_c_order_bytes(const NpyArray& a);

/// The version 1.0 header of a C-order `.npy` image whose element bytes (`data_bytes` of them)
/// follow it: magic, version, length and the dict padded so the data starts on a 64-byte
/// boundary. For `unicode` the item size is data_bytes / product(shape) (a multiple of 4).
std::string npy_header(NpyType type, const std::vector<std::int64_t>& shape,
                       std::size_t data_bytes);

/// Writes a version 1.0, C-order `.npy` file atomically (to `path.tmp.<pid>`, fsync, rename).
/// @param type   element type (not `object`)
/// @param shape  array shape; `data` must hold exactly product(shape) elements. For `unicode`
///               the item size is taken as data.size() / product(shape) (a multiple of 4).
/// @throws InputError(path, ...) when the file cannot be written, halognn::Error on a size mismatch.
void write_npy(const std::string& path, NpyType type, const std::vector<std::int64_t>& shape,
               std::span<const std::byte> data);

/// Typed convenience wrapper over write_npy for vectors of arithmetic elements.
template <typename T>
void write_npy(const std::string& path, NpyType type, const std::vector<std::int64_t>& shape,
               const std::vector<T>& values) {
  write_npy(path, type, shape, std::as_bytes(std::span<const T>(values)));
}

}  // namespace halognn
