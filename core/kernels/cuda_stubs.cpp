// Built only without the CUDA backend: every CUDA kernel exists and says it is not compiled in.
// (No CUDA device can be created in such a build, so these are reached only by a caller that
// builds a Device of kind cuda by hand.)
#include "core/error.hpp"
#include "core/kernels/cuda/cuda_kernels.hpp"

namespace halognn::kernels::cuda {

// The parameters are unnamed in spirit: every stub only throws.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define GNN_KERNEL(R, name, params, args) \
  R name params { throw NotCompiled("kernel " #name " on CUDA"); }
#include "core/kernels/kernel_list.inc"
#undef GNN_KERNEL
#pragma GCC diagnostic pop

}  // namespace halognn::kernels::cuda
