#pragma once
/// @file metrics.hpp
/// What a training run reports: one record per epoch and a final summary (docs/training.md,
/// "Metrics"). Both are identical on every rank after the trainer's reductions.
#include <cstdint>
#include <optional>
#include <string>

#include "core/json.hpp"

namespace halognn {

/// The score per split over all ranks (accuracy, F1-micro or ROC AUC: Trainer::metric()), and
/// the validation loss (mean over the validation nodes of all ranks; evaluation passes only).
struct SplitScores {
  double train = 0, val = 0, test = 0;
  double val_loss = 0;
};

struct EpochMetrics {
  std::int64_t epoch = 0;
  double loss = 0;
  double lr = 0;                        ///< learning rate of this epoch's step
  double train_score = 0;               ///< from the training forward pass (dropout on)
  std::optional<SplitScores> eval;      ///< evaluation pass (no dropout), every eval_every epochs
  double epoch_s = 0;                   ///< slowest rank
  double compute_s = 0, comm_s = 0, codec_s = 0;  ///< mean over ranks
  /// Overlap (docs/training.md "Overlap"): the part of compute_s spent while a halo exchange was
  /// in flight (mean over ranks), and the training exchanges, per layer and direction, that ran
  /// split around computation (the same on every rank).
  double overlap_s = 0;
  int overlapped_exchanges = 0;
  std::uint64_t bytes_sent = 0;         ///< training exchanges + all-reduces, all ranks
  std::uint64_t eval_bytes_sent = 0;    ///< evaluation pass, all ranks
  /// The largest device allocator high-water mark over ranks so far (0 on the CPU).
  std::uint64_t device_peak_bytes = 0;
  bool synchronous = true;              ///< the policy scheduled this epoch synchronous
  int max_staleness = 0;                ///< age in epochs of the oldest halo row or gradient used
  Json halo_age;                        ///< HaloAges::to_json, summed over ranks
  Json policy;                          ///< the policy's own report (refresh: rows by cause)
  Json traffic;                         ///< per layer/direction payload/metadata bytes (all ranks)
  /// Per link p -> q: rows per exchange (plain, and as sent) and bytes per layer and direction.
  Json links;
  Json to_json() const;
};

/// Layer-0 feature bytes summed over ranks, against the fp32 matrix they stand for: in the rank
/// files (the feature sections), held for layer 0's input (dense, CSR or sparsified; dropout
/// buffer included), and sent by the one-time layer-0 exchange.
struct FeatureBytes {
  std::uint64_t stored = 0, stored_dense = 0;
  std::uint64_t memory = 0, memory_dense = 0;
  std::uint64_t sent = 0, sent_dense = 0;
  Json to_json() const;
};

struct FinalMetrics {
  int best_epoch = -1;                  ///< the best evaluation (TrainConfig::select_by)
  double best_val = 0, test_at_best_val = 0;
  double best_val_loss = 0;             ///< validation loss at best_epoch
  int epochs_run = 0;                   ///< fewer than TrainConfig::epochs when stopped early
  bool early_stopped = false;
  /// Scores of the model training ends with: the restored best parameters (restored = true,
  /// evaluated once more after training), or the last evaluation's.
  SplitScores final_scores;
  bool restored = false;
  int final_epoch = -1;                 ///< the epoch whose parameters final_scores evaluate
  double total_s = 0;
  std::uint64_t total_bytes_sent = 0;        ///< everything, all ranks, features exchange included
  std::uint64_t feature_exchange_bytes = 0;  ///< the one-time layer-0 exchange, all ranks
  std::string feature_exchange_codec;        ///< codec of that exchange ("fp32": exact)
  std::string feature_form;                  ///< layer 0's input: "dense" | "csr" | "sparsified"
  FeatureBytes feature_bytes;
  Json to_json() const;
};

}  // namespace halognn
