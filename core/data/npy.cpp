#include "core/data/npy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "core/atomic_output.hpp"
#include "core/error.hpp"
#include "core/file_read.hpp"

namespace halognn {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the .npy reader assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";

std::size_t fixed_item_size(NpyType t) {
  switch (t) {
    case NpyType::f4: case NpyType::i4: case NpyType::u4: return 4;
    case NpyType::f8: case NpyType::i8: case NpyType::u8: case NpyType::object: return 8;
    case NpyType::i2: case NpyType::u2: return 2;
    case NpyType::i1: case NpyType::u1: case NpyType::b1: return 1;
    case NpyType::unicode: return 0;
  }
  return 0;
}

/// Minimal tokenizer for the Python dict literal in a `.npy` header.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& origin) : t_(text), origin_(origin) {}

  void skip_ws() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r'))
      ++p_;
  }
  bool consume(char c) {
    skip_ws();
    if (p_ < t_.size() && t_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  std::string string_literal() {
    skip_ws();
    if (p_ >= t_.size() || (t_[p_] != '\'' && t_[p_] != '"')) fail("expected a string");
    const char q = t_[p_++];
    const std::size_t start = p_;
    while (p_ < t_.size() && t_[p_] != q) ++p_;
    if (p_ >= t_.size()) fail("unterminated string");
    return std::string(t_.substr(start, p_++ - start));
  }
  bool boolean() {
    skip_ws();
    if (t_.substr(p_, 4) == "True") {
      p_ += 4;
      return true;
    }
    if (t_.substr(p_, 5) == "False") {
      p_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  std::int64_t integer() {
    skip_ws();
    std::int64_t v = 0;
    const std::size_t start = p_;
    while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') {
      if (v > (std::numeric_limits<std::int64_t>::max() - 9) / 10) fail("shape value too large");
      v = v * 10 + (t_[p_++] - '0');
    }
    if (p_ == start) fail("expected a non-negative integer in shape");
    if (p_ < t_.size() && t_[p_] == 'L') ++p_;  // Python 2 long suffix
    return v;
  }
  std::vector<std::int64_t> shape_tuple() {
    expect('(');
    std::vector<std::int64_t> shape;
    while (!consume(')')) {
      shape.push_back(integer());
      if (consume(')')) break;
      expect(',');
    }
    return shape;
  }
  bool at_end() {
    skip_ws();
    return p_ >= t_.size();
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(origin_, "malformed .npy header (" + what + " at offset " +
                                  std::to_string(p_) + ")");
  }

 private:
  std::string_view t_;
  const std::string& origin_;
  std::size_t p_ = 0;
};

}  // namespace

std::pair<NpyType, std::size_t> npy_parse_descr(const std::string& descr, const std::string& origin) {
  if (descr.size() < 2) throw InputError(origin, "unsupported .npy dtype '" + descr + "'");
  const char order = descr[0];
  if (order == '>')
    throw InputError(origin, "big-endian .npy dtype '" + descr + "' is not supported");
  if (order != '<' && order != '|' && order != '=')
    throw InputError(origin, "unsupported .npy dtype '" + descr + "'");
  const std::string code = descr.substr(1);
  struct Entry {
    const char* code;
    NpyType type;
  };
  static constexpr Entry kTable[] = {
      {"f4", NpyType::f4}, {"f8", NpyType::f8}, {"i1", NpyType::i1}, {"i2", NpyType::i2},
      {"i4", NpyType::i4}, {"i8", NpyType::i8}, {"u1", NpyType::u1}, {"u2", NpyType::u2},
      {"u4", NpyType::u4}, {"u8", NpyType::u8}, {"b1", NpyType::b1}, {"O", NpyType::object},
      {"O8", NpyType::object}};
  for (const auto& e : kTable)
    if (code == e.code) return {e.type, fixed_item_size(e.type)};
  if (code[0] == 'U' && code.size() > 1) {
    std::size_t chars = 0;
    for (std::size_t k = 1; k < code.size(); ++k) {
      if (code[k] < '0' || code[k] > '9' || chars > (1u << 28))
        throw InputError(origin, "unsupported .npy dtype '" + descr + "'");
      chars = chars * 10 + static_cast<std::size_t>(code[k] - '0');
    }
    if (chars == 0) throw InputError(origin, "unsupported .npy dtype '" + descr + "'");
    return {NpyType::unicode, 4 * chars};
  }
  throw InputError(origin, "unsupported .npy dtype '" + descr + "'");
}

namespace {

std::uint64_t load_le(const std::byte* p, int n) {
  std::uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<std::uint8_t>(p[k]);
  return v;
}

/// Calls `f(k, value)` for every element in C order, with the value read as T (after a
/// Fortran reorder when needed).
template <typename T, typename F>
void for_each_c(const NpyArray& a, F&& f) {
  const std::int64_t n = a.count();
  const auto* base = reinterpret_cast<const unsigned char*>(a.data.data());
  auto load = [&](std::int64_t idx) {
    T v;
    std::memcpy(&v, base + idx * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    return v;
  };
  if (!a.fortran_order || a.shape.size() < 2) {
    for (std::int64_t k = 0; k < n; ++k) f(k, load(k));
    return;
  }
  if (a.shape.size() == 2) {
    const std::int64_t rows = a.shape[0], cols = a.shape[1];
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) f(i * cols + j, load(i + j * rows));
    return;
  }
  // General rank: walk the C-order multi-index and track the Fortran offset alongside.
  const std::size_t d = a.shape.size();
  std::vector<std::int64_t> idx(d, 0), fstride(d, 1);
  for (std::size_t k = 1; k < d; ++k) fstride[k] = fstride[k - 1] * a.shape[k - 1];
  std::int64_t off = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    f(k, load(off));
    for (std::size_t ax = d; ax-- > 0;) {
      if (++idx[ax] < a.shape[ax]) {
        off += fstride[ax];
        break;
      }
      off -= fstride[ax] * (a.shape[ax] - 1);
      idx[ax] = 0;
    }
  }
}

/// Dispatches on the numeric dtype; `f` receives each element as int64/uint64/double.
template <typename F>
bool visit_numeric(const NpyArray& a, F&& f) {
  switch (a.type) {
    case NpyType::i1: for_each_c<std::int8_t>(a, f); return true;
    case NpyType::i2: for_each_c<std::int16_t>(a, f); return true;
    case NpyType::i4: for_each_c<std::int32_t>(a, f); return true;
    case NpyType::i8: for_each_c<std::int64_t>(a, f); return true;
    case NpyType::u1: for_each_c<std::uint8_t>(a, f); return true;
    case NpyType::b1: for_each_c<std::uint8_t>(a, f); return true;
    case NpyType::u2: for_each_c<std::uint16_t>(a, f); return true;
    case NpyType::u4: for_each_c<std::uint32_t>(a, f); return true;
    case NpyType::u8: for_each_c<std::uint64_t>(a, f); return true;
    case NpyType::f4: for_each_c<float>(a, f); return true;
    case NpyType::f8: for_each_c<double>(a, f); return true;
    default: return false;
  }
}

bool is_integer_type(NpyType t) {
  return t != NpyType::f4 && t != NpyType::f8 && t != NpyType::unicode && t != NpyType::object;
}

}  // namespace

