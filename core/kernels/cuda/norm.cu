// GELU and layer normalisation on the current device's stream (the residual architecture).
// One thread per row for the per-row statistics (a row is at most a few thousand floats): the
// same operations in the same order as the reference, up to the library's erf and exp.
#include "core/kernels/cuda/common.cuh"

namespace halognn::kernels::cuda {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

__device__ __forceinline__ float normal_cdf(float x) {
  return 0.5f * (1.0f + erff(x * static_cast<float>(kInvSqrt2)));
}

}  // namespace

void gelu_forward(ConstDenseView x, DenseView y) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "gelu_forward: shapes differ");
  GNN_ASSERT(x.data != y.data || x.rows * x.cols == 0, "gelu_forward: y aliases x");
  const float* s = x.data;
  float* d = y.data;
  detail::for_each(detail::current_context(), x.rows * x.cols,
                   [=] __device__(std::int64_t i) { d[i] = s[i] * normal_cdf(s[i]); });
}

void gelu_backward(ConstDenseView x, ConstDenseView gy, DenseView gx) {
  GNN_ASSERT(x.rows == gy.rows && x.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "gelu_backward: shapes differ");
  const float* s = x.data;
  const float* g = gy.data;
  float* d = gx.data;
  detail::for_each(detail::current_context(), x.rows * x.cols, [=] __device__(std::int64_t i) {
    const float v = s[i];
    const float pdf = static_cast<float>(kInvSqrt2Pi) * expf(-0.5f * v * v);
    d[i] = g[i] * (normal_cdf(v) + v * pdf);
  });
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
    const float* r = s + i * f;
    double sum = 0.0;
    for (std::int64_t j = 0; j < f; ++j) sum += r[j];
    const double mean = sum / static_cast<double>(f);
    double sq = 0.0;
    for (std::int64_t j = 0; j < f; ++j) {
      const double c = r[j] - mean;
      sq += c * c;
    }
    const float mu = static_cast<float>(mean);
    const float rstd =
        static_cast<float>(1.0 / sqrt(sq / static_cast<double>(f) + static_cast<double>(eps)));
    stats[2 * i] = mu;
    stats[2 * i + 1] = rstd;
    float* out = o + i * f;
    for (std::int64_t j = 0; j < f; ++j) out[j] = (r[j] - mu) * rstd * gamma[j] + beta[j];
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
    const float* r = s + i * f;
    const float* gr = g + i * f;
    const float mu = stats[2 * i], rstd = stats[2 * i + 1];
    double sum_d = 0.0, sum_dx = 0.0;
    for (std::int64_t j = 0; j < f; ++j) {
      const float d = gr[j] * gamma[j];
      sum_d += d;
      sum_dx += static_cast<double>(d) * ((r[j] - mu) * rstd);
    }
    const float mean_d = static_cast<float>(sum_d / static_cast<double>(f));
    const float mean_dx = static_cast<float>(sum_dx / static_cast<double>(f));
    float* out = o + i * f;
    for (std::int64_t j = 0; j < f; ++j) {
      const float xh = (r[j] - mu) * rstd;
      const float v = rstd * (gr[j] * gamma[j] - mean_d - xh * mean_dx);
      out[j] = beta == 0.0f ? v : beta * out[j] + v;
    }
  });
}

}  // namespace halognn::kernels::cuda
