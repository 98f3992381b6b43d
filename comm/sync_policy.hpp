#pragma once
/// @file sync_policy.hpp
/// The synchronous exchange policy (Sylvie-S): every layer waits for this epoch's halo rows, and
/// every backward for this epoch's halo gradients. Exact with an exact codec.
#include "comm/exchange_policy.hpp"

namespace halognn {

class SyncPolicy final : public ExchangePolicy {
 public:
  SyncPolicy(HaloExchange& ex, LocalId num_owned, int num_layers, std::uint64_t seed)
      : ExchangePolicy(ex, num_owned, num_layers, seed) {}
  std::string_view name() const override { return "sync"; }
  bool synchronous_epoch() const override { return true; }
  void forward(int layer, LocalRows x) override { exchange_rows_now(layer, x); }
  void backward(int layer, LocalRows gx) override { exchange_gradients_now(layer, gx); }
  bool overlaps() const override { return true; }
  Request start_forward(int layer, LocalRows x) override { return start_rows_now(layer, x); }
  Request start_backward(int layer, LocalRows gx) override {
    return start_gradients_now(layer, gx);
  }
  /// Every epoch starts afresh: nothing to save.
  void save_state(StateWriter&) override {}
  void load_state(const StateReader&) override {}
};

}  // namespace halognn
