#pragma once
/// @file json.hpp
/// A small JSON value with a strict parser and a writer: enough for dataset and partition
/// manifests, config dumps and metrics lines. Objects keep insertion order so written files are
/// stable and diffable. Integers are kept exactly (int64) apart from doubles.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace halognn {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;  // null
  Json(std::nullptr_t) {}  // NOLINT
  Json(bool b) : v_(b) {}  // NOLINT
  Json(int i) : v_(static_cast<std::int64_t>(i)) {}  // NOLINT
  Json(long i) : v_(static_cast<std::int64_t>(i)) {}  // NOLINT
  Json(long long i) : v_(static_cast<std::int64_t>(i)) {}  // NOLINT
  Json(unsigned i) : v_(static_cast<std::int64_t>(i)) {}  // NOLINT
  Json(unsigned long i) : v_(static_cast<std::int64_t>(i)) {}  // NOLINT
  Json(unsigned long long i) : v_(static_cast<std::int64_t>(i)) {}  // NOLINT
  Json(double d) : v_(d) {}  // NOLINT
  Json(float d) : v_(static_cast<double>(d)) {}  // NOLINT
  Json(const char* s) : v_(std::string(s)) {}  // NOLINT
  Json(std::string s) : v_(std::move(s)) {}  // NOLINT
  Json(std::string_view s) : v_(std::string(s)) {}  // NOLINT
  Json(Array a) : v_(std::make_shared<Array>(std::move(a))) {}  // NOLINT
  Json(Object o) : v_(std::make_shared<Object>(std::move(o))) {}  // NOLINT
  template <typename T>
  Json(const std::vector<T>& v) {  // NOLINT
    Array a;
    a.reserve(v.size());
    for (const auto& x : v) a.emplace_back(x);
    v_ = std::make_shared<Array>(std::move(a));
  }
  static Json object() { return Json(Object{}); }
  static Json array() { return Json(Array{}); }

  bool is_null() const { return v_.index() == 0; }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(v_); }
  bool is_number() const { return is_int() || std::holds_alternative<double>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(v_); }
  bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(v_); }

  /// Typed accessors; throw halognn::Error naming the expected type on mismatch.
  bool as_bool() const;
  std::int64_t as_int() const;  ///< also accepts an integral double
  double as_double() const;     ///< accepts ints too
  const std::string& as_string() const;
  const Array& as_array() const;
  Array& as_array();
  const Object& as_object() const;
  Object& as_object();

  /// Object member access. `at` throws "missing key" if absent; `find` returns nullptr.
  const Json& at(std::string_view key) const;
  const Json* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  /// Sets (or replaces) a member, keeping first-insertion order. Turns null into an object.
  Json& set(std::string_view key, Json value);
  /// Appends to an array. Turns null into an array.
  Json& push_back(Json value);
  std::size_t size() const;

  /// Compact (indent < 0) or pretty-printed text. Doubles are printed with round-trip precision;
  /// NaN and infinities are written as null (JSON has no literal for them).
  std::string dump(int indent = -1) const;
  /// Strict RFC 8259 parser; throws halognn::Error("json: <problem> at offset N").
  static Json parse(std::string_view text);

 private:
  void dump_to(std::string& out, int indent, int depth) const;
  std::variant<std::monostate, bool, std::int64_t, double, std::string, std::shared_ptr<Array>,
               std::shared_ptr<Object>>
      v_;
};

/// Reads and parses a JSON file; errors are InputError naming the file.
Json read_json_file(const std::string& path);

/// Writes text to `path` atomically: to `path.tmp.<pid>`, fsync, then rename over `path`.
void write_file_atomic(const std::string& path, std::string_view contents);

}  // namespace halognn
