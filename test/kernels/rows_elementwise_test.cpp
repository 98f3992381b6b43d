// Row movement, elementwise kernels, reductions and dropout against naive loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/kernels.hpp"
#include "test/kernels/kernel_test_util.hpp"

namespace halognn {
namespace {

using test::expect_near_all;
using test::random_matrix;

const Device& cpu() { return *cpu_device(); }

TEST(GatherRows, CopiesTheIndexedRowsIncludingRepeats) {
  const Matrix src = random_matrix(9, 5, 1);
  const std::vector<LocalId> idx{8, 0, 3, 3, 7};
  Matrix dst(5, 5);
  kernels::gather_rows(cpu(), src.view(), idx.data(), dst.view());
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 5; ++j) EXPECT_EQ(dst(i, j), src(idx[i], j));
  }
}

TEST(GatherRows, HandlesZeroRows) {
  const Matrix src = random_matrix(3, 4, 1);
  Matrix dst(0, 4);
  kernels::gather_rows(cpu(), src.view(), nullptr, dst.view());
  EXPECT_EQ(dst.size(), 0);
}

TEST(ScatterRows, OverwritesTheIndexedRowsAndLeavesTheOthers) {
  const Matrix src = random_matrix(4, 6, 1);
  const std::vector<LocalId> idx{7, 2, 0, 5};
  Matrix dst = random_matrix(9, 6, 2);
  const Matrix before = dst.clone();
  kernels::scatter_rows(cpu(), src.view(), idx.data(), dst.view());
  for (int i = 0; i < 9; ++i) {
    const auto it = std::find(idx.begin(), idx.end(), i);
    for (int j = 0; j < 6; ++j)
      EXPECT_EQ(dst(i, j), it == idx.end() ? before(i, j) : src(it - idx.begin(), j)) << i;
  }
  Matrix none(0, 6);
  kernels::scatter_rows(cpu(), none.view(), nullptr, dst.view());
}

void check_scatter(const std::vector<LocalId>& idx, std::int64_t dst_rows, std::int64_t f,
                   double tol = 1e-6) {
  const auto n = static_cast<std::int64_t>(idx.size());
  const Matrix src = random_matrix(n, f, 2);
  Matrix dst = random_matrix(dst_rows, f, 3);
  std::vector<double> want(dst.host().begin(), dst.host().end());
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < f; ++j) want[idx[i] * f + j] += src(i, j);
  }
  kernels::scatter_add_rows(cpu(), src.view(), idx.data(), dst.view());
  expect_near_all(dst.host(), want, tol);
}

TEST(ScatterAddRows, AccumulatesRepeatedIndicesWithoutLosingUpdates) {
  // Many repeats of few destinations: a racy implementation loses updates here.
  std::vector<LocalId> idx;
  for (int i = 0; i < 20000; ++i) idx.push_back(static_cast<LocalId>((i * 7919) % 13));
  // ~1540 float additions per destination: a random-walk rounding error of about
  // sqrt(1540) * 6e-8 * |partial sum| (<= ~40) ~ 1e-4 in the worst rows; a lost update would be
  // off by up to 1.
  check_scatter(idx, 13, 7, 1e-4);
}

TEST(ScatterAddRows, HandlesAscendingUnsortedAndEmptyIndexLists) {
  std::vector<LocalId> ascending;
  for (int i = 0; i < 1000; ++i) ascending.push_back(2 * i);
  check_scatter(ascending, 2000, 16);
  check_scatter({5, 1, 4, 1, 0}, 6, 3);
  check_scatter({}, 4, 3);
}

TEST(ScatterAddRows, IsBitwiseDeterministic) {
  std::vector<LocalId> idx;
  for (int i = 0; i < 5000; ++i) idx.push_back(static_cast<LocalId>((i * 31) % 17));
  const Matrix src = random_matrix(5000, 9, 4);
  Matrix a(17, 9), b(17, 9);
  kernels::scatter_add_rows(cpu(), src.view(), idx.data(), a.view());
  kernels::scatter_add_rows(cpu(), src.view(), idx.data(), b.view());
  EXPECT_EQ(a.to_host(), b.to_host());
}

