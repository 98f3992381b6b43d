#include "training/roc_auc.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/error.hpp"

namespace halognn {

double binary_roc_auc(std::span<const double> score, std::span<const std::uint8_t> positive) {
  GNN_ASSERT(score.size() == positive.size(), "roc_auc: ", score.size(), " scores but ",
             positive.size(), " labels");
  const std::size_t n = score.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return score[a] < score[b] || (score[a] == score[b] && a < b);
  });
  // Sum of the (1-based, tie-averaged) ranks of the positives.
  double rank_sum = 0.0;
  std::uint64_t pos = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    std::uint64_t tied_pos = 0;
    while (j < n && score[order[j]] == score[order[i]]) tied_pos += positive[order[j++]] != 0;
    const double mid_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    rank_sum += mid_rank * static_cast<double>(tied_pos);
    pos += tied_pos;
    i = j;
  }
  const std::uint64_t neg = n - pos;
  if (pos == 0 || neg == 0) return 0.5;
  const double p = static_cast<double>(pos);
  return (rank_sum - p * (p + 1.0) / 2.0) / (p * static_cast<double>(neg));
}

}  // namespace halognn
