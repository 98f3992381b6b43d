// exp and expm1 of non-positive floats in operations a vector loop can hold (no call, no branch),
// for the per-instruction-set row loops (elementwise_rows.inc: ELU; gat_softmax_rows.inc: the edge
// softmax; normal_math.hpp: GELU's exp(-x²/2)). Each is a fixed sequence of single IEEE
// operations (the files that use them compile with -ffp-contract=off), so every instruction set
// gives the same bits. Always inlined: the loops calling them are vectorised only once the calls
// are gone.
#pragma once

#include <bit>
#include <cstdint>

namespace halognn::kernels::reference {

/// c ? a : b as bit operations: GCC keeps a floating-point ?: as a branch (a comparison may trap),
/// which stops the vectoriser; a mask from the comparison's 0 or 1 does not.
[[gnu::always_inline]] inline float select_bits(bool c, float a, float b) {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<std::uint32_t>(a) & m) |
                              (std::bit_cast<std::uint32_t>(b) & ~m));
}

/// x = k ln2 + r with k an integer and |r| <= ln2 / 2 (ln2 in two parts, so k ln2_hi is exact for
/// the k of |x| < 128), and expm1(r) = r + r^2 (1/2 + r/6 + ... + r^6/8!) (truncation error under
/// 2^-30 relative): the shared part of exp_nonpositive and expm1_nonpositive.
struct ExpSplit {
  float k;      ///< an integer
  float em1_r;  ///< expm1(r)
};

[[gnu::always_inline]] inline ExpSplit exp_split(float x) {
  constexpr float kInvLn2 = 1.44269504f, kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860677e-6f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding and subtracting it rounds to integer
  const float k = (x * kInvLn2 + kRound) - kRound;
  const float r = (x - k * kLn2Hi) - k * kLn2Lo;
  float q = 1.0f / 40320;
  q = q * r + 1.0f / 5040;
  q = q * r + 1.0f / 720;
  q = q * r + 1.0f / 120;
  q = q * r + 1.0f / 24;
  q = q * r + 1.0f / 6;
  q = q * r + 0.5f;
  return {k, r + (r * r) * q};
}

/// 2^k for an integer k of float32's normal exponents (-126..127).
[[gnu::always_inline]] inline float exp2_integer(float k) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<std::int32_t>(k) + 127) << 23);
}

/// expm1(x) for x <= 0 (NaN kept), within 1 ulp: 2^k expm1(r) + (2^k - 1) (exp_split). 2^k - 1 is
/// exact for the k this reaches (x is clamped to -30, where the result is -1 to the float).
[[gnu::always_inline]] inline float expm1_nonpositive(float x) {
  const ExpSplit s = exp_split(select_bits(x < -30.0f, -30.0f, x));
  const float t = exp2_integer(s.k);
  return t * s.em1_r + (t - 1.0f);
}

/// exp(x) for x <= 0 (NaN kept), within 1 ulp: 2^k (1 + expm1(r)) (exp_split). Below -87 the
/// result is +0 (exp(-87) is 1.6e-38, next to float32's smallest normal), so 2^k stays normal and
/// no subnormal is produced but by the last multiplication; -inf gives +0.
[[gnu::always_inline]] inline float exp_nonpositive(float x) {
  const bool tiny = x < -87.0f;
  const ExpSplit s = exp_split(select_bits(tiny, -87.0f, x));
  return select_bits(tiny, 0.0f, exp2_integer(s.k) * (1.0f + s.em1_r));
}

}  // namespace halognn::kernels::reference
