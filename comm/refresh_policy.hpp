#pragma once
/// @file refresh_policy.hpp
/// The selective-refresh exchange policy (FreshGNN's selective history, for full-graph training;
/// docs/halo_exchange.md "Selective refresh"). Every rank keeps, per layer, the last slot rows it
/// received and when; each epoch an owner re-sends only
///  - the slots whose age reached the staleness bound s (and every slot in epoch 0), and
///  - of the others, the fraction r ranked highest by importance: the norm of the gradient of
///    the loss with respect to the slot in its last backward (`grad`, FreshGNN: large = the
///    receivers depend on it), or its relative change since it was last sent (`change`).
/// Messages carry slot indices (variable-size exchanges). Backward, the receivers send the
/// gradients of the slots refreshed in this epoch only (a cached row is a constant, as in
/// FreshGNN), or of every slot with `exact_backward`. s = 1 or r = 1 is exact training.
#include <array>
#include <cstdint>
#include <vector>

#include "comm/exchange_policy.hpp"

namespace halognn {

class RefreshPolicy final : public ExchangePolicy {
 public:
  RefreshPolicy(const PolicyConfig& cfg, HaloExchange& ex, LocalId num_owned,
                const std::vector<std::int64_t>& widths, DevicePtr dev);
  std::string_view name() const override { return "refresh"; }
  bool synchronous_epoch() const override;
  void forward(int layer, LocalRows x) override;
  void backward(int layer, LocalRows gx) override;
  std::size_t state_bytes() const override;
  Json summarize(Transport& transport) const override;
  /// Per layer l >= 1 under "layer<l>/": the cache and when each slot arrived, when each send
  /// slot was last sent, the importances, and (--refresh-by change) the values last sent.
  void save_state(StateWriter& w) override;
  void load_state(const StateReader& r) override;

 private:
  struct Layer {
    // Receiving end, per receive slot.
    Matrix cache;                             ///< the slot rows last received
    std::vector<std::int64_t> received_epoch; ///< -1: never
    std::vector<std::uint8_t> fresh;          ///< received in this epoch's forward
    // Sending end, per send slot.
    std::vector<std::int64_t> sent_epoch;     ///< -1: never
    std::vector<float> importance;            ///< grad: last gradient norm (inf: none yet)
    Matrix last_sent;                         ///< change: the values last sent
    /// Backward (unless exact_backward): per send slot, the gradient received this epoch, zero
    /// for the others. Kept across epochs so that no epoch allocates (and faults in) it anew.
    Matrix grad_slots;
  };
  RefreshConfig refresh_;
  std::vector<Layer> layers_;
  /// Rows sent this epoch per layer: [layer][0] by age (and the first epoch), [1] by importance.
  std::vector<std::array<std::int64_t, 2>> sent_;
  /// Rows (gradients) sent back this epoch per layer.
  std::vector<std::int64_t> sent_back_;
  std::vector<std::int64_t> slot_rows_;  ///< halo rows each receive slot unpacks into
};

/// The slots to refresh (indices into `age` / `importance`, ascending): every slot of age >= s
/// (age < 0: never sent), plus the ceil(r * n) highest importance among the n others (ties: the
/// lower index). `forced` receives how many were chosen by age.
std::vector<std::int32_t> choose_refresh(const std::vector<std::int64_t>& age,
                                         const std::vector<float>& importance, int s, double r,
                                         std::int64_t* forced);

}  // namespace halognn
