// Loss wrappers, score counts and the optimisers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "models/loss.hpp"
#include "models/optimizer.hpp"
#include "test/kernels/kernel_test_util.hpp"

namespace halognn {
namespace {

TEST(Loss, SingleAndMultiLabelGradientsMatchFiniteDifferences) {
  const Matrix logits = test::random_matrix(6, 4, 1);
  const std::vector<std::int32_t> labels{0, 3, -1, 2, 1, 1};
  const std::vector<std::uint8_t> targets{1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0,
                                          1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 0, 0};
  const std::vector<std::uint8_t> mask{1, 1, 1, 0, 1, 1};
  for (const bool multilabel : {false, true}) {
    const LossTargets t{multilabel, labels.data(), targets.data()};
    Matrix grad(6, 4), scratch(6, 4);
    loss_and_grad(*cpu_device(), t, logits.view(), mask.data(), 0.5f, grad.view());
    // Central differences of the loss itself: float logits shifted by h = 1e-2 (exactly
    // representable offsets are not needed: the shift actually applied is used). The loss is
    // smooth with |L'''| <= 1, so truncation is ~2e-5; float rounding of the double-accumulated
    // sum is ~1e-7 / h = 1e-5.
    Matrix x = logits.clone();
    for (std::int64_t i = 0; i < x.size(); ++i) {
      const float orig = x.host()[i];
      x.host()[i] = orig + 1e-2f;
      const double up = double(x.host()[i]) - orig;
      const double lp =
          loss_and_grad(*cpu_device(), t, x.view(), mask.data(), 0.5f, scratch.view());
      x.host()[i] = orig - 1e-2f;
      const double down = orig - double(x.host()[i]);
      const double lm =
          loss_and_grad(*cpu_device(), t, x.view(), mask.data(), 0.5f, scratch.view());
      x.host()[i] = orig;
      EXPECT_NEAR(grad.host()[i], 0.5 * (lp - lm) / (up + down), 1e-4) << multilabel << " " << i;
    }
  }
}

TEST(Loss, ScoreCountsSumAcrossRanksAndGiveAccuracyAndMicroF1) {
  const Matrix logits = Matrix::from_host(3, 2, std::vector<float>{1, 0, 0, 1, 2, -1});
  const std::vector<std::int32_t> labels{0, 0, 0};
  const std::vector<std::uint8_t> targets{1, 0, 1, 1, 0, 0};
  const auto single =
      count_scores(*cpu_device(), {false, labels.data(), nullptr}, logits.view(), nullptr);
  EXPECT_EQ(single.correct, 2);
  EXPECT_EQ(single.total, 3);
  const auto multi =
      count_scores(*cpu_device(), {true, nullptr, targets.data()}, logits.view(), nullptr);
  EXPECT_EQ(multi.true_pos, 2);   // (0,0), (1,1)
  EXPECT_EQ(multi.false_pos, 1);  // (2,0)
  EXPECT_EQ(multi.false_neg, 1);  // (1,0)
  ScoreCounts sum = single;
  sum += multi;
  EXPECT_EQ(ScoreCounts::from_array(sum.to_array()).to_array(), sum.to_array());
  EXPECT_DOUBLE_EQ(sum.accuracy(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(sum.f1_micro(), 4.0 / 6.0);
  EXPECT_EQ(ScoreCounts{}.score(true), 0.0);
  EXPECT_EQ(ScoreCounts{}.score(false), 0.0);
}

Parameter param(const char* name, std::vector<float> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return {name, Matrix::from_host(1, n, v), Matrix(1, n)};
}

TEST(Optimizer, AdamMatchesAHandComputationAndLeavesBiasesUndecayed) {
  Parameter w = param("layer0.weight", {0.5f, -1.0f}), b = param("layer0.bias", {0.25f});
  OptimizerConfig cfg;
  cfg.lr = 0.05f;
  cfg.weight_decay = 0.1f;
  auto opt = make_optimizer(cfg, {&w, &b}, cpu_device());
  double hw[3] = {0.5, -1.0, 0.25}, hm[3] = {}, hv[3] = {};
  const float grads[2][3] = {{0.2f, -0.4f, 1.0f}, {-0.1f, 0.3f, 0.5f}};
  for (int step = 1; step <= 2; ++step) {
    opt->zero_grad();
    w.grad(0, 0) = grads[step - 1][0];
    w.grad(0, 1) = grads[step - 1][1];
    b.grad(0, 0) = grads[step - 1][2];
    opt->step();
    for (int i = 0; i < 3; ++i) {
      const double g = grads[step - 1][i] + (i < 2 ? 0.1 * hw[i] : 0.0);  // bias: no decay
      hm[i] = 0.9 * hm[i] + 0.1 * g;
      hv[i] = 0.999 * hv[i] + 0.001 * g * g;
      hw[i] -= 0.05 * (hm[i] / (1 - std::pow(0.9, step))) /
               (std::sqrt(hv[i] / (1 - std::pow(0.999, step))) + 1e-8);
    }
  }
  EXPECT_EQ(opt->steps(), 2);
  EXPECT_NEAR(w.value(0, 0), hw[0], 1e-6);
  EXPECT_NEAR(w.value(0, 1), hw[1], 1e-6);
  EXPECT_NEAR(b.value(0, 0), hw[2], 1e-6);
  opt->zero_grad();
  EXPECT_EQ(w.grad(0, 0), 0.0f);
}

TEST(Optimizer, SgdAppliesPerParameterWeightDecay) {
  Parameter w = param("layer0.weight", {1.0f}), v = param("layer1.weight", {1.0f});
  OptimizerConfig cfg;
  cfg.kind = OptimizerConfig::Kind::sgd;
  cfg.lr = 0.1f;
  cfg.weight_decay = 0.5f;
  auto opt = make_optimizer(cfg, {&w, &v}, cpu_device());
  opt->set_weight_decay(&v, 0.0f);  // Kipf & Welling decay the first layer only
  opt->step();                      // zero gradients: only the decay moves weights
  EXPECT_FLOAT_EQ(w.value(0, 0), 1.0f - 0.1f * 0.5f);
  EXPECT_FLOAT_EQ(v.value(0, 0), 1.0f);
  Parameter stranger = param("x", {0.0f});
  EXPECT_THROW(opt->set_weight_decay(&stranger, 1.0f), ConfigError);
}

}  // namespace
}  // namespace halognn
