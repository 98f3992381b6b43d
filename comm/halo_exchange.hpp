#pragma once
/// @file halo_exchange.hpp
/// The halo exchange of one rank: forward, the owners' boundary rows fill every rank's halo rows;
/// backward, the exact transpose, halo gradients flow back to their owners and are summed there.
/// Each message is one peer's block of rows for one (layer, direction), encoded by that
/// (layer, direction)'s codec; its bytes are recorded in the TrafficCounter as the codec reports
/// them (payload / metadata). See docs/halo_exchange.md.
#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "comm/halo_plan.hpp"
#include "comm/request.hpp"
#include "comm/traffic.hpp"
#include "comm/transport.hpp"
#include "compress/codec.hpp"
#include "core/buffer.hpp"

namespace halognn {

class HaloExchange {
 public:
  /// @param plan       the forward plan (its reverse is used for the backward pass)
  /// @param transport  moves the bytes; must outlive this object
  /// @param traffic    receives one record per message sent; must outlive this object
  /// @param tag_base   tags used are tag_base + 2 * layer + direction, so several exchangers (or
  ///                   other users) can share a transport with disjoint tag ranges
  HaloExchange(std::shared_ptr<const HaloPlan> plan, Transport& transport, TrafficCounter& traffic,
               int tag_base = 0);
  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;

  /// Codec for one (layer, direction). Every rank must choose the same codecs. Default: fp32.
  void set_codec(int layer, Direction dir, std::shared_ptr<const Codec> codec);
  /// Codec for every layer of one direction that has no codec of its own.
  void set_default_codec(Direction dir, std::shared_ptr<const Codec> codec);
  const Codec& codec(int layer, Direction dir) const;

  /// Forward: gathers the owned rows named by the send plan, encodes one block per peer with the
  /// layer's forward codec, and posts the sends and receives. The returned request's wait()
  /// decodes each peer's block into its rows of `halo` (peer blocks in plan order).
  /// `owned`: num_owned x F; `halo`: num_halo x F; both on the plan's device, and both must stay
  /// valid (and `owned` unchanged) until the request completes. `epoch` and `seed` key the
  /// codec's randomness together with the layer, direction and the rows' global ids.
  Request start_forward(int layer, std::int64_t epoch, std::uint64_t seed, ConstDenseView owned,
                        DenseView halo);

  /// Backward, the exact transpose: sends each peer's block of `halo_grad` (num_halo x F) back to
  /// its owner; wait() decodes the blocks received and ADDS them into `owned_grad`
  /// (num_owned x F) at the rows the forward pass sent (a row sent to several peers receives the
  /// sum of their gradients).
  Request start_backward(int layer, std::int64_t epoch, std::uint64_t seed,
                         ConstDenseView halo_grad, DenseView owned_grad);

  /// Seconds spent packing, encoding, decoding and unpacking (including host staging of device
  /// data) since the last reset_timers().
  double codec_seconds() const { return codec_seconds_; }
  /// Seconds spent blocked in the wait() of requests this object returned, since the last reset.
  double wait_seconds() const { return wait_seconds_; }
  void reset_timers() {
    codec_seconds_ = 0;
    wait_seconds_ = 0;
  }

  const HaloPlan& plan() const { return *plan_; }
  /// The tag of (layer, direction): tag_base + 2 * layer + direction.
  int tag(int layer, Direction dir) const { return tag_base_ + 2 * layer + static_cast<int>(dir); }

 private:
  struct Workspace;
  class ExchangeOperation;
  Request start(const HaloPlan& plan, int layer, Direction dir, std::int64_t epoch,
                std::uint64_t seed, ConstDenseView src, DenseView dst, bool accumulate);
  std::shared_ptr<Workspace> workspace(int layer, Direction dir);

  std::shared_ptr<const HaloPlan> plan_;
  HaloPlan reverse_plan_;
  Transport& transport_;
  TrafficCounter& traffic_;
  int tag_base_ = 0;
  std::shared_ptr<const Codec> default_codec_[2];
  std::map<std::pair<int, int>, std::shared_ptr<const Codec>> codecs_;
  std::map<std::pair<int, int>, std::shared_ptr<Workspace>> workspaces_;
  double codec_seconds_ = 0;
  double wait_seconds_ = 0;
};

}  // namespace halognn
