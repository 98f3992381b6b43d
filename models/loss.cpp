#include "models/loss.hpp"

#include "core/error.hpp"
#include "core/kernels/kernels.hpp"

namespace halognn {

double loss_and_grad(const Device& dev, const LossTargets& t, ConstDenseView logits,
                     const std::uint8_t* mask, float scale, DenseView grad) {
  if (t.multilabel) {
    GNN_ASSERT(t.label_matrix != nullptr || logits.rows == 0, "multi-label loss without targets");
    return kernels::sigmoid_bce(dev, logits, t.label_matrix, mask, scale, grad);
  }
  GNN_ASSERT(t.labels != nullptr || logits.rows == 0, "single-label loss without labels");
  return kernels::softmax_cross_entropy(dev, logits, t.labels, mask, scale, grad);
}

ScoreCounts& ScoreCounts::operator+=(const ScoreCounts& o) {
  correct += o.correct;
  total += o.total;
  true_pos += o.true_pos;
  false_pos += o.false_pos;
  false_neg += o.false_neg;
  return *this;
}

std::array<std::int64_t, 5> ScoreCounts::to_array() const {
  return {correct, total, true_pos, false_pos, false_neg};
}

ScoreCounts ScoreCounts::from_array(const std::array<std::int64_t, 5>& a) {
  return {a[0], a[1], a[2], a[3], a[4]};
}

double ScoreCounts::accuracy() const {
  return total == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(total);
}

double ScoreCounts::f1_micro() const {
  if (true_pos == 0) return 0.0;
  const double tp = static_cast<double>(true_pos);
  return 2.0 * tp / (2.0 * tp + static_cast<double>(false_pos + false_neg));
}

ScoreCounts count_scores(const Device& dev, const LossTargets& t, ConstDenseView logits,
                         const std::uint8_t* mask) {
  ScoreCounts c;
  if (logits.rows == 0) return c;
  if (t.multilabel) {
    const auto m = kernels::count_multilabel(dev, logits, t.label_matrix, mask);
    c.true_pos = m.true_pos;
    c.false_pos = m.false_pos;
    c.false_neg = m.false_neg;
    return c;
  }
  const auto a = kernels::count_correct(dev, logits, t.labels, mask);
  c.correct = a.correct;
  c.total = a.total;
  return c;
}

}  // namespace halognn
