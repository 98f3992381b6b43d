#include "core/data/state_io.hpp"

#include <cstring>

#include "core/error.hpp"

namespace halognn {
namespace {

template <typename T>
NpyArray make_array(NpyType type, std::vector<std::int64_t> shape, std::span<const T> v) {
  NpyArray a;
  a.type = type;
  a.item_size = sizeof(T);
  a.shape = std::move(shape);
  a.data.resize(v.size_bytes());
  if (!v.empty()) std::memcpy(a.data.data(), v.data(), v.size_bytes());
  return a;
}

/// UTF-8 to the code points numpy's '<U' stores (a byte that is not valid UTF-8 stands for
/// itself).
std::vector<std::uint32_t> code_points(std::string_view s) {
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    std::uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    bool ok = len > 0 && i + static_cast<std::size_t>(len) <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
      ok = (d >> 6) == 2;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (!ok) {
      cp = c;
      len = 1;
    }
    out.push_back(cp);
    i += static_cast<std::size_t>(len);
  }
  return out;
}

}  // namespace

std::string format_shape(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) {
    s += std::to_string(shape[k]);
    if (shape.size() == 1 || k + 1 < shape.size()) s += ",";
    if (k + 1 < shape.size()) s += " ";
  }
  return s + ")";
}

StateWriter StateWriter::sub(std::string_view name) const {
  return StateWriter(*out_, prefix_ + std::string(name) + "/");
}

void StateWriter::add(std::string_view name, NpyArray a) {
  const std::string key = prefix_ + std::string(name);
  GNN_ASSERT(!out_->contains(key), "state array ", key, " written twice");
  out_->emplace(key, std::move(a));
}

void StateWriter::put(std::string_view name, const Matrix& m) {
  const std::vector<float> host = m.to_host();
  add(name, make_array<float>(NpyType::f4, {m.rows(), m.cols()}, host));
}

void StateWriter::put(std::string_view name, std::span<const float> v) {
  add(name, make_array(NpyType::f4, {static_cast<std::int64_t>(v.size())}, v));
}

void StateWriter::put(std::string_view name, std::span<const std::int64_t> v) {
  add(name, make_array(NpyType::i8, {static_cast<std::int64_t>(v.size())}, v));
}

void StateWriter::put(std::string_view name, std::span<const std::uint8_t> v) {
  add(name, make_array(NpyType::u1, {static_cast<std::int64_t>(v.size())}, v));
}

void StateWriter::put_int(std::string_view name, std::int64_t v) {
  add(name, make_array(NpyType::i8, {}, std::span<const std::int64_t>(&v, 1)));
}

void StateWriter::put_double(std::string_view name, double v) {
  add(name, make_array(NpyType::f8, {}, std::span<const double>(&v, 1)));
}

void StateWriter::put_string(std::string_view name, std::string_view v) {
  std::vector<std::uint32_t> cp = code_points(v);
  if (cp.empty()) cp.push_back(0);  // numpy's '<U0' is not a valid dtype; '' reads back as ''
  NpyArray a = make_array<std::uint32_t>(NpyType::unicode, {}, cp);
  a.item_size = 4 * cp.size();
  add(name, std::move(a));
}

StateReader StateReader::sub(std::string_view name) const {
  return StateReader(*in_, origin_, prefix_ + std::string(name) + "/");
}

bool StateReader::has(std::string_view name) const { return in_->contains(full(name)); }

const NpyArray& StateReader::find(std::string_view name, NpyType type) const {
  const std::string key = full(name);
  const auto it = in_->find(key);
  if (it == in_->end()) throw InputError(origin_, "has no array '" + key + "'");
  const NpyArray& a = it->second;
  if (a.type != type)
    throw InputError(origin_, "array '" + key + "' has dtype " + npy_descr(a.type, a.item_size) +
                                  ", expected " +
                                  npy_descr(type, type == NpyType::unicode ? 4 : a.item_size));
  return a;
}

const NpyArray& StateReader::find_vector(std::string_view name, NpyType type,
                                         std::size_t n) const {
  const NpyArray& a = find(name, type);
  if (a.shape.size() != 1 || static_cast<std::size_t>(a.shape[0]) != n)
    throw InputError(origin_, "array '" + full(name) + "' has shape " + format_shape(a.shape) +
                                  ", this run needs (" + std::to_string(n) + ",)");
  return a;
}

const std::vector<std::int64_t>& StateReader::shape(std::string_view name) const {
  const auto it = in_->find(full(name));
  if (it == in_->end()) throw InputError(origin_, "has no array '" + full(name) + "'");
  return it->second.shape;
}

void StateReader::get(std::string_view name, Matrix& m) const {
  const NpyArray& a = find(name, NpyType::f4);
  const std::vector<std::int64_t> want{m.rows(), m.cols()};
  if (a.shape != want)
    throw InputError(origin_, "array '" + full(name) + "' has shape " + format_shape(a.shape) +
                                  ", this run needs " + format_shape(want));
  const std::vector<float> host = npy_to_float32(a, origin_ + ":" + full(name));
  // Into the matrix's own buffer: whoever holds a view of it (a layer, an optimiser) sees the
  // restored values.
  if (!host.empty()) m.device().copy_from_host(m.data(), host.data(), host.size() * sizeof(float));
}

std::vector<float> StateReader::get_floats(std::string_view name, std::size_t n) const {
  const NpyArray& a = find_vector(name, NpyType::f4, n);
  std::vector<float> v(n);
  if (n) std::memcpy(v.data(), a.data.data(), n * sizeof(float));
  return v;
}

std::vector<std::int64_t> StateReader::get_ints(std::string_view name, std::size_t n) const {
  const NpyArray& a = find_vector(name, NpyType::i8, n);
  std::vector<std::int64_t> v(n);
  if (n) std::memcpy(v.data(), a.data.data(), n * sizeof(std::int64_t));
  return v;
}

std::vector<std::uint8_t> StateReader::get_bytes(std::string_view name, std::size_t n) const {
  const NpyArray& a = find_vector(name, NpyType::u1, n);
  std::vector<std::uint8_t> v(n);
  if (n) std::memcpy(v.data(), a.data.data(), n);
  return v;
}

std::int64_t StateReader::get_int(std::string_view name) const {
  const NpyArray& a = find(name, NpyType::i8);
  if (!a.shape.empty()) throw InputError(origin_, "array '" + full(name) + "' is not a scalar");
  std::int64_t v;
  std::memcpy(&v, a.data.data(), sizeof v);
  return v;
}

double StateReader::get_double(std::string_view name) const {
  const NpyArray& a = find(name, NpyType::f8);
  if (!a.shape.empty()) throw InputError(origin_, "array '" + full(name) + "' is not a scalar");
  double v;
  std::memcpy(&v, a.data.data(), sizeof v);
  return v;
}

std::string StateReader::get_string(std::string_view name) const {
  const NpyArray& a = find(name, NpyType::unicode);
  if (!a.shape.empty()) throw InputError(origin_, "array '" + full(name) + "' is not a scalar");
  return npy_to_strings(a, origin_ + ":" + full(name)).at(0);
}

}  // namespace halognn
