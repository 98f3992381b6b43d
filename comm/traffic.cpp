#include "comm/traffic.hpp"

#include <algorithm>

#include "comm/transport.hpp"
#include "core/error.hpp"

namespace halognn {

Json TrafficEntry::to_json() const {
  Json j = Json::object();
  j["payload"] = payload;
  j["metadata"] = metadata;
  j["messages"] = messages;
  j["rows"] = rows;
  j["total"] = total();
  return j;
}

TrafficCounter::TrafficCounter(int num_layers) {
  GNN_ASSERT(num_layers >= 0, "negative layer count ", num_layers);
  entries_.assign(static_cast<std::size_t>(num_layers), std::vector<TrafficEntry>(2));
}

std::vector<TrafficEntry>& TrafficCounter::layer(int l) {
  GNN_ASSERT(l >= 0, "negative layer index ", l);
  if (static_cast<std::size_t>(l) >= entries_.size())
    entries_.resize(static_cast<std::size_t>(l) + 1, std::vector<TrafficEntry>(2));
  return entries_[static_cast<std::size_t>(l)];
}

void TrafficCounter::add(int l, Direction dir, Rank peer, std::int64_t rows, std::size_t payload,
                         std::size_t metadata) {
  auto& e = layer(l)[static_cast<std::size_t>(dir)];
  if (payload + metadata == 0) return;
  e.payload += payload;
  e.metadata += metadata;
  e.messages += 1;
  e.rows += static_cast<std::uint64_t>(rows);
  auto& p = per_peer_[peer];
  const auto at = static_cast<std::size_t>(l) * 2 + static_cast<std::size_t>(dir);
  if (p.size() <= at) p.resize(at + 1, 0);
  p[at] += payload + metadata;
}

std::uint64_t TrafficCounter::bytes_to(Rank peer, int l, Direction dir) const {
  const auto it = per_peer_.find(peer);
  const auto at = static_cast<std::size_t>(l) * 2 + static_cast<std::size_t>(dir);
  if (it == per_peer_.end() || l < 0 || it->second.size() <= at) return 0;
  return it->second[at];
}

TrafficEntry TrafficCounter::at(int l, Direction dir) const {
  if (l < 0 || static_cast<std::size_t>(l) >= entries_.size()) return {};
  return entries_[static_cast<std::size_t>(l)][static_cast<std::size_t>(dir)];
}

TrafficEntry TrafficCounter::total(Direction dir) const {
  TrafficEntry t;
  for (const auto& e : entries_) t += e[static_cast<std::size_t>(dir)];
  return t;
}

TrafficEntry TrafficCounter::total() const {
  TrafficEntry t = total(Direction::forward);
  t += total(Direction::backward);
  return t;
}

void TrafficCounter::reset() {
  for (auto& e : entries_) std::fill(e.begin(), e.end(), TrafficEntry{});
  per_peer_.clear();
}

TrafficCounter TrafficCounter::sum_over_ranks(Transport& transport) const {
  // Agree on the shape first: a rank without peers may never have seen a layer.
  double layers = static_cast<double>(entries_.size());
  transport.all_reduce_max(&layers, 1);
  TrafficCounter out(static_cast<int>(layers));
  constexpr std::size_t kFields = 4;
  std::vector<std::int64_t> flat(out.entries_.size() * 2 * kFields, 0);
  for (std::size_t l = 0; l < entries_.size(); ++l)
    for (std::size_t d = 0; d < 2; ++d) {
      const TrafficEntry& e = entries_[l][d];
      std::int64_t* f = flat.data() + (l * 2 + d) * kFields;
      f[0] = static_cast<std::int64_t>(e.payload);
      f[1] = static_cast<std::int64_t>(e.metadata);
      f[2] = static_cast<std::int64_t>(e.messages);
      f[3] = static_cast<std::int64_t>(e.rows);
    }
  transport.all_reduce_sum(flat.data(), flat.size());
  for (std::size_t l = 0; l < out.entries_.size(); ++l)
    for (std::size_t d = 0; d < 2; ++d) {
      TrafficEntry& e = out.entries_[l][d];
      const std::int64_t* f = flat.data() + (l * 2 + d) * kFields;
      e.payload = static_cast<std::uint64_t>(f[0]);
      e.metadata = static_cast<std::uint64_t>(f[1]);
      e.messages = static_cast<std::uint64_t>(f[2]);
      e.rows = static_cast<std::uint64_t>(f[3]);
    }
  return out;
}

Json TrafficCounter::to_json() const {
  Json layers = Json::array();
  for (std::size_t l = 0; l < entries_.size(); ++l) {
    Json j = Json::object();
    j["layer"] = static_cast<std::int64_t>(l);
    j["fwd"] = entries_[l][0].to_json();
    j["bwd"] = entries_[l][1].to_json();
    layers.push_back(std::move(j));
  }
  Json out = Json::object();
  out["layers"] = std::move(layers);
  out["fwd"] = total(Direction::forward).to_json();
  out["bwd"] = total(Direction::backward).to_json();
  out["total"] = total().to_json();
  return out;
}

}  // namespace halognn
