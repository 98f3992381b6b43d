// Built only without the CUDA backend: there is no device memory, so staging is plain host memory.
#include "core/cuda/host_staging.hpp"

namespace halognn {

DevicePtr host_staging_device(const Device&) { return cpu_device(); }

}  // namespace halognn
