#pragma once
/// @file cuda_kernels.hpp
/// The CUDA implementations of every kernel in kernels.hpp, with the same signatures minus the
/// Device; all pointers are device pointers of the current CUDA device. kernels.cpp dispatches here
/// when the device kind is cuda. Without the CUDA backend, cuda_stubs.cpp defines each of them to
/// throw NotCompiled. This header is Eigen-free so that .cu files can include it.
#include <cstdint>

#include "core/kernels/kernels.hpp"

namespace halognn::kernels::cuda {

/// Scratch bytes of one block of sparsified rows that compact_matmul and compact_matmul_transpose
/// expand into a dense matrix before multiplying it with cuBLAS (core/kernels/cuda/compact.cu).
inline constexpr std::int64_t kCompactExpandBytes = std::int64_t{64} << 20;

#define GNN_KERNEL(R, name, params, args) R name params;
#include "core/kernels/kernel_list.inc"
#undef GNN_KERNEL

}  // namespace halognn::kernels::cuda
