// Sparse-dense products over CSR, multi-versioned (simd.hpp, cpu_isa.hpp).
//
// spmm: rows are cut into chunks of about equal stored entries (power-law degrees: a hub row
// weighs what its entries weigh), which the threads take dynamically. Each row's output block of
// up to 8 vectors stays in registers over the row's entries. When x is too large for the cache
// (cols x F floats beyond spmm_cache_budget(), cpu_isa.hpp), the feature columns are processed
// in blocks, one pass over the matrix per block, so that the x rows a pass gathers (cols x block
// floats) stay in cache; the structure is re-read per pass instead (4 or 8 bytes per entry,
// against a block of 64+ bytes gathered per entry). When the gathered columns are a strict part
// of x's rows (feature blocks, a GAT head) and the matrix has at least as many entries as x has
// rows, each block is first copied into a dense array, so that a pass gathers from at most the
// budget, not from all of x.
// Each entry prefetches the x row of the entry kSpmmPrefetch ahead.
//
// spmm_transpose: each thread scatters its contiguous rows' contributions into its own partial
// result (thread 0 into y itself), and the partials are then added in thread order. Feature
// blocks keep the partials in cache.
//
// Numerics: every output element is (beta*y or 0), then one multiply and one add per entry in
// ascending entry order (spmm) or ascending source row per thread (spmm_transpose), then the
// bias: no fused multiply-add, no dependence on the vector width; spmm does not depend on the
// thread count either, spmm_transpose does (the thread partials).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/reference/reference_kernels.hpp"
#include "core/kernels/reference/scratch.hpp"
#include "core/kernels/reference/simd.hpp"
#include "core/kernels/reference/sparse_rows.hpp"

namespace halognn::kernels::reference {
namespace detail {
namespace {

/// Entries ahead whose x rows spmm (and whose partial rows spmm_transpose) request early
/// (spmm_rows.inc): the best of 16, 32 and 64 on the default graph (docs/benchmarks.md, "SpMM
/// prefetching the rows of the entries ahead").
constexpr std::int32_t kSpmmPrefetch = 32;
/// Stored entries per row chunk (rows are never split).
constexpr std::int64_t kChunkEntries = 1 << 14;

void spmm_scalar(const SpmmArgs& s, std::int64_t r0, std::int64_t r1, std::int64_t f0,
                 std::int64_t f1) {
  for (std::int64_t i = r0; i < r1; ++i) {
    float* out = s.y + i * s.ldy;
    for (std::int64_t f = f0; f < f1; ++f) {
      float acc = s.beta == 0.0f ? 0.0f : s.beta * out[f];
      for (std::int32_t k = s.a.row_ptr[i]; k < s.a.row_ptr[i + 1]; ++k) {
        const float in = s.x[static_cast<std::int64_t>(s.a.col[k]) * s.ldx + f - s.x_col0];
        acc = s.a.val ? s.a.val[k * s.val_stride] * in + acc : in + acc;
      }
      if (s.bias) acc = acc + s.bias[f];
      out[f] = acc;
    }
  }
}

void scatter_scalar(const SpmmArgs& s, std::int64_t r0, std::int64_t r1, std::int64_t f0,
                    std::int64_t f1, float* p, std::int64_t ldp) {
  for (std::int64_t i = r0; i < r1; ++i) {
    const float* in = s.x + i * s.ldx;
    for (std::int32_t k = s.a.row_ptr[i]; k < s.a.row_ptr[i + 1]; ++k) {
      float* out = p + static_cast<std::int64_t>(s.a.col[k]) * ldp;
      for (std::int64_t f = f0; f < f1; ++f)
        out[f - f0] = s.a.val ? s.a.val[k] * in[f] + out[f - f0] : in[f] + out[f - f0];
    }
  }
}

#define HALOGNN_ISA_BODY "core/kernels/reference/spmm_rows.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY

using ScatterFn = void (*)(const SpmmArgs&, std::int64_t, std::int64_t, std::int64_t,
                           std::int64_t, float*, std::int64_t);

ScatterFn scatter_fn() {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::scatter_rows;
    case CpuIsa::avx2: return isa_avx2::scatter_rows;
    case CpuIsa::sse2: break;
  }
  return isa_sse2::scatter_rows;
}

/// Rows [r0, r1), feature columns [f0, f1), with the instruction set of cpu_isa().
using SpmmRowsFn = void (*)(const SpmmArgs&, std::int64_t r0, std::int64_t r1, std::int64_t f0,
                            std::int64_t f1);

SpmmRowsFn spmm_rows_fn() {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::spmm_rows;
    case CpuIsa::avx2: return isa_avx2::spmm_rows;
    case CpuIsa::sse2: break;
  }
  return isa_sse2::spmm_rows;
}

}  // namespace

