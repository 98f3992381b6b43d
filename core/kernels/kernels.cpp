// Dispatch of every kernel on the device kind: cpu -> reference::, cuda -> cuda:: (which are
// NotCompiled stubs in a build without the CUDA backend, so callers need no #ifdef).
#include "core/kernels/kernels.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "core/kernels/cuda/cuda_kernels.hpp"
#include "core/kernels/reference/reference_kernels.hpp"

namespace halognn::kernels {

void gemm(const Device& dev, bool trans_a, bool trans_b, float alpha, ConstDenseView a,
          ConstDenseView b, float beta, DenseView y) {
  if (dev.kind() == DeviceKind::cuda) return cuda::gemm(trans_a, trans_b, alpha, a, b, beta, y);
  return reference::gemm(trans_a, trans_b, alpha, a, b, beta, y);
}

void spmm(const Device& dev, CsrView a, ConstDenseView x, float beta, DenseView y) {
  if (dev.kind() == DeviceKind::cuda) return cuda::spmm(a, x, beta, y);
  return reference::spmm(a, x, beta, y);
}

void spmm_transpose(const Device& dev, CsrView a, ConstDenseView x, float beta, DenseView y) {
  if (dev.kind() == DeviceKind::cuda) return cuda::spmm_transpose(a, x, beta, y);
  return reference::spmm_transpose(a, x, beta, y);
}

void gather_rows(const Device& dev, ConstDenseView src, const LocalId* idx, DenseView dst) {
  if (dev.kind() == DeviceKind::cuda) return cuda::gather_rows(src, idx, dst);
  return reference::gather_rows(src, idx, dst);
}

void scatter_add_rows(const Device& dev, ConstDenseView src, const LocalId* idx, DenseView dst) {
  if (dev.kind() == DeviceKind::cuda) return cuda::scatter_add_rows(src, idx, dst);
  return reference::scatter_add_rows(src, idx, dst);
}

void copy(const Device& dev, ConstDenseView src, DenseView dst) {
  if (dev.kind() == DeviceKind::cuda) return cuda::copy(src, dst);
  return reference::copy(src, dst);
}

void fill(const Device& dev, DenseView y, float value) {
  if (dev.kind() == DeviceKind::cuda) return cuda::fill(y, value);
  return reference::fill(y, value);
}

void axpy(const Device& dev, float alpha, ConstDenseView x, DenseView y) {
  if (dev.kind() == DeviceKind::cuda) return cuda::axpy(alpha, x, y);
  return reference::axpy(alpha, x, y);
}

void axpby(const Device& dev, std::int64_t n, float alpha, const float* x, float beta, float* y) {
  if (dev.kind() == DeviceKind::cuda) return cuda::axpby(n, alpha, x, beta, y);
  return reference::axpby(n, alpha, x, beta, y);
}

void scale_rows(const Device& dev, const float* s, DenseView y) {
  if (dev.kind() == DeviceKind::cuda) return cuda::scale_rows(s, y);
  return reference::scale_rows(s, y);
}

void add_row_vector(const Device& dev, const float* b, DenseView y) {
  if (dev.kind() == DeviceKind::cuda) return cuda::add_row_vector(b, y);
  return reference::add_row_vector(b, y);
}

void column_sum(const Device& dev, ConstDenseView x, float beta, float* out) {
  if (dev.kind() == DeviceKind::cuda) return cuda::column_sum(x, beta, out);
  return reference::column_sum(x, beta, out);
}

void relu_forward(const Device& dev, ConstDenseView x, DenseView y) {
  if (dev.kind() == DeviceKind::cuda) return cuda::relu_forward(x, y);
  return reference::relu_forward(x, y);
}

void relu_backward(const Device& dev, ConstDenseView y, ConstDenseView gy, DenseView gx) {
  if (dev.kind() == DeviceKind::cuda) return cuda::relu_backward(y, gy, gx);
  return reference::relu_backward(y, gy, gx);
}

void dropout_forward(const Device& dev, const RngKey& key, const GlobalId* row_ids, float p,
                     ConstDenseView x, DenseView y) {
  if (dev.kind() == DeviceKind::cuda) return cuda::dropout_forward(key, row_ids, p, x, y);
  return reference::dropout_forward(key, row_ids, p, x, y);
}

void dropout_backward(const Device& dev, const RngKey& key, const GlobalId* row_ids, float p,
                      ConstDenseView gy, DenseView gx) {
  if (dev.kind() == DeviceKind::cuda) return cuda::dropout_backward(key, row_ids, p, gy, gx);
  return reference::dropout_backward(key, row_ids, p, gy, gx);
}

void dropout_csr(const Device& dev, const RngKey& key, const GlobalId* row_ids, float p, CsrView x,
                 float* out_val) {
  if (dev.kind() == DeviceKind::cuda) return cuda::dropout_csr(key, row_ids, p, x, out_val);
  return reference::dropout_csr(key, row_ids, p, x, out_val);
}

double softmax_cross_entropy(const Device& dev, ConstDenseView logits, const std::int32_t* labels,
                             const std::uint8_t* mask, float scale, DenseView grad) {
  if (dev.kind() == DeviceKind::cuda)
    return cuda::softmax_cross_entropy(logits, labels, mask, scale, grad);
  return reference::softmax_cross_entropy(logits, labels, mask, scale, grad);
}

double sigmoid_bce(const Device& dev, ConstDenseView logits, const std::uint8_t* targets,
                   const std::uint8_t* mask, float scale, DenseView grad) {
  if (dev.kind() == DeviceKind::cuda) return cuda::sigmoid_bce(logits, targets, mask, scale, grad);
  return reference::sigmoid_bce(logits, targets, mask, scale, grad);
}

AccuracyCounts count_correct(const Device& dev, ConstDenseView logits, const std::int32_t* labels,
                             const std::uint8_t* mask) {
  if (dev.kind() == DeviceKind::cuda) return cuda::count_correct(logits, labels, mask);
  return reference::count_correct(logits, labels, mask);
}

MultilabelCounts count_multilabel(const Device& dev, ConstDenseView logits,
                                  const std::uint8_t* targets, const std::uint8_t* mask) {
  if (dev.kind() == DeviceKind::cuda) return cuda::count_multilabel(logits, targets, mask);
  return reference::count_multilabel(logits, targets, mask);
}

void adam_step(const Device& dev, std::int64_t n, float* w, const float* g, float* m, float* v,
               const AdamParams& p, std::int64_t step) {
  if (dev.kind() == DeviceKind::cuda) return cuda::adam_step(n, w, g, m, v, p, step);
  return reference::adam_step(n, w, g, m, v, p, step);
}

void sgd_step(const Device& dev, std::int64_t n, float* w, const float* g, float* mom, float lr,
              float momentum, float weight_decay) {
  if (dev.kind() == DeviceKind::cuda)
    return cuda::sgd_step(n, w, g, mom, lr, momentum, weight_decay);
  return reference::sgd_step(n, w, g, mom, lr, momentum, weight_decay);
}

void head_dot(const Device& dev, ConstDenseView z, const float* a, std::int32_t heads, float* s) {
  if (dev.kind() == DeviceKind::cuda) return cuda::head_dot(z, a, heads, s);
  return reference::head_dot(z, a, heads, s);
}

void head_dot_backward(const Device& dev, ConstDenseView z, const float* a, std::int32_t heads,
                       const float* gs, DenseView gz, float* ga) {
  if (dev.kind() == DeviceKind::cuda) return cuda::head_dot_backward(z, a, heads, gs, gz, ga);
  return reference::head_dot_backward(z, a, heads, gs, gz, ga);
}

void head_mean(const Device& dev, ConstDenseView x, std::int32_t heads, DenseView y) {
  if (dev.kind() == DeviceKind::cuda) return cuda::head_mean(x, heads, y);
  return reference::head_mean(x, heads, y);
}

void head_mean_backward(const Device& dev, ConstDenseView gy, std::int32_t heads, DenseView gx) {
  if (dev.kind() == DeviceKind::cuda) return cuda::head_mean_backward(gy, heads, gx);
  return reference::head_mean_backward(gy, heads, gx);
}

void gat_aggregate(const Device& dev, CsrView a, ConstDenseView z, const float* s_dst,
                   const float* s_src, std::int32_t heads, float negative_slope, float* alpha,
                   DenseView y) {
  if (dev.kind() == DeviceKind::cuda)
    return cuda::gat_aggregate(a, z, s_dst, s_src, heads, negative_slope, alpha, y);
  return reference::gat_aggregate(a, z, s_dst, s_src, heads, negative_slope, alpha, y);
}

void gat_aggregate_backward(const Device& dev, CsrView a, CsrView a_t, const std::int32_t* t_to_a,
                            ConstDenseView z, const float* s_dst, const float* s_src,
                            std::int32_t heads, float negative_slope, const float* alpha,
                            ConstDenseView gy, float* edge_grad, float* gs_dst, float* gs_src,
                            DenseView gz) {
  if (dev.kind() == DeviceKind::cuda)
    return cuda::gat_aggregate_backward(a, a_t, t_to_a, z, s_dst, s_src, heads, negative_slope,
                                        alpha, gy, edge_grad, gs_dst, gs_src, gz);
  return reference::gat_aggregate_backward(a, a_t, t_to_a, z, s_dst, s_src, heads, negative_slope,
                                           alpha, gy, edge_grad, gs_dst, gs_src, gz);
}

CsrMatrix dense_to_csr(const DevicePtr& dev, ConstDenseView x) {
  const std::int64_t rows = x.rows, cols = x.cols;
  std::vector<std::int32_t> row_ptr(static_cast<std::size_t>(rows) + 1, 0);
  std::vector<LocalId> col;
  std::vector<float> val;
  // A host x is read in place; a device x crosses in row blocks of about 64 MiB.
  const std::int64_t block =
      dev->is_host() ? std::max<std::int64_t>(rows, 1)
                     : std::max<std::int64_t>(1, (std::int64_t{64} << 20) /
                                                     std::max<std::int64_t>(cols * 4, 1));
  std::vector<float> stage;
  std::vector<std::int64_t> count;
  for (std::int64_t b0 = 0; b0 < rows; b0 += block) {
    const std::int64_t b1 = std::min(rows, b0 + block), n = b1 - b0;
    const float* base = x.row(b0);
    if (!dev->is_host()) {
      stage.resize(static_cast<std::size_t>(n * cols));
      dev->copy_to_host(stage.data(), base, stage.size() * sizeof(float));
      base = stage.data();
    }
    // Count per row in parallel, prefix-sum in 64 bits (to catch offset overflow), then fill.
    count.assign(static_cast<std::size_t>(n), 0);
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float* r = base + i * cols;
      std::int64_t c = 0;
      for (std::int64_t j = 0; j < cols; ++j) c += r[j] != 0.0f;
      count[static_cast<std::size_t>(i)] = c;
    }
    std::int64_t offset = row_ptr[static_cast<std::size_t>(b0)];
    for (std::int64_t i = 0; i < n; ++i) {
      offset += count[static_cast<std::size_t>(i)];
      GNN_CHECK_CONFIG(offset <= std::numeric_limits<std::int32_t>::max(),
                       "dense_to_csr: 2^31 or more non-zeros do not fit 32-bit CSR offsets");
      row_ptr[static_cast<std::size_t>(b0 + i + 1)] = static_cast<std::int32_t>(offset);
    }
    col.resize(static_cast<std::size_t>(offset));
    val.resize(static_cast<std::size_t>(offset));
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float* r = base + i * cols;
      std::int64_t k = row_ptr[static_cast<std::size_t>(b0 + i)];
      for (std::int64_t j = 0; j < cols; ++j) {
        if (r[j] == 0.0f) continue;
        col[static_cast<std::size_t>(k)] = static_cast<LocalId>(j);
        val[static_cast<std::size_t>(k)] = r[j];
        ++k;
      }
    }
  }
  return CsrMatrix(rows, cols, row_ptr, col, val, dev);
}

}  // namespace halognn::kernels
