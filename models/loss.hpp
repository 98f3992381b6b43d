#pragma once
/// @file loss.hpp
/// The training loss for single-label (softmax cross-entropy) and multi-label (sigmoid BCE)
/// node classification, and integer prediction counts that ranks sum before turning them into
/// accuracy or micro-F1 (so P-rank scores equal 1-rank scores exactly).
#include <array>
#include <cstdint>

#include "core/buffer.hpp"

namespace halognn {

/// A rank's targets on its device: labels (num_owned, -1 = unlabelled) for single-label data,
/// a num_owned x classes 0/1 matrix for multi-label data.
struct LossTargets {
  bool multilabel = false;
  const std::int32_t* labels = nullptr;
  const std::uint8_t* label_matrix = nullptr;
};

/// Sum of the per-node losses over rows with mask[i] != 0 (mask == nullptr: all rows); writes
/// grad = scale * d(sum)/d(logits), zero on other rows. Pass scale = 1 / (global number of
/// training nodes) and divide the all-reduced sum by the same count to get the mean loss.
double loss_and_grad(const Device& dev, const LossTargets& t, ConstDenseView logits,
                     const std::uint8_t* mask, float scale, DenseView grad);

/// Integer prediction counts over the masked rows: correct / total (single-label arg-max) or
/// true/false positives and false negatives over all (row, class) pairs (multi-label, logit > 0).
struct ScoreCounts {
  std::int64_t correct = 0, total = 0;
  std::int64_t true_pos = 0, false_pos = 0, false_neg = 0;

  ScoreCounts& operator+=(const ScoreCounts& o);
  /// The five counts in a fixed order, for one all-reduce, and back.
  std::array<std::int64_t, 5> to_array() const;
  static ScoreCounts from_array(const std::array<std::int64_t, 5>& a);
  /// correct / total (0 when total is 0).
  double accuracy() const;
  /// 2 tp / (2 tp + fp + fn) (0 when tp is 0).
  double f1_micro() const;
  /// f1_micro() for multi-label data, accuracy() otherwise.
  double score(bool multilabel) const { return multilabel ? f1_micro() : accuracy(); }
};

ScoreCounts count_scores(const Device& dev, const LossTargets& t, ConstDenseView logits,
                         const std::uint8_t* mask);

}  // namespace halognn
