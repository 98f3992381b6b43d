#include "models/training/train_config.hpp"

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

Json TrainConfig::to_json() const {
  Json j = Json::object();
  j.set("partition", partition_dir);
  j.set("model", to_string(model));
  j.set("layers", layers);
  j.set("hidden", hidden);
  j.set("heads", heads);
  j.set("epochs", epochs);
  j.set("lr", lr);
  j.set("weight_decay", weight_decay);
  j.set("decay_biases", decay_biases);
  j.set("optimizer", to_string(optimizer));
  j.set("momentum", momentum);
  j.set("dropout", dropout);
  j.set("seed", seed);
  j.set("eval_every", eval_every);
  j.set("row_normalize_features", row_normalize_features);
  j.set("sparse_features", sparse_features);
  j.set("codec", codec);
  j.set("codec_forward", codec_forward);
  j.set("codec_backward", codec_backward);
  j.set("compress_layer0", compress_layer0);
  j.set("exchange", to_string(exchange));
  j.set("staleness_bound", staleness_bound);
  j.set("smoothing", smoothing);
  j.set("emulate_link", emulate_link.empty() ? Json() : Json(emulate_link));
  return j;
}

}  // namespace halognn
