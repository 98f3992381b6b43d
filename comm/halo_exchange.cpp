#include "comm/halo_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "core/cuda/host_staging.hpp"
#include "core/error.hpp"
#include "core/kernels/kernels.hpp"

namespace halognn {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// The clock of codec work. On a GPU whose exchange waits for the device anyway (staging through
/// the host, or the completion, which ends with a synchronize), it starts once the work queued
/// before it (the layer's compute) has finished, so that codec_seconds() does not absorb that
/// compute. An exchange that hands device memory to the transport (NCCL) is not drained at its
/// start: there the host queues the encode and goes on, and its clock counts the queueing.
Clock::time_point codec_clock(const Device& dev, bool waits_anyway) {
  if (!dev.is_host() && waits_anyway) dev.synchronize();
  return Clock::now();
}

/// Grows `buf` to at least `n` elements on `dev` (contents are not kept).
template <typename T>
void ensure(Buffer<T>& buf, std::size_t n, const DevicePtr& dev) {
  if (buf.size() >= n && buf.device_ptr() == dev) return;
  buf = Buffer<T>(n, dev);
}

HaloPlan reverse_of(const std::shared_ptr<const HaloPlan>& plan) {
  GNN_ASSERT(plan != nullptr, "halo exchange needs a plan");
  return plan->reverse();
}

/// Whether the codec reads a selection's rows from the source through the slot rows (packing
/// fused with encoding: Codec::gathers), so that nothing is gathered first.
bool encodes_gathered(const SlotMap& out, const Codec& codec, const Device& dev) {
  return out.is_selection() && !codec.raw_rows() && codec.gathers(dev);
}

/// Whether an exchange needs a row buffer for its gathered send slots: the send side is not the
/// identity, the codec's blocks are not the rows themselves (a raw-rows codec gathers straight
/// into the message bytes), and the codec does not read them through the slot rows itself.
bool needs_send_rows(const SlotMap& out, const Codec& codec, std::int64_t cols, const Device& dev) {
  return !out.is_identity() && out.total() > 0 && cols > 0 && !codec.raw_rows() &&
         !encodes_gathered(out, codec, dev);
}

/// Whether the codec adds a selection's decoded slots into their rows itself (unpacking fused
/// with decoding: Codec::decode_scattered), so that nothing is decoded into a row buffer first:
/// an exchange that accumulates (the backward's gradients into their owned rows).
bool decodes_scattered(const SlotMap& in, bool accumulate, const Codec& codec, const Device& dev) {
  return accumulate && in.is_selection() && in.rows_distinct_per_peer() && !codec.raw_rows() &&
         codec.scatters(dev);
}

/// Whether an exchange needs a row buffer for its decoded receive slots: they cannot land in the
/// destination itself (the receive side is not the identity, or it accumulates), the codec's
/// blocks are not the rows themselves (a raw-rows codec scatters straight from the message), and
/// the codec does not add them through the slot rows itself.
bool needs_recv_rows(const SlotMap& in, bool accumulate, const Codec& codec, std::int64_t cols,
                     const Device& dev) {
  const bool in_place = in.is_identity() && !accumulate;
  return !in_place && in.total() > 0 && cols > 0 && !codec.raw_rows() &&
         !decodes_scattered(in, accumulate, codec, dev);
}

/// Whether one side of an exchange needs no bytes of its own because its blocks are the caller's
/// rows (share_workspaces lends them): a raw-rows codec's blocks are the slots, an identity side's
/// slots are the matrix's rows in order, and the transport reads and writes them where they are
/// (no host staging); a receive that adds into its rows cannot land in them.
bool lends_rows(const SlotMap& side, const Codec& codec, bool stage, bool accumulate) {
  return side.is_identity() && codec.raw_rows() && !stage && !accumulate;
}

/// Where the received blocks start after `sent` bytes of sent blocks (aligned for any codec).
std::size_t received_at(std::size_t sent) { return (sent + 63) / 64 * 64; }

/// The bytes of a workspace holding `sent` bytes of sent blocks and `received` of received ones.
std::size_t block_bytes(std::size_t sent, std::size_t received) {
  return received > 0 ? received_at(sent) + received : sent;
}

/// Header of a variable-size message: u32 slot count, then the u32 index of each slot.
std::size_t header_bytes(std::size_t count) { return sizeof(std::uint32_t) * (1 + count); }

}  // namespace

