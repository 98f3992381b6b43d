// Graph-attention kernels on the current device's stream. The edge softmax and aggregation use
// one warp per (destination row, head): lanes split the row's entries for the max and the sum,
// and the feature columns for the weighted sum. The backward's column sums run over the
// transposed structure, one warp per (source row, head), so no two warps write one output.
#include <cmath>

#include "core/kernels/cuda/common.cuh"

namespace halognn::kernels::cuda {
namespace {

using detail::CudaContext;

std::int64_t head_width(std::int64_t cols, std::int32_t heads) {
  GNN_ASSERT(heads > 0 && cols % heads == 0, "width ", cols, " is not a multiple of ", heads,
             " heads");
  return cols / heads;
}

__device__ __forceinline__ float leaky(float x, float slope) { return x > 0.0f ? x : slope * x; }

constexpr int kWarpsPerBlock = 8;

unsigned warp_blocks(std::int64_t warps) {
  return static_cast<unsigned>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

__global__ void gat_aggregate_kernel(CsrView a, ConstDenseView z, const float* s_dst,
                                     const float* s_src, std::int32_t heads, std::int64_t f,
                                     float slope, float* alpha, const float* drop,
                                     DenseView y) {
  const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= a.rows * heads) return;
  const std::int64_t v = warp / heads;
  const std::int32_t h = static_cast<std::int32_t>(warp % heads);
  float* oh = y.data + v * z.cols + h * f;
  const std::int32_t begin = a.row_ptr[v], end = a.row_ptr[v + 1];
  if (begin == end) {
    for (std::int64_t j = lane; j < f; j += 32) oh[j] = 0.0f;
    return;
  }
  const float sd = s_dst[v * heads + h];
  // Max-shifted softmax: exp never overflows and the largest term is exactly 1.
  float m = -INFINITY;
  for (std::int32_t k = begin + lane; k < end; k += 32)
    m = fmaxf(m, leaky(sd + s_src[static_cast<std::int64_t>(a.col[k]) * heads + h], slope));
  m = detail::warp_max(m);
  float sum = 0.0f;
  for (std::int32_t k = begin + lane; k < end; k += 32) {
    const float e = leaky(sd + s_src[static_cast<std::int64_t>(a.col[k]) * heads + h], slope);
    const float w = expf(e - m) * (a.val ? a.val[k] : 1.0f);
    alpha[static_cast<std::int64_t>(k) * heads + h] = w;
    sum += w;
  }
  sum = detail::warp_sum(sum);
  const float inv = 1.0f / sum;
  for (std::int32_t k = begin + lane; k < end; k += 32) alpha[static_cast<std::int64_t>(k) * heads + h] *= inv;
  __syncwarp();
  // alpha keeps the softmax (the backward needs it); the sum uses the dropped weights.
  for (std::int64_t j = lane; j < f; j += 32) {
    float acc = 0.0f;
    for (std::int32_t k = begin; k < end; ++k) {
      const std::int64_t e = static_cast<std::int64_t>(k) * heads + h;
      acc += alpha[e] * (drop ? drop[e] : 1.0f) *
             z.data[static_cast<std::int64_t>(a.col[k]) * z.cols + h * f + j];
    }
    oh[j] = acc;
  }
}

__global__ void gat_backward_rows_kernel(CsrView a, ConstDenseView z, const float* s_dst,
                                         const float* s_src, std::int32_t heads, std::int64_t f,
                                         float slope, const float* alpha, const float* drop,
                                         ConstDenseView gy, float* edge_grad, float* gs_dst) {
  const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= a.rows * heads) return;
  const std::int64_t v = warp / heads;
  const std::int32_t h = static_cast<std::int32_t>(warp % heads);
  const std::int32_t begin = a.row_ptr[v], end = a.row_ptr[v + 1];
  const float* g = gy.data + v * gy.cols + h * f;
  // dL/dalpha = d_vu (gy_v . z_u) per entry (lanes split the features; d: the dropout
  // multiplier, 1 without dropout), and its alpha-weighted sum.
  float weighted = 0.0f;
  for (std::int32_t k = begin; k < end; ++k) {
    const float* zh = z.data + static_cast<std::int64_t>(a.col[k]) * z.cols + h * f;
    float d = 0.0f;
    for (std::int64_t j = lane; j < f; j += 32) d += g[j] * zh[j];
    d = detail::warp_sum(d);
    if (drop) d *= drop[static_cast<std::int64_t>(k) * heads + h];
    if (lane == 0) edge_grad[static_cast<std::int64_t>(k) * heads + h] = d;
    weighted += alpha[static_cast<std::int64_t>(k) * heads + h] * d;
  }
  __syncwarp();
  // Through the softmax (a multiplicity only shifts e, so it drops out) and the LeakyReLU.
  float row_sum = 0.0f;
  for (std::int32_t k = begin + lane; k < end; k += 32) {
    const std::int64_t e = static_cast<std::int64_t>(k) * heads + h;
    const float de = alpha[e] * (edge_grad[e] - weighted);
    const float pre = s_dst[v * heads + h] + s_src[static_cast<std::int64_t>(a.col[k]) * heads + h];
    const float dpre = pre > 0.0f ? de : slope * de;
    edge_grad[e] = dpre;
    row_sum += dpre;
  }
  row_sum = detail::warp_sum(row_sum);
  if (lane == 0) gs_dst[v * heads + h] = row_sum;
}

__global__ void gat_backward_cols_kernel(CsrView a_t, const std::int32_t* t_to_a,
                                         std::int32_t heads, std::int64_t f, const float* alpha,
                                         const float* drop, ConstDenseView gy, const float* edge_grad,
                                         float* gs_src, DenseView gz) {
  const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= a_t.rows * heads) return;
  const std::int64_t u = warp / heads;
  const std::int32_t h = static_cast<std::int32_t>(warp % heads);
  const std::int32_t begin = a_t.row_ptr[u], end = a_t.row_ptr[u + 1];
  float* oh = gz.data + u * gz.cols + h * f;
  for (std::int64_t j = lane; j < f; j += 32) {
    float acc = 0.0f;
    for (std::int32_t k = begin; k < end; ++k) {
      const std::int64_t e = t_to_a[k];
      acc += alpha[e * heads + h] * (drop ? drop[e * heads + h] : 1.0f) * gy.data[static_cast<std::int64_t>(a_t.col[k]) * gy.cols + h * f + j];
    }
    oh[j] = acc;
  }
  float src_sum = 0.0f;
  for (std::int32_t k = begin + lane; k < end; k += 32)
    src_sum += edge_grad[static_cast<std::int64_t>(t_to_a[k]) * heads + h];
  src_sum = detail::warp_sum(src_sum);
  if (lane == 0) gs_src[u * heads + h] = src_sum;
}

