#include "training/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace halognn {

LrSchedule::LrSchedule(const TrainConfig& cfg)
    : kind_(cfg.lr_schedule),
      base_(cfg.lr),
      gamma_(cfg.lr_gamma),
      min_(cfg.lr_min),
      step_(cfg.lr_step),
      warmup_(cfg.lr_warmup),
      patience_(cfg.lr_patience),
      period_(std::max(cfg.epochs, 1)),
      plateau_lr_(cfg.lr) {}

float LrSchedule::lr(std::int64_t t) const {
  double r = base_;
  switch (kind_) {
    case LrScheduleKind::constant:
      break;
    case LrScheduleKind::step:
      r = base_ * std::pow(static_cast<double>(gamma_), static_cast<double>(t / step_));
      break;
    case LrScheduleKind::cosine: {
      const double pi = 3.14159265358979323846;
      const double c = std::cos(pi * static_cast<double>(std::min(t, period_)) /
                                static_cast<double>(period_));
      r = min_ + (base_ - min_) * (1.0 + c) / 2.0;
      break;
    }
    case LrScheduleKind::plateau:
      r = plateau_lr_;
      break;
  }
  if (warmup_ > 0 && t < warmup_) r *= static_cast<double>(t + 1) / static_cast<double>(warmup_);
  return static_cast<float>(r);
}

bool LrSchedule::on_evaluation(std::int64_t t, bool improved) {
  if (kind_ != LrScheduleKind::plateau) return false;
  if (improved) {
    plateau_since_ = t;
    return false;
  }
  if (t - plateau_since_ < patience_) return false;
  plateau_since_ = t;
  const float next = std::max(plateau_lr_ * gamma_, min_);
  const bool changed = next != plateau_lr_;
  plateau_lr_ = next;
  return changed;
}

void LrSchedule::save(StateWriter& w) const {
  StateWriter sw = w.sub("schedule");
  sw.put_double("plateau_lr", plateau_lr_);
  sw.put_int("plateau_since", plateau_since_);
}

void LrSchedule::load(const StateReader& r) {
  const StateReader sr = r.sub("schedule");
  plateau_lr_ = static_cast<float>(sr.get_double("plateau_lr"));
  plateau_since_ = sr.get_int("plateau_since");
}

}  // namespace halognn
