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

OptimizerKind parse_optimizer_kind(const std::string& s) {
  if (s == "adam") return OptimizerKind::adam;
  if (s == "sgd") return OptimizerKind::sgd;
  throw ConfigError("unknown --optimizer '" + s + "' (choose from: adam, sgd)");
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
  GNN_CHECK_CONFIG(epochs >= 0, "--epochs must be non-negative");
  GNN_CHECK_CONFIG(std::isfinite(lr) && lr >= 0, "--lr must be a finite number >= 0 (got ", lr,
                   ")");
  GNN_CHECK_CONFIG(std::isfinite(weight_decay) && weight_decay >= 0,
                   "--weight-decay must be a finite number >= 0 (got ", weight_decay, ")");
  GNN_CHECK_CONFIG(dropout >= 0 && dropout < 1, "--dropout must be in [0, 1)");
  GNN_CHECK_CONFIG(eval_every >= 1, "--eval-every must be at least 1");
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
  j["emulate_link"] = emulate_link;
  return j;
}

}  // namespace halognn
