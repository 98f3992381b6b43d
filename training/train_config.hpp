#pragma once
/// @file train_config.hpp
/// Everything a training run is configured by. The CLI (training/train_cli.hpp) only fills this
/// struct; `to_json` is what --dump-config prints, what --config reads back and what the metrics
/// file records. Its keys are the command-line option names with '_' for '-'.
#include <cstdint>
#include <string>

#include "comm/exchange_policy.hpp"
#include "core/json.hpp"
#include "models/activation.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "models/layer.hpp"

namespace halognn {

enum class OptimizerKind { adam, sgd };

/// Which rows a halo exchange carries: every boundary row, or one row per semantic group
/// (docs/semantic_groups.md; needs a partition built with --groups semantic).
enum class HaloRows { plain, semantic };

/// Which validation quantity makes an evaluation the best so far (model selection, early stopping
/// and the plateau schedule): the score (strictly higher), the loss (strictly lower), or both
/// (Velickovic et al.'s rule: training goes on while either improves, ties included, and the
/// kept model is the last one that improved both); training/model_selection.hpp has the details.
enum class SelectBy { score, loss, both };

/// How the layers are stacked (docs/models.md): `plain`, the model's layers with --activation and
/// --dropout between them; `residual`, Platonov et al.'s architecture (an input linear layer,
/// --layers residual blocks of --hidden with layer norms and feed-forward layers, an output
/// head; models/residual_block.cpp).
enum class Architecture { plain, residual };

/// The learning rate per epoch (training/lr_schedule.hpp).
enum class LrScheduleKind { constant, step, cosine, plateau };

/// What the per-split score is: accuracy (single-label), F1-micro (multi-label), or the ROC AUC
/// of a binary task; `automatic` picks accuracy or F1-micro from the data.
enum class MetricKind { automatic, accuracy, f1_micro, roc_auc };

struct TrainConfig {
  std::string partition_dir;
  std::string device = "auto";     ///< cpu | cuda | auto
  std::string transport = "auto";  ///< nccl | mpi | auto
  ModelKind model = ModelKind::gcn;
  Architecture architecture = Architecture::plain;
  int layers = 2;               ///< plain: layers; residual: residual blocks
  std::int64_t hidden = 16;
  int heads = 1;               ///< GAT attention heads of hidden layers (concatenated)
  int output_heads = 1;        ///< GAT attention heads of the last layer (averaged)
  float attention_dropout = 0.0f;  ///< GAT: dropout of attention coefficients in training
  float value_dropout = 0.0f;      ///< GAT: dropout of the aggregated values z = x W in training
  /// Between layers: "relu", "elu", or "auto" (ELU for GAT as published, ReLU otherwise).
  std::string activation = "auto";
  float gin_eps = 0.0f;        ///< GIN: a node's own row weighs 1 + eps
  bool train_eps = false;      ///< GIN: eps is a trained parameter (GIN-eps), gin_eps its start
  int epochs = 200;
  float lr = 0.01f;
  float weight_decay = 5e-4f;
  /// Layers add a bias (Kipf & Welling's reference GCN has none: --no-bias).
  bool bias = true;
  bool decay_biases = false;   ///< biases (and GIN's eps) are not decayed unless this is set
  /// Decay the first layer's parameters only (Kipf & Welling's GCN, Shchur et al.'s GCN and SAGE).
  bool decay_first_layer_only = false;
  OptimizerKind optimizer = OptimizerKind::adam;
  float momentum = 0.0f;       ///< SGD only
  float dropout = 0.5f;  ///< plain: of every layer's input; residual: inside the blocks
  std::uint64_t seed = 1;
  int eval_every = 1;
  MetricKind metric = MetricKind::automatic;

  // Training protocol (docs/training.md "Early stopping, model selection, schedules").
  /// Stop when the selected validation quantity has not improved for this many epochs (0: off).
  int patience = 0;
  SelectBy select_by = SelectBy::score;
  /// After training, load the parameters of the best evaluation and evaluate them once more.
  bool restore_best = true;
  /// The validation loss (model selection, patience, the metrics' val_loss) adds the L2 penalty
  /// whose gradient the weight decay is, weight_decay / 2 * sum of w^2 over the decayed
  /// parameters, as Shchur et al.'s reference implementation does.
  bool val_loss_l2 = false;
  LrScheduleKind lr_schedule = LrScheduleKind::constant;
  int lr_step = 0;             ///< step: multiply by lr_gamma every lr_step epochs
  float lr_gamma = 0.1f;       ///< step, plateau: the factor
  float lr_min = 0.0f;         ///< cosine: the final rate; plateau: the floor
  int lr_warmup = 0;           ///< linear warm-up from lr/lr_warmup over the first epochs
  int lr_patience = 10;        ///< plateau: epochs without improvement before a reduction
  bool row_normalize_features = false;
  /// Layer 0 reads the features as CSR when fewer than 10% of a rank's entries are non-zero
  /// (bag-of-words data; same results up to float summation order); false forces the dense path.
  bool sparse_features = true;
  /// CPU kernel numerics (core/kernels/cpu_isa.hpp): fast fuses multiply-adds where the CPU has
  /// FMA; portable gives the same bits on every x86-64 CPU. Process-wide: halognn-train applies
  /// it with kernels::set_cpu_numerics before building the Trainer.
  kernels::CpuNumerics numerics = kernels::CpuNumerics::fast;
  std::string metrics_path;    ///< JSON lines, one appended per epoch; empty = none
  bool quiet = false;          ///< no per-epoch progress lines
  /// Seconds one blocking communication step may take before the watchdog aborts every rank
  /// (comm/watchdog.hpp); 0 disables the watchdog.
  double comm_timeout_s = 300;
  /// Refuse a run whose estimated peak memory (training/memory_estimate.hpp) on one node exceeds
  /// this many GiB; 0 = the node's physical memory (or its cgroup limit, if lower).
  double memory_budget_gib = 0;

