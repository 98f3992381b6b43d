#pragma once
/// @file lr_schedule.hpp
/// The learning rate of each epoch. A pure function of the epoch for constant, step and cosine
/// schedules; the plateau schedule also hears of every evaluation (improved or not). Every rank
/// sees the same evaluations (they are all-reduced), so every rank uses the same rate.
#include <cstdint>

#include "core/data/state_io.hpp"
#include "training/train_config.hpp"

namespace halognn {

class LrSchedule {
 public:
  /// From --lr, --lr-schedule, --lr-step, --lr-gamma, --lr-min, --lr-warmup, --lr-patience and
  /// --epochs (the cosine period).
  explicit LrSchedule(const TrainConfig& cfg);

  /// The rate of epoch t (0-based), t in increasing order:
  ///   constant  lr
  ///   step      lr * gamma^floor(t / step)
  ///   cosine    lr_min + (lr - lr_min) (1 + cos(pi t / epochs)) / 2
  ///   plateau   the current rate (lr, times gamma after each plateau, not below lr_min)
  /// times the warm-up factor min(1, (t + 1) / warmup) during the first `warmup` epochs.
  float lr(std::int64_t t) const;

  /// Plateau: an evaluation at epoch t; when the last improvement is lr_patience or more epochs
  /// back, the rate is multiplied by gamma (not below lr_min) and the count starts again.
  /// Returns whether the rate changed. The other schedules ignore evaluations.
  bool on_evaluation(std::int64_t t, bool improved);

  /// Checkpoints: the plateau schedule's current rate and the epoch it counts from ("schedule/").
  void save(StateWriter& w) const;
  void load(const StateReader& r);

 private:
  LrScheduleKind kind_;
  float base_, gamma_, min_;
  int step_, warmup_, patience_;
  std::int64_t period_;
  float plateau_lr_;
  std::int64_t plateau_since_ = 0;  ///< epoch of the last improvement or reduction
};

}  // namespace halognn
