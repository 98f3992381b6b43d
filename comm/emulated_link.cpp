#include "comm/emulated_link.hpp"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <thread>
#include <vector>

#include "comm/request.hpp"
#include "core/error.hpp"

namespace halognn {
namespace {

/// Sleeps (coarsely) and then spins until the clock reaches `t`.
void wait_until(double t) {
  for (double now = link_clock_now(); now < t; now = link_clock_now()) {
    const double left = t - now;
    if (left > 200e-6) std::this_thread::sleep_for(std::chrono::duration<double>(left - 100e-6));
  }
}

/// A real exchange plus the modelled completion time of every message in it.
class EmulatedOperation final : public Request::Operation {
 public:
  EmulatedOperation(Request data, Request stamps, std::shared_ptr<std::vector<double>> arrivals,
                    double sends_done)
      : data_(std::move(data)), stamps_(std::move(stamps)), arrivals_(std::move(arrivals)),
        sends_done_(sends_done) {}
  bool test() override {
    if (!data_.test() || !stamps_.test()) return false;
    return link_clock_now() >= ready_time();
  }
  void wait() override {
    data_.wait();
    stamps_.wait();
    wait_until(ready_time());
  }
  std::string describe() const override { return "emulated-link exchange"; }

 private:
  double ready_time() const {
    double t = sends_done_;
    for (double a : *arrivals_) t = std::max(t, a);
    return t;
  }
  Request data_, stamps_;
  std::shared_ptr<std::vector<double>> arrivals_;
  double sends_done_;
};

class EmulatedLinkTransport final : public Transport {
 public:
  EmulatedLinkTransport(Transport& inner, const LinkModel& link) : inner_(inner), link_(link) {}
  std::string_view name() const override { return "emulated-link"; }
  Rank rank() const override { return inner_.rank(); }
  Rank size() const override { return inner_.size(); }
  int max_tag() const override { return inner_.max_tag() / 2 - 1; }
  bool accepts_device_memory(const Device& dev) const override {
    return inner_.accepts_device_memory(dev);
  }

  Request exchange(std::span<const PeerBytes> sends, std::span<const PeerBytesMut> recvs,
                   int tag) override {
    GNN_CHECK_CONFIG(tag >= 0 && tag <= max_tag(), "emulated link: tag ", tag, " out of range");
    const double now = link_clock_now();
    // Model this rank's share of its host's NIC: messages leave one after another, in posting
    // order, at bandwidth / ranks_per_host; a message to a rank of the same host is not delayed.
    auto stamps_out = std::make_shared<std::vector<double>>();
    double sends_done = now;
    std::vector<PeerBytes> stamp_sends;
    for (const PeerBytes& s : sends) {
      if (s.bytes.empty()) continue;
      if (link_.same_host(rank(), s.peer)) {
        stamps_out->push_back(now);
        continue;
      }
      const double start = std::max(now, nic_free_);
      nic_free_ = start + link_.transfer_s(s.bytes.size()) * link_.ranks_per_host;
      sends_done = std::max(sends_done, nic_free_);
      stamps_out->push_back(nic_free_ + link_.latency_s());
    }
    std::size_t k = 0;
    for (const PeerBytes& s : sends) {
      if (s.bytes.empty()) continue;
      stamp_sends.push_back({s.peer, std::as_bytes(std::span<const double>(&(*stamps_out)[k++], 1))});
    }
    auto arrivals = std::make_shared<std::vector<double>>();
    std::vector<PeerBytesMut> stamp_recvs;
    std::size_t nonempty = 0;
    for (const PeerBytesMut& r : recvs) nonempty += !r.bytes.empty();
    arrivals->assign(nonempty, 0.0);
    k = 0;
    for (const PeerBytesMut& r : recvs) {
      if (r.bytes.empty()) continue;
      stamp_recvs.push_back({r.peer, std::as_writable_bytes(std::span<double>(&(*arrivals)[k++], 1))});
    }
    const std::uint64_t counted = inner_.bytes_sent();
    Request stamps = inner_.exchange(stamp_sends, stamp_recvs, max_tag() + 1 + tag);
    side_bytes_ += inner_.bytes_sent() - counted;
    Request data = inner_.exchange(sends, recvs, tag);
    // Keep the outgoing stamps alive until the exchange completes.
    return Request(std::make_unique<EmulatedOperation>(std::move(data), std::move(stamps), arrivals,
                                                       sends_done),
                   [stamps_out] {});
  }

  void all_reduce_sum(const Device& dev, float* data, std::size_t n) override {
    const double t0 = link_clock_now();
    inner_.all_reduce_sum(dev, data, n);
    const double p = inner_.size();
    if (!link_.same_host(0, inner_.size() - 1)) {
      const double bytes = static_cast<double>(n) * sizeof(float);
      const double model = 2 * (p - 1) * (link_.latency_s() + bytes * 8.0 / (p * link_.gbps * 1e9));
      wait_until(t0 + model);
    }
  }
  void all_reduce_sum(double* data, std::size_t n) override { inner_.all_reduce_sum(data, n); }
  void all_reduce_max(double* data, std::size_t n) override { inner_.all_reduce_max(data, n); }
  void all_reduce_sum(std::int64_t* data, std::size_t n) override { inner_.all_reduce_sum(data, n); }
  void barrier() override { inner_.barrier(); }
  std::uint64_t bytes_sent() const override { return inner_.bytes_sent() - side_bytes_; }
  std::uint64_t collective_bytes() const override { return inner_.collective_bytes(); }
  void reset_counters() override {
    inner_.reset_counters();
    side_bytes_ = 0;
  }

 private:
  Transport& inner_;
  LinkModel link_;
  double nic_free_ = 0;
  std::uint64_t side_bytes_ = 0;
};

}  // namespace

double link_clock_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

LinkModel parse_link_model(const std::string& spec) {
  LinkModel m;
  auto number = [&](std::string_view t, const char* what) {
    double v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    GNN_CHECK_CONFIG(ec == std::errc() && p == t.data() + t.size() && std::isfinite(v),
                     "--emulate-link '", spec, "': ", what, " '", std::string(t),
                     "' is not a number (expected GBPS[,LATENCY_US[,RANKS_PER_HOST]])");
    return v;
  };
  std::vector<std::string_view> fields;
  for (std::size_t start = 0;;) {
    const auto comma = spec.find(',', start);
    fields.push_back(std::string_view(spec).substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  GNN_CHECK_CONFIG(fields.size() <= 3, "--emulate-link '", spec,
                   "': expected GBPS[,LATENCY_US[,RANKS_PER_HOST]]");
  m.gbps = number(fields[0], "bandwidth");
  if (fields.size() > 1) m.latency_us = number(fields[1], "latency");
  if (fields.size() > 2) {
    const double per_host = number(fields[2], "ranks per host");
    GNN_CHECK_CONFIG(per_host >= 1 && per_host <= 1e6 && per_host == std::floor(per_host), "--emulate-link '",
                     spec, "': ranks per host must be a whole number >= 1, got '", std::string(fields[2]), "'");
    m.ranks_per_host = static_cast<int>(per_host);
  }
  GNN_CHECK_CONFIG(m.gbps > 0, "--emulate-link '", spec, "': bandwidth must be positive");
  GNN_CHECK_CONFIG(m.latency_us >= 0, "--emulate-link '", spec, "': latency must be non-negative");
  return m;
}

std::unique_ptr<Transport> make_emulated_link(Transport& inner, const LinkModel& link) {
  return std::make_unique<EmulatedLinkTransport>(inner, link);
}

}  // namespace halognn
