#pragma once
/// @file roc_auc.hpp
/// The area under the ROC curve of a binary task, exactly: the probability that a random
/// positive scores above a random negative, ties counting one half (Mann-Whitney U over
/// mid-ranks). Scores and labels of every rank are first made whole on every rank (each node is
/// owned by one rank; Trainer does that with one all-reduce over the global node ids), so the
/// result does not depend on the rank count beyond the float rounding of the scores themselves.
#include <cstdint>
#include <span>

namespace halognn {

/// AUC of `score` against `positive` (same length, 0/1). 0.5 when one class is absent (no pair
/// to rank; the undefined case gets the value of a random ranking).
double binary_roc_auc(std::span<const double> score, std::span<const std::uint8_t> positive);

}  // namespace halognn
