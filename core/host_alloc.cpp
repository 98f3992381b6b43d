#include "core/host_alloc.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

namespace halognn {
namespace {

/// The mapped length of every live huge block, by address (host_free needs it for munmap).
struct HugeBlocks {
  std::mutex mutex;
  std::unordered_map<void*, std::size_t> length;
};

HugeBlocks& huge_blocks() {
  static HugeBlocks* blocks = new HugeBlocks;  // never destroyed: blocks may be freed at exit
  return *blocks;
}

/// A fresh mapping of `length` bytes (a multiple of kHugePageBytes) on a 2 MiB boundary.
void* map_huge(std::size_t length) {
  const std::size_t span = length + kHugePageBytes;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t start = (base + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  // Return the unaligned head and the tail beyond `length` to the system.
  if (start > base) munmap(raw, start - base);
  const std::uintptr_t end = start + length, span_end = base + span;
  if (span_end > end) munmap(reinterpret_cast<void*>(end), span_end - end);
  return reinterpret_cast<void*>(start);
}

}  // namespace

void* host_alloc(std::size_t bytes, bool zeroed) {
  if (bytes < kHugePageBytes) {
    void* p = std::aligned_alloc(64, (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    if (zeroed) std::memset(p, 0, bytes);
    return p;
  }
  // A fresh mapping, not the allocator's heap: pages the heap already faulted in stay 4 KiB
  // pages whatever the advice says. Gathers at random rows of a large array (SpMM, GAT) miss the
  // TLB on almost every row with 4 KiB pages. The advice is a hint: where the kernel has no
  // transparent huge pages the block is ordinary memory. A fresh mapping reads as zeros, so
  // `zeroed` costs nothing here (writing the zeros again would fault and clear every page twice).
  const std::size_t length = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = map_huge(length);
  (void)madvise(p, length, MADV_HUGEPAGE);
  HugeBlocks& blocks = huge_blocks();
  try {
    const std::lock_guard<std::mutex> lock(blocks.mutex);
    blocks.length.emplace(p, length);
  } catch (...) {
    munmap(p, length);
    throw;
  }
  return p;
}

void host_free(void* p) noexcept {
  if (!p) return;
  HugeBlocks& blocks = huge_blocks();
  std::size_t length = 0;
  {
    const std::lock_guard<std::mutex> lock(blocks.mutex);
    const auto it = blocks.length.find(p);
    if (it != blocks.length.end()) {
      length = it->second;
      blocks.length.erase(it);
    }
  }
  if (length > 0)
    munmap(p, length);
  else
    std::free(p);
}

}  // namespace halognn
