#pragma once
/// @file emulated_link.hpp
/// An emulated cluster link for scaling studies on one machine: a Transport decorator under which
/// every message completes no earlier than `latency + bytes / bandwidth` after it was posted, with
/// each rank's sends serialised as on one NIC (a send starts when the previous one has left).
/// So codecs and pipelining can be judged as they would behave between servers, on a laptop.
/// With several ranks per host (consecutive ranks share a host, as `mpirun --map-by ppr:N:node`
/// places them), messages between ranks of one host are not delayed (shared memory), and the ranks
/// of a host share its NIC evenly: each sends at bandwidth / ranks_per_host, which is what they get
/// when they all send at once, as they do in a halo exchange.
///
/// How: the sender computes each message's modelled arrival time and sends it along as an 8-byte
/// side message (on the same machine CLOCK_MONOTONIC is one clock for all processes). A receive is
/// complete when the real message has arrived and the clock has passed its modelled arrival; a send
/// when the modelled NIC has finished it. Side messages are emulation machinery, not traffic: they
/// are not counted in bytes_sent(). Gradient all-reduces are delayed to the time a ring all-reduce
/// of that size would take: 2 (P-1) (latency + bytes / (P bandwidth)) (with hosts of consecutive
/// ranks, each step of the ring moves one chunk through every host's NIC, so the time is the same);
/// none when all ranks are on one host.
#include <memory>

#include "comm/transport.hpp"

namespace halognn {

struct LinkModel {
  double gbps = 0;          ///< bandwidth in gigabits per second (> 0)
  double latency_us = 0;    ///< one-way latency per message in microseconds
  int ranks_per_host = 1;   ///< consecutive ranks sharing one host and its NIC (>= 1)
  /// Seconds the link needs for one message of `bytes` bytes once the NIC is free.
  double transfer_s(std::size_t bytes) const { return static_cast<double>(bytes) * 8.0 / (gbps * 1e9); }
  double latency_s() const { return latency_us * 1e-6; }
  /// Whether ranks a and b are on one host.
  bool same_host(Rank a, Rank b) const { return a / ranks_per_host == b / ranks_per_host; }
};

/// Parses "GBPS[,LATENCY_US[,RANKS_PER_HOST]]" (e.g. "10", "1,50" or "1,50,2"); throws ConfigError
/// on anything else.
LinkModel parse_link_model(const std::string& spec);

/// Wraps `inner` (which must outlive the result). max_tag() is halved: the upper half of the
/// inner transport's tags carries the arrival-time side messages.
std::unique_ptr<Transport> make_emulated_link(Transport& inner, const LinkModel& link);

/// Seconds on the clock the emulation uses (steady, shared by all processes of one machine).
double link_clock_now();

}  // namespace halognn