TEST(Elementwise, CopyFillAxpyAxpbyMatchNaiveLoops) {
  const Matrix x = random_matrix(37, 11, 5);
  Matrix y = random_matrix(37, 11, 6);
  const Matrix y0 = y.clone();
  kernels::axpy(cpu(), -1.5f, x.view(), y.view());
  std::vector<double> want(static_cast<std::size_t>(x.size()));
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = y0.host()[i] - 1.5 * x.host()[i];
  expect_near_all(y.host(), want, 1e-6);

  Matrix z(37, 11);
  for (float& v : z.host()) v = std::numeric_limits<float>::quiet_NaN();
  kernels::axpby(cpu(), z.size(), 2.0f, x.data(), 0.0f, z.data());  // beta 0 ignores the NaNs
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = 2.0 * x.host()[i];
  expect_near_all(z.host(), want, 1e-6);
  kernels::axpby(cpu(), z.size(), 1.0f, x.data(), -0.5f, z.data());
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = 0.0;  // -0.5*2x + x
  expect_near_all(z.host(), want, 1e-6);

  kernels::copy(cpu(), x.view(), z.view());
  EXPECT_EQ(z.to_host(), x.to_host());
  kernels::fill(cpu(), z.view(), 3.25f);
  for (float v : z.host()) EXPECT_EQ(v, 3.25f);
}

TEST(Elementwise, ScaleRowsAddRowVectorAndColumnSumMatchNaiveLoops) {
  const Matrix x = random_matrix(1001, 13, 7);
  const Matrix s = random_matrix(1001, 1, 8);
  const Matrix b = random_matrix(1, 13, 9);
  Matrix y = x.clone();
  kernels::scale_rows(cpu(), s.data(), y.view());
  kernels::add_row_vector(cpu(), b.data(), y.view());
  std::vector<double> want(static_cast<std::size_t>(x.size()));
  for (int i = 0; i < 1001; ++i) {
    for (int j = 0; j < 13; ++j) want[i * 13 + j] = double(x(i, j)) * s(i, 0) + b(0, j);
  }
  expect_near_all(y.host(), want, 1e-6);

  std::vector<float> out(13, 1.0f);
  kernels::column_sum(cpu(), x.view(), 0.5f, out.data());
  for (int j = 0; j < 13; ++j) {
    double col = 0.5;
    for (int i = 0; i < 1001; ++i) col += x(i, j);
    EXPECT_NEAR(out[j], col, 1e-4);
  }
  Matrix empty(0, 13);
  kernels::column_sum(cpu(), empty.view(), 0.0f, out.data());
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

TEST(Relu, ForwardAndBackwardWorkInPlace) {
  Matrix x = random_matrix(20, 7, 10);
  const Matrix x0 = x.clone();
  kernels::relu_forward(cpu(), x.view(), x.view());
  Matrix g = random_matrix(20, 7, 11);
  const Matrix g0 = g.clone();
  kernels::relu_backward(cpu(), x.view(), g.view(), g.view());
  for (std::size_t i = 0; i < static_cast<std::size_t>(x.size()); ++i) {
    EXPECT_EQ(x.host()[i], std::max(x0.host()[i], 0.0f));
    EXPECT_EQ(g.host()[i], x0.host()[i] > 0.0f ? g0.host()[i] : 0.0f);
  }
}

TEST(Relu, DropoutBackwardThroughTheActivatedRowsIsBothBackwardsWithTheDrawnMask) {
  // y: ReLU's output with dropout applied in place, as the trainer keeps a layer's input; the
  // kernel reads y instead of drawing the mask. Received gradients r are added between it and
  // the ReLU's backward (the trainer's order on P ranks): the results must equal the drawn
  // mask's bit for bit, with r and without it (one rank, where the ReLU's backward is skipped).
  const std::int64_t rows = 40, cols = 37;  // a scalar tail on every instruction set
  std::vector<GlobalId> ids(rows);
  for (std::int64_t i = 0; i < rows; ++i) ids[static_cast<std::size_t>(i)] = 1000 + 7 * i;
  const RngKey key{5, RngPurpose::dropout, 2, 1};
  for (const float p : {0.0f, 0.3f, 0.5f, 0.9f, 1.0f}) {
    SCOPED_TRACE("p = " + std::to_string(p));
    Matrix y = random_matrix(rows, cols, 50);
    for (float& v : y.host()) v = v * 2.0f - 1.0f;
    y.host()[0] = -0.0f;
    kernels::relu_forward(cpu(), y.view(), y.view());
    kernels::dropout_forward(cpu(), key, ids.data(), p, y.view(), y.view());
    const Matrix g = random_matrix(rows, cols, 51), r = random_matrix(rows, cols, 52);

    Matrix drawn = g.clone();  // dropout's backward with the drawn mask, then ReLU's
    kernels::dropout_backward(cpu(), key, ids.data(), p, drawn.view(), drawn.view());
    Matrix drawn_r = drawn.clone();
    kernels::axpy(cpu(), 1.0f, r.view(), drawn_r.view());
    kernels::relu_backward(cpu(), y.view(), drawn.view(), drawn.view());
    kernels::relu_backward(cpu(), y.view(), drawn_r.view(), drawn_r.view());

    Matrix fused = g.clone();
    kernels::relu_dropout_backward(cpu(), p, y.view(), fused.view(), fused.view());
    Matrix fused_r = fused.clone();
    kernels::axpy(cpu(), 1.0f, r.view(), fused_r.view());
    kernels::relu_backward(cpu(), y.view(), fused_r.view(), fused_r.view());

    std::int64_t kept = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(y.size()); ++i) {
      kept += y.host()[i] > 0.0f;
      EXPECT_EQ(std::bit_cast<std::uint32_t>(fused.host()[i]),
                std::bit_cast<std::uint32_t>(drawn.host()[i])) << "element " << i;
      EXPECT_EQ(std::bit_cast<std::uint32_t>(fused_r.host()[i]),
                std::bit_cast<std::uint32_t>(drawn_r.host()[i])) << "element " << i;
    }
    // Some entries pass (except at p = 1) and some are masked, so both sides are exercised.
    if (p < 1.0f) {
      EXPECT_GT(kept, 0);
    }
    EXPECT_LT(kept, y.size());
  }
}

