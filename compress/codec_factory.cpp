#include <string>

#include "compress/codec.hpp"
#include "core/error.hpp"

namespace halognn {

std::unique_ptr<Codec> make_fp32_codec();

std::unique_ptr<Codec> make_codec(std::string_view name) {
  if (name == "fp32") return make_fp32_codec();
  throw ConfigError("unknown codec '" + std::string(name) + "' (choose from: fp32)");
}

}  // namespace halognn
