// The GPU paths of the fp16/bf16 and b-bit codecs, byte-identical to the CPU codecs: every float
// operation is the shared GNN_HD code (quant_math.hpp, float16.hpp; _rn intrinsics on the
// device, compiled with --fmad=false) and every random draw the same CounterRng word.
#include <cstdint>

#include "compress/codec_cuda.hpp"
#include "core/cuda/cuda_context.hpp"

namespace halognn::codec_cuda {
namespace {

using quant::MetaFormat;
using quant::RowGrid;

constexpr int kBlock = 256;

unsigned blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

__device__ __forceinline__ void store_u32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
  p[2] = static_cast<std::uint8_t>(v >> 16);
  p[3] = static_cast<std::uint8_t>(v >> 24);
}
__device__ __forceinline__ void store_u16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
}
__device__ __forceinline__ std::uint32_t load_u32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
__device__ __forceinline__ std::uint16_t load_u16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}

/// Row i's grid as stored in the metadata (the values decode uses).
__device__ RowGrid read_grid(const std::uint8_t* meta, std::int64_t i, MetaFormat m) {
  RowGrid g;
  if (m == MetaFormat::f32) {
    g.lo = f16::bits_float(load_u32(meta + i * 8));
    g.scale = f16::bits_float(load_u32(meta + i * 8 + 4));
    return g;
  }
  g.lo = quant::meta16_value(load_u16(meta + i * 4), m);
  g.scale = quant::meta16_value(load_u16(meta + i * 4 + 2), m);
  return g;
}

/// Pass 1, one warp per row: range, finiteness, grid, metadata. A failing row sets *bad.
__global__ void grid_kernel(const float* rows, std::int64_t n_rows, std::int64_t cols,
                            std::uint32_t levels, MetaFormat m, std::uint8_t* meta, int* bad) {
  const std::int64_t row = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (row >= n_rows) return;
  const float* src = rows + row * cols;
  float lo = 0.0f, hi = 0.0f;  // an empty row gets the constant grid (0, 0)
  bool finite = true;
  if (cols > 0) {
    lo = hi = src[0];
    for (std::int64_t j = lane; j < cols; j += 32) {
      finite = finite && f16::is_finite(src[j]);
      lo = fminf(lo, src[j]);
      hi = fmaxf(hi, src[j]);
    }
    for (int o = 16; o > 0; o >>= 1) {
      lo = fminf(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, o));
      hi = fmaxf(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, o));
    }
    finite = __all_sync(0xFFFFFFFFu, finite);
  }
  if (lane != 0) return;
  if (!finite) {
    atomicOr(bad, 1);
    return;
  }
  RowGrid g;
  std::uint16_t lo_bits, scale_bits;
  if (quant::make_grid(lo, hi, levels, m, g, lo_bits, scale_bits) != quant::GridStatus::ok) {
    atomicOr(bad, 1);
    return;
  }
  if (m == MetaFormat::f32) {
    store_u32(meta + row * 8, f16::float_bits(g.lo));
    store_u32(meta + row * 8 + 4, f16::float_bits(g.scale));
  } else {
    store_u16(meta + row * 4, lo_bits);
    store_u16(meta + row * 4 + 2, scale_bits);
  }
}

