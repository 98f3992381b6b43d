// GEMM through cuBLAS and SpMM through cuSPARSE's generic API, on the current device's stream.
#include "core/kernels/cuda/common.cuh"

namespace halognn::kernels::cuda {
namespace {

using detail::CudaContext;

/// y = beta * y over n floats (beta == 0 writes zeros, ignoring NaN in y).
void scale_or_zero(CudaContext& ctx, float beta, float* y, std::int64_t n) {
  if (n <= 0 || beta == 1.0f) return;
  if (beta == 0.0f) {
    GNN_CHECK_CUDA(cudaMemsetAsync(y, 0, static_cast<std::size_t>(n) * sizeof(float), ctx.stream));
    return;
  }
  detail::for_each(ctx, n, [=] __device__(std::int64_t i) { y[i] *= beta; });
}

/// Owns the cuSPARSE descriptors of one SpMM call.
struct SpmmDescriptors {
  cusparseConstSpMatDescr_t a = nullptr;
  cusparseConstDnMatDescr_t x = nullptr;
  cusparseDnMatDescr_t y = nullptr;
  ~SpmmDescriptors() {
    if (a) cusparseDestroySpMat(a);
    if (x) cusparseDestroyDnMat(x);
    if (y) cusparseDestroyDnMat(y);
  }
};

/// y = a * x + beta * y with a's values given explicitly (never null).
void csr_spmm(CudaContext& ctx, CsrView a, const float* values, ConstDenseView x, float beta,
              DenseView y) {
  // Descriptors are host-side structs (created in microseconds) and are built per call: caching
  // them by pointer would go stale when a buffer is freed and its address reused. The workspace,
  // the expensive part, is the context's grow-only scratch.
  SpmmDescriptors d;
  GNN_CHECK_CUSPARSE(cusparseCreateConstCsr(&d.a, a.rows, a.cols, a.nnz, a.row_ptr, a.col, values,
                                            CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                            CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  GNN_CHECK_CUSPARSE(cusparseCreateConstDnMat(&d.x, x.rows, x.cols, x.cols, x.data, CUDA_R_32F,
                                              CUSPARSE_ORDER_ROW));
  GNN_CHECK_CUSPARSE(
      cusparseCreateDnMat(&d.y, y.rows, y.cols, y.cols, y.data, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  const float alpha = 1.0f;
  // CSR_ALG2: row-major dense operands, deterministic (bit-wise reproducible) results.
  const cusparseSpMMAlg_t alg = CUSPARSE_SPMM_CSR_ALG2;
  std::size_t bytes = 0;
  GNN_CHECK_CUSPARSE(cusparseSpMM_bufferSize(ctx.cusparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                             CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, d.a, d.x,
                                             &beta, d.y, CUDA_R_32F, alg, &bytes));
  void* work = ctx.work.get(bytes, ctx.stream);
  GNN_CHECK_CUSPARSE(cusparseSpMM(ctx.cusparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                  CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, d.a, d.x, &beta, d.y,
                                  CUDA_R_32F, alg, work));
}

std::size_t align_up(std::size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

void gemm(bool trans_a, bool trans_b, float alpha, ConstDenseView a, ConstDenseView b, float beta,
          DenseView y) {
  const std::int64_t m = trans_a ? a.cols : a.rows, k = trans_a ? a.rows : a.cols;
  const std::int64_t kb = trans_b ? b.cols : b.rows, n = trans_b ? b.rows : b.cols;
  GNN_ASSERT(k == kb && y.rows == m && y.cols == n, "gemm: shapes do not match (op(a) ", m, "x", k,
             ", op(b) ", kb, "x", n, ", y ", y.rows, "x", y.cols, ")");
  if (m == 0 || n == 0) return;
  CudaContext& ctx = detail::current_context();
  if (k == 0) {  // an empty sum: only the beta term remains
    scale_or_zero(ctx, beta, y.data, m * n);
    return;
  }
  GNN_ASSERT(m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX, "gemm: dimension above 2^31");
  // cuBLAS is column-major, and a row-major matrix is its transpose read column-major. So compute
  // y^T = op(b)^T op(a)^T: the column-major operands are b's and a's storage as they are, with the
  // transposition flags of op(b) and op(a) carried over unchanged.
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  GNN_CHECK_CUBLAS(cublasSgemm(ctx.cublas, op_b, op_a, static_cast<int>(n), static_cast<int>(m),
                               static_cast<int>(k), &alpha, b.data, static_cast<int>(b.cols),
                               a.data, static_cast<int>(a.cols), &beta, y.data,
                               static_cast<int>(n)));
}

// The fused CPU kernels (linear, linear_grad, spmm_bias) are compositions here: cuBLAS and
// cuSPARSE do the products, the bias and column-sum kernels the rest (the same results up to
// float summation order).
void linear(ConstDenseView a1, ConstDenseView w1, ConstDenseView a2, ConstDenseView w2,
            const float* bias, DenseView y) {
  GNN_ASSERT(a1.cols == w1.rows && y.rows == a1.rows && y.cols == w1.cols,
             "linear: shapes do not match (a1 ", a1.rows, "x", a1.cols, ", w1 ", w1.rows, "x",
             w1.cols, ", y ", y.rows, "x", y.cols, ")");
  gemm(false, false, 1.0f, a1, w1, 0.0f, y);
  if (a2.data != nullptr) {
    GNN_ASSERT(a2.rows == a1.rows && a2.cols == w2.rows && w2.cols == w1.cols,
               "linear: the second product does not match (a2 ", a2.rows, "x", a2.cols, ", w2 ",
               w2.rows, "x", w2.cols, ")");
    gemm(false, false, 1.0f, a2, w2, 1.0f, y);
  }
  if (bias && y.rows > 0) add_row_vector(bias, y);
}

void linear_grad(ConstDenseView x, ConstDenseView gy, DenseView gw, float* gb) {
  GNN_ASSERT(x.rows == gy.rows && gw.rows == x.cols && gw.cols == gy.cols,
             "linear_grad: shapes do not match (x ", x.rows, "x", x.cols, ", gy ", gy.rows, "x",
             gy.cols, ", gw ", gw.rows, "x", gw.cols, ")");
  gemm(true, false, 1.0f, x, gy, 1.0f, gw);
  if (gb) column_sum(gy, 1.0f, gb);
}

void spmm_bias(CsrView a, ConstDenseView x, float beta, const float* bias, DenseView y) {
  spmm(a, x, beta, y);
  if (bias && y.rows > 0) add_row_vector(bias, y);
}

void spmm(CsrView a, ConstDenseView x, float beta, DenseView y) {
  GNN_ASSERT(x.rows == a.cols && y.rows == a.rows && y.cols == x.cols,
             "spmm: shapes do not match (a ", a.rows, "x", a.cols, ", x ", x.rows, "x", x.cols,
             ", y ", y.rows, "x", y.cols, ")");
  if (a.rows == 0 || x.cols == 0) return;
  CudaContext& ctx = detail::current_context();
  if (a.nnz == 0) {
    scale_or_zero(ctx, beta, y.data, y.rows * y.cols);
    return;
  }
  // beta == 0 must ignore NaN in y; zeroing first guarantees that whatever cuSPARSE does.
  if (beta == 0.0f) scale_or_zero(ctx, 0.0f, y.data, y.rows * y.cols);
  const float* values = a.val ? a.val : cuda_detail::ones(ctx, a.nnz);
  csr_spmm(ctx, a, values, x, beta, y);
}

void spmm_transpose(CsrView a, ConstDenseView x, float beta, DenseView y) {
  GNN_ASSERT(x.rows == a.rows && y.rows == a.cols && y.cols == x.cols,
             "spmm_transpose: shapes do not match (a ", a.rows, "x", a.cols, ", x ", x.rows, "x",
             x.cols, ", y ", y.rows, "x", y.cols, ")");
  if (a.cols == 0 || x.cols == 0) return;
  CudaContext& ctx = detail::current_context();
  if (a.nnz == 0 || a.rows == 0) {
    scale_or_zero(ctx, beta, y.data, y.rows * y.cols);
    return;
  }
  GNN_ASSERT(a.rows <= INT32_MAX && a.cols < INT32_MAX, "spmm_transpose: dimension above 2^31");
  // Transpose the structure once (CSR -> CSC of a is the CSR of a^T, with each transposed row's
  // entries in ascending source row) and run the deterministic non-transposed SpMM on it;
  // cuSPARSE's transposed SpMM is not bit-wise reproducible.
  const float* values = a.val ? a.val : cuda_detail::ones(ctx, a.nnz);
  const std::size_t ptr_bytes = align_up(static_cast<std::size_t>(a.cols + 1) * sizeof(std::int32_t));
  const std::size_t idx_bytes = align_up(static_cast<std::size_t>(a.nnz) * sizeof(std::int32_t));
  const std::size_t val_bytes = align_up(static_cast<std::size_t>(a.nnz) * sizeof(float));
  auto* base = static_cast<char*>(ctx.aux.get(ptr_bytes + idx_bytes + val_bytes, ctx.stream));
  auto* t_ptr = reinterpret_cast<std::int32_t*>(base);
  auto* t_col = reinterpret_cast<std::int32_t*>(base + ptr_bytes);
  auto* t_val = reinterpret_cast<float*>(base + ptr_bytes + idx_bytes);
  std::size_t bytes = 0;
  GNN_CHECK_CUSPARSE(cusparseCsr2cscEx2_bufferSize(
      ctx.cusparse, static_cast<int>(a.rows), static_cast<int>(a.cols), static_cast<int>(a.nnz),
      values, a.row_ptr, a.col, t_val, t_ptr, t_col, CUDA_R_32F, CUSPARSE_ACTION_NUMERIC,
      CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, &bytes));
  void* work = ctx.work.get(bytes, ctx.stream);
  GNN_CHECK_CUSPARSE(cusparseCsr2cscEx2(
      ctx.cusparse, static_cast<int>(a.rows), static_cast<int>(a.cols), static_cast<int>(a.nnz),
      values, a.row_ptr, a.col, t_val, t_ptr, t_col, CUDA_R_32F, CUSPARSE_ACTION_NUMERIC,
      CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, work));
  if (beta == 0.0f) scale_or_zero(ctx, 0.0f, y.data, y.rows * y.cols);
  const CsrView t{a.cols, a.rows, a.nnz, t_ptr, t_col, t_val};
  csr_spmm(ctx, t, t_val, x, beta, y);
}

}  // namespace halognn::kernels::cuda

namespace halognn::cuda_detail {

const float* ones(CudaContext& ctx, std::int64_t n) {
  auto* p = static_cast<float*>(ctx.ones.get(static_cast<std::size_t>(n) * sizeof(float), ctx.stream));
  if (static_cast<std::int64_t>(ctx.ones_count) < n) {
    // The scratch may have moved: refill all of it.
    kernels::cuda::detail::for_each(ctx, n, [=] __device__(std::int64_t i) { p[i] = 1.0f; });
    ctx.ones_count = static_cast<std::size_t>(n);
  }
  return p;
}

}  // namespace halognn::cuda_detail
