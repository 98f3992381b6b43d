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

/// The CSR (on `dev`, where x lives) of the non-zero entries of the dense x, columns ascending in
/// each row. Not a dispatched kernel: it runs once at start-up, on the host, staging row blocks of
/// about 64 MiB from a GPU, so it needs no dense host copy of x. Throws ConfigError when x has
/// 2^31 or more non-zeros (CSR offsets are 32-bit).
CsrMatrix dense_to_csr(const DevicePtr& dev, ConstDenseView x);

// ---- row movement ---------------------------------------------------------------------------

/// dst[i] = src[idx[i]] for i < n (n = dst.rows); idx is a device array.
void gather_rows(const Device& dev, ConstDenseView src, const LocalId* idx, DenseView dst);

/// dst[idx[i]] += src[i] for i < src.rows; idx may repeat (accumulation is race-free, and each
/// destination receives its contributions in ascending i, so the result is deterministic).
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
/// Dropout of a matrix stored as CSR (rows = local nodes, e.g. sparse input features): entry k of
/// row i, at column j = x.col[k], gets out_val[k] = x.val[k] / (1-p) iff
/// CounterRng(key).uniform(row_ids[i], j) >= p, else 0. That is exactly dropout_forward's mask for
/// element (i, j), so the CSR of the dropped-out matrix equals dropout_forward of the dense one
/// (dropped entries stay stored, as explicit zeros). x.val == nullptr means every stored value is
/// 1. out_val: x.nnz floats on the device; it may alias x.val.
void dropout_csr(const Device& dev, const RngKey& key, const GlobalId* row_ids, float p, CsrView x,
                 float* out_val);

// ---- losses ---------------------------------------------------------------------------------

/// Softmax cross-entropy over rows with mask[i] != 0 (mask == nullptr: every row) and
/// labels[i] >= 0; a label >= logits.cols is an error. Writes
/// grad = scale * d(sum of row losses)/d(logits) (zero for other rows) and returns the sum of the
/// selected rows' losses (double). Numerically stable (max-shifted log-sum-exp).
double softmax_cross_entropy(const Device& dev, ConstDenseView logits, const std::int32_t* labels,
                             const std::uint8_t* mask, float scale, DenseView grad);

/// Sigmoid binary cross-entropy for multi-label targets (row-major 0/1, same shape as logits),
/// summed over selected rows (mask as above) and all columns; grad as above. Stable for large
/// |logit|.
double sigmoid_bce(const Device& dev, ConstDenseView logits, const std::uint8_t* targets,
                   const std::uint8_t* mask, float scale, DenseView grad);

/// Counts for accuracy: rows with mask[i] != 0 and labels[i] >= 0 (total), and among them the
/// rows whose arg-max logit (first on ties) equals the label (correct). Integer counts, so ranks
/// can sum them exactly. mask == nullptr selects every row.
struct AccuracyCounts {
  std::int64_t correct = 0, total = 0;
};
AccuracyCounts count_correct(const Device& dev, ConstDenseView logits, const std::int32_t* labels,
                             const std::uint8_t* mask);

/// Micro-F1 counts for multi-label prediction (logit > 0 means "predicted positive") over the
/// rows with mask[i] != 0 (mask == nullptr: every row) and all columns.
struct MultilabelCounts {
  std::int64_t true_pos = 0, false_pos = 0, false_neg = 0;
};
MultilabelCounts count_multilabel(const Device& dev, ConstDenseView logits,
                                  const std::uint8_t* targets, const std::uint8_t* mask);

// ---- graph attention (GAT) ------------------------------------------------------------------
// Layout: a row of z holds `heads` consecutive blocks of F = z.cols / heads features; per-head
// scalars (scores, attention coefficients) are row-major with `heads` columns.

/// s[v, h] = sum_f a[h, f] * z[v, h*F + f]  (s: z.rows x heads, overwritten; a: heads x F).
void head_dot(const Device& dev, ConstDenseView z, const float* a, std::int32_t heads, float* s);
/// The backward of head_dot: gz[v, h*F + f] += gs[v, h] * a[h, f] and
/// ga[h, f] += sum_v gs[v, h] * z[v, h*F + f] (both accumulate).
void head_dot_backward(const Device& dev, ConstDenseView z, const float* a, std::int32_t heads,
                       const float* gs, DenseView gz, float* ga);
/// y[v, f] = (1/heads) sum_h x[v, h*F + f]  (y: x.rows x F, overwritten).
void head_mean(const Device& dev, ConstDenseView x, std::int32_t heads, DenseView y);
/// gx[v, h*F + f] = gy[v, f] / heads (gx overwritten).
void head_mean_backward(const Device& dev, ConstDenseView gy, std::int32_t heads, DenseView gx);

/// Attention-weighted aggregation over the entries of a (rows x cols; the caller includes the
/// self-loops). For entry k = (v, u) and head h: e = LeakyReLU(s_dst[v, h] + s_src[u, h]),
/// alpha[k, h] = m_k exp(e) / sum over v's entries of m exp(e), where m_k = a.val[k] (a
/// multiplicity, > 0; 1 when val == nullptr), and y[v, h-block] = sum_k alpha[k, h] z[u, h-block].
/// alpha: nnz x heads (written, kept for the backward); y: rows x z.cols, overwritten (a row
/// without entries gets zeros). z: cols x (heads*F); s_dst: rows x heads; s_src: cols x heads.
void gat_aggregate(const Device& dev, CsrView a, ConstDenseView z, const float* s_dst,
                   const float* s_src, std::int32_t heads, float negative_slope, float* alpha,
                   DenseView y);
/// The backward of gat_aggregate for the upstream gradient gy (rows x z.cols). a_t is the
/// transpose of a's structure and t_to_a[k] the index in a of a_t's entry k (race-free column
/// sums). Overwrites gs_dst (rows x heads) = dL/ds_dst, gs_src (cols x heads) = dL/ds_src and
/// gz (cols x z.cols) = dL/dz through the aggregation; edge_grad (nnz x heads) is scratch.
void gat_aggregate_backward(const Device& dev, CsrView a, CsrView a_t, const std::int32_t* t_to_a,
                            ConstDenseView z, const float* s_dst, const float* s_src,
                            std::int32_t heads, float negative_slope, const float* alpha,
                            ConstDenseView gy, float* edge_grad, float* gs_dst, float* gs_src,
                            DenseView gz);

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
