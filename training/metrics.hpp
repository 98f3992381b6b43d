#pragma once
/// @file metrics.hpp
/// What a training run reports: one record per epoch and a final summary (docs/training.md,
/// "Metrics"). Both are identical on every rank after the trainer's reductions.
#include <cstdint>
#include <optional>
#include <string>

#include "core/json.hpp"

namespace halognn {

/// Accuracy (single-label) or F1-micro (multi-label) per split, over all ranks.
struct SplitScores {
  double train = 0, val = 0, test = 0;
};

struct EpochMetrics {
  std::int64_t epoch = 0;
  double loss = 0;
  double train_score = 0;               ///< from the training forward pass (dropout on)
  std::optional<SplitScores> eval;      ///< evaluation pass (no dropout), every eval_every epochs
  double epoch_s = 0;                   ///< slowest rank
  double compute_s = 0, comm_s = 0, codec_s = 0;  ///< mean over ranks
  std::uint64_t bytes_sent = 0;         ///< training exchanges + all-reduces, all ranks
  std::uint64_t eval_bytes_sent = 0;    ///< evaluation pass, all ranks
  bool synchronous = true;              ///< the policy scheduled this epoch synchronous
  int max_staleness = 0;                ///< age in epochs of the oldest halo row or gradient used
  Json halo_age;                        ///< HaloAges::to_json, summed over ranks
  Json policy;                          ///< the policy's own report (refresh: rows by cause)
  Json traffic;                         ///< per layer/direction payload/metadata bytes (all ranks)
  /// Per link p -> q: rows per exchange (plain, and as sent) and bytes per layer and direction.
  Json links;
  Json to_json() const;
};

struct FinalMetrics {
  int best_epoch = -1;
  double best_val = 0, test_at_best_val = 0;
  double total_s = 0;
  std::uint64_t total_bytes_sent = 0;        ///< everything, all ranks, features exchange included
  std::uint64_t feature_exchange_bytes = 0;  ///< the one-time layer-0 exchange, all ranks
  std::string feature_exchange_codec;        ///< codec of that exchange ("fp32": exact)
  Json to_json() const;
};

}  // namespace halognn