TEST(Relu, DropoutForwardWithTheReluIsBothPassesBitForBit) {
  // relu_dropout_forward (in place, as the trainer calls it on one rank) against relu_forward
  // then dropout_forward; rows drawn in batches (16, 37 columns) and one at a time (100).
  const RngKey key{9, RngPurpose::dropout, 4, 2};
  for (const std::int64_t cols : {16, 37, 100}) {
    const std::int64_t rows = 45;
    std::vector<GlobalId> ids(rows);
    for (std::int64_t i = 0; i < rows; ++i) ids[static_cast<std::size_t>(i)] = 50 + 3 * i;
    for (const float p : {0.0f, 0.3f, 0.5f, 1.0f}) {
      SCOPED_TRACE("cols = " + std::to_string(cols) + ", p = " + std::to_string(p));
      Matrix x = random_matrix(rows, cols, 60);
      for (float& v : x.host()) v = v * 2.0f - 1.0f;
      x.host()[0] = -0.0f;
      Matrix two = x.clone();
      kernels::relu_forward(cpu(), two.view(), two.view());
      kernels::dropout_forward(cpu(), key, ids.data(), p, two.view(), two.view());
      kernels::relu_dropout_forward(cpu(), key, ids.data(), p, x.view(), x.view());
      std::int64_t kept = 0;
      for (std::size_t i = 0; i < static_cast<std::size_t>(x.size()); ++i) {
        kept += x.host()[i] > 0.0f;
        EXPECT_EQ(std::bit_cast<std::uint32_t>(x.host()[i]),
                  std::bit_cast<std::uint32_t>(two.host()[i])) << "element " << i;
      }
      if (p < 1.0f) {
        EXPECT_GT(kept, 0);
      }
    }
  }
}

TEST(Elu, ForwardIsEluAndBackwardIsItsDerivativeThroughTheOutput) {
  Matrix x = random_matrix(20, 7, 13);
  for (float& v : x.host()) v *= 4.0f;  // reach well into the saturating part
  const Matrix x0 = x.clone();
  kernels::elu_forward(cpu(), x.view(), x.view());
  Matrix g = random_matrix(20, 7, 14);
  const Matrix g0 = g.clone();
  kernels::elu_backward(cpu(), x.view(), g.view(), g.view());
  for (std::size_t i = 0; i < static_cast<std::size_t>(x.size()); ++i) {
    const double in = x0.host()[i];
    EXPECT_NEAR(x.host()[i], in > 0 ? in : std::expm1(in), 1e-6 * (1 + std::abs(in)));
    // d ELU / dx = 1 for x > 0, exp(x) otherwise.
    EXPECT_NEAR(g.host()[i], g0.host()[i] * (in > 0 ? 1.0 : std::exp(in)), 1e-6);
  }
}

