// GEMM, SpMM and transposed SpMM against naive double-precision loops.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "core/kernels/kernels.hpp"
#include "test/kernels/kernel_test_util.hpp"

namespace halognn {
namespace {

using test::expect_near_all;
using test::random_csr;
using test::random_matrix;

// float32 sums of at most ~50 terms of magnitude <= 1.5: the relative error is a few 1e-6.
constexpr double kTol = 1e-5;

class GemmShapes : public ::testing::TestWithParam<std::tuple<bool, bool, int, int, int, float>> {};

TEST_P(GemmShapes, MatchesNaiveLoopForEveryTranspositionAndBeta) {
  const auto [ta, tb, m, k, n, beta] = GetParam();
  const Matrix a = ta ? random_matrix(k, m, 1) : random_matrix(m, k, 1);
  const Matrix b = tb ? random_matrix(n, k, 2) : random_matrix(k, n, 2);
  Matrix y = random_matrix(m, n, 3);
  const Matrix y0 = y.clone();
  if (beta == 0.0f) {
    for (float& v : y.host()) v = std::numeric_limits<float>::quiet_NaN();  // must be ignored
  }
  const float alpha = 0.75f;
  kernels::gemm(*cpu_device(), ta, tb, alpha, a.view(), b.view(), beta, y.view());
  std::vector<double> want(static_cast<std::size_t>(m * n));
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0.0;
      for (int t = 0; t < k; ++t) s += double(ta ? a(t, i) : a(i, t)) * (tb ? b(j, t) : b(t, j));
      want[static_cast<std::size_t>(i * n + j)] =
          alpha * s + (beta == 0.0f ? 0.0 : beta * y0(i, j));
    }
  }
  expect_near_all(y.host(), want, kTol);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, GemmShapes,
    ::testing::Values(std::make_tuple(false, false, 7, 5, 3, 0.0f),
                      std::make_tuple(false, true, 7, 5, 3, 0.5f),
                      std::make_tuple(true, false, 7, 5, 3, 1.0f),
                      std::make_tuple(true, true, 7, 5, 3, 0.0f),
                      std::make_tuple(false, false, 33, 65, 17, 0.0f),
                      std::make_tuple(true, false, 64, 129, 31, 1.0f),
                      std::make_tuple(false, false, 0, 4, 3, 0.0f),  // zero-row output
                      std::make_tuple(false, false, 4, 0, 3, 0.0f),  // empty inner dimension
                      std::make_tuple(true, true, 4, 0, 3, 0.5f),
                      // Large enough for the threaded, tiled path (>= 1M multiply-adds): row
                      // tiles, column tiles (few output rows), and both transposed.
                      std::make_tuple(false, true, 300, 64, 100, 0.5f),
                      std::make_tuple(true, false, 96, 400, 160, 1.0f),
                      std::make_tuple(true, true, 200, 300, 70, 0.0f),
                      // The classifier's shape: at most 16 (8) output columns take the tall
                      // tile of AVX-512 (AVX2), whose full 24- (12-) row panels of A are read
                      // in place; 100 rows end in a partial, packed panel; two depth blocks.
                      std::make_tuple(false, false, 100, 300, 16, 0.5f),
                      std::make_tuple(false, false, 100, 300, 8, 0.0f)));

std::vector<double> naive_spmm(const test::HostCsr& a, const Matrix& x, bool transpose, float beta,
                               const Matrix& y0) {
  const std::int64_t out_rows = transpose ? a.cols : a.rows, f = x.cols();
  std::vector<double> out(static_cast<std::size_t>(out_rows * f), 0.0);
  for (std::int64_t i = 0; i < a.rows; ++i) {
    for (std::int32_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
      const double v = a.val.empty() ? 1.0 : a.val[k];
      const std::int64_t dst = transpose ? a.col[k] : i, src = transpose ? i : a.col[k];
      for (std::int64_t j = 0; j < f; ++j) out[dst * f + j] += v * x(src, j);
    }
  }
  if (beta != 0.0f) {
    for (std::int64_t i = 0; i < out_rows * f; ++i) out[i] += beta * y0.host()[i];
  }
  return out;
}

class SpmmShapes : public ::testing::TestWithParam<std::tuple<int, int, int, bool, float>> {};

TEST_P(SpmmShapes, SpmmAndItsTransposeMatchNaiveLoops) {
  const auto [rows, cols, f, values, beta] = GetParam();
  const auto host = random_csr(rows, cols, 6, values, 11);
  const CsrMatrix a = host.to_device();
  {
    const Matrix x = random_matrix(cols, f, 4);
    Matrix y = random_matrix(rows, f, 5);
    const Matrix y0 = y.clone();
    if (beta == 0.0f) {
      for (float& v : y.host()) v = std::numeric_limits<float>::quiet_NaN();
    }
    kernels::spmm(*cpu_device(), a.view(), x.view(), beta, y.view());
    expect_near_all(y.host(), naive_spmm(host, x, false, beta, y0), kTol);
  }
  {
    const Matrix x = random_matrix(rows, f, 6);
    Matrix y = random_matrix(cols, f, 7);
    const Matrix y0 = y.clone();
    if (beta == 0.0f) {
      for (float& v : y.host()) v = std::numeric_limits<float>::quiet_NaN();
    }
    kernels::spmm_transpose(*cpu_device(), a.view(), x.view(), beta, y.view());
    expect_near_all(y.host(), naive_spmm(host, x, true, beta, y0), kTol);
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, SpmmShapes,
                         ::testing::Values(std::make_tuple(50, 40, 16, false, 0.0f),
                                           std::make_tuple(50, 40, 17, true, 0.0f),
                                           std::make_tuple(97, 130, 3, true, 1.0f),
                                           std::make_tuple(97, 130, 33, false, 0.5f),
                                           std::make_tuple(0, 10, 5, true, 0.0f),
                                           std::make_tuple(10, 0, 5, false, 0.0f),
                                           std::make_tuple(300, 300, 1, true, 0.0f)));

TEST(Spmm, RowsWithoutEntriesBecomeZeroOrKeepTheirBetaTerm) {
  const std::vector<std::int32_t> row_ptr{0, 0, 1, 1};
  const std::vector<LocalId> col{0};
  const CsrMatrix a(3, 1, row_ptr, col, {});
  const Matrix x = Matrix::from_host(1, 2, std::vector<float>{3.0f, 4.0f});
  Matrix y = Matrix::from_host(3, 2, std::vector<float>{1, 1, 1, 1, 1, 1});
  kernels::spmm(*cpu_device(), a.view(), x.view(), 2.0f, y.view());
  EXPECT_EQ(y.to_host(), (std::vector<float>{2, 2, 5, 6, 2, 2}));
}

}  // namespace
}  // namespace halognn
