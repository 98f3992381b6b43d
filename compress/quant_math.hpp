#pragma once
/// @file quant_math.hpp
/// The scalar arithmetic of the stochastic b-bit codecs (q8, q4, q2, q1 and their 16-bit
/// metadata variants), written once so that the CPU codec and a CUDA codec produce identical
/// bytes. docs/codecs.md states the same rules in prose. Every floating-point operation here is a
/// single IEEE operation rounded to nearest even: the CPU build compiles this with
/// -ffp-contract=off, and CUDA code must not contract either (it gets the explicit _rn
/// intrinsics below). No fast-math anywhere.
#include <cstdint>

#include "compress/float16.hpp"
#include "core/rng.hpp"

namespace halognn::quant {

/// How the per-row (lo, scale) pair is stored on the wire.
enum class MetaFormat : std::uint8_t {
  f32,   ///< two float32 per row (8 bytes)
  f16,   ///< two IEEE binary16 per row (4 bytes)
  bf16,  ///< two bfloat16 per row (4 bytes)
};

/// Bytes of one stored metadata value (lo or scale).
GNN_HD int meta_value_bytes(MetaFormat m) { return m == MetaFormat::f32 ? 4 : 2; }

/// One row's dequantization grid: value q decodes to q * scale + lo. Both are exactly the values
/// stored in the metadata (already rounded to the metadata format).
struct RowGrid {
  float lo = 0.0f;
  float scale = 0.0f;
};

/// Outcome of building a row's grid.
enum class GridStatus : std::uint8_t { ok, lo_overflow, scale_overflow, decode_overflow };

/// A float stored in a 16-bit metadata slot: its bits (for the wire) and its float value.
GNN_HD std::uint16_t meta16_bits(float v, MetaFormat m, f16::Round r) {
  return m == MetaFormat::f16 ? f16::float_to_half(v, r) : f16::float_to_bf16(v, r);
}
GNN_HD float meta16_value(std::uint16_t bits, MetaFormat m) {
  return m == MetaFormat::f16 ? f16::half_to_float(bits) : f16::bf16_to_float(bits);
}

/// q * scale + lo as two separately rounded float32 operations (never a fused multiply-add).
GNN_HD float decode_value(std::uint32_t q, RowGrid g) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(__fmul_rn(static_cast<float>(q), g.scale), g.lo);
#else
  const float prod = static_cast<float>(q) * g.scale;
  return prod + g.lo;
#endif
}

/// Builds the grid of a row with minimum `lo` and maximum `hi` (both finite, lo <= hi) for
/// `levels` = B = 2^b - 1 (a zero lo or hi counts as +0):
///   lo_m    = lo rounded toward -inf into the metadata format (exact for f32);
///   scale_m = ((double)hi - (double)lo_m) / B, computed in double, rounded toward +inf into the
///             metadata format (through float32, both steps toward +inf).
/// Directed rounding keeps [lo_m, lo_m + B*scale_m] a superset of [lo, hi], so no value has to be
/// clamped and the rounding stays unbiased. hi == lo with a representable lo gives scale_m == 0.
/// Fails when lo_m or scale_m is not finite in the metadata format, or when the top of the grid
/// (decode_value(B)) overflows float32.
GNN_HD GridStatus make_grid(float lo, float hi, std::uint32_t levels, MetaFormat m, RowGrid& g,
                            std::uint16_t& lo_bits, std::uint16_t& scale_bits) {
  lo_bits = 0;
  scale_bits = 0;
  // -0 and +0 compare equal, so which one a min/max reduction returns depends on its order;
  // adding +0 maps -0 to +0 (IEEE, round to nearest) and makes the stored bits order-free.
#if defined(__CUDA_ARCH__)
  lo = __fadd_rn(lo, 0.0f);
  hi = __fadd_rn(hi, 0.0f);
#else
  lo = lo + 0.0f;
  hi = hi + 0.0f;
#endif
  float lo_m = lo;
  if (m != MetaFormat::f32) {
    lo_bits = meta16_bits(lo, m, f16::Round::down);
    lo_m = meta16_value(lo_bits, m);
    if (!f16::is_finite(lo_m)) return GridStatus::lo_overflow;
  }
  const double step = (static_cast<double>(hi) - static_cast<double>(lo_m)) / static_cast<double>(levels);
  float scale_m = f16::nonnegative_double_to_float_up(step);  // step >= 0: lo_m <= lo <= hi
  if (m != MetaFormat::f32 && f16::is_finite(scale_m)) {
    scale_bits = meta16_bits(scale_m, m, f16::Round::up);
    scale_m = meta16_value(scale_bits, m);
  }
  if (!f16::is_finite(scale_m)) return GridStatus::scale_overflow;
  g.lo = lo_m;
  g.scale = scale_m;
  if (!f16::is_finite(decode_value(levels, g))) return GridStatus::decode_overflow;
  return GridStatus::ok;
}

