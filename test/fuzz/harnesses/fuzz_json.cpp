// libFuzzer harness: JSON parsing (manifests, config files) and the strict typed accessors the
// manifest readers use, plus writing the document back (dump_json must not throw on odd UTF-8).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.hpp"
#include "core/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halognn;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const Json j = parse_json(text, "fuzz.json");
    (void)dump_json(j);
    (void)dump_json(j, 2);
    if (j.is_object()) {
      for (const char* key : {"version", "parts", "num_nodes", "format", "multilabel", "lr"}) {
        try { (void)json_int(j, key, "fuzz.json"); } catch (const InputError&) {}
        try { (void)json_number(j, key, "fuzz.json"); } catch (const InputError&) {}
        try { (void)json_bool(j, key, "fuzz.json"); } catch (const InputError&) {}
        try { (void)json_string(j, key, "fuzz.json"); } catch (const InputError&) {}
      }
    }
  } catch (const InputError&) {
  }
  return 0;
}
