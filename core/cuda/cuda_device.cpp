// CudaDevice, the per-GPU contexts, the pinned host staging device and the CUDA entry points of
// core/device.hpp (cuda_device_count, cuda_device). Built only with the CUDA backend.
#include "core/cuda/cuda_device.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "core/cuda/cuda_context.hpp"
#include "core/cuda/host_staging.hpp"

namespace halognn {
namespace cuda_detail {

void* Scratch::get(std::size_t bytes, cudaStream_t stream) {
  if (bytes <= bytes_ && ptr_) return ptr_;
  release(stream);
  // Grow by half again, so a slowly growing request does not reallocate every call.
  const std::size_t want = bytes + bytes / 2 + 256;
  GNN_CHECK_CUDA(cudaMallocAsync(&ptr_, want, stream));
  bytes_ = want;
  return ptr_;
}

void Scratch::release(cudaStream_t stream) noexcept {
  if (ptr_) cudaFreeAsync(ptr_, stream);
  ptr_ = nullptr;
  bytes_ = 0;
}

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

// Contexts live until the process exits and are never destroyed: their destructors would run
// after the CUDA runtime has been torn down at exit, and the driver reclaims everything anyway.
std::vector<CudaContext*>& contexts() {
  static std::vector<CudaContext*> v;
  return v;
}

CudaContext* create_context(int ordinal) {
  GNN_CHECK_CUDA(cudaSetDevice(ordinal));
  auto ctx = std::make_unique<CudaContext>();
  ctx->ordinal = ordinal;
  // Non-blocking: the legacy default stream (used by libraries we do not control) never
  // serialises with our work.
  GNN_CHECK_CUDA(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
  GNN_CHECK_CUBLAS(cublasCreate(&ctx->cublas));
  GNN_CHECK_CUBLAS(cublasSetStream(ctx->cublas, ctx->stream));
  GNN_CHECK_CUSPARSE(cusparseCreate(&ctx->cusparse));
  GNN_CHECK_CUSPARSE(cusparseSetStream(ctx->cusparse, ctx->stream));
  // Keep freed blocks in the stream-ordered pool instead of returning them to the driver at
  // every synchronisation: training frees and reallocates the same sizes every epoch.
  cudaMemPool_t pool;
  GNN_CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool, ordinal));
  std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
  GNN_CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  return ctx.release();
}

}  // namespace

CudaContext& context(int ordinal) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto& v = contexts();
  if (static_cast<int>(v.size()) <= ordinal) v.resize(static_cast<std::size_t>(ordinal) + 1, nullptr);
  if (!v[static_cast<std::size_t>(ordinal)]) v[static_cast<std::size_t>(ordinal)] = create_context(ordinal);
  return *v[static_cast<std::size_t>(ordinal)];
}

CudaContext& current_context() {
  int ordinal = 0;
  GNN_CHECK_CUDA(cudaGetDevice(&ordinal));
  return context(ordinal);
}

}  // namespace cuda_detail

namespace {

/// Page-locked host memory for staging one GPU's data (kind cpu: host code reads it directly).
class PinnedHostDevice final : public Device {
 public:
  explicit PinnedHostDevice(int ordinal) : ordinal_(ordinal) {}
  DeviceKind kind() const noexcept override { return DeviceKind::cpu; }
  std::string name() const override {
    return "host (page-locked, for cuda:" + std::to_string(ordinal_) + ")";
  }
  void* alloc(std::size_t bytes) const override {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    // Portable: usable with any GPU context of the process.
    GNN_CHECK_CUDA(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    std::memset(p, 0, bytes);
    return p;
  }
  void free(void* p) const noexcept override {
    if (p) cudaFreeHost(p);
  }
  void copy_from_host(void* d, const void* s, std::size_t n) const override { copy(d, s, n); }
  void copy_to_host(void* d, const void* s, std::size_t n) const override { copy(d, s, n); }
  void copy(void* d, const void* s, std::size_t n) const override {
    if (n) std::memcpy(d, s, n);
  }
  void memset_zero(void* d, std::size_t n) const override {
    if (n) std::memset(d, 0, n);
  }
  void synchronize() const override {}

 private:
  int ordinal_;
};

std::string device_name(int ordinal) {
  cudaDeviceProp prop{};
  GNN_CHECK_CUDA(cudaGetDeviceProperties(&prop, ordinal));
  return "cuda:" + std::to_string(ordinal) + " " + prop.name;
}

}  // namespace

CudaDevice::CudaDevice(int ordinal) : ordinal_(ordinal), name_(device_name(ordinal)) {
  cuda_detail::context(ordinal);  // selects the GPU and creates the stream and handles
}

void CudaDevice::make_current() const {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == ordinal_) return;
  GNN_CHECK_CUDA(cudaSetDevice(ordinal_));
}

