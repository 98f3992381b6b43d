#pragma once
/// @file json.hpp
/// JSON for manifests, configuration files and metrics lines: nlohmann::ordered_json (objects
/// keep insertion order, so written files are stable and diffable), plus the few helpers that turn
/// its errors into ours (an InputError naming the file or the option).
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace halognn {

using Json = nlohmann::ordered_json;

/// Parses `text`; malformed text is an InputError naming `origin` and the parser's reason.
Json parse_json(std::string_view text, const std::string& origin);

/// Reads and parses a JSON file; errors are InputError naming the file.
Json read_json_file(const std::string& path);

/// Compact (indent < 0) or pretty-printed text. Strings that are not valid UTF-8 are written
/// with U+FFFD in place of the bad bytes (the library would throw); NaN and infinities are null.
std::string dump_json(const Json& j, int indent = -1);

/// Strictly typed members of an object, for validating files: a missing member or one of another
/// type (an integer must be an integer, not 2.0 or true) is an InputError naming `origin` and
/// the key.
std::int64_t json_int(const Json& object, std::string_view key, const std::string& origin);
double json_number(const Json& object, std::string_view key, const std::string& origin);
bool json_bool(const Json& object, std::string_view key, const std::string& origin);
std::string json_string(const Json& object, std::string_view key, const std::string& origin);

}  // namespace halognn
