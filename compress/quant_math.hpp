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
  float scale_m = f16::double_to_float(step, f16::Round::up);
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

/// Stochastic rounding of one value onto the grid. With x = (h - lo) / scale (float32 subtraction,
/// then float32 division), f = floor(x) and frac = x - f (exact in float32):
///   q = f + (u < frac ? 1 : 0), clamped to [0, B],
/// which is floor(x + u) in exact arithmetic. The comparison form avoids rounding x + u, which
/// would round up to the next integer for u within half an ulp of 1 and bias q upward.
/// `u` is CounterRng::uniform's value for this element. scale == 0 (a constant row) gives 0.
GNN_HD std::uint32_t quantize_value(float h, RowGrid g, std::uint32_t levels, float u) {
  if (g.scale == 0.0f) return 0;
#if defined(__CUDA_ARCH__)
  const float x = __fdiv_rn(__fsub_rn(h, g.lo), g.scale);
#else
  const float diff = h - g.lo;
  const float x = diff / g.scale;
#endif
  // x >= 0 because h >= lo; x <= B up to rounding. For 0 < x < B the truncating conversion is
  // floor(x) and x - f is exact, so this is the rule above without a floorf call.
  if (!(x > 0.0f)) return 0;
  if (x >= static_cast<float>(levels)) return levels;
  const std::uint32_t f = static_cast<std::uint32_t>(x);
#if defined(__CUDA_ARCH__)
  const float frac = __fsub_rn(x, static_cast<float>(f));
#else
  const float frac = x - static_cast<float>(f);
#endif
  return f + (u < frac ? 1u : 0u);  // f <= B - 1 here, so q <= B
}

/// The uniform draw CounterRng::uniform returns, from one of the four words of a Philox block
/// (block(row_id, j >> 2)[j & 3] is word(row_id, j)).
GNN_HD float word_to_uniform(std::uint32_t w) {
  return static_cast<float>(w >> 8) * (1.0f / 16777216.0f);
}

/// quantize_value(h, g, levels, word_to_uniform(w)) for a row with g.scale != 0, written without
/// branches so that a compiler can evaluate many elements at once (SIMD). `levels_f` is levels as
/// a float (exact). Clamping x into [0, B] before truncating gives the same q as the branches of
/// quantize_value: x <= 0 or NaN clamps to 0, which truncates to f = 0 with frac = 0 (q = 0);
/// x >= B clamps to B, which gives f = B with frac = 0 (q = B); 0 < x < B is unchanged.
/// The same single IEEE operations, in the same order; only the control flow differs.
GNN_HD std::uint32_t quantize_word(float h, RowGrid g, float levels_f, std::uint32_t w) {
#if defined(__CUDA_ARCH__)
  const float x = __fdiv_rn(__fsub_rn(h, g.lo), g.scale);
#else
  const float diff = h - g.lo;
  const float x = diff / g.scale;
#endif
  float xc = x > 0.0f ? x : 0.0f;
  xc = xc < levels_f ? xc : levels_f;
  // xc in [0, B] with B <= 255, so the signed conversion is exact truncation (and vectorises).
  const std::int32_t f = static_cast<std::int32_t>(xc);
#if defined(__CUDA_ARCH__)
  const float frac = __fsub_rn(xc, static_cast<float>(f));
#else
  const float frac = xc - static_cast<float>(f);
#endif
  const float u = word_to_uniform(w);
  return static_cast<std::uint32_t>(f + (u < frac ? 1 : 0));
}

/// The random stream of one (seed, epoch, layer, direction): item = global row id, j = column.
GNN_HD RngKey quantize_key(std::uint64_t seed, std::int64_t epoch, std::int32_t layer,
                           std::uint32_t direction) {
  return RngKey{seed, RngPurpose::quantize, static_cast<std::uint64_t>(epoch),
                static_cast<std::uint64_t>(static_cast<std::int64_t>(layer) * 2 + direction)};
}

}  // namespace halognn::quant
