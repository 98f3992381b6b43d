// The parts of the Transport seam that every transport shares: the variable-size exchange built
// on exchange(), and the throwing defaults of the collectives.
#include "comm/transport.hpp"

#include <string>
#include <vector>

#include "core/error.hpp"

namespace halognn {
namespace {

[[noreturn]] void unsupported(std::string_view transport, const char* what) {
  throw ConfigError("transport " + std::string(transport) + " does not support " + what);
}

}  // namespace

/// One variable-size exchange: its sizes travel at once, its bytes are received once the sizes are
/// known. Shared between the request and the transport's queue of unposted receives.
struct Transport::VariableExchange {
  int data_tag = 0;
  std::vector<Rank> recv_peers;
  std::vector<std::uint64_t> sizes_out, sizes_in;
  ReceiveRoom room;
  Request sizes;       // size sends and receives
  Request data_sends;  // the bytes sent
  Request data_recvs;  // the bytes received, once posted
  bool recvs_posted = false;
};

class Transport::VariableOperation final : public Request::Operation {
 public:
  VariableOperation(Transport& t, std::shared_ptr<VariableExchange> x, std::string what)
      : t_(t), x_(std::move(x)), what_(std::move(what)) {}
  bool test() override {
    t_.progress_variable(x_->data_tag);
    if (!x_->recvs_posted) return false;
    return x_->data_recvs.test() && x_->data_sends.test();
  }
  void wait() override {
    auto& fifo = t_.variable_fifo_[x_->data_tag];
    // Earlier exchanges on this tag post their receives first: wait for their sizes in order.
    while (!x_->recvs_posted) {
      GNN_ASSERT(!fifo.empty(), "variable exchange lost from its queue");
      fifo.front()->sizes.wait();
      t_.progress_variable(x_->data_tag);
    }
    x_->data_recvs.wait();
    x_->data_sends.wait();
  }
  std::string describe() const override { return what_; }

 private:
  Transport& t_;
  std::shared_ptr<VariableExchange> x_;
  std::string what_;
};

void Transport::progress_variable(int data_tag) {
  auto it = variable_fifo_.find(data_tag);
  if (it == variable_fifo_.end()) return;
  auto& fifo = it->second;
  while (!fifo.empty() && fifo.front()->sizes.test()) {
    VariableExchange& x = *fifo.front();
    std::vector<PeerBytesMut> recvs;
    for (std::size_t k = 0; k < x.recv_peers.size(); ++k) {
      if (x.sizes_in[k] == 0) continue;
      const std::span<std::byte> room = x.room(k, static_cast<std::size_t>(x.sizes_in[k]));
      GNN_ASSERT(room.size() == x.sizes_in[k], "receive room of ", room.size(), " bytes for a ",
                 x.sizes_in[k], "-byte message");
      recvs.push_back({x.recv_peers[k], room});
    }
    x.data_recvs = exchange({}, recvs, data_tag);
    x.recvs_posted = true;
    fifo.pop_front();
  }
  if (fifo.empty()) variable_fifo_.erase(it);
}

Request Transport::exchange_variable(std::span<const PeerBytes> sends,
                                     std::span<const Rank> recv_peers, int tag, ReceiveRoom room) {
  GNN_ASSERT(tag >= 0 && tag <= max_variable_tag(), "transport ", name(), ": variable tag ", tag,
             " outside [0, ", max_variable_tag(), "]");
  auto x = std::make_shared<VariableExchange>();
  x->data_tag = tag + max_variable_tag() + 1;
  x->recv_peers.assign(recv_peers.begin(), recv_peers.end());
  x->room = std::move(room);
  x->sizes_out.reserve(sends.size());
  for (const PeerBytes& s : sends) x->sizes_out.push_back(s.bytes.size());
  x->sizes_in.assign(recv_peers.size(), 0);

  std::vector<PeerBytes> size_sends;
  std::vector<PeerBytesMut> size_recvs;
  for (std::size_t k = 0; k < sends.size(); ++k)
    size_sends.push_back({sends[k].peer, std::as_bytes(std::span(&x->sizes_out[k], 1))});
  for (std::size_t k = 0; k < recv_peers.size(); ++k)
    size_recvs.push_back({recv_peers[k], std::as_writable_bytes(std::span(&x->sizes_in[k], 1))});
  x->sizes = exchange(size_sends, size_recvs, tag);
  x->data_sends = exchange(sends, {}, x->data_tag);
  variable_fifo_[x->data_tag].push_back(x);

  const std::string what = std::string(name()) + " variable exchange on rank " +
                           std::to_string(rank()) + ", tag " + std::to_string(tag);
  return Request(std::make_unique<VariableOperation>(*this, std::move(x), what));
}

void Transport::all_reduce_sum(const Device&, float*, std::size_t) {
  unsupported(name(), "all_reduce_sum on device data");
}
void Transport::all_reduce_sum(double*, std::size_t) { unsupported(name(), "all_reduce_sum"); }
void Transport::all_reduce_max(double*, std::size_t) { unsupported(name(), "all_reduce_max"); }
void Transport::all_reduce_sum(std::int64_t*, std::size_t) {
  unsupported(name(), "all_reduce_sum on integers");
}
void Transport::barrier() { unsupported(name(), "barrier"); }

}  // namespace halognn
