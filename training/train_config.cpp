#include "training/train_config.hpp"

#include <cmath>

#include "comm/emulated_link.hpp"
#include "core/error.hpp"

namespace halognn {

const char* to_string(ModelKind k) {
  switch (k) {
    case ModelKind::gcn: return "gcn";
    case ModelKind::sage: return "sage";
    case ModelKind::gat: return "gat";
    case ModelKind::gin: return "gin";
  }
  return "?";
}

const char* to_string(OptimizerKind k) { return k == OptimizerKind::adam ? "adam" : "sgd"; }

const char* to_string(HaloRows r) { return r == HaloRows::plain ? "plain" : "semantic"; }

HaloRows parse_halo_rows(const std::string& s) {
  if (s == "plain") return HaloRows::plain;
  if (s == "semantic") return HaloRows::semantic;
  throw ConfigError("unknown --halo-rows '" + s + "' (choose from: plain, semantic)");
}

const char* to_string(Architecture a) { return a == Architecture::plain ? "plain" : "residual"; }

Architecture parse_architecture(const std::string& s) {
  if (s == "plain") return Architecture::plain;
  if (s == "residual") return Architecture::residual;
  throw ConfigError("unknown --architecture '" + s + "' (choose from: plain, residual)");
}

OptimizerKind parse_optimizer_kind(const std::string& s) {
  if (s == "adam") return OptimizerKind::adam;
  if (s == "sgd") return OptimizerKind::sgd;
  throw ConfigError("unknown --optimizer '" + s + "' (choose from: adam, sgd)");
}

const char* to_string(SelectBy s) {
  switch (s) {
    case SelectBy::score: return "score";
    case SelectBy::loss: return "loss";
    case SelectBy::both: return "both";
  }
  return "?";
}

const char* to_string(LrScheduleKind k) {
  switch (k) {
    case LrScheduleKind::constant: return "constant";
    case LrScheduleKind::step: return "step";
    case LrScheduleKind::cosine: return "cosine";
    case LrScheduleKind::plateau: return "plateau";
  }
  return "?";
}

const char* to_string(MetricKind m) {
  switch (m) {
    case MetricKind::automatic: return "auto";
    case MetricKind::accuracy: return "accuracy";
    case MetricKind::f1_micro: return "f1-micro";
    case MetricKind::roc_auc: return "roc-auc";
  }
  return "?";
}

SelectBy parse_select_by(const std::string& s) {
  if (s == "score") return SelectBy::score;
  if (s == "loss") return SelectBy::loss;
  if (s == "both") return SelectBy::both;
  throw ConfigError("unknown --select-by '" + s + "' (choose from: score, loss, both)");
}

LrScheduleKind parse_lr_schedule(const std::string& s) {
  if (s == "constant") return LrScheduleKind::constant;
  if (s == "step") return LrScheduleKind::step;
  if (s == "cosine") return LrScheduleKind::cosine;
  if (s == "plateau") return LrScheduleKind::plateau;
  throw ConfigError("unknown --lr-schedule '" + s +
                    "' (choose from: constant, step, cosine, plateau)");
}

MetricKind parse_metric(const std::string& s) {
  if (s == "auto") return MetricKind::automatic;
  if (s == "accuracy") return MetricKind::accuracy;
  if (s == "f1-micro") return MetricKind::f1_micro;
  if (s == "roc-auc") return MetricKind::roc_auc;
  throw ConfigError("unknown --metric '" + s + "' (choose from: auto, accuracy, f1-micro, roc-auc)");
}

Activation TrainConfig::resolved_activation() const {
  if (activation == "auto") return model == ModelKind::gat ? Activation::elu : Activation::relu;
  return parse_activation(activation);
}

void TrainConfig::validate() const {
  GNN_CHECK_CONFIG(device == "auto" || device == "cpu" || device == "cuda", "unknown --device '",
                   device, "' (choose from: cpu, cuda, auto)");
  GNN_CHECK_CONFIG(transport == "auto" || transport == "nccl" || transport == "mpi",
                   "unknown --transport '", transport, "' (choose from: nccl, mpi, auto)");
  GNN_CHECK_CONFIG(layers >= 1 && layers <= kMaxLayers, "--layers ", layers, " is outside [1, ",
                   kMaxLayers, "]");
  GNN_CHECK_CONFIG(hidden >= 1 && hidden <= kMaxWidth, "--hidden ", hidden, " is outside [1, ",
                   kMaxWidth, "]");
  GNN_CHECK_CONFIG(heads >= 1 && heads <= kMaxHeads, "--heads ", heads, " is outside [1, ",
                   kMaxHeads, "]");
  GNN_CHECK_CONFIG(hidden * heads <= kMaxWidth, "--hidden ", hidden, " times --heads ", heads,
                   " is a layer ", hidden * heads, " wide, above the limit ", kMaxWidth);
  GNN_CHECK_CONFIG(heads == 1 || model == ModelKind::gat, "--heads applies to --model gat only (",
                   to_string(model), " has no attention heads)");
  GNN_CHECK_CONFIG(output_heads >= 1 && output_heads <= kMaxHeads, "--output-heads ", output_heads,
                   " is outside [1, ", kMaxHeads, "]");
  GNN_CHECK_CONFIG(output_heads == 1 || model == ModelKind::gat,
                   "--output-heads applies to --model gat only (", to_string(model),
                   " has no attention heads)");
  GNN_CHECK_CONFIG(attention_dropout >= 0 && attention_dropout < 1,
                   "--attention-dropout must be in [0, 1)");
  GNN_CHECK_CONFIG(attention_dropout == 0 || model == ModelKind::gat,
                   "--attention-dropout applies to --model gat only");
  GNN_CHECK_CONFIG(value_dropout >= 0 && value_dropout < 1, "--value-dropout must be in [0, 1)");
  GNN_CHECK_CONFIG(value_dropout == 0 || model == ModelKind::gat,
                   "--value-dropout applies to --model gat only");
  GNN_CHECK_CONFIG(activation == "auto" || activation == "relu" || activation == "elu",
                   "unknown --activation '", activation, "' (choose from: auto, relu, elu)");
  if (architecture == Architecture::residual) {
    GNN_CHECK_CONFIG(model != ModelKind::gin,
                     "--architecture residual has GCN, SAGE and GAT blocks (--model gcn, sage or "
                     "gat, not gin)");
    // A GAT block splits its width among the heads (Platonov et al.'s GAT module), ends in the
    // architecture's linear head and drops out only inside its feed-forward.
    GNN_CHECK_CONFIG(hidden % heads == 0, "--hidden ", hidden, " must be a multiple of --heads ",
                     heads, " with --architecture residual (a block's heads share its width)");
    GNN_CHECK_CONFIG(output_heads == 1,
                     "--output-heads applies to --architecture plain (residual models end in a "
                     "linear head)");
    GNN_CHECK_CONFIG(attention_dropout == 0 && value_dropout == 0,
                     "--attention-dropout and --value-dropout apply to --architecture plain "
                     "(residual GAT blocks drop out in their feed-forward only)");
    GNN_CHECK_CONFIG(activation == "auto",
                     "--activation applies to --architecture plain (residual blocks use GELU)");
    GNN_CHECK_CONFIG(bias, "--no-bias applies to --architecture plain (residual blocks' linear "
                     "layers have biases)");
    // A group row stands for its members only through a linear aggregation of the exchanged
    // rows; a residual block normalises them first.
    GNN_CHECK_CONFIG(halo_rows == HaloRows::plain,
                     "--halo-rows semantic needs --architecture plain (a residual block "
                     "normalises the exchanged rows before aggregating them)");
  }
  GNN_CHECK_CONFIG((gin_eps == 0 && !train_eps) || model == ModelKind::gin,
                   "--gin-eps and --train-eps apply to --model gin only");
  GNN_CHECK_CONFIG(std::isfinite(gin_eps), "--gin-eps must be finite");
  GNN_CHECK_CONFIG(epochs >= 0, "--epochs must be non-negative");
  GNN_CHECK_CONFIG(std::isfinite(lr) && lr >= 0, "--lr must be a finite number >= 0 (got ", lr,
                   ")");
  GNN_CHECK_CONFIG(std::isfinite(weight_decay) && weight_decay >= 0,
                   "--weight-decay must be a finite number >= 0 (got ", weight_decay, ")");
  GNN_CHECK_CONFIG(dropout >= 0 && dropout < 1, "--dropout must be in [0, 1)");
  GNN_CHECK_CONFIG(eval_every >= 1, "--eval-every must be at least 1");
  GNN_CHECK_CONFIG(patience >= 0, "--patience must be non-negative");
  GNN_CHECK_CONFIG(patience == 0 || patience >= eval_every,
                   "--patience (", patience, " epochs) must be at least --eval-every (", eval_every,
                   "): improvements are only seen at evaluations");
  GNN_CHECK_CONFIG(select_by == SelectBy::score || patience > 0 || restore_best,
                   "--select-by applies to --patience or the best-model restore (both are off)");
  GNN_CHECK_CONFIG(bias || !decay_biases, "--decay-biases with --no-bias: there are no biases");
  GNN_CHECK_CONFIG(!val_loss_l2 || weight_decay > 0,
                   "--val-loss-l2 adds the L2 penalty of --weight-decay, which is 0 here");
  GNN_CHECK_CONFIG(lr_step >= 0, "--lr-step must be non-negative");
  GNN_CHECK_CONFIG(lr_step == 0 || lr_schedule == LrScheduleKind::step,
                   "--lr-step applies to --lr-schedule step only");
  GNN_CHECK_CONFIG(lr_schedule != LrScheduleKind::step || lr_step > 0,
                   "--lr-schedule step needs --lr-step N (epochs between reductions)");
  GNN_CHECK_CONFIG(lr_gamma > 0 && lr_gamma < 1, "--lr-gamma must be in (0, 1)");
  GNN_CHECK_CONFIG(lr_gamma == 0.1f || lr_schedule == LrScheduleKind::step ||
                       lr_schedule == LrScheduleKind::plateau,
                   "--lr-gamma applies to --lr-schedule step or plateau only");
  GNN_CHECK_CONFIG(lr_min >= 0 && (lr_min == 0 || lr_min < lr), "--lr-min must be in [0, --lr)");
  GNN_CHECK_CONFIG(lr_min == 0 || lr_schedule == LrScheduleKind::cosine ||
                       lr_schedule == LrScheduleKind::plateau,
                   "--lr-min applies to --lr-schedule cosine or plateau only");
  GNN_CHECK_CONFIG(lr_warmup >= 0, "--lr-warmup must be non-negative");
  GNN_CHECK_CONFIG(lr_patience >= 1, "--lr-patience must be at least 1");
  GNN_CHECK_CONFIG(lr_patience == 10 || lr_schedule == LrScheduleKind::plateau,
                   "--lr-patience applies to --lr-schedule plateau only");
  GNN_CHECK_CONFIG(momentum == 0 || optimizer == OptimizerKind::sgd,
                   "--momentum applies to --optimizer sgd only (Adam keeps its own moments)");
  GNN_CHECK_CONFIG(momentum >= 0 && momentum < 1, "--momentum must be in [0, 1)");
  GNN_CHECK_CONFIG(exchange == ExchangeMode::pipelined || (sync_every == 0 && smoothing == 0),
                   "--sync-every and --smoothing need --exchange pipelined");
  GNN_CHECK_CONFIG(exchange == ExchangeMode::refresh ||
                       (staleness_bound == 1 && refresh_fraction == 0 &&
                        refresh_by == RefreshConfig::By::grad && !refresh_exact_backward),
                   "--staleness-bound, --refresh-fraction, --refresh-by and "
                   "--refresh-exact-backward need --exchange refresh");
  GNN_CHECK_CONFIG(overlap || exchange == ExchangeMode::sync,
                   "--no-overlap applies to --exchange sync (the other policies do not wait for "
                   "this epoch's halo rows)");
  GNN_CHECK_CONFIG(overlap || (model != ModelKind::gat && architecture == Architecture::plain),
                   "--no-overlap: --model gat and --architecture residual never overlap (their "
                   "layers do not split around the exchange)");
  GNN_CHECK_CONFIG(staleness_bound >= 1, "--staleness-bound must be at least 1 (1: every row "
                   "every epoch, exact)");
  GNN_CHECK_CONFIG(refresh_fraction >= 0 && refresh_fraction <= 1,
                   "--refresh-fraction must be in [0, 1]");
  GNN_CHECK_CONFIG(sync_every >= 0, "--sync-every must be non-negative");
  GNN_CHECK_CONFIG(smoothing >= 0 && smoothing < 1, "--smoothing must be in [0, 1)");
  if (!emulate_link.empty()) {
    const LinkModel link = parse_link_model(emulate_link);
    // A slower link would make every epoch take hours: a hang in all but name.
    GNN_CHECK_CONFIG(std::isfinite(link.gbps) && link.gbps >= kMinLinkGbps,
                     "--emulate-link: bandwidth ", link.gbps, " Gb/s is below the minimum ",
                     kMinLinkGbps, " Gb/s (1 Mb/s)");
    GNN_CHECK_CONFIG(std::isfinite(link.latency_us) && link.latency_us >= 0 &&
                         link.latency_us <= kMaxLinkLatencyUs,
                     "--emulate-link: latency ", link.latency_us, " us is outside [0, ",
                     kMaxLinkLatencyUs, "] us");
  }
  GNN_CHECK_CONFIG(std::isfinite(comm_timeout_s) && comm_timeout_s >= 0 &&
                       comm_timeout_s <= kMaxCommTimeoutS,
                   "--comm-timeout must be in [0, ", kMaxCommTimeoutS,
                   "] seconds (0 disables the watchdog; got ", comm_timeout_s, ")");
  GNN_CHECK_CONFIG(checkpoint_every >= 0, "--checkpoint-every must be non-negative (0: after the "
                   "last epoch only)");
  GNN_CHECK_CONFIG(keep_checkpoints >= 0, "--keep-checkpoints must be non-negative (0: keep all)");
  GNN_CHECK_CONFIG(!checkpoint_dir.empty() || (checkpoint_every == 0 && keep_checkpoints == 0),
                   "--checkpoint-every and --keep-checkpoints need --checkpoint-dir");
  GNN_CHECK_CONFIG(std::isfinite(memory_budget_gib) && memory_budget_gib >= 0,
                   "--memory-budget must be a finite number of GiB >= 0 (0: physical memory; got ",
                   memory_budget_gib, ")");
}

Json TrainConfig::to_json() const {
  Json j = Json::object();
  j["partition"] = partition_dir;
  j["device"] = device;
  j["transport"] = transport;
  j["metrics"] = metrics_path;
  j["quiet"] = quiet;
  j["comm_timeout"] = comm_timeout_s;
  j["memory_budget"] = memory_budget_gib;
  j["model"] = to_string(model);
  j["architecture"] = to_string(architecture);
  j["layers"] = layers;
  j["hidden"] = hidden;
  j["heads"] = heads;
  j["output_heads"] = output_heads;
  j["attention_dropout"] = attention_dropout;
  j["value_dropout"] = value_dropout;
  j["activation"] = activation;
  j["gin_eps"] = gin_eps;
  j["train_eps"] = train_eps;
  j["epochs"] = epochs;
  j["lr"] = lr;
  j["weight_decay"] = weight_decay;
  j["no_bias"] = !bias;
  j["decay_biases"] = decay_biases;
  j["decay_first_layer_only"] = decay_first_layer_only;
  j["optimizer"] = to_string(optimizer);
  j["momentum"] = momentum;
  j["dropout"] = dropout;
  j["seed"] = seed;
  j["eval_every"] = eval_every;
  j["metric"] = to_string(metric);
  j["patience"] = patience;
  j["select_by"] = to_string(select_by);
  j["no_restore_best"] = !restore_best;
  j["val_loss_l2"] = val_loss_l2;
  j["lr_schedule"] = to_string(lr_schedule);
  j["lr_step"] = lr_step;
  j["lr_gamma"] = lr_gamma;
  j["lr_min"] = lr_min;
  j["lr_warmup"] = lr_warmup;
  j["lr_patience"] = lr_patience;
  j["row_normalize"] = row_normalize_features;
  j["dense_features"] = !sparse_features;
  j["numerics"] = kernels::to_string(numerics);
  j["codec"] = codec;
  j["codec_forward"] = codec_forward;
  j["codec_backward"] = codec_backward;
  j["compress_layer0"] = compress_layer0;
  j["halo_rows"] = to_string(halo_rows);
  j["exchange"] = to_string(exchange);
  j["sync_every"] = sync_every;
  j["smoothing"] = smoothing;
  // Only refresh has a per-row bound; with pipelined the name would mean --sync-every (its old
  // name), so it is left out of other configurations.
  if (exchange == ExchangeMode::refresh) j["staleness_bound"] = staleness_bound;
  j["refresh_fraction"] = refresh_fraction;
  j["refresh_by"] = to_string(refresh_by);
  j["refresh_exact_backward"] = refresh_exact_backward;
  j["no_overlap"] = !overlap;
  j["emulate_link"] = emulate_link;
  j["checkpoint_dir"] = checkpoint_dir;
  j["checkpoint_every"] = checkpoint_every;
  j["keep_checkpoints"] = keep_checkpoints;
  j["resume"] = resume_dir;
  j["save_model"] = save_model_path;
  return j;
}

}  // namespace halognn
