// Graph-attention kernels: per-head scores, edge softmax + aggregation, and their backward.
//
// The forward aggregation is an SpMM with per-entry weights (the attention coefficients), one per
// head, run by sparse.cpp's spmm_columns (sparse_rows.hpp); the scores' dot products on dots()
// (gat_dots.inc), whose summation order is fixed whatever the vector width. The backward gathers
// each gy row once (gat_backward_rows.inc) for both the transposed aggregation and the score
// gradients' dot products, with the SpMM's and dots()'s operations in their orders. The edge
// softmax runs per instruction set too (gat_softmax_rows.inc, exp_math.hpp's exp: no libm call),
// its sums in a fixed order. Rows are scheduled in chunks of about equal stored entries.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/reference/exp_math.hpp"
#include "core/kernels/reference/reference_kernels.hpp"
#include "core/kernels/reference/scratch.hpp"
#include "core/kernels/reference/simd.hpp"
#include "core/kernels/reference/sparse_rows.hpp"

namespace halognn::kernels::reference {
namespace {

/// Stored entries per row chunk.
constexpr std::int64_t kChunkEntries = 1 << 13;

std::int64_t head_width(std::int64_t cols, std::int32_t heads) {
  GNN_ASSERT(heads > 0 && cols % heads == 0, "width ", cols, " is not a multiple of ", heads,
             " heads");
  return cols / heads;
}

/// Floats of a row's softmax_rows buffer (gat_softmax_rows.inc): its n entries rounded up to
/// whole 16-entry groups, twice (the scores, then the entries' values where there are values),
/// then four groups (lanes, maxima, reciprocals) and two floats, every one per head.
std::int64_t softmax_buffer(std::int64_t n, std::int64_t heads) {
  return (2 * ((n + 15) / 16 * 16) + 4 * 16 + 2) * heads;
}

/// Floats of a row's softmax_backward_rows buffer (gat_softmax_rows.inc): the scores of its n
/// entries, then two groups of 16 entries (lanes, sums) and one float, every one per head.
std::int64_t softmax_backward_buffer(std::int64_t n, std::int64_t heads) { return (n + 2 * 16 + 1) * heads; }

/// The 16 lanes of a dot product added as a fixed tree: halves, quarters, eighths, pairs.
float reduce_lanes(float* l) {
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) l[i] = l[i] + l[i + w];
  return l[0];
}

/// Entries ahead whose gy rows the backward's transposed pass requests early (the SpMM's
/// distance, sparse.cpp).
constexpr std::int32_t kGatPrefetch = 32;

/// The backward's pass over the transposed structure for one head (gat_backward_rows.inc):
/// gz's head columns and the dot products (indexed by a's entries) from one gather of gy.
struct GatTransposedArgs {
  CsrView at;
  const std::int32_t* t_to_a = nullptr;
  const float* coef = nullptr;  // per entry k of at: coef[k * coef_stride]
  std::int64_t coef_stride = 1;
  const float* gy = nullptr;    // the head's first column
  std::int64_t ldg = 0;
  const float* z = nullptr;
  std::int64_t ldz = 0;
  float* gz = nullptr;
  std::int64_t ldgz = 0;
  std::int64_t f = 0;  // the head's width
  float* dot = nullptr;  // gy_v . z_u, per entry (v, u) of a: dot[e * dot_stride], e the entry of a
  std::int64_t dot_stride = 1;
};

#define HALOGNN_ISA_BODY "core/kernels/reference/gat_dots.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY
#define HALOGNN_ISA_BODY "core/kernels/reference/gat_backward_rows.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY
#define HALOGNN_ISA_BODY "core/kernels/reference/gat_score_rows.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY
#define HALOGNN_ISA_BODY "core/kernels/reference/gat_softmax_rows.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY

using DotsFn = void (*)(const float*, const float* const*, std::int64_t, std::int64_t, float*);

DotsFn dots_fn() {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::dots_n;
    case CpuIsa::avx2: return isa_avx2::dots_n;
    case CpuIsa::sse2: break;
  }
  return isa_sse2::dots_n;
}

