#pragma once
/// @file cuda_kernels.hpp
/// The CUDA implementations of every kernel in kernels.hpp, with the same signatures minus the
/// Device; all pointers are device pointers of the current CUDA device. kernels.cpp dispatches here
/// when the device kind is cuda. Without the CUDA backend, cuda_stubs.cpp defines each of them to
/// throw NotCompiled. This header is Eigen-free so that .cu files can include it.
#include <cstdint>

#include "core/kernels/kernels.hpp"

namespace halognn::kernels::cuda {

void gemm(bool trans_a, bool trans_b, float alpha, ConstDenseView a, ConstDenseView b, float beta,
          DenseView y);
void spmm(CsrView a, ConstDenseView x, float beta, DenseView y);
void spmm_transpose(CsrView a, ConstDenseView x, float beta, DenseView y);

void gather_rows(ConstDenseView src, const LocalId* idx, DenseView dst);
void scatter_add_rows(ConstDenseView src, const LocalId* idx, DenseView dst);
void copy(ConstDenseView src, DenseView dst);

void fill(DenseView y, float value);
void axpy(float alpha, ConstDenseView x, DenseView y);
void axpby(std::int64_t n, float alpha, const float* x, float beta, float* y);
void scale_rows(const float* s, DenseView y);
void add_row_vector(const float* b, DenseView y);
void column_sum(ConstDenseView x, float beta, float* out);
void relu_forward(ConstDenseView x, DenseView y);
void relu_backward(ConstDenseView y, ConstDenseView gy, DenseView gx);
void dropout_forward(const RngKey& key, const GlobalId* row_ids, float p, ConstDenseView x,
                     DenseView y);
void dropout_backward(const RngKey& key, const GlobalId* row_ids, float p, ConstDenseView gy,
                      DenseView gx);
void dropout_csr(const RngKey& key, const GlobalId* row_ids, float p, CsrView x, float* out_val);

double softmax_cross_entropy(ConstDenseView logits, const std::int32_t* labels,
                             const std::uint8_t* mask, float scale, DenseView grad);
double sigmoid_bce(ConstDenseView logits, const std::uint8_t* targets, const std::uint8_t* mask,
                   float scale, DenseView grad);
AccuracyCounts count_correct(ConstDenseView logits, const std::int32_t* labels,
                             const std::uint8_t* mask);
MultilabelCounts count_multilabel(ConstDenseView logits, const std::uint8_t* targets,
                                  const std::uint8_t* mask);

void adam_step(std::int64_t n, float* w, const float* g, float* m, float* v, const AdamParams& p,
               std::int64_t step);
void sgd_step(std::int64_t n, float* w, const float* g, float* mom, float lr, float momentum,
              float weight_decay);

void head_dot(ConstDenseView z, const float* a, std::int32_t heads, float* s);
void head_dot_backward(ConstDenseView z, const float* a, std::int32_t heads, const float* gs,
                       DenseView gz, float* ga);
void head_mean(ConstDenseView x, std::int32_t heads, DenseView y);
void head_mean_backward(ConstDenseView gy, std::int32_t heads, DenseView gx);
void gat_aggregate(CsrView a, ConstDenseView z, const float* s_dst, const float* s_src,
                   std::int32_t heads, float negative_slope, float* alpha, DenseView y);
void gat_aggregate_backward(CsrView a, CsrView a_t, const std::int32_t* t_to_a, ConstDenseView z,
                            const float* s_dst, const float* s_src, std::int32_t heads,
                            float negative_slope, const float* alpha, ConstDenseView gy,
                            float* edge_grad, float* gs_dst, float* gs_src, DenseView gz);

}  // namespace halognn::kernels::cuda
