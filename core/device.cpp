#include "core/device.hpp"

#include <cstring>

#include <omp.h>

#include "core/host_alloc.hpp"

namespace halognn {
namespace {

class CpuDevice final : public Device {
 public:
  DeviceKind kind() const noexcept override { return DeviceKind::cpu; }
  std::string name() const override {
    return "cpu (" + std::to_string(omp_get_max_threads()) + " OpenMP threads)";
  }
  void* alloc(std::size_t bytes) const override {
    if (bytes == 0) return nullptr;
    return host_alloc(bytes, /*zeroed=*/true);
  }
  void free(void* p) const noexcept override { host_free(p); }
  void copy_from_host(void* d, const void* s, std::size_t n) const override { copy(d, s, n); }
  void copy_to_host(void* d, const void* s, std::size_t n) const override { copy(d, s, n); }
  void copy(void* d, const void* s, std::size_t n) const override {
    if (n) std::memcpy(d, s, n);
  }
  void memset_zero(void* d, std::size_t n) const override {
    if (n) std::memset(d, 0, n);
  }
  void synchronize() const override {}
};

}  // namespace

DevicePtr cpu_device() {
  static const DevicePtr dev = std::make_shared<CpuDevice>();
  return dev;
}

}  // namespace halognn