/// Buffers of one (layer, direction), reused from epoch to epoch while no exchange of that
/// (layer, direction) is in flight.
struct HaloExchange::Workspace {
  Buffer<float> send_rows;  // packed slots to encode (when the send side is not the identity)
  Buffer<float> recv_rows;  // decoded slots to unpack (when the receive side is not in place)
  // The encoded blocks on the device: the sent ones, peer after peer, then from received_at()
  // the received ones. One buffer, so that a set shared by both directions holds the largest
  // exchange's two sides together, not the largest send side plus the largest receive side.
  Buffer<std::byte> bytes;
  Buffer<std::byte> host;  // host staging when the device is not the host: the same layout
};

/// Waits for the transport's request, timing how long the caller is blocked.
class HaloExchange::ExchangeOperation final : public Request::Operation {
 public:
  ExchangeOperation(Request inner, double* wait_seconds, std::string what)
      : inner_(std::move(inner)), wait_seconds_(wait_seconds), what_(std::move(what)) {}
  bool test() override { return inner_.test(); }
  void wait() override {
    const auto t0 = Clock::now();
    inner_.wait();
    *wait_seconds_ += seconds_since(t0);
  }
  std::string describe() const override { return what_; }

 private:
  Request inner_;
  double* wait_seconds_;
  std::string what_;
};

HaloExchange::HaloExchange(std::shared_ptr<const HaloPlan> plan, Transport& transport,
                           TrafficCounter& traffic, int tag_base)
    : plan_(std::move(plan)), reverse_plan_(reverse_of(plan_)), transport_(transport),
      traffic_(traffic), tag_base_(tag_base) {
  GNN_ASSERT(tag_base >= 0, "negative tag base ", tag_base);
  GNN_ASSERT(plan_->rank() == transport.rank(), "plan of rank ", plan_->rank(),
             " used with transport rank ", transport.rank());
  std::shared_ptr<const Codec> fp32 = make_codec("fp32");
  default_codec_[0] = fp32;
  default_codec_[1] = fp32;
}

void HaloExchange::set_codec(int layer, Direction dir, std::shared_ptr<const Codec> codec) {
  GNN_ASSERT(layer >= 0, "negative layer ", layer);
  GNN_ASSERT(codec != nullptr, "null codec");
  codecs_[{layer, static_cast<int>(dir)}] = std::move(codec);
}

void HaloExchange::set_default_codec(Direction dir, std::shared_ptr<const Codec> codec) {
  GNN_ASSERT(codec != nullptr, "null codec");
  default_codec_[static_cast<int>(dir)] = std::move(codec);
}

std::shared_ptr<const Codec> HaloExchange::codec_ptr(int layer, Direction dir) const {
  auto it = codecs_.find({layer, static_cast<int>(dir)});
  return it != codecs_.end() ? it->second : default_codec_[static_cast<int>(dir)];
}

const Codec& HaloExchange::codec(int layer, Direction dir) const { return *codec_ptr(layer, dir); }

const SlotMap& HaloExchange::sending_side(Direction dir) const {
  return dir == Direction::forward ? plan_->send() : reverse_plan_.send();
}

const SlotMap& HaloExchange::receiving_side(Direction dir) const {
  return dir == Direction::forward ? plan_->recv() : reverse_plan_.recv();
}

