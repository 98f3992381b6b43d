// The training protocol's parts on their own: learning-rate schedules, model selection and
// early stopping, the parameter snapshot, ROC AUC; and the trainer using them on one rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <vector>

#include "comm/transport.hpp"
#include "core/rng.hpp"
#include "test/training/training_fixture.hpp"
#include "training/lr_schedule.hpp"
#include "training/model_selection.hpp"
#include "training/roc_auc.hpp"

namespace halognn {
namespace {

TrainConfig schedule_config(LrScheduleKind kind) {
  TrainConfig c;
  c.lr = 0.1f;
  c.epochs = 100;
  c.lr_schedule = kind;
  return c;
}

TEST(LrSchedule, ConstantStepAndCosineFollowTheirFormulas) {
  const LrSchedule constant(schedule_config(LrScheduleKind::constant));
  for (int t : {0, 1, 57, 99}) EXPECT_FLOAT_EQ(constant.lr(t), 0.1f);

  TrainConfig step_cfg = schedule_config(LrScheduleKind::step);
  step_cfg.lr_step = 30;
  step_cfg.lr_gamma = 0.5f;
  const LrSchedule step(step_cfg);
  EXPECT_FLOAT_EQ(step.lr(0), 0.1f);
  EXPECT_FLOAT_EQ(step.lr(29), 0.1f);
  EXPECT_FLOAT_EQ(step.lr(30), 0.05f);
  EXPECT_FLOAT_EQ(step.lr(61), 0.025f);

  TrainConfig cos_cfg = schedule_config(LrScheduleKind::cosine);
  cos_cfg.lr_min = 0.01f;
  const LrSchedule cosine(cos_cfg);
  EXPECT_FLOAT_EQ(cosine.lr(0), 0.1f);
  EXPECT_NEAR(cosine.lr(50), 0.055, 1e-6);  // halfway: the mean of lr and lr_min
  EXPECT_GT(cosine.lr(99), 0.01f);          // the last epoch stays above the floor
  EXPECT_LT(cosine.lr(99), 0.0101f);
  for (int t = 1; t < 100; ++t) EXPECT_LE(cosine.lr(t), cosine.lr(t - 1));
}

TEST(LrSchedule, WarmupRampsLinearlyIntoAnySchedule) {
  TrainConfig c = schedule_config(LrScheduleKind::constant);
  c.lr_warmup = 4;
  const LrSchedule s(c);
  EXPECT_FLOAT_EQ(s.lr(0), 0.025f);
  EXPECT_FLOAT_EQ(s.lr(1), 0.05f);
  EXPECT_FLOAT_EQ(s.lr(3), 0.1f);
  EXPECT_FLOAT_EQ(s.lr(4), 0.1f);
}

TEST(LrSchedule, PlateauReducesAfterPatienceWithoutProgressDownToTheFloor) {
  TrainConfig c = schedule_config(LrScheduleKind::plateau);
  c.lr_patience = 3;
  c.lr_gamma = 0.5f;
  c.lr_min = 0.03f;
  LrSchedule s(c);
  EXPECT_FALSE(s.on_evaluation(0, true));
  EXPECT_FALSE(s.on_evaluation(1, false));
  EXPECT_FALSE(s.on_evaluation(2, false));
  EXPECT_FLOAT_EQ(s.lr(3), 0.1f);
  EXPECT_TRUE(s.on_evaluation(3, false));  // 3 epochs since the last progress
  EXPECT_FLOAT_EQ(s.lr(4), 0.05f);
  EXPECT_FALSE(s.on_evaluation(4, true));  // progress restarts the count
  EXPECT_FALSE(s.on_evaluation(6, false));
  EXPECT_TRUE(s.on_evaluation(7, false));
  EXPECT_FLOAT_EQ(s.lr(8), 0.03f);  // 0.025 would be under the floor
  EXPECT_FALSE(s.on_evaluation(10, false));  // at the floor: no further change
  EXPECT_FLOAT_EQ(s.lr(11), 0.03f);
  // The other schedules ignore evaluations.
  LrSchedule constant(schedule_config(LrScheduleKind::constant));
  for (int t = 0; t < 50; ++t) EXPECT_FALSE(constant.on_evaluation(t, false));
}

TEST(ModelSelection, ScoreAndLossRulesAreStrictAndPatienceCountsEpochs) {
  ModelSelection by_score(SelectBy::score, 3);
  EXPECT_TRUE(by_score.update(0, 0.5, 1.0).best);
  EXPECT_FALSE(by_score.update(1, 0.5, 0.1).best);  // a tie is no improvement; loss is ignored
  EXPECT_TRUE(by_score.update(2, 0.6, 2.0).best);
  EXPECT_EQ(by_score.best_epoch(), 2);
  EXPECT_FALSE(by_score.should_stop(4));
  EXPECT_TRUE(by_score.should_stop(5));

  ModelSelection by_loss(SelectBy::loss, 0);
  EXPECT_TRUE(by_loss.update(0, 0.1, 1.0).best);
  EXPECT_FALSE(by_loss.update(1, 0.9, 1.0).best);
  EXPECT_TRUE(by_loss.update(2, 0.0, 0.5).best);
  EXPECT_FALSE(by_loss.should_stop(1000)) << "patience 0 never stops";
}

TEST(ModelSelection, BothKeepsTheModelThatImprovedBothAndGoesOnWhileEitherImproves) {
  ModelSelection s(SelectBy::both, 2);
  auto v = s.update(0, 0.50, 1.00);
  EXPECT_TRUE(v.best && v.progress);
  v = s.update(1, 0.55, 1.10);  // score up, loss up: progress only
  EXPECT_TRUE(v.progress);
  EXPECT_FALSE(v.best);
  v = s.update(2, 0.55, 0.90);  // score tied with the best, loss down: both
  EXPECT_TRUE(v.progress && v.best);
  v = s.update(3, 0.50, 0.95);  // neither
  EXPECT_FALSE(v.progress || v.best);
  EXPECT_EQ(s.best_epoch(), 2);
  EXPECT_EQ(s.last_progress_epoch(), 2);
  EXPECT_FALSE(s.should_stop(3));
  EXPECT_TRUE(s.should_stop(4));
  EXPECT_DOUBLE_EQ(s.best_score(), 0.55);
  EXPECT_DOUBLE_EQ(s.best_loss(), 0.90);
}

/// AUC by its definition: over all positive/negative pairs, 1 for a correctly ordered pair, 1/2
/// for a tie.
double pairwise_auc(const std::vector<double>& score, const std::vector<std::uint8_t>& pos) {
  double sum = 0;
  std::int64_t pairs = 0;
  for (std::size_t i = 0; i < score.size(); ++i) {
    for (std::size_t j = 0; j < score.size(); ++j) {
      if (!pos[i] || pos[j]) continue;
      sum += score[i] > score[j] ? 1.0 : score[i] == score[j] ? 0.5 : 0.0;
      ++pairs;
    }
  }
  return sum / static_cast<double>(pairs);
}

TEST(RocAuc, EqualsThePairwiseDefinitionWithTies) {
  const CounterRng rng(RngKey{1, RngPurpose::test, 3, 0});
  for (const int levels : {1000000, 7}) {  // 7 levels: many ties
    std::vector<double> score(300);
    std::vector<std::uint8_t> pos(300);
    for (std::size_t i = 0; i < score.size(); ++i) {
      pos[i] = rng.uniform(i, 0) < 0.3f;
      // Positives score higher on average.
      score[i] = std::floor((rng.uniform(i, 1) + (pos[i] ? 0.3 : 0.0)) * levels) / levels;
    }
    EXPECT_NEAR(binary_roc_auc(score, pos), pairwise_auc(score, pos), 1e-12) << levels;
  }
  EXPECT_DOUBLE_EQ(binary_roc_auc(std::vector<double>{1, 2, 3, 4}, std::vector<std::uint8_t>{0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(binary_roc_auc(std::vector<double>{4, 3, 2, 1}, std::vector<std::uint8_t>{0, 0, 1, 1}), 0.0);
  EXPECT_DOUBLE_EQ(binary_roc_auc(std::vector<double>{1, 1, 1, 1}, std::vector<std::uint8_t>{0, 1, 0, 1}), 0.5);
  // One class absent: no pair to rank.
  EXPECT_DOUBLE_EQ(binary_roc_auc(std::vector<double>{1, 2}, std::vector<std::uint8_t>{1, 1}), 0.5);
}

TEST(ParameterSnapshot, RestoresTheSavedValues) {
  Parameter a{"a", Matrix(2, 3), Matrix(2, 3)}, b{"b", Matrix(1, 4), Matrix(1, 4)};
  for (float& v : a.value.host()) v = 1.5f;
  for (float& v : b.value.host()) v = -2.0f;
  ParameterSnapshot snap;
  EXPECT_TRUE(snap.empty());
  snap.save({&a, &b});
  for (float& v : a.value.host()) v = 0.0f;
  b.value(0, 2) = 9.0f;
  snap.restore({&a, &b});
  for (float v : a.value.host()) EXPECT_EQ(v, 1.5f);
  for (float v : b.value.host()) EXPECT_EQ(v, -2.0f);
}

class TrainerProtocol : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    int init = 0;
    MPI_Initialized(&init);
    if (!init) MPI_Init(nullptr, nullptr);
  }
};

TEST_F(TrainerProtocol, RunAppliesTheScheduleAndRestoresOrKeepsTheLastModel) {
  const Dataset ds = testing::small_dataset();
  auto t = make_mpi_transport(MPI_COMM_SELF);
  TrainConfig cfg = testing::small_config(ModelKind::sage);
  cfg.epochs = 12;
  cfg.lr_schedule = LrScheduleKind::step;
  cfg.lr_step = 5;
  cfg.lr_gamma = 0.5f;
  Trainer tr(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device());
  std::vector<EpochMetrics> epochs;
  const FinalMetrics f = tr.run([&](const EpochMetrics& m) { epochs.push_back(m); });
  ASSERT_EQ(epochs.size(), 12u);
  EXPECT_FLOAT_EQ(static_cast<float>(epochs[4].lr), 0.01f);
  EXPECT_FLOAT_EQ(static_cast<float>(epochs[5].lr), 0.005f);
  EXPECT_FLOAT_EQ(static_cast<float>(epochs[11].lr), 0.0025f);
  EXPECT_TRUE(f.restored);
  EXPECT_FALSE(f.early_stopped);
  EXPECT_EQ(f.epochs_run, 12);
  EXPECT_EQ(f.final_scores.test, epochs[static_cast<std::size_t>(f.best_epoch)].eval->test);

  // Without the restore the final scores are the last evaluation's.
  cfg.restore_best = false;
  Trainer last(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device());
  epochs.clear();
  const FinalMetrics g = last.run([&](const EpochMetrics& m) { epochs.push_back(m); });
  EXPECT_FALSE(g.restored);
  EXPECT_EQ(g.final_epoch, 11);
  EXPECT_EQ(g.final_scores.test, epochs.back().eval->test);
  EXPECT_EQ(g.best_epoch, f.best_epoch) << "selection does not depend on the restore";
}

TEST_F(TrainerProtocol, FirstLayerOnlyWeightDecayLeavesLaterLayersUndecayed) {
  // One step from the same start: the first layer gets the same gradient and decay either way,
  // the second layer's weights are decayed only in the all-layer setting.
  const Dataset ds = testing::small_dataset();
  auto t = make_mpi_transport(MPI_COMM_SELF);
  TrainConfig cfg = testing::small_config(ModelKind::gcn);
  cfg.epochs = 1;
  cfg.weight_decay = 0.5f;
  auto final_weights = [&](bool first_only) {
    cfg.decay_first_layer_only = first_only;
    Trainer tr(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device());
    for (int e = 0; e < cfg.epochs; ++e) tr.run_epoch(e, false);
    std::vector<std::vector<float>> w;
    for (const Parameter* p : tr.parameters()) w.push_back(p->value.to_host());
    return w;
  };
  const auto all = final_weights(false), first = final_weights(true);
  cfg.weight_decay = 0.0f;
  const auto none = final_weights(false);
  // Parameters: layer0.weight, layer0.bias, layer1.weight, layer1.bias.
  EXPECT_EQ(first[0], all[0]) << "the first layer is decayed in both";
  EXPECT_NE(first[2], all[2]) << "the second layer's weights are decayed only with all layers";
  EXPECT_NE(first[0], none[0]);
}

TEST_F(TrainerProtocol, ValidationLossWithL2AddsHalfTheDecayTimesTheDecayedWeightsSquares) {
  // Two trainers from the same start, trained alike (the option changes no gradient): their
  // validation losses differ by weight_decay / 2 * sum of w^2 over the decayed weights only
  // (first layer only: not layer 1, not the biases).
  const Dataset ds = testing::small_dataset();
  auto t = make_mpi_transport(MPI_COMM_SELF);
  TrainConfig cfg = testing::small_config(ModelKind::gcn);
  cfg.weight_decay = 0.05f;
  cfg.decay_first_layer_only = true;
  Trainer plain(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device());
  cfg.val_loss_l2 = true;
  Trainer with_l2(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device());
  for (int e = 0; e < 3; ++e) {
    plain.run_epoch(e, false);
    with_l2.run_epoch(e, false);
  }
  double sq = 0;
  for (const float w : with_l2.layers()[0]->parameters()[0]->value.to_host()) sq += double(w) * w;
  ASSERT_EQ(with_l2.layers()[0]->parameters()[0]->name, "layer0.weight");
  const SplitScores a = plain.evaluate(3), b = with_l2.evaluate(3);
  EXPECT_EQ(a.test, b.test) << "the same model";
  EXPECT_NEAR(b.val_loss - a.val_loss, 0.5 * 0.05 * sq, 1e-6 * sq);
  EXPECT_GT(sq, 0.1);

  // Without weight decay the option would change nothing: refused.
  cfg.weight_decay = 0.0f;
  EXPECT_THROW(cfg.validate(), ConfigError);
}

TEST_F(TrainerProtocol, NoBiasTrainsTheWeightsOnly) {
  // --no-bias: no layer offers a bias to the optimiser, and the model is another one (biases
  // start at zero, so the runs part after the first step).
  const Dataset ds = testing::small_dataset();
  auto t = make_mpi_transport(MPI_COMM_SELF);
  for (const ModelKind kind : {ModelKind::gcn, ModelKind::sage, ModelKind::gat, ModelKind::gin}) {
    TrainConfig cfg = testing::small_config(kind);
    cfg.bias = false;
    Trainer plain(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device());
    for (const Parameter* p : plain.parameters())
      EXPECT_EQ(p->name.find("bias"), std::string::npos) << p->name;
    cfg.bias = true;
    Trainer biased(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device());
    EXPECT_GT(biased.parameters().size(), plain.parameters().size());
    EXPECT_EQ(plain.run_epoch(0, false).loss, biased.run_epoch(0, false).loss);
    EXPECT_NE(plain.run_epoch(1, false).loss, biased.run_epoch(1, false).loss);
  }
  TrainConfig cfg = testing::small_config(ModelKind::gcn);
  cfg.bias = false;
  cfg.decay_biases = true;
  EXPECT_THROW(cfg.validate(), ConfigError) << "--decay-biases with --no-bias";
}

TEST_F(TrainerProtocol, MetricsAreCheckedAgainstTheTask) {
  auto t = make_mpi_transport(MPI_COMM_SELF);
  TrainConfig cfg = testing::small_config(ModelKind::gcn);
  cfg.metric = MetricKind::roc_auc;
  EXPECT_THROW(Trainer(cfg, testing::partition_of(testing::small_dataset(), 1, 0), *t, cpu_device()),
               ConfigError)
      << "4 classes: no binary ROC AUC";
  cfg.metric = MetricKind::f1_micro;
  EXPECT_THROW(Trainer(cfg, testing::partition_of(testing::small_dataset(), 1, 0), *t, cpu_device()),
               ConfigError);
  cfg.metric = MetricKind::roc_auc;
  Trainer binary(cfg, testing::partition_of(testing::small_dataset(3, 2), 1, 0), *t, cpu_device());
  EXPECT_EQ(binary.metric(), MetricKind::roc_auc);
  const SplitScores s = binary.evaluate(0);
  EXPECT_GE(s.test, 0.0);
  EXPECT_LE(s.test, 1.0);
  EXPECT_GT(s.val_loss, 0.0);
}

}  // namespace
}  // namespace halognn