cudaStream_t CudaDevice::stream() const { return cuda_detail::context(ordinal_).stream; }

void* CudaDevice::alloc(std::size_t bytes) const {
  if (bytes == 0) return nullptr;
  make_current();
  const cudaStream_t s = stream();
  void* p = nullptr;
  GNN_CHECK_CUDA(cudaMallocAsync(&p, bytes, s));
  GNN_CHECK_CUDA(cudaMemsetAsync(p, 0, bytes, s));
  return p;
}

void CudaDevice::free(void* p) const noexcept {
  if (!p) return;
  // Stream-ordered: kernels queued earlier that still read the block finish first. Errors are
  // ignored (a destructor cannot report them; at exit the runtime may already be unloading).
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != ordinal_) cudaSetDevice(ordinal_);
  cudaFreeAsync(p, cuda_detail::context(ordinal_).stream);
}

std::size_t CudaDevice::peak_allocated_bytes() const {
  cudaMemPool_t pool;
  GNN_CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool, ordinal_));
  std::uint64_t high = 0;
  GNN_CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high));
  return static_cast<std::size_t>(high);
}

void CudaDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) const {
  if (bytes == 0) return;
  make_current();
  const cudaStream_t s = stream();
  GNN_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  // The caller may reuse or free `src` as soon as we return.
  GNN_CHECK_CUDA(cudaStreamSynchronize(s));
}

void CudaDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) const {
  if (bytes == 0) return;
  make_current();
  const cudaStream_t s = stream();
  GNN_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  GNN_CHECK_CUDA(cudaStreamSynchronize(s));
}

void CudaDevice::copy(void* dst, const void* src, std::size_t bytes) const {
  if (bytes == 0 || dst == src) return;
  make_current();
  GNN_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()));
}

void CudaDevice::memset_zero(void* dst, std::size_t bytes) const {
  if (bytes == 0) return;
  make_current();
  GNN_CHECK_CUDA(cudaMemsetAsync(dst, 0, bytes, stream()));
}

void CudaDevice::synchronize() const {
  make_current();
  GNN_CHECK_CUDA(cudaStreamSynchronize(stream()));
}

const CudaDevice* as_cuda_device(const Device& dev) noexcept {
  return dynamic_cast<const CudaDevice*>(&dev);
}

int cuda_device_count() noexcept {
  int n = 0;
  // Without a driver (or without a GPU) the runtime reports an error; that means no device.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls do not see it
    return 0;
  }
  return n;
}

DevicePtr cuda_device(int ordinal) {
  const int n = cuda_device_count();
  GNN_CHECK_CONFIG(ordinal >= 0 && ordinal < n, "CUDA device ", ordinal, " requested but ", n,
                   " CUDA device(s) are visible");
  static std::mutex mutex;
  static std::vector<std::shared_ptr<const CudaDevice>> devices;
  std::lock_guard<std::mutex> lock(mutex);
  if (devices.size() < static_cast<std::size_t>(n)) devices.resize(static_cast<std::size_t>(n));
  auto& d = devices[static_cast<std::size_t>(ordinal)];
  if (!d) d = std::make_shared<const CudaDevice>(ordinal);
  // Asking for a GPU selects it: the kernels run on the calling thread's current device.
  d->make_current();
  return d;
}

DevicePtr host_staging_device(const Device& dev) {
  const CudaDevice* cuda = as_cuda_device(dev);
  if (!cuda) return cpu_device();
  static std::mutex mutex;
  static std::vector<DevicePtr> pinned;
  std::lock_guard<std::mutex> lock(mutex);
  const auto k = static_cast<std::size_t>(cuda->ordinal());
  if (pinned.size() <= k) pinned.resize(k + 1);
  if (!pinned[k]) pinned[k] = std::make_shared<PinnedHostDevice>(cuda->ordinal());
  return pinned[k];
}

}  // namespace halognn
