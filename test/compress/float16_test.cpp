// float16.hpp against independent references: every binary16 value, every tie, random floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "compress/float16.hpp"
#include "core/rng.hpp"

namespace halognn {
namespace {

using f16::Round;

/// The value of a binary16 bit pattern, by the IEEE definition (not by the code under test).
double ref_half_value(std::uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  if (exp == 0x1F) return sign * std::numeric_limits<double>::infinity();
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

/// Largest non-negative binary16 pattern whose value is <= x (x >= 0, finite): positive
/// patterns 0x0000..0x7BFF are ordered like their values.
std::uint16_t ref_half_floor_bits(double x) {
  std::uint32_t lo = 0, hi = 0x7BFF;
  while (lo < hi) {
    const std::uint32_t mid = (lo + hi + 1) / 2;
    if (ref_half_value(static_cast<std::uint16_t>(mid)) <= x) lo = mid;
    else hi = mid - 1;
  }
  return static_cast<std::uint16_t>(lo);
}

/// IEEE rounding of a positive finite x to binary16, by search.
std::uint16_t ref_half_positive(double x, Round mode) {
  const std::uint16_t b = ref_half_floor_bits(x);
  const double v = ref_half_value(b);
  if (v == x) return b;
  if (mode == Round::down) return b;
  if (mode == Round::up) return static_cast<std::uint16_t>(b + 1);  // 0x7C00 is +inf
  const double next = b == 0x7BFF ? 65536.0 : ref_half_value(static_cast<std::uint16_t>(b + 1));
  if (x - v < next - x) return b;
  if (x - v > next - x) return static_cast<std::uint16_t>(b + 1);
  return (b & 1) ? static_cast<std::uint16_t>(b + 1) : b;
}

std::uint16_t ref_half(float f, Round mode) {
  if (f == 0.0f) return std::signbit(f) ? 0x8000 : 0x0000;
  if (f > 0) return ref_half_positive(f, mode);
  const Round mirrored = mode == Round::down ? Round::up : mode == Round::up ? Round::down : mode;
  const std::uint16_t m = ref_half_positive(-static_cast<double>(f), mirrored);
  // -0 for a negative value rounded up to zero.
  return static_cast<std::uint16_t>(0x8000 | m);
}

double ref_bf16_value(std::uint16_t b) {
  if ((b & 0x7FFF) == 0x7F80) return (b >> 15) ? -INFINITY : INFINITY;
  return static_cast<double>(f16::bits_float(static_cast<std::uint32_t>(b) << 16));
}

std::uint16_t ref_bf16(float f, Round mode) {
  if (f == 0.0f) return std::signbit(f) ? 0x8000 : 0x0000;
  const bool neg = f < 0;
  const double x = std::fabs(static_cast<double>(f));
  const std::uint16_t b = static_cast<std::uint16_t>(f16::float_bits(std::fabs(f)) >> 16);  // floor
  const double v = ref_bf16_value(b);
  const double next = b == 0x7F7F ? std::ldexp(1.0, 128) : ref_bf16_value(static_cast<std::uint16_t>(b + 1));
  std::uint16_t r;
  if (v == x) r = b;
  else if (mode == Round::nearest_even)
    r = (x - v < next - x || (x - v == next - x && !(b & 1))) ? b : static_cast<std::uint16_t>(b + 1);
  else if ((mode == Round::up) != neg) r = static_cast<std::uint16_t>(b + 1);  // away from zero
  else r = b;
  return static_cast<std::uint16_t>((neg ? 0x8000 : 0) | r);
}

/// Floats that stress the conversions: every binary16 value, every midpoint between neighbours
/// (the ties), one float ulp either side of those, and random floats of every magnitude from
/// float32 subnormals to beyond the binary16 range.
std::vector<float> stress_floats() {
  std::vector<float> xs;
  for (std::uint32_t b = 0; b < 0x7C00; ++b) {
    const double v = ref_half_value(static_cast<std::uint16_t>(b));
    const double next = b == 0x7BFF ? 65536.0 : ref_half_value(static_cast<std::uint16_t>(b + 1));
    const float mid = static_cast<float>((v + next) / 2);  // exact: 12 significant bits
    for (float x : {static_cast<float>(v), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  const CounterRng rng({1, RngPurpose::test, 0, 0});
  for (std::uint64_t i = 0; i < 200000; ++i) xs.push_back(f16::bits_float(rng.word(i, 0)));
  for (std::uint64_t i = 0; i < 100000; ++i) {  // magnitudes near the binary16 range
    const int e = static_cast<int>(rng.word(i, 1) % 50) - 30;
    xs.push_back(std::ldexp(1.0f + rng.uniform(i, 2), e) * (rng.word(i, 3) & 1 ? 1.0f : -1.0f));
  }
  xs.push_back(std::numeric_limits<float>::max());
  xs.push_back(-std::numeric_limits<float>::max());
  xs.push_back(std::numeric_limits<float>::denorm_min());
  return xs;
}

TEST(Float16, EveryHalfValueConvertsToFloatExactlyAndBack) {
  for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    const float f = f16::half_to_float(h);
    if ((b & 0x7C00) == 0x7C00 && (b & 0x3FF)) {  // NaN stays NaN
      EXPECT_TRUE(std::isnan(f)) << std::hex << b;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), ref_half_value(h)) << std::hex << b;
    for (Round m : {Round::nearest_even, Round::down, Round::up})
      ASSERT_EQ(f16::float_to_half(f, m), h) << std::hex << b;
  }
}

TEST(Float16, FloatToHalfMatchesTheIeeeReferenceInEveryRoundingMode) {
  const auto xs = stress_floats();
  for (Round m : {Round::nearest_even, Round::down, Round::up}) {
    std::size_t bad = 0;
    for (float x : xs) {
      if (!std::isfinite(x)) continue;
      const std::uint16_t got = f16::float_to_half(x, m), want = ref_half(x, m);
      if (got != want && ++bad <= 5)
        ADD_FAILURE() << "x=" << x << " mode=" << static_cast<int>(m) << std::hex << " got 0x"
                      << got << " want 0x" << want;
    }
    EXPECT_EQ(bad, 0u);
  }
}

TEST(Float16, HalfRoundingHandlesOverflowSubnormalsAndSpecials) {
  EXPECT_EQ(f16::float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(f16::float_to_half(65519.99f), 0x7BFF);
  EXPECT_EQ(f16::float_to_half(65520.0f), 0x7C00);          // the tie rounds to "even" = inf
  EXPECT_EQ(f16::float_to_half(-1e10f), 0xFC00);
  EXPECT_EQ(f16::float_to_half(1e10f, Round::down), 0x7BFF);  // directed toward zero saturates
  EXPECT_EQ(f16::float_to_half(-1e10f, Round::up), 0xFBFF);
  EXPECT_EQ(f16::float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f16::float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(f16::float_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f16::float_to_half(1e-30f, Round::up), 0x0001);
  EXPECT_EQ(f16::float_to_half(-1e-30f, Round::down), 0x8001);
  EXPECT_EQ(f16::float_to_half(-1e-30f, Round::up), 0x8000);
  EXPECT_EQ(f16::float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(f16::float_to_half(INFINITY), 0x7C00);
  EXPECT_EQ(f16::float_to_half(-INFINITY), 0xFC00);
  EXPECT_TRUE(std::isnan(f16::half_to_float(f16::float_to_half(NAN))));
}

TEST(Bfloat16, FloatToBf16MatchesTheIeeeReferenceInEveryRoundingMode) {
  const auto xs = stress_floats();
  for (Round m : {Round::nearest_even, Round::down, Round::up}) {
    std::size_t bad = 0;
    for (float x : xs) {
      if (std::isnan(x)) continue;
      const std::uint16_t got = f16::float_to_bf16(x, m), want = ref_bf16(x, m);
      if (got != want && ++bad <= 5)
        ADD_FAILURE() << "x=" << x << " mode=" << static_cast<int>(m) << std::hex << " got 0x"
                      << got << " want 0x" << want;
    }
    EXPECT_EQ(bad, 0u);
  }
  EXPECT_EQ(f16::float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // overflow -> inf
  EXPECT_EQ(f16::float_to_bf16(std::numeric_limits<float>::max(), Round::down), 0x7F7F);
  EXPECT_TRUE(std::isnan(f16::bf16_to_float(f16::float_to_bf16(NAN))));
}

TEST(Float16, NonNegativeDoubleToFloatUpIsTheSmallestFloatNotBelowTheValue) {
  const CounterRng rng({2, RngPurpose::test, 0, 0});
  for (std::uint64_t i = 0; i < 100000; ++i) {
    const int e = static_cast<int>(rng.word(i, 0) % 300) - 150;
    // Every fourth value a float itself (exact), the others doubles between floats.
    const double v = std::ldexp(1.0 + rng.uniform_double(i, 1), e);
    const double d = rng.word(i, 4) % 4 == 0 ? static_cast<double>(static_cast<float>(v)) : v;
    const float up = f16::nonnegative_double_to_float_up(d);
    ASSERT_GE(static_cast<double>(up), d) << d;
    if (up > 0.0f) {
      ASSERT_LT(static_cast<double>(std::nextafter(up, 0.0f)), d) << d;
    }
  }
  EXPECT_EQ(f16::nonnegative_double_to_float_up(1e300), INFINITY);
  const double above_max = static_cast<double>(std::numeric_limits<float>::max()) * (1.0 + 1e-12);
  EXPECT_EQ(f16::nonnegative_double_to_float_up(above_max), INFINITY);  // nearest even: FLT_MAX
  EXPECT_EQ(f16::nonnegative_double_to_float_up(std::numeric_limits<float>::max()),
            std::numeric_limits<float>::max());
  EXPECT_EQ(f16::nonnegative_double_to_float_up(1e-300), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(f16::nonnegative_double_to_float_up(0.0), 0.0f);
  EXPECT_EQ(f16::nonnegative_double_to_float_up(0.7), std::nextafter(0.7f, 1.0f));  // 0.7f < 0.7
  EXPECT_EQ(f16::nonnegative_double_to_float_up(0.1), 0.1f);                          // 0.1f > 0.1
}

}  // namespace
}  // namespace halognn