void head_dot_one(ConstDenseView z, const float* a, std::int32_t heads, float* s) {
  const std::int64_t f = head_width(z.cols, heads), cols = z.cols;
  const float* zs = z.data;
  detail::for_each(detail::current_context(), z.rows * heads, [=] __device__(std::int64_t e) {
    const std::int64_t v = e / heads, h = e % heads;
    float acc = 0.0f;
    for (std::int64_t j = 0; j < f; ++j) acc += a[h * f + j] * zs[v * cols + h * f + j];
    s[e] = acc;
  });
}

void head_dot_backward_one(ConstDenseView z, const float* a, std::int32_t heads, const float* gs,
                           DenseView gz, float* ga) {
  GNN_ASSERT(gz.rows == z.rows && gz.cols == z.cols, "head_scores_backward: shapes differ");
  const std::int64_t f = head_width(z.cols, heads), width = z.cols;
  if (width == 0) return;
  CudaContext& ctx = detail::current_context();
  const float* zs = z.data;
  float* gzs = gz.data;
  detail::for_each(ctx, z.rows * width, [=] __device__(std::int64_t e) {
    const std::int64_t v = e / width, c = e % width;
    gzs[e] += gs[v * heads + c / f] * a[c];
  });
  detail::column_reduce(
      ctx, z.rows, width,
      [=] __device__(std::int64_t v, std::int64_t c) {
        return static_cast<double>(gs[v * heads + c / f] * zs[v * width + c]);
      },
      [=] __device__(std::int64_t c, double sum) { ga[c] += static_cast<float>(sum); });
}

}  // namespace

void head_scores(ConstDenseView z, std::int64_t n_dst, const float* a_dst, const float* a_src,
                 std::int32_t heads, float* s_dst, float* s_src) {
  GNN_ASSERT(n_dst >= 0 && n_dst <= z.rows, "head_scores: ", n_dst, " destination rows of ", z.rows);
  // One launch per attention vector (the CPU's single pass is not written for the device).
  head_dot_one(z.rows_range(0, n_dst), a_dst, heads, s_dst);
  head_dot_one(z, a_src, heads, s_src);
}

void head_scores_backward(ConstDenseView z, std::int64_t n_dst, const float* a_dst,
                          const float* a_src, std::int32_t heads, const float* gs_dst,
                          const float* gs_src, DenseView gz, float* ga_dst, float* ga_src) {
  GNN_ASSERT(n_dst >= 0 && n_dst <= z.rows, "head_scores_backward: ", n_dst,
             " destination rows of ", z.rows);
  head_dot_backward_one(z.rows_range(0, n_dst), a_dst, heads, gs_dst, gz.rows_range(0, n_dst),
                        ga_dst);
  head_dot_backward_one(z, a_src, heads, gs_src, gz, ga_src);
}

