#pragma once
/// @file host_alloc.hpp
/// Host memory for large arrays: the CPU device's buffers and the kernels' scratch.
#include <cstddef>

namespace halognn {

/// Blocks of at least this many bytes are placed on 2 MiB boundaries, rounded up to whole 2 MiB
/// pages, and marked for transparent huge pages (madvise MADV_HUGEPAGE).
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

/// At least `bytes` bytes, 64-byte aligned (2 MiB aligned and huge-page backed where the kernel
/// allows it for blocks of kHugePageBytes or more); all zero with `zeroed`, otherwise
/// uninitialised. Throws std::bad_alloc. Release with host_free.
void* host_alloc(std::size_t bytes, bool zeroed = false);

/// Releases a block of host_alloc (nullptr is ignored).
void host_free(void* p) noexcept;

}  // namespace halognn
