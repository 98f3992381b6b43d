// Losses, prediction counts and optimiser steps on the current device's stream. Each loss is one
// thread per row (the class count is small), summed in double by a deterministic reduction.
#include <cmath>
#include <limits>

#include "core/kernels/cuda/common.cuh"

namespace halognn::kernels::cuda {
namespace {

using detail::CudaContext;

/// Plain counters for the device reductions (no default member initialisers, so they can live in
/// shared memory).
struct Pair64 {
  long long a, b;
};
__host__ __device__ inline Pair64 operator+(Pair64 x, Pair64 y) { return {x.a + y.a, x.b + y.b}; }
struct Triple64 {
  long long a, b, c;
};
__host__ __device__ inline Triple64 operator+(Triple64 x, Triple64 y) {
  return {x.a + y.a, x.b + y.b, x.c + y.c};
}

__device__ inline bool selected(const std::uint8_t* mask, std::int64_t i) {
  return mask == nullptr || mask[i] != 0;
}

}  // namespace

double softmax_cross_entropy(ConstDenseView logits, const std::int32_t* labels,
                             const std::uint8_t* mask, float scale, DenseView grad) {
  GNN_ASSERT(grad.rows == logits.rows && grad.cols == logits.cols,
             "softmax_cross_entropy: grad shape differs from logits");
  CudaContext& ctx = detail::current_context();
  const std::int64_t c = logits.cols;
  const float* xs = logits.data;
  float* gs = grad.data;
  // The smallest row with a label >= c, reported after the sum (no exceptions on the device).
  auto* bad = static_cast<unsigned long long*>(ctx.readback.get(sizeof(unsigned long long), ctx.stream));
  GNN_CHECK_CUDA(cudaMemsetAsync(bad, 0xFF, sizeof(unsigned long long), ctx.stream));
  const double total = detail::sum_over<double>(ctx, logits.rows, [=] __device__(std::int64_t i) {
    float* g = gs + i * c;
    if (!selected(mask, i) || labels[i] < 0 || labels[i] >= c) {
      if (labels[i] >= c && selected(mask, i)) atomicMin(bad, static_cast<unsigned long long>(i));
      for (std::int64_t j = 0; j < c; ++j) g[j] = 0.0f;
      return 0.0;
    }
    const float* x = xs + i * c;
    float m = x[0];
    for (std::int64_t j = 1; j < c; ++j) m = fmaxf(m, x[j]);
    double sum = 0.0;
    for (std::int64_t j = 0; j < c; ++j) sum += exp(static_cast<double>(x[j] - m));
    const double log_sum = log(sum);
    for (std::int64_t j = 0; j < c; ++j)
      g[j] = scale * static_cast<float>(exp(static_cast<double>(x[j] - m) - log_sum));
    g[labels[i]] -= scale;
    return log_sum - static_cast<double>(x[labels[i]] - m);
  });
  unsigned long long bad_row = 0;
  GNN_CHECK_CUDA(cudaMemcpyAsync(&bad_row, bad, sizeof bad_row, cudaMemcpyDeviceToHost, ctx.stream));
  GNN_CHECK_CUDA(cudaStreamSynchronize(ctx.stream));
  GNN_ASSERT(bad_row == std::numeric_limits<unsigned long long>::max(),
             "softmax_cross_entropy: label of row ", bad_row,
             " is not below the number of classes ", c);
  return total;
}

double sigmoid_bce(ConstDenseView logits, const std::uint8_t* targets, const std::uint8_t* mask,
                   float scale, DenseView grad) {
  GNN_ASSERT(grad.rows == logits.rows && grad.cols == logits.cols,
             "sigmoid_bce: grad shape differs from logits");
  CudaContext& ctx = detail::current_context();
  const std::int64_t c = logits.cols;
  const float* xs = logits.data;
  float* gs = grad.data;
  return detail::sum_over<double>(ctx, logits.rows, [=] __device__(std::int64_t i) {
    float* g = gs + i * c;
    if (!selected(mask, i)) {
      for (std::int64_t j = 0; j < c; ++j) g[j] = 0.0f;
      return 0.0;
    }
    const float* x = xs + i * c;
    const std::uint8_t* t = targets + i * c;
    double row = 0.0;
    for (std::int64_t j = 0; j < c; ++j) {
      const double z = x[j];
      const double y = t[j] ? 1.0 : 0.0;
      const double e = exp(-fabs(z));
      // max(z,0) - z*y + log(1 + exp(-|z|)): never overflows, and log1p keeps small terms.
      row += fmax(z, 0.0) - z * y + log1p(e);
      const double sig = z >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
      g[j] = scale * static_cast<float>(sig - y);
    }
    return row;
  });
}

AccuracyCounts count_correct(ConstDenseView logits, const std::int32_t* labels,
                             const std::uint8_t* mask) {
  const std::int64_t c = logits.cols;
  if (c == 0) return {};
  const float* xs = logits.data;
  const Pair64 r = detail::sum_over<Pair64>(detail::current_context(), logits.rows,
                                            [=] __device__(std::int64_t i) -> Pair64 {
    if (!selected(mask, i) || labels[i] < 0) return Pair64{0, 0};
    const float* x = xs + i * c;
    std::int64_t best = 0;
    for (std::int64_t j = 1; j < c; ++j)
      if (x[j] > x[best]) best = j;  // first maximum on ties
    return Pair64{best == labels[i] ? 1 : 0, 1};
  });
  return {r.a, r.b};
}

MultilabelCounts count_multilabel(ConstDenseView logits, const std::uint8_t* targets,
                                  const std::uint8_t* mask) {
  const std::int64_t c = logits.cols;
  const float* xs = logits.data;
  const Triple64 r = detail::sum_over<Triple64>(detail::current_context(), logits.rows,
                                                [=] __device__(std::int64_t i) -> Triple64 {
    Triple64 acc{0, 0, 0};
    if (!selected(mask, i)) return acc;
    for (std::int64_t j = 0; j < c; ++j) {
      const bool pred = xs[i * c + j] > 0.0f, truth = targets[i * c + j] != 0;
      acc.a += pred && truth;
      acc.b += pred && !truth;
      acc.c += !pred && truth;
    }
    return acc;
  });
  return {r.a, r.b, r.c};
}

void adam_step(std::int64_t n, float* w, const float* g, float* m, float* v, const AdamParams& p,
               std::int64_t step) {
  GNN_ASSERT(step >= 1, "adam_step: steps count from 1, got ", step);
  // Bias corrections on the host, exactly as the reference computes them.
  const double t = static_cast<double>(step);
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(p.beta1), t));
  const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(p.beta2), t));
  const float l2 = p.decoupled ? 0.0f : p.weight_decay;
  const float shrink = p.decoupled ? 1.0f - p.lr * p.weight_decay : 1.0f;
  const float beta1 = p.beta1, beta2 = p.beta2, lr = p.lr, eps = p.eps;
  detail::for_each(detail::current_context(), n, [=] __device__(std::int64_t i) {
    const float gi = g[i] + l2 * w[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    const float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float m_hat = mi / bc1, v_hat = vi / bc2;
    w[i] = shrink * w[i] - lr * m_hat / (sqrtf(v_hat) + eps);
  });
}

void sgd_step(std::int64_t n, float* w, const float* g, float* mom, float lr, float momentum,
              float weight_decay) {
  CudaContext& ctx = detail::current_context();
  if (mom == nullptr) {
    detail::for_each(ctx, n, [=] __device__(std::int64_t i) { w[i] -= lr * (g[i] + weight_decay * w[i]); });
    return;
  }
  detail::for_each(ctx, n, [=] __device__(std::int64_t i) {
    mom[i] = momentum * mom[i] + g[i] + weight_decay * w[i];
    w[i] -= lr * mom[i];
  });
}

}  // namespace halognn::kernels::cuda