std::int64_t NpyArray::count() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string npy_descr(NpyType type, std::size_t item_size) {
  switch (type) {
    case NpyType::f4: return "<f4";
    case NpyType::f8: return "<f8";
    case NpyType::i1: return "|i1";
    case NpyType::i2: return "<i2";
    case NpyType::i4: return "<i4";
    case NpyType::i8: return "<i8";
    case NpyType::u1: return "|u1";
    case NpyType::u2: return "<u2";
    case NpyType::u4: return "<u4";
    case NpyType::u8: return "<u8";
    case NpyType::b1: return "|b1";
    case NpyType::unicode: return "<U" + std::to_string(item_size / 4);
    case NpyType::object: return "|O";
  }
  return "?";
}

namespace {

/// Where the header dict of a `.npy` image starts and how long it is (0, 0 when `bytes` is too
/// short to tell; the checks of parse_npy_header then report it).
std::pair<std::size_t, std::size_t> npy_header_extent(std::span<const std::byte> bytes) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) return {0, 0};
  const auto major = static_cast<std::uint8_t>(bytes[6]);
  if (major == 1) return {10, load_le(bytes.data() + 8, 2)};
  if ((major == 2 || major == 3) && bytes.size() >= 12) return {12, load_le(bytes.data() + 8, 4)};
  return {0, 0};
}

