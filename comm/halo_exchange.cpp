#include "comm/halo_exchange.hpp"

#include <chrono>
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

/// Grows `buf` to at least `n` elements on `dev` (contents are not kept).
template <typename T>
void ensure(Buffer<T>& buf, std::size_t n, const DevicePtr& dev) {
  if (buf.size() >= n && buf.device_ptr() == dev) return;
  buf = Buffer<T>(n, dev);
}

}  // namespace

/// Buffers of one (layer, direction), reused from epoch to epoch while no exchange of that
/// (layer, direction) is in flight.
struct HaloExchange::Workspace {
  Buffer<float> send_rows;        // gathered rows to encode (when the send side is not contiguous)
  Buffer<float> recv_rows;        // decoded rows to scatter-add (backward)
  Buffer<std::byte> send_bytes;   // encoded blocks on the device, peer after peer
  Buffer<std::byte> recv_bytes;
  Buffer<std::byte> send_host;    // host staging when the device is not the host
  Buffer<std::byte> recv_host;
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

namespace {
HaloPlan reverse_of(const std::shared_ptr<const HaloPlan>& plan) {
  GNN_ASSERT(plan != nullptr, "halo exchange needs a plan");
  return plan->reverse();
}
}  // namespace

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

const Codec& HaloExchange::codec(int layer, Direction dir) const {
  auto it = codecs_.find({layer, static_cast<int>(dir)});
  return it != codecs_.end() ? *it->second : *default_codec_[static_cast<int>(dir)];
}

std::shared_ptr<HaloExchange::Workspace> HaloExchange::workspace(int layer, Direction dir) {
  auto& ws = workspaces_[{layer, static_cast<int>(dir)}];
  if (!ws) ws = std::make_shared<Workspace>();
  // An exchange of the same (layer, direction) still in flight owns the other reference: give
  // this one its own buffers rather than overwrite the ones being sent from.
  if (ws.use_count() > 1) return std::make_shared<Workspace>();
  return ws;
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
  GNN_ASSERT(src.rows == plan.send_source_rows(), to_string(dir), " exchange of layer ", layer,
             ": source has ", src.rows, " rows, the plan expects ", plan.send_source_rows());
  GNN_ASSERT(dst.rows == plan.recv_dest_rows(), to_string(dir), " exchange of layer ", layer,
             ": destination has ", dst.rows, " rows, the plan expects ", plan.recv_dest_rows());
  GNN_ASSERT(src.cols == dst.cols, "source has ", src.cols, " columns, destination ", dst.cols);
  GNN_ASSERT(accumulate || plan.recv_contiguous(),
             "an assigning exchange needs contiguous receive rows");

  const auto t0 = Clock::now();
  const DevicePtr& dev_ptr = plan.device();
  const Device& dev = *dev_ptr;
  const std::int64_t cols = src.cols;
  std::shared_ptr<const Codec> codec;
  {
    auto it = codecs_.find({layer, static_cast<int>(dir)});
    codec = it != codecs_.end() ? it->second : default_codec_[static_cast<int>(dir)];
  }
  std::shared_ptr<Workspace> ws = workspace(layer, dir);

  CodecContext base_ctx;
  base_ctx.seed = seed;
  base_ctx.epoch = epoch;
  base_ctx.layer = layer;
  base_ctx.direction = dir;

  // Byte layout: one block per peer, in peer order, for both sides.
  const std::size_t n_send = plan.num_send_peers(), n_recv = plan.num_recv_peers();
  std::vector<EncodedSize> send_size(n_send), recv_size(n_recv);
  std::vector<std::size_t> send_off(n_send + 1, 0), recv_off(n_recv + 1, 0);
  for (std::size_t k = 0; k < n_send; ++k) {
    send_size[k] = codec->encoded_size(plan.send_count(k), cols);
    send_off[k + 1] = send_off[k] + send_size[k].total();
  }
  for (std::size_t k = 0; k < n_recv; ++k) {
    recv_size[k] = codec->encoded_size(plan.recv_count(k), cols);
    recv_off[k + 1] = recv_off[k] + recv_size[k].total();
  }
  // Buffer growth (first use of a (layer, direction), or a second exchange in flight) is
  // allocation, not codec work: timed apart and left out of codec_seconds().
  const auto t_alloc = Clock::now();
  ensure(ws->send_bytes, send_off[n_send], dev_ptr);
  ensure(ws->recv_bytes, recv_off[n_recv], dev_ptr);

  // Pack: rows that are not already one contiguous block are gathered first.
  ConstDenseView packed = src;
  const std::int64_t total_send = plan.total_send_rows();
  if (!plan.send_contiguous() && total_send > 0 && cols > 0)
    ensure(ws->send_rows, static_cast<std::size_t>(total_send * cols), dev_ptr);
  const double alloc_s = seconds_since(t_alloc);
  if (!plan.send_contiguous() && total_send > 0 && cols > 0) {
    DenseView gathered{ws->send_rows.data(), total_send, cols};
    kernels::gather_rows(dev, src, plan.all_send_rows(), gathered);
    packed = gathered;
  }

  // Encode one block per peer and record what will cross the wire.
  for (std::size_t k = 0; k < n_send; ++k) {
    const std::int64_t count = plan.send_count(k);
    if (count > 0 && cols > 0) {
      CodecContext ctx = base_ctx;
      ctx.row_ids = plan.send_global_ids(k);
      const std::int64_t off = plan.send_offset(k);
      codec->encode(dev, packed.rows_range(off, off + count), ctx,
                    std::span<std::byte>(ws->send_bytes.data() + send_off[k], send_size[k].total()));
    }
  }

  // Open MPI is not CUDA-aware here: device bytes travel through (page-locked) host staging
  // buffers, unless the transport takes device memory itself (NCCL).
  std::byte* send_base = ws->send_bytes.data();
  std::byte* recv_base = ws->recv_bytes.data();
  const bool stage = !dev.is_host() && !transport_.accepts_device_memory(dev);
  if (stage) {
    const DevicePtr staging = host_staging_device(dev);
    ensure(ws->send_host, send_off[n_send], staging);
    ensure(ws->recv_host, recv_off[n_recv], staging);
    if (send_off[n_send] > 0) dev.copy_to_host(ws->send_host.data(), send_base, send_off[n_send]);
    send_base = ws->send_host.data();
    recv_base = ws->recv_host.data();
  }

  std::vector<PeerBytes> sends;
  std::vector<PeerBytesMut> recvs;
  for (std::size_t k = 0; k < n_send; ++k)
    if (send_size[k].total() > 0)
      sends.push_back({plan.send_peers()[k],
                       std::span<const std::byte>(send_base + send_off[k], send_size[k].total())});
  for (std::size_t k = 0; k < n_recv; ++k)
    if (recv_size[k].total() > 0)
      recvs.push_back({plan.recv_peers()[k],
                       std::span<std::byte>(recv_base + recv_off[k], recv_size[k].total())});
  codec_seconds_ += seconds_since(t0) - alloc_s;

  Request inner = transport_.exchange(sends, recvs, tag_value);
  // Recorded once the messages are posted, so a failed encode leaves no phantom bytes.
  for (std::size_t k = 0; k < n_send; ++k) traffic_.add(layer, dir, send_size[k]);

  // The completion step: decode every peer's block into its rows of dst (forward) or into the
  // gathered layout and then add it into dst through the send rows of the forward plan (backward).
  // The plan is copied (it shares its index arrays) so the request does not depend on `plan`.
  auto complete = [this, plan_copy = plan, ws, codec, base_ctx, recv_size, recv_off, dst, cols,
                   accumulate, dev_ptr, stage]() {
    const auto t1 = Clock::now();
    const Device& d = *dev_ptr;
    const std::size_t n = plan_copy.num_recv_peers();
    if (stage && recv_off[n] > 0)
      d.copy_from_host(ws->recv_bytes.data(), ws->recv_host.data(), recv_off[n]);
    const std::int64_t total_recv = plan_copy.total_recv_rows();
    DenseView decoded = dst;
    if (accumulate && total_recv > 0 && cols > 0) {
      ensure(ws->recv_rows, static_cast<std::size_t>(total_recv * cols), dev_ptr);
      decoded = DenseView{ws->recv_rows.data(), total_recv, cols};
    }
    for (std::size_t k = 0; k < n; ++k) {
      const std::int64_t count = plan_copy.recv_count(k);
      if (count == 0 || cols == 0) continue;
      CodecContext ctx = base_ctx;
      ctx.row_ids = plan_copy.recv_global_ids(k);
      const std::int64_t off = plan_copy.recv_offset(k);
      codec->decode(d,
                    std::span<const std::byte>(ws->recv_bytes.data() + recv_off[k],
                                               recv_size[k].total()),
                    ctx, decoded.rows_range(off, off + count));
    }
    if (accumulate && total_recv > 0 && cols > 0)
      kernels::scatter_add_rows(d, decoded, plan_copy.all_recv_rows(), dst);
    // Device kernels are asynchronous: synchronise so the codec time is the real cost.
    if (!d.is_host()) d.synchronize();
    codec_seconds_ += seconds_since(t1);
  };

  return Request(std::make_unique<ExchangeOperation>(
                     std::move(inner), &wait_seconds_,
                     std::string("halo exchange of layer ") + std::to_string(layer) + " " +
                         to_string(dir) + " on rank " + std::to_string(plan.rank())),
                 std::move(complete));
}

}  // namespace halognn