TEST(Elu, ForwardIsExpm1WithinOneUlpOverTheNegativeFloatsAndKeepsSpecialValues) {
  // Every 301st float from -0 down to -40 (the vectorised expm1 of the kernel against the
  // double-precision one, rounded), then the values with their own rules.
  std::vector<float> in;
  for (std::uint32_t bits = 0x80000001u; bits <= std::bit_cast<std::uint32_t>(-40.0f); bits += 301)
    in.push_back(std::bit_cast<float>(bits));
  const std::size_t swept = in.size();
  const float inf = std::numeric_limits<float>::infinity();
  for (const float v : {-0.0f, 0.0f, -inf, inf, std::numeric_limits<float>::quiet_NaN(), -1e-40f,
                        -88.0f, -1e30f, 3.5f})
    in.push_back(v);
  Matrix x(static_cast<std::int64_t>(in.size()), 1);
  std::copy(in.begin(), in.end(), x.host().begin());
  kernels::elu_forward(cpu(), x.view(), x.view());
  const std::vector<float> out = x.to_host();
  std::int64_t worst = 0;
  for (std::size_t i = 0; i < swept; ++i) {
    const auto want = static_cast<float>(std::expm1(static_cast<double>(in[i])));
    const std::int64_t ulps = std::abs(static_cast<std::int64_t>(std::bit_cast<std::int32_t>(out[i])) -
                                       std::bit_cast<std::int32_t>(want));
    ASSERT_LE(ulps, 1) << "x = " << in[i] << ": " << out[i] << " against " << want;
    worst = std::max(worst, ulps);
  }
  EXPECT_GT(swept, 3'000'000u);
  const float* special = out.data() + swept;
  EXPECT_TRUE(std::signbit(special[0]) && special[0] == 0.0f);   // -0 -> -0
  EXPECT_TRUE(!std::signbit(special[1]) && special[1] == 0.0f);  // +0 -> +0
  EXPECT_EQ(special[2], -1.0f);
  EXPECT_EQ(special[3], inf);
  EXPECT_TRUE(std::isnan(special[4]));
  EXPECT_EQ(special[5], -1e-40f);  // a subnormal: expm1(x) = x
  EXPECT_EQ(special[6], -1.0f);
  EXPECT_EQ(special[7], -1.0f);
  EXPECT_EQ(special[8], 3.5f);
  std::printf("worst error over %zu floats: %lld ulp\n", swept, static_cast<long long>(worst));
}

TEST(Gelu, ForwardIsTheExactGeluAndBackwardItsDerivative) {
  Matrix x = random_matrix(30, 7, 15);
  for (float& v : x.host()) v *= 5.0f;  // both tails and the curved middle
  Matrix y(30, 7);
  kernels::gelu_forward(cpu(), x.view(), y.view());
  Matrix g = random_matrix(30, 7, 16);
  const Matrix g0 = g.clone();
  kernels::gelu_backward(cpu(), x.view(), g.view(), g.view());  // gx aliases gy
  for (std::size_t i = 0; i < static_cast<std::size_t>(x.size()); ++i) {
    const double v = x.host()[i];
    const double cdf = 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)));
    const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI);
    EXPECT_NEAR(y.host()[i], v * cdf, 2e-6 * (1 + std::abs(v))) << v;
    EXPECT_NEAR(g.host()[i], g0.host()[i] * (cdf + v * pdf), 2e-6) << v;
  }
}

