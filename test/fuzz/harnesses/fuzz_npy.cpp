// libFuzzer harness: the .npy reader and every conversion a converter applies to its result,
// and the block reader (NpyRowReader, which halognn-data sparsify and the sparsified-dataset
// reader use) on the same bytes: it must accept what parse_npy accepts and read the same elements.
// Anything but an InputError (a crash, a sanitizer report, another exception) is a finding.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "core/data/npy.hpp"
#include "core/error.hpp"
#include "fuzz_util.hpp"

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
  bool parsed = false;
  std::vector<std::byte> want;
  try {
    const NpyArray a = parse_npy(bytes, "fuzz.npy");
    parsed = a.type != NpyType::object;
    if (parsed) want = npy_c_order_bytes(a);
  } catch (const InputError&) {
  }
  const std::string path = fuzz::scratch_file(".npy", data, size);
  try {
    NpyRowReader r(path);
    if (!parsed) std::abort();  // the block reader accepted what parse_npy refuses
    const std::size_t row = static_cast<std::size_t>(r.row_elements()) * r.header().item_size;
    std::vector<std::byte> got(want.size());
    // Blocks of 3 rows, so block boundaries and a short last block are exercised.
    for (std::int64_t r0 = 0; r0 < r.rows() && row > 0; r0 += 3) {
      const std::int64_t n = std::min<std::int64_t>(3, r.rows() - r0);
      r.read_rows(r0, n, got.data() + static_cast<std::size_t>(r0) * row);
    }
    if (got != want) std::abort();  // other elements than parse_npy's
  } catch (const InputError&) {
    // Refused: fine when parse_npy refused too, or for what only blocks cannot read (Fortran
    // order beyond 2-D).
  }
  return 0;
}
