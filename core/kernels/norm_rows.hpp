#pragma once
/// @file norm_rows.hpp
/// The arithmetic of one layer-normalised row, written once for both backends (reference/norm.cpp
/// and cuda/norm.cu call it per row), so the CPU and the GPU compute the same expressions in the
/// same order; and the GPU's GELU through erff and expf (the CPU's is reference/normal_math.hpp's,
/// per instruction set without libm).
#include <cmath>
#include <cstdint>

#include "core/rng.hpp"  // GNN_HD

namespace halognn::kernels::norm {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

/// Φ(x), the standard normal CDF, in float through erf.
GNN_HD float normal_cdf(float x) { return 0.5f * (1.0f + erff(x * static_cast<float>(kInvSqrt2))); }

/// GELU(x) = x Φ(x).
GNN_HD float gelu(float x) { return x * normal_cdf(x); }

/// GELU'(x) = Φ(x) + x φ(x).
GNN_HD float gelu_derivative(float x) {
  return normal_cdf(x) + x * static_cast<float>(kInvSqrt2Pi) * expf(-0.5f * x * x);
}

/// Lanes of the layer norm's double sums: element j of a row adds into lane j mod kNormLanes in
/// ascending j, and the lanes are added as a fixed tree (sum_norm_lanes), on every backend and
/// instruction set (the CPU's loops vectorise at any width over these independent lanes).
constexpr int kNormLanes = 8;

/// The kNormLanes lanes added as a fixed tree: halves, quarters, pairs.
GNN_HD double sum_norm_lanes(double* l) {
  for (int w = kNormLanes / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) l[i] = l[i] + l[i + w];
  return l[0];
}

/// One row of layer_norm_forward: mean and biased variance in double (each sum over kNormLanes
/// lanes), then out = (r - μ) rstd γ + β; stats[0..1] = (μ, rstd).
GNN_HD void layer_norm_row(const float* r, std::int64_t f, const float* gamma, const float* beta,
                           float eps, float* out, float* stats) {
  constexpr int L = kNormLanes;
  const std::int64_t whole = f / L * L;
  double lanes[L] = {};
  for (std::int64_t j = 0; j < whole; j += L)
    for (int l = 0; l < L; ++l) lanes[l] += static_cast<double>(r[j + l]);
  for (std::int64_t j = whole; j < f; ++j) lanes[j - whole] += static_cast<double>(r[j]);
  const double mean = sum_norm_lanes(lanes) / static_cast<double>(f);
  for (int l = 0; l < L; ++l) lanes[l] = 0.0;
  for (std::int64_t j = 0; j < whole; j += L) {
    for (int l = 0; l < L; ++l) {
      const double c = static_cast<double>(r[j + l]) - mean;
      lanes[l] += c * c;
    }
  }
  for (std::int64_t j = whole; j < f; ++j) {
    const double c = static_cast<double>(r[j]) - mean;
    lanes[j - whole] += c * c;
  }
  const double sq = sum_norm_lanes(lanes);
  const float mu = static_cast<float>(mean);
  const float rstd =
      static_cast<float>(1.0 / sqrt(sq / static_cast<double>(f) + static_cast<double>(eps)));
  stats[0] = mu;
  stats[1] = rstd;
  for (std::int64_t j = 0; j < f; ++j) out[j] = (r[j] - mu) * rstd * gamma[j] + beta[j];
}

/// One row of layer_norm_backward's input gradient: with x̂ = (r - μ) rstd and d = g γ,
/// out = beta_out * out + rstd (d - mean(d) - x̂ mean(d x̂)) (beta_out == 0: out ignored), the two
/// means' sums in double over kNormLanes lanes. out may alias g (each element is read before it
/// is written).
GNN_HD void layer_norm_row_backward(const float* r, const float* stats, const float* gamma,
                                    const float* g, std::int64_t f, float beta_out, float* out) {
  constexpr int L = kNormLanes;
  const float mu = stats[0], rstd = stats[1];
  const std::int64_t whole = f / L * L;
  double lanes_d[L] = {}, lanes_dx[L] = {};
  // Element j's two terms into lane l.
  const auto add = [&](std::int64_t j, int l) {
    const float d = g[j] * gamma[j];
    lanes_d[l] += static_cast<double>(d);
    lanes_dx[l] += static_cast<double>(d) * static_cast<double>((r[j] - mu) * rstd);
  };
  for (std::int64_t j = 0; j < whole; j += L)
    for (int l = 0; l < L; ++l) add(j + l, l);
  for (std::int64_t j = whole; j < f; ++j) add(j, static_cast<int>(j - whole));
  const float mean_d = static_cast<float>(sum_norm_lanes(lanes_d) / static_cast<double>(f));
  const float mean_dx = static_cast<float>(sum_norm_lanes(lanes_dx) / static_cast<double>(f));
  for (std::int64_t j = 0; j < f; ++j) {
    const float v = rstd * (g[j] * gamma[j] - mean_d - (r[j] - mu) * rstd * mean_dx);
    out[j] = beta_out == 0.0f ? v : beta_out * out[j] + v;
  }
}

}  // namespace halognn::kernels::norm
