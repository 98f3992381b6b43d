#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "comm/mpi_env.hpp"
#include "comm/transport.hpp"
#include "comm/watchdog.hpp"
#include "core/error.hpp"

namespace halognn {
namespace {

// MPI counts are int; larger messages are split into chunks of this many bytes, posted with the
// same tag (MPI's non-overtaking rule keeps them in order).
constexpr std::size_t kMaxChunkBytes = std::size_t{1} << 30;
// Collectives likewise work in chunks of at most this many elements.
constexpr std::size_t kMaxChunkElems = std::size_t{1} << 28;

/// The MPI requests of one exchange. describe() is formatted only when asked (a pending request
/// destroyed, the watchdog firing), so posting an exchange builds no string.
class MpiOperation final : public Request::Operation {
 public:
  MpiOperation(std::vector<MPI_Request> reqs, Rank rank, int tag, std::vector<Rank> send_peers,
               std::vector<Rank> recv_peers)
      : reqs_(std::move(reqs)), rank_(rank), tag_(tag), send_peers_(std::move(send_peers)),
        recv_peers_(std::move(recv_peers)) {}
  bool test() override {
    if (reqs_.empty()) return true;
    int flag = 0;
    GNN_CHECK_MPI(MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &flag,
                              MPI_STATUSES_IGNORE));
    return flag != 0;
  }
  void wait() override {
    if (reqs_.empty()) return;
    GNN_CHECK_MPI(
        MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE));
  }
  std::string describe() const override {
    auto list = [](const std::vector<Rank>& peers) {
      std::string s;
      for (Rank p : peers) {
        if (!s.empty()) s += ',';
        s += std::to_string(p);
      }
      return s.empty() ? std::string("none") : s;
    };
    return "mpi exchange on rank " + std::to_string(rank_) + ", tag " + std::to_string(tag_) +
           ", sends to " + list(send_peers_) + ", receives from " + list(recv_peers_);
  }

