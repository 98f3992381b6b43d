// libFuzzer harness: the pickle subset reader (the stack machine, memo, numpy and scipy
// reconstruction) and the list conversions converters apply to its result.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/data/pickle.hpp"
#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halognn;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const PyValue v = parse_pickle(bytes, "fuzz.pkl");
    try { (void)py_to_int64_list(v, "fuzz.pkl"); } catch (const InputError&) {}
    try { (void)py_to_strings(v, "fuzz.pkl"); } catch (const InputError&) {}
  } catch (const InputError&) {
  }
  return 0;
}
