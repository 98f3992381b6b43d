// make_codec, the list of codec names, and the CLI codec plan.
#include <map>
#include <string>

#include "compress/codec.hpp"
#include "compress/codec_plan.hpp"
#include "compress/quant_math.hpp"
#include "core/error.hpp"

namespace halognn {

std::unique_ptr<Codec> make_fp32_codec();
std::unique_ptr<Codec> make_fp16_codec();
std::unique_ptr<Codec> make_bf16_codec();
std::unique_ptr<Codec> make_quant_codec(int bits, quant::MetaFormat meta);

namespace {

std::string joined_names() {
  std::string s;
  for (const auto& n : codec_names()) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_codec_name(std::string_view name) {
  for (const auto& n : codec_names())
    if (n == name) return true;
  return false;
}

/// Expands one spec into `layers` codecs, reusing objects from `cache` by name.
std::vector<std::shared_ptr<const Codec>> expand(
    std::string_view spec, const char* label, int layers,
    std::map<std::string, std::shared_ptr<const Codec>, std::less<>>& cache) {
  std::vector<std::string_view> tokens;
  for (std::size_t start = 0;;) {
    const std::size_t comma = spec.find(',', start);
    tokens.push_back(trim(spec.substr(start, comma == std::string_view::npos ? spec.npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::string quoted = "'";
  quoted.append(spec);
  quoted += '\'';
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    GNN_CHECK_CONFIG(!tokens[i].empty(), label, " codec spec ", quoted, ": name ", i + 1,
                     " is empty (give one name, or one name per layer separated by commas; "
                     "valid names: ", joined_names(), ")");
    GNN_CHECK_CONFIG(is_codec_name(tokens[i]), label, " codec spec ", quoted, ": '", tokens[i],
                     "' is not a codec (valid names: ", joined_names(), ")");
  }
  GNN_CHECK_CONFIG(tokens.size() == 1 || tokens.size() == static_cast<std::size_t>(layers), label,
                   " codec spec ", quoted, " lists ", tokens.size(), " codecs but the model has ",
                   layers, " layers (give one name for all layers, or exactly one per layer)");
  std::vector<std::shared_ptr<const Codec>> out;
  for (int l = 0; l < layers; ++l) {
    const std::string_view name = tokens.size() == 1 ? tokens[0] : tokens[l];
    auto it = cache.find(name);
    if (it == cache.end()) it = cache.emplace(std::string(name), make_codec(name)).first;
    out.push_back(it->second);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& codec_names() {
  static const std::vector<std::string> names = {
      "fp32",         "fp16",         "bf16",         "q8",           "q4",
      "q2",           "q1",           "q8-fp16meta",  "q4-fp16meta",  "q2-fp16meta",
      "q1-fp16meta",  "q8-bf16meta",  "q4-bf16meta",  "q2-bf16meta",  "q1-bf16meta"};
  return names;
}

void Codec::decode_scattered(const Device& dev, std::span<const std::byte>, const CodecContext&,
                             DenseView, const LocalId*, std::int64_t) const {
  throw Error("codec " + name() + ": decode_scattered on " + dev.name() +
              " is not implemented (scatters() is false)");
}

void Codec::encode_gathered(const Device& dev, ConstDenseView, const LocalId*, std::int64_t,
                            const CodecContext&, std::span<std::byte>) const {
  throw Error("codec " + name() + ": encode_gathered on " + dev.name() +
              " is not implemented (gathers() is false)");
}

std::unique_ptr<Codec> make_codec(std::string_view name) {
  if (name == "fp32") return make_fp32_codec();
  if (name == "fp16") return make_fp16_codec();
  if (name == "bf16") return make_bf16_codec();
  // q<b>[-fp16meta|-bf16meta]
  if (name.size() >= 2 && name[0] == 'q') {
    const char b = name[1];
    const std::string_view suffix = name.substr(2);
    const int bits = b == '8' ? 8 : b == '4' ? 4 : b == '2' ? 2 : b == '1' ? 1 : 0;
    if (bits != 0) {
      if (suffix.empty()) return make_quant_codec(bits, quant::MetaFormat::f32);
      if (suffix == "-fp16meta") return make_quant_codec(bits, quant::MetaFormat::f16);
      if (suffix == "-bf16meta") return make_quant_codec(bits, quant::MetaFormat::bf16);
    }
  }
  throw ConfigError("unknown codec '" + std::string(name) + "' (valid names: " + joined_names() + ")");
}

CodecPlan parse_codec_plan(std::string_view all, std::string_view fwd, std::string_view bwd,
                           int layers) {
  GNN_CHECK_CONFIG(layers >= 1, "codec plan: the model needs at least one layer, got ", layers);
  if (trim(all).empty()) all = "fp32";
  // A spec inherited from `all` is reported under the name of `all`.
  const char* fwd_label = trim(fwd).empty() ? "shared" : "forward";
  const char* bwd_label = trim(bwd).empty() ? "shared" : "backward";
  if (trim(fwd).empty()) fwd = all;
  if (trim(bwd).empty()) bwd = all;
  std::map<std::string, std::shared_ptr<const Codec>, std::less<>> cache;
  CodecPlan plan;
  plan.forward = expand(fwd, fwd_label, layers, cache);
  plan.backward = expand(bwd, bwd_label, layers, cache);
  return plan;
}

std::string describe(const CodecPlan& plan) {
  auto list = [](const std::vector<std::shared_ptr<const Codec>>& v) {
    std::string s;
    for (const auto& c : v) {
      if (!s.empty()) s += ',';
      s += c->name();
    }
    return s;
  };
  std::string s = "fwd ";
  s += list(plan.forward);
  s += " bwd ";
  s += list(plan.backward);
  return s;
}

}  // namespace halognn