using ScoreGradRowsFn = void (*)(const float*, const float*, const float*, bool, float, float,
                                 std::int64_t, float*, float*, float*);

ScoreGradRowsFn score_grad_rows_fn() {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::score_grad_rows;
    case CpuIsa::avx2: return isa_avx2::score_grad_rows;
    case CpuIsa::sse2: break;
  }
  return isa_sse2::score_grad_rows;
}

using SoftmaxRowsFn = void (*)(const std::int32_t*, const float*, std::int64_t, const float*, const float*,
                               std::int64_t, float, float*, float*);

/// softmax_rows<kValues, kHeads> for the CPU's instruction set.
template <bool kValues, int kHeads>
SoftmaxRowsFn softmax_rows_isa() {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::softmax_rows<kValues, kHeads>;
    case CpuIsa::avx2: return isa_avx2::softmax_rows<kValues, kHeads>;
    case CpuIsa::sse2: break;
  }
  return isa_sse2::softmax_rows<kValues, kHeads>;
}

/// softmax_rows for the CPU's instruction set and the head count (1 and 8, the common counts, as
/// compile-time constants), with the entries' values (a multigraph's multiplicities) or without.
template <bool kValues>
SoftmaxRowsFn softmax_rows_fn(std::int32_t heads) {
  return heads == 1 ? softmax_rows_isa<kValues, 1>()
                    : heads == 8 ? softmax_rows_isa<kValues, 8>() : softmax_rows_isa<kValues, 0>();
}

using SoftmaxBackwardRowsFn = void (*)(const std::int32_t*, const float*, const float*, std::int64_t, const float*,
                                       const float*, std::int64_t, float, float*, float*, float*);

/// softmax_backward_rows<kDrop, kHeads> for the CPU's instruction set.
template <bool kDrop, int kHeads>
SoftmaxBackwardRowsFn softmax_backward_rows_isa() {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::softmax_backward_rows<kDrop, kHeads>;
    case CpuIsa::avx2: return isa_avx2::softmax_backward_rows<kDrop, kHeads>;
    case CpuIsa::sse2: break;
  }
  return isa_sse2::softmax_backward_rows<kDrop, kHeads>;
}

/// softmax_backward_rows for the CPU's instruction set and the head count (as softmax_rows_fn),
/// with attention dropout or without.
template <bool kDrop>
SoftmaxBackwardRowsFn softmax_backward_rows_fn(std::int32_t heads) {
  return heads == 1 ? softmax_backward_rows_isa<kDrop, 1>()
                    : heads == 8 ? softmax_backward_rows_isa<kDrop, 8>() : softmax_backward_rows_isa<kDrop, 0>();
}

using TransposedRowsFn = void (*)(const GatTransposedArgs&, std::int64_t, std::int64_t,
                                  std::vector<float>&);

TransposedRowsFn transposed_rows_fn() {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::transposed_rows;
    case CpuIsa::avx2: return isa_avx2::transposed_rows;
    case CpuIsa::sse2: break;
  }
  return isa_sse2::transposed_rows;
}

/// The source scores' gradients of rows [u0, u1) of a_t, every head: out[u * heads + h] = the
/// sum of edge_grad[e * heads + h] over the row's entries (e = t_to_a[k]) in the row's order, from
/// 0. kHeads > 0 fixes the head count at compile time (the sums held in registers), 0 takes it from
/// the argument.
template <int kHeads>
void source_score_sums(CsrView a_t, const std::int32_t* t_to_a, const float* edge_grad, std::int32_t heads_arg,
                       std::int64_t u0, std::int64_t u1, float* out) {
  const std::int64_t heads = kHeads > 0 ? kHeads : heads_arg;
  std::vector<float> buffer(kHeads > 0 ? 0 : static_cast<std::size_t>(heads));
  float fixed[kHeads > 0 ? kHeads : 1];
  float* sums = kHeads > 0 ? fixed : buffer.data();
  for (std::int64_t u = u0; u < u1; ++u) {
    for (std::int64_t h = 0; h < heads; ++h) sums[h] = 0.0f;
    for (std::int32_t k = a_t.row_ptr[u]; k < a_t.row_ptr[u + 1]; ++k) {
      const float* g = edge_grad + static_cast<std::int64_t>(t_to_a[k]) * heads;
      for (std::int64_t h = 0; h < heads; ++h) sums[h] += g[h];
    }
    for (std::int64_t h = 0; h < heads; ++h) out[u * heads + h] = sums[h];
  }
}

}  // namespace