 private:
  std::vector<MPI_Request> reqs_;
  Rank rank_;
  int tag_;
  std::vector<Rank> send_peers_, recv_peers_;
};

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm) {
    {
      BlockingScope blocked("MPI_Comm_dup (creating the mpi transport)");
      GNN_CHECK_MPI(MPI_Comm_dup(comm, &comm_));
    }
    GNN_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    GNN_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
    GNN_CHECK_MPI(MPI_Comm_size(comm_, &size_));
    void* attr = nullptr;
    int flag = 0;
    GNN_CHECK_MPI(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &attr, &flag));
    max_tag_ = flag ? *static_cast<int*>(attr) : 32767;  // 32767 is the standard's minimum
  }
  ~MpiTransport() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  std::string_view name() const override { return "mpi"; }
  Rank rank() const override { return rank_; }
  Rank size() const override { return size_; }
  int max_tag() const override { return max_tag_; }

  Request exchange(std::span<const PeerBytes> sends, std::span<const PeerBytesMut> recvs,
                   int tag) override {
    GNN_ASSERT(tag >= 0 && tag <= max_tag_, "mpi transport: tag ", tag, " outside [0, ",
               max_tag_, "]");
    std::vector<MPI_Request> reqs;
    reqs.reserve(sends.size() + recvs.size());
    std::vector<Rank> send_peers, recv_peers;
    send_peers.reserve(sends.size());
    recv_peers.reserve(recvs.size());
    // Receives first, so that a peer's eager sends find their buffers already posted.
    for (const PeerBytesMut& r : recvs) {
      check_peer(r.peer);
      recv_peers.push_back(r.peer);
      for (std::size_t off = 0; off < r.bytes.size(); off += kMaxChunkBytes) {
        const std::size_t n = std::min(kMaxChunkBytes, r.bytes.size() - off);
        reqs.emplace_back();
        GNN_CHECK_MPI(MPI_Irecv(r.bytes.data() + off, static_cast<int>(n), MPI_BYTE, r.peer, tag,
                                comm_, &reqs.back()));
      }
    }
    std::uint64_t sent = 0;
    for (const PeerBytes& s : sends) {
      check_peer(s.peer);
      send_peers.push_back(s.peer);
      for (std::size_t off = 0; off < s.bytes.size(); off += kMaxChunkBytes) {
        const std::size_t n = std::min(kMaxChunkBytes, s.bytes.size() - off);
        reqs.emplace_back();
        // MPI-3 takes a const buffer; the cast only satisfies older prototypes.
        GNN_CHECK_MPI(MPI_Isend(const_cast<std::byte*>(s.bytes.data() + off),
                                static_cast<int>(n), MPI_BYTE, s.peer, tag, comm_,
                                &reqs.back()));
      }
      sent += s.bytes.size();
    }
    bytes_sent_ += sent;
    return Request(std::make_unique<MpiOperation>(std::move(reqs), rank_, tag,
                                                  std::move(send_peers), std::move(recv_peers)));
  }

  void all_reduce_sum(const Device& dev, float* data, std::size_t n) override {
    if (n == 0) return;
    collective_bytes_ += n * sizeof(float);
    if (dev.is_host()) {
      reduce_in_place(data, n, MPI_FLOAT, MPI_SUM, "all-reduce (sum, float)");
      return;
    }
    // Open MPI is not CUDA-aware here: stage through the host.
    std::vector<float> host(n);
    dev.copy_to_host(host.data(), data, n * sizeof(float));
    reduce_in_place(host.data(), n, MPI_FLOAT, MPI_SUM, "all-reduce (sum, float)");
    dev.copy_from_host(data, host.data(), n * sizeof(float));
  }
  void all_reduce_sum(double* data, std::size_t n) override {
    collective_bytes_ += n * sizeof(double);
    reduce_in_place(data, n, MPI_DOUBLE, MPI_SUM, "all-reduce (sum, double)");
  }
  void all_reduce_max(double* data, std::size_t n) override {
    collective_bytes_ += n * sizeof(double);
    reduce_in_place(data, n, MPI_DOUBLE, MPI_MAX, "all-reduce (max, double)");
  }
  void all_reduce_sum(std::int64_t* data, std::size_t n) override {
    collective_bytes_ += n * sizeof(std::int64_t);
    reduce_in_place(data, n, MPI_INT64_T, MPI_SUM, "all-reduce (sum, int64)");
  }
  void barrier() override {
    BlockingScope blocked("barrier");
    GNN_CHECK_MPI(MPI_Barrier(comm_));
  }

  std::uint64_t bytes_sent() const override { return bytes_sent_; }
  std::uint64_t collective_bytes() const override { return collective_bytes_; }
  void reset_counters() override {
    bytes_sent_ = 0;
    collective_bytes_ = 0;
  }

 private:
  void check_peer(Rank peer) const {
    GNN_ASSERT(peer >= 0 && peer < size_, "mpi transport: peer ", peer, " outside [0, ", size_,
               ")");
  }
  /// Blocking, so watched (`what` names it in the watchdog's message).
  template <typename T>
  void reduce_in_place(T* data, std::size_t n, MPI_Datatype type, MPI_Op op, const char* what) {
    BlockingScope blocked(what, static_cast<long long>(n));
    for (std::size_t off = 0; off < n; off += kMaxChunkElems) {
      const std::size_t m = std::min(kMaxChunkElems, n - off);
      GNN_CHECK_MPI(
          MPI_Allreduce(MPI_IN_PLACE, data + off, static_cast<int>(m), type, op, comm_));
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  Rank rank_ = 0;
  Rank size_ = 1;
  int max_tag_ = 32767;
  std::uint64_t bytes_sent_ = 0;
  std::uint64_t collective_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm) {
  return std::make_unique<MpiTransport>(comm);
}

}  // namespace halognn
