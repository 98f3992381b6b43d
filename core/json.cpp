#include "core/json.hpp"

#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/file_read.hpp"

namespace halognn {
namespace {

const Json& member(const Json& object, std::string_view key, const std::string& origin,
                   const char* want) {
  if (!object.is_object()) throw InputError(origin, "expected a JSON object");
  const auto it = object.find(key);
  if (it == object.end())
    throw InputError(origin, "missing \"" + std::string(key) + "\" (" + want + ")");
  return *it;
}

[[noreturn]] void wrong_type(std::string_view key, const std::string& origin, const char* want,
                             const Json& got) {
  throw InputError(origin, "\"" + std::string(key) + "\" must be " + want + ", not " +
                               std::string(got.type_name()));
}

}  // namespace

Json parse_json(std::string_view text, const std::string& origin) {
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ..."; a
    // number beyond double ("1e903") is an out_of_range error (406), not a parse_error (found by
    // fuzzing, test/fuzz/corpus/json/regress-number-overflow.json).
    std::string why = e.what();
    if (const auto at = why.find("] "); at != std::string::npos) why = why.substr(at + 2);
    throw InputError(origin, "invalid JSON: " + why);
  }
}

Json read_json_file(const std::string& path) {
  return parse_json(read_file_text(path), path);
}

std::string dump_json(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

std::int64_t json_int(const Json& object, std::string_view key, const std::string& origin) {
  const Json& v = member(object, key, origin, "an integer");
  if (!v.is_number_integer()) wrong_type(key, origin, "an integer", v);
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    throw InputError(origin, "\"" + std::string(key) + "\" does not fit in 64 bits");
  return v.get<std::int64_t>();
}

double json_number(const Json& object, std::string_view key, const std::string& origin) {
  const Json& v = member(object, key, origin, "a number");
  if (!v.is_number()) wrong_type(key, origin, "a number", v);
  return v.get<double>();
}

bool json_bool(const Json& object, std::string_view key, const std::string& origin) {
  const Json& v = member(object, key, origin, "true or false");
  if (!v.is_boolean()) wrong_type(key, origin, "true or false", v);
  return v.get<bool>();
}

std::string json_string(const Json& object, std::string_view key, const std::string& origin) {
  const Json& v = member(object, key, origin, "a string");
  if (!v.is_string()) wrong_type(key, origin, "a string", v);
  return v.get<std::string>();
}

}  // namespace halognn