void head_scores(ConstDenseView z, std::int64_t n_dst, const float* a_dst, const float* a_src,
                 std::int32_t heads, float* s_dst, float* s_src) {
  GNN_ASSERT(n_dst >= 0 && n_dst <= z.rows, "head_scores: ", n_dst, " destination rows of ", z.rows);
  const std::int64_t f = head_width(z.cols, heads);
  const DotsFn dots = dots_fn();
  // Blocks of 64 rows: the source dot products read the block's rows from memory, the
  // destination ones right after them from the cache.
  constexpr std::int64_t kRows = 64;
  const std::int64_t blocks = (z.rows + kRows - 1) / kRows;
#pragma omp parallel for schedule(static) if (z.rows * z.cols >= (1 << 16))
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t v0 = blk * kRows, v1 = std::min(z.rows, v0 + kRows);
    const std::int64_t d1 = std::clamp(n_dst, v0, v1);
    const float* rows[kRows];
    float out[kRows];
    for (std::int32_t h = 0; h < heads; ++h) {
      for (std::int64_t v = v0; v < v1; ++v) rows[v - v0] = z.row(v) + h * f;
      dots(a_src + h * f, rows, v1 - v0, f, out);
      for (std::int64_t v = v0; v < v1; ++v) s_src[v * heads + h] = out[v - v0];
      if (d1 == v0) continue;
      dots(a_dst + h * f, rows, d1 - v0, f, out);
      for (std::int64_t v = v0; v < d1; ++v) s_dst[v * heads + h] = out[v - v0];
    }
  }
}