/// Parses and checks everything but copies no element data; returns the offset of the data.
/// `bytes` holds the file from its start, at least through the header; `file_size` is the size
/// of the whole file (the data's length is checked against it).
std::size_t parse_npy_header(std::span<const std::byte> bytes, std::uint64_t file_size,
                             const std::string& origin, NpyArray& a) {
  if (file_size < 10 || bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0)
    throw InputError(origin, "not a .npy file (bad magic)");
  const auto major = static_cast<std::uint8_t>(bytes[6]);
  std::size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = load_le(bytes.data() + 8, 2);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw InputError(origin, "truncated .npy header");
    header_len = load_le(bytes.data() + 8, 4);
    header_start = 12;
  } else {
    throw InputError(origin, "unsupported .npy format version " + std::to_string(major));
  }
  if (file_size - header_start < header_len || bytes.size() - header_start < header_len)
    throw InputError(origin, "truncated .npy header (header length " + std::to_string(header_len) +
                                 ", file has " + std::to_string(file_size) + " bytes)");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + header_start,
                              header_len);

  HeaderParser hp(text, origin);
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<std::int64_t>> shape;
  hp.expect('{');
  while (!hp.consume('}')) {
    const std::string key = hp.string_literal();
    hp.expect(':');
    if (key == "descr") descr = hp.string_literal();
    else if (key == "fortran_order") fortran = hp.boolean();
    else if (key == "shape") shape = hp.shape_tuple();
    else hp.fail("unexpected key '" + key + "'");
    if (hp.consume('}')) break;
    hp.expect(',');
  }
  if (!hp.at_end()) hp.fail("trailing characters after the dict");
  if (!descr || !fortran || !shape) hp.fail("missing descr, fortran_order or shape");

  std::tie(a.type, a.item_size) = npy_parse_descr(*descr, origin);
  a.shape = std::move(*shape);
  a.fortran_order = *fortran;

  const std::uint64_t payload = file_size - (header_start + header_len);
  if (a.type == NpyType::object) return header_start + header_len;
  // Element count with overflow checks: a corrupt shape must not wrap around.
  std::uint64_t n = 1;
  for (auto d : a.shape) {
    if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(d))
      throw InputError(origin, "shape too large");
    n *= static_cast<std::uint64_t>(d);
  }
  if (n != 0 && a.item_size > std::numeric_limits<std::uint64_t>::max() / n)
    throw InputError(origin, "shape too large");
  const std::uint64_t need = n * a.item_size;
  if (payload < need)
    throw InputError(origin, "data truncated: shape needs " + std::to_string(need) +
                                 " bytes, file has " + std::to_string(payload));
  if (payload > need)
    throw InputError(origin, "corrupt .npy: " + std::to_string(payload - need) +
                                 " bytes after the data the shape describes");
  return header_start + header_len;
}

}  // namespace

NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& origin) {
  NpyArray a;
  const std::size_t start = parse_npy_header(bytes, bytes.size(), origin, a);
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(start), bytes.end());
  return a;
}

NpyArray read_npy(const std::string& path) {
  std::vector<std::byte> bytes = read_file_bytes(path);
  // Reuse the file buffer for the elements: no second copy of a large array.
  NpyArray a;
  const std::size_t start = parse_npy_header(bytes, bytes.size(), path, a);
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(start));
  a.data = std::move(bytes);
  return a;
}

