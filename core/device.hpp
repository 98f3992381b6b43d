#pragma once
/// @file device.hpp
/// The device seam. Every buffer is allocated through a Device, and every kernel takes the
/// Device it runs on (kernels/kernels.hpp dispatches on its kind). The CPU device is always
/// built; the CUDA device exists when the CUDA backend is compiled in, and asking for it in a
/// build without it throws NotCompiled (core/device_hooks), so calling code has no #ifdef.
#include <cstddef>
#include <memory>
#include <string>

namespace halognn {

enum class DeviceKind { cpu, cuda };

/// Where buffers live and kernels run.
class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const noexcept = 0;
  /// Human-readable name, e.g. "cpu (2 threads)" or "cuda:0 NVIDIA H100".
  virtual std::string name() const = 0;
  /// Zero-initialised allocation of `bytes` (may return nullptr for 0 bytes).
  virtual void* alloc(std::size_t bytes) const = 0;
  virtual void free(void* p) const noexcept = 0;
  /// Copies between host memory and this device's memory, and within this device.
  virtual void copy_from_host(void* dst, const void* src, std::size_t bytes) const = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) const = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) const = 0;
  virtual void memset_zero(void* dst, std::size_t bytes) const = 0;
  /// Waits for all work queued on this device.
  virtual void synchronize() const = 0;
  /// The most bytes this process has had allocated on the device at once (the allocator's
  /// high-water mark); 0 where the device does not track it (the CPU: see the peak RSS).
  virtual std::size_t peak_allocated_bytes() const { return 0; }
  bool is_host() const noexcept { return kind() == DeviceKind::cpu; }
};

using DevicePtr = std::shared_ptr<const Device>;

/// The process-wide CPU device (OpenMP threads).
DevicePtr cpu_device();

/// Number of CUDA devices visible (0 without the CUDA backend or without a GPU).
int cuda_device_count() noexcept;

/// The CUDA device with this ordinal. Throws NotCompiled without the CUDA backend.
DevicePtr cuda_device(int ordinal);

}  // namespace halognn
