#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.hpp"

namespace halognn {
namespace {

TEST(CounterRng, IsAPureFunctionOfKeyAndCounter) {
  const CounterRng a({42, RngPurpose::dropout, 3, 1}), b({42, RngPurpose::dropout, 3, 1});
  for (std::uint64_t i = 0; i < 100; ++i) EXPECT_EQ(a.word(i * 7919, i), b.word(i * 7919, i));
}

TEST(CounterRng, DifferentKeysGiveDifferentStreams) {
  const CounterRng a({42, RngPurpose::dropout, 3, 1}), b({42, RngPurpose::dropout, 3, 2}),
      c({43, RngPurpose::dropout, 3, 1}), d({42, RngPurpose::quantize, 3, 1});
  int same_b = 0, same_c = 0, same_d = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    same_b += a.word(i, 0) == b.word(i, 0);
    same_c += a.word(i, 0) == c.word(i, 0);
    same_d += a.word(i, 0) == d.word(i, 0);
  }
  EXPECT_LE(same_b + same_c + same_d, 1);
}

TEST(CounterRng, MatchesRandom123KnownAnswers) {
  // Known-answer vectors of Random123's kat_vectors for philox4x32_10.
  struct Kat { std::uint32_t ctr[4], key[2], expect[4]; };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const auto& k : kats) {
    std::uint32_t out[4];
    philox4x32_10(k.ctr, k.key, out);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], k.expect[i]) << std::hex << out[i];
  }
}

TEST(CounterRng, UniformMomentsMatchU01) {
  // Mean of n U[0,1) has sd 1/sqrt(12n); 6 sd bound -> false failure probability ~ 2e-9.
  const CounterRng r({7, RngPurpose::test, 0, 0});
  const int n = 200000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform(static_cast<std::uint64_t>(i) / 8, i % 8);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sum2 += u * u;
  }
  EXPECT_NEAR(sum / n, 0.5, 6.0 / std::sqrt(12.0 * n));
  // Var(u^2) = 1/5 - 1/9 = 4/45.
  EXPECT_NEAR(sum2 / n, 1.0 / 3.0, 6.0 * std::sqrt(4.0 / 45.0 / n));
}

}  // namespace
}  // namespace halognn
