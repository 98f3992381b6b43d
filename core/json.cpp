#include "core/json.hpp"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace halognn {
namespace {

[[noreturn]] void type_error(const char* want) {
  throw Error(std::string("json: expected ") + want);
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}
  Json parse_document() {
    Json v = value(0);
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("json: " + what + " at offset " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(std::string_view w) {
    if (s_.substr(i_, w.size()) == w) {
      i_ += w.size();
      return true;
    }
    return false;
  }
  Json value(int depth) {
    if (depth > 256) fail("nesting too deep");
    ws();
    if (i_ >= s_.size()) fail("unexpected end of input");
    const char c = s_[i_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Json(string());
    if (literal("true")) return Json(true);
    if (literal("false")) return Json(false);
    if (literal("null")) return Json();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail(std::string("unexpected character '") + c + "'");
  }
  Json object(int depth) {
    ++i_;
    Json o = Json::object();
    if (eat('}')) return o;
    do {
      ws();
      if (i_ >= s_.size() || s_[i_] != '"') fail("expected a string key");
      std::string k = string();
      expect(':');
      o.set(k, value(depth + 1));
    } while (eat(','));
    expect('}');
    return o;
  }
  Json array(int depth) {
    ++i_;
    Json a = Json::array();
    if (eat(']')) return a;
    do a.push_back(value(depth + 1));
    while (eat(','));
    expect(']');
    return a;
  }
  static void put_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  std::uint32_t hex4() {
    if (i_ + 4 > s_.size()) fail("truncated \\u escape");
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= h - '0';
      else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
      else fail("bad \\u escape");
    }
    return v;
  }
  std::string string() {
    ++i_;  // opening quote
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (!literal("\\u")) fail("lone surrogate");
            const std::uint32_t lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  Json number() {
    const std::size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !(s_[i_] >= '0' && s_[i_] <= '9')) fail("bad number");
    if (s_[i_] == '0' && i_ + 1 < s_.size() && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9')
      fail("leading zero");
    bool is_float = false;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c >= '0' && c <= '9') ++i_;
      else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') { is_float = true; ++i_; }
      else break;
    }
    const std::string_view t = s_.substr(start, i_ - start);
    if (!is_float) {
      std::int64_t v = 0;
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (ec == std::errc() && p == t.data() + t.size()) return Json(v);
    }
    double d = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), d);
    if (ec != std::errc() || p != t.data() + t.size()) fail("bad number");
    return Json(d);
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

void escape_to(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace

bool Json::as_bool() const {
  if (!is_bool()) type_error("a boolean");
  return std::get<bool>(v_);
}
std::int64_t Json::as_int() const {
  if (is_int()) return std::get<std::int64_t>(v_);
  if (std::holds_alternative<double>(v_)) {
    const double d = std::get<double>(v_);
    if (std::floor(d) == d && std::fabs(d) < 9.007199254740992e15) return static_cast<std::int64_t>(d);
  }
  type_error("an integer");
}
double Json::as_double() const {
  if (is_int()) return static_cast<double>(std::get<std::int64_t>(v_));
  if (std::holds_alternative<double>(v_)) return std::get<double>(v_);
  type_error("a number");
}
const std::string& Json::as_string() const {
  if (!is_string()) type_error("a string");
  return std::get<std::string>(v_);
}
const Json::Array& Json::as_array() const {
  if (!is_array()) type_error("an array");
  return *std::get<std::shared_ptr<Array>>(v_);
}
Json::Array& Json::as_array() {
  if (!is_array()) type_error("an array");
  return *std::get<std::shared_ptr<Array>>(v_);
}
const Json::Object& Json::as_object() const {
  if (!is_object()) type_error("an object");
  return *std::get<std::shared_ptr<Object>>(v_);
}
Json::Object& Json::as_object() {
  if (!is_object()) type_error("an object");
  return *std::get<std::shared_ptr<Object>>(v_);
}
const Json* Json::find(std::string_view key) const {
  for (const auto& [k, v] : as_object())
    if (k == key) return &v;
  return nullptr;
}
const Json& Json::at(std::string_view key) const {
  const Json* v = find(key);
  if (!v) throw Error("json: missing key \"" + std::string(key) + "\"");
  return *v;
}
Json& Json::set(std::string_view key, Json value) {
  if (is_null()) v_ = std::make_shared<Object>();
  // Copy-on-write: values share their containers, so detach before mutating.
  auto& p = std::get<std::shared_ptr<Object>>(v_);
  if (p.use_count() > 1) p = std::make_shared<Object>(*p);
  for (auto& [k, v] : *p)
    if (k == key) {
      v = std::move(value);
      return v;
    }
  p->emplace_back(std::string(key), std::move(value));
  return p->back().second;
}
Json& Json::push_back(Json value) {
  if (is_null()) v_ = std::make_shared<Array>();
  auto& p = std::get<std::shared_ptr<Array>>(v_);
  if (p.use_count() > 1) p = std::make_shared<Array>(*p);
  p->push_back(std::move(value));
  return p->back();
}
std::size_t Json::size() const {
  if (is_array()) return as_array().size();
  if (is_object()) return as_object().size();
  return 0;
}

void Json::dump_to(std::string& out, int indent, int depth) const {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<std::size_t>(indent * d), ' ');
  };
  switch (v_.index()) {
    case 0: out += "null"; break;
    case 1: out += std::get<bool>(v_) ? "true" : "false"; break;
    case 2: out += std::to_string(std::get<std::int64_t>(v_)); break;
    case 3: {
      const double d = std::get<double>(v_);
      if (!std::isfinite(d)) {
        out += "null";
        break;
      }
      char buf[32];
      auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);
      std::string_view t(buf, static_cast<std::size_t>(p - buf));
      out += t;
      // Keep doubles recognisable as doubles when read back.
      if (t.find_first_of(".eE") == std::string_view::npos) out += ".0";
      break;
    }
    case 4: escape_to(out, std::get<std::string>(v_)); break;
    case 5: {
      const auto& a = as_array();
      out += '[';
      for (std::size_t k = 0; k < a.size(); ++k) {
        if (k) out += ',';
        if (indent >= 0 && !a[k].is_array() && !a[k].is_object()) {
          if (k) out += ' ';
        } else {
          newline(depth + 1);
        }
        a[k].dump_to(out, indent, depth + 1);
      }
      if (!a.empty() && (a.back().is_array() || a.back().is_object())) newline(depth);
      out += ']';
      break;
    }
    case 6: {
      const auto& o = as_object();
      out += '{';
      for (std::size_t k = 0; k < o.size(); ++k) {
        if (k) out += ',';
        newline(depth + 1);
        escape_to(out, o[k].first);
        out += indent >= 0 ? ": " : ":";
        o[k].second.dump_to(out, indent, depth + 1);
      }
      if (!o.empty()) newline(depth);
      out += '}';
      break;
    }
  }
}

std::string Json::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

Json Json::parse(std::string_view text) { return Parser(text).parse_document(); }

Json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return Json::parse(ss.str());
  } catch (const Error& e) {
    throw InputError(path, e.what());
  }
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw InputError(path, "cannot create temporary file " + tmp);
  const bool ok = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size() &&
                  std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    throw InputError(path, "write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InputError(path, "cannot rename temporary file into place");
  }
}

}  // namespace halognn
