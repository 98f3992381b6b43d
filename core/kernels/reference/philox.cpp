// Philox-4x32-10 blocks on the CPU (CounterRng::blocks, core/rng.hpp), multi-versioned: the same
// words on every instruction set, computed as wide as the CPU allows (cpu_isa.hpp).
#include <cstdint>

#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/reference/simd.hpp"
#include "core/rng.hpp"

namespace halognn {
namespace {

namespace isa_sse2 {
#include "core/kernels/reference/philox_run.inc"
}  // namespace isa_sse2

HALOGNN_BEGIN_AVX2
namespace isa_avx2 {
#include "core/kernels/reference/philox_run.inc"
}  // namespace isa_avx2
HALOGNN_END_TARGET

HALOGNN_BEGIN_AVX512
namespace isa_avx512 {
#include "core/kernels/reference/philox_run.inc"
}  // namespace isa_avx512
HALOGNN_END_TARGET

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

}  // namespace detail
}  // namespace halognn
