// Row movement, elementwise kernels, column sums and dropout on the current device's stream.
#include <cub/device/device_radix_sort.cuh>

#include "core/kernels/cuda/common.cuh"

namespace halognn::kernels::cuda {
namespace {

using detail::CudaContext;

std::size_t align_up(std::size_t n) { return (n + 255) / 256 * 256; }

/// Adds the rows of one run of equal destinations, in ascending source order (the reference's
/// order, so the float sums are bit-identical to the CPU's).
__global__ void add_runs_kernel(const float* src, std::int64_t cols, const std::int32_t* keys,
                                const std::int32_t* order, std::int64_t n, float* dst) {
  const std::int64_t total = n * cols;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += stride) {
    const std::int64_t k = e / cols, j = e % cols;
    const std::int32_t key = keys[k];
    if (k > 0 && keys[k - 1] == key) continue;  // not the first entry of its run
    float* out = dst + static_cast<std::int64_t>(key) * cols + j;
    float acc = *out;
    for (std::int64_t m = k; m < n && keys[m] == key; ++m)
      acc += src[static_cast<std::int64_t>(order[m]) * cols + j];
    *out = acc;
  }
}

}  // namespace

void gather_rows(ConstDenseView src, const LocalId* idx, DenseView dst) {
  GNN_ASSERT(src.cols == dst.cols, "gather_rows: widths differ (", src.cols, " vs ", dst.cols, ")");
  if (dst.rows == 0 || dst.cols == 0) return;
  CudaContext& ctx = detail::current_context();
  const std::int64_t cols = dst.cols;
  const float* s = src.data;
  float* d = dst.data;
  detail::for_each(ctx, dst.rows * cols, [=] __device__(std::int64_t e) {
    const std::int64_t i = e / cols, j = e % cols;
    d[e] = s[static_cast<std::int64_t>(idx[i]) * cols + j];
  });
}

void scatter_rows(ConstDenseView src, const LocalId* idx, DenseView dst) {
  GNN_ASSERT(src.cols == dst.cols, "scatter_rows: widths differ (", src.cols, " vs ", dst.cols, ")");
  if (src.rows == 0 || src.cols == 0) return;
  CudaContext& ctx = detail::current_context();
  const std::int64_t cols = src.cols;
  const float* s = src.data;
  float* d = dst.data;
  // The destinations are distinct: one thread per element, no ordering to keep.
  detail::for_each(ctx, src.rows * cols, [=] __device__(std::int64_t e) {
    const std::int64_t i = e / cols, j = e % cols;
    d[static_cast<std::int64_t>(idx[i]) * cols + j] = s[e];
  });
}

void scatter_add_rows(ConstDenseView src, const LocalId* idx, DenseView dst) {
  GNN_ASSERT(src.cols == dst.cols, "scatter_add_rows: widths differ (", src.cols, " vs ", dst.cols,
             ")");
  const std::int64_t n = src.rows, f = src.cols;
  if (n == 0 || f == 0) return;
  GNN_ASSERT(n <= INT32_MAX, "scatter_add_rows: more than 2^31 rows");
  CudaContext& ctx = detail::current_context();
  // Deterministic without atomics: a stable radix sort of (destination, source index) groups the
  // contributions of each destination in ascending source order; one thread per (run, column)
  // then adds them in that order.
  const std::size_t arr = align_up(static_cast<std::size_t>(n) * sizeof(std::int32_t));
  auto* base = static_cast<char*>(ctx.aux.get(3 * arr, ctx.stream));
  auto* keys_out = reinterpret_cast<std::int32_t*>(base);
  auto* order_in = reinterpret_cast<std::int32_t*>(base + arr);
  auto* order_out = reinterpret_cast<std::int32_t*>(base + 2 * arr);
  detail::for_each(ctx, n, [=] __device__(std::int64_t i) { order_in[i] = static_cast<std::int32_t>(i); });
  std::size_t temp_bytes = 0;
  GNN_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, idx, keys_out, order_in,
                                                 order_out, static_cast<int>(n), 0, 32, ctx.stream));
  void* temp = ctx.work.get(temp_bytes, ctx.stream);
  GNN_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, idx, keys_out, order_in,
                                                 order_out, static_cast<int>(n), 0, 32, ctx.stream));
  add_runs_kernel<<<detail::blocks_for(n * f), detail::kBlock, 0, ctx.stream>>>(
      src.data, f, keys_out, order_out, n, dst.data);
  GNN_CHECK_LAUNCH();
}

