#pragma once
/// @file trainer.hpp
/// Full-graph training on one rank of P: the layer stack, dropout and activations, loss, gradient
/// all-reduce, optimiser, evaluation and metrics.
///
/// Per epoch and layer l: the input x_l holds owned rows then halo rows (the halo rows of some
/// layers in another layer's matrix: docs/training.md "Halo rows shared by layers"). The owned
/// rows come from layer l-1 (or the features), the halo rows from the exchange policy (layer 0:
/// once, at start-up, since features never change). Dropout masks are keyed by (seed, epoch,
/// layer, global id), so a halo row gets the mask its owner would give it and P-rank training
/// equals 1-rank training. Backward mirrors it: each layer's backward yields gradients for owned and halo rows;
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
#include "core/data/state_io.hpp"
#include "compress/codec_plan.hpp"
#include "core/json.hpp"
#include "models/activation.hpp"
#include "models/layer.hpp"
#include "models/local_graph.hpp"
#include "models/optimizer.hpp"
#include "training/lr_schedule.hpp"
#include "training/metrics.hpp"
#include "training/model_selection.hpp"
#include "training/feature_rows.hpp"
#include "training/halo_sharing.hpp"
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

/// What the trainer itself carries from one epoch to the next, besides the parameters, the
/// optimiser and the exchange policy (all four are what a checkpoint holds).
struct TrainerState {
  std::int64_t next_epoch = 0;          ///< epochs finished: run() continues with this one
  int best_epoch = -1;                  ///< the epoch of the best validation score so far
  double best_val = 0, test_at_best_val = 0;
  std::uint64_t bytes_sent = 0;         ///< training and evaluation bytes of the epochs finished
  double train_s = 0;                   ///< wall time of run() spent in the epochs finished
  double best_val_loss = 0;             ///< validation loss at best_epoch
  SplitScores final_scores;             ///< the last evaluation
  int final_epoch = -1;                 ///< its epoch

  /// Under "trainer/" (checkpoints).
  void save(StateWriter& w) const;
  void load(const StateReader& r);
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
  /// The epochs from state().next_epoch (0, or where a checkpoint left off) to cfg.epochs; calls
  /// `on_epoch` after each (rank 0 prints from it), then `after_epoch` with the epoch once its
  /// state is final (every rank; checkpoints are written from there). Returns the summary.
  /// Throws TrainingDiverged (on every rank) after an epoch whose loss is not finite.
  FinalMetrics run(const std::function<void(const EpochMetrics&)>& on_epoch,
                   const std::function<void(std::int64_t)>& after_epoch = {});

  /// Checkpoints (training/checkpoint.hpp): the parameters ("params/<name>"), the optimiser
  /// ("optimizer/"), the exchange policy ("policy/", which completes its exchanges in flight)
  /// and the TrainerState ("trainer/"). Call between epochs, on every rank.
  void save_state(StateWriter& w);
  /// Restores what save_state wrote, into a trainer built with the same configuration and
  /// partition; throws InputError naming the file for a missing array or another shape.
  void load_state(const StateReader& r);
  /// The parameters alone, one array per parameter under its name ("layer0.weight", ...).
  void save_parameters(StateWriter& w) const;
  void load_parameters(const StateReader& r);
  const TrainerState& state() const { return state_; }

  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  const TrafficCounter& traffic() const { return traffic_; }
  bool multilabel() const { return part_.multilabel; }
  /// The per-split score (TrainConfig::metric with "auto" resolved for the data).
  MetricKind metric() const { return metric_; }
  /// Every layer's parameters, in layer order.
  std::vector<Parameter*> parameters() const;
  /// The optimiser (its learning rate is set per epoch by run()).
  Optimizer& optimizer() { return *optimizer_; }
  const ExchangePolicy& policy() const { return *policy_; }
  /// Halo rows one exchange of a layer >= 1 moves over all links: plain rows, and the rows this
  /// run sends (group rows with --halo-rows semantic). Collective.
  std::pair<std::int64_t, std::int64_t> rows_per_exchange();
  /// Whether layer 0 reads its input as CSR (TrainConfig::sparse_features and fewer than 10% of
  /// this rank's owned feature entries non-zero); see Layer::set_sparse_input.
  bool sparse_input() const { return sparse_input_; }
  /// Whether layer 0 reads sparsified features (positions + codebook: a partition written with
  /// --sparsify-features).
  bool compact_input() const { return compact_input_; }
  /// The layer-0 exchange (collective; once per run, later calls return at once). run() and
  /// evaluate() call it; a caller may call it earlier to report feature_bytes() at start-up.
  void exchange_features() { exchange_features_once(); }
  /// The owned rows of layer l's output in the last forward pass (training or evaluation):
  /// after the activation for l < layers - 1 (after a training pass with dropout and ReLU, also
  /// after the next layer's dropout, applied in place), the logits for the last layer.
  ConstDenseView layer_output(int l) const {
    GNN_ASSERT(l >= 0 && l < cfg_.layers, "layer_output: no layer ", l);
    return l + 1 < cfg_.layers ? ConstDenseView(x_[l + 1].view().rows_range(0, part_.num_owned))
                               : ConstDenseView(logits_.view());
  }
  /// Feature bytes of all ranks (valid after exchange_features()).
  const FeatureBytes& feature_bytes() const { return feature_bytes_; }

