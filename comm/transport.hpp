#pragma once
/// @file transport.hpp
/// The transport seam: point-to-point exchanges of byte blocks between ranks, and the few
/// collectives training needs (gradient and metric all-reduces, barrier). The halo exchange is
/// written against this interface only; make_mpi_transport is the implementation over MPI.
///
/// All calls on a Transport are expected to be made in the same order on every rank of the group
/// (collectives), or with matching (peer, tag, size) pairs on both sides (exchange).
///
/// No call may block forever unwatched: exchange() requests are watched through Request::wait(),
/// and an implementation opens a BlockingScope (comm/watchdog.hpp) around every blocking
/// collective, so the communication watchdog names it when a peer never joins.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string_view>

#include <mpi.h>

#include "comm/request.hpp"
#include "core/device.hpp"
#include "core/types.hpp"

namespace halognn {

/// Bytes to send to one peer (host memory, or device memory where the transport
/// accepts_device_memory; kept alive and unchanged until the request completes).
struct PeerBytes {
  Rank peer = -1;
  std::span<const std::byte> bytes;
};

/// Room for the bytes received from one peer (host memory, or device memory as above; its size
/// is the exact message size).
struct PeerBytesMut {
  Rank peer = -1;
  std::span<std::byte> bytes;
};

/// The receiving side of a variable-size exchange: called once per receive peer (its index in
/// the exchange's peer list) as soon as the size of that peer's message is known, it returns room
/// for exactly `bytes` bytes, which must stay valid until the exchange completes. Not called for an
/// empty message.
using ReceiveRoom = std::function<std::span<std::byte>(std::size_t recv_index, std::size_t bytes)>;

class Transport {
 public:
  virtual ~Transport() = default;
  /// Short name ("mpi"), used in error messages.
  virtual std::string_view name() const = 0;
  virtual Rank rank() const = 0;
  virtual Rank size() const = 0;

  /// Posts one send per entry of `sends` and one receive per entry of `recvs`, all with `tag`,
  /// and returns at once. Sizes are known on both sides (a receive's span is the exact size of
  /// the matching send). Empty spans are not posted. Several exchanges may be in flight; messages
  /// with the same (peer, tag) match in posting order. The caller records the bytes in a
  /// TrafficCounter (it knows the payload/metadata split); the transport adds every byte it posts
  /// to bytes_sent(), so the two can be checked against each other.
  /// @param tag  0 <= tag <= max_tag()
  virtual Request exchange(std::span<const PeerBytes> sends, std::span<const PeerBytesMut> recvs,
                           int tag) = 0;

  /// Largest tag exchange() accepts.
  virtual int max_tag() const = 0;

  /// Like exchange(), for messages whose size the receiver does not know in advance (a subset of
  /// rows with their indices). Every entry of `sends` is sent, even an empty one, and every rank
  /// of `recv_peers` must send this rank exactly one message with `tag`. Each message is preceded
  /// by its size (kVariableHeaderBytes bytes, on `tag`; the bytes follow on a second tag, so the
  /// order of other exchanges on `tag` does not matter); both are counted in bytes_sent(). The
  /// request completes when every size and message has arrived and `room` has been called for
  /// each non-empty one. Default: built on exchange(); a transport that matches messages by
  /// posting order only (NCCL) overrides it.
  /// @param tag  0 <= tag <= max_variable_tag()
  virtual Request exchange_variable(std::span<const PeerBytes> sends,
                                    std::span<const Rank> recv_peers, int tag, ReceiveRoom room);
  /// Largest tag exchange_variable() accepts (the upper half of the tags carries the bytes).
  int max_variable_tag() const { return max_tag() / 2 - 1; }
  /// Bytes each variable-size message costs in protocol overhead (its size, sent ahead).
  static constexpr std::size_t kVariableHeaderBytes = sizeof(std::uint64_t);

  /// True when exchange() takes spans in the memory of `dev` itself (and all_reduce_sum reduces
  /// data on `dev` without host staging); callers then skip their host staging buffers. Default:
  /// host memory only.
  virtual bool accepts_device_memory(const Device& dev) const {
    (void)dev;
    return false;
  }

  // Collectives (blocking). Each default throws ConfigError "transport X does not support Y",
  // so a transport for point-to-point tests need not implement them (c10d's Backend does the same).

  /// In-place sum over ranks of n floats that live on `dev`.
  virtual void all_reduce_sum(const Device& dev, float* data, std::size_t n);
  /// In-place sum over ranks of n host doubles (metrics).
  virtual void all_reduce_sum(double* data, std::size_t n);
  /// In-place maximum over ranks of n host doubles.
  virtual void all_reduce_max(double* data, std::size_t n);
  /// In-place sum over ranks of n host 64-bit integers (counts).
  virtual void all_reduce_sum(std::int64_t* data, std::size_t n);
  virtual void barrier();

  /// Bytes this rank posted in exchange() sends since construction (or reset_counters()).
  virtual std::uint64_t bytes_sent() const = 0;
  /// Bytes this rank contributed to all-reduces (n * element size per call) since construction.
  virtual std::uint64_t collective_bytes() const = 0;
  virtual void reset_counters() = 0;

 private:
  struct VariableExchange;
  class VariableOperation;
  /// Posts the byte receives of the variable exchanges on `data_tag` whose sizes have arrived, in
  /// the order the exchanges were started (so each receive matches its own message).
  void progress_variable(int data_tag);
  /// Variable exchanges whose byte receives are not posted yet, per data tag, oldest first.
  std::map<int, std::deque<std::shared_ptr<VariableExchange>>> variable_fifo_;
};

/// A transport over MPI point-to-point messages (Isend/Irecv) and MPI collectives. It works on a
/// duplicate of `comm` (so its tags never meet the caller's messages) with MPI_ERRORS_RETURN, so
/// MPI failures become MpiError exceptions. Collective: every rank of `comm` must call it. Open
/// MPI here is not CUDA-aware, so device data in all_reduce_sum is staged through the host.
std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm);

/// A transport over NCCL for ranks that each drive one GPU: exchange() is one grouped
/// ncclSend/ncclRecv on the transport's own CUDA stream, with spans in the memory of `dev`
/// (accepts_device_memory(dev) is true), ordered after the work already queued on `dev`'s
/// stream; all_reduce_sum on device data is ncclAllReduce. Host collectives and the barrier go
/// over MPI on a duplicate of `comm`. NCCL has no tags: exchanges between a pair of ranks match in
/// posting order, so every rank must post its exchanges in the same order (the halo exchange
/// does). Collective over `comm` (the NCCL unique id is broadcast over MPI). Two ranks of `comm`
/// on one GPU are refused with a ConfigError (NCCL does not support it; use the MPI transport).
/// Throws NotCompiled without the CUDA backend and ConfigError when `dev` is not a CUDA device.
std::unique_ptr<Transport> make_nccl_transport(MPI_Comm comm, DevicePtr dev);

}  // namespace halognn
