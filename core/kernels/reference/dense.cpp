// Dense GEMM through Eigen maps of the row-major views (Eigen parallelises the product with
// OpenMP itself).
#include <Eigen/Core>
#include <chrono>
#include <cstdio>

#include "core/kernels/reference/reference_kernels.hpp"

namespace halognn::kernels::reference {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMajor>;
using Map = Eigen::Map<RowMajor>;

template <typename A, typename B>
void product(float alpha, const A& a, const B& b, float beta, Map& y) {
  if (beta == 0.0f) {
    y.noalias() = alpha * (a * b);
  } else {
    if (beta != 1.0f) y *= beta;
    y.noalias() += alpha * (a * b);
  }
}

}  // namespace

void gemm(bool trans_a, bool trans_b, float alpha, ConstDenseView a, ConstDenseView b, float beta,
          DenseView y) {
  const std::int64_t m = trans_a ? a.cols : a.rows, k = trans_a ? a.rows : a.cols;
  const std::int64_t kb = trans_b ? b.cols : b.rows, n = trans_b ? b.rows : b.cols;
  GNN_ASSERT(k == kb && y.rows == m && y.cols == n, "gemm: shapes do not match (op(a) ", m, "x", k,
             ", op(b) ", kb, "x", n, ", y ", y.rows, "x", y.cols, ")");
  if (m == 0 || n == 0) return;
  Map ym(y.data, m, n);
  if (k == 0) {  // an empty sum: only the beta term remains
    if (beta == 0.0f)
      ym.setZero();
    else
      ym *= beta;
    return;
  }
  auto TMP_t0 = std::chrono::steady_clock::now();
  const ConstMap am(a.data, a.rows, a.cols), bm(b.data, b.rows, b.cols);
  if (!trans_a && !trans_b)
    product(alpha, am, bm, beta, ym);
  else if (!trans_a)
    product(alpha, am, bm.transpose(), beta, ym);
  else if (!trans_b)
    product(alpha, am.transpose(), bm, beta, ym);
  else
    product(alpha, am.transpose(), bm.transpose(), beta, ym);
  std::fprintf(stderr, "TMP gemm ta=%d tb=%d m=%ld n=%ld k=%ld %.1f ms\n", trans_a, trans_b, (long)m, (long)n, (long)k, std::chrono::duration<double>(std::chrono::steady_clock::now()-TMP_t0).count()*1e3);
}

}  // namespace halognn::kernels::reference
