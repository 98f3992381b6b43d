// libFuzzer harness: the partition rank file reader (header, sections, structural validation).
// A random mutation almost never keeps the CRC32 trailer valid, so the harness rewrites the
// trailer to the body's CRC before reading: the fuzzer then explores everything behind the
// checksum, which is what a forged or buggy file that passes its checksum reaches.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "fuzz_util.hpp"
#include "partition/partition_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halognn;
  std::vector<std::uint8_t> file(data, data + size);
  if (file.size() >= 4) {
    const std::uint32_t crc = static_cast<std::uint32_t>(
        ::crc32(::crc32(0, nullptr, 0), file.data(), static_cast<uInt>(file.size() - 4)));
    std::memcpy(file.data() + file.size() - 4, &crc, 4);
  }
  const std::string path = fuzz::scratch_file(".bin", file.data(), file.size());
  try {
    (void)read_local_partition_file(path);
  } catch (const InputError&) {
  }
  return 0;
}
