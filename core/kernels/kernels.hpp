#pragma once
/// @file kernels.hpp
/// Every numerical kernel training needs, declared once. Each takes the Device it runs on and
/// dispatches on its kind to the reference (CPU, OpenMP + Eigen) implementation in
/// kernels/reference/ or the CUDA one in kernels/cuda/ (stubs throwing NotCompiled when the CUDA
/// backend is not built). Model, comm and codec code calls only these on device data; host loops
/// over Matrix contents are for I/O and tests.
///
/// All dense views are row-major and contiguous. Unless stated otherwise, outputs must not alias
/// inputs. `beta` arguments follow BLAS: out = ... + beta * out, and beta == 0 ignores (possibly
/// uninitialised, even NaN) previous contents.
#include <cstdint>

#include "core/buffer.hpp"
#include "core/rng.hpp"
#include "core/types.hpp"

namespace halognn::kernels {

// ---- dense linear algebra -------------------------------------------------------------------

/// y = alpha * op(a) * op(b) + beta * y, op = transpose when the flag is set.
void gemm(const Device& dev, bool trans_a, bool trans_b, float alpha, ConstDenseView a,
          ConstDenseView b, float beta, DenseView y);

// ---- sparse ---------------------------------------------------------------------------------

/// y = a * x + beta * y, with a: rows x cols CSR (val == nullptr: all ones), x: cols x F,
/// y: rows x F.
void spmm(const Device& dev, CsrView a, ConstDenseView x, float beta, DenseView y);

/// y = a^T * x + beta * y, with a: rows x cols, x: rows x F, y: cols x F. (Training precomputes
/// the transposed CSR once and calls spmm; this kernel is the reference for that and for tests.)
void spmm_transpose(const Device& dev, CsrView a, ConstDenseView x, float beta, DenseView y);

// ---- row movement ---------------------------------------------------------------------------

/// dst[i] = src[idx[i]] for i < n (n = dst.rows); idx is a device array.
void gather_rows(const Device& dev, ConstDenseView src, const LocalId* idx, DenseView dst);

/// dst[idx[i]] += src[i] for i < src.rows; idx may repeat (accumulation is race-free).
void scatter_add_rows(const Device& dev, ConstDenseView src, const LocalId* idx, DenseView dst);

/// dst = src (same shape).
void copy(const Device& dev, ConstDenseView src, DenseView dst);

// ---- elementwise and reductions -------------------------------------------------------------

void fill(const Device& dev, DenseView y, float value);
/// y += alpha * x
void axpy(const Device& dev, float alpha, ConstDenseView x, DenseView y);
/// y = alpha * x + beta * y, elementwise, over n floats.
void axpby(const Device& dev, std::int64_t n, float alpha, const float* x, float beta, float* y);
/// y[i, :] *= s[i]
void scale_rows(const Device& dev, const float* s, DenseView y);
/// y[i, j] += b[j]
void add_row_vector(const Device& dev, const float* b, DenseView y);
/// out[j] = beta * out[j] + sum_i x[i, j]
void column_sum(const Device& dev, ConstDenseView x, float beta, float* out);
/// y = max(x, 0) (y may alias x).
void relu_forward(const Device& dev, ConstDenseView x, DenseView y);
/// gx = gy where y > 0, else 0 (gx may alias gy).
void relu_backward(const Device& dev, ConstDenseView y, ConstDenseView gy, DenseView gx);

/// Inverted dropout with masks from the counter RNG: element (i, j) is kept iff
/// CounterRng(key).uniform(row_ids[i], j) >= p, and kept values are scaled by 1/(1-p).
/// row_ids are global node ids, so a row's mask is the same on every rank. y may alias x.
void dropout_forward(const Device& dev, const RngKey& key, const GlobalId* row_ids, float p,
                     ConstDenseView x, DenseView y);
/// The same mask applied to gradients: gx = gy * mask / (1-p). gx may alias gy.
void dropout_backward(const Device& dev, const RngKey& key, const GlobalId* row_ids, float p,
                      ConstDenseView gy, DenseView gx);

// ---- losses ---------------------------------------------------------------------------------

/// Softmax cross-entropy over rows with mask[i] != 0 and labels[i] >= 0. Writes
/// grad = scale * d(sum of row losses)/d(logits) (zero for other rows) and returns the sum of the
/// selected rows' losses (double). Numerically stable (max-shifted log-sum-exp).
double softmax_cross_entropy(const Device& dev, ConstDenseView logits, const std::int32_t* labels,
                             const std::uint8_t* mask, float scale, DenseView grad);

/// Sigmoid binary cross-entropy for multi-label targets (row-major 0/1, same shape as logits),
/// summed over selected rows and all columns; grad as above. Stable for large |logit|.
double sigmoid_bce(const Device& dev, ConstDenseView logits, const std::uint8_t* targets,
                   const std::uint8_t* mask, float scale, DenseView grad);

// ---- optimiser ------------------------------------------------------------------------------

struct AdamParams {
  float lr = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
  bool decoupled = false;  ///< AdamW-style decay when true, L2 added to the gradient otherwise
};
/// One Adam step on n parameters (step counts from 1).
void adam_step(const Device& dev, std::int64_t n, float* w, const float* g, float* m, float* v,
               const AdamParams& p, std::int64_t step);
/// w -= lr * (g + weight_decay * w), with optional momentum buffer (nullptr: none).
void sgd_step(const Device& dev, std::int64_t n, float* w, const float* g, float* mom, float lr,
              float momentum, float weight_decay);

}  // namespace halognn::kernels