TEST(Gelu, IsWithinFourUlpOverEveryRangeAndTheSameBitsOnEveryInstructionSet) {
  // Every 701st float of either sign up to 20 in magnitude (Φ underflows below -13.2), the
  // kernels' Φ (normal_math.hpp) against the double-precision erfc: GELU(x) = x Φ(x) within
  // 6e-7 of |GELU(x)| (about 4 ulp; every third float of the range reaches 5.2e-7) and GELU'(x) =
  // Φ(x) + x φ(x) within 6e-7 of Φ(x) + |x| φ(x) (its terms cancel near x = -0.75; every third
  // float reaches 3.0e-7), each plus 2^-122 (1.9e-37): below x = -13.19, where
  // exp(-x²/2) < exp(-87), the kernels take exp(-x²/2) as 0 (exp_nonpositive). Then sse2, avx2
  // and avx512 give the same bits.
  std::vector<float> in;
  for (std::uint32_t bits = 1; bits <= std::bit_cast<std::uint32_t>(20.0f); bits += 701) {
    in.push_back(std::bit_cast<float>(bits));
    in.push_back(-std::bit_cast<float>(bits));
  }
  const std::size_t swept = in.size();
  const float inf = std::numeric_limits<float>::infinity();
  for (const float v : {0.0f, -0.0f, 1.0f, -1.0f, 16.0f, -16.0f, 1e30f, -1e30f, inf,
                        std::numeric_limits<float>::quiet_NaN()})
    in.push_back(v);
  const auto n = static_cast<std::int64_t>(in.size());
  Matrix x(n, 1);
  std::copy(in.begin(), in.end(), x.host().begin());
  Matrix ones(n, 1);
  std::fill(ones.host().begin(), ones.host().end(), 1.0f);
  std::vector<std::vector<float>> fwd, bwd;
  for (const kernels::CpuIsa isa : {kernels::CpuIsa::sse2, kernels::CpuIsa::avx2, kernels::CpuIsa::avx512}) {
    kernels::set_cpu_isa_limit(isa);
    Matrix y(n, 1), g = ones.clone();
    kernels::gelu_forward(cpu(), x.view(), y.view());
    kernels::gelu_backward(cpu(), x.view(), g.view(), g.view());
    fwd.push_back(y.to_host());
    bwd.push_back(g.to_host());
  }
  kernels::set_cpu_isa_limit(kernels::detected_cpu_isa());
  for (std::size_t k = 1; k < fwd.size(); ++k)
    for (std::size_t i = 0; i < in.size(); ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(fwd[k][i]), std::bit_cast<std::uint32_t>(fwd[0][i])) << in[i];
      ASSERT_EQ(std::bit_cast<std::uint32_t>(bwd[k][i]), std::bit_cast<std::uint32_t>(bwd[0][i])) << in[i];
    }
  constexpr double kRel = 6e-7, kFloor = 0x1p-122;
  double worst_fwd = 0, worst_bwd = 0;
  for (std::size_t i = 0; i < swept; ++i) {
    const double v = in[i];
    const double cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI);
    const double want = v * cdf, dwant = cdf + v * pdf, dscale = cdf + std::abs(v) * pdf;
    ASSERT_LE(std::abs(fwd[0][i] - want), kRel * std::abs(want) + kFloor) << "GELU(" << in[i] << ")";
    ASSERT_LE(std::abs(bwd[0][i] - dwant), kRel * dscale + kFloor) << "GELU'(" << in[i] << ")";
    if (std::abs(want) > kFloor) worst_fwd = std::max(worst_fwd, std::abs(fwd[0][i] - want) / std::abs(want));
    if (dscale > kFloor) worst_bwd = std::max(worst_bwd, std::abs(bwd[0][i] - dwant) / dscale);
  }
  EXPECT_GT(swept, 3'000'000u);
  const float* special = fwd[0].data() + swept;
  EXPECT_TRUE(!std::signbit(special[0]) && special[0] == 0.0f);  // GELU(+0) = +0
  EXPECT_TRUE(std::signbit(special[1]) && special[1] == 0.0f);   // GELU(-0) = -0 (-0 x 1/2)
  EXPECT_EQ(special[6], 1e30f);
  EXPECT_TRUE(std::signbit(special[7]) && special[7] == 0.0f);  // -1e30 Φ(-1e30) = -0
  EXPECT_EQ(special[8], inf);
  EXPECT_TRUE(std::isnan(special[9]));
  EXPECT_TRUE(std::isnan(bwd[0][in.size() - 1]));
  std::printf("worst relative error over %zu floats: GELU %.3g, GELU' %.3g (of Φ + |x| φ)\n", swept,
              worst_fwd, worst_bwd);
}

