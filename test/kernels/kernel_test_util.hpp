#pragma once
// Shared helpers for the kernel tests: seeded random inputs and naive double-precision checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/buffer.hpp"
#include "core/rng.hpp"

namespace halognn::test {

/// A rows x cols matrix with entries uniform in [-1, 1), seeded by `stream`.
inline Matrix random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t stream) {
  Matrix m(rows, cols);
  const CounterRng rng(RngKey{42, RngPurpose::test, stream, 0});
  auto h = m.host();
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = 2.0f * rng.uniform(i, 0) - 1.0f;
  return m;
}

/// A random CSR matrix where row i has (hash % (max_per_row + 1)) entries, so some rows are
/// empty; columns are sorted and distinct. Values in [0.5, 1.5) when `with_values`.
struct HostCsr {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::int32_t> row_ptr;
  std::vector<std::int32_t> col;
  std::vector<float> val;
  CsrMatrix to_device() const { return CsrMatrix(rows, cols, row_ptr, col, val); }
};

inline HostCsr random_csr(std::int64_t rows, std::int64_t cols, int max_per_row, bool with_values,
                          std::uint64_t stream) {
  HostCsr a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.push_back(0);
  const CounterRng rng(RngKey{7, RngPurpose::test, stream, 1});
  for (std::int64_t i = 0; i < rows; ++i) {
    const auto n = cols == 0 ? 0u : rng.word(static_cast<std::uint64_t>(i), 0) % (max_per_row + 1);
    std::vector<bool> used(static_cast<std::size_t>(cols), false);
    for (std::uint32_t t = 0; t < n; ++t) {
      used[rng.word(static_cast<std::uint64_t>(i), t + 1) % cols] = true;
    }
    for (std::int64_t c = 0; c < cols; ++c) {
      if (!used[static_cast<std::size_t>(c)]) continue;
      a.col.push_back(static_cast<std::int32_t>(c));
      if (with_values) a.val.push_back(0.5f + rng.uniform(static_cast<std::uint64_t>(i), 100 + c));
    }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col.size()));
  }
  return a;
}

/// Expects |got - want| <= tol * (1 + |want|) elementwise.
inline void expect_near_all(std::span<const float> got, const std::vector<double>& want,
                            double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << "at flat index " << i;
  }
}

}  // namespace halognn::test
