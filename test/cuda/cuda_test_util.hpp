#pragma once
// Helpers for the CUDA tests: the GPU fixture (skips without a GPU), uploads and comparisons.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "core/buffer.hpp"
#include "core/device.hpp"
#include "test/kernels/kernel_test_util.hpp"

namespace halognn::test {

/// Every CUDA test derives from this: it skips when no GPU is visible (this includes a build
/// machine without a driver), and gives the CPU and GPU devices.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
    gpu = cuda_device(0);
  }
  Matrix up(const Matrix& m) const { return m.clone(gpu); }
  template <typename T>
  Buffer<T> up(const std::vector<T>& v) const {
    return Buffer<T>::from_host(std::span<const T>(v), gpu);
  }
  CsrMatrix up(const HostCsr& a) const {
    return CsrMatrix(a.rows, a.cols, a.row_ptr, a.col, a.val, gpu);
  }

  DevicePtr cpu = cpu_device();
  DevicePtr gpu;
};

/// Expects |got - want| <= tol * (1 + |want|) elementwise (a relative bound for large values,
/// an absolute one near zero).
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol,
                         const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::fabs(want[i])))
        << what << ": flat index " << i;
}

/// Expects bit-for-bit equality (NaN never appears in these tests).
inline void expect_equal(const std::vector<float>& got, const std::vector<float>& want,
                         const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << what << ": flat index " << i;
}

/// The transpose of a CSR structure and, for each transposed entry, its index in the original
/// (what gat_aggregate_backward takes).
struct HostTranspose {
  HostCsr t;
  std::vector<std::int32_t> t_to_a;
};

inline HostTranspose transpose(const HostCsr& a) {
  HostTranspose r;
  r.t.rows = a.cols;
  r.t.cols = a.rows;
  r.t.row_ptr.assign(static_cast<std::size_t>(a.cols) + 1, 0);
  for (std::int32_t c : a.col) ++r.t.row_ptr[static_cast<std::size_t>(c) + 1];
  for (std::int64_t c = 0; c < a.cols; ++c) r.t.row_ptr[c + 1] += r.t.row_ptr[c];
  std::vector<std::int32_t> pos(r.t.row_ptr.begin(), r.t.row_ptr.end() - 1);
  r.t.col.resize(a.col.size());
  r.t_to_a.resize(a.col.size());
  for (std::int64_t i = 0; i < a.rows; ++i)
    for (std::int32_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
      const std::int32_t p = pos[static_cast<std::size_t>(a.col[k])]++;
      r.t.col[p] = static_cast<std::int32_t>(i);
      r.t_to_a[p] = k;
    }
  return r;
}

}  // namespace halognn::test