 private:
  void exchange_features_once();
  void exchange_compact_features();
  /// Whether layer 0's features cross as exact rows with sparse ones as pairs
  /// (training/feature_rows.hpp) rather than through the halo exchange's layer-0 codec.
  bool feature_rows_exchange() const;
  /// Whether layers >= 1 apply dropout to their input in place instead of into a copy.
  bool dropout_in_place() const;
  /// Whether layer 0's dropped-out dense features live in the last layer's input
  /// (drawn in the forward and again before layer 0's backward) instead of a buffer of their own.
  bool layer0_dropout_shared() const;
  /// Layer l's input (l >= 1), its dropped-out copy (xd_[l]) and its input gradient, as owned
  /// and halo rows.
  LocalRows input_rows(int l);
  LocalRows dropout_rows(int l);
  LocalRows gradient_rows(int l);
  /// Layer l's dropout of epoch `epoch` on its owned rows or (halo) its halo rows: forward from
  /// src into dst (with `relu`, of ReLU(src): relu_dropout_forward), or backward on a gradient
  /// (src and dst the same rows).
  void dropout_part(std::int64_t epoch, int l, bool halo, bool backward, ConstDenseView src,
                    DenseView dst, bool relu);
  /// Layer l's forward / backward with its rows as two views (split layers), or whole.
  void layer_forward(int l, LocalRows in, DenseView y, const ForwardContext& ctx);
  void layer_backward(int l, ConstDenseView gy, LocalRows gx);
  /// Where layer 0's dropped-out features are: xd_[0], or the start of gx_[layers - 1].
  DenseView layer0_dropout_view();
  /// Draws layer 0's dropout of epoch `epoch` from x_[0] into layer0_dropout_view().
  void draw_layer0_dropout(std::int64_t epoch);
  void exchange_feature_rows();
  /// Fills feature_bytes_ (collective), once the layer-0 input has its final form.
  void finish_feature_bytes();
  /// Whether layer l >= 1 runs split around its exchange (TrainConfig::overlap, a layer that
  /// splits, and in training a policy whose exchanges split; Layer::splits()).
  bool overlap_layer(int l, bool training) const;
  void forward(std::int64_t epoch, bool training);
  double loss_and_grad();
  void backward(std::int64_t epoch);
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
  /// The per-link report of this epoch's training traffic (collective).
  Json link_metrics();
  void ensure_link_rows();

  TrainConfig cfg_;
  Activation activation_ = Activation::relu;
  /// Dropout of the layer inputs: --dropout, or 0 for residual blocks (they drop out inside).
  float input_dropout_ = 0.0f;
  MetricKind metric_ = MetricKind::accuracy;
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

  std::vector<Matrix> x_;    ///< layer inputs, num_local x in_dim(l) (num_owned rows when the
                             ///< halo rows are elsewhere: halo_sharing_)
  std::vector<Matrix> xd_;   ///< after dropout (empty when dropout == 0, for l >= 1 when
                             ///< dropout_in_place(), for l = 0 when layer0_dropout_shared())
  std::vector<Matrix> gx_;   ///< gradients w.r.t. layer inputs (as x_)
  /// Where each layer input's and input gradient's halo rows are (training/halo_sharing.hpp).
  HaloSharing halo_sharing_;
  Matrix shared_halo_;       ///< num_halo x shared_width, when the plan has a shared buffer
  std::vector<DenseView> x_halo_, gx_halo_;  ///< layer l's halo rows, wherever they are
  Matrix logits_, glogits_;
  Buffer<std::int32_t> labels_;
  Buffer<std::uint8_t> label_matrix_, train_mask_, val_mask_;
  bool sparse_input_ = false;
  CsrMatrix x0_csr_;         ///< sparse mode: x_[0] (all local rows) as CSR, after the exchange
  Buffer<float> x0_dropped_; ///< sparse mode: x0_csr_'s values after this epoch's dropout
  /// Sparse mode with the feature-rows exchange: the owned rows' CSR on the host, then the
  /// received halo rows appended, until the exchange moves it to x0_csr_.
  std::unique_ptr<HostCsr> x0_host_;
  bool compact_input_ = false;
  std::vector<std::uint8_t> x0_pos_host_;  ///< compact mode: all local rows' positions, until the exchange
  Buffer<std::uint8_t> x0_pos_;            ///< compact mode: all local rows' positions (num_local x slots)
  Buffer<float> x0_codebook_;              ///< compact mode: the codebook (slots)
  Buffer<std::int32_t> x0_slot_base_;      ///< compact mode: each slot's chunk start column
  std::int64_t x0_slots_ = 0;
  FeatureBytes feature_bytes_;
  bool features_exchanged_ = false;
  std::uint64_t feature_exchange_bytes_ = 0;
  double allreduce_s_ = 0;
  /// This epoch's training pass: seconds computed while an exchange was in flight, and the
  /// exchanges (layer, direction) that ran split.
  double overlap_s_ = 0;
  int overlapped_ = 0;
  std::uint64_t allreduce_bytes_ = 0;
  std::uint64_t metric_bytes_ = 0;  ///< all-reduce volume of ROC AUC inputs since the last reset
  /// [0, K²): plain rows per exchange of link p -> q at p * K + q; [K², 2K²): rows sent.
  std::vector<std::int64_t> link_rows_;
  TrainerState state_;
  ModelSelection selection_;  ///< best evaluation and patience (docs/training.md, protocol)
  LrSchedule schedule_;       ///< the learning rate per epoch
  ParameterSnapshot best_;    ///< the best evaluation's parameters (--restore-best)
};

}  // namespace halognn
