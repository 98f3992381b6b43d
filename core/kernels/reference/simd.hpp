#pragma once
/// @file simd.hpp
/// Vector types of the multi-versioned CPU kernels (cpu_isa.hpp): one struct per instruction set
/// with the same static operations, so a kernel is written once as a template over V and
/// instantiated per instruction set.
///
/// How a kernel is compiled per instruction set without -march: each struct below is defined
/// between HALOGNN_BEGIN_<ISA> and HALOGNN_END_TARGET (`#pragma GCC push_options / target / pop_options`), and a kernel file includes its
/// template body (a .inc file) once per instruction set, inside the same pragma region and an
/// ISA-named namespace in an anonymous namespace. Functions defined in a region are compiled for
/// its instruction set; functions defined elsewhere (the standard library, our headers) keep the
/// baseline, so no out-of-line copy of shared code ever carries wider instructions, and the
/// dispatcher (baseline code) only calls a variant after checking cpu_isa(). per_isa.inc does the
/// three inclusions: a kernel file #defines HALOGNN_ISA_BODY as its .inc file and includes it.
///
/// Numerics: add and mul are single IEEE operations; `madd` is mul then add (two roundings) on
/// every set, `fmadd` is one fused rounding and exists only where the set has FMA (V::kHasFma).
/// The files using these compile with -ffp-contract=off, so the compiler never fuses on its own.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

// Vector values cross function boundaries only between functions of the same region, never an
// interface of the library, so GCC's note that the ABI of such calls depends on -m flags does not
// apply.
#pragma GCC diagnostic ignored "-Wpsabi"

/// Open and close a region of code compiled for AVX2 + FMA or for AVX-512.
#define HALOGNN_BEGIN_AVX2 \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,bmi,bmi2,f16c,popcnt\")")
#define HALOGNN_BEGIN_AVX512          \
  _Pragma("GCC push_options")         \
  _Pragma("GCC target(\"avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,bmi,bmi2,f16c,popcnt\")")
#define HALOGNN_END_TARGET _Pragma("GCC pop_options")