/// Pass 2, one thread per payload byte: the 8/b elements it holds, LSB first, padding zero. The
/// thread divides once for its first element's row and column and steps from there (a 64-bit
/// division per element cost more than the quantisation itself).
template <int kBits>
__global__ void pack_kernel(const float* rows, std::int64_t n, std::int64_t cols,
                            const GlobalId* ids, CounterRng rng, MetaFormat m,
                            const std::uint8_t* meta, std::uint8_t* payload,
                            std::int64_t payload_bytes) {
  constexpr std::uint32_t levels = (1u << kBits) - 1u;
  constexpr int per_byte = 8 / kBits;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       p < payload_bytes; p += stride) {
    const std::int64_t k0 = p * per_byte;
    std::int64_t r = k0 / cols, j = k0 - r * cols;
    RowGrid g = read_grid(meta, r, m);
    float inv = quant::grid_inverse(g);  // once a row, as the CPU encoder
    std::int64_t cached_block = -1;
    std::uint32_t w[4];
    std::uint32_t acc = 0;
#pragma unroll
    for (int t = 0; t < per_byte; ++t) {
      if (k0 + t >= n) break;
      if (j == cols) {
        ++r;
        j = 0;
        g = read_grid(meta, r, m);
        inv = quant::grid_inverse(g);
        cached_block = -1;
      }
      std::uint32_t q = 0;
      if (g.scale != 0.0f) {
        if ((j >> 3) != cached_block) {  // a block serves 8 columns, 16 bits each
          rng.block(static_cast<std::uint64_t>(ids[r]), static_cast<std::uint64_t>(j) >> 3, w);
          cached_block = j >> 3;
        }
        const std::uint32_t bits16 = quant::word_half(w[(j >> 1) & 3], static_cast<std::uint64_t>(j));
        const float x = quant::grid_position(rows[k0 + t], g, inv);
        q = kBits == 1 ? quant::quantize_at_1(x, bits16) : quant::quantize_at(x, static_cast<float>(levels), bits16);
      }
      acc |= q << (t * kBits);
      ++j;
    }
    payload[p] = static_cast<std::uint8_t>(acc);
  }
}

template <int kBits>
__global__ void unpack_kernel(const std::uint8_t* payload, const std::uint8_t* meta, MetaFormat m,
                              std::int64_t n, std::int64_t cols, float* rows) {
  constexpr std::uint32_t mask = (1u << kBits) - 1u;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += stride) {
    const std::int64_t bit = k * kBits;
    const std::uint32_t q = (static_cast<std::uint32_t>(payload[bit >> 3]) >> (bit & 7)) & mask;
    rows[k] = quant::decode_value(q, read_grid(meta, k / cols, m));
  }
}

__global__ void half_encode_kernel(const float* x, std::int64_t n, bool bf16, std::uint8_t* out,
                                   int* bad) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += stride) {
    const float v = x[k];
    if (!f16::is_finite(v)) atomicOr(bad, 1);
    store_u16(out + 2 * k, bf16 ? f16::float_to_bf16(v) : f16::float_to_half(v));
  }
}

__global__ void half_decode_kernel(const std::uint8_t* in, std::int64_t n, bool bf16, float* y) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += stride) {
    const std::uint16_t h = load_u16(in + 2 * k);
    y[k] = bf16 ? f16::bf16_to_float(h) : f16::half_to_float(h);
  }
}

/// A zeroed device flag on the stream, and reading it back (synchronises).
int* flag(cuda_detail::CudaContext& ctx) {
  auto* f = static_cast<int*>(ctx.readback.get(sizeof(int), ctx.stream));
  GNN_CHECK_CUDA(cudaMemsetAsync(f, 0, sizeof(int), ctx.stream));
  return f;
}
bool flag_clear(cuda_detail::CudaContext& ctx, const int* f) {
  int host = 0;
  GNN_CHECK_CUDA(cudaMemcpyAsync(&host, f, sizeof host, cudaMemcpyDeviceToHost, ctx.stream));
  GNN_CHECK_CUDA(cudaStreamSynchronize(ctx.stream));
  return host == 0;
}

}  // namespace