void HaloExchange::share_workspaces(const std::vector<Shape>& shapes) {
  SharedSizes z;
  const Device& dev = *plan_->device();
  const bool stage = !dev.is_host() && !transport_.accepts_device_memory(dev);
  for (const Shape& sh : shapes) {
    // What start() asks of a workspace for this exchange: the encoded blocks (and their host
    // staging) of both sides, unless lent; the packed slots when the send side is not the
    // identity, the decoded slots when the receive side cannot take them in place (backward
    // accumulates: never in place); no row buffers for a raw-rows codec (fp32).
    const HaloPlan& plan = sh.dir == Direction::forward ? *plan_ : reverse_plan_;
    const SlotMap& out = plan.send();
    const SlotMap& in = plan.recv();
    const Codec& c = codec(sh.layer, sh.dir);
    const bool accumulate = sh.dir == Direction::backward;
    std::size_t sb = 0, rb = 0;
    if (!lends_rows(out, c, stage, false))
      for (std::size_t k = 0; k < out.num_peers(); ++k)
        sb += c.encoded_size(out.count(k), sh.cols).total();
    if (!lends_rows(in, c, stage, accumulate))
      for (std::size_t k = 0; k < in.num_peers(); ++k)
        rb += c.encoded_size(in.count(k), sh.cols).total();
    z.bytes = std::max(z.bytes, block_bytes(sb, rb));
    if (needs_send_rows(out, c, sh.cols, dev))
      z.send_rows = std::max(z.send_rows, static_cast<std::size_t>(out.total() * sh.cols));
    if (needs_recv_rows(in, accumulate, c, sh.cols, dev))
      z.recv_rows = std::max(z.recv_rows, static_cast<std::size_t>(in.total() * sh.cols));
  }
  z.stage = stage;
  workspaces_.clear();
  shared_workspace_.reset();
  shared_sizes_ = z;
}

std::size_t HaloExchange::workspace_bytes() const {
  auto bytes = [](const Workspace& w) {
    return w.send_rows.size() * sizeof(float) + w.recv_rows.size() * sizeof(float) +
           w.bytes.size();
  };
  std::size_t b = shared_workspace_ ? bytes(*shared_workspace_) : 0;
  for (const auto& [key, ws] : workspaces_) b += bytes(*ws);
  return b;
}

std::shared_ptr<HaloExchange::Workspace> HaloExchange::workspace(int layer, Direction dir) {
  if (shared_sizes_) {
    if (!shared_workspace_) {
      // Allocated at the first exchange, at the largest size any registered exchange needs, so
      // that it never grows (a growing buffer briefly holds its old and its new size).
      const SharedSizes& z = *shared_sizes_;
      auto ws = std::make_shared<Workspace>();
      const DevicePtr& dev = plan_->device();
      if (z.send_rows > 0) ensure(ws->send_rows, z.send_rows, dev);
      if (z.recv_rows > 0) ensure(ws->recv_rows, z.recv_rows, dev);
      if (z.bytes > 0) ensure(ws->bytes, z.bytes, dev);
      if (z.stage && z.bytes > 0) ensure(ws->host, z.bytes, host_staging_device(*dev));
      shared_workspace_ = std::move(ws);
    }
    if (shared_workspace_.use_count() > 1) return std::make_shared<Workspace>();
    return shared_workspace_;
  }
  auto& ws = workspaces_[{layer, static_cast<int>(dir)}];
  if (!ws) ws = std::make_shared<Workspace>();
  // An exchange of the same (layer, direction) still in flight owns the other reference: give
  // this one its own buffers rather than overwrite the ones being sent from.
  if (ws.use_count() > 1) return std::make_shared<Workspace>();
  return ws;
}

Request HaloExchange::wrap(Request inner, std::function<void()> complete, int layer,
                           Direction dir, const char* kind) {
  return Request(std::make_unique<ExchangeOperation>(
                     std::move(inner), &wait_seconds_,
                     std::string(kind) + " halo exchange of layer " + std::to_string(layer) +
                         " " + to_string(dir) + " on rank " + std::to_string(plan_->rank())),
                 std::move(complete));
}

Request HaloExchange::start_forward(int layer, std::int64_t epoch, std::uint64_t seed,
                                    ConstDenseView owned, DenseView halo) {
  return start(*plan_, layer, Direction::forward, epoch, seed, owned, halo, false);
}

Request HaloExchange::start_backward(int layer, std::int64_t epoch, std::uint64_t seed,
                                     ConstDenseView halo_grad, DenseView owned_grad) {
  return start(reverse_plan_, layer, Direction::backward, epoch, seed, halo_grad, owned_grad,
               true);
}

