#include "training/train_config.hpp"

#include "comm/emulated_link.hpp"
#include "core/error.hpp"

namespace halognn {

const char* to_string(ModelKind k) {
  switch (k) {
    case ModelKind::gcn: return "gcn";
    case ModelKind::sage: return "sage";
    case ModelKind::gat: return "gat";
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
  GNN_CHECK_CONFIG(epochs >= 0, "--epochs must be non-negative");
  GNN_CHECK_CONFIG(dropout >= 0 && dropout < 1, "--dropout must be in [0, 1)");
  GNN_CHECK_CONFIG(eval_every >= 1, "--eval-every must be at least 1");
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
  j["epochs"] = epochs;
  j["lr"] = lr;
  j["weight_decay"] = weight_decay;
  j["decay_biases"] = decay_biases;
  j["optimizer"] = to_string(optimizer);
  j["momentum"] = momentum;
  j["dropout"] = dropout;
  j["seed"] = seed;
  j["eval_every"] = eval_every;
  j["row_normalize"] = row_normalize_features;
  j["dense_features"] = !sparse_features;
  j["numerics"] = kernels::to_string(numerics);
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