bool quant_encode(int bits, MetaFormat meta, ConstDenseView rows, const CodecContext& ctx,
                  std::span<std::byte> out) {
  const std::int64_t n_rows = rows.rows, cols = rows.cols, n = n_rows * cols;
  if (n_rows == 0) return true;
  cuda_detail::CudaContext& cc = cuda_detail::current_context();
  const std::uint32_t levels = (1u << bits) - 1u;
  const auto meta_bytes = static_cast<std::int64_t>(n_rows) * 2 * quant::meta_value_bytes(meta);
  auto* meta_ptr = reinterpret_cast<std::uint8_t*>(out.data());
  auto* payload = meta_ptr + meta_bytes;
  const std::int64_t payload_bytes = static_cast<std::int64_t>(out.size()) - meta_bytes;
  int* bad = flag(cc);
  grid_kernel<<<static_cast<unsigned>((n_rows * 32 + kBlock - 1) / kBlock), kBlock, 0, cc.stream>>>(
      rows.data, n_rows, cols, levels, meta, meta_ptr, bad);
  GNN_CHECK_LAUNCH();
  if (payload_bytes > 0) {
    const CounterRng rng(quant::quantize_key(ctx.seed, ctx.epoch, ctx.layer,
                                             static_cast<std::uint32_t>(ctx.direction)));
    const unsigned grid = blocks_for(payload_bytes);
    switch (bits) {
      case 8: pack_kernel<8><<<grid, kBlock, 0, cc.stream>>>(rows.data, n, cols, ctx.row_ids, rng, meta, meta_ptr, payload, payload_bytes); break;
      case 4: pack_kernel<4><<<grid, kBlock, 0, cc.stream>>>(rows.data, n, cols, ctx.row_ids, rng, meta, meta_ptr, payload, payload_bytes); break;
      case 2: pack_kernel<2><<<grid, kBlock, 0, cc.stream>>>(rows.data, n, cols, ctx.row_ids, rng, meta, meta_ptr, payload, payload_bytes); break;
      default: pack_kernel<1><<<grid, kBlock, 0, cc.stream>>>(rows.data, n, cols, ctx.row_ids, rng, meta, meta_ptr, payload, payload_bytes); break;
    }
    GNN_CHECK_LAUNCH();
  }
  return flag_clear(cc, bad);
}

void quant_decode(int bits, MetaFormat meta, std::span<const std::byte> in, DenseView rows) {
  const std::int64_t n = rows.rows * rows.cols;
  if (n == 0) return;
  cuda_detail::CudaContext& cc = cuda_detail::current_context();
  const auto* meta_ptr = reinterpret_cast<const std::uint8_t*>(in.data());
  const auto* payload = meta_ptr + rows.rows * 2 * quant::meta_value_bytes(meta);
  const unsigned grid = blocks_for(n);
  switch (bits) {
    case 8: unpack_kernel<8><<<grid, kBlock, 0, cc.stream>>>(payload, meta_ptr, meta, n, rows.cols, rows.data); break;
    case 4: unpack_kernel<4><<<grid, kBlock, 0, cc.stream>>>(payload, meta_ptr, meta, n, rows.cols, rows.data); break;
    case 2: unpack_kernel<2><<<grid, kBlock, 0, cc.stream>>>(payload, meta_ptr, meta, n, rows.cols, rows.data); break;
    default: unpack_kernel<1><<<grid, kBlock, 0, cc.stream>>>(payload, meta_ptr, meta, n, rows.cols, rows.data); break;
  }
  GNN_CHECK_LAUNCH();
}

bool half_encode(bool bf16, ConstDenseView rows, std::span<std::byte> out) {
  const std::int64_t n = rows.rows * rows.cols;
  if (n == 0) return true;
  cuda_detail::CudaContext& cc = cuda_detail::current_context();
  int* bad = flag(cc);
  half_encode_kernel<<<blocks_for(n), kBlock, 0, cc.stream>>>(
      rows.data, n, bf16, reinterpret_cast<std::uint8_t*>(out.data()), bad);
  GNN_CHECK_LAUNCH();
  return flag_clear(cc, bad);
}

void half_decode(bool bf16, std::span<const std::byte> in, DenseView rows) {
  const std::int64_t n = rows.rows * rows.cols;
  if (n == 0) return;
  cuda_detail::CudaContext& cc = cuda_detail::current_context();
  half_decode_kernel<<<blocks_for(n), kBlock, 0, cc.stream>>>(
      reinterpret_cast<const std::uint8_t*>(in.data()), n, bf16, rows.data);
  GNN_CHECK_LAUNCH();
}

}  // namespace halognn::codec_cuda
