#pragma once
/// @file cuda_context.hpp
/// Per-GPU state shared by CudaDevice and the CUDA kernels: the one stream all of halognn's work
/// on that GPU is queued on (so kernels, copies and stream-ordered allocations are ordered with
/// each other without synchronising), the cuBLAS and cuSPARSE handles bound to it, and grow-only
/// scratch buffers. One rank drives one GPU from one thread, so a context is not thread-safe.
/// Eigen-free: .cu files include it. Built only with the CUDA backend.
#include <cstddef>
#include <cstdint>

#include "core/cuda/cuda_error.hpp"

namespace halognn::cuda_detail {

/// A device buffer that only grows; reallocation is stream-ordered, so earlier kernels that still
/// read the old block finish first.
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  /// At least `bytes` bytes, valid for work queued on `stream` after this call.
  void* get(std::size_t bytes, cudaStream_t stream);
  /// Frees the block (stream-ordered); used at context teardown.
  void release(cudaStream_t stream) noexcept;

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

struct CudaContext {
  int ordinal = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cusparseHandle_t cusparse = nullptr;
  Scratch work;      ///< library workspaces (cuSPARSE SpMM, CSR transposition, CUB sorts)
  Scratch reduce;    ///< partial sums of reductions
  Scratch ones;      ///< float 1.0s for CSR matrices without values
  std::size_t ones_count = 0;
  Scratch aux;       ///< second temporary of multi-step kernels (transposed CSR, sort keys)
  Scratch readback;  ///< small host-visible results are copied from here
};

/// The context of GPU `ordinal`, created on first use (stream, handles). Throws CudaError when the
/// GPU cannot be used.
CudaContext& context(int ordinal);

/// The context of the calling thread's current CUDA device (cudaGetDevice).
CudaContext& current_context();

/// A device array of at least `n` float ones on the context's stream (for CSR without values).
const float* ones(CudaContext& ctx, std::int64_t n);

}  // namespace halognn::cuda_detail