namespace halognn::kernels::simd {

/// x86-64 baseline: 4 floats.
struct Sse2 {
  static constexpr int W = 4;
  static constexpr bool kHasFma = false;
  static constexpr bool kHasF16c = false;  ///< to_half / from_half exist
  using R = __m128;
  static R zero() { return _mm_setzero_ps(); }
  static R load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, R v) { _mm_storeu_ps(p, v); }
  static R set1(float a) { return _mm_set1_ps(a); }
  static R add(R a, R b) { return _mm_add_ps(a, b); }
  static R mul(R a, R b) { return _mm_mul_ps(a, b); }
  static R max(R a, R b) { return _mm_max_ps(a, b); }
  static R madd(R a, R b, R c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
  static R fmadd(R a, R b, R c) { return madd(a, b, c); }
  /// The 16 lanes l[0..3] hold (lane i of register i / 4 at position i mod 4) added as a fixed
  /// tree: lane i + lane i + 8 (i < 8), then + 4 (i < 4), + 2, + 1.
  static float sum16_tree(const R* l) {
    const R b = _mm_add_ps(_mm_add_ps(l[0], l[2]), _mm_add_ps(l[1], l[3]));
    const R c = _mm_add_ps(b, _mm_movehl_ps(b, b));
    return _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps(c, c, 1)));
  }

  // 32-bit integer lanes (the Philox rounds of philox_run.inc, the b-bit codecs' bit handling).
  using I = __m128i;
  static constexpr int kPhiloxGroups = 2;  // independent groups in flight (16 registers)
  static I iset1(std::uint32_t a) { return _mm_set1_epi32(static_cast<int>(a)); }
  static I iota() { return _mm_setr_epi32(0, 1, 2, 3); }
  /// W 32-bit words from p.
  static I iload(const std::uint32_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static I iadd(I a, I b) { return _mm_add_epi32(a, b); }
  static I ixor3(I a, I b, I c) { return _mm_xor_si128(_mm_xor_si128(a, b), c); }
  /// hi and lo halves of the 64-bit products a * m, lane by lane (m: one multiplier in every lane).
  static void mulhilo(I a, I m, I& hi, I& lo) {
    const I even = _mm_mul_epu32(a, m), odd = _mm_mul_epu32(_mm_srli_epi64(a, 32), m);
    const I low_half = _mm_set1_epi64x(0xFFFFFFFFll);
    lo = _mm_or_si128(_mm_and_si128(even, low_half), _mm_slli_epi64(odd, 32));
    hi = _mm_or_si128(_mm_srli_epi64(even, 32), _mm_andnot_si128(low_half, odd));
  }
  /// Lane l: b where bit l of `bits` is set, a where it is clear (unpacking 1-bit values).
  static R select_bits(std::uint32_t bits, R a, R b) {
    const I lane_bit = _mm_setr_epi32(1, 2, 4, 8);
    const I set = _mm_cmpeq_epi32(_mm_and_si128(_mm_set1_epi32(static_cast<int>(bits)), lane_bit), lane_bit);
    const R m = _mm_castsi128_ps(set);
    return _mm_or_ps(_mm_and_ps(m, b), _mm_andnot_ps(m, a));
  }
  /// The W bytes at p as floats (unpacking 8-bit values).
  static R from_bytes(const std::uint8_t* p) {
    std::int32_t word;
    std::memcpy(&word, p, 4);
    const I zero = _mm_setzero_si128();
    const I b16 = _mm_unpacklo_epi8(_mm_cvtsi32_si128(word), zero);
    return _mm_cvtepi32_ps(_mm_unpacklo_epi16(b16, zero));
  }
  /// The W kBits-bit values (kBits 2 or 4) in the W * kBits / 8 bytes at p, LSB first, as
  /// floats (unpacking 2- and 4-bit values). SSE2 has no per-lane shift: the lanes are set one
  /// by one.
  template <int kBits>
  static R from_packed(const std::uint8_t* p) {
    constexpr std::uint32_t mask = (1u << kBits) - 1u;
    std::uint32_t v = p[0];
    if constexpr (kBits == 4) v |= static_cast<std::uint32_t>(p[1]) << 8;
    return _mm_cvtepi32_ps(_mm_setr_epi32(static_cast<int>(v & mask), static_cast<int>((v >> kBits) & mask),
                                          static_cast<int>((v >> (2 * kBits)) & mask),
                                          static_cast<int>((v >> (3 * kBits)) & mask)));
  }
  /// Bit l set where q[l] != 0, for the W words at q (packing 1-bit values).
  static std::uint32_t nonzero_bits(const std::uint32_t* q) {
    const I v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const I zero = _mm_cmpeq_epi32(v, _mm_setzero_si128());
    return static_cast<std::uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(zero))) ^ 0xFu;
  }
  /// out[4 b + i] = lane b of x_i: W blocks of four words, stored block after block.
  static void store_blocks(std::uint32_t* out, I x0, I x1, I x2, I x3) {
    const I t0 = _mm_unpacklo_epi32(x0, x1), t1 = _mm_unpackhi_epi32(x0, x1);
    const I t2 = _mm_unpacklo_epi32(x2, x3), t3 = _mm_unpackhi_epi32(x2, x3);
    auto* o = reinterpret_cast<__m128i*>(out);
    _mm_storeu_si128(o, _mm_unpacklo_epi64(t0, t2));
    _mm_storeu_si128(o + 1, _mm_unpackhi_epi64(t0, t2));
    _mm_storeu_si128(o + 2, _mm_unpacklo_epi64(t1, t3));
    _mm_storeu_si128(o + 3, _mm_unpackhi_epi64(t1, t3));
  }
};

