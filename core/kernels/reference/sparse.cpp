// Sparse-dense products over CSR: one output row per task, the inner loop over the feature width
// vectorised.
#include <vector>

#include "core/kernels/reference/reference_kernels.hpp"

namespace halognn::kernels::reference {
namespace {

/// Rows per dynamic chunk: small enough to balance power-law degrees, large enough to amortise
/// the scheduler.
constexpr int kRowChunk = 32;

template <bool kHasValues>
void spmm_rows(CsrView a, ConstDenseView x, float beta, DenseView y) {
  const std::int64_t f = x.cols;
#pragma omp parallel for schedule(dynamic, kRowChunk)
  for (std::int64_t i = 0; i < a.rows; ++i) {
    float* __restrict out = y.row(i);
    if (beta == 0.0f) {
#pragma omp simd
      for (std::int64_t j = 0; j < f; ++j) out[j] = 0.0f;
    } else if (beta != 1.0f) {
#pragma omp simd
      for (std::int64_t j = 0; j < f; ++j) out[j] *= beta;
    }
    for (std::int32_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
      const float* __restrict in = x.row(a.col[k]);
      if constexpr (kHasValues) {
        const float v = a.val[k];
#pragma omp simd
        for (std::int64_t j = 0; j < f; ++j) out[j] += v * in[j];
      } else {
#pragma omp simd
        for (std::int64_t j = 0; j < f; ++j) out[j] += in[j];
      }
    }
  }
}

}  // namespace

void spmm(CsrView a, ConstDenseView x, float beta, DenseView y) {
  GNN_ASSERT(x.rows == a.cols && y.rows == a.rows && y.cols == x.cols,
             "spmm: shapes do not match (a ", a.rows, "x", a.cols, ", x ", x.rows, "x", x.cols,
             ", y ", y.rows, "x", y.cols, ")");
  if (a.rows == 0 || x.cols == 0) return;
  if (a.val)
    spmm_rows<true>(a, x, beta, y);
  else
    spmm_rows<false>(a, x, beta, y);
}

void spmm_transpose(CsrView a, ConstDenseView x, float beta, DenseView y) {
  GNN_ASSERT(x.rows == a.rows && y.rows == a.cols && y.cols == x.cols,
             "spmm_transpose: shapes do not match (a ", a.rows, "x", a.cols, ", x ", x.rows, "x",
             x.cols, ", y ", y.rows, "x", y.cols, ")");
  if (a.cols == 0 || x.cols == 0) return;
  // Build the transposed CSR (counting sort by column; entries of a transposed row stay in
  // ascending source-row order), then run the row-parallel SpMM on it: race-free and
  // deterministic.
  const auto cols = static_cast<std::size_t>(a.cols);
  std::vector<std::int32_t> t_ptr(cols + 1, 0);
  for (std::int64_t k = 0; k < a.nnz; ++k) ++t_ptr[static_cast<std::size_t>(a.col[k]) + 1];
  for (std::size_t c = 0; c < cols; ++c) t_ptr[c + 1] += t_ptr[c];
  std::vector<std::int32_t> fill_pos(t_ptr.begin(), t_ptr.end() - 1);
  std::vector<LocalId> t_col(static_cast<std::size_t>(a.nnz));
  std::vector<float> t_val(a.val ? static_cast<std::size_t>(a.nnz) : 0);
  for (std::int64_t i = 0; i < a.rows; ++i) {
    for (std::int32_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
      const std::int32_t pos = fill_pos[static_cast<std::size_t>(a.col[k])]++;
      t_col[static_cast<std::size_t>(pos)] = static_cast<LocalId>(i);
      if (a.val) t_val[static_cast<std::size_t>(pos)] = a.val[k];
    }
  }
  const CsrView t{a.cols,       a.rows,       a.nnz,
                  t_ptr.data(), t_col.data(), a.val ? t_val.data() : nullptr};
  spmm(t, x, beta, y);
}

}  // namespace halognn::kernels::reference
