// Losses and prediction counts. Per-row work is independent; sums are OpenMP reductions in double.
#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/kernels/reference/reference_kernels.hpp"

namespace halognn::kernels::reference {
namespace {

bool selected(const std::uint8_t* mask, std::int64_t i) { return mask == nullptr || mask[i] != 0; }

void zero_row(float* r, std::int64_t f) {
#pragma omp simd
  for (std::int64_t j = 0; j < f; ++j) r[j] = 0.0f;
}

}  // namespace

double softmax_cross_entropy(ConstDenseView logits, const std::int32_t* labels,
                             const std::uint8_t* mask, float scale, DenseView grad) {
  GNN_ASSERT(grad.rows == logits.rows && grad.cols == logits.cols,
             "softmax_cross_entropy: grad shape differs from logits");
  const std::int64_t c = logits.cols;
  double total = 0.0;
  std::atomic<std::int64_t> bad_label{-1};
#pragma omp parallel for schedule(static) reduction(+ : total)
  for (std::int64_t i = 0; i < logits.rows; ++i) {
    float* g = grad.row(i);
    if (!selected(mask, i) || labels[i] < 0) {
      zero_row(g, c);
      continue;
    }
    if (labels[i] >= c) {
      bad_label.store(i);
      zero_row(g, c);
      continue;
    }
    const float* x = logits.row(i);
    const float m = *std::max_element(x, x + c);
    double sum = 0.0;
    for (std::int64_t j = 0; j < c; ++j) sum += std::exp(static_cast<double>(x[j] - m));
    const double log_sum = std::log(sum);
    total += log_sum - static_cast<double>(x[labels[i]] - m);
    // d/dx_j = softmax_j - [j == label], computed from the shifted logits.
    for (std::int64_t j = 0; j < c; ++j) {
      g[j] = scale * static_cast<float>(std::exp(static_cast<double>(x[j] - m) - log_sum));
    }
    g[labels[i]] -= scale;
  }
  GNN_ASSERT(bad_label.load() < 0, "softmax_cross_entropy: label of row ", bad_label.load(),
             " is not below the number of classes ", c);
  return total;
}

double sigmoid_bce(ConstDenseView logits, const std::uint8_t* targets, const std::uint8_t* mask,
                   float scale, DenseView grad) {
  GNN_ASSERT(grad.rows == logits.rows && grad.cols == logits.cols,
             "sigmoid_bce: grad shape differs from logits");
  const std::int64_t c = logits.cols;
  double total = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : total)
  for (std::int64_t i = 0; i < logits.rows; ++i) {
    float* g = grad.row(i);
    if (!selected(mask, i)) {
      zero_row(g, c);
      continue;
    }
    const float* x = logits.row(i);
    const std::uint8_t* t = targets + i * c;
    for (std::int64_t j = 0; j < c; ++j) {
      const double z = x[j];
      const double y = t[j] ? 1.0 : 0.0;
      // max(z,0) - z*y + log(1 + exp(-|z|)): never overflows, and log1p keeps small terms.
      total += std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::abs(z)));
      const double e = std::exp(-std::abs(z));
      const double sig = z >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
      g[j] = scale * static_cast<float>(sig - y);
    }
  }
  return total;
}

AccuracyCounts count_correct(ConstDenseView logits, const std::int32_t* labels,
                             const std::uint8_t* mask) {
  const std::int64_t c = logits.cols;
  std::int64_t correct = 0, total = 0;
  if (c == 0) return {};
#pragma omp parallel for schedule(static) reduction(+ : correct, total)
  for (std::int64_t i = 0; i < logits.rows; ++i) {
    if (!selected(mask, i) || labels[i] < 0) continue;
    const float* x = logits.row(i);
    const auto best = std::max_element(x, x + c) - x;  // first maximum on ties
    ++total;
    if (best == labels[i]) ++correct;
  }
  return {correct, total};
}

MultilabelCounts count_multilabel(ConstDenseView logits, const std::uint8_t* targets,
                                  const std::uint8_t* mask) {
  const std::int64_t c = logits.cols;
  std::int64_t tp = 0, fp = 0, fn = 0;
#pragma omp parallel for schedule(static) reduction(+ : tp, fp, fn)
  for (std::int64_t i = 0; i < logits.rows; ++i) {
    if (!selected(mask, i)) continue;
    const float* x = logits.row(i);
    const std::uint8_t* t = targets + i * c;
    for (std::int64_t j = 0; j < c; ++j) {
      const bool pred = x[j] > 0.0f, truth = t[j] != 0;
      tp += pred && truth;
      fp += pred && !truth;
      fn += !pred && truth;
    }
  }
  return {tp, fp, fn};
}

}  // namespace halognn::kernels::reference
