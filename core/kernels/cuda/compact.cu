// Products with sparsified features (CompactView) on the current device's stream.
//
// Both products expand a block of x's rows into a dense scratch matrix (zeros, then a thread per
// (row, slot) writing its codebook value after the dropout draw) and multiply it with cuBLAS:
// compact_matmul y_block = X_block w (+ beta y_block), compact_matmul_transpose y += X_blockᵀ g_block
// (beta on the first block). A block holds at most kCompactExpandBytes of floats, so the rank never
// holds its whole dense matrix. The sums run in cuBLAS's order, not the reference's ascending one
// (core/kernels/reference/compact.cpp); the `cuda` tests compare them within a few float32 ulps.
// Until 2026-11-29 the transpose ran one thread per (chunk, output column), each walking every row
// in order: chunks x F threads, 6.4 s an epoch on Coauthor-Physics (docs/gpu.md).
#include <algorithm>

#include "core/kernels/cuda/common.cuh"

namespace halognn::kernels::cuda {
namespace {

using detail::CudaContext;

__device__ __forceinline__ float entry_value(const CompactView& x, std::int64_t i, std::int64_t s,
                                             std::int64_t col, float keep_scale) {
  const float v = x.codebook[s];
  if (x.drop_p == 0.0f || v == 0.0f) return v;  // a zero stays zero: no draw
  const CounterRng rng(x.drop_key);
  return rng.uniform(static_cast<std::uint64_t>(x.row_ids[i]), static_cast<std::uint64_t>(col)) >=
                 x.drop_p
             ? v * keep_scale
             : 0.0f;
}

void check_compact(const CompactView& x) {
  GNN_CHECK_CONFIG(x.drop_p >= 0.0f && x.drop_p <= 1.0f,
                   "dropout probability must be in [0, 1], got ", x.drop_p);
}

/// Rows of x per expanded block: as many as kCompactExpandBytes holds, at least one.
std::int64_t block_rows(const CompactView& x) {
  const std::int64_t row_bytes = std::max<std::int64_t>(x.cols, 1) * static_cast<std::int64_t>(sizeof(float));
  return std::max<std::int64_t>(1, std::min(x.rows, kCompactExpandBytes / row_bytes));
}

/// Rows [r0, r0 + b) of x, after its dropout, as a dense b x cols block in d. The slots of a row
/// have distinct columns (the format's chunks keep disjoint largest and smallest positions), so
/// each entry is written once.
void expand_block(CudaContext& ctx, const CompactView& x, std::int64_t r0, std::int64_t b, float* d) {
  GNN_CHECK_CUDA(cudaMemsetAsync(d, 0, static_cast<std::size_t>(b * x.cols) * sizeof(float), ctx.stream));
  if (x.slots == 0) return;
  const float keep_scale = x.drop_p < 1.0f ? 1.0f / (1.0f - x.drop_p) : 0.0f;
  const std::int64_t slots = x.slots, cols = x.cols;
  detail::for_each(ctx, b * slots, [=] __device__(std::int64_t e) {
    const std::int64_t i = r0 + e / slots, s = e % slots;
    const std::int64_t col = static_cast<std::int64_t>(x.slot_base[s]) + x.pos[i * slots + s];
    d[(i - r0) * cols + col] = entry_value(x, i, s, col, keep_scale);
  });
}

/// Calls f(block, r0) for x's rows in blocks of block_rows(x), block the dense n x cols matrix of
/// rows [r0, r0 + n) (expand_block), one scratch matrix reused in stream order.
template <typename F>
void for_each_expanded_block(CudaContext& ctx, const CompactView& x, F&& f) {
  const std::int64_t b = block_rows(x);
  auto* d = static_cast<float*>(ctx.aux.get(static_cast<std::size_t>(b * x.cols) * sizeof(float), ctx.stream));
  for (std::int64_t r0 = 0; r0 < x.rows; r0 += b) {
    const std::int64_t n = std::min(b, x.rows - r0);
    expand_block(ctx, x, r0, n, d);
    f(ConstDenseView{d, n, x.cols}, r0);
  }
}

}  // namespace

void compact_matmul(CompactView x, ConstDenseView w, float beta, DenseView y) {
  check_compact(x);
  GNN_ASSERT(w.rows == x.cols && y.rows == x.rows && y.cols == w.cols,
             "compact_matmul: shapes do not match (x ", x.rows, "x", x.cols, ", w ", w.rows, "x",
             w.cols, ", y ", y.rows, "x", y.cols, ")");
  if (x.rows == 0 || w.cols == 0) return;
  for_each_expanded_block(detail::current_context(), x, [&](ConstDenseView block, std::int64_t r0) {
    gemm(false, false, 1.0f, block, w, beta, y.rows_range(r0, r0 + block.rows));
  });
}

void compact_matmul_transpose(CompactView x, ConstDenseView g, float beta, DenseView y) {
  check_compact(x);
  GNN_ASSERT(g.rows == x.rows && y.rows == x.cols && y.cols == g.cols,
             "compact_matmul_transpose: shapes do not match (x ", x.rows, "x", x.cols, ", g ",
             g.rows, "x", g.cols, ", y ", y.rows, "x", y.cols, ")");
  if (x.rows == 0) {  // an empty sum: only the beta term remains
    gemm(true, false, 1.0f, ConstDenseView{nullptr, 0, x.cols}, g, beta, y);
    return;
  }
  if (g.cols == 0 || x.cols == 0) return;
  for_each_expanded_block(detail::current_context(), x, [&](ConstDenseView block, std::int64_t r0) {
    gemm(true, false, 1.0f, block, g.rows_range(r0, r0 + block.rows), r0 == 0 ? beta : 1.0f, y);
  });
}

}  // namespace halognn::kernels::cuda
