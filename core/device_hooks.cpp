// Built only without the CUDA backend: the CUDA entry points exist and say so.
#include "core/device.hpp"
#include "core/error.hpp"

namespace halognn {

int cuda_device_count() noexcept { return 0; }

DevicePtr cuda_device(int) { throw NotCompiled("the CUDA device"); }

}  // namespace halognn
