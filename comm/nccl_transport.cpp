// The NCCL transport (comm/transport.hpp): device-to-device exchanges and gradient all-reduces
// for ranks that each drive one GPU. Built only with the CUDA backend.
#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "comm/mpi_env.hpp"
#include "comm/transport.hpp"
#include "comm/watchdog.hpp"
#include "core/cuda/cuda_device.hpp"
#include "core/cuda/cuda_error.hpp"

namespace halognn {
namespace {

/// Completion of one grouped exchange: an event recorded on the NCCL stream after the group.
class NcclOperation final : public Request::Operation {
 public:
  NcclOperation(cudaEvent_t done, std::string what) : done_(done), what_(std::move(what)) {}
  ~NcclOperation() override { cudaEventDestroy(done_); }
  NcclOperation(const NcclOperation&) = delete;
  NcclOperation& operator=(const NcclOperation&) = delete;
  bool test() override {
    const cudaError_t rc = cudaEventQuery(done_);
    if (rc == cudaErrorNotReady) return false;
    GNN_CHECK_CUDA(rc);
    return true;
  }
  void wait() override { GNN_CHECK_CUDA(cudaEventSynchronize(done_)); }
  std::string describe() const override { return what_; }

 private:
  cudaEvent_t done_;
  std::string what_;
};

class NcclTransport final : public Transport {
 public:
  NcclTransport(MPI_Comm comm, DevicePtr dev) : dev_(std::move(dev)) {
    GNN_CHECK_CONFIG(dev_ != nullptr, "the NCCL transport needs a device");
    cuda_ = as_cuda_device(*dev_);
    GNN_CHECK_CONFIG(cuda_ != nullptr, "the NCCL transport needs a CUDA device, got ",
                     dev_->name(), " (use --transport mpi on the CPU)");
    GNN_CHECK_MPI(MPI_Comm_dup(comm, &comm_));
    GNN_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    GNN_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
    GNN_CHECK_MPI(MPI_Comm_size(comm_, &size_));
    // Host collectives (metrics, error agreement) are the MPI transport's business.
    host_ = make_mpi_transport(comm_);
    cuda_->make_current();
    // Every rank learns of a shared GPU (not only the two sharing it), so none is left waiting in
    // ncclCommInitRank.
    collective_try(comm_, [&] { check_one_rank_per_gpu(); });
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (rank_ == 0) GNN_CHECK_NCCL(ncclGetUniqueId(&id));
    GNN_CHECK_MPI(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, comm_));
    GNN_CHECK_NCCL(ncclCommInitRank(&nccl_, size_, id, rank_));
    // Its own stream, so communication overlaps the compute stream's kernels.
    GNN_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    GNN_CHECK_CUDA(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
  }
  ~NcclTransport() override {
    if (nccl_) ncclCommDestroy(nccl_);
    if (ready_) cudaEventDestroy(ready_);
    if (stream_) cudaStreamDestroy(stream_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  std::string_view name() const override { return "nccl"; }
  Rank rank() const override { return rank_; }
  Rank size() const override { return size_; }
  // NCCL has no tags (messages between a pair match in posting order); any non-negative tag is
  // accepted so that the halo exchange's tag layout works unchanged.
  int max_tag() const override { return INT_MAX; }
  bool accepts_device_memory(const Device& dev) const override {
    const CudaDevice* c = as_cuda_device(dev);
    return c != nullptr && c->ordinal() == cuda_->ordinal();
  }

  Request exchange(std::span<const PeerBytes> sends, std::span<const PeerBytesMut> recvs,
                   int tag) override {
    GNN_ASSERT(tag >= 0, "nccl transport: negative tag ", tag);
    cuda_->make_current();
    wait_for_compute();
    std::uint64_t sent = 0;
    GNN_CHECK_NCCL(ncclGroupStart());
    // Inside a group NCCL posts every operation before progressing any, so the order of sends
    // and receives does not matter; exceptions here would leave the group open, so peers are
    // validated before it.
    for (const PeerBytesMut& r : recvs) check_block(r.peer, r.bytes.data(), r.bytes.size());
    for (const PeerBytes& s : sends) check_block(s.peer, s.bytes.data(), s.bytes.size());
    for (const PeerBytesMut& r : recvs)
      if (!r.bytes.empty())
        GNN_CHECK_NCCL(ncclRecv(r.bytes.data(), r.bytes.size(), ncclUint8, r.peer, nccl_, stream_));
    for (const PeerBytes& s : sends) {
      if (s.bytes.empty()) continue;
      GNN_CHECK_NCCL(ncclSend(s.bytes.data(), s.bytes.size(), ncclUint8, s.peer, nccl_, stream_));
      sent += s.bytes.size();
    }
    GNN_CHECK_NCCL(ncclGroupEnd());
    bytes_sent_ += sent;
    cudaEvent_t done = nullptr;
    GNN_CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    GNN_CHECK_CUDA(cudaEventRecord(done, stream_));
    return Request(std::make_unique<NcclOperation>(
        done, "nccl exchange on rank " + std::to_string(rank_) + ", tag " + std::to_string(tag) +
                  ", " + std::to_string(sends.size()) + " sends, " +
                  std::to_string(recvs.size()) + " receives"));
  }

  /// NCCL matches messages by posting order only, so the byte receives cannot be posted later
  /// than the sends of a following exchange: the sizes cross first, over MPI, blocking.
  Request exchange_variable(std::span<const PeerBytes> sends, std::span<const Rank> recv_peers,
                            int tag, ReceiveRoom room) override {
    std::vector<std::uint64_t> out(sends.size()), in(recv_peers.size(), 0);
    std::vector<PeerBytes> size_sends;
    std::vector<PeerBytesMut> size_recvs;
    for (std::size_t k = 0; k < sends.size(); ++k) {
      out[k] = sends[k].bytes.size();
      size_sends.push_back({sends[k].peer, std::as_bytes(std::span(&out[k], 1))});
    }
    for (std::size_t k = 0; k < recv_peers.size(); ++k)
      size_recvs.push_back({recv_peers[k], std::as_writable_bytes(std::span(&in[k], 1))});
    host_->exchange(size_sends, size_recvs, tag).wait();
    bytes_sent_ += sends.size() * kVariableHeaderBytes;
    std::vector<PeerBytesMut> recvs;
    for (std::size_t k = 0; k < recv_peers.size(); ++k)
      if (in[k] > 0) recvs.push_back({recv_peers[k], room(k, static_cast<std::size_t>(in[k]))});
    return exchange(sends, recvs, tag);
  }

  void all_reduce_sum(const Device& dev, float* data, std::size_t n) override {
    if (n == 0) return;
    if (dev.is_host()) {
      host_->all_reduce_sum(dev, data, n);
      return;
    }
    collective_bytes_ += n * sizeof(float);
    GNN_ASSERT(accepts_device_memory(dev), "nccl transport: all-reduce of data on ", dev.name(),
               ", the transport drives ", cuda_->name());
    cuda_->make_current();
    wait_for_compute();
    GNN_CHECK_NCCL(ncclAllReduce(data, data, n, ncclFloat, ncclSum, nccl_, stream_));
    BlockingScope blocked("nccl all-reduce (sum, float)", static_cast<long long>(n));
    GNN_CHECK_CUDA(cudaStreamSynchronize(stream_));
  }
  void all_reduce_sum(double* data, std::size_t n) override { host_->all_reduce_sum(data, n); }
  void all_reduce_max(double* data, std::size_t n) override { host_->all_reduce_max(data, n); }
  void all_reduce_sum(std::int64_t* data, std::size_t n) override {
    host_->all_reduce_sum(data, n);
  }
  void barrier() override { host_->barrier(); }

  std::uint64_t bytes_sent() const override { return bytes_sent_; }
  std::uint64_t collective_bytes() const override {
    return collective_bytes_ + host_->collective_bytes();
  }
  void reset_counters() override {
    bytes_sent_ = 0;
    collective_bytes_ = 0;
    host_->reset_counters();
  }

 private:
  void check_peer(Rank peer) const {
    GNN_ASSERT(peer >= 0 && peer < size_, "nccl transport: peer ", peer, " outside [0, ", size_,
               ")");
  }
  /// A valid peer, and a block in this GPU's memory: a wrapper that stages device data through
  /// the host (one that does not forward accepts_device_memory) would otherwise hand NCCL host
  /// pointers, which fails deep inside NCCL or corrupts memory.
  void check_block(Rank peer, const void* p, std::size_t bytes) const {
    check_peer(peer);
    if (bytes == 0) return;
    cudaPointerAttributes attr{};
    GNN_CHECK_CUDA(cudaPointerGetAttributes(&attr, p));
    GNN_ASSERT(attr.type == cudaMemoryTypeDevice && attr.device == cuda_->ordinal(),
               "nccl transport: an exchange block is not in the memory of ", cuda_->name(),
               " (a transport wrapper must forward accepts_device_memory)");
  }
  /// Orders the NCCL stream after everything queued so far on the GPU's compute stream (the
  /// encoded send blocks, the gradients).
  void wait_for_compute() {
    GNN_CHECK_CUDA(cudaEventRecord(ready_, cuda_->stream()));
    GNN_CHECK_CUDA(cudaStreamWaitEvent(stream_, ready_, 0));
  }
  /// NCCL refuses two ranks of one communicator on one GPU with a generic error; say it plainly,
  /// on every rank, before ncclCommInitRank.
  void check_one_rank_per_gpu() {
    cudaDeviceProp prop{};
    GNN_CHECK_CUDA(cudaGetDeviceProperties(&prop, cuda_->ordinal()));
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    GNN_CHECK_MPI(MPI_Get_processor_name(host, &len));
    std::array<char, MPI_MAX_PROCESSOR_NAME + 16> mine{};
    std::memcpy(mine.data(), host, static_cast<std::size_t>(len));
    std::memcpy(mine.data() + MPI_MAX_PROCESSOR_NAME, prop.uuid.bytes, 16);
    std::vector<char> all(mine.size() * static_cast<std::size_t>(size_));
    GNN_CHECK_MPI(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                                static_cast<int>(mine.size()), MPI_BYTE, comm_));
    for (Rank r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      if (std::memcmp(all.data() + static_cast<std::size_t>(r) * mine.size(), mine.data(),
                      mine.size()) == 0)
        throw ConfigError("the NCCL transport needs one GPU per rank, but ranks " +
                          std::to_string(std::min(r, rank_)) + " and " +
                          std::to_string(std::max(r, rank_)) + " share " + cuda_->name() +
                          " on " + host + " (use --transport mpi, or fewer ranks per node)");
    }
  }
  DevicePtr dev_;
  const CudaDevice* cuda_ = nullptr;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::unique_ptr<Transport> host_;
  Rank rank_ = 0;
  Rank size_ = 1;
  ncclComm_t nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  std::uint64_t bytes_sent_ = 0;
  std::uint64_t collective_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Transport> make_nccl_transport(MPI_Comm comm, DevicePtr dev) {
  return std::make_unique<NcclTransport>(comm, std::move(dev));
}

}  // namespace halognn