TEST(LayerNorm, ForwardAndBackwardMatchDoublePrecisionFormulas) {
  const std::int64_t rows = 25, f = 9;
  Matrix x = random_matrix(rows, f, 17);
  for (std::int64_t j = 0; j < f; ++j) x(3, j) = 2.0f;  // a constant row: variance 0, y = beta
  for (std::int64_t j = 0; j < f; ++j) x(4, j) = 100.0f + 0.01f * static_cast<float>(j);
  const Matrix gamma = random_matrix(1, f, 18), beta = random_matrix(1, f, 19);
  const float eps = 1e-5f;
  Matrix y(rows, f), stats(rows, 2);
  kernels::layer_norm_forward(cpu(), x.view(), gamma.data(), beta.data(), eps, y.view(),
                              stats.data());
  const Matrix gy = random_matrix(rows, f, 20);
  Matrix gx = random_matrix(rows, f, 21);
  const Matrix gx0 = gx.clone();
  Matrix ggamma = random_matrix(1, f, 22), gbeta = random_matrix(1, f, 23);
  const Matrix ggamma0 = ggamma.clone(), gbeta0 = gbeta.clone();
  kernels::layer_norm_backward(cpu(), x.view(), stats.data(), gamma.data(), gy.view(), 0.5f,
                               gx.view(), ggamma.data(), gbeta.data());
  std::vector<double> want_gg(f), want_gb(f);
  for (std::int64_t i = 0; i < rows; ++i) {
    double mu = 0, var = 0;
    for (std::int64_t j = 0; j < f; ++j) mu += x(i, j);
    mu /= f;
    for (std::int64_t j = 0; j < f; ++j) var += (x(i, j) - mu) * (x(i, j) - mu);
    var /= f;
    const double r = 1.0 / std::sqrt(var + eps);
    EXPECT_NEAR(stats(i, 0), mu, 1e-6 * (1 + std::abs(mu)));
    EXPECT_NEAR(stats(i, 1), r, 1e-6 * r);
    std::vector<double> xh(f), d(f);
    double mean_d = 0, mean_dx = 0;
    for (std::int64_t j = 0; j < f; ++j) {
      xh[j] = (x(i, j) - mu) * r;
      EXPECT_NEAR(y(i, j), xh[j] * gamma(0, j) + beta(0, j), 1e-4) << i << "," << j;
      d[j] = gy(i, j) * gamma(0, j);
      mean_d += d[j] / f;
      mean_dx += d[j] * xh[j] / f;
      want_gg[j] += gy(i, j) * xh[j];
      want_gb[j] += gy(i, j);
    }
    for (std::int64_t j = 0; j < f; ++j)
      EXPECT_NEAR(gx(i, j), 0.5 * gx0(i, j) + r * (d[j] - mean_d - xh[j] * mean_dx),
                  1e-4 * (1 + r)) << i << "," << j;
  }
  for (std::int64_t j = 0; j < f; ++j) {
    EXPECT_NEAR(ggamma(0, j), ggamma0(0, j) + want_gg[j], 1e-4) << j;  // accumulated
    EXPECT_NEAR(gbeta(0, j), gbeta0(0, j) + want_gb[j], 1e-5) << j;
  }
}