void head_scores_backward(ConstDenseView z, std::int64_t n_dst, const float* a_dst,
                          const float* a_src, std::int32_t heads, const float* gs_dst,
                          const float* gs_src, DenseView gz, float* ga_dst, float* ga_src) {
  GNN_ASSERT(gz.rows == z.rows && gz.cols == z.cols, "head_scores_backward: shapes differ");
  GNN_ASSERT(n_dst >= 0 && n_dst <= z.rows, "head_scores_backward: ", n_dst,
             " destination rows of ", z.rows);
  const std::int64_t f = head_width(z.cols, heads), width = z.cols;
  if (width == 0) return;
  const ScoreGradRowsFn rows = score_grad_rows_fn();
  const int threads = omp_get_max_threads();
  // Per thread, the partial sums of ga_dst, then of ga_src (rows in the static schedule's order).
  std::vector<float> partial(static_cast<std::size_t>(threads * 2 * width), 0.0f);
#pragma omp parallel num_threads(threads)
  {
    float* acc_dst = partial.data() + static_cast<std::int64_t>(omp_get_thread_num()) * 2 * width;
    float* acc_src = acc_dst + width;
#pragma omp for schedule(static)
    for (std::int64_t v = 0; v < z.rows; ++v) {
      for (std::int32_t h = 0; h < heads; ++h) {
        const std::int64_t o = h * f;
        const bool dst = v < n_dst;
        rows(z.row(v) + o, a_dst + o, a_src + o, dst, dst ? gs_dst[v * heads + h] : 0.0f,
             gs_src[v * heads + h], f, gz.row(v) + o, acc_dst + o, acc_src + o);
      }
    }
  }
  for (std::int64_t j = 0; j < width; ++j) {
    float sum_dst = 0.0f, sum_src = 0.0f;
    for (int t = 0; t < threads; ++t) {
      sum_dst += partial[static_cast<std::size_t>(t * 2 * width + j)];
      sum_src += partial[static_cast<std::size_t>(t * 2 * width + width + j)];
    }
    ga_dst[j] += sum_dst;
    ga_src[j] += sum_src;
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
  if (a.rows == 0) return;
  const std::vector<std::int64_t> chunks = detail::row_chunks(a, kChunkEntries);
  const auto n_chunks = static_cast<std::int64_t>(chunks.size()) - 1;
  // Pass 1, per row, every head at once: the edge softmax of the scores into alpha (softmax_rows).
  const SoftmaxRowsFn softmax_rows = a.val ? softmax_rows_fn<true>(heads) : softmax_rows_fn<false>(heads);
#pragma omp parallel if (n_chunks > 1)
  {
    std::vector<float> e;  // one row's scores, then its exponentials (and its values)
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t c = 0; c < n_chunks; ++c) {
      for (std::int64_t v = chunks[c]; v < chunks[c + 1]; ++v) {
        const std::int32_t begin = a.row_ptr[v], end = a.row_ptr[v + 1];
        const auto need = static_cast<std::size_t>(softmax_buffer(end - begin, heads));
        if (e.size() < need) e.resize(need);
        softmax_rows(a.col + begin, a.val ? a.val + begin : nullptr, end - begin, s_dst + v * heads, s_src, heads,
                     negative_slope, e.data(), alpha + static_cast<std::int64_t>(begin) * heads);
      }
    }
  }
  // Pass 2, per head: y[:, head h] = c z[:, head h], the SpMM of sparse.cpp (which gathers from a
  // dense copy of the head's columns). c = alpha (weights strided), or with attention dropout
  // alpha times the multiplier: alpha keeps the softmax (the backward needs it), the sum uses
  // the dropped weights.
  const std::int64_t entries = a.row_ptr[a.rows];  // entry indices are absolute
  float* coef = drop ? scratch::shared_floats_2(static_cast<std::size_t>(entries)) : nullptr;
  for (std::int32_t h = 0; h < heads; ++h) {
    detail::SpmmArgs s;
    s.a = a;
    s.x = z.data + h * f;
    s.ldx = z.cols;
    s.y = y.data + h * f;
    s.ldy = y.cols;
    if (drop == nullptr) {
      s.a.val = alpha + h;
      s.val_stride = heads;
    } else {
#pragma omp parallel for schedule(static)
      for (std::int64_t k = a.row_ptr[0]; k < entries; ++k)
        coef[k] = alpha[k * heads + h] * drop[k * heads + h];
      s.a.val = coef;
    }
    detail::spmm_columns(s, f);
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
  const TransposedRowsFn transposed_rows = transposed_rows_fn();
  const SoftmaxBackwardRowsFn softmax_backward =
      drop ? softmax_backward_rows_fn<true>(heads) : softmax_backward_rows_fn<false>(heads);
  const std::vector<std::int64_t> chunks = detail::row_chunks(a, kChunkEntries);
  const auto n_chunks = static_cast<std::int64_t>(chunks.size()) - 1;
  const std::vector<std::int64_t> t_chunks = detail::row_chunks(a_t, kChunkEntries);
  const auto n_t_chunks = static_cast<std::int64_t>(t_chunks.size()) - 1;
  // Entry indices are absolute (a view of some rows of a larger CSR starts at row_ptr[0] != 0).
  const std::int64_t entries = a_t.rows > 0 ? a_t.row_ptr[a_t.rows] : 0;
  // The transposed coefficients, every head (a_t's order: entry k, head h at k * heads + h), from
  // one read of each entry's heads of alpha (and drop).
  float* coef = scratch::shared_floats_2(static_cast<std::size_t>(entries * heads));
  const std::int64_t first = a_t.rows > 0 ? a_t.row_ptr[0] : 0;
  if (heads == 1) {  // one gather a entry, no loop over heads
#pragma omp parallel for schedule(static)
    for (std::int64_t k = first; k < entries; ++k) coef[k] = alpha[t_to_a[k]] * (drop ? drop[t_to_a[k]] : 1.0f);
  } else {
#pragma omp parallel for schedule(static)
    for (std::int64_t k = first; k < entries; ++k) {
      const std::int64_t e = t_to_a[k];
      for (std::int32_t h = 0; h < heads; ++h)
        coef[k * heads + h] = alpha[e * heads + h] * (drop ? drop[e * heads + h] : 1.0f);
    }
  }
  const bool copied = detail::gathers_from_copy(a_t, f, gy.cols);
  for (std::int32_t h = 0; h < heads; ++h) {
    // Pass 1, per source row over the transposed structure (no two threads write one row), from
    // one gather of each gy row (of the head's columns, copied to a dense array first when they
    // are a strict part of gy's rows): dL/dz_u = sum_v d_vu alpha_vu gy_v (d: the dropout
    // multiplier, 1 without dropout), and the dot products gy_v . z_u that dL/dalpha needs, into
    // edge_grad (entry e, head h at e * heads + h), which pass 2 turns into the gradients.
    GatTransposedArgs t;
    t.at = a_t;
    t.t_to_a = t_to_a;
    t.coef = coef + h;
    t.coef_stride = heads;
    t.gy = copied ? detail::copy_columns(gy.data + h * f, gy.cols, gy.rows, f) : gy.data + h * f;
    t.ldg = copied ? f : gy.cols;
    t.z = z.data + h * f;
    t.ldz = z.cols;
    t.gz = gz.data + h * f;
    t.ldgz = gz.cols;
    t.f = f;
    t.dot = edge_grad + h;
    t.dot_stride = heads;
#pragma omp parallel if (n_t_chunks > 1)
    {
      std::vector<float> lanes;
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t c = 0; c < n_t_chunks; ++c)
        transposed_rows(t, t_chunks[c], t_chunks[c + 1], lanes);
    }
  }
  // Pass 2, per destination row, every head at once (softmax_backward_rows): dL/dalpha = d_vu
  // (gy_v . z_u) (the dot products times the dropout multipliers), through the softmax (de = alpha
  // (dalpha - sum alpha dalpha); a multiplicity only shifts e, so it drops out) and the LeakyReLU,
  // giving dL/d(s_dst[v] + s_src[u]) per entry in place of its dot product, and their sum per row.
#pragma omp parallel if (n_chunks > 1)
  {
    std::vector<float> buf;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t c = 0; c < n_chunks; ++c) {
      for (std::int64_t v = chunks[c]; v < chunks[c + 1]; ++v) {
        const std::int64_t begin = a.row_ptr[v], end = a.row_ptr[v + 1];
        const auto need = static_cast<std::size_t>(softmax_backward_buffer(end - begin, heads));
        if (buf.size() < need) buf.resize(need);
        softmax_backward(a.col + begin, alpha + begin * heads, drop ? drop + begin * heads : nullptr, end - begin,
                         s_dst + v * heads, s_src, heads, negative_slope, edge_grad + begin * heads, buf.data(),
                         gs_dst + v * heads);
      }
    }
  }
  // Pass 3, per source row over the transposed structure, every head at once: dL/ds_src[u] =
  // sum_v dpre_vu, each head's terms in the structure's order.
  const auto source_sums =
      heads == 1 ? source_score_sums<1> : heads == 8 ? source_score_sums<8> : source_score_sums<0>;
#pragma omp parallel for schedule(dynamic, 1) if (n_t_chunks > 1)
  for (std::int64_t c = 0; c < n_t_chunks; ++c)
    source_sums(a_t, t_to_a, edge_grad, heads, t_chunks[c], t_chunks[c + 1], gs_src);
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