void copy(ConstDenseView src, DenseView dst) {
  GNN_ASSERT(src.rows == dst.rows && src.cols == dst.cols, "copy: shapes differ");
  const std::int64_t n = src.rows * src.cols;
  if (n == 0 || src.data == dst.data) return;
  CudaContext& ctx = detail::current_context();
  GNN_CHECK_CUDA(cudaMemcpyAsync(dst.data, src.data, static_cast<std::size_t>(n) * sizeof(float),
                                 cudaMemcpyDeviceToDevice, ctx.stream));
}

void fill(DenseView y, float value) {
  float* d = y.data;
  detail::for_each(detail::current_context(), y.rows * y.cols,
                   [=] __device__(std::int64_t i) { d[i] = value; });
}

void axpy(float alpha, ConstDenseView x, DenseView y) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "axpy: shapes differ");
  const float* s = x.data;
  float* d = y.data;
  detail::for_each(detail::current_context(), x.rows * x.cols,
                   [=] __device__(std::int64_t i) { d[i] += alpha * s[i]; });
}

void axpby(std::int64_t n, float alpha, const float* x, float beta, float* y) {
  CudaContext& ctx = detail::current_context();
  if (beta == 0.0f) {  // BLAS convention: previous contents are ignored, even NaN
    detail::for_each(ctx, n, [=] __device__(std::int64_t i) { y[i] = alpha * x[i]; });
    return;
  }
  detail::for_each(ctx, n, [=] __device__(std::int64_t i) { y[i] = alpha * x[i] + beta * y[i]; });
}

void scale_rows(const float* s, DenseView y) {
  const std::int64_t f = y.cols;
  float* d = y.data;
  detail::for_each(detail::current_context(), y.rows * f,
                   [=] __device__(std::int64_t e) { d[e] *= s[e / f]; });
}

void add_row_vector(const float* b, DenseView y) {
  const std::int64_t f = y.cols;
  float* d = y.data;
  detail::for_each(detail::current_context(), y.rows * f,
                   [=] __device__(std::int64_t e) { d[e] += b[e % f]; });
}

void column_sum(ConstDenseView x, float beta, float* out) {
  const std::int64_t f = x.cols;
  if (f == 0) return;
  const float* s = x.data;
  detail::column_reduce(
      detail::current_context(), x.rows, f,
      [=] __device__(std::int64_t i, std::int64_t j) { return static_cast<double>(s[i * f + j]); },
      [=] __device__(std::int64_t j, double sum) {
        out[j] = beta == 0.0f ? static_cast<float>(sum) : static_cast<float>(beta * out[j] + sum);
      });
}

void relu_forward(ConstDenseView x, DenseView y) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "relu_forward: shapes differ");
  const float* s = x.data;
  float* d = y.data;
  detail::for_each(detail::current_context(), x.rows * x.cols,
                   [=] __device__(std::int64_t i) { d[i] = fmaxf(s[i], 0.0f); });
}

void relu_backward(ConstDenseView y, ConstDenseView gy, DenseView gx) {
  GNN_ASSERT(y.rows == gy.rows && y.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "relu_backward: shapes differ");
  const float* yy = y.data;
  const float* g = gy.data;
  float* d = gx.data;
  detail::for_each(detail::current_context(), y.rows * y.cols,
                   [=] __device__(std::int64_t i) { d[i] = yy[i] > 0.0f ? g[i] : 0.0f; });
}

void relu_dropout_backward(float p, ConstDenseView y, ConstDenseView gy, DenseView gx) {
  GNN_ASSERT(y.rows == gy.rows && y.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "relu_dropout_backward: shapes differ");
  GNN_CHECK_CONFIG(p >= 0.0f && p <= 1.0f, "dropout probability must be in [0, 1], got ", p);
  const float keep_scale = CounterRng::keep_scale(p);
  const float* yy = y.data;
  const float* g = gy.data;
  float* d = gx.data;
  detail::for_each(detail::current_context(), y.rows * y.cols, [=] __device__(std::int64_t i) {
    d[i] = yy[i] > 0.0f ? __fmul_rn(g[i], keep_scale) : 0.0f;
  });
}

void elu_forward(ConstDenseView x, DenseView y) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "elu_forward: shapes differ");
  const float* s = x.data;
  float* d = y.data;
  detail::for_each(detail::current_context(), x.rows * x.cols,
                   [=] __device__(std::int64_t i) { d[i] = s[i] > 0.0f ? s[i] : expm1f(s[i]); });
}

