#pragma once
/// @file float16.hpp
/// Bit-exact conversions between float32 and the two 16-bit float formats the codecs use:
/// IEEE binary16 ("fp16": 1 sign, 5 exponent, 10 mantissa bits) and bfloat16 ("bf16": the top
/// 16 bits of a float32). Written with integer operations only, so the CPU codecs and a CUDA
/// implementation that includes this header produce the same bits. Three rounding modes:
/// to nearest even (the wire format of the fp16/bf16 codecs) and the two directed modes (used to
/// store quantization metadata so that the stored grid still covers the row, see quant_math.hpp).
#include <cstdint>
#include <cstring>

#include "core/rng.hpp"  // GNN_HD

namespace halognn::f16 {

/// How a value that falls between two representable values is rounded.
enum class Round : std::uint8_t {
  nearest_even,  ///< IEEE default; ties to the even neighbour; overflow goes to +-inf
  down,          ///< toward -inf; positive overflow saturates at the largest finite value
  up,            ///< toward +inf; negative overflow saturates at the lowest finite value
};

GNN_HD std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

GNN_HD float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// True for a finite float (neither inf nor NaN), by its bits (immune to -ffast-math).
GNN_HD bool is_finite(float f) { return (float_bits(f) & 0x7F800000u) != 0x7F800000u; }

/// float32 -> binary16 bits. Handles signed zeros, subnormal results (down to 2^-24), overflow
/// (to inf, or to +-65504 where the directed mode rounds toward zero), inf, and NaN (-> 0x7E00
/// with the sign kept).
GNN_HD std::uint16_t float_to_half(float f, Round mode = Round::nearest_even) {
  const std::uint32_t bits = float_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return static_cast<std::uint16_t>(sign | (abs == 0x7F800000u ? 0x7C00u : 0x7E00u));
  if (abs == 0) return sign;
  if (mode == Round::nearest_even && abs >= 0x38800000u && abs < 0x477FF000u) {
    // Fast path, results in the normal binary16 range [2^-14, 65504]: rebias the exponent,
    // add just under half of the 13 dropped bits plus the lowest kept bit (ties to even), and
    // let a mantissa carry step the exponent.
    std::uint32_t r = abs - (112u << 23);
    r += 0xFFFu + ((r >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | (r >> 13));
  }
  if (mode != Round::nearest_even && abs >= 0x38800000u && abs < 0x47800000u) {
    // The same for the directed modes, magnitudes in [2^-14, 2^16): truncate the 13 dropped
    // bits, then step the magnitude by one where they are not all zero and the direction is away
    // from zero (up for positive, down for negative values). A carry steps the exponent, and past
    // 65504 gives inf, the correct result away from zero; toward zero 65504 stays. Without a
    // branch on the dropped bits, which the q codecs' metadata (lo down, the scale up, once a row)
    // would mispredict about every second row.
    const std::uint32_t r = abs - (112u << 23);
    const bool away = (mode == Round::up) == (sign == 0);
    const std::uint32_t step = away && (r & 0x1FFFu) != 0 ? 1u : 0u;
    return static_cast<std::uint16_t>(sign | ((r >> 13) + step));
  }
  // |f| = m * 2^e exactly, m < 2^24.
  std::uint32_t m;
  int e;
  if ((abs >> 23) == 0) {
    m = abs;
    e = -149;
  } else {
    m = (abs & 0x7FFFFFu) | 0x800000u;
    e = static_cast<int>(abs >> 23) - 150;
  }
#if defined(__CUDA_ARCH__)
  const int msb = 31 - __clz(m);  // floor(log2(m)); m != 0
#else
  const int msb = 31 - __builtin_clz(m);
#endif
  const int exponent = e + msb;  // floor(log2|f|)
  // Quantum of the binary16 result: 2^(exponent-10) for normal results, 2^-24 for subnormals.
  const int q = exponent - 10 > -24 ? exponent - 10 : -24;
  const int shift = q - e;  // >= 0 always: float32 has more precision than binary16
  std::uint32_t r, rem, half;
  bool rem_nonzero;
  if (shift >= 32) {  // far below the smallest subnormal
    r = 0;
    rem_nonzero = true;
    rem = 1;
    half = 0xFFFFFFFFu;  // rem < half: never rounds to nearest upward
  } else if (shift == 0) {
    r = m;
    rem = 0;
    half = 1;
    rem_nonzero = false;
  } else {
    r = m >> shift;
    rem = m & ((1u << shift) - 1u);
    half = 1u << (shift - 1);
    rem_nonzero = rem != 0;
  }
  const bool negative = sign != 0;
  bool increment;
  switch (mode) {
    case Round::nearest_even: increment = rem > half || (rem == half && (r & 1u)); break;
    case Round::down: increment = negative && rem_nonzero; break;
    default: increment = !negative && rem_nonzero; break;
  }
  r += increment ? 1u : 0u;
  // Assemble: subnormal range (q == -24) maps r straight to the bits (r == 1024 is exactly the
  // smallest normal, 0x0400); otherwise r in [1024, 2048] and a carry into the exponent is the
  // correct next binade.
  std::uint32_t out;
  if (q == -24) {
    out = r;
  } else {
    const std::int64_t v = (static_cast<std::int64_t>(exponent + 15) << 10) + (static_cast<std::int64_t>(r) - 1024);
    const bool away = mode == Round::nearest_even || (mode == Round::down) == negative;
    if (v >= 0x7C00) return static_cast<std::uint16_t>(sign | (away ? 0x7C00u : 0x7BFFu));
    out = static_cast<std::uint32_t>(v);
  }
  return static_cast<std::uint16_t>(sign | out);
}

/// binary16 bits -> float32 (exact).
GNN_HD float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0x1F) return bits_float(sign | 0x7F800000u | (mant << 13));
  if (exp != 0) return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);
  // Subnormal: mant * 2^-24, renormalised.
  int e = 113;  // float exponent field of 2^-14
  std::uint32_t m = mant;
  while ((m & 0x400u) == 0) {
    m <<= 1;
    --e;
  }
  return bits_float(sign | (static_cast<std::uint32_t>(e) << 23) | ((m & 0x3FFu) << 13));
}

