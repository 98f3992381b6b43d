// GELU and layer normalisation (the residual architecture's elementwise and per-row kernels).
#include <omp.h>

#include <cmath>
#include <vector>

#include "core/kernels/reference/reference_kernels.hpp"

namespace halognn::kernels::reference {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

/// Φ(x), the standard normal CDF, in float through erf.
inline float normal_cdf(float x) {
  return 0.5f * (1.0f + std::erf(x * static_cast<float>(kInvSqrt2)));
}

}  // namespace

void gelu_forward(ConstDenseView x, DenseView y) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "gelu_forward: shapes differ");
  GNN_ASSERT(x.data != y.data || x.rows * x.cols == 0, "gelu_forward: y aliases x");
  const std::int64_t n = x.rows * x.cols;
  const float* s = x.data;
  float* d = y.data;
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) d[i] = s[i] * normal_cdf(s[i]);
}

void gelu_backward(ConstDenseView x, ConstDenseView gy, DenseView gx) {
  GNN_ASSERT(x.rows == gy.rows && x.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "gelu_backward: shapes differ");
  const std::int64_t n = x.rows * x.cols;
  const float* s = x.data;
  const float* g = gy.data;  // may alias gx
  float* d = gx.data;
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = s[i];
    const float pdf = static_cast<float>(kInvSqrt2Pi) * std::exp(-0.5f * v * v);
    d[i] = g[i] * (normal_cdf(v) + v * pdf);
  }
}

void layer_norm_forward(ConstDenseView x, const float* gamma, const float* beta, float eps,
                        DenseView y, float* stats) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "layer_norm_forward: shapes differ");
  GNN_ASSERT(x.data != y.data || x.rows * x.cols == 0, "layer_norm_forward: y aliases x");
  const std::int64_t f = x.cols;
  if (f == 0) return;
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < x.rows; ++i) {
    const float* r = x.row(i);
    double sum = 0.0;
    for (std::int64_t j = 0; j < f; ++j) sum += r[j];
    const double mean = sum / static_cast<double>(f);
    double sq = 0.0;
    for (std::int64_t j = 0; j < f; ++j) {
      const double c = r[j] - mean;
      sq += c * c;
    }
    const double var = sq / static_cast<double>(f);
    const float mu = static_cast<float>(mean);
    const float rstd = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
    stats[2 * i] = mu;
    stats[2 * i + 1] = rstd;
    float* o = y.row(i);
#pragma omp simd
    for (std::int64_t j = 0; j < f; ++j) o[j] = (r[j] - mu) * rstd * gamma[j] + beta[j];
  }
}

void layer_norm_backward(ConstDenseView x, const float* stats, const float* gamma,
                         ConstDenseView gy, float beta, DenseView gx, float* ggamma, float* gbeta) {
  GNN_ASSERT(x.rows == gy.rows && x.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "layer_norm_backward: shapes differ");
  const std::int64_t f = x.cols;
  if (f == 0) return;
  // The parameter gradients: thread-private partial sums in double, combined in thread order
  // (deterministic for a fixed thread count), as column_sum does.
  const int threads = omp_get_max_threads();
  std::vector<double> partial(static_cast<std::size_t>(2 * threads * f), 0.0);
#pragma omp parallel num_threads(threads)
  {
    double* acc_gamma = partial.data() + static_cast<std::int64_t>(omp_get_thread_num()) * 2 * f;
    double* acc_beta = acc_gamma + f;
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < x.rows; ++i) {
      const float* r = x.row(i);
      const float* g = gy.row(i);
      const float mu = stats[2 * i], rstd = stats[2 * i + 1];
      double sum_d = 0.0, sum_dx = 0.0;
      for (std::int64_t j = 0; j < f; ++j) {
        const float xh = (r[j] - mu) * rstd;
        const float d = g[j] * gamma[j];
        sum_d += d;
        sum_dx += static_cast<double>(d) * xh;
        acc_gamma[j] += static_cast<double>(g[j]) * xh;
        acc_beta[j] += g[j];
      }
      const float mean_d = static_cast<float>(sum_d / static_cast<double>(f));
      const float mean_dx = static_cast<float>(sum_dx / static_cast<double>(f));
      float* o = gx.row(i);  // may alias gy only when beta == 0 and row i is read above
      for (std::int64_t j = 0; j < f; ++j) {
        const float xh = (r[j] - mu) * rstd;
        const float v = rstd * (g[j] * gamma[j] - mean_d - xh * mean_dx);
        o[j] = beta == 0.0f ? v : beta * o[j] + v;
      }
    }
  }
  for (std::int64_t j = 0; j < f; ++j) {
    double sg = 0.0, sb = 0.0;
    for (int t = 0; t < threads; ++t) {
      sg += partial[static_cast<std::size_t>(2 * t * f + j)];
      sb += partial[static_cast<std::size_t>(2 * t * f + f + j)];
    }
    ggamma[j] += static_cast<float>(sg);
    gbeta[j] += static_cast<float>(sb);
  }
}

}  // namespace halognn::kernels::reference
