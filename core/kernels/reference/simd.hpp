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
};

HALOGNN_BEGIN_AVX2
/// AVX2 + FMA: 8 floats.
struct Avx2 {
  static constexpr int W = 8;
  static constexpr bool kHasFma = true;
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
};
HALOGNN_END_TARGET

HALOGNN_BEGIN_AVX512
/// AVX-512 (F, VL, BW, DQ): 16 floats.
struct Avx512 {
  static constexpr int W = 16;
  static constexpr bool kHasFma = true;
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
};
HALOGNN_END_TARGET

}  // namespace halognn::kernels::simd
