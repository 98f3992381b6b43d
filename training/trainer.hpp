#pragma once
/// @file trainer.hpp
/// Full-graph training on one rank of P: the layer stack, dropout and activations, loss, gradient
/// all-reduce, optimiser, evaluation and metrics.
///
/// Per epoch and layer l: the input x_l holds owned rows then halo rows. The owned rows come from
/// layer l-1 (or the features), the halo rows from the exchange policy (layer 0: once, at
/// start-up, since features never change). Dropout masks are keyed by (seed, epoch, layer, global
/// id), so a halo row gets the mask its owner would give it and P-rank training equals 1-rank
/// training. Backward mirrors it: each layer's backward yields gradients for owned and halo rows;
/// the policy sends the halo part back to the owners and adds what it has for the owned rows. The
/// trainer does not know which policy runs.
#include <cstdint>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "comm/exchange_policy.hpp"
#include "comm/halo_exchange.hpp"
#include "comm/traffic.hpp"
#include "comm/transport.hpp"
#include "core/error.hpp"
#include "compress/codec_plan.hpp"
#include "core/json.hpp"
#include "models/layer.hpp"
#include "models/local_graph.hpp"
#include "models/optimizer.hpp"
#include "training/metrics.hpp"
#include "training/train_config.hpp"
#include "partition/local_partition.hpp"

namespace halognn {

/// The training loss became NaN or infinite: further epochs cannot recover. Every rank throws it
/// in the same epoch (the loss is all-reduced), after that epoch's on_epoch call.
class TrainingDiverged : public Error {
 public:
  TrainingDiverged(std::int64_t epoch, double loss, const std::string& what)
      : Error(what), epoch_(epoch), loss_(loss) {}
  std::int64_t epoch() const { return epoch_; }
  double loss() const { return loss_; }

 private:
  std::int64_t epoch_;
  double loss_;
};

class Trainer {
 public:
  /// Takes ownership of the rank's partition (its features move to the device).
  Trainer(const TrainConfig& cfg, LocalPartition part, Transport& transport, DevicePtr dev);
  ~Trainer();

  /// One training step (forward, loss, backward, all-reduce, optimiser step) plus, when
  /// `evaluate` is set, an evaluation pass.
  EpochMetrics run_epoch(std::int64_t epoch, bool evaluate);
  /// Evaluation pass only (no dropout, no parameter change).
  SplitScores evaluate(std::int64_t epoch);
  /// All epochs; calls `on_epoch` after each (rank 0 prints from it). Returns the summary.
  /// Throws TrainingDiverged (on every rank) after an epoch whose loss is not finite.
  FinalMetrics run(const std::function<void(const EpochMetrics&)>& on_epoch);

  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  const TrafficCounter& traffic() const { return traffic_; }
  bool multilabel() const { return part_.multilabel; }
  const ExchangePolicy& policy() const { return *policy_; }
  /// Halo rows one exchange of a layer >= 1 moves over all links: plain rows, and the rows this
  /// run sends (group rows with --halo-rows semantic). Collective.
  std::pair<std::int64_t, std::int64_t> rows_per_exchange();
  /// Whether layer 0 reads its input as CSR (TrainConfig::sparse_features and fewer than 10% of
  /// this rank's owned feature entries non-zero); see Layer::set_sparse_input.
  bool sparse_input() const { return sparse_input_; }

 private:
  void exchange_features_once();
  void forward(std::int64_t epoch, bool training);
  double loss_and_grad();
  void backward(std::int64_t epoch);
  void all_reduce_gradients();
  std::array<std::int64_t, 9> score_counts(bool eval_all) const;
  static SplitScores scores_from_counts(const std::array<std::int64_t, 9>& c, bool multilabel);
  std::uint64_t global_bytes(std::uint64_t local) const;
  /// The per-link report of this epoch's training traffic (collective).
  Json link_metrics();
  void ensure_link_rows();

  TrainConfig cfg_;
  LocalPartition part_;
  Transport& transport_;
  DevicePtr dev_;
  LocalGraph graph_;
  std::shared_ptr<const HaloPlan> plain_plan_;  ///< every boundary row (layer 0 always)
  std::shared_ptr<const HaloPlan> plan_;        ///< what layers >= 1 exchange (--halo-rows)
  TrafficCounter traffic_;
  std::unique_ptr<HaloExchange> exchange_;
  /// The one-time layer-0 exchange when it uses another plan than exchange_ (semantic rows
  /// elsewhere, exact plain features here); null otherwise.
  std::unique_ptr<HaloExchange> features_exchange_;
  std::unique_ptr<ExchangePolicy> policy_;
  CodecPlan codecs_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::unique_ptr<Optimizer> optimizer_;

  std::vector<Matrix> x_;    ///< layer inputs, num_local x in_dim(l)
  std::vector<Matrix> xd_;   ///< after dropout (empty when dropout == 0)
  std::vector<Matrix> gx_;   ///< gradients w.r.t. layer inputs
  Matrix logits_, glogits_;
  Buffer<std::int32_t> labels_;
  Buffer<std::uint8_t> label_matrix_, train_mask_;
  bool sparse_input_ = false;
  CsrMatrix x0_csr_;         ///< sparse mode: x_[0] (all local rows) as CSR, after the exchange
  Buffer<float> x0_dropped_; ///< sparse mode: x0_csr_'s values after this epoch's dropout
  bool features_exchanged_ = false;
  std::uint64_t feature_exchange_bytes_ = 0;
  double allreduce_s_ = 0;
  std::uint64_t allreduce_bytes_ = 0;
  /// [0, K²): plain rows per exchange of link p -> q at p * K + q; [K², 2K²): rows sent.
  std::vector<std::int64_t> link_rows_;
};

}  // namespace halognn
