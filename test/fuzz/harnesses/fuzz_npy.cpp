// libFuzzer harness: the .npy reader and every conversion a converter applies to its result.
// Anything but an InputError (a crash, a sanitizer report, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/data/npy.hpp"
#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halognn;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const NpyArray a = parse_npy(bytes, "fuzz.npy");
    // Keep the conversions' allocations bounded: the reader checked count * item_size against
    // the file, so count is at most the input size.
    (void)npy_c_order_bytes(a);
    try { (void)npy_to_int64(a, "fuzz.npy"); } catch (const InputError&) {}
    try { (void)npy_to_float32(a, "fuzz.npy"); } catch (const InputError&) {}
    try { (void)npy_to_uint8(a, "fuzz.npy"); } catch (const InputError&) {}
    try { (void)npy_to_strings(a, "fuzz.npy"); } catch (const InputError&) {}
  } catch (const InputError&) {
  }
  return 0;
}