Request HaloExchange::start(const HaloPlan& plan, int layer, Direction dir, std::int64_t epoch,
                            std::uint64_t seed, ConstDenseView src, DenseView dst,
                            bool accumulate) {
  GNN_ASSERT(layer >= 0, "negative layer ", layer);
  const int tag_value = tag(layer, dir);
  GNN_ASSERT(tag_value <= transport_.max_tag(), "layer ", layer, " needs tag ", tag_value,
             " above the transport's maximum ", transport_.max_tag());
  const SlotMap& out = plan.send();
  const SlotMap& in = plan.recv();
  GNN_ASSERT(src.rows == out.matrix_rows(), to_string(dir), " exchange of layer ", layer,
             ": source has ", src.rows, " rows, the plan expects ", out.matrix_rows());
  GNN_ASSERT(dst.rows == in.matrix_rows(), to_string(dir), " exchange of layer ", layer,
             ": destination has ", dst.rows, " rows, the plan expects ", in.matrix_rows());
  GNN_ASSERT(src.cols == dst.cols, "source has ", src.cols, " columns, destination ", dst.cols);

  const DevicePtr& dev_ptr = plan.device();
  const Device& dev = *dev_ptr;
  const bool stage = !dev.is_host() && !transport_.accepts_device_memory(dev);
  const auto t0 = codec_clock(dev, stage);
  const std::int64_t cols = src.cols;
  std::shared_ptr<const Codec> codec = codec_ptr(layer, dir);
  std::shared_ptr<Workspace> ws = workspace(layer, dir);

  CodecContext base_ctx;
  base_ctx.seed = seed;
  base_ctx.epoch = epoch;
  base_ctx.layer = layer;
  base_ctx.direction = dir;

  // Byte layout: one block per peer, in peer order, for both sides.
  const std::size_t n_send = out.num_peers(), n_recv = in.num_peers();
  std::vector<EncodedSize> send_size(n_send), recv_size(n_recv);
  std::vector<std::size_t> send_off(n_send + 1, 0), recv_off(n_recv + 1, 0);
  for (std::size_t k = 0; k < n_send; ++k) {
    send_size[k] = codec->encoded_size(out.count(k), cols);
    send_off[k + 1] = send_off[k] + send_size[k].total();
  }
  for (std::size_t k = 0; k < n_recv; ++k) {
    recv_size[k] = codec->encoded_size(in.count(k), cols);
    recv_off[k + 1] = recv_off[k] + recv_size[k].total();
  }
  // A side whose blocks are the caller's rows (share_workspaces lends them) has no bytes of its
  // own: the transport sends from the source, or receives into the destination, where they are.
  const bool lent = shared_sizes_.has_value();
  const bool send_lent = lent && lends_rows(out, *codec, stage, false);
  const bool recv_lent = lent && lends_rows(in, *codec, stage, accumulate);
  const std::size_t sent = send_lent ? 0 : send_off[n_send];
  const std::size_t received = recv_lent ? 0 : recv_off[n_recv];
  const auto rows_bytes = [cols](const SlotMap& side) {
    return static_cast<std::size_t>(side.total() * cols) * sizeof(float);
  };
  GNN_ASSERT(!send_lent || send_off[n_send] == rows_bytes(out), "lent send rows of layer ",
             layer, " are not the codec's blocks");
  GNN_ASSERT(!recv_lent || recv_off[n_recv] == rows_bytes(in), "lent receive rows of layer ",
             layer, " are not the codec's blocks");
  // Buffer growth (first use of a (layer, direction), or a second exchange in flight) is
  // allocation, not codec work: timed apart and left out of codec_seconds().
  const auto t_alloc = Clock::now();
  ensure(ws->bytes, block_bytes(sent, received), dev_ptr);
  std::byte* const send_dev = ws->bytes.data();
  std::byte* const recv_dev = ws->bytes.data() + (received > 0 ? received_at(sent) : 0);
  const bool pack = !out.is_identity() && out.total() > 0 && cols > 0;
  // A raw-rows codec's blocks are the slots themselves, peer after peer: the pack writes them
  // into the message bytes and there is nothing left to encode.
  const bool raw = codec->raw_rows();
  if (needs_send_rows(out, *codec, cols, dev))
    ensure(ws->send_rows, static_cast<std::size_t>(out.total() * cols), dev_ptr);
  const double alloc_s = seconds_since(t_alloc);

  // Pack: the identity sends the source as it is; otherwise slots = R_send · src.
  // A codec that gathers reads a selection's rows from the source itself.
  const bool gathered = pack && encodes_gathered(out, *codec, dev);
  ConstDenseView packed = src;
  if (pack && !gathered) {
    float* into = raw ? reinterpret_cast<float*>(send_dev) : ws->send_rows.data();
    DenseView slots{into, out.total(), cols};
    out.pack(dev, src, slots);
    packed = slots;
  }

  // Encode one block per peer and record what will cross the wire.
  for (std::size_t k = 0; k < n_send && !(raw && pack) && !send_lent; ++k) {
    const std::int64_t count = out.count(k);
    if (count > 0 && cols > 0) {
      CodecContext ctx = base_ctx;
      ctx.row_ids = out.keys() + out.offset(k);
      const std::int64_t off = out.offset(k);
      const std::span<std::byte> block(send_dev + send_off[k], send_size[k].total());
      if (gathered) codec->encode_gathered(dev, src, out.rows() + off, count, ctx, block);
      else codec->encode(dev, packed.rows_range(off, off + count), ctx, block);
    }
  }

  // Open MPI is not CUDA-aware here: device bytes travel through (page-locked) host staging
  // buffers, unless the transport takes device memory itself (NCCL).
  const std::byte* send_base =
      send_lent ? reinterpret_cast<const std::byte*>(src.data) : send_dev;
  std::byte* recv_base = recv_lent ? reinterpret_cast<std::byte*>(dst.data) : recv_dev;
  std::byte* recv_host = nullptr;
  if (stage) {
    ensure(ws->host, block_bytes(sent, received), host_staging_device(dev));
    if (sent > 0) dev.copy_to_host(ws->host.data(), send_dev, sent);
    send_base = ws->host.data();
    recv_host = ws->host.data() + (recv_dev - send_dev);
    recv_base = recv_host;
  }

  std::vector<PeerBytes> sends;
  std::vector<PeerBytesMut> recvs;
  for (std::size_t k = 0; k < n_send; ++k)
    if (send_size[k].total() > 0)
      sends.push_back({out.peers()[k],
                       std::span<const std::byte>(send_base + send_off[k], send_size[k].total())});
  for (std::size_t k = 0; k < n_recv; ++k)
    if (recv_size[k].total() > 0)
      recvs.push_back({in.peers()[k],
                       std::span<std::byte>(recv_base + recv_off[k], recv_size[k].total())});
  codec_seconds_ += seconds_since(t0) - alloc_s;

  Request inner = transport_.exchange(sends, recvs, tag_value);
  // Recorded once the messages are posted, so a failed encode leaves no phantom bytes.
  for (std::size_t k = 0; k < n_send; ++k)
    traffic_.add(layer, dir, out.peers()[k], cols > 0 ? out.count(k) : 0, send_size[k]);

  // The completion step: nothing when the blocks landed in `dst` itself (lent rows); else
  // decode every peer's block, into `dst` itself when the receive side is the identity and
  // assigns, else into the workspace and then unpack (dst = or += R_recvᵀ · slots). The plan is
  // copied (it shares its arrays) so the request does not depend on `plan`.
  auto complete = [this, plan_copy = plan, ws, codec, base_ctx, recv_size, recv_off, dst, cols,
                   accumulate, dev_ptr, recv_dev, recv_host, recv_lent]() {
    const Device& d = *dev_ptr;
    const auto t1 = codec_clock(d, /*waits_anyway=*/true);
    const SlotMap& side = plan_copy.recv();
    const std::size_t n = side.num_peers();
    if (recv_host != nullptr && recv_off[n] > 0) d.copy_from_host(recv_dev, recv_host, recv_off[n]);
    const bool in_place = side.is_identity() && !accumulate;
    // A raw-rows codec's received blocks are the slots: unpacked from the message bytes as they
    // are (into dst in place, they are copied like any decode).
    const bool raw_slots = codec->raw_rows() && !in_place;
    // A codec that scatters adds each peer's slots into their rows of dst as it decodes them
    // (peer after peer: a row several peers send receives their gradients in slot order, as
    // unpack adds them).
    const bool scattered = cols > 0 && decodes_scattered(side, accumulate, *codec, d);
    DenseView decoded = dst;
    if (raw_slots) {
      decoded = DenseView{reinterpret_cast<float*>(recv_dev), side.total(), cols};
    } else if (needs_recv_rows(side, accumulate, *codec, cols, d)) {
      ensure(ws->recv_rows, static_cast<std::size_t>(side.total() * cols), dev_ptr);
      decoded = DenseView{ws->recv_rows.data(), side.total(), cols};
    }
    for (std::size_t k = 0; k < n && !raw_slots && !recv_lent; ++k) {
      const std::int64_t count = side.count(k);
      if (count == 0 || cols == 0) continue;
      CodecContext ctx = base_ctx;
      ctx.row_ids = side.keys() + side.offset(k);
      const std::int64_t off = side.offset(k);
      const std::span<const std::byte> block(recv_dev + recv_off[k], recv_size[k].total());
      if (scattered) codec->decode_scattered(d, block, ctx, dst, side.rows() + off, count);
      else codec->decode(d, block, ctx, decoded.rows_range(off, off + count));
    }
    if (!in_place && cols > 0 && !scattered) {
      const DenseView slots{decoded.data, side.total(), cols};
      side.unpack(d, slots, dst, accumulate);
    }
    // Device kernels are asynchronous: synchronise so the codec time is the real cost.
    if (!d.is_host()) d.synchronize();
    codec_seconds_ += seconds_since(t1);
  };
  return wrap(std::move(inner), std::move(complete), layer, dir, "");
}

