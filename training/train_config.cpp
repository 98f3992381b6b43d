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

const char* to_string(ExchangeMode m) { return m == ExchangeMode::sync ? "sync" : "pipelined"; }

OptimizerKind parse_optimizer_kind(const std::string& s) {
  if (s == "adam") return OptimizerKind::adam;
  if (s == "sgd") return OptimizerKind::sgd;
  throw ConfigError("unknown --optimizer '" + s + "' (choose from: adam, sgd)");
}

ExchangeMode parse_exchange_mode(const std::string& s) {
  if (s == "sync") return ExchangeMode::sync;
  if (s == "pipelined") return ExchangeMode::pipelined;
  throw ConfigError("unknown --exchange '" + s + "' (choose from: sync, pipelined)");
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
  GNN_CHECK_CONFIG(layers >= 1, "--layers must be at least 1");
  GNN_CHECK_CONFIG(hidden >= 1, "--hidden must be at least 1");
  GNN_CHECK_CONFIG(heads >= 1, "--heads must be at least 1");
  GNN_CHECK_CONFIG(heads == 1 || model == ModelKind::gat, "--heads applies to --model gat only (",
                   to_string(model), " has no attention heads)");
  GNN_CHECK_CONFIG(output_heads >= 1, "--output-heads must be at least 1");
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
  GNN_CHECK_CONFIG((gin_eps == 0 && !train_eps) || model == ModelKind::gin,
                   "--gin-eps and --train-eps apply to --model gin only");
  GNN_CHECK_CONFIG(std::isfinite(gin_eps), "--gin-eps must be finite");
  GNN_CHECK_CONFIG(epochs >= 0, "--epochs must be non-negative");
  GNN_CHECK_CONFIG(dropout >= 0 && dropout < 1, "--dropout must be in [0, 1)");
  GNN_CHECK_CONFIG(eval_every >= 1, "--eval-every must be at least 1");
  GNN_CHECK_CONFIG(patience >= 0, "--patience must be non-negative");
  GNN_CHECK_CONFIG(patience == 0 || patience >= eval_every,
                   "--patience (", patience, " epochs) must be at least --eval-every (", eval_every,
                   "): improvements are only seen at evaluations");
  GNN_CHECK_CONFIG(select_by == SelectBy::score || patience > 0 || restore_best,
                   "--select-by applies to --patience or the best-model restore (both are off)");
  GNN_CHECK_CONFIG(lr_step >= 0, "--lr-step must be non-negative");
  GNN_CHECK_CONFIG(lr_step == 0 || lr_schedule == LrScheduleKind::step,
                   "--lr-step applies to --lr-schedule step only");
  GNN_CHECK_CONFIG(lr_schedule != LrScheduleKind::step || lr_step > 0,
                   "--lr-schedule step needs --lr-step N (epochs between reductions)");
  GNN_CHECK_CONFIG(lr_gamma > 0 && lr_gamma < 1, "--lr-gamma must be in (0, 1)");
  GNN_CHECK_CONFIG(lr_gamma == 0.1f || lr_schedule == LrScheduleKind::step ||
                       lr_schedule == LrScheduleKind::plateau,
                   "--lr-gamma applies to --lr-schedule step or plateau only");
  GNN_CHECK_CONFIG(lr_min >= 0 && lr_min < lr, "--lr-min must be in [0, --lr)");
  GNN_CHECK_CONFIG(lr_min == 0 || lr_schedule == LrScheduleKind::cosine ||
                       lr_schedule == LrScheduleKind::plateau,
                   "--lr-min applies to --lr-schedule cosine or plateau only");
  GNN_CHECK_CONFIG(lr_warmup >= 0, "--lr-warmup must be non-negative");
  GNN_CHECK_CONFIG(lr_patience >= 1, "--lr-patience must be at least 1");
  GNN_CHECK_CONFIG(lr_patience == 10 || lr_schedule == LrScheduleKind::plateau,
                   "--lr-patience applies to --lr-schedule plateau only");
  GNN_CHECK_CONFIG(lr > 0 && std::isfinite(lr), "--lr must be positive");
  GNN_CHECK_CONFIG(momentum == 0 || optimizer == OptimizerKind::sgd,
                   "--momentum applies to --optimizer sgd only (Adam keeps its own moments)");
  GNN_CHECK_CONFIG(momentum >= 0 && momentum < 1, "--momentum must be in [0, 1)");
  GNN_CHECK_CONFIG(exchange == ExchangeMode::pipelined || (sync_every == 0 && smoothing == 0),
                   "--sync-every and --smoothing need --exchange pipelined");
  GNN_CHECK_CONFIG(sync_every >= 0, "--sync-every must be non-negative");
  GNN_CHECK_CONFIG(smoothing >= 0 && smoothing < 1, "--smoothing must be in [0, 1)");
  if (!emulate_link.empty()) parse_link_model(emulate_link);
}

Json TrainConfig::to_json() const {
  Json j = Json::object();
  j["partition"] = partition_dir;
  j["device"] = device;
  j["transport"] = transport;
  j["metrics"] = metrics_path;
  j["quiet"] = quiet;
  j["model"] = to_string(model);
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
  j["lr_schedule"] = to_string(lr_schedule);
  j["lr_step"] = lr_step;
  j["lr_gamma"] = lr_gamma;
  j["lr_min"] = lr_min;
  j["lr_warmup"] = lr_warmup;
  j["lr_patience"] = lr_patience;
  j["row_normalize"] = row_normalize_features;
  j["dense_features"] = !sparse_features;
  j["codec"] = codec;
  j["codec_forward"] = codec_forward;
  j["codec_backward"] = codec_backward;
  j["compress_layer0"] = compress_layer0;
  j["exchange"] = to_string(exchange);
  j["sync_every"] = sync_every;
  j["smoothing"] = smoothing;
  j["emulate_link"] = emulate_link;
  return j;
}

}  // namespace halognn