NpyRowReader::NpyRowReader(const std::string& path) : path_(path) {
  check_input_file(path);  // a directory or a missing file, named as every reader names them
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw InputError(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw InputError(path, "not a regular file (a .npy read in blocks needs a size)");
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  try {
    // The fixed prefix tells the header's length; then the header itself.
    std::vector<std::byte> head(static_cast<std::size_t>(std::min<std::uint64_t>(size, 12)));
    read_at(0, head.size(), head.data());
    const auto [start, len] = npy_header_extent(head);
    if (start > 0 && start + len <= size) {
      head.resize(start + len);
      read_at(0, head.size(), head.data());
    }
    data_offset_ = parse_npy_header(head, size, path, header_);
    if (header_.type == NpyType::object)
      throw InputError(path, "object arrays cannot be read in blocks of rows");
    // The header checked the whole array's size; with no rows that says nothing about a row's.
    std::uint64_t per_row = 1;
    for (std::size_t d = 1; d < header_.shape.size(); ++d) {
      const auto dim = static_cast<std::uint64_t>(header_.shape[d]);
      if (dim != 0 && per_row > std::numeric_limits<std::uint64_t>::max() / header_.item_size / dim)
        throw InputError(path, "shape too large");
      per_row *= dim;
    }
    row_elements_ = static_cast<std::int64_t>(per_row);
    bytes_read_ = data_offset_;
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

NpyRowReader::~NpyRowReader() {
  if (fd_ >= 0) ::close(fd_);
}

std::int64_t NpyRowReader::rows() const { return header_.shape.empty() ? 1 : header_.shape[0]; }

void NpyRowReader::read_at(std::uint64_t offset, std::size_t bytes, std::byte* out) const {
  while (bytes > 0) {
    const ssize_t got = ::pread(fd_, out, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw InputError(path_, std::string("read failed: ") + std::strerror(errno));
    if (got == 0)
      throw InputError(path_, "read failed: the file ended early (it changed while being read)");
    out += got;
    offset += static_cast<std::uint64_t>(got);
    bytes -= static_cast<std::size_t>(got);
  }
}

void NpyRowReader::read_rows(std::int64_t first, std::int64_t n, std::byte* out) {
  GNN_ASSERT(first >= 0 && n >= 0 && first + n <= rows(), "rows [", first, ", ", first + n,
             ") outside the ", rows(), " rows of ", path_);
  const std::uint64_t item = header_.item_size;
  const auto per_row = static_cast<std::uint64_t>(row_elements());
  if (n == 0 || per_row == 0) return;
  bytes_read_ += static_cast<std::uint64_t>(n) * per_row * item;
  if (!header_.fortran_order || header_.shape.size() < 2) {
    read_at(data_offset_ + static_cast<std::uint64_t>(first) * per_row * item,
            static_cast<std::size_t>(static_cast<std::uint64_t>(n) * per_row * item), out);
    return;
  }
  if (header_.shape.size() > 2)
    throw InputError(path_, "a Fortran-order array of " + std::to_string(header_.shape.size()) +
                                " dimensions cannot be read in blocks of rows");
  // Column j holds rows() elements; the block's part of it is one contiguous run.
  const auto total_rows = static_cast<std::uint64_t>(rows());
  std::vector<std::byte> column(static_cast<std::size_t>(static_cast<std::uint64_t>(n) * item));
  for (std::uint64_t j = 0; j < per_row; ++j) {
    read_at(data_offset_ + (j * total_rows + static_cast<std::uint64_t>(first)) * item,
            column.size(), column.data());
    for (std::int64_t i = 0; i < n; ++i)
      std::memcpy(out + (static_cast<std::uint64_t>(i) * per_row + j) * item,
                  column.data() + static_cast<std::uint64_t>(i) * item, item);
  }
}

NpyArray NpyRowReader::read_rows(std::int64_t first, std::int64_t n) {
  if (header_.shape.empty()) throw InputError(path_, "a 0-d array has no rows to read");
  NpyArray a;
  a.type = header_.type;
  a.item_size = header_.item_size;
  a.shape = header_.shape;
  a.shape[0] = n;
  a.data.resize(static_cast<std::size_t>(static_cast<std::uint64_t>(n) *
                                         static_cast<std::uint64_t>(row_elements()) * a.item_size));
  read_rows(first, n, a.data.data());
  return a;
}

std::vector<std::int64_t> npy_to_int64(const NpyArray& a, const std::string& origin) {
  if (!is_integer_type(a.type))
    throw InputError(origin, "expected an integer array, found dtype " +
                                 npy_descr(a.type, a.item_size));
  std::vector<std::int64_t> out(static_cast<std::size_t>(a.count()));
  bool overflow = false;
  visit_numeric(a, [&](std::int64_t k, auto v) {
    if constexpr (std::is_same_v<decltype(v), std::uint64_t>) {
      if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) overflow = true;
    }
    out[k] = static_cast<std::int64_t>(v);
  });
  if (overflow) throw InputError(origin, "uint64 value out of int64 range");
  return out;
}

std::vector<float> npy_to_float32(const NpyArray& a, const std::string& origin) {
  if (a.type == NpyType::unicode || a.type == NpyType::object)
    throw InputError(origin, "expected a numeric array, found dtype " +
                                 npy_descr(a.type, a.item_size));
  std::vector<float> out(static_cast<std::size_t>(a.count()));
  if (a.type == NpyType::f4 && (!a.fortran_order || a.shape.size() < 2)) {
    if (!out.empty()) std::memcpy(out.data(), a.data.data(), out.size() * sizeof(float));
    return out;
  }
  std::int64_t inexact = -1;
  visit_numeric(a, [&](std::int64_t k, auto v) {
    using V = decltype(v);
    const auto f = static_cast<float>(v);
    if constexpr (std::is_integral_v<V>) {
      // float32 holds an integer exactly iff its magnitude, stripped of trailing zero bits,
      // fits the 24-bit significand.
      std::uint64_t m = static_cast<std::uint64_t>(v);
      if constexpr (std::is_signed_v<V>) {
        if (v < 0) m = ~m + 1;
      }
      if (m != 0 && (m >> std::countr_zero(m)) >= (std::uint64_t{1} << 24) && inexact < 0)
        inexact = k;
    }
    out[k] = f;
  });
  if (inexact >= 0)
    throw InputError(origin, "integer element " + std::to_string(inexact) +
                                 " is not exactly representable as float32");
  return out;
}

std::vector<std::uint8_t> npy_to_uint8(const NpyArray& a, const std::string& origin) {
  if (!is_integer_type(a.type))
    throw InputError(origin, "expected a bool or uint8 array, found dtype " +
                                 npy_descr(a.type, a.item_size));
  std::vector<std::uint8_t> out(static_cast<std::size_t>(a.count()));
  std::int64_t bad = -1;
  visit_numeric(a, [&](std::int64_t k, auto v) {
    using V = decltype(v);
    bool ok = false;
    if constexpr (std::is_integral_v<V> && std::is_signed_v<V>)
      ok = v >= 0 && static_cast<std::int64_t>(v) <= 255;
    else if constexpr (std::is_integral_v<V>)
      ok = static_cast<std::uint64_t>(v) <= 255;
    if (!ok && bad < 0) bad = k;
    out[k] = static_cast<std::uint8_t>(v);
  });
  if (bad >= 0)
    throw InputError(origin, "element " + std::to_string(bad) + " is outside [0, 255]");
  return out;
}

std::vector<std::string> npy_to_strings(const NpyArray& a, const std::string& origin) {
  if (a.type != NpyType::unicode)
    throw InputError(origin, "expected a unicode string array, found dtype " +
                                 npy_descr(a.type, a.item_size));
  const std::vector<std::byte> c = npy_c_order_bytes(a);
  const std::size_t chars = a.item_size / 4;
  std::vector<std::string> out(static_cast<std::size_t>(a.count()));
  for (std::size_t k = 0; k < out.size(); ++k) {
    std::string& s = out[k];
    for (std::size_t j = 0; j < chars; ++j) {
      const auto cp = static_cast<std::uint32_t>(load_le(c.data() + (k * chars + j) * 4, 4));
      if (cp == 0) break;  // numpy pads with NULs
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        throw InputError(origin, "invalid code point in string element " + std::to_string(k));
      if (cp < 0x80) {
        s += static_cast<char>(cp);
      } else if (cp < 0x800) {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        s += static_cast<char>(0xE0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      } else {
        s += static_cast<char>(0xF0 | (cp >> 18));
        s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      }
    }
  }
  return out;
}

std::vector<std::byte> npy_c_order_bytes(const NpyArray& a) {
  if (!a.fortran_order || a.shape.size() < 2 || a.type == NpyType::object) return a.data;
  // Reorder whole items by treating each as an opaque block of item_size bytes.
  std::vector<std::byte> out(a.data.size());
  const std::size_t s = a.item_size;
  const std::int64_t n = a.count();
  const std::size_t d = a.shape.size();
  std::vector<std::int64_t> idx(d, 0), fstride(d, 1);
  for (std::size_t k = 1; k < d; ++k) fstride[k] = fstride[k - 1] * a.shape[k - 1];
  std::int64_t off = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    std::memcpy(out.data() + k * s, a.data.data() + off * s, s);
    for (std::size_t ax = d; ax-- > 0;) {
      if (++idx[ax] < a.shape[ax]) {
        off += fstride[ax];
        break;
      }
      off -= fstride[ax] * (a.shape[ax] - 1);
      idx[ax] = 0;
    }
  }
  return out;
}

std::string npy_header(NpyType type, const std::vector<std::int64_t>& shape,
                       std::size_t data_bytes) {
  GNN_ASSERT(type != NpyType::object, "npy_header: object arrays cannot be written");
  std::int64_t n = 1;
  for (auto d : shape) {
    GNN_ASSERT(d >= 0, "negative dimension in shape");
    n *= d;
  }
  std::size_t item = fixed_item_size(type);
  if (type == NpyType::unicode) {
    GNN_ASSERT(n > 0 && data_bytes % static_cast<std::size_t>(n) == 0,
               "unicode data size is not a multiple of the element count");
    item = data_bytes / static_cast<std::size_t>(n);
    GNN_ASSERT(item > 0 && item % 4 == 0, "unicode item size must be a positive multiple of 4");
  }
  GNN_ASSERT(data_bytes == static_cast<std::size_t>(n) * item, "npy: data has ", data_bytes,
             " bytes, shape needs ", static_cast<std::size_t>(n) * item);

  std::string dict = "{'descr': '" + npy_descr(type, item) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t k = 0; k < shape.size(); ++k) {
    dict += std::to_string(shape[k]);
    if (shape.size() == 1 || k + 1 < shape.size()) dict += ",";
    if (k + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  // numpy pads the header with spaces so the data starts on a 64-byte boundary.
  std::size_t total = 10 + dict.size() + 1;
  const std::size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  GNN_ASSERT(dict.size() <= 0xFFFF, "npy header too long for format 1.0");
  std::string head(kMagic, 6);
  head += '\x01';
  head += '\x00';
  head += static_cast<char>(dict.size() & 0xFF);
  head += static_cast<char>(dict.size() >> 8);
  head += dict;
  return head;
}

void write_npy(const std::string& path, NpyType type, const std::vector<std::int64_t>& shape,
               std::span<const std::byte> data) {
  const std::string head = npy_header(type, shape, data.size());
  AtomicFile out(path);
  out.write(head.data(), head.size());
  out.write(data.data(), data.size());
  out.commit();
}

}  // namespace halognn
