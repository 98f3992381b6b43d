// The kernels of the sparse layer-0 input: dense -> CSR conversion and dropout on CSR values,
// which must draw exactly the dense dropout's mask.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/kernels/kernels.hpp"
#include "test/kernels/kernel_test_util.hpp"

namespace halognn {
namespace {

const Device& cpu() { return *cpu_device(); }

/// A rows x cols matrix with about `density` of its entries non-zero (uniform in [-1, 1) where
/// kept), every fifth row empty.
Matrix sparse_matrix(std::int64_t rows, std::int64_t cols, float density, std::uint64_t stream) {
  Matrix m = test::random_matrix(rows, cols, stream);
  const CounterRng keep(RngKey{1, RngPurpose::test, stream, 2});
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      if (i % 5 == 4 || keep.uniform(static_cast<std::uint64_t>(i), j) >= density) m(i, j) = 0.0f;
    }
  }
  return m;
}

/// The dense matrix of a CSR with values `val`.
Matrix densify(const CsrMatrix& a, const std::vector<float>& val) {
  Matrix m(a.rows(), a.cols());
  const auto row_ptr = a.row_ptr().to_host();
  const auto col = a.col().to_host();
  for (std::int64_t i = 0; i < a.rows(); ++i) {
    for (std::int32_t k = row_ptr[i]; k < row_ptr[i + 1]; ++k) m(i, col[k]) = val[k];
  }
  return m;
}

TEST(DenseToCsr, StoresExactlyTheNonZerosInRowMajorOrder) {
  const Matrix x = sparse_matrix(57, 23, 0.1f, 1);
  const CsrMatrix a = kernels::dense_to_csr(cpu_device(), x.view());
  ASSERT_EQ(a.rows(), 57);
  ASSERT_EQ(a.cols(), 23);
  std::int64_t nnz = 0;
  for (float v : x.host()) nnz += v != 0.0f;
  ASSERT_EQ(a.nnz(), nnz);
  ASSERT_GT(nnz, 0);
  const auto row_ptr = a.row_ptr().to_host();
  const auto col = a.col().to_host();
  for (std::int64_t i = 0; i < a.rows(); ++i) {
    for (std::int32_t k = row_ptr[i] + 1; k < row_ptr[i + 1]; ++k) EXPECT_LT(col[k - 1], col[k]);
  }
  EXPECT_EQ(densify(a, a.val().to_host()).to_host(), x.to_host());
}

TEST(DenseToCsr, HandlesAllZeroAndEmptyMatrices) {
  const Matrix zeros(4, 6);
  const CsrMatrix a = kernels::dense_to_csr(cpu_device(), zeros.view());
  EXPECT_EQ(a.nnz(), 0);
  EXPECT_EQ(a.row_ptr().to_host(), std::vector<std::int32_t>(5, 0));
  const Matrix empty(0, 6);
  EXPECT_EQ(kernels::dense_to_csr(cpu_device(), empty.view()).rows(), 0);
}

class DropoutCsr : public ::testing::TestWithParam<float> {};

TEST_P(DropoutCsr, DrawsTheDenseDropoutMaskAtTheStoredEntries) {
  const float p = GetParam();
  const Matrix x = sparse_matrix(211, 37, 0.15f, 2);
  std::vector<GlobalId> ids(211);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = 5000 - 7 * static_cast<GlobalId>(i);
  const RngKey key{9, RngPurpose::dropout, 4, 0};
  Matrix dense(211, 37);
  kernels::dropout_forward(cpu(), key, ids.data(), p, x.view(), dense.view());
  const CsrMatrix a = kernels::dense_to_csr(cpu_device(), x.view());
  std::vector<float> val(static_cast<std::size_t>(a.nnz()));
  kernels::dropout_csr(cpu(), key, ids.data(), p, a.view(), val.data());
  // Bitwise: the same uniform number and the same product per element.
  EXPECT_EQ(densify(a, val).to_host(), dense.to_host());
  // In place over the values gives the same.
  std::vector<float> in_place = a.val().to_host();
  CsrView v = a.view();
  v.val = in_place.data();
  kernels::dropout_csr(cpu(), key, ids.data(), p, v, in_place.data());
  EXPECT_EQ(in_place, val);
  if (p > 0.0f && p < 1.0f) {
    std::int64_t kept = 0;
    for (float f : val) kept += f != 0.0f;
    // nnz Bernoulli(1-p) draws: within 6 standard deviations of the mean.
    const double n = static_cast<double>(a.nnz()), sd = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(static_cast<double>(kept), n * (1 - p), 6 * sd);
  }
}

INSTANTIATE_TEST_SUITE_P(Probabilities, DropoutCsr, ::testing::Values(0.0f, 0.3f, 0.5f, 1.0f));

TEST(DropoutCsrStructureOnly, TreatsMissingValuesAsOnes) {
  const Matrix x = sparse_matrix(40, 13, 0.3f, 3);
  Matrix ones = x.clone();
  for (float& v : ones.host()) v = v != 0.0f ? 1.0f : 0.0f;
  std::vector<GlobalId> ids(40);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<GlobalId>(i);
  const RngKey key{2, RngPurpose::dropout, 0, 0};
  Matrix dense(40, 13);
  kernels::dropout_forward(cpu(), key, ids.data(), 0.4f, ones.view(), dense.view());
  const CsrMatrix a = kernels::dense_to_csr(cpu_device(), x.view());
  CsrView structure = a.view();
  structure.val = nullptr;
  std::vector<float> val(static_cast<std::size_t>(a.nnz()));
  kernels::dropout_csr(cpu(), key, ids.data(), 0.4f, structure, val.data());
  EXPECT_EQ(densify(a, val).to_host(), dense.to_host());
}

}  // namespace
}  // namespace halognn