/// The reciprocal of a row's scale (scale != 0), rounded to nearest float32, or 0 where it is not
/// finite (scales below about 2^-128); then elements divide by the scale instead (grid_position).
GNN_HD float grid_inverse(RowGrid g) {
#if defined(__CUDA_ARCH__)
  const float inv = __frcp_rn(g.scale);
#else
  const float inv = 1.0f / g.scale;
#endif
  return f16::is_finite(inv) ? inv : 0.0f;
}

/// An element's position on the grid, x = (h - lo) * inv with inv = grid_inverse(g) (a float32
/// subtraction, then a float32 multiplication), or (h - lo) / scale (a division) where inv is 0.
GNN_HD float grid_position(float h, RowGrid g, float inv) {
#if defined(__CUDA_ARCH__)
  const float diff = __fsub_rn(h, g.lo);
  return inv != 0.0f ? __fmul_rn(diff, inv) : __fdiv_rn(diff, g.scale);
#else
  const float diff = h - g.lo;
  return inv != 0.0f ? diff * inv : diff / g.scale;
#endif
}

/// The 16 random bits of column j of a row: half j & 1 of the row's word j >> 1, the low half for
/// even j (word j >> 1 is word (j >> 1) & 3 of block(row_id, j >> 3)). Two columns share a word,
/// so a row of D values takes D / 8 Philox blocks.
GNN_HD std::uint32_t word_half(std::uint32_t w, std::uint64_t j) {
  return (w >> (16 * static_cast<unsigned>(j & 1))) & 0xFFFFu;
}

/// The uniform draw of 16 random bits r: r * 2^-16, exact in float32.
GNN_HD float half_to_uniform(std::uint32_t r) { return static_cast<float>(r) * (1.0f / 65536.0f); }

/// Stochastic rounding of an element at grid position x (grid_position) with the 16 random bits
/// r: with xc = x clamped into [0, B], f = floor(xc) and frac = xc - f (exact in float32),
///   q = f + (u < frac ? 1 : 0), u = half_to_uniform(r),
/// which is floor(x + u) in exact arithmetic. The comparison form avoids rounding x + u, which
/// would round up to the next integer for u near 1 and bias q upward. Clamping replaces the
/// branches for x <= 0 (q = 0) and x >= B (q = B); the clamp only absorbs an ulp-level rounding
/// of x, since lo <= h <= lo + B * scale. Written without branches so that a compiler can
/// evaluate many elements at once (SIMD); `levels_f` is B as a float (exact).
GNN_HD std::uint32_t quantize_at(float x, float levels_f, std::uint32_t r) {
  float xc = x > 0.0f ? x : 0.0f;
  xc = xc < levels_f ? xc : levels_f;
  // xc in [0, B] with B <= 255, so the signed conversion is exact truncation (and vectorises).
  const std::int32_t f = static_cast<std::int32_t>(xc);
#if defined(__CUDA_ARCH__)
  const float frac = __fsub_rn(xc, static_cast<float>(f));
#else
  const float frac = xc - static_cast<float>(f);
#endif
  return static_cast<std::uint32_t>(f + (half_to_uniform(r) < frac ? 1 : 0));
}

/// quantize_at for one bit (B = 1): q = (u < x), no clamps. The same q: x <= 0 gives 0 either way
/// (u >= 0); 0 < x < 1 gives f = 0 and frac = x; x >= 1 gives 1 either way (u < 1).
GNN_HD std::uint32_t quantize_at_1(float x, std::uint32_t r) { return half_to_uniform(r) < x ? 1u : 0u; }

/// The random stream of one (seed, epoch, layer, direction): item = global row id, j = column.
GNN_HD RngKey quantize_key(std::uint64_t seed, std::int64_t epoch, std::int32_t layer,
                           std::uint32_t direction) {
  return RngKey{seed, RngPurpose::quantize, static_cast<std::uint64_t>(epoch),
                static_cast<std::uint64_t>(static_cast<std::int64_t>(layer) * 2 + direction)};
}

}  // namespace halognn::quant
