// Graph-attention kernels: per-head scores, edge softmax + aggregation, and their backward.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/kernels/reference/reference_kernels.hpp"

namespace halognn::kernels::reference {
namespace {

std::int64_t head_width(std::int64_t cols, std::int32_t heads) {
  GNN_ASSERT(heads > 0 && cols % heads == 0, "width ", cols, " is not a multiple of ", heads,
             " heads");
  return cols / heads;
}

float leaky(float x, float slope) { return x > 0.0f ? x : slope * x; }

}  // namespace

void head_dot(ConstDenseView z, const float* a, std::int32_t heads, float* s) {
  const std::int64_t f = head_width(z.cols, heads);
#pragma omp parallel for schedule(static)
  for (std::int64_t v = 0; v < z.rows; ++v) {
    const float* zr = z.row(v);
    for (std::int32_t h = 0; h < heads; ++h) {
      float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
      for (std::int64_t j = 0; j < f; ++j) acc += a[h * f + j] * zr[h * f + j];
      s[v * heads + h] = acc;
    }
  }
}

void head_dot_backward(ConstDenseView z, const float* a, std::int32_t heads, const float* gs,
                       DenseView gz, float* ga) {
  GNN_ASSERT(gz.rows == z.rows && gz.cols == z.cols, "head_dot_backward: shapes differ");
  const std::int64_t f = head_width(z.cols, heads), width = z.cols;
  if (width == 0) return;
  const int threads = omp_get_max_threads();
  std::vector<float> partial(static_cast<std::size_t>(threads * width), 0.0f);
#pragma omp parallel num_threads(threads)
  {
    float* acc = partial.data() + static_cast<std::int64_t>(omp_get_thread_num()) * width;
#pragma omp for schedule(static)
    for (std::int64_t v = 0; v < z.rows; ++v) {
      const float* zr = z.row(v);
      float* gr = gz.row(v);
      for (std::int32_t h = 0; h < heads; ++h) {
        const float g = gs[v * heads + h];
#pragma omp simd
        for (std::int64_t j = 0; j < f; ++j) {
          gr[h * f + j] += g * a[h * f + j];
          acc[h * f + j] += g * zr[h * f + j];
        }
      }
    }
  }
  for (std::int64_t j = 0; j < width; ++j) {
    float sum = 0.0f;
    for (int t = 0; t < threads; ++t) sum += partial[static_cast<std::size_t>(t * width + j)];
    ga[j] += sum;
  }
}

void head_mean(ConstDenseView x, std::int32_t heads, DenseView y) {
  const std::int64_t f = head_width(x.cols, heads);
  GNN_ASSERT(y.rows == x.rows && y.cols == f, "head_mean: output shape");
  const float inv = 1.0f / static_cast<float>(heads);
#pragma omp parallel for schedule(static)
  for (std::int64_t v = 0; v < x.rows; ++v) {
    const float* xr = x.row(v);
    float* yr = y.row(v);
    for (std::int64_t j = 0; j < f; ++j) yr[j] = 0.0f;
    for (std::int32_t h = 0; h < heads; ++h) {
#pragma omp simd
      for (std::int64_t j = 0; j < f; ++j) yr[j] += xr[h * f + j];
    }
    for (std::int64_t j = 0; j < f; ++j) yr[j] *= inv;
  }
}

void head_mean_backward(ConstDenseView gy, std::int32_t heads, DenseView gx) {
  const std::int64_t f = head_width(gx.cols, heads);
  GNN_ASSERT(gy.rows == gx.rows && gy.cols == f, "head_mean_backward: shapes");
  const float inv = 1.0f / static_cast<float>(heads);
#pragma omp parallel for schedule(static)
  for (std::int64_t v = 0; v < gy.rows; ++v) {
    const float* g = gy.row(v);
    float* out = gx.row(v);
    for (std::int32_t h = 0; h < heads; ++h) {
#pragma omp simd
      for (std::int64_t j = 0; j < f; ++j) out[h * f + j] = g[j] * inv;
    }
  }
}

void gat_aggregate(CsrView a, ConstDenseView z, const float* s_dst, const float* s_src,
                   std::int32_t heads, float negative_slope, float* alpha, const float* drop,
                   DenseView y) {
  const std::int64_t f = head_width(z.cols, heads);
  GNN_ASSERT(z.rows == a.cols && y.rows == a.rows && y.cols == z.cols, "gat_aggregate: shapes");
#pragma omp parallel for schedule(dynamic, 32)
  for (std::int64_t v = 0; v < a.rows; ++v) {
    float* out = y.row(v);
    std::fill(out, out + z.cols, 0.0f);
    const std::int32_t begin = a.row_ptr[v], end = a.row_ptr[v + 1];
    if (begin == end) continue;
    for (std::int32_t h = 0; h < heads; ++h) {
      // Max-shifted softmax: exp never overflows and the largest term is exactly 1.
      float m = -INFINITY;
      for (std::int32_t k = begin; k < end; ++k) {
        m = std::max(m, leaky(s_dst[v * heads + h] + s_src[a.col[k] * heads + h], negative_slope));
      }
      float sum = 0.0f;
      for (std::int32_t k = begin; k < end; ++k) {
        const float e = leaky(s_dst[v * heads + h] + s_src[a.col[k] * heads + h], negative_slope);
        const float w = std::exp(e - m) * (a.val ? a.val[k] : 1.0f);
        alpha[k * heads + h] = w;
        sum += w;
      }
      const float inv = 1.0f / sum;
      float* oh = out + h * f;
      for (std::int32_t k = begin; k < end; ++k) {
        // alpha keeps the softmax (the backward needs it); the sum uses the dropped weights.
        const float c = (alpha[k * heads + h] *= inv) * (drop ? drop[k * heads + h] : 1.0f);
        const float* zh = z.row(a.col[k]) + h * f;
#pragma omp simd
        for (std::int64_t j = 0; j < f; ++j) oh[j] += c * zh[j];
      }
    }
  }
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
  // Pass 1, per destination row: dL/dalpha = d_vu (gy_v . z_u) (d: the dropout multiplier, 1
  // without dropout), through the softmax
  // (de = alpha (dalpha - sum alpha dalpha); a multiplicity only shifts e, so it drops out) and
  // the LeakyReLU, giving dL/d(s_dst[v] + s_src[u]) per entry.
#pragma omp parallel for schedule(dynamic, 32)
  for (std::int64_t v = 0; v < a.rows; ++v) {
    const std::int32_t begin = a.row_ptr[v], end = a.row_ptr[v + 1];
    for (std::int32_t h = 0; h < heads; ++h) {
      const float* g = gy.row(v) + h * f;
      float weighted = 0.0f;
      for (std::int32_t k = begin; k < end; ++k) {
        const float* zh = z.row(a.col[k]) + h * f;
        float d = 0.0f;
#pragma omp simd reduction(+ : d)
        for (std::int64_t j = 0; j < f; ++j) d += g[j] * zh[j];
        if (drop) d *= drop[k * heads + h];
        edge_grad[k * heads + h] = d;
        weighted += alpha[k * heads + h] * d;
      }
      float row_sum = 0.0f;
      for (std::int32_t k = begin; k < end; ++k) {
        const float de = alpha[k * heads + h] * (edge_grad[k * heads + h] - weighted);
        const float pre = s_dst[v * heads + h] + s_src[a.col[k] * heads + h];
        const float dpre = pre > 0.0f ? de : negative_slope * de;
        edge_grad[k * heads + h] = dpre;
        row_sum += dpre;
      }
      gs_dst[v * heads + h] = row_sum;
    }
  }
  // Pass 2, per source row over the transposed structure (no two threads write one row):
  // dL/dz_u = sum_v d_vu alpha_vu gy_v and dL/ds_src[u] = sum_v dpre_vu.
#pragma omp parallel for schedule(dynamic, 32)
  for (std::int64_t u = 0; u < a_t.rows; ++u) {
    float* out = gz.row(u);
    std::fill(out, out + z.cols, 0.0f);
    for (std::int32_t h = 0; h < heads; ++h) {
      float src_sum = 0.0f;
      float* oh = out + h * f;
      for (std::int32_t k = a_t.row_ptr[u]; k < a_t.row_ptr[u + 1]; ++k) {
        const std::int64_t e = t_to_a[k];
        const float c = alpha[e * heads + h] * (drop ? drop[e * heads + h] : 1.0f);
        const float* g = gy.row(a_t.col[k]) + h * f;
#pragma omp simd
        for (std::int64_t j = 0; j < f; ++j) oh[j] += c * g[j];
        src_sum += edge_grad[e * heads + h];
      }
      gs_src[u * heads + h] = src_sum;
    }
  }
}

void edge_dropout_mask(const RngKey& key, const GlobalId* ids, float p, CsrView a,
                       std::int32_t heads, float* mask) {
  GNN_CHECK_CONFIG(p >= 0.0f && p < 1.0f, "attention dropout must be in [0, 1), got ", p);
  // The same rule and scale as dropout_forward: kept iff the 24-bit uniform is >= p.
  const float keep_scale = 1.0f / (1.0f - p);
  const CounterRng rng(key);
#pragma omp parallel for schedule(dynamic, 64)
  for (std::int64_t v = 0; v < a.rows; ++v) {
    const auto item = static_cast<std::uint64_t>(ids[v]);
    for (std::int32_t k = a.row_ptr[v]; k < a.row_ptr[v + 1]; ++k) {
      const auto base = static_cast<std::uint64_t>(ids[a.col[k]]) * static_cast<std::uint64_t>(heads);
      for (std::int32_t h = 0; h < heads; ++h) {
        const float u = rng.uniform(item, base + static_cast<std::uint64_t>(h));
        mask[static_cast<std::int64_t>(k) * heads + h] = u >= p ? keep_scale : 0.0f;
      }
    }
  }
}

}  // namespace halognn::kernels::reference
