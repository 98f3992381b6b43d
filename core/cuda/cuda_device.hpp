#pragma once
/// @file cuda_device.hpp
/// The CUDA implementation of the Device seam. cuda_device(ordinal) in core/device.hpp returns
/// one shared CudaDevice per GPU; code that needs the GPU's ordinal or stream (the NCCL
/// transport) casts to it. Built only with the CUDA backend.
#include <cuda_runtime_api.h>

#include <string>

#include "core/device.hpp"

namespace halognn {

/// One GPU. All operations are queued on the GPU's one stream (core/cuda/cuda_context.hpp):
/// alloc/free are stream-ordered (cudaMallocAsync with a caching pool), copies to and from the
/// host and synchronize() block the caller, device-to-device copies and memsets do not.
class CudaDevice final : public Device {
 public:
  /// Selects the GPU (cudaSetDevice) and creates its context. Throws CudaError.
  explicit CudaDevice(int ordinal);
  DeviceKind kind() const noexcept override { return DeviceKind::cuda; }
  /// "cuda:N <product name>"
  std::string name() const override { return name_; }
  void* alloc(std::size_t bytes) const override;
  void free(void* p) const noexcept override;
  void copy_from_host(void* dst, const void* src, std::size_t bytes) const override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) const override;
  void copy(void* dst, const void* src, std::size_t bytes) const override;
  void memset_zero(void* dst, std::size_t bytes) const override;
  void synchronize() const override;
  /// The default memory pool's high-water mark of bytes in use (every halognn allocation on
  /// this GPU, scratch included, comes from that pool; cuBLAS's small own workspace does not).
  std::size_t peak_allocated_bytes() const override;

  int ordinal() const noexcept { return ordinal_; }
  /// The stream every halognn operation on this GPU is queued on.
  cudaStream_t stream() const;
  /// Makes this GPU the calling thread's current device (cheap when it already is).
  void make_current() const;

 private:
  int ordinal_;
  std::string name_;
};

/// The CudaDevice behind `dev`, or nullptr when `dev` is not a CUDA device.
const CudaDevice* as_cuda_device(const Device& dev) noexcept;

}  // namespace halognn
