// GELU and layer normalisation (the residual architecture's elementwise and per-row kernels).
// GELU runs per instruction set (gelu_rows.inc, normal_math.hpp's Φ: no libm call; libm's erff
// per element was a fifth of a residual GAT run); the layer norm's arithmetic is
// core/kernels/norm_rows.hpp's, shared with the CUDA kernels, its rows compiled per instruction
// set too (layer_norm_rows.inc), so that its lane sums vectorise.
#include <omp.h>

#include <vector>

#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/norm_rows.hpp"
#include "core/kernels/reference/normal_math.hpp"
#include "core/kernels/reference/reference_kernels.hpp"
#include "core/kernels/reference/simd.hpp"

namespace halognn::kernels::reference {
namespace {

#define HALOGNN_ISA_BODY "core/kernels/reference/gelu_rows.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY
#define HALOGNN_ISA_BODY "core/kernels/reference/layer_norm_rows.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY

using LayerNormRowFn = void (*)(ConstDenseView, const float*, const float*, float, DenseView, float*, std::int64_t);

LayerNormRowFn layer_norm_row_fn() {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::layer_norm_row_at;
    case CpuIsa::avx2: return isa_avx2::layer_norm_row_at;
    case CpuIsa::sse2: break;
  }
  return isa_sse2::layer_norm_row_at;
}

using LayerNormRowBackwardFn = void (*)(ConstDenseView, const float*, const float*, ConstDenseView, float, DenseView,
                                        double*, double*, std::int64_t);

LayerNormRowBackwardFn layer_norm_row_backward_fn() {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::layer_norm_row_backward_at;
    case CpuIsa::avx2: return isa_avx2::layer_norm_row_backward_at;
    case CpuIsa::sse2: break;
  }
  return isa_sse2::layer_norm_row_backward_at;
}

}  // namespace

void gelu_forward(ConstDenseView x, DenseView y) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "gelu_forward: shapes differ");
  GNN_ASSERT(x.data != y.data || x.rows * x.cols == 0, "gelu_forward: y aliases x");
  const std::int64_t n = x.rows * x.cols;
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::gelu_rows(x.data, y.data, n);
    case CpuIsa::avx2: return isa_avx2::gelu_rows(x.data, y.data, n);
    case CpuIsa::sse2: break;
  }
  isa_sse2::gelu_rows(x.data, y.data, n);
}

void gelu_backward(ConstDenseView x, ConstDenseView gy, DenseView gx) {
  GNN_ASSERT(x.rows == gy.rows && x.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "gelu_backward: shapes differ");
  const std::int64_t n = x.rows * x.cols;
  switch (cpu_isa()) {  // gy may alias gx
    case CpuIsa::avx512: return isa_avx512::gelu_backward_rows(x.data, gy.data, gx.data, n);
    case CpuIsa::avx2: return isa_avx2::gelu_backward_rows(x.data, gy.data, gx.data, n);
    case CpuIsa::sse2: break;
  }
  isa_sse2::gelu_backward_rows(x.data, gy.data, gx.data, n);
}

void layer_norm_forward(ConstDenseView x, const float* gamma, const float* beta, float eps,
                        DenseView y, float* stats) {
  GNN_ASSERT(x.rows == y.rows && x.cols == y.cols, "layer_norm_forward: shapes differ");
  GNN_ASSERT(x.data != y.data || x.rows * x.cols == 0, "layer_norm_forward: y aliases x");
  if (x.cols == 0) return;
  const LayerNormRowFn row = layer_norm_row_fn();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < x.rows; ++i) row(x, gamma, beta, eps, y, stats, i);
}

void layer_norm_backward(ConstDenseView x, const float* stats, const float* gamma,
                         ConstDenseView gy, float beta, DenseView gx, float* ggamma, float* gbeta) {
  GNN_ASSERT(x.rows == gy.rows && x.cols == gy.cols && gx.rows == gy.rows && gx.cols == gy.cols,
             "layer_norm_backward: shapes differ");
  const std::int64_t f = x.cols;
  if (f == 0) return;
  // The parameter gradients: thread-private partial sums in double, combined in thread order
  // (deterministic for a fixed thread count), as column_sum does. Each row's are taken before
  // its input gradient is written (gx may alias gy).
  const LayerNormRowBackwardFn row = layer_norm_row_backward_fn();
  const int threads = omp_get_max_threads();
  std::vector<double> partial(static_cast<std::size_t>(2 * threads * f), 0.0);
#pragma omp parallel num_threads(threads)
  {
    double* acc_gamma = partial.data() + static_cast<std::int64_t>(omp_get_thread_num()) * 2 * f;
    double* acc_beta = acc_gamma + f;
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < x.rows; ++i) row(x, stats, gamma, gy, beta, gx, acc_gamma, acc_beta, i);
  }
  for (std::int64_t j = 0; j < f; ++j) {
    double sg = 0.0, sb = 0.0;
    for (int t = 0; t < threads; ++t) {
      sg += partial[static_cast<std::size_t>(2 * t * f + j)];
      sb += partial[static_cast<std::size_t>(2 * t * f + f + j)];
    }
    ggamma[j] += static_cast<float>(sg);
    gbeta[j] += static_cast<float>(sb);
  }
}

}  // namespace halognn::kernels::reference
