#pragma once
/// @file cuda_error.hpp
/// Error checks for the CUDA runtime, cuSPARSE, cuBLAS and NCCL: each macro evaluates the call
/// once and throws halognn::CudaError naming the call, the library's error text, file and line
/// when it does not return success. Built only with the CUDA backend.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>
#include <nccl.h>

#include "core/error.hpp"

namespace halognn::cuda_detail {

/// The name cuBLAS gives a status (cuBLAS has cublasGetStatusString since 11.4).
inline const char* cublas_status_text(cublasStatus_t s) { return cublasGetStatusString(s); }

[[noreturn]] inline void throw_cuda_error(const char* lib, const char* call, const char* text,
                                          const char* file, int line) {
  throw CudaError(detail::concat(file, ":", line, ": ", lib, " call ", call, " failed: ", text));
}

}  // namespace halognn::cuda_detail

/// Throws CudaError when a CUDA runtime call does not return cudaSuccess.
#define GNN_CHECK_CUDA(call)                                                                 \
  do {                                                                                       \
    const cudaError_t gnn_cuda_rc_ = (call);                                                 \
    if (gnn_cuda_rc_ != cudaSuccess)                                                         \
      ::halognn::cuda_detail::throw_cuda_error("CUDA", #call, cudaGetErrorString(gnn_cuda_rc_), \
                                               __FILE__, __LINE__);                          \
  } while (0)

/// Throws CudaError when a cuSPARSE call does not return CUSPARSE_STATUS_SUCCESS.
#define GNN_CHECK_CUSPARSE(call)                                                             \
  do {                                                                                       \
    const cusparseStatus_t gnn_cusparse_rc_ = (call);                                        \
    if (gnn_cusparse_rc_ != CUSPARSE_STATUS_SUCCESS)                                         \
      ::halognn::cuda_detail::throw_cuda_error("cuSPARSE", #call,                            \
                                               cusparseGetErrorString(gnn_cusparse_rc_),     \
                                               __FILE__, __LINE__);                          \
  } while (0)

/// Throws CudaError when a cuBLAS call does not return CUBLAS_STATUS_SUCCESS.
#define GNN_CHECK_CUBLAS(call)                                                               \
  do {                                                                                       \
    const cublasStatus_t gnn_cublas_rc_ = (call);                                            \
    if (gnn_cublas_rc_ != CUBLAS_STATUS_SUCCESS)                                             \
      ::halognn::cuda_detail::throw_cuda_error(                                              \
          "cuBLAS", #call, ::halognn::cuda_detail::cublas_status_text(gnn_cublas_rc_),       \
          __FILE__, __LINE__);                                                               \
  } while (0)

/// Throws CudaError when an NCCL call does not return ncclSuccess (with NCCL's last message,
/// which usually says which peer or resource failed).
#define GNN_CHECK_NCCL(call)                                                                 \
  do {                                                                                       \
    const ncclResult_t gnn_nccl_rc_ = (call);                                                \
    if (gnn_nccl_rc_ != ncclSuccess)                                                         \
      ::halognn::cuda_detail::throw_cuda_error(                                              \
          "NCCL", #call,                                                                     \
          ::halognn::detail::concat(ncclGetErrorString(gnn_nccl_rc_), " (",                  \
                                    ncclGetLastError(nullptr), ")")                          \
              .c_str(),                                                                      \
          __FILE__, __LINE__);                                                               \
  } while (0)

/// Checks the launch of the kernel just queued (configuration errors surface here; faults inside
/// the kernel surface at the next synchronising call).
#define GNN_CHECK_LAUNCH() GNN_CHECK_CUDA(cudaGetLastError())