Request HaloExchange::start_selected(Direction dir, int layer, std::int64_t epoch,
                                     std::uint64_t seed, ConstDenseView src,
                                     const SlotSelection& selected, DenseView slots,
                                     SlotSelection* received) {
  GNN_ASSERT(layer >= 0, "negative layer ", layer);
  const int tag_value = tag(layer, dir);
  GNN_ASSERT(tag_value <= transport_.max_variable_tag(), "layer ", layer, " needs tag ",
             tag_value, " above the transport's variable-size maximum ",
             transport_.max_variable_tag());
  const HaloPlan& plan = dir == Direction::forward ? *plan_ : reverse_plan_;
  const SlotMap& out = plan.send();
  const SlotMap& in = plan.recv();
  GNN_ASSERT(src.rows == out.matrix_rows(), "selected ", to_string(dir), " exchange of layer ",
             layer, ": source has ", src.rows, " rows, the plan expects ", out.matrix_rows());
  GNN_ASSERT(slots.rows == in.total() && slots.cols == src.cols, "selected ", to_string(dir),
             " exchange of layer ", layer, ": slot buffer is ", slots.rows, "x", slots.cols,
             ", the plan receives ", in.total(), " slots of width ", src.cols);
  GNN_ASSERT(selected.size() == out.num_peers(), "selection lists ", selected.size(),
             " peers, the plan sends to ", out.num_peers());

  const DevicePtr& dev_ptr = plan.device();
  const Device& dev = *dev_ptr;
  const bool on_device = !dev.is_host() && transport_.accepts_device_memory(dev);
  const auto t0 = codec_clock(dev, !on_device);
  const std::int64_t cols = src.cols;
  std::shared_ptr<const Codec> codec = codec_ptr(layer, dir);

  // The chosen slots, as positions among all of this side's slots, and their keys.
  std::vector<LocalId> positions, rows;
  std::vector<GlobalId> keys;
  for (std::size_t k = 0; k < selected.size(); ++k) {
    const std::span<const GlobalId> peer_keys = out.keys_host(k);
    std::int32_t prev = -1;
    for (const std::int32_t s : selected[k]) {
      GNN_ASSERT(s > prev && s < out.count(k), "selected slot ", s, " for peer ",
                 out.peers()[k], " is not ascending within [0, ", out.count(k), ")");
      prev = s;
      positions.push_back(static_cast<LocalId>(out.offset(k) + s));
      keys.push_back(peer_keys[static_cast<std::size_t>(s)]);
      if (out.is_selection()) rows.push_back(out.link(k).rows[static_cast<std::size_t>(s)]);
    }
  }
  const auto n_sel = static_cast<std::int64_t>(positions.size());

  // Pack the chosen slots (gather straight from the source for a selection map).
  Matrix chosen(n_sel, cols, dev_ptr);
  if (n_sel > 0 && cols > 0) {
    if (out.is_selection()) {
      const Buffer<LocalId> idx = Buffer<LocalId>::from_host(rows, dev_ptr);
      kernels::gather_rows(dev, src, idx.data(), chosen.view());
    } else {
      Matrix all(out.total(), cols, dev_ptr);
      out.pack(dev, src, all.view());
      const Buffer<LocalId> idx = Buffer<LocalId>::from_host(positions, dev_ptr);
      kernels::gather_rows(dev, all.view(), idx.data(), chosen.view());
    }
  }
  const Buffer<GlobalId> chosen_keys = Buffer<GlobalId>::from_host(keys, dev_ptr);

  // Messages on the host (staged from a GPU) or, for a transport that takes device memory, on
  // the device: [u32 count][u32 index x count][codec block].
  const DevicePtr msg_dev = on_device ? dev_ptr : cpu_device();
  struct Outgoing {
    Buffer<std::byte> bytes;
  };
  auto outgoing = std::make_shared<std::vector<Outgoing>>(out.num_peers());
  std::vector<PeerBytes> sends;
  std::int64_t at = 0;
  CodecContext base_ctx;
  base_ctx.seed = seed;
  base_ctx.epoch = epoch;
  base_ctx.layer = layer;
  base_ctx.direction = dir;
  for (std::size_t k = 0; k < out.num_peers(); ++k) {
    const auto count = static_cast<std::int64_t>(selected[k].size());
    const EncodedSize block = codec->encoded_size(count, cols);
    const std::size_t head = header_bytes(static_cast<std::size_t>(count));
    Buffer<std::byte>& msg = (*outgoing)[k].bytes;
    msg = Buffer<std::byte>(head + block.total(), msg_dev);
    std::vector<std::uint32_t> header(1 + selected[k].size());
    header[0] = static_cast<std::uint32_t>(count);
    for (std::size_t i = 0; i < selected[k].size(); ++i)
      header[i + 1] = static_cast<std::uint32_t>(selected[k][i]);
    msg_dev->copy_from_host(msg.data(), header.data(), head);
    if (count > 0 && cols > 0) {
      CodecContext ctx = base_ctx;
      ctx.row_ids = chosen_keys.data() + at;
      const ConstDenseView rows = chosen.view().rows_range(at, at + count);
      if (dev.is_host() || on_device) {
        codec->encode(dev, rows, ctx, std::span<std::byte>(msg.data() + head, block.total()));
      } else {
        Buffer<std::byte> encoded(block.total(), dev_ptr);
        codec->encode(dev, rows, ctx, std::span<std::byte>(encoded.data(), block.total()));
        dev.copy_to_host(msg.data() + head, encoded.data(), block.total());
      }
    }
    at += count;
    sends.push_back({out.peers()[k], std::span<const std::byte>(msg.data(), msg.size())});
  }

  // Received messages land in buffers the room callback allocates.
  auto incoming = std::make_shared<std::vector<Buffer<std::byte>>>(in.num_peers());
  ReceiveRoom room = [incoming, msg_dev](std::size_t k, std::size_t bytes) {
    (*incoming)[k] = Buffer<std::byte>(bytes, msg_dev);
    return std::span<std::byte>((*incoming)[k].data(), bytes);
  };
  codec_seconds_ += seconds_since(t0);
  Request inner = transport_.exchange_variable(sends, in.peers(), tag_value, std::move(room));
  for (std::size_t k = 0; k < out.num_peers(); ++k) {
    const EncodedSize block = codec->encoded_size(static_cast<std::int64_t>(selected[k].size()), cols);
    traffic_.add(layer, dir, out.peers()[k], static_cast<std::int64_t>(selected[k].size()),
                 block.payload,
                 block.metadata + header_bytes(selected[k].size()) +
                     Transport::kVariableHeaderBytes);
  }

  auto complete = [this, plan_copy = plan, outgoing, incoming, codec, base_ctx, slots, cols,
                   received, dev_ptr, msg_dev, layer, dir]() {
    const Device& d = *dev_ptr;
    const auto t1 = codec_clock(d, /*waits_anyway=*/true);
    const SlotMap& side = plan_copy.recv();
    if (received) received->assign(side.num_peers(), {});
    for (std::size_t k = 0; k < side.num_peers(); ++k) {
      const Buffer<std::byte>& msg = (*incoming)[k];
      auto malformed = [&](const std::string& why) {
        return Error("halo exchange of layer " + std::to_string(layer) + " " + to_string(dir) +
                     " on rank " + std::to_string(plan_copy.rank()) +
                     ": malformed message from rank " + std::to_string(side.peers()[k]) + ": " +
                     why);
      };
      if (msg.size() < sizeof(std::uint32_t)) throw malformed("no header");
      std::uint32_t count = 0;
      msg_dev->copy_to_host(&count, msg.data(), sizeof count);
      if (count > static_cast<std::uint64_t>(side.count(k)))
        throw malformed(std::to_string(count) + " slots, the plan has " +
                        std::to_string(side.count(k)));
      const std::size_t head = header_bytes(count);
      const EncodedSize block = codec->encoded_size(count, cols);
      if (msg.size() != head + block.total())
        throw malformed(std::to_string(msg.size()) + " bytes for " + std::to_string(count) +
                        " slots, expected " + std::to_string(head + block.total()));
      std::vector<std::uint32_t> index(count);
      if (count > 0) msg_dev->copy_to_host(index.data(), msg.data() + sizeof count, count * 4);
      std::vector<LocalId> positions(count);
      std::vector<GlobalId> keys(count);
      const std::span<const GlobalId> peer_keys = side.keys_host(k);
      for (std::uint32_t i = 0; i < count; ++i) {
        if (index[i] >= side.count(k) || (i > 0 && index[i] <= index[i - 1]))
          throw malformed("slot index " + std::to_string(index[i]) + " is out of order or range");
        positions[i] = static_cast<LocalId>(side.offset(k) + index[i]);
        keys[i] = peer_keys[index[i]];
      }
      if (received) received->at(k).assign(index.begin(), index.end());
      if (count == 0 || cols == 0) continue;
      Matrix rows(count, cols, dev_ptr);
      const Buffer<GlobalId> row_keys = Buffer<GlobalId>::from_host(keys, dev_ptr);
      CodecContext ctx = base_ctx;
      ctx.row_ids = row_keys.data();
      if (d.is_host() || msg_dev == dev_ptr) {
        codec->decode(d, std::span<const std::byte>(msg.data() + head, block.total()), ctx,
                      rows.view());
      } else {
        Buffer<std::byte> encoded(block.total(), dev_ptr);
        d.copy_from_host(encoded.data(), msg.data() + head, block.total());
        codec->decode(d, std::span<const std::byte>(encoded.data(), block.total()), ctx,
                      rows.view());
      }
      const Buffer<LocalId> idx = Buffer<LocalId>::from_host(positions, dev_ptr);
      kernels::scatter_rows(d, rows.view(), idx.data(), slots);
    }
    if (!d.is_host()) d.synchronize();
    codec_seconds_ += seconds_since(t1);
  };
  return wrap(std::move(inner), std::move(complete), layer, dir, "variable-size");
}

}  // namespace halognn