HALOGNN_BEGIN_AVX2
/// AVX2 + FMA: 8 floats.
struct Avx2 {
  static constexpr int W = 8;
  static constexpr bool kHasFma = true;
  static constexpr bool kHasF16c = true;
  using R = __m256;
  static R zero() { return _mm256_setzero_ps(); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static R set1(float a) { return _mm256_set1_ps(a); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static R madd(R a, R b, R c) { return _mm256_add_ps(_mm256_mul_ps(a, b), c); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  /// The 16 lanes l[0..1] hold added as Sse2::sum16_tree's fixed tree.
  static float sum16_tree(const R* l) {
    const R a = _mm256_add_ps(l[0], l[1]);
    const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
    return _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps(c, c, 1)));
  }

  /// W floats to binary16, rounded to nearest even (IEEE: subnormal results, overflow to inf).
  static void to_half(const float* src, std::uint16_t* dst) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_cvtps_ph(_mm256_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT));
  }
  /// W binary16 values to floats (exact; a signalling NaN comes back quiet).
  static void from_half(const std::uint16_t* src, float* dst) {
    _mm256_storeu_ps(dst, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src))));
  }
  using I = __m256i;
  static constexpr int kPhiloxGroups = 2;
  static I iset1(std::uint32_t a) { return _mm256_set1_epi32(static_cast<int>(a)); }
  static I iota() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
  static I iload(const std::uint32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static I iadd(I a, I b) { return _mm256_add_epi32(a, b); }
  static I ixor3(I a, I b, I c) { return _mm256_xor_si256(_mm256_xor_si256(a, b), c); }
  static void mulhilo(I a, I m, I& hi, I& lo) {
    const I even = _mm256_mul_epu32(a, m), odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
    lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
    hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  }
  static R select_bits(std::uint32_t bits, R a, R b) {
    const I lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const I set = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)), lane_bit), lane_bit);
    return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(set));
  }
  static R from_bytes(const std::uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  /// Each of the W * kBits / 8 bytes repeated into 8 / kBits lanes, then shifted by its value's
  /// offset in the byte (kBits 2 or 4).
  template <int kBits>
  static R from_packed(const std::uint8_t* p) {
    std::uint32_t word = 0;
    std::memcpy(&word, p, W * kBits / 8);
    __m128i b = _mm_cvtsi32_si128(static_cast<int>(word));
    b = _mm_unpacklo_epi8(b, b);                           // each byte twice
    if constexpr (kBits == 2) b = _mm_unpacklo_epi16(b, b);  // four times
    const I shift = kBits == 4 ? _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4)
                               : _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    const I v = _mm256_and_si256(_mm256_srlv_epi32(_mm256_cvtepu8_epi32(b), shift),
                                 _mm256_set1_epi32((1 << kBits) - 1));
    return _mm256_cvtepi32_ps(v);
  }
  static std::uint32_t nonzero_bits(const std::uint32_t* q) {
    const I v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    const I zero = _mm256_cmpeq_epi32(v, _mm256_setzero_si256());
    return static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(zero))) ^ 0xFFu;
  }
  static void store_blocks(std::uint32_t* out, I x0, I x1, I x2, I x3) {
    const I t0 = _mm256_unpacklo_epi32(x0, x1), t1 = _mm256_unpackhi_epi32(x0, x1);
    const I t2 = _mm256_unpacklo_epi32(x2, x3), t3 = _mm256_unpackhi_epi32(x2, x3);
    // Per 128-bit half: u0 = blocks (0 | 4), u1 = (1 | 5), u2 = (2 | 6), u3 = (3 | 7).
    const I u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const I u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    auto* o = reinterpret_cast<__m256i*>(out);
    _mm256_storeu_si256(o, _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(u2, u3, 0x31));
  }
};
HALOGNN_END_TARGET

