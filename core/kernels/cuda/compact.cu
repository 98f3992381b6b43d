// Products with sparsified features (CompactView) on the current device's stream, with the
// reference's operation order (core/kernels/reference/compact.cpp).
//
// compact_matmul: one thread per output element, slots in ascending order.
// compact_matmul_transpose: one thread per (chunk, output column); it walks the rows in ascending
// order and adds each row's contributions to the output rows of its chunk, so every output element
// gets its contributions in ascending row order (deterministic, no atomics). Its parallelism is
// chunks x F threads, each walking every row: too little for a GPU, and it runs every step (layer
// 0's weight gradient): 6.4 s an epoch on Coauthor-Physics (docs/gpu.md "Open" has the fix).
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

}  // namespace

void compact_matmul(CompactView x, ConstDenseView w, float beta, DenseView y) {
  check_compact(x);
  GNN_ASSERT(w.rows == x.cols && y.rows == x.rows && y.cols == w.cols,
             "compact_matmul: shapes do not match (x ", x.rows, "x", x.cols, ", w ", w.rows, "x",
             w.cols, ", y ", y.rows, "x", y.cols, ")");
  const std::int64_t f_dim = w.cols;
  const float keep_scale = x.drop_p < 1.0f ? 1.0f / (1.0f - x.drop_p) : 0.0f;
  const float* wd = w.data;
  float* yd = y.data;
  detail::for_each(detail::current_context(), x.rows * f_dim, [=] __device__(std::int64_t e) {
    const std::int64_t i = e / f_dim, f = e % f_dim;
    float acc = beta == 0.0f ? 0.0f : beta * yd[e];
    const std::uint8_t* pos = x.pos + i * x.slots;
    for (std::int64_t s = 0; s < x.slots; ++s) {
      const std::int64_t col = static_cast<std::int64_t>(x.slot_base[s]) + pos[s];
      const float v = entry_value(x, i, s, col, keep_scale);
      if (v == 0.0f) continue;  // as the reference: zero entries are skipped
      acc = __fadd_rn(__fmul_rn(v, wd[col * f_dim + f]), acc);
    }
    yd[e] = acc;
  });
}

void compact_matmul_transpose(CompactView x, ConstDenseView g, float beta, DenseView y) {
  check_compact(x);
  GNN_ASSERT(g.rows == x.rows && y.rows == x.cols && y.cols == g.cols,
             "compact_matmul_transpose: shapes do not match (x ", x.rows, "x", x.cols, ", g ",
             g.rows, "x", g.cols, ", y ", y.rows, "x", y.cols, ")");
  CudaContext& ctx = detail::current_context();
  const std::int64_t f_dim = g.cols, n_out = y.rows * f_dim;
  float* yd = y.data;
  if (beta == 0.0f) {
    if (n_out > 0)
      GNN_CHECK_CUDA(cudaMemsetAsync(yd, 0, static_cast<std::size_t>(n_out) * sizeof(float),
                                     ctx.stream));
  } else if (beta != 1.0f) {
    detail::for_each(ctx, n_out, [=] __device__(std::int64_t e) { yd[e] *= beta; });
  }
  if (f_dim == 0 || x.rows == 0 || x.slots == 0) return;
  const std::int64_t chunks = (x.cols + 255) / 256;
  const float keep_scale = x.drop_p < 1.0f ? 1.0f / (1.0f - x.drop_p) : 0.0f;
  const float* gd = g.data;
  detail::for_each(ctx, chunks * f_dim, [=] __device__(std::int64_t e) {
    const std::int64_t c = e / f_dim, f = e % f_dim;
    // The slots of chunk c are contiguous: find them once.
    std::int64_t s0 = 0;
    while (s0 < x.slots && x.slot_base[s0] < c * 256) ++s0;
    std::int64_t s1 = s0;
    while (s1 < x.slots && x.slot_base[s1] == c * 256) ++s1;
    for (std::int64_t i = 0; i < x.rows; ++i) {
      const std::uint8_t* pos = x.pos + i * x.slots;
      const float gv = gd[i * f_dim + f];
      for (std::int64_t s = s0; s < s1; ++s) {
        const std::int64_t col = c * 256 + pos[s];
        const float v = entry_value(x, i, s, col, keep_scale);
        if (v == 0.0f) continue;
        float* out = yd + col * f_dim + f;
        *out = __fadd_rn(__fmul_rn(v, gv), *out);
      }
    }
  });
}

}  // namespace halognn::kernels::cuda