void head_mean(ConstDenseView x, std::int32_t heads, DenseView y) {
  const std::int64_t f = head_width(x.cols, heads);
  GNN_ASSERT(y.rows == x.rows && y.cols == f, "head_mean: output shape");
  const float inv = 1.0f / static_cast<float>(heads);
  const std::int64_t cols = x.cols;
  const float* xs = x.data;
  float* ys = y.data;
  detail::for_each(detail::current_context(), x.rows * f, [=] __device__(std::int64_t e) {
    const std::int64_t v = e / f, j = e % f;
    float acc = 0.0f;
    for (std::int32_t h = 0; h < heads; ++h) acc += xs[v * cols + h * f + j];
    ys[e] = acc * inv;
  });
}

void head_mean_backward(ConstDenseView gy, std::int32_t heads, DenseView gx) {
  const std::int64_t f = head_width(gx.cols, heads);
  GNN_ASSERT(gy.rows == gx.rows && gy.cols == f, "head_mean_backward: shapes");
  const float inv = 1.0f / static_cast<float>(heads);
  const std::int64_t cols = gx.cols;
  const float* g = gy.data;
  float* out = gx.data;
  detail::for_each(detail::current_context(), gx.rows * cols, [=] __device__(std::int64_t e) {
    const std::int64_t v = e / cols, c = e % cols;
    out[e] = g[v * f + c % f] * inv;
  });
}

void gat_aggregate(CsrView a, ConstDenseView z, const float* s_dst, const float* s_src,
                   std::int32_t heads, float negative_slope, float* alpha, const float* drop,
                   DenseView y) {
  const std::int64_t f = head_width(z.cols, heads);
  GNN_ASSERT(z.rows == a.cols && y.rows == a.rows && y.cols == z.cols, "gat_aggregate: shapes");
  const std::int64_t warps = a.rows * heads;
  if (warps == 0) return;
  CudaContext& ctx = detail::current_context();
  gat_aggregate_kernel<<<warp_blocks(warps), kWarpsPerBlock * 32, 0, ctx.stream>>>(
      a, z, s_dst, s_src, heads, f, negative_slope, alpha, drop, y);
  GNN_CHECK_LAUNCH();
}

void gat_aggregate_backward(CsrView a, CsrView a_t, const std::int32_t* t_to_a, ConstDenseView z,
                            const float* s_dst, const float* s_src, std::int32_t heads,
                            float negative_slope, const float* alpha, const float* drop,
                            ConstDenseView gy, float* edge_grad, float* gs_dst, float* gs_src,
                            DenseView gz) {
  const std::int64_t f = head_width(z.cols, heads);
  GNN_ASSERT(z.rows == a.cols && gy.rows == a.rows && gy.cols == z.cols && gz.rows == z.rows &&
                 gz.cols == z.cols && a_t.rows == a.cols && a_t.nnz == a.nnz,
             "gat_aggregate_backward: shapes");
  CudaContext& ctx = detail::current_context();
  if (a.rows > 0) {
    gat_backward_rows_kernel<<<warp_blocks(a.rows * heads), kWarpsPerBlock * 32, 0, ctx.stream>>>(
        a, z, s_dst, s_src, heads, f, negative_slope, alpha, drop, gy, edge_grad, gs_dst);
    GNN_CHECK_LAUNCH();
  }
  if (a_t.rows > 0) {
    gat_backward_cols_kernel<<<warp_blocks(a_t.rows * heads), kWarpsPerBlock * 32, 0, ctx.stream>>>(
        a_t, t_to_a, heads, f, alpha, drop, gy, edge_grad, gs_src, gz);
    GNN_CHECK_LAUNCH();
  }
}

void edge_dropout_mask(const RngKey& key, const GlobalId* ids, float p, CsrView a,
                       std::int32_t heads, float* mask) {
  GNN_CHECK_CONFIG(p >= 0.0f && p < 1.0f, "attention dropout must be in [0, 1), got ", p);
  if (a.rows == 0) return;
  // The reference's rule and scale (computed here on the host, as there), one thread per row:
  // the 24-bit uniform is exact on both sides, so the masks are equal bit for bit.
  const float keep_scale = 1.0f / (1.0f - p);
  const CounterRng rng(key);
  const std::int32_t* row_ptr = a.row_ptr;
  const std::int32_t* col = a.col;
  detail::for_each(detail::current_context(), a.rows, [=] __device__(std::int64_t v) {
    const auto item = static_cast<std::uint64_t>(ids[v]);
    for (std::int32_t k = row_ptr[v]; k < row_ptr[v + 1]; ++k) {
      const auto base = static_cast<std::uint64_t>(ids[col[k]]) * static_cast<std::uint64_t>(heads);
      for (std::int32_t h = 0; h < heads; ++h) {
        const float u = rng.uniform(item, base + static_cast<std::uint64_t>(h));
        mask[static_cast<std::int64_t>(k) * heads + h] = u >= p ? keep_scale : 0.0f;
      }
    }
  });
}

}  // namespace halognn::kernels::cuda
