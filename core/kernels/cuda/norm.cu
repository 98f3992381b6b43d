// GELU and layer normalisation on the current device's stream (the residual architecture). The
// arithmetic is core/kernels/norm_rows.hpp's, shared with the reference; one thread per row for
// the per-row statistics (a row is at most a few thousand floats).
#include "core/kernels/cuda/common.cuh"
#include "core/kernels/norm_rows.hpp"

namespace halognn::kernels::cuda {

void gelu_forward(ConstDenseView x, DenseView y) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "gelu_forward: shapes differ");
  GNN_ASSERT(x.data != y.data || x.rows * x.cols == 0, "gelu_forward: y aliases x");
  const float* s = x.data;
  float* d = y.data;
  detail::for_each(detail::current_context(), x.rows * x.cols,
                   [=] __device__(std::int64_t i) { d[i] = norm::gelu(s[i]); });
}

void gelu_backward(ConstDenseView x, ConstDenseView gy, DenseView gx) {
  GNN_ASSERT(x.rows == gy.rows && x.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "gelu_backward: shapes differ");
  const float* s = x.data;
  const float* g = gy.data;
  float* d = gx.data;
  detail::for_each(detail::current_context(), x.rows * x.cols,
                   [=] __device__(std::int64_t i) { d[i] = g[i] * norm::gelu_derivative(s[i]); });
}

void layer_norm_forward(ConstDenseView x, const float* gamma, const float* beta, float eps,
                        DenseView y, float* stats) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "layer_norm_forward: shapes differ");
  GNN_ASSERT(x.data != y.data || x.rows * x.cols == 0, "layer_norm_forward: y aliases x");
  const std::int64_t f = x.cols;
  if (f == 0) return;
  const float* s = x.data;
  float* o = y.data;
  detail::for_each(detail::current_context(), x.rows, [=] __device__(std::int64_t i) {
    norm::layer_norm_row(s + i * f, f, gamma, beta, eps, o + i * f, stats + 2 * i);
  });
}

void layer_norm_backward(ConstDenseView x, const float* stats, const float* gamma,
                         ConstDenseView gy, float beta, DenseView gx, float* ggamma, float* gbeta) {
  GNN_ASSERT(x.rows == gy.rows && x.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "layer_norm_backward: shapes differ");
  const std::int64_t f = x.cols;
  if (f == 0) return;
  const float* s = x.data;
  const float* g = gy.data;
  float* o = gx.data;
  detail::CudaContext& ctx = detail::current_context();
  // The parameter gradients first: gx may alias gy.
  detail::column_reduce(
      ctx, x.rows, f,
      [=] __device__(std::int64_t i, std::int64_t j) {
        return static_cast<double>(g[i * f + j]) *
               static_cast<double>((s[i * f + j] - stats[2 * i]) * stats[2 * i + 1]);
      },
      [=] __device__(std::int64_t j, double sum) { ggamma[j] += static_cast<float>(sum); });
  detail::column_reduce(
      ctx, x.rows, f,
      [=] __device__(std::int64_t i, std::int64_t j) { return static_cast<double>(g[i * f + j]); },
      [=] __device__(std::int64_t j, double sum) { gbeta[j] += static_cast<float>(sum); });
  detail::for_each(ctx, x.rows, [=] __device__(std::int64_t i) {
    norm::layer_norm_row_backward(s + i * f, stats + 2 * i, gamma, g + i * f, f, beta, o + i * f);
  });
}

}  // namespace halognn::kernels::cuda