/// float32 -> bfloat16 bits. Subnormals need no special case (bf16 shares float32's exponent
/// range); nearest-even overflow goes to inf; NaN stays a quiet NaN.
GNN_HD std::uint16_t float_to_bf16(float f, Round mode = Round::nearest_even) {
  const std::uint32_t bits = float_bits(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  const bool negative = (bits >> 31) != 0;
  const std::uint32_t low = bits & 0xFFFFu;
  std::uint32_t r = bits >> 16;
  switch (mode) {
    case Round::nearest_even:
      // Adding 0x7FFF plus the lowest kept bit rounds the magnitude to nearest even; a carry
      // out of the mantissa steps the exponent, and past the largest finite value gives inf.
      return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
    case Round::down:
      if (negative && low != 0) ++r;  // -inf direction grows the magnitude
      break;
    default:
      if (!negative && low != 0) ++r;
      break;
  }
  // A directed step past the largest finite magnitude yields inf, which is the correct result
  // for rounding away from zero; inf inputs have low == 0 and pass unchanged.
  return static_cast<std::uint16_t>(r);
}

/// bfloat16 bits -> float32 (exact).
GNN_HD float bf16_to_float(std::uint16_t b) { return bits_float(static_cast<std::uint32_t>(b) << 16); }

/// A non-negative double -> float32 rounded toward +inf (the q codecs' grid step, computed in
/// double). The nearest-even conversion, one float up where it fell below d: a bit pattern step,
/// since non-negative floats order like their bits (0 steps to the smallest subnormal, the
/// largest finite float to +inf, a conversion that overflowed is +inf already). Without a branch
/// on the data: whether the conversion fell below d is a coin flip for most grid steps, which a
/// branch predictor loses about half the time, once a row.
GNN_HD float nonnegative_double_to_float_up(double d) {
  const float f = static_cast<float>(d);  // round to nearest even (IEEE default)
  return bits_float(float_bits(f) + (static_cast<double>(f) < d ? 1u : 0u));
}

}  // namespace halognn::f16
