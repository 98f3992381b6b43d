#pragma once
// Launch and reduction helpers shared by the CUDA kernels (internal; compiled with
// --extended-lambda so element functions can be __device__ lambdas).
#include <cstdint>

#include "core/cuda/cuda_context.hpp"
#include "core/kernels/cuda/cuda_kernels.hpp"

namespace halognn::kernels::cuda::detail {

using cuda_detail::CudaContext;
using cuda_detail::current_context;

constexpr int kBlock = 256;
/// Upper bound on blocks of grid-stride loops: enough to fill an H100/H200 many times over.
constexpr std::int64_t kMaxBlocks = 65535;

inline unsigned blocks_for(std::int64_t n, int block = kBlock) {
  const std::int64_t b = (n + block - 1) / block;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

template <typename F>
__global__ void for_each_kernel(std::int64_t n, F f) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    f(i);
}

/// Runs f(i) for i in [0, n) on the current device's stream (asynchronous).
template <typename F>
void for_each(CudaContext& ctx, std::int64_t n, F f) {
  if (n <= 0) return;
  for_each_kernel<<<blocks_for(n), kBlock, 0, ctx.stream>>>(n, f);
  GNN_CHECK_LAUNCH();
}

/// Tree reduction of one value per thread within a block (T: zero-initialised by T{}, has +).
template <typename T>
__device__ T block_sum(T v) {
  __shared__ T shared[kBlock];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) shared[threadIdx.x] = shared[threadIdx.x] + shared[threadIdx.x + s];
    __syncthreads();
  }
  return shared[0];
}

template <typename T, typename F>
__global__ void sum_partials_kernel(std::int64_t n, F f, T* partial) {
  T acc{};
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    acc = acc + f(i);
  const T total = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

template <typename T>
__global__ void sum_final_kernel(const T* partial, unsigned n, T* out) {
  T acc{};
  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) acc = acc + partial[i];
  const T total = block_sum(acc);
  if (threadIdx.x == 0) *out = total;
}

/// Sum over i in [0, n) of f(i), returned to the host (synchronises). f is called exactly once
/// per i, so it may also write outputs. Deterministic: the grid depends only on n and the
/// partial sums are combined in a fixed tree order.
template <typename T, typename F>
T sum_over(CudaContext& ctx, std::int64_t n, F f) {
  if (n <= 0) return T{};
  const unsigned blocks = blocks_for(n) > 1024 ? 1024 : blocks_for(n);
  auto* partial = static_cast<T*>(ctx.reduce.get((blocks + 1) * sizeof(T), ctx.stream));
  sum_partials_kernel<T><<<blocks, kBlock, 0, ctx.stream>>>(n, f, partial);
  GNN_CHECK_LAUNCH();
  sum_final_kernel<T><<<1, kBlock, 0, ctx.stream>>>(partial, blocks, partial + blocks);
  GNN_CHECK_LAUNCH();
  T host{};
  GNN_CHECK_CUDA(cudaMemcpyAsync(&host, partial + blocks, sizeof(T), cudaMemcpyDeviceToHost, ctx.stream));
  GNN_CHECK_CUDA(cudaStreamSynchronize(ctx.stream));
  return host;
}

constexpr int kColLanes = 32;  // columns per block of a column reduction
constexpr int kRowLanes = 8;   // row lanes per block
constexpr int kMaxRowChunks = 128;

template <typename F>
__global__ void column_partials_kernel(std::int64_t rows, std::int64_t cols, int chunks, F f,
                                       double* partial) {
  __shared__ double shared[kRowLanes][kColLanes];
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kColLanes + threadIdx.x;
  double acc = 0.0;
  if (j < cols) {
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.y) * kRowLanes + threadIdx.y; i < rows;
         i += static_cast<std::int64_t>(chunks) * kRowLanes)
      acc += f(i, j);
  }
  shared[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && j < cols) {
    double s = 0.0;
    for (int r = 0; r < kRowLanes; ++r) s += shared[r][threadIdx.x];
    partial[static_cast<std::int64_t>(blockIdx.y) * cols + j] = s;
  }
}

template <typename G>
__global__ void column_final_kernel(std::int64_t cols, int chunks, const double* partial, G g) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  double s = 0.0;
  for (int c = 0; c < chunks; ++c) s += partial[static_cast<std::int64_t>(c) * cols + j];
  g(j, s);
}

/// For every column j < cols: s_j = sum over rows i of f(i, j) in double, then g(j, s_j).
/// Asynchronous and deterministic (fixed chunking for given rows).
template <typename F, typename G>
void column_reduce(CudaContext& ctx, std::int64_t rows, std::int64_t cols, F f, G g) {
  if (cols <= 0) return;
  std::int64_t want = (rows + 63) / 64;
  const int chunks = static_cast<int>(want < 1 ? 1 : (want > kMaxRowChunks ? kMaxRowChunks : want));
  auto* partial = static_cast<double*>(
      ctx.reduce.get(static_cast<std::size_t>(chunks) * static_cast<std::size_t>(cols) * sizeof(double),
                     ctx.stream));
  const dim3 grid(static_cast<unsigned>((cols + kColLanes - 1) / kColLanes), static_cast<unsigned>(chunks));
  column_partials_kernel<<<grid, dim3(kColLanes, kRowLanes), 0, ctx.stream>>>(rows, cols, chunks, f, partial);
  GNN_CHECK_LAUNCH();
  column_final_kernel<<<blocks_for(cols), kBlock, 0, ctx.stream>>>(cols, chunks, partial, g);
  GNN_CHECK_LAUNCH();
}

/// Sum over the 32 lanes of a warp (every lane gets the result).
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  return v;
}

}  // namespace halognn::kernels::cuda::detail