HALOGNN_BEGIN_AVX512
/// AVX-512 (F, VL, BW, DQ): 16 floats.
struct Avx512 {
  static constexpr int W = 16;
  static constexpr bool kHasFma = true;
  static constexpr bool kHasF16c = true;
  using R = __m512;
  static R zero() { return _mm512_setzero_ps(); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static R set1(float a) { return _mm512_set1_ps(a); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static R madd(R a, R b, R c) { return _mm512_add_ps(_mm512_mul_ps(a, b), c); }
  static R fmadd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  /// The 16 lanes of l[0] added as Sse2::sum16_tree's fixed tree.
  static float sum16_tree(const R* l) {
    // The zero-masked extracts with every lane enabled: GCC 12's plain cast starts from an
    // "undefined" register that its own -Wmaybe-uninitialized flags (as in mulhilo below).
    const __m256 a = _mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xFF, l[0], 0),
                                   _mm512_maskz_extractf32x8_ps(0xFF, l[0], 1));
    const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
    return _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps(c, c, 1)));
  }

  static void to_half(const float* src, std::uint16_t* dst) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst),
                        _mm512_maskz_cvtps_ph(0xFFFF, _mm512_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT));
  }
  static void from_half(const std::uint16_t* src, float* dst) {
    _mm512_storeu_ps(dst, _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src))));
  }
  using I = __m512i;
  static constexpr int kPhiloxGroups = 4;  // 32 registers
  static I iset1(std::uint32_t a) { return _mm512_set1_epi32(static_cast<int>(a)); }
  static I iota() { return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
  static I iload(const std::uint32_t* p) { return _mm512_loadu_si512(p); }
  static I iadd(I a, I b) { return _mm512_add_epi32(a, b); }
  static I ixor3(I a, I b, I c) { return _mm512_ternarylogic_epi32(a, b, c, 0x96); }
  static void mulhilo(I a, I m, I& hi, I& lo) {
    // Here and in store_blocks: the zero-masked forms with every lane enabled are the plain
    // instructions; GCC 12's plain intrinsics start from an "undefined" register that its own
    // -Wmaybe-uninitialized flags.
    // The halves are gathered from the two products by one two-source permute each (lane 2i of
    // the even product holds the low and lane 2i + 1 the high half of a[2i] * m; the odd
    // product likewise for a[2i + 1] * m), one instruction where a shift and a blend took two.
    constexpr __mmask8 all = 0xFF;
    const I even = _mm512_maskz_mul_epu32(all, a, m);
    const I odd = _mm512_maskz_mul_epu32(all, _mm512_maskz_srli_epi64(all, a, 32), m);
    const I lo_idx = _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    const I hi_idx = _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
    lo = _mm512_permutex2var_epi32(even, lo_idx, odd);
    hi = _mm512_permutex2var_epi32(even, hi_idx, odd);
  }
  static R select_bits(std::uint32_t bits, R a, R b) {
    return _mm512_mask_blend_ps(static_cast<__mmask16>(bits), a, b);
  }
  static R from_bytes(const std::uint8_t* p) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_maskz_cvtepu8_epi32(0xFFFF, bytes));
  }
  /// As on AVX2, 16 lanes.
  template <int kBits>
  static R from_packed(const std::uint8_t* p) {
    std::uint64_t word = 0;
    std::memcpy(&word, p, W * kBits / 8);
    __m128i b = _mm_cvtsi64_si128(static_cast<long long>(word));
    b = _mm_unpacklo_epi8(b, b);
    if constexpr (kBits == 2) b = _mm_unpacklo_epi16(b, b);
    const I shift = kBits == 4 ? _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4)
                               : _mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6);
    const I spread = _mm512_maskz_srlv_epi32(0xFFFF, _mm512_maskz_cvtepu8_epi32(0xFFFF, b), shift);
    const I v = _mm512_maskz_and_epi32(0xFFFF, spread, _mm512_set1_epi32((1 << kBits) - 1));
    return _mm512_maskz_cvtepi32_ps(0xFFFF, v);
  }
  static std::uint32_t nonzero_bits(const std::uint32_t* q) {
    const I v = _mm512_loadu_si512(q);
    return static_cast<std::uint32_t>(_mm512_test_epi32_mask(v, v));
  }
  static void store_blocks(std::uint32_t* out, I x0, I x1, I x2, I x3) {
    const I t0 = _mm512_maskz_unpacklo_epi32(0xFFFF, x0, x1), t1 = _mm512_maskz_unpackhi_epi32(0xFFFF, x0, x1);
    const I t2 = _mm512_maskz_unpacklo_epi32(0xFFFF, x2, x3), t3 = _mm512_maskz_unpackhi_epi32(0xFFFF, x2, x3);
    // Per 128-bit quarter q: u0 = block 4q, u1 = 4q + 1, u2 = 4q + 2, u3 = 4q + 3.
    const I u0 = _mm512_maskz_unpacklo_epi64(0xFF, t0, t2), u1 = _mm512_maskz_unpackhi_epi64(0xFF, t0, t2);
    const I u2 = _mm512_maskz_unpacklo_epi64(0xFF, t1, t3), u3 = _mm512_maskz_unpackhi_epi64(0xFF, t1, t3);
    const I v0 = _mm512_maskz_shuffle_i32x4(0xFFFF, u0, u1, 0x44), v1 = _mm512_maskz_shuffle_i32x4(0xFFFF, u2, u3, 0x44);
    const I v2 = _mm512_maskz_shuffle_i32x4(0xFFFF, u0, u1, 0xEE), v3 = _mm512_maskz_shuffle_i32x4(0xFFFF, u2, u3, 0xEE);
    _mm512_storeu_si512(out, _mm512_maskz_shuffle_i32x4(0xFFFF, v0, v1, 0x88));
    _mm512_storeu_si512(out + 16, _mm512_maskz_shuffle_i32x4(0xFFFF, v0, v1, 0xDD));
    _mm512_storeu_si512(out + 32, _mm512_maskz_shuffle_i32x4(0xFFFF, v2, v3, 0x88));
    _mm512_storeu_si512(out + 48, _mm512_maskz_shuffle_i32x4(0xFFFF, v2, v3, 0xDD));
  }
};
HALOGNN_END_TARGET

}  // namespace halognn::kernels::simd
