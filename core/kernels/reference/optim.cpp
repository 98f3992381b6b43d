// Optimiser steps, elementwise over a flat parameter array.
#include <cmath>

#include "core/kernels/reference/reference_kernels.hpp"

namespace halognn::kernels::reference {

void adam_step(std::int64_t n, float* w, const float* g, float* m, float* v, const AdamParams& p,
               std::int64_t step) {
  GNN_ASSERT(step >= 1, "adam_step: steps count from 1, got ", step);
  const double t = static_cast<double>(step);
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(p.beta1), t));
  const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(p.beta2), t));
  const float l2 = p.decoupled ? 0.0f : p.weight_decay;
  const float shrink = p.decoupled ? 1.0f - p.lr * p.weight_decay : 1.0f;
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float gi = g[i] + l2 * w[i];
    m[i] = p.beta1 * m[i] + (1.0f - p.beta1) * gi;
    v[i] = p.beta2 * v[i] + (1.0f - p.beta2) * gi * gi;
    const float m_hat = m[i] / bc1, v_hat = v[i] / bc2;
    w[i] = shrink * w[i] - p.lr * m_hat / (std::sqrt(v_hat) + p.eps);
  }
}

void sgd_step(std::int64_t n, float* w, const float* g, float* mom, float lr, float momentum,
              float weight_decay) {
  if (mom == nullptr) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) w[i] -= lr * (g[i] + weight_decay * w[i]);
    return;
  }
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    mom[i] = momentum * mom[i] + g[i] + weight_decay * w[i];
    w[i] -= lr * mom[i];
  }
}

}  // namespace halognn::kernels::reference