/// The layer norm's row statistics and input gradient computed the way norm_rows.hpp documents
/// them: each double sum with element j in lane j mod 8 in ascending j and the lanes added as a
/// fixed tree (halves, quarters, pairs), the rest in single float operations; widths with and
/// without whole 8-lane groups and a tail, and rows whose sums cancel so that another lane count
/// or order changes the result; bit for bit on every instruction set, and the
/// parameter gradients (double partial sums column by column) the same bits on every set.
TEST(LayerNorm, GivesTheDocumentedOperationsBitsOnEveryInstructionSet) {
  const auto tree = [](double* l) {
    for (int w = 4; w >= 1; w /= 2)
      for (int i = 0; i < w; ++i) l[i] = l[i] + l[i + w];
    return l[0];
  };
  const std::int64_t rows = 40;
  const float eps = 1e-5f, beta_out = 0.5f;
  for (const std::int64_t f : {1, 5, 8, 13, 64, 100, 515}) {
    Matrix x = random_matrix(rows, f, 31);
    for (float& v : x.host()) v = 3.0f * v + 0.25f;  // a mean well away from 0
    Matrix gamma = random_matrix(1, f, 32), gy = random_matrix(rows, f, 34);
    const Matrix beta = random_matrix(1, f, 33), gx0 = random_matrix(rows, f, 35);
    if (f > 8) {
      // Sums whose double rounding shows the lanes: 2^60 + 1 - 2^60 is 0 in one lane and 1 with
      // the 1 in a lane of its own (x's row 0 for the statistics, d = gy gamma of row 1).
      for (std::int64_t j = 0; j < f; ++j) x(0, j) = 0.0f;
      x(0, 0) = 0x1p60f;
      x(0, 4) = 1.0f;
      x(0, 8) = -0x1p60f;
      for (const std::int64_t j : {0, 4, 8}) gamma(0, j) = 1.0f;
      for (std::int64_t j = 0; j < f; ++j) x(1, j) = 0.75f;  // x̂ = 0: mean(d x̂) = 0, mean(d) shows
      gy(1, 0) = 0x1p60f;
      gy(1, 4) = 1.0f;
      gy(1, 8) = -0x1p60f;
    }
    std::vector<float> want_y(static_cast<std::size_t>(rows * f)), want_stats(static_cast<std::size_t>(2 * rows));
    std::vector<float> want_gx(want_y.size());
    for (std::int64_t i = 0; i < rows; ++i) {
      double l[8] = {};
      for (std::int64_t j = 0; j < f; ++j) l[j % 8] += static_cast<double>(x(i, j));
      const double mean = tree(l) / static_cast<double>(f);
      double q[8] = {};
      for (std::int64_t j = 0; j < f; ++j) {
        const double c = static_cast<double>(x(i, j)) - mean;
        q[j % 8] += c * c;
      }
      const float mu = static_cast<float>(mean);
      const auto rstd = static_cast<float>(1.0 / std::sqrt(tree(q) / static_cast<double>(f) + eps));
      want_stats[2 * i] = mu;
      want_stats[2 * i + 1] = rstd;
      double ld[8] = {}, ldx[8] = {};
      for (std::int64_t j = 0; j < f; ++j) {
        const float xh = (x(i, j) - mu) * rstd;
        want_y[i * f + j] = xh * gamma(0, j) + beta(0, j);
        const float d = gy(i, j) * gamma(0, j);
        ld[j % 8] += static_cast<double>(d);
        ldx[j % 8] += static_cast<double>(d) * static_cast<double>(xh);
      }
      const auto mean_d = static_cast<float>(tree(ld) / static_cast<double>(f));
      const auto mean_dx = static_cast<float>(tree(ldx) / static_cast<double>(f));
      for (std::int64_t j = 0; j < f; ++j) {
        const float v = rstd * (gy(i, j) * gamma(0, j) - mean_d - (x(i, j) - mu) * rstd * mean_dx);
        want_gx[i * f + j] = beta_out * gx0(i, j) + v;
      }
    }
    std::vector<float> first_gg, first_gb;
    for (const kernels::CpuIsa isa : {kernels::CpuIsa::sse2, kernels::CpuIsa::avx2, kernels::CpuIsa::avx512}) {
      kernels::set_cpu_isa_limit(isa);
      const std::string where = std::string(kernels::to_string(kernels::cpu_isa())) + ", f " + std::to_string(f);
      Matrix y(rows, f), stats(rows, 2), gx = gx0.clone(), gg(1, f), gb(1, f);
      kernels::layer_norm_forward(cpu(), x.view(), gamma.data(), beta.data(), eps, y.view(), stats.data());
      kernels::layer_norm_backward(cpu(), x.view(), stats.data(), gamma.data(), gy.view(), beta_out, gx.view(),
                                   gg.data(), gb.data());
      EXPECT_EQ(stats.to_host(), want_stats) << where;
      EXPECT_EQ(y.to_host(), want_y) << where;
      EXPECT_EQ(gx.to_host(), want_gx) << where;
      if (first_gg.empty()) {
        first_gg = gg.to_host();
        first_gb = gb.to_host();
      }
      EXPECT_EQ(gg.to_host(), first_gg) << where;
      EXPECT_EQ(gb.to_host(), first_gb) << where;
    }
    kernels::set_cpu_isa_limit(kernels::detected_cpu_isa());
  }
}

TEST(Dropout, MaskIsTheDocumentedCounterRngDrawAndBackwardReusesIt) {
  const RngKey key{3, RngPurpose::dropout, 5, 1};
  const float p = 0.3f;
  const std::int64_t rows = 300, f = 19;
  std::vector<GlobalId> ids(rows);
  for (std::int64_t i = 0; i < rows; ++i) ids[i] = 1000 + 3 * i;
  const Matrix x = random_matrix(rows, f, 12);
  Matrix y(rows, f);
  kernels::dropout_forward(cpu(), key, ids.data(), p, x.view(), y.view());
  Matrix g = random_matrix(rows, f, 13);
  const Matrix g0 = g.clone();
  kernels::dropout_backward(cpu(), key, ids.data(), p, g.view(), g.view());  // in place
  const CounterRng rng(key);
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < f; ++j) {
      const bool keep = rng.uniform(static_cast<std::uint64_t>(ids[i]), j) >= p;
      kept += keep;
      EXPECT_FLOAT_EQ(y(i, j), keep ? x(i, j) / (1.0f - p) : 0.0f);
      EXPECT_FLOAT_EQ(g(i, j), keep ? g0(i, j) / (1.0f - p) : 0.0f);
    }
  }
  // 5700 Bernoulli(0.7) draws: mean 3990, sd 35; 6 sd either side.
  EXPECT_NEAR(static_cast<double>(kept), 0.7 * rows * f, 210.0);
}

