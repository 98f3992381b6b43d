// libFuzzer harness: the ZIP/.npz reader (central directory, local headers, stored and DEFLATE
// members, CRC checks) and the .npy members it parses. It reads from a path, so each input goes
// through a scratch file.
#include <cstddef>
#include <cstdint>

#include "core/data/zip.hpp"
#include "core/error.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halognn;
  const std::string path = fuzz::scratch_file(".npz", data, size);
  try {
    (void)read_npz(path);
  } catch (const InputError&) {
  }
  return 0;
}
