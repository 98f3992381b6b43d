#pragma once
/// @file traffic.hpp
/// Byte accounting: every halo message a rank sends is recorded under (layer, direction), split
/// into payload and metadata bytes as the codec reports them. Epoch metrics read it, and tests
/// check it against what the transport actually moved.
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "compress/codec.hpp"
#include "core/json.hpp"
#include "core/types.hpp"

namespace halognn {

class Transport;

/// Bytes and messages sent under one (layer, direction), or a sum of such.
struct TrafficEntry {
  std::uint64_t payload = 0;   ///< value bytes
  std::uint64_t metadata = 0;  ///< scales, offsets, indices, headers
  std::uint64_t messages = 0;  ///< messages posted (zero-byte messages are never posted)
  std::uint64_t rows = 0;      ///< slots the messages carried (plain rows or group rows)
  std::uint64_t total() const { return payload + metadata; }
  TrafficEntry& operator+=(const TrafficEntry& o) {
    payload += o.payload;
    metadata += o.metadata;
    messages += o.messages;
    rows += o.rows;
    return *this;
  }
  bool operator==(const TrafficEntry&) const = default;
  /// {"payload": .., "metadata": .., "messages": .., "rows": .., "total": ..}
  Json to_json() const;
};

/// Per-(layer, direction) totals of the bytes this rank sent. Layers are created on first use.
class TrafficCounter {
 public:
  TrafficCounter() = default;
  /// Starts with `num_layers` layers (all zero), so ranks without peers report the same shape.
  explicit TrafficCounter(int num_layers);

  /// Records one message to `peer` of `payload + metadata` bytes carrying `rows` slots (a
  /// message of zero bytes is not counted).
  void add(int layer, Direction dir, Rank peer, std::int64_t rows, std::size_t payload,
           std::size_t metadata);
  void add(int layer, Direction dir, Rank peer, std::int64_t rows, const EncodedSize& size) {
    add(layer, dir, peer, rows, size.payload, size.metadata);
  }

  /// Number of layers seen so far (or given to the constructor).
  int num_layers() const { return static_cast<int>(entries_.size()); }
  /// Totals of one (layer, direction); zero for a layer never seen.
  TrafficEntry at(int layer, Direction dir) const;
  /// Totals of one direction over all layers.
  TrafficEntry total(Direction dir) const;
  /// Totals over all layers and both directions.
  TrafficEntry total() const;

  /// Bytes (payload + metadata) sent to `peer` under (layer, direction).
  std::uint64_t bytes_to(Rank peer, int layer, Direction dir) const;

  /// Zeroes all counts (keeps the number of layers).
  void reset();

  /// The element-wise sum over all ranks of `transport` (collective; every rank must call it).
  /// The result has max(num_layers over ranks) layers.
  TrafficCounter sum_over_ranks(Transport& transport) const;

  /// {"layers": [{"layer": 0, "fwd": {...}, "bwd": {...}}, ...], "fwd": {...}, "bwd": {...},
  ///  "total": {...}} with entries as TrafficEntry::to_json.
  Json to_json() const;

 private:
  std::vector<TrafficEntry>& layer(int l);
  // entries_[l][d]: layer l, direction d (0 forward, 1 backward)
  std::vector<std::vector<TrafficEntry>> entries_;
  // per_peer_[peer][l * 2 + d]: bytes sent to `peer`
  std::map<Rank, std::vector<std::uint64_t>> per_peer_;
};

}  // namespace halognn