bool gathers_from_copy(const CsrView& a, std::int64_t width, std::int64_t ld) {
  return width < ld && a.nnz >= a.cols;
}

const float* copy_columns(const float* x, std::int64_t ld, std::int64_t rows, std::int64_t width) {
  float* out = scratch::shared_floats(static_cast<std::size_t>(rows * width));
#pragma omp parallel for schedule(static) if (rows * width >= (1 << 16))
  for (std::int64_t r = 0; r < rows; ++r) std::copy_n(x + r * ld, width, out + r * width);
  return out;
}

void spmm_columns(const SpmmArgs& s, std::int64_t f) {
  if (s.a.rows == 0 || f == 0) return;
  const SpmmRowsFn fn = spmm_rows_fn();
  const std::vector<std::int64_t> chunks = row_chunks(s.a, kChunkEntries);
  const auto n_chunks = static_cast<std::int64_t>(chunks.size()) - 1;
  const std::int64_t block = spmm_feature_block(s.a.cols, f);
  const std::int64_t n_blocks = (f + block - 1) / block;
  if (gathers_from_copy(s.a, block, s.ldx)) {
    // Each block of x's columns is first copied into a dense array: the gathers then read whole
    // cache lines of one array of at most spmm_cache_budget() bytes instead of a block's slice of
    // rows spread over all of x (every page of x, beyond what the TLB maps).
    for (std::int64_t f0 = 0; f0 < f; f0 += block) {
      const std::int64_t nf = std::min(f, f0 + block) - f0;
      SpmmArgs packed = s;
      packed.x = copy_columns(s.x + f0, s.ldx, s.a.cols, nf);
      packed.ldx = nf;
      packed.x_col0 = f0;
#pragma omp parallel for schedule(dynamic, 1) if (n_chunks > 1)
      for (std::int64_t c = 0; c < n_chunks; ++c) fn(packed, chunks[c], chunks[c + 1], f0, f0 + nf);
    }
    return;
  }
  // One task per (feature block, row chunk), feature block major: all threads work on one block
  // of x at a time, with no barrier between blocks (a descheduled thread delays nobody).
  const std::int64_t tasks = n_blocks * n_chunks;
#pragma omp parallel for schedule(dynamic, 1) if (tasks > 1)
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t b = t / n_chunks, c = t % n_chunks;
    const std::int64_t f0 = b * block;
    fn(s, chunks[c], chunks[c + 1], f0, std::min(f, f0 + block));
  }
}

std::vector<std::int64_t> row_chunks(const CsrView& a, std::int64_t entries) {
  // Offsets are absolute: a view of some rows of a larger CSR starts at row_ptr[0] != 0.
  const std::int64_t first = a.rows > 0 ? a.row_ptr[0] : 0;
  const std::int64_t total = a.rows > 0 ? a.row_ptr[a.rows] - first : 0;
  std::vector<std::int64_t> bounds{0};
  const std::int64_t chunks = std::max<std::int64_t>(1, total / std::max<std::int64_t>(entries, 1));
  for (std::int64_t c = 1; c < chunks; ++c) {
    const std::int64_t target = first + total * c / chunks;
    const std::int64_t r = std::upper_bound(a.row_ptr, a.row_ptr + a.rows + 1, target) - a.row_ptr - 1;
    if (r > bounds.back()) bounds.push_back(r);
  }
  bounds.push_back(a.rows);
  return bounds;
}

}  // namespace detail

