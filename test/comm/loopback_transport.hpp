#pragma once
// Test helper: P simulated ranks in one process. Each LoopbackTransport posts sends into a shared
// hub that matches them with receives per (source, destination, tag) in posting order, like MPI.
// Being single-threaded, wait() on a receive whose message was never sent throws instead of
// hanging. Collectives are not supported (the Transport defaults throw).
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "comm/transport.hpp"
#include "core/error.hpp"

namespace halognn::test {

class LoopbackHub {
 public:
  struct PendingRecv {
    std::span<std::byte> bytes;
    bool done = false;
  };
  using Key = std::tuple<Rank, Rank, int>;  // (source, destination, tag)

  void post_send(const Key& key, std::span<const std::byte> bytes) {
    auto& waiting = recvs_[key];
    if (!waiting.empty()) {
      deliver(*waiting.front(), bytes);
      waiting.pop_front();
      return;
    }
    messages_[key].emplace_back(bytes.begin(), bytes.end());
  }
  std::shared_ptr<PendingRecv> post_recv(const Key& key, std::span<std::byte> bytes) {
    auto r = std::make_shared<PendingRecv>(PendingRecv{bytes, false});
    auto& queued = messages_[key];
    if (!queued.empty()) {
      deliver(*r, queued.front());
      queued.pop_front();
    } else {
      recvs_[key].push_back(r);
    }
    return r;
  }

 private:
  static void deliver(PendingRecv& r, std::span<const std::byte> bytes) {
    GNN_ASSERT(r.bytes.size() == bytes.size(), "loopback: message of ", bytes.size(),
               " bytes for a receive of ", r.bytes.size());
    if (!bytes.empty()) std::memcpy(r.bytes.data(), bytes.data(), bytes.size());
    r.done = true;
  }
  std::map<Key, std::deque<std::vector<std::byte>>> messages_;
  std::map<Key, std::deque<std::shared_ptr<PendingRecv>>> recvs_;
};

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(std::shared_ptr<LoopbackHub> hub, Rank rank, Rank size)
      : hub_(std::move(hub)), rank_(rank), size_(size) {}
  std::string_view name() const override { return "loopback"; }
  Rank rank() const override { return rank_; }
  Rank size() const override { return size_; }
  int max_tag() const override { return 32767; }
  Request exchange(std::span<const PeerBytes> sends, std::span<const PeerBytesMut> recvs,
                   int tag) override {
    std::vector<std::shared_ptr<LoopbackHub::PendingRecv>> pending;
    for (const PeerBytesMut& r : recvs)
      if (!r.bytes.empty()) pending.push_back(hub_->post_recv({r.peer, rank_, tag}, r.bytes));
    for (const PeerBytes& s : sends)
      if (!s.bytes.empty()) {
        hub_->post_send({rank_, s.peer, tag}, s.bytes);
        bytes_sent_ += s.bytes.size();
        ++messages_sent_;
      }
    return Request(std::make_unique<Operation>(std::move(pending)));
  }
  std::uint64_t bytes_sent() const override { return bytes_sent_; }
  std::uint64_t collective_bytes() const override { return 0; }
  void reset_counters() override { bytes_sent_ = messages_sent_ = 0; }
  std::uint64_t messages_sent() const { return messages_sent_; }

 private:
  class Operation final : public Request::Operation {
   public:
    explicit Operation(std::vector<std::shared_ptr<LoopbackHub::PendingRecv>> p)
        : pending_(std::move(p)) {}
    bool test() override {
      for (const auto& r : pending_)
        if (!r->done) return false;
      return true;
    }
    void wait() override {
      if (!test()) throw Error("loopback: waiting for a message no rank has sent");
    }
    std::string describe() const override { return "loopback exchange"; }

   private:
    std::vector<std::shared_ptr<LoopbackHub::PendingRecv>> pending_;
  };
  std::shared_ptr<LoopbackHub> hub_;
  Rank rank_, size_;
  std::uint64_t bytes_sent_ = 0, messages_sent_ = 0;
};

}  // namespace halognn::test