TEST(Dropout, KeepsTheElementWhoseDrawEqualsTheThresholdOnEveryInstructionSet) {
  // Kept iff u >= p: with p exactly an element's 24-bit draw (threshold == draw) the element is
  // kept, one step higher it is dropped; out of place (as the trainer drops the input features)
  // and through the ReLU, on every instruction set, every other element by the same rule.
  const RngKey key{4, RngPurpose::dropout, 2, 7};
  const std::int64_t rows = 40, f = 64;
  std::vector<GlobalId> ids(rows);
  for (std::int64_t i = 0; i < rows; ++i) ids[static_cast<std::size_t>(i)] = 7 + 5 * i;
  Matrix x = random_matrix(rows, f, 61);
  for (float& v : x.host()) v = std::fabs(v) + 0.5f;  // positive: the ReLU keeps every value
  const CounterRng rng(key);
  for (const auto& [pi, pj] : {std::pair<std::int64_t, std::int64_t>{3, 17}, {22, 40}, {39, 63}}) {
    const std::uint32_t draw = rng.word(static_cast<std::uint64_t>(ids[static_cast<std::size_t>(pi)]),
                                        static_cast<std::uint64_t>(pj)) >> 8;
    for (const std::uint32_t step : {0u, 1u}) {
      if (draw + step >= (1u << 24)) continue;
      const float p = static_cast<float>(draw + step) * (1.0f / 16777216.0f);
      ASSERT_EQ(CounterRng::keep_threshold(p), static_cast<std::int32_t>(draw + step));
      for (const kernels::CpuIsa isa : {kernels::CpuIsa::sse2, kernels::CpuIsa::avx2, kernels::CpuIsa::avx512}) {
        kernels::set_cpu_isa_limit(isa);
        SCOPED_TRACE(std::string(kernels::to_string(kernels::cpu_isa())) + ", step " + std::to_string(step));
        Matrix y(rows, f), yr(rows, f);
        kernels::dropout_forward(cpu(), key, ids.data(), p, x.view(), y.view());
        kernels::relu_dropout_forward(cpu(), key, ids.data(), p, x.view(), yr.view());
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t j = 0; j < f; ++j) {
            const bool keep = rng.uniform(static_cast<std::uint64_t>(ids[static_cast<std::size_t>(i)]),
                                          static_cast<std::uint64_t>(j)) >= p;
            if (i == pi && j == pj) {
              ASSERT_EQ(keep, step == 0);
            }
            const float want = keep ? x(i, j) * CounterRng::keep_scale(p) : 0.0f;
            ASSERT_EQ(std::bit_cast<std::uint32_t>(y(i, j)), std::bit_cast<std::uint32_t>(want)) << i << ", " << j;
            ASSERT_EQ(std::bit_cast<std::uint32_t>(yr(i, j)), std::bit_cast<std::uint32_t>(want)) << i << ", " << j;
          }
      }
    }
  }
  kernels::set_cpu_isa_limit(kernels::detected_cpu_isa());
}

TEST(Dropout, ZeroProbabilityIsTheIdentity) {
  const Matrix x = random_matrix(4, 5, 14);
  Matrix y(4, 5);
  const std::vector<GlobalId> ids{0, 1, 2, 3};
  kernels::dropout_forward(cpu(), RngKey{}, ids.data(), 0.0f, x.view(), y.view());
  EXPECT_EQ(y.to_host(), x.to_host());
}

// Rows without columns (a block of width 0) are a no-op, also for the narrow rows' batched draw.
TEST(Dropout, RowsWithoutColumnsAreANoOp) {
  const Matrix x(3, 0);
  Matrix y(3, 0);
  const std::vector<GlobalId> ids{0, 1, 2};
  kernels::dropout_forward(cpu(), RngKey{3, RngPurpose::dropout, 0, 0}, ids.data(), 0.5f, x.view(), y.view());
  EXPECT_EQ(y.rows(), 3);
}

}  // namespace
}  // namespace halognn