using detail::SpmmArgs;

void spmm(CsrView a, ConstDenseView x, float beta, DenseView y) {
  GNN_ASSERT(x.rows == a.cols && y.rows == a.rows && y.cols == x.cols,
             "spmm: shapes do not match (a ", a.rows, "x", a.cols, ", x ", x.rows, "x", x.cols,
             ", y ", y.rows, "x", y.cols, ")");
  detail::spmm_columns(SpmmArgs{a, x.data, x.cols, beta, nullptr, y.data, y.cols}, x.cols);
}

void spmm_bias(CsrView a, ConstDenseView x, float beta, const float* bias, DenseView y) {
  GNN_ASSERT(x.rows == a.cols && y.rows == a.rows && y.cols == x.cols,
             "spmm_bias: shapes do not match (a ", a.rows, "x", a.cols, ", x ", x.rows, "x",
             x.cols, ", y ", y.rows, "x", y.cols, ")");
  detail::spmm_columns(SpmmArgs{a, x.data, x.cols, beta, bias, y.data, y.cols}, x.cols);
}

void spmm_transpose(CsrView a, ConstDenseView x, float beta, DenseView y) {
  GNN_ASSERT(x.rows == a.rows && y.rows == a.cols && y.cols == x.cols,
             "spmm_transpose: shapes do not match (a ", a.rows, "x", a.cols, ", x ", x.rows, "x",
             x.cols, ", y ", y.rows, "x", y.cols, ")");
  const std::int64_t f = x.cols, n_out = a.cols;
  if (n_out == 0 || f == 0) return;
  // Thread t scatters rows [bounds[t], bounds[t+1]) (about equal entries) into partial t; thread
  // 0's partial is y itself.
  const int team = a.nnz * f >= (1 << 16) ? omp_get_max_threads() : 1;
  std::vector<std::int64_t> bounds{0};
  for (int t = 1; t < team; ++t) {
    const std::int64_t target = a.nnz * t / team;
    bounds.push_back(std::max(bounds.back(), static_cast<std::int64_t>(std::upper_bound(
        a.row_ptr, a.row_ptr + a.rows + 1, target) - a.row_ptr - 1)));
  }
  bounds.push_back(a.rows);
  const std::int64_t block = spmm_feature_block(n_out * team, f);
  float* partials = team > 1 ? scratch::shared_floats(static_cast<std::size_t>(
                                   (team - 1) * n_out * block))
                             : nullptr;
  const detail::ScatterFn fn = detail::scatter_fn();
  const SpmmArgs s{a, x.data, x.cols, 0.0f, nullptr, nullptr, 0};
#pragma omp parallel num_threads(team)
  for (std::int64_t f0 = 0; f0 < f; f0 += block) {
    const std::int64_t f1 = std::min(f, f0 + block), nf = f1 - f0;
    const int t = omp_get_thread_num();
    // Initialise: y's block (beta y or 0) by thread 0, the other partials to 0 by their owners.
    if (t == 0) {
      for (std::int64_t c = 0; c < n_out; ++c) {
        float* r = y.data + c * f + f0;
        for (std::int64_t j = 0; j < nf; ++j) r[j] = beta == 0.0f ? 0.0f : beta * r[j];
      }
      fn(s, bounds[0], bounds[1], f0, f1, y.data + f0, f);
    } else {
      float* p = partials + (t - 1) * n_out * nf;
      std::fill(p, p + n_out * nf, 0.0f);
      fn(s, bounds[t], bounds[t + 1], f0, f1, p, nf);
    }
#pragma omp barrier
    // y += partial 1 + partial 2 + ... (in thread order), rows split among the threads.
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < n_out; ++c) {
      float* r = y.data + c * f + f0;
      for (int u = 1; u < team; ++u) {
        const float* p = partials + ((u - 1) * n_out + c) * nf;
        for (std::int64_t j = 0; j < nf; ++j) r[j] = r[j] + p[j];
      }
    }
  }
}

}  // namespace halognn::kernels::reference
