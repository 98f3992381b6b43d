#pragma once
/// @file pickle.hpp
/// A reader for the subset of Python's pickle format that dataset files use (Planetoid `ind.*`
/// files, object arrays inside `.npz` files; see shared/datasets/FORMATS.md section 3). It is a
/// stack machine with a memo that never executes code: only the callables listed below are
/// understood, anything else becomes an inert `object` node (or an error where its result
/// would be used).
///
/// Opcodes: PROTO, FRAME, STOP, MARK, POP, POP_MARK, DUP, NONE, NEWTRUE, NEWFALSE, BININT,
/// BININT1, BININT2, LONG1, BINFLOAT, SHORT_BINSTRING, BINSTRING, SHORT_BINBYTES, BINBYTES,
/// BINBYTES8, SHORT_BINUNICODE, BINUNICODE, BINUNICODE8, EMPTY_TUPLE, TUPLE1/2/3, TUPLE,
/// EMPTY_LIST, APPEND, APPENDS, LIST, EMPTY_DICT, SETITEM, SETITEMS, DICT, GLOBAL, STACK_GLOBAL,
/// REDUCE, NEWOBJ, BUILD, BINPUT, LONG_BINPUT, MEMOIZE, BINGET, LONG_BINGET.
///
/// Callables and classes given meaning:
/// - `numpy.core.multiarray._reconstruct` (also `numpy._core...`) + BUILD
///   `(1, shape, dtype, is_fortran, payload)` -> Kind::ndarray. `array` holds the dtype, shape
///   and order; for numeric and unicode dtypes `array.data` holds the raw bytes; for object
///   dtype (`O8`) the elements are in `items` (C order) and `array.data` is empty.
/// - `numpy.dtype` REDUCE `(code, 0, 1)` + BUILD `(3, endian, ..., elsize, ...)` -> Kind::dtype
///   with `s` = numpy descr (e.g. "<i4", "|b1", "<U8") and `array.type` / `array.item_size`.
/// - `numpy.core.multiarray.scalar(dtype, bytes)` -> Kind::ndarray of shape ().
/// - `scipy.sparse.csr.csr_matrix` / `scipy.sparse._csr.csr_matrix` (also `csr_array`) NEWOBJ +
///   BUILD dict -> Kind::csr with `rows`, `cols`, `indptr`, `indices` (int64) and `data`
///   (float32); keys are looked up by name (`_shape`, `indptr`, `indices`, `data`).
/// - `collections.defaultdict` REDUCE -> Kind::dict (the default factory is dropped).
/// - `_codecs.encode(text, 'latin1')` (Python 3 writing protocol 2 bytes) -> Kind::bytes.
/// - `__builtin__`/`builtins` names used as arguments (e.g. `list`) -> Kind::global.
/// - Any other REDUCE/NEWOBJ -> Kind::object with `s` = "module.name", `items` = {args tuple,
///   BUILD state or None}.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/data/npy.hpp"

namespace halognn {

struct PyDictItem;

/// One decoded Python value; which members are meaningful depends on `kind`.
struct PyValue {
  enum class Kind {
    none,      ///< None
    boolean,   ///< `b`
    integer,   ///< `i` (ints beyond int64 are rejected)
    bytes,     ///< `s` (Python 2 str or Python 3 bytes)
    text,      ///< `s` (UTF-8)
    tuple,     ///< `items`
    list,      ///< `items`
    dict,      ///< `dict` in insertion order (also defaultdict)
    ndarray,   ///< `array` (+ `items` for object dtype)
    csr,       ///< `rows`, `cols`, `indptr`, `indices`, `data`
    global,    ///< `s` = "module.name" (a class or function reference)
    dtype,     ///< `s` = numpy descr, `array.type`, `array.item_size`
    object,    ///< unknown class instance: `s` = "module.name", `items` = {args, state}
    floating,  ///< `f`
  };
  Kind kind = Kind::none;
  bool b = false;
  std::int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::vector<PyValue> items;
  /// (key, value) entries. A struct declared after PyValue rather than std::pair: a pair of the
  /// still incomplete PyValue does not compile with clang's checks of std::pair.
  std::vector<PyDictItem> dict;
  NpyArray array;
  std::int64_t rows = 0, cols = 0;
  std::vector<std::int64_t> indptr, indices;
  std::vector<float> data;

  bool is_string() const { return kind == Kind::bytes || kind == Kind::text; }
  /// Dict lookup by a text or bytes key; nullptr if absent or not a dict.
  const PyValue* find(std::string_view key) const;
  /// Dict lookup by an integer key; nullptr if absent or not a dict.
  const PyValue* find(std::int64_t key) const;
  /// A short name of the kind ("list", "ndarray", ...) for error messages.
  std::string_view kind_name() const;
};

/// One entry of a dict.
struct PyDictItem {
  PyValue first;   ///< key
  PyValue second;  ///< value
};

/// Parses one complete pickle. @param origin  names the file in errors.
/// @throws InputError(origin, ...) for truncated input, unknown opcodes, stack underflow,
///         inconsistent ndarray/csr state, or a missing STOP.
PyValue parse_pickle(std::span<const std::byte> bytes, const std::string& origin);

/// Reads a file holding one pickle and parses it.
PyValue read_pickle(const std::string& path);

/// Elements of a list, tuple, 1-D integer ndarray or object ndarray of ints as int64.
/// @throws InputError(origin, ...) when `v` is none of these or holds a non-integer.
std::vector<std::int64_t> py_to_int64_list(const PyValue& v, const std::string& origin);

/// Elements of a list/tuple/object ndarray of strings, or a unicode ndarray, as UTF-8 strings.
std::vector<std::string> py_to_strings(const PyValue& v, const std::string& origin);

}  // namespace halognn
