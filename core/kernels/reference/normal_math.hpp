// The standard normal CDF Φ(x) and exp(-x²/2) in operations a vector loop can hold (no call, no
// branch), for the per-instruction-set GELU loops (gelu_rows.inc). A fixed sequence of single
// IEEE operations (the files that use it compile with -ffp-contract=off), so every instruction set
// gives the same bits. x Φ(x) is within 5.2e-7 relative of the exact GELU (about 4 ulp; every
// third float up to 20 in magnitude measured) down to x = -13.19, tails included: the negative
// tail is computed as exp(-x²/2) times a smooth factor, not as 1 + erf (libm's erff there loses
// up to 10 bits to the cancellation); below -13.19 exp(-x²/2) is taken as 0. Always inlined: the
// loops calling it are vectorised only once the calls are gone.
#pragma once

#include <bit>
#include <cstdint>

#include "core/kernels/reference/exp_math.hpp"

namespace halognn::kernels::reference {

struct NormalParts {
  float cdf;    ///< Φ(x)
  float gauss;  ///< exp(-x²/2)
};

/// Φ(x) and exp(-x²/2) (NaN gives NaN). Both branches are computed and one is selected:
/// |x| <= 1: Φ(x) = 1/2 + x P(x²), P a degree-5 least-squares fit (relative error 1e-10 in exact
/// arithmetic). |x| > 1: Φ(-|x|) = exp(-x²/2) Q(u) with u = 1 / (1 + 0.3 |x|), Q a degree-9 fit
/// (relative error 1e-9 on [1, 16]), and Φ(|x|) = 1 - Φ(-|x|). |x| is clamped to 16 (Φ(-16) is
/// 6e-58, zero in float32). exp(-x²/2) is exact in its large part: |x| = h + l with h holding the
/// top 12 significant bits, so h² is exact, and exp(-(h² / 2)) exp(-(h l + l² / 2)) are two
/// exp_nonpositive calls (each within 1 ulp; +0 below -87).
[[gnu::always_inline]] inline NormalParts normal_parts(float x) {
  const float a0 = std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) & 0x7fffffffu);
  const float a = select_bits(a0 > 16.0f, 16.0f, a0);
  const float ah = std::bit_cast<float>(std::bit_cast<std::uint32_t>(a) & 0xfffff000u);
  const float al = a - ah;
  const float gauss = exp_nonpositive(-0.5f * (ah * ah)) * exp_nonpositive(-((ah * al) + 0.5f * (al * al)));
  const float s = x * x;
  float p = -7.65212189e-06f;
  p = p * s + 0.000113481132f;
  p = p * s + -0.00118632533f;
  p = p * s + 0.00997332204f;
  p = p * s + -0.0664903596f;
  p = p * s + 0.398942292f;
  const float central = 0.5f + x * p;
  const float u = 1.0f / (1.0f + 0.3f * a);
  float q = 0.0222467687f;
  q = q * u + -0.0557464547f;
  q = q * u + 0.00218755379f;
  q = q * u + 0.0530677699f;
  q = q * u + 0.034733668f;
  q = q * u + 0.0975079313f;
  q = q * u + 0.106290862f;
  q = q * u + 0.120088443f;
  q = q * u + 0.119647853f;
  q = q * u + 1.27530757e-06f;
  const float tail = gauss * q;  // Φ(-|x|)
  return {select_bits(a <= 1.0f, central, select_bits(x < 0.0f, tail, 1.0f - tail)), gauss};
}

}  // namespace halognn::kernels::reference
