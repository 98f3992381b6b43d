#include "training/metrics.hpp"

namespace halognn {

Json EpochMetrics::to_json() const {
  Json j = Json::object();
  j["epoch"] = epoch;
  j["loss"] = loss;
  j["lr"] = lr;
  j["train_acc"] = train_score;
  j["val_acc"] = eval ? Json(eval->val) : Json();
  j["test_acc"] = eval ? Json(eval->test) : Json();
  j["eval_train_acc"] = eval ? Json(eval->train) : Json();
  j["val_loss"] = eval ? Json(eval->val_loss) : Json();
  j["epoch_s"] = epoch_s;
  j["compute_s"] = compute_s;
  j["comm_s"] = comm_s;
  j["codec_s"] = codec_s;
  j["overlap_s"] = overlap_s;
  j["overlapped_exchanges"] = overlapped_exchanges;
  j["bytes_sent"] = bytes_sent;
  j["eval_bytes_sent"] = eval_bytes_sent;
  if (device_peak_bytes > 0) j["device_peak_bytes"] = device_peak_bytes;
  j["synchronous"] = synchronous;
  j["max_staleness"] = max_staleness;
  j["halo_age"] = halo_age;
  if (!policy.is_null()) j["policy"] = policy;
  j["traffic"] = traffic;
  j["links"] = links;
  return j;
}

Json FeatureBytes::to_json() const {
  return Json{{"stored", stored},   {"stored_dense", stored_dense}, {"memory", memory},
              {"memory_dense", memory_dense}, {"sent", sent},   {"sent_dense", sent_dense}};
}

Json FinalMetrics::to_json() const {
  Json j = Json::object();
  j["event"] = "final";
  j["best_epoch"] = best_epoch;
  j["best_val_acc"] = best_val;
  j["test_acc_at_best_val"] = test_at_best_val;
  j["best_val_loss"] = best_val_loss;
  j["epochs_run"] = epochs_run;
  j["early_stopped"] = early_stopped;
  j["restored_best"] = restored;
  j["final_epoch"] = final_epoch;
  j["final_train_acc"] = final_scores.train;
  j["final_val_acc"] = final_scores.val;
  j["final_test_acc"] = final_scores.test;
  j["final_val_loss"] = final_scores.val_loss;
  j["total_s"] = total_s;
  j["total_bytes_sent"] = total_bytes_sent;
  j["feature_form"] = feature_form;
  j["feature_bytes"] = feature_bytes.to_json();
  j["feature_exchange_bytes"] = feature_exchange_bytes;
  // Layer-0 halo features never change: they cross once, before epoch 0.
  j["feature_exchange"] = "once, codec " + feature_exchange_codec;
  return j;
}

}  // namespace halognn
