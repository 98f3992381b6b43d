// Dispatch of every kernel on the device kind: cpu -> reference::, cuda -> cuda:: (which are
// NotCompiled stubs in a build without the CUDA backend, so callers need no #ifdef).
#include "core/kernels/kernels.hpp"

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

}  // namespace halognn::kernels
