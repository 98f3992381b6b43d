#pragma once
/// @file trainer.hpp
/// Full-graph training on one rank of P: the layer stack, the halo exchanges between layers,
/// dropout/activations, loss, gradient all-reduce, optimiser, evaluation and metrics.
///
/// Per epoch and layer l: the input x_l holds owned rows then halo rows. The owned rows come from
/// layer l-1 (or the features), the halo rows from the exchange (layer 0: once, at start-up,
/// since features never change). Dropout masks are keyed by (seed, epoch, layer, global id), so
/// a halo row gets the mask its owner would give it and P-rank training equals 1-rank training.
/// Backward mirrors it: each layer's backward yields gradients for owned and halo rows; the halo
/// part is sent back to the owners and added into their rows.
#include <cstdint>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "comm/halo_exchange.hpp"
#include "comm/traffic.hpp"
#include "comm/transport.hpp"
#include "compress/codec_plan.hpp"
#include "core/json.hpp"
#include "models/activation.hpp"
#include "models/layer.hpp"
#include "models/local_graph.hpp"
#include "models/optimizer.hpp"
#include "training/train_config.hpp"
#include "partition/local_partition.hpp"

namespace halognn {

/// The score per split over all ranks (accuracy, F1-micro or ROC AUC: Trainer::metric()), and
/// the validation loss (mean over the validation nodes of all ranks; evaluation passes only).
struct SplitScores {
  double train = 0, val = 0, test = 0;
  double val_loss = 0;
};

/// What one epoch reports (identical on every rank after the reductions).
struct EpochMetrics {
  std::int64_t epoch = 0;
  double loss = 0;
  double lr = 0;                        ///< learning rate of this epoch's step
  double train_score = 0;               ///< from the training forward pass (dropout on)
  std::optional<SplitScores> eval;      ///< evaluation pass (no dropout), every eval_every epochs
  double epoch_s = 0;                   ///< slowest rank
  double compute_s = 0, comm_s = 0, codec_s = 0;  ///< mean over ranks
  std::uint64_t bytes_sent = 0;         ///< training exchanges + all-reduces, all ranks
  std::uint64_t eval_bytes_sent = 0;    ///< evaluation pass, all ranks
  bool synchronous = true;              ///< every halo row used was from this epoch
  int max_staleness = 0;                ///< age in epochs of the oldest halo row used
  Json traffic;                         ///< per layer/direction payload/metadata bytes (all ranks)
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
  Json to_json() const;
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
  FinalMetrics run(const std::function<void(const EpochMetrics&)>& on_epoch);

  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  const TrafficCounter& traffic() const { return traffic_; }
  bool multilabel() const { return part_.multilabel; }
  /// The per-split score (TrainConfig::metric with "auto" resolved for the data).
  MetricKind metric() const { return metric_; }
  /// Every layer's parameters, in layer order.
  std::vector<Parameter*> parameters() const;
  /// The optimiser (its learning rate is set per epoch by run()).
  Optimizer& optimizer() { return *optimizer_; }
  /// Whether layer 0 reads its input as CSR (TrainConfig::sparse_features and fewer than 10% of
  /// this rank's owned feature entries non-zero); see Layer::set_sparse_input.
  bool sparse_input() const { return sparse_input_; }

 private:
  void exchange_features_once();
  /// Whether epoch `t` exchanges synchronously (always in sync mode; in pipelined mode the first
  /// epoch, which has no history, and every staleness_bound-th epoch).
  bool synchronous_epoch(std::int64_t t) const;
  void forward(std::int64_t epoch, bool training);
  double loss_and_grad();
  void backward(std::int64_t epoch);
  /// Pipelined forward of layer l >= 1: installs the rows that arrived from the previous epoch's
  /// exchange into x_[l]'s halo rows and posts this epoch's exchange.
  void pipelined_forward_exchange(int l, std::int64_t epoch);
  /// Pipelined backward of layer l >= 1: adds the halo gradients that arrived from the previous
  /// epoch into the owned rows of `gx` and posts this epoch's halo gradients.
  void pipelined_backward_exchange(int l, std::int64_t epoch, DenseView gx);
  /// Completes (and drops) whatever is still in flight, e.g. before a synchronous epoch.
  void drain(int l);
  /// Progresses in-flight exchanges (test-polling between kernels).
  void poll();
  void all_reduce_gradients();
  /// Scores of the logits in logits_: the training split only, or all three (collective).
  SplitScores scores(bool eval_all);
  std::array<std::int64_t, 9> score_counts(bool eval_all) const;
  static SplitScores scores_from_counts(const std::array<std::int64_t, 9>& c, bool multilabel);
  /// ROC AUC per split: every rank's scores (logit 1 - logit 0) and labels, written at their
  /// global node ids into zeroed arrays and summed over ranks, so every rank ranks all nodes.
  SplitScores roc_auc_scores(bool eval_all);
  /// Mean loss of logits_ over the validation nodes of all ranks (collective).
  double validation_loss();
  std::uint64_t global_bytes(std::uint64_t local) const;

  TrainConfig cfg_;
  Activation activation_ = Activation::relu;
  MetricKind metric_ = MetricKind::accuracy;
  LocalPartition part_;
  Transport& transport_;
  DevicePtr dev_;
  LocalGraph graph_;
  std::shared_ptr<const HaloPlan> plan_;
  TrafficCounter traffic_;
  std::unique_ptr<HaloExchange> exchange_;
  CodecPlan codecs_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::unique_ptr<Optimizer> optimizer_;

  std::vector<Matrix> x_;    ///< layer inputs, num_local x in_dim(l)
  std::vector<Matrix> xd_;   ///< after dropout (empty when dropout == 0)
  std::vector<Matrix> gx_;   ///< gradients w.r.t. layer inputs
  std::vector<Matrix> xe_;   ///< evaluation inputs in pipelined mode (keeps x_'s stale halo rows)

  // Pipelined mode, per layer (entries for layer 0 unused: its halo rows never change).
  std::vector<Matrix> halo_next_;    ///< where this epoch's forward exchange decodes to
  std::vector<Matrix> grad_next_;    ///< where this epoch's backward exchange adds into
  std::vector<Matrix> grad_smooth_;  ///< moving average of received gradients (smoothing > 0)
  std::vector<Request> fwd_inflight_, bwd_inflight_;
  /// Posted exchanges whose data has not been consumed yet (a request completed by poll() is no
  /// longer pending, but its rows still wait in halo_next_ / grad_next_).
  std::vector<bool> fwd_unconsumed_, bwd_unconsumed_;
  std::vector<std::int64_t> fwd_posted_epoch_;  ///< epoch whose rows fwd_inflight_ carries
  std::vector<std::int64_t> halo_epoch_;        ///< epoch whose rows x_[l]'s halo holds
  int epoch_max_age_ = 0;
  Matrix logits_, glogits_;
  Buffer<std::int32_t> labels_;
  Buffer<std::uint8_t> label_matrix_, train_mask_, val_mask_;
  bool sparse_input_ = false;
  CsrMatrix x0_csr_;         ///< sparse mode: x_[0] (all local rows) as CSR, after the exchange
  Buffer<float> x0_dropped_; ///< sparse mode: x0_csr_'s values after this epoch's dropout
  bool features_exchanged_ = false;
  std::uint64_t feature_exchange_bytes_ = 0;
  double allreduce_s_ = 0;
  std::uint64_t allreduce_bytes_ = 0;
  std::uint64_t metric_bytes_ = 0;  ///< all-reduce volume of ROC AUC inputs since the last reset
};

}  // namespace halognn
