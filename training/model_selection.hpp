#pragma once
/// @file model_selection.hpp
/// Model selection and early stopping on validation results, and the parameter snapshot that
/// restores the best model. The trainer feeds every evaluation in; the decisions depend only on
/// all-reduced values, so every rank takes the same ones.
#include <cstdint>
#include <limits>
#include <vector>

#include "core/data/state_io.hpp"
#include "models/layer.hpp"
#include "training/train_config.hpp"

namespace halognn {

class ModelSelection {
 public:
  /// `patience` epochs without progress stop training (0: never).
  ModelSelection(SelectBy by, int patience) : by_(by), patience_(patience) {}

  /// What an evaluation meant.
  struct Verdict {
    bool best = false;      ///< the best evaluation so far: keep (and later restore) its model
    bool progress = false;  ///< an improvement: the patience count starts again
  };
  /// An evaluation at epoch t, under the rule of SelectBy:
  ///   score   best = progress = the validation score is strictly higher than every earlier one
  ///   loss    best = progress = the validation loss is strictly lower than every earlier one
  ///   both    (Velickovic et al.'s reference code) progress = score >= the best score or
  ///           loss <= the lowest loss; best = both at once
  /// The first evaluation is always best and progress.
  Verdict update(std::int64_t t, double val_score, double val_loss);
  /// Whether training should stop after epoch t: patience > 0 and the last progress is
  /// `patience` or more epochs old.
  bool should_stop(std::int64_t t) const;

  /// -1 before the first evaluation.
  std::int64_t best_epoch() const { return best_epoch_; }
  std::int64_t last_progress_epoch() const { return progress_epoch_; }
  /// The highest validation score and lowest loss seen (each on its own: under SelectBy::both
  /// the best epoch need not hold either).
  double best_score() const { return best_score_; }
  double best_loss() const { return best_loss_; }
  /// Checkpoints: the best and last-progress epochs and the best score and loss ("selection/").
  void save(StateWriter& w) const;
  void load(const StateReader& r);

 private:
  SelectBy by_;
  int patience_;
  std::int64_t best_epoch_ = -1, progress_epoch_ = -1;
  double best_score_ = -std::numeric_limits<double>::infinity();
  double best_loss_ = std::numeric_limits<double>::infinity();
};

/// Copies of parameter values on their device, to restore the best model.
class ParameterSnapshot {
 public:
  /// Replaces the snapshot with the current values.
  void save(const std::vector<Parameter*>& params);
  /// Writes the snapshot back into the parameters (same list, same shapes).
  void restore(const std::vector<Parameter*>& params) const;
  bool empty() const { return values_.empty(); }
  /// Checkpoints: whether a snapshot exists and its values ("best/<parameter name>"); load
  /// allocates the snapshot like `params` when the checkpoint has one.
  void save_state(StateWriter& w, const std::vector<Parameter*>& params) const;
  void load_state(const StateReader& r, const std::vector<Parameter*>& params);

 private:
  std::vector<Matrix> values_;
};

}  // namespace halognn