  // Codecs (compress/): names or per-layer comma lists, see docs/codecs.md.
  std::string codec = "fp32";
  std::string codec_forward;
  std::string codec_backward;
  /// Layer-0 halo features never change: exchange them once at start-up, exactly (fp32) unless
  /// this is set, in which case the layer-0 forward codec is used for that one exchange.
  bool compress_layer0 = false;

  HaloRows halo_rows = HaloRows::plain;

  // Exchange policy.
  ExchangeMode exchange = ExchangeMode::sync;
  /// pipelined: one synchronous epoch every N epochs, epoch 0 included (Sylvie's epsilon_s; 0 =
  /// only epoch 0). A synchronisation period, not a per-row bound.
  int sync_every = 0;
  float smoothing = 0.0f;      ///< pipelined: moving-average gamma for stale rows (0 = off)
  /// refresh: a halo row is re-sent when its age reaches this bound (1: every epoch, exact).
  int staleness_bound = 1;
  double refresh_fraction = 0;  ///< refresh: of the other rows, this fraction by importance
  RefreshConfig::By refresh_by = RefreshConfig::By::grad;
  bool refresh_exact_backward = false;  ///< refresh: every gradient crosses back, every epoch
  /// sync: layers that split (GCN, SAGE, GIN) compute what needs no halo row while their
  /// exchanges are in flight (docs/training.md "Overlap"); --no-overlap waits first. Same bits.
  bool overlap = true;
  // Checkpoints and saved models (training/checkpoint.hpp, docs/training.md "Checkpoints and
  // resume").
  std::string checkpoint_dir;    ///< write checkpoints here; empty = none
  /// A checkpoint after every N-th finished epoch and after the last (0: after the last only).
  int checkpoint_every = 0;
  int keep_checkpoints = 0;      ///< keep the newest K complete checkpoints (0: all)
  std::string resume_dir;        ///< continue from the newest complete checkpoint here
  std::string save_model_path;   ///< write the trained parameters here (.npz) at the end

  /// "GBPS[,LATENCY_US]" when the transport emulates a cluster link (comm/emulated_link.hpp);
  /// empty for the real transport. Recorded so metrics say the timings are emulated.
  std::string emulate_link;

  /// Throws ConfigError naming the option for a value out of range (non-finite numbers, sizes
  /// beyond the limits below) or an option that the chosen model, optimiser or exchange would
  /// ignore.
  void validate() const;

  /// Hard limits, whatever the memory: they keep every size product far from overflow and every
  /// message tag in range. Memory is checked separately against an estimate.
  static constexpr int kMaxLayers = 1024;
  static constexpr std::int64_t kMaxWidth = std::int64_t{1} << 24;  ///< hidden * heads
  static constexpr int kMaxHeads = 1024;
  static constexpr double kMinLinkGbps = 1e-3;      ///< 1 Mb/s
  static constexpr double kMaxLinkLatencyUs = 1e7;  ///< 10 s
  static constexpr double kMaxCommTimeoutS = 7 * 24 * 3600.0;
  Json to_json() const;
  /// The activation between layers with "auto" resolved for the model.
  Activation resolved_activation() const;
};

const char* to_string(ModelKind k);
const char* to_string(OptimizerKind k);
const char* to_string(HaloRows r);
const char* to_string(Architecture a);
Architecture parse_architecture(const std::string& s);
HaloRows parse_halo_rows(const std::string& s);
OptimizerKind parse_optimizer_kind(const std::string& s);
const char* to_string(SelectBy s);
const char* to_string(LrScheduleKind k);
const char* to_string(MetricKind m);
SelectBy parse_select_by(const std::string& s);
LrScheduleKind parse_lr_schedule(const std::string& s);
MetricKind parse_metric(const std::string& s);

}  // namespace halognn
