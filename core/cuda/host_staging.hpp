#pragma once
/// @file host_staging.hpp
/// Host memory for staging a device's data through the host (MPI is not CUDA-aware here). For a
/// CUDA device this is a host Device (kind cpu) whose allocations are page-locked
/// (cudaHostAlloc), so copies to and from the GPU run at full PCIe/NVLink-C2C speed and without
/// an extra bounce buffer; for any other device it is cpu_device(). Built in every configuration
/// (without CUDA it always returns cpu_device()).
#include "core/device.hpp"

namespace halognn {

/// The host device to stage data of `dev` through.
DevicePtr host_staging_device(const Device& dev);

}  // namespace halognn
