#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "core/buffer.hpp"
#include "core/host_alloc.hpp"
#include "core/kernels/reference/scratch.hpp"

namespace halognn {
namespace {

/// Whether transparent huge pages may be used at all ("never" or no file: they cannot).
bool thp_available() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  return std::getline(f, s) && s.find("[never]") == std::string::npos;
}

/// The THPeligible field of the mapping of /proc/self/smaps that contains p, or -1 when the
/// mapping or the field is not found.
int thp_eligible(const void* p) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) return std::stoi(line.substr(12));
  }
  return -1;
}

TEST(HostAlloc, SmallBlocksAreCacheLineAligned) {
  for (const std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{100}, kHugePageBytes - 1}) {
    void* p = host_alloc(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u) << bytes << " bytes";
    std::memset(p, 0x5A, bytes);
    host_free(p);
  }
  host_free(nullptr);
}

// Blocks of 2 MiB or more start on a 2 MiB boundary and their mapping may hold transparent huge
// pages: without them, the SpMM and GAT gathers at random rows miss the TLB on almost every row.
TEST(HostAlloc, LargeBlocksAreHugePageAlignedAndAdvised) {
  for (const std::size_t bytes : {kHugePageBytes, 3 * kHugePageBytes + 12345}) {
    auto* p = static_cast<unsigned char*>(host_alloc(bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % kHugePageBytes, 0u) << bytes << " bytes";
    std::memset(p, 0x5A, bytes);  // every byte is writable
    EXPECT_EQ(p[bytes - 1], 0x5A);
    if (thp_available()) {
      EXPECT_EQ(thp_eligible(p), 1) << bytes << " bytes";
    }
    host_free(p);
  }
}

// Zeroed blocks read as zeros even where the memory was used before: a small block freed dirty and
// asked for again (the heap usually hands the same bytes back), and a fresh large mapping.
TEST(HostAlloc, ZeroedBlocksAreZeroEvenAfterReuse) {
  for (const std::size_t bytes : {std::size_t{4000}, 2 * kHugePageBytes + 64}) {
    for (int round = 0; round < 2; ++round) {
      auto* p = static_cast<unsigned char*>(host_alloc(bytes, /*zeroed=*/true));
      std::size_t nonzero = 0;
      for (std::size_t i = 0; i < bytes; ++i) nonzero += p[i] != 0;
      EXPECT_EQ(nonzero, 0u) << bytes << " bytes, round " << round;
      std::memset(p, 0x5A, bytes);  // dirty it for the next round
      host_free(p);
    }
  }
}

TEST(HostAlloc, MatricesAndScratchUseIt) {
  Matrix m(4096, 256);  // 4 MiB
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m.data()) % kHugePageBytes, 0u);
  const float* s = kernels::scratch::shared_floats(std::size_t{1} << 20);  // 4 MiB
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(s) % kHugePageBytes, 0u);
  if (thp_available()) {
    EXPECT_EQ(thp_eligible(m.data()), 1);
    EXPECT_EQ(thp_eligible(s), 1);
  }
}

}  // namespace
}  // namespace halognn