void elu_backward(ConstDenseView y, ConstDenseView gy, DenseView gx) {
  GNN_ASSERT(y.rows == gy.rows && y.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "elu_backward: shapes differ");
  const float* yy = y.data;
  const float* g = gy.data;
  float* d = gx.data;
  detail::for_each(detail::current_context(), y.rows * y.cols, [=] __device__(std::int64_t i) {
    d[i] = yy[i] > 0.0f ? g[i] : g[i] * (yy[i] + 1.0f);
  });
}

namespace {

/// The reference's dropout rule element by element: one thread per group of four columns (one
/// Philox block), u = the 24-bit uniform of (row id, column), kept iff u >= p, scaled by
/// 1/(1-p) computed on the host exactly as the reference does. Every step is exact or a single
/// IEEE multiply, so the GPU mask and values equal the CPU's bit for bit. With `relu`, each
/// value is taken through ReLU first (relu_dropout_forward).
void apply_dropout(const RngKey& key, const GlobalId* row_ids, float p, ConstDenseView x,
                   DenseView y, bool relu) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "dropout: shapes differ");
  GNN_CHECK_CONFIG(p >= 0.0f && p <= 1.0f, "dropout probability must be in [0, 1], got ", p);
  if (p == 0.0f) {
    if (relu) relu_forward(x, y);
    else if (x.data != y.data) copy(x, y);
    return;
  }
  const float keep_scale = CounterRng::keep_scale(p);
  const CounterRng rng(key);
  const std::int64_t f = x.cols, groups = (f + 3) / 4;
  const float* s = x.data;
  float* d = y.data;
  detail::for_each(detail::current_context(), x.rows * groups, [=] __device__(std::int64_t e) {
    const std::int64_t i = e / groups, g = e % groups;
    std::uint32_t w[4];
    rng.block(static_cast<std::uint64_t>(row_ids[i]), static_cast<std::uint64_t>(g), w);
    for (int t = 0; t < 4; ++t) {
      const std::int64_t j = g * 4 + t;
      if (j >= f) break;
      const float u = static_cast<float>(w[t] >> 8) * (1.0f / 16777216.0f);
      const float v = relu ? fmaxf(s[i * f + j], 0.0f) : s[i * f + j];  // as relu_forward
      d[i * f + j] = u >= p ? __fmul_rn(v, keep_scale) : 0.0f;
    }
  });
}

}  // namespace

void dropout_forward(const RngKey& key, const GlobalId* row_ids, float p, ConstDenseView x,
                     DenseView y) {
  apply_dropout(key, row_ids, p, x, y, false);
}

void dropout_backward(const RngKey& key, const GlobalId* row_ids, float p, ConstDenseView gy,
                      DenseView gx) {
  apply_dropout(key, row_ids, p, gy, gx, false);
}

void relu_dropout_forward(const RngKey& key, const GlobalId* row_ids, float p, ConstDenseView x,
                          DenseView y) {
  apply_dropout(key, row_ids, p, x, y, true);
}

void dropout_csr(const RngKey& key, const GlobalId* row_ids, float p, CsrView x, float* out_val) {
  GNN_CHECK_CONFIG(p >= 0.0f && p <= 1.0f, "dropout probability must be in [0, 1], got ", p);
  if (x.nnz == 0) return;
  const float keep_scale = CounterRng::keep_scale(p);
  const CounterRng rng(key);
  const std::int32_t* row_ptr = x.row_ptr;
  const LocalId* col = x.col;
  const float* val = x.val;
  const std::int64_t rows = x.rows;
  // One thread per stored entry; its row by binary search in row_ptr (the last row whose start is
  // <= k, which skips empty rows). Same mask and the same single multiply as the reference.
  detail::for_each(detail::current_context(), x.nnz, [=] __device__(std::int64_t k) {
    const float v = val ? val[k] : 1.0f;
    if (p == 0.0f) {
      out_val[k] = v;
      return;
    }
    std::int64_t lo = 0, hi = rows;  // invariant: row_ptr[lo] <= k < row_ptr[hi]
    while (hi - lo > 1) {
      const std::int64_t mid = (lo + hi) / 2;
      if (row_ptr[mid] <= k) lo = mid; else hi = mid;
    }
    const auto j = static_cast<std::uint64_t>(col[k]);
    std::uint32_t w[4];
    rng.block(static_cast<std::uint64_t>(row_ids[lo]), j >> 2, w);
    const float u = static_cast<float>(w[j & 3] >> 8) * (1.0f / 16777216.0f);
    out_val[k] = u >= p ? __fmul_rn(v, keep_scale) : 0.0f;
  });
}

}  // namespace halognn::kernels::cuda
