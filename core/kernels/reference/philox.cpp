// Philox-4x32-10 blocks on the CPU (CounterRng::blocks, core/rng.hpp), multi-versioned: the same
// words on every instruction set, computed as wide as the CPU allows (cpu_isa.hpp).
#include <cstdint>

#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/reference/simd.hpp"
#include "core/rng.hpp"

namespace halognn {
namespace {

#define HALOGNN_ISA_BODY "core/kernels/reference/philox_run.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY

}  // namespace

namespace detail {

void philox_run_cpu(std::uint32_t key0, std::uint32_t key1, std::uint32_t lo, std::uint32_t c1,
                    std::uint32_t c2, std::uint32_t c3, std::int64_t count, std::uint32_t* out) {
  switch (kernels::cpu_isa()) {
    case kernels::CpuIsa::avx512: return isa_avx512::philox_run(key0, key1, lo, c1, c2, c3, count, out);
    case kernels::CpuIsa::avx2: return isa_avx2::philox_run(key0, key1, lo, c1, c2, c3, count, out);
    case kernels::CpuIsa::sse2: break;
  }
  isa_sse2::philox_run(key0, key1, lo, c1, c2, c3, count, out);
}

void philox_words_at_cpu(std::uint32_t key0, std::uint32_t key1, std::uint32_t c2, std::uint32_t c3,
                         const std::uint64_t* j, std::int64_t count, std::uint32_t* out) {
  switch (kernels::cpu_isa()) {
    case kernels::CpuIsa::avx512: return isa_avx512::philox_words_at(key0, key1, c2, c3, j, count, out);
    case kernels::CpuIsa::avx2: return isa_avx2::philox_words_at(key0, key1, c2, c3, j, count, out);
    case kernels::CpuIsa::sse2: break;
  }
  isa_sse2::philox_words_at(key0, key1, c2, c3, j, count, out);
}

void philox_items_cpu(std::uint32_t key0, std::uint32_t key1, const std::int64_t* items, std::int64_t n,
                      std::int64_t per_item, std::uint32_t* out) {
  switch (kernels::cpu_isa()) {
    case kernels::CpuIsa::avx512: return isa_avx512::philox_items(key0, key1, items, n, per_item, out);
    case kernels::CpuIsa::avx2: return isa_avx2::philox_items(key0, key1, items, n, per_item, out);
    case kernels::CpuIsa::sse2: break;
  }
  isa_sse2::philox_items(key0, key1, items, n, per_item, out);
}

}  // namespace detail
}  // namespace halognn
