// Losses (values, gradients against finite differences, stability), prediction counts and
// optimiser steps against hand computations.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/kernels/kernels.hpp"
#include "test/kernels/kernel_test_util.hpp"

namespace halognn {
namespace {

using test::random_matrix;

const Device& cpu() { return *cpu_device(); }

double naive_ce(const Matrix& x, const std::vector<std::int32_t>& labels,
                const std::vector<std::uint8_t>& mask) {
  double total = 0.0;
  for (std::int64_t i = 0; i < x.rows(); ++i) {
    if (!mask[i] || labels[i] < 0) continue;
    double z = 0.0;
    for (std::int64_t j = 0; j < x.cols(); ++j) z += std::exp(double(x(i, j)));
    total += std::log(z) - x(i, labels[i]);
  }
  return total;
}

double naive_bce(const Matrix& x, const std::vector<std::uint8_t>& t,
                 const std::vector<std::uint8_t>& mask) {
  double total = 0.0;
  for (std::int64_t i = 0; i < x.rows(); ++i) {
    if (!mask[i]) continue;
    for (std::int64_t j = 0; j < x.cols(); ++j) {
      const double p = 1.0 / (1.0 + std::exp(-double(x(i, j))));
      total -= t[i * x.cols() + j] ? std::log(p) : std::log(1.0 - p);
    }
  }
  return total;
}

TEST(SoftmaxCrossEntropy, ValueAndGradientMatchNaiveLossAndFiniteDifferences) {
  Matrix x = random_matrix(40, 7, 1);
  for (float& v : x.host()) v *= 3.0f;
  std::vector<std::int32_t> labels(40);
  std::vector<std::uint8_t> mask(40);
  for (int i = 0; i < 40; ++i) {
    labels[i] = i % 9 == 0 ? -1 : i % 7;
    mask[i] = i % 3 != 0;
  }
  Matrix grad(40, 7);
  const float scale = 0.25f;
  const double loss = kernels::softmax_cross_entropy(cpu(), x.view(), labels.data(), mask.data(),
                                                     scale, grad.view());
  // The kernel shifts logits in float (one rounding of ~6e-8 relative per row, on values up to 6).
  EXPECT_NEAR(loss, naive_ce(x, labels, mask), 1e-6 * 40);
  // Central differences in double on the naive loss: its truncation error is O(h^2) ~ 1e-8, and
  // the float32 gradient carries a relative error ~1e-7; 1e-5 leaves a wide margin.
  const double h = 1e-4;
  Matrix xp = x.clone();
  for (std::int64_t i = 0; i < 40; ++i) {
    for (std::int64_t j = 0; j < 7; ++j) {
      const float orig = x(i, j);
      // The shift is rounded to float; dividing by the shift actually applied keeps the quotient
      // exact up to the O(h^2) truncation.
      xp(i, j) = orig + static_cast<float>(h);
      const double hp = double(xp(i, j)) - orig;
      const double lp = naive_ce(xp, labels, mask);
      xp(i, j) = orig - static_cast<float>(h);
      const double hm = orig - double(xp(i, j));
      const double lm = naive_ce(xp, labels, mask);
      xp(i, j) = orig;
      EXPECT_NEAR(grad(i, j), scale * (lp - lm) / (hp + hm), 1e-5) << i << "," << j;
    }
  }
}

TEST(SoftmaxCrossEntropy, IsStableForHugeLogitsAndAcceptsANullMask) {
  const Matrix x =
      Matrix::from_host(2, 3, std::vector<float>{1000.0f, 0.0f, -1000.0f, -5000.0f, 5000.0f, 0.0f});
  const std::vector<std::int32_t> labels{1, 1};
  Matrix grad(2, 3);
  const double loss =
      kernels::softmax_cross_entropy(cpu(), x.view(), labels.data(), nullptr, 1.0f, grad.view());
  EXPECT_NEAR(loss, 1000.0, 1e-6);  // row 0 costs 1000 nats, row 1 costs 0
  for (float g : grad.host()) EXPECT_TRUE(std::isfinite(g));
  EXPECT_NEAR(grad(0, 0), 1.0f, 1e-6);
  EXPECT_NEAR(grad(0, 1), -1.0f, 1e-6);
}

TEST(SoftmaxCrossEntropy, RejectsALabelOutOfRange) {
  const Matrix x = random_matrix(2, 3, 2);
  const std::vector<std::int32_t> labels{0, 3};
  Matrix grad(2, 3);
  EXPECT_THROW(
      kernels::softmax_cross_entropy(cpu(), x.view(), labels.data(), nullptr, 1.0f, grad.view()),
      Error);
}

TEST(SigmoidBce, ValueAndGradientMatchNaiveLossAndStayFiniteForHugeLogits) {
  Matrix x = random_matrix(30, 5, 3);
  for (float& v : x.host()) v *= 4.0f;
  std::vector<std::uint8_t> t(150), mask(30);
  for (int i = 0; i < 150; ++i) t[i] = (i * 7) % 3 == 0;
  for (int i = 0; i < 30; ++i) mask[i] = i % 4 != 1;
  Matrix grad(30, 5);
  const double loss =
      kernels::sigmoid_bce(cpu(), x.view(), t.data(), mask.data(), 2.0f, grad.view());
  EXPECT_NEAR(loss, naive_bce(x, t, mask), 1e-8);
  for (int i = 0; i < 30; ++i) {
    for (int j = 0; j < 5; ++j) {
      const double p = 1.0 / (1.0 + std::exp(-double(x(i, j))));
      const double want = mask[i] ? 2.0 * (p - t[i * 5 + j]) : 0.0;
      EXPECT_NEAR(grad(i, j), want, 1e-6);
    }
  }
  const Matrix big = Matrix::from_host(1, 2, std::vector<float>{200.0f, -200.0f});
  const std::vector<std::uint8_t> tb{0, 1};
  Matrix gb(1, 2);
  EXPECT_NEAR(kernels::sigmoid_bce(cpu(), big.view(), tb.data(), nullptr, 1.0f, gb.view()), 400.0,
              1e-9);
  EXPECT_NEAR(gb(0, 0), 1.0f, 1e-7);
  EXPECT_NEAR(gb(0, 1), -1.0f, 1e-7);
}

TEST(PredictionCounts, CountArgmaxHitsAndMultilabelConfusion) {
  const Matrix x = Matrix::from_host(4, 3,
                                     std::vector<float>{0.1f, 0.9f, 0.0f,   // argmax 1
                                                        2.0f, 2.0f, 1.0f,   // tie -> 0
                                                        -1.f, -2.f, -0.5f,  // argmax 2
                                                        5.0f, 0.0f, 0.0f});
  const std::vector<std::int32_t> labels{1, 1, 2, -1};
  const std::vector<std::uint8_t> mask{1, 1, 1, 1};
  const auto acc = kernels::count_correct(cpu(), x.view(), labels.data(), mask.data());
  EXPECT_EQ(acc.total, 3);
  EXPECT_EQ(acc.correct, 2);

  const std::vector<std::uint8_t> t{1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1};
  const std::vector<std::uint8_t> m2{1, 1, 0, 1};
  const auto ml = kernels::count_multilabel(cpu(), x.view(), t.data(), m2.data());
  // row0: pred {0,1}, truth {0,1} -> tp 2; row1: pred {0,1,2}, truth {1,2} -> tp 2 fp 1;
  // row3: pred {0}, truth {0,1,2} -> tp 1 fn 2.
  EXPECT_EQ(ml.true_pos, 5);
  EXPECT_EQ(ml.false_pos, 1);
  EXPECT_EQ(ml.false_neg, 2);
}

TEST(AdamStep, MatchesAHandComputationOverTwoSteps) {
  std::vector<float> w{1.0f, -2.0f}, m(2, 0.0f), v(2, 0.0f);
  const std::vector<float> g1{0.5f, -1.0f}, g2{0.1f, 0.3f};
  kernels::AdamParams p;
  p.lr = 0.1f;
  p.weight_decay = 0.01f;
  // Hand computation in double with L2 decay added to the gradient.
  double hw[2] = {1.0, -2.0}, hm[2] = {0, 0}, hv[2] = {0, 0};
  for (int step = 1; step <= 2; ++step) {
    const auto& g = step == 1 ? g1 : g2;
    kernels::adam_step(cpu(), 2, w.data(), g.data(), m.data(), v.data(), p, step);
    for (int i = 0; i < 2; ++i) {
      const double gi = g[i] + 0.01 * hw[i];
      hm[i] = 0.9 * hm[i] + 0.1 * gi;
      hv[i] = 0.999 * hv[i] + 0.001 * gi * gi;
      const double mh = hm[i] / (1 - std::pow(0.9, step)), vh = hv[i] / (1 - std::pow(0.999, step));
      hw[i] -= 0.1 * mh / (std::sqrt(vh) + 1e-8);
    }
  }
  EXPECT_NEAR(w[0], hw[0], 1e-6);
  EXPECT_NEAR(w[1], hw[1], 1e-6);
}

TEST(AdamStep, DecoupledDecayShrinksWeightsWithoutTouchingTheMoments) {
  std::vector<float> w{2.0f}, m{0.0f}, v{0.0f};
  const std::vector<float> g{0.0f};
  kernels::AdamParams p;
  p.lr = 0.1f;
  p.weight_decay = 0.5f;
  p.decoupled = true;
  kernels::adam_step(cpu(), 1, w.data(), g.data(), m.data(), v.data(), p, 1);
  EXPECT_FLOAT_EQ(w[0], 2.0f * (1.0f - 0.05f));
  EXPECT_EQ(m[0], 0.0f);
  EXPECT_EQ(v[0], 0.0f);
}

TEST(SgdStep, AppliesDecayAndMomentum) {
  std::vector<float> w{1.0f}, mom{0.0f};
  const std::vector<float> g{0.5f};
  kernels::sgd_step(cpu(), 1, w.data(), g.data(), mom.data(), 0.1f, 0.9f, 0.1f);
  EXPECT_FLOAT_EQ(mom[0], 0.6f);
  EXPECT_FLOAT_EQ(w[0], 1.0f - 0.06f);
  kernels::sgd_step(cpu(), 1, w.data(), g.data(), mom.data(), 0.1f, 0.9f, 0.1f);
  EXPECT_FLOAT_EQ(mom[0], 0.9f * 0.6f + 0.5f + 0.1f * 0.94f);
  std::vector<float> w2{1.0f};
  kernels::sgd_step(cpu(), 1, w2.data(), g.data(), nullptr, 0.1f, 0.0f, 0.0f);
  EXPECT_FLOAT_EQ(w2[0], 0.95f);
}

}  // namespace
}  // namespace halognn
