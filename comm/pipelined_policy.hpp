#pragma once
/// @file pipelined_policy.hpp
/// The pipelined exchange policy (PipeGCN, Sylvie-A): in epoch t, layer l uses the halo rows its
/// owners sent in epoch t-1 while this epoch's rows travel, and the owned rows receive the halo
/// gradients of epoch t-1 while this epoch's travel; every `sync_every`-th epoch (and epoch 0,
/// which has no history) is synchronous. With smoothing gamma > 0 the rows and gradients used are
/// moving averages: h = gamma h_used + (1 - gamma) h_received.
#include <vector>

#include "comm/exchange_policy.hpp"

namespace halognn {

class PipelinedPolicy final : public ExchangePolicy {
 public:
  PipelinedPolicy(const PolicyConfig& cfg, HaloExchange& ex, LocalId num_owned, LocalId num_halo,
                  const std::vector<std::int64_t>& widths, DevicePtr dev);
  ~PipelinedPolicy() override;
  std::string_view name() const override { return "pipelined"; }
  bool synchronous_epoch() const override;
  void forward(int layer, LocalRows x) override;
  void backward(int layer, LocalRows gx) override;
  void poll() override;
  void finish() override;
  std::size_t state_bytes() const override;
  /// Per layer l >= 1 under "layer<l>/": the rows in use and their epoch, the rows and gradients
  /// that arrived but were not used yet (with their flags), the gradients' moving average.
  void save_state(StateWriter& w) override;
  void load_state(const StateReader& r) override;

 private:
  /// Completes whatever layer l has in flight and drops it (a synchronous epoch replaces it).
  void drain(int layer);

  struct Layer {
    Matrix used;         ///< num_halo x F: the halo rows layer l uses (received, maybe smoothed)
    Matrix arriving;     ///< num_halo x F: where the forward exchange in flight decodes to
    Matrix grad_arriving;  ///< num_owned x F: where the backward exchange in flight adds into
    Matrix grad_smooth;    ///< num_owned x F: moving average of received gradients (gamma > 0)
    Request rows_in_flight, grads_in_flight;
    /// Posted exchanges whose data has not been consumed yet (a request completed by poll() is
    /// no longer pending, but its rows still wait in `arriving`).
    bool rows_unconsumed = false, grads_unconsumed = false;
    std::int64_t rows_posted_epoch = -1;  ///< epoch whose rows rows_in_flight carries
    std::int64_t used_epoch = -1;         ///< epoch whose rows `used` holds
  };
  int sync_every_;
  float smoothing_;
  std::vector<Layer> layers_;
};

}  // namespace halognn
