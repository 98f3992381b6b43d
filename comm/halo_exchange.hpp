#pragma once
/// @file halo_exchange.hpp
/// The halo exchange of one rank, as one operator over a HaloPlan (docs/halo_exchange.md):
/// forward, every peer packs its slots (R_send · owned rows), encodes them with the (layer,
/// direction) codec and sends them; the receiver decodes and unpacks them into its halo rows
/// (R_recvᵀ · slots). Backward is the exact transpose on the reversed plan: halo gradients are
/// packed with R_recv, sent back, and their owner adds R_sendᵀ · slots into its owned gradients.
/// A message is either all the slots of one peer (fixed size, known to both sides), or a subset of
/// them with their indices (variable size: start_selected). Every byte is recorded in the
/// TrafficCounter as payload (the codec's values) or metadata (the codec's scales, slot counts,
/// indices, the transport's size headers).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "comm/halo_plan.hpp"
#include "comm/request.hpp"
#include "comm/traffic.hpp"
#include "comm/transport.hpp"
#include "compress/codec.hpp"
#include "core/buffer.hpp"

namespace halognn {

/// Slots chosen for a variable-size exchange: per peer of the sending side (in plan order), the
/// indices of the chosen slots within that peer's block, strictly ascending.
using SlotSelection = std::vector<std::vector<std::int32_t>>;

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

  /// Forward: packs the owned rows into slots, encodes one block per peer with the layer's forward
  /// codec, and posts the sends and receives. The returned request's wait() decodes each peer's
  /// block and unpacks the slots into `halo` (every halo row is written; a row no slot maps to
  /// becomes zero). `owned`: num_owned x F, read only during this call; `halo`: num_halo x F,
  /// written when the request completes and untouched before (with lent rows, share_workspaces:
  /// also while it is in flight, and `owned` read until it completes). Both on the plan's device. `epoch`
  /// and `seed` key the codec's randomness together with the layer, direction and slot keys.
  Request start_forward(int layer, std::int64_t epoch, std::uint64_t seed, ConstDenseView owned,
                        DenseView halo);

  /// Backward, the exact transpose: packs `halo_grad` (num_halo x F, read only during this call,
  /// or until the request completes with lent rows: share_workspaces)
  /// into the receive side's slots and sends them back to their owners; wait() decodes the blocks
  /// received and ADDS R_sendᵀ · slots into `owned_grad` (num_owned x F): for plain plans, a row
  /// sent to several peers receives the sum of their gradients.
  Request start_backward(int layer, std::int64_t epoch, std::uint64_t seed,
                         ConstDenseView halo_grad, DenseView owned_grad);

  /// A variable-size exchange in direction `dir`: only the slots in `selected` (one list per peer
  /// of the sending side of `dir`) cross, each message carrying its slot count and indices. `src`
  /// is the matrix the sending side packs (owned rows forward, halo rows backward), read only
  /// during this call. When the request completes, every slot that arrived has been written into
  /// its row of `slots` (the receiving side's total() x F; other rows untouched) and, when
  /// `received` is not null, (*received)[k] holds the indices of the slots that arrived from
  /// receive peer k. A peer with nothing selected still sends a message (its empty header). Apply
  /// the receiving side's unpack() to `slots` to get rows.
  Request start_selected(Direction dir, int layer, std::int64_t epoch, std::uint64_t seed,
                         ConstDenseView src, const SlotSelection& selected, DenseView slots,
                         SlotSelection* received);

  /// One exchange a caller will run: its layer, direction and row width.
  struct Shape {
    int layer = 0;
    Direction dir = Direction::forward;
    std::int64_t cols = 0;
  };
  /// One set of buffers for every (layer, direction), allocated at the next exchange for the
  /// largest of `shapes` (with the codecs set at this point): for a caller that never has two
  /// exchanges in flight (the synchronous policy), whose buffers then take the largest
  /// exchange's memory instead of the sum over layers and directions. An exchange started while
  /// another one holds the set still gets buffers of its own, and one wider than `shapes` grows
  /// the set.
  /// The caller also lends its rows from here on: it leaves the source unchanged and does not
  /// read the destination until each request completes. A raw-rows codec (fp32) whose bytes need
  /// no host staging then sends an identity side straight from the source (backward: the halo
  /// gradients) and receives one straight into the destination (forward: the halo rows), which
  /// are written while the exchange is in flight.
  void share_workspaces(const std::vector<Shape>& shapes);

  /// Device bytes the buffers of the fixed-size exchanges hold now (send and receive rows and
  /// encoded blocks; host staging not included; lent rows are the caller's).
  std::size_t workspace_bytes() const;

  /// The plan side that sends (packs) and the one that receives (unpacks) in direction `dir`.
  const SlotMap& sending_side(Direction dir) const;
  const SlotMap& receiving_side(Direction dir) const;

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
  Transport& transport() const { return transport_; }
  /// The tag of (layer, direction): tag_base + 2 * layer + direction.
  int tag(int layer, Direction dir) const { return tag_base_ + 2 * layer + static_cast<int>(dir); }

 private:
  struct Workspace;
  class ExchangeOperation;
  Request start(const HaloPlan& plan, int layer, Direction dir, std::int64_t epoch,
                std::uint64_t seed, ConstDenseView src, DenseView dst, bool accumulate);
  std::shared_ptr<Workspace> workspace(int layer, Direction dir);
  std::shared_ptr<const Codec> codec_ptr(int layer, Direction dir) const;
  Request wrap(Request inner, std::function<void()> complete, int layer, Direction dir,
               const char* kind);

  std::shared_ptr<const HaloPlan> plan_;
  HaloPlan reverse_plan_;
  Transport& transport_;
  TrafficCounter& traffic_;
  int tag_base_ = 0;
  std::shared_ptr<const Codec> default_codec_[2];
  std::map<std::pair<int, int>, std::shared_ptr<const Codec>> codecs_;
  std::map<std::pair<int, int>, std::shared_ptr<Workspace>> workspaces_;
  /// share_workspaces: the one set's sizes (elements of the row buffers, bytes of the blocks),
  /// and the set itself once the first exchange has allocated it.
  struct SharedSizes {
    std::size_t send_rows = 0, recv_rows = 0, bytes = 0;
    bool stage = false;
  };
  std::optional<SharedSizes> shared_sizes_;
  std::shared_ptr<Workspace> shared_workspace_;
  double codec_seconds_ = 0;
  double wait_seconds_ = 0;
};

}  // namespace halognn
