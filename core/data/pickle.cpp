#include "core/data/pickle.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "core/error.hpp"
#include "core/file_read.hpp"

namespace halognn {
namespace {

using Node = std::shared_ptr<PyValue>;
using Kind = PyValue::Kind;

bool is_reconstruct(const std::string& n) {
  return n == "numpy.core.multiarray._reconstruct" || n == "numpy._core.multiarray._reconstruct";
}
bool is_scalar(const std::string& n) {
  return n == "numpy.core.multiarray.scalar" || n == "numpy._core.multiarray.scalar";
}
bool is_csr(const std::string& n) {
  return n == "scipy.sparse.csr.csr_matrix" || n == "scipy.sparse._csr.csr_matrix" ||
         n == "scipy.sparse._csr.csr_array" || n == "scipy.sparse._arrays.csr_array";
}

/// The pickle stack machine. Values live in shared nodes so that the memo and the stack see
/// the same object: pickle memoizes an object right after creating it, before BUILD/APPENDS
/// complete it, and a later BINGET must observe the completed object.
class Unpickler {
 public:
  Unpickler(std::span<const std::byte> bytes, const std::string& origin)
      : b_(bytes), origin_(origin) {}

  PyValue run() {
    while (true) {
      if (p_ >= b_.size()) fail("missing STOP opcode (truncated pickle)");
      op_pos_ = p_;
      const auto op = static_cast<std::uint8_t>(b_[p_++]);
      switch (op) {
        case 0x80: u(1); break;  // PROTO
        case 0x95: u(8); break;  // FRAME: framing is transparent to a whole-buffer reader
        case '.': {              // STOP
          if (stack_.empty() || has_mark_on_top()) fail("STOP with an empty stack");
          memo_.clear();  // lets take() move the result instead of copying it
          return take(stack_.back());
        }
        case '(': marks_.push_back(stack_.size()); break;
        case '0':
          if (has_mark_on_top()) marks_.pop_back();
          else pop();
          break;
        case '1': pop_to_mark(); break;
        case '2': push(top()); break;
        case 'N': push(make(Kind::none)); break;
        case 0x88: push_bool(true); break;
        case 0x89: push_bool(false); break;
        case 'J': push_int(static_cast<std::int32_t>(u(4))); break;
        case 'K': push_int(static_cast<std::int64_t>(u(1))); break;
        case 'M': push_int(static_cast<std::int64_t>(u(2))); break;
        case 0x8a: {  // LONG1: little-endian two's complement of n bytes
          const std::size_t n = u(1);
          if (n > 8) fail("integer wider than 64 bits");
          std::uint64_t v = u(static_cast<int>(n));
          if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t{0} << (8 * n);
          push_int(static_cast<std::int64_t>(v));
          break;
        }
        case 'G': {  // BINFLOAT: big-endian IEEE double
          const auto raw = need(8);
          std::uint64_t v = 0;
          for (int k = 0; k < 8; ++k) v = (v << 8) | static_cast<std::uint8_t>(raw[k]);
          auto n = make(Kind::floating);
          std::memcpy(&n->f, &v, 8);
          push(n);
          break;
        }
        case 'U': push_str(Kind::bytes, u(1)); break;
        case 'T': {
          const auto n = static_cast<std::int32_t>(u(4));
          if (n < 0) fail("negative string length");
          push_str(Kind::bytes, static_cast<std::uint64_t>(n));
          break;
        }
        case 'C': push_str(Kind::bytes, u(1)); break;
        case 'B': push_str(Kind::bytes, u(4)); break;
        case 0x8e: push_str(Kind::bytes, u(8)); break;
        case 0x8c: push_str(Kind::text, u(1)); break;
        case 'X': push_str(Kind::text, u(4)); break;
        case 0x8d: push_str(Kind::text, u(8)); break;
        case ')': push(make(Kind::tuple)); break;
        case 0x85: case 0x86: case 0x87: {
          const std::size_t n = op - 0x84u;
          if (stack_.size() < n + base()) fail("stack underflow");
          auto t = make(Kind::tuple);
          for (std::size_t k = stack_.size() - n; k < stack_.size(); ++k)
            t->items.push_back(take(stack_[k]));
          stack_.resize(stack_.size() - n);
          push(t);
          break;
        }
        case 't': {
          auto t = make(Kind::tuple);
          t->items = pop_to_mark();
          push(t);
          break;
        }
        case ']': push(make(Kind::list)); break;
        case 'l': {
          auto l = make(Kind::list);
          l->items = pop_to_mark();
          push(l);
          break;
        }
        case 'a': {
          PyValue v = take(pop());
          expect_kind(*top(), Kind::list, "APPEND").items.push_back(std::move(v));
          break;
        }
        case 'e': {
          auto vals = pop_to_mark();
          auto& l = expect_kind(*top(), Kind::list, "APPENDS").items;
          for (auto& v : vals) l.push_back(std::move(v));
          break;
        }
        case '}': push(make(Kind::dict)); break;
        case 'd': {
          auto d = make(Kind::dict);
          set_items(*d, pop_to_mark());
          push(d);
          break;
        }
        case 's': {
          PyValue v = take(pop());
          PyValue k = take(pop());
          expect_kind(*top(), Kind::dict, "SETITEM")
              .dict.push_back(PyDictItem{std::move(k), std::move(v)});
          break;
        }
        case 'u': {
          auto vals = pop_to_mark();
          set_items(expect_kind(*top(), Kind::dict, "SETITEMS"), std::move(vals));
          break;
        }
        case 'c': {
          std::string mod = line();
          std::string name = line();
          push_global(mod + "." + name);
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          PyValue name = take(pop());
          PyValue mod = take(pop());
          if (!name.is_string() || !mod.is_string()) fail("STACK_GLOBAL needs two strings");
          push_global(mod.s + "." + name.s);
          break;
        }
        case 'R': reduce(); break;
        case 0x81: newobj(); break;
        case 'b': build(); break;
        case 'q': memo_[static_cast<std::uint32_t>(u(1))] = top(); break;
        case 'r': memo_[static_cast<std::uint32_t>(u(4))] = top(); break;
        case 0x94: memo_[static_cast<std::uint32_t>(memo_.size())] = top(); break;
        case 'h': push(memo_get(static_cast<std::uint32_t>(u(1)))); break;
        case 'j': push(memo_get(static_cast<std::uint32_t>(u(4)))); break;
        default: {
          char buf[8];
          std::snprintf(buf, sizeof buf, "0x%02x", op);
          fail(std::string("unsupported opcode ") + buf);
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(origin_, "pickle: " + what + " at offset " + std::to_string(op_pos_));
  }

  std::span<const std::byte> need(std::uint64_t n) {
    if (n > b_.size() - p_) fail("truncated operand");
    auto s = b_.subspan(p_, n);
    p_ += n;
    return s;
  }
  std::uint64_t u(int n) {
    const auto s = need(static_cast<std::uint64_t>(n));
    std::uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<std::uint8_t>(s[k]);
    return v;
  }
  std::string line() {
    std::size_t e = p_;
    while (e < b_.size() && b_[e] != std::byte{'\n'}) ++e;
    if (e >= b_.size()) fail("unterminated GLOBAL name");
    std::string s(reinterpret_cast<const char*>(b_.data()) + p_, e - p_);
    p_ = e + 1;
    return s;
  }

  static Node make(Kind k) {
    auto n = std::make_shared<PyValue>();
    n->kind = k;
    return n;
  }
  /// The value of a node being consumed into a container: moved when nothing else (the memo)
  /// refers to it, copied otherwise.
  static PyValue take(const Node& n) { return n.use_count() == 1 ? std::move(*n) : *n; }

  std::size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
  bool has_mark_on_top() const { return !marks_.empty() && marks_.back() == stack_.size(); }
  void push(Node n) { stack_.push_back(std::move(n)); }
  Node pop() {
    if (stack_.size() <= base()) fail("stack underflow");
    Node n = std::move(stack_.back());
    stack_.pop_back();
    return n;
  }
  const Node& top() const {
    if (stack_.size() <= base()) fail("stack underflow");
    return stack_.back();
  }
  std::vector<PyValue> pop_to_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<PyValue> out;
    out.reserve(stack_.size() - m);
    for (std::size_t k = m; k < stack_.size(); ++k) out.push_back(take(stack_[k]));
    stack_.resize(m);
    return out;
  }
  PyValue& expect_kind(PyValue& v, Kind k, const char* op) const {
    if (v.kind != k) {
      PyValue want;
      want.kind = k;
      fail(std::string(op) + " on a " + std::string(v.kind_name()) + ", expected a " +
           std::string(want.kind_name()));
    }
    return v;
  }
  void set_items(PyValue& d, std::vector<PyValue> vals) {
    if (vals.size() % 2 != 0) fail("odd number of items for a dict");
    for (std::size_t k = 0; k < vals.size(); k += 2)
      d.dict.push_back(PyDictItem{std::move(vals[k]), std::move(vals[k + 1])});
  }
  Node memo_get(std::uint32_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("memo key " + std::to_string(key) + " not defined");
    return it->second;
  }
  void push_bool(bool v) {
    auto n = make(Kind::boolean);
    n->b = v;
    push(n);
  }
  void push_int(std::int64_t v) {
    auto n = make(Kind::integer);
    n->i = v;
    push(n);
  }
  void push_str(Kind k, std::uint64_t len) {
    auto s = need(len);
    auto n = make(k);
    n->s.assign(reinterpret_cast<const char*>(s.data()), s.size());
    push(n);
  }
  void push_global(std::string name) {
    // Python 2 and 3 spell the builtins module differently.
    if (name.rfind("__builtin__.", 0) == 0) name = "builtins." + name.substr(12);
    if (name.rfind("copy_reg.", 0) == 0) name = "copyreg." + name.substr(9);
    auto n = make(Kind::global);
    n->s = std::move(name);
    push(n);
  }

  static std::int64_t as_int(const PyValue& v) {
    return v.kind == Kind::boolean ? static_cast<std::int64_t>(v.b) : v.i;
  }
  bool is_int(const PyValue& v) const { return v.kind == Kind::integer || v.kind == Kind::boolean; }

  /// dtype from its REDUCE code ('i4', 'f8', 'b1', 'U8', 'O8', ...); BUILD fixes the byte order.
  Node make_dtype(const PyValue& code) {
    if (!code.is_string()) fail("numpy.dtype expects a type code string");
    const char order = code.s == "b1" || code.s == "i1" || code.s == "u1" ||
                               (!code.s.empty() && code.s[0] == 'O')
                           ? '|'
                           : '<';
    auto n = make(Kind::dtype);
    std::tie(n->array.type, n->array.item_size) =
        npy_parse_descr(std::string(1, order) + code.s, origin_);
    n->s = npy_descr(n->array.type, n->array.item_size);
    return n;
  }

  void reduce() {
    Node args_node = pop();
    Node fn = pop();
    const PyValue& args = *args_node;
    if (fn->kind != Kind::global) fail("REDUCE on a " + std::string(fn->kind_name()));
    if (args.kind != Kind::tuple) fail("REDUCE arguments are not a tuple");
    const std::string& name = fn->s;
    if (is_reconstruct(name)) {
      push(make(Kind::ndarray));  // filled by BUILD
      return;
    }
    if (name == "numpy.dtype") {
      if (args.items.empty()) fail("numpy.dtype without arguments");
      push(make_dtype(args.items[0]));
      return;
    }
    if (is_scalar(name)) {
      if (args.items.size() != 2 || args.items[0].kind != Kind::dtype || !args.items[1].is_string())
        fail("numpy scalar expects (dtype, bytes)");
      const PyValue& dt = args.items[0];
      if (dt.array.type == NpyType::object) fail("object numpy scalars are not supported");
      if (args.items[1].s.size() != dt.array.item_size) fail("numpy scalar payload size mismatch");
      auto n = make(Kind::ndarray);
      n->array.type = dt.array.type;
      n->array.item_size = dt.array.item_size;
      const auto* p = reinterpret_cast<const std::byte*>(args.items[1].s.data());
      n->array.data.assign(p, p + args.items[1].s.size());
      push(n);
      return;
    }
    if (name == "collections.defaultdict" || name == "collections.OrderedDict") {
      push(make(Kind::dict));
      return;
    }
    if (name == "_codecs.encode") {
      if (args.items.size() != 2 || args.items[0].kind != Kind::text || !args.items[1].is_string())
        fail("_codecs.encode expects (text, encoding)");
      if (args.items[1].s != "latin1" && args.items[1].s != "latin-1")
        fail("_codecs.encode with unsupported encoding " + args.items[1].s);
      auto n = make(Kind::bytes);
      n->s = utf8_to_latin1(args.items[0].s);
      push(n);
      return;
    }
    if (name == "copyreg._reconstructor" && !args.items.empty() &&
        args.items[0].kind == Kind::global) {
      push(instantiate(args.items[0].s, args));
      return;
    }
    push(instantiate(name, args));
  }

  void newobj() {
    Node args = pop();
    Node cls = pop();
    if (cls->kind != Kind::global) fail("NEWOBJ on a " + std::string(cls->kind_name()));
    if (args->kind != Kind::tuple) fail("NEWOBJ arguments are not a tuple");
    push(instantiate(cls->s, *args));
  }

  Node instantiate(const std::string& cls, const PyValue& args) {
    if (is_csr(cls)) return make(Kind::csr);  // filled by BUILD
    auto n = make(Kind::object);
    n->s = cls;
    n->items.push_back(args);
    n->items.push_back(PyValue{});
    return n;
  }

  std::string utf8_to_latin1(const std::string& s) const {
    std::string out;
    out.reserve(s.size());
    for (std::size_t k = 0; k < s.size();) {
      const auto c = static_cast<unsigned char>(s[k]);
      if (c < 0x80) {
        out += static_cast<char>(c);
        ++k;
      } else if ((c & 0xE0) == 0xC0 && k + 1 < s.size()) {
        const unsigned cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(s[k + 1]) & 0x3Fu);
        if (cp > 0xFF) fail("latin1 encode of a code point above 255");
        out += static_cast<char>(cp);
        k += 2;
      } else {
        fail("latin1 encode of a code point above 255");
      }
    }
    return out;
  }

  void build() {
    Node state_node = pop();
    PyValue& obj = *top();
    const PyValue& state = *state_node;
    switch (obj.kind) {
      case Kind::ndarray: build_ndarray(obj, state); return;
      case Kind::dtype: build_dtype(obj, state); return;
      case Kind::csr: build_csr(obj, state); return;
      case Kind::object: obj.items[1] = state; return;
      default: fail("BUILD on a " + std::string(obj.kind_name()));
    }
  }

  void build_dtype(PyValue& dt, const PyValue& st) {
    if (st.kind != Kind::tuple || st.items.size() < 6 || !st.items[1].is_string())
      fail("unexpected numpy dtype state");
    const std::string& endian = st.items[1].s;
    if (endian == ">" && dt.array.item_size > 1 && dt.array.type != NpyType::object)
      fail("big-endian numpy dtype is not supported");
    if (st.items[5].kind == Kind::integer && st.items[5].i > 0 && dt.array.type == NpyType::unicode)
      dt.array.item_size = static_cast<std::size_t>(st.items[5].i);
    dt.s = npy_descr(dt.array.type, dt.array.item_size);
  }

  void build_ndarray(PyValue& nd, const PyValue& st) {
    if (st.kind != Kind::tuple || (st.items.size() != 5 && st.items.size() != 4))
      fail("unexpected numpy ndarray state");
    const std::size_t o = st.items.size() == 5 ? 1 : 0;  // version field present
    const PyValue& shape = st.items[o];
    const PyValue& dt = st.items[o + 1];
    const PyValue& fortran = st.items[o + 2];
    const PyValue& payload = st.items[o + 3];
    if (shape.kind != Kind::tuple || dt.kind != Kind::dtype || !is_int(fortran))
      fail("unexpected numpy ndarray state");
    NpyArray& a = nd.array;
    a.type = dt.array.type;
    a.item_size = dt.array.item_size;
    a.fortran_order = as_int(fortran) != 0;
    a.shape.clear();
    for (const auto& d : shape.items) {
      if (!is_int(d) || as_int(d) < 0) fail("bad ndarray shape");
      a.shape.push_back(as_int(d));
    }
    std::int64_t n = 1;
    for (auto d : a.shape) {
      if (d != 0 && n > (std::int64_t{1} << 50) / d) fail("ndarray shape too large");
      n *= d;
    }
    if (a.type == NpyType::object) {
      if (payload.kind != Kind::list) fail("object ndarray payload is not a list");
      if (static_cast<std::int64_t>(payload.items.size()) != n)
        fail("object ndarray has " + std::to_string(payload.items.size()) + " elements, shape needs " +
             std::to_string(n));
      if (a.fortran_order && a.shape.size() > 1) fail("Fortran-order object ndarray not supported");
      nd.items = payload.items;
      a.data.clear();
      return;
    }
    if (!payload.is_string()) fail("ndarray payload is not a byte string");
    if (payload.s.size() != static_cast<std::uint64_t>(n) * a.item_size)
      fail("ndarray payload has " + std::to_string(payload.s.size()) + " bytes, shape needs " +
           std::to_string(static_cast<std::uint64_t>(n) * a.item_size));
    const auto* p = reinterpret_cast<const std::byte*>(payload.s.data());
    a.data.assign(p, p + payload.s.size());
  }

  void build_csr(PyValue& m, const PyValue& st) {
    if (st.kind != Kind::dict) fail("csr_matrix state is not a dict");
    const PyValue* shape = st.find("_shape");
    const PyValue* indptr = st.find("indptr");
    const PyValue* indices = st.find("indices");
    const PyValue* data = st.find("data");
    if (!shape || !indptr || !indices || !data) fail("csr_matrix state lacks _shape/indptr/indices/data");
    if (shape->kind != Kind::tuple || shape->items.size() != 2 || !is_int(shape->items[0]) ||
        !is_int(shape->items[1]))
      fail("csr_matrix _shape is not a pair of ints");
    if (indptr->kind != Kind::ndarray || indices->kind != Kind::ndarray || data->kind != Kind::ndarray)
      fail("csr_matrix arrays are not ndarrays");
    m.rows = as_int(shape->items[0]);
    m.cols = as_int(shape->items[1]);
    m.indptr = npy_to_int64(indptr->array, origin_);
    m.indices = npy_to_int64(indices->array, origin_);
    m.data = npy_to_float32(data->array, origin_);
    const auto nnz = static_cast<std::int64_t>(m.indices.size());
    if (m.rows < 0 || m.cols < 0 || static_cast<std::int64_t>(m.indptr.size()) != m.rows + 1)
      fail("csr_matrix indptr length does not match the shape");
    if (m.indptr.front() != 0 || m.indptr.back() != nnz ||
        static_cast<std::int64_t>(m.data.size()) != nnz)
      fail("csr_matrix indptr/indices/data lengths disagree");
    for (std::int64_t r = 0; r < m.rows; ++r)
      if (m.indptr[r] > m.indptr[r + 1]) fail("csr_matrix indptr is not monotone");
    for (auto c : m.indices)
      if (c < 0 || c >= m.cols) fail("csr_matrix column index out of range");
  }

  std::span<const std::byte> b_;
  const std::string& origin_;
  std::size_t p_ = 0, op_pos_ = 0;
  std::vector<Node> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint32_t, Node> memo_;
};

}  // namespace

const PyValue* PyValue::find(std::string_view key) const {
  if (kind != Kind::dict) return nullptr;
  for (const auto& [k, v] : dict)
    if (k.is_string() && k.s == key) return &v;
  return nullptr;
}

const PyValue* PyValue::find(std::int64_t key) const {
  if (kind != Kind::dict) return nullptr;
  for (const auto& [k, v] : dict)
    if (k.kind == Kind::integer && k.i == key) return &v;
  return nullptr;
}

std::string_view PyValue::kind_name() const {
  switch (kind) {
    case Kind::none: return "None";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::bytes: return "bytes";
    case Kind::text: return "str";
    case Kind::tuple: return "tuple";
    case Kind::list: return "list";
    case Kind::dict: return "dict";
    case Kind::ndarray: return "ndarray";
    case Kind::csr: return "csr_matrix";
    case Kind::global: return "global";
    case Kind::dtype: return "dtype";
    case Kind::object: return "object";
    case Kind::floating: return "float";
  }
  return "?";
}

PyValue parse_pickle(std::span<const std::byte> bytes, const std::string& origin) {
  return Unpickler(bytes, origin).run();
}

PyValue read_pickle(const std::string& path) {
  return parse_pickle(read_file_bytes(path), path);
}

std::vector<std::int64_t> py_to_int64_list(const PyValue& v, const std::string& origin) {
  using K = PyValue::Kind;
  if (v.kind == K::ndarray && v.array.type != NpyType::object) return npy_to_int64(v.array, origin);
  if (v.kind != K::list && v.kind != K::tuple && v.kind != K::ndarray)
    throw InputError(origin, "expected a list of ints, found a " + std::string(v.kind_name()));
  std::vector<std::int64_t> out;
  out.reserve(v.items.size());
  for (const auto& x : v.items) {
    if (x.kind == K::integer) out.push_back(x.i);
    else if (x.kind == K::boolean) out.push_back(x.b);
    else throw InputError(origin, "expected a list of ints, found an element of type " +
                                      std::string(x.kind_name()));
  }
  return out;
}

std::vector<std::string> py_to_strings(const PyValue& v, const std::string& origin) {
  using K = PyValue::Kind;
  if (v.kind == K::ndarray && v.array.type == NpyType::unicode) return npy_to_strings(v.array, origin);
  if (v.kind != K::list && v.kind != K::tuple &&
      !(v.kind == K::ndarray && v.array.type == NpyType::object))
    throw InputError(origin, "expected a list of strings, found a " + std::string(v.kind_name()));
  std::vector<std::string> out;
  out.reserve(v.items.size());
  for (const auto& x : v.items) {
    if (!x.is_string())
      throw InputError(origin, "expected a list of strings, found an element of type " +
                                   std::string(x.kind_name()));
    out.push_back(x.s);
  }
  return out;
}

}  // namespace halognn
