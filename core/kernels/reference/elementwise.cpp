// Elementwise kernels, reductions and dropout.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/reference/exp_math.hpp"
#include "core/kernels/reference/reference_kernels.hpp"
#include "core/kernels/reference/simd.hpp"

namespace halognn::kernels::reference {
void fill(DenseView y, float value) {
  const std::int64_t n = y.rows * y.cols;
  float* __restrict d = y.data;
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < n; ++i) d[i] = value;
}

void axpy(float alpha, ConstDenseView x, DenseView y) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "axpy: shapes differ");
  const std::int64_t n = x.rows * x.cols;
  const float* __restrict s = x.data;
  float* __restrict d = y.data;
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < n; ++i) d[i] += alpha * s[i];
}

void axpby(std::int64_t n, float alpha, const float* x, float beta, float* y) {
  const float* __restrict s = x;
  float* __restrict d = y;
  if (beta == 0.0f) {  // BLAS convention: previous contents are ignored, even NaN
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) d[i] = alpha * s[i];
    return;
  }
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < n; ++i) d[i] = alpha * s[i] + beta * d[i];
}

void scale_rows(const float* s, DenseView y) {
  const std::int64_t f = y.cols;
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < y.rows; ++i) {
    float* __restrict r = y.row(i);
    const float si = s[i];
#pragma omp simd
    for (std::int64_t j = 0; j < f; ++j) r[j] *= si;
  }
}

void add_row_vector(const float* b, DenseView y) {
  const std::int64_t f = y.cols;
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < y.rows; ++i) {
    float* __restrict r = y.row(i);
#pragma omp simd
    for (std::int64_t j = 0; j < f; ++j) r[j] += b[j];
  }
}

void column_sum(ConstDenseView x, float beta, float* out) {
  const std::int64_t f = x.cols;
  if (f == 0) return;
  // Thread-private partial sums in double, combined in thread order (deterministic for a fixed
  // thread count), then written once.
  const int threads = omp_get_max_threads();
  std::vector<double> partial(static_cast<std::size_t>(threads * f), 0.0);
#pragma omp parallel num_threads(threads)
  {
    double* acc = partial.data() + static_cast<std::int64_t>(omp_get_thread_num()) * f;
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < x.rows; ++i) {
      const float* r = x.row(i);
#pragma omp simd
      for (std::int64_t j = 0; j < f; ++j) acc[j] += r[j];
    }
  }
  for (std::int64_t j = 0; j < f; ++j) {
    double s = 0.0;
    for (int t = 0; t < threads; ++t) s += partial[static_cast<std::size_t>(t * f + j)];
    out[j] = beta == 0.0f ? static_cast<float>(s) : static_cast<float>(beta * out[j] + s);
  }
}

namespace {

#define HALOGNN_ISA_BODY "core/kernels/reference/elementwise_rows.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY

/// d = g * scale where y > 0, else +0 (relu_backward_rows of the running instruction set).
void relu_backward_scaled(const float* y, const float* g, float scale, float* d, std::int64_t n) {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::relu_backward_rows(y, g, scale, d, n);
    case CpuIsa::avx2: return isa_avx2::relu_backward_rows(y, g, scale, d, n);
    case CpuIsa::sse2: break;
  }
  isa_sse2::relu_backward_rows(y, g, scale, d, n);
}

}  // namespace

void relu_forward(ConstDenseView x, DenseView y) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "relu_forward: shapes differ");
  const std::int64_t n = x.rows * x.cols;
  // x may alias y. std::max's value (s < 0 ? 0 : s, NaN and -0 kept) written as a select: GCC
  // turned the reference std::max returns into a branch per element, which the signs of
  // activations mispredict half the time (docs/benchmarks.md, "SpMM gathering from a copy of
  // each feature block, GAT per head, ELU without libm").
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::relu_rows(x.data, y.data, n);
    case CpuIsa::avx2: return isa_avx2::relu_rows(x.data, y.data, n);
    case CpuIsa::sse2: break;
  }
  isa_sse2::relu_rows(x.data, y.data, n);
}

void relu_backward(ConstDenseView y, ConstDenseView gy, DenseView gx) {
  GNN_ASSERT(y.rows == gy.rows && y.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "relu_backward: shapes differ");
  // Without a branch (the signs of y are data, a branch on them mispredicts): a masked element
  // is +0. gy may alias gx.
  relu_backward_scaled(y.data, gy.data, 1.0f, gx.data, y.rows * y.cols);
}

void relu_dropout_backward(float p, ConstDenseView y, ConstDenseView gy, DenseView gx) {
  GNN_ASSERT(y.rows == gy.rows && y.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "relu_dropout_backward: shapes differ");
  GNN_CHECK_CONFIG(p >= 0.0f && p <= 1.0f, "dropout probability must be in [0, 1], got ", p);
  relu_backward_scaled(y.data, gy.data, CounterRng::keep_scale(p), gx.data, y.rows * y.cols);
}

void elu_forward(ConstDenseView x, DenseView y) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "elu_forward: shapes differ");
  const std::int64_t n = x.rows * x.cols;
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::elu_rows(x.data, y.data, n);
    case CpuIsa::avx2: return isa_avx2::elu_rows(x.data, y.data, n);
    case CpuIsa::sse2: break;
  }
  isa_sse2::elu_rows(x.data, y.data, n);
}

void elu_backward(ConstDenseView y, ConstDenseView gy, DenseView gx) {
  GNN_ASSERT(y.rows == gy.rows && y.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "elu_backward: shapes differ");
  const std::int64_t n = y.rows * y.cols;
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::elu_backward_rows(y.data, gy.data, gx.data, n);
    case CpuIsa::avx2: return isa_avx2::elu_backward_rows(y.data, gy.data, gx.data, n);
    case CpuIsa::sse2: break;
  }
  isa_sse2::elu_backward_rows(y.data, gy.data, gx.data, n);
}

namespace {

using DropoutRow = void (*)(const float*, const std::uint32_t*, std::int32_t, float, float*,
                           std::int64_t);

/// dropout_row<Relu> of the running instruction set.
template <bool Relu>
DropoutRow dropout_row_for_isa() {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return &isa_avx512::dropout_row<Relu>;
    case CpuIsa::avx2: return &isa_avx2::dropout_row<Relu>;
    case CpuIsa::sse2: break;
  }
  return &isa_sse2::dropout_row<Relu>;
}

/// y = x * mask / (1 - p) (with Relu: y = max(x, 0) * mask / (1 - p)), the mask drawn per
/// (row id, column). One Philox block yields the words for four consecutive columns, exactly what
/// CounterRng::uniform would return one at a time.
template <bool Relu>
void apply_dropout(const RngKey& key, const GlobalId* row_ids, float p, ConstDenseView x,
                   DenseView y) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "dropout: shapes differ");
  GNN_CHECK_CONFIG(p >= 0.0f && p <= 1.0f, "dropout probability must be in [0, 1], got ", p);
  const std::int64_t f = x.cols;
  if (p == 0.0f) {
    if (Relu) relu_forward(x, y);
    else if (x.data != y.data) copy(x, y);
    return;
  }
  const float keep_scale = CounterRng::keep_scale(p);
  // Kept iff uniform >= p: in integers, (w >> 8) >= CounterRng::keep_threshold(p).
  const std::int32_t threshold = CounterRng::keep_threshold(p);
  const CounterRng rng(key);
  const DropoutRow row = dropout_row_for_isa<Relu>();
  // A row's words are drawn block-parallel into a per-thread buffer (CounterRng::blocks
  // vectorises across blocks; one block at a time does not), then the mask is applied in a
  // second pass (dropout_row, per instruction set). Rows of at most 64 columns (fewer Philox
  // blocks than a vector has lanes) draw the words of a batch of rows at once
  // (CounterRng::item_blocks: the same words, every lane busy).
  const std::int64_t row_blocks = (f + 3) / 4;
  const std::int64_t batch_rows =
      f > 0 && f <= CounterRng::kItemRowMaxCols ? CounterRng::kItemBatchWords / (4 * row_blocks) : 1;
  const std::int64_t batches = (x.rows + batch_rows - 1) / batch_rows;
#pragma omp parallel
  {
    std::vector<std::uint32_t> words(static_cast<std::size_t>(4 * row_blocks * batch_rows));
#pragma omp for schedule(static)
    for (std::int64_t b = 0; b < batches; ++b) {
      const std::int64_t i0 = b * batch_rows, i1 = std::min(x.rows, i0 + batch_rows);
      if (batch_rows == 1)
        rng.blocks(static_cast<std::uint64_t>(row_ids[i0]), 0, row_blocks, words.data());
      else
        rng.item_blocks(row_ids + i0, i1 - i0, row_blocks, words.data());
      for (std::int64_t i = i0; i < i1; ++i)  // x may alias y (in place)
        row(x.row(i), words.data() + (i - i0) * 4 * row_blocks, threshold, keep_scale, y.row(i), f);
    }
  }
}

}  // namespace

void dropout_forward(const RngKey& key, const GlobalId* row_ids, float p, ConstDenseView x,
                     DenseView y) {
  apply_dropout<false>(key, row_ids, p, x, y);
}

void dropout_backward(const RngKey& key, const GlobalId* row_ids, float p, ConstDenseView gy,
                      DenseView gx) {
  apply_dropout<false>(key, row_ids, p, gy, gx);
}

void relu_dropout_forward(const RngKey& key, const GlobalId* row_ids, float p, ConstDenseView x,
                          DenseView y) {
  apply_dropout<true>(key, row_ids, p, x, y);
}

void dropout_csr(const RngKey& key, const GlobalId* row_ids, float p, CsrView x, float* out_val) {
  GNN_CHECK_CONFIG(p >= 0.0f && p <= 1.0f, "dropout probability must be in [0, 1], got ", p);
  const float keep_scale = CounterRng::keep_scale(p);
  const CounterRng rng(key);
  // Rows have very different lengths (bag-of-words documents): dynamic chunks.
#pragma omp parallel for schedule(dynamic, 64)
  for (std::int64_t i = 0; i < x.rows; ++i) {
    const auto item = static_cast<std::uint64_t>(row_ids[i]);
    std::uint32_t w[4];
    std::uint64_t have = ~std::uint64_t{0};  // the Philox block in w (columns 4b .. 4b+3)
    for (std::int32_t k = x.row_ptr[i]; k < x.row_ptr[i + 1]; ++k) {
      const float v = x.val ? x.val[k] : 1.0f;
      if (p == 0.0f) {
        out_val[k] = v;
        continue;
      }
      const auto j = static_cast<std::uint64_t>(x.col[k]);
      if ((j >> 2) != have) {
        have = j >> 2;
        rng.block(item, have, w);
      }
      const float u = static_cast<float>(w[j & 3] >> 8) * (1.0f / 16777216.0f);
      out_val[k] = u >= p ? v * keep_scale : 0.0f;
    }
  }
}

}  // namespace halognn::kernels::reference
