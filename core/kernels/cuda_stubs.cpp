// Built only without the CUDA backend: every CUDA kernel exists and says it is not compiled in.
// (No CUDA device can be created in such a build, so these are reached only by a caller that
// builds a Device of kind cuda by hand.)
#include "core/error.hpp"
#include "core/kernels/cuda/cuda_kernels.hpp"

namespace halognn::kernels::cuda {

void gemm(bool, bool, float, ConstDenseView, ConstDenseView, float, DenseView) {
  throw NotCompiled("kernel gemm on CUDA");
}

void spmm(CsrView, ConstDenseView, float, DenseView) { throw NotCompiled("kernel spmm on CUDA"); }

void spmm_transpose(CsrView, ConstDenseView, float, DenseView) {
  throw NotCompiled("kernel spmm_transpose on CUDA");
}

void gather_rows(ConstDenseView, const LocalId*, DenseView) {
  throw NotCompiled("kernel gather_rows on CUDA");
}

void scatter_add_rows(ConstDenseView, const LocalId*, DenseView) {
  throw NotCompiled("kernel scatter_add_rows on CUDA");
}

void copy(ConstDenseView, DenseView) { throw NotCompiled("kernel copy on CUDA"); }

void fill(DenseView, float) { throw NotCompiled("kernel fill on CUDA"); }

void axpy(float, ConstDenseView, DenseView) { throw NotCompiled("kernel axpy on CUDA"); }

void axpby(std::int64_t, float, const float*, float, float*) {
  throw NotCompiled("kernel axpby on CUDA");
}

void scale_rows(const float*, DenseView) { throw NotCompiled("kernel scale_rows on CUDA"); }

void add_row_vector(const float*, DenseView) { throw NotCompiled("kernel add_row_vector on CUDA"); }

void column_sum(ConstDenseView, float, float*) { throw NotCompiled("kernel column_sum on CUDA"); }

void relu_forward(ConstDenseView, DenseView) { throw NotCompiled("kernel relu_forward on CUDA"); }

void relu_backward(ConstDenseView, ConstDenseView, DenseView) {
  throw NotCompiled("kernel relu_backward on CUDA");
}

void dropout_forward(const RngKey&, const GlobalId*, float, ConstDenseView, DenseView) {
  throw NotCompiled("kernel dropout_forward on CUDA");
}

void dropout_backward(const RngKey&, const GlobalId*, float, ConstDenseView, DenseView) {
  throw NotCompiled("kernel dropout_backward on CUDA");
}

void dropout_csr(const RngKey&, const GlobalId*, float, CsrView, float*) {
  throw NotCompiled("kernel dropout_csr on CUDA");
}

double softmax_cross_entropy(ConstDenseView, const std::int32_t*, const std::uint8_t*, float,
                             DenseView) {
  throw NotCompiled("kernel softmax_cross_entropy on CUDA");
}

double sigmoid_bce(ConstDenseView, const std::uint8_t*, const std::uint8_t*, float, DenseView) {
  throw NotCompiled("kernel sigmoid_bce on CUDA");
}

AccuracyCounts count_correct(ConstDenseView, const std::int32_t*, const std::uint8_t*) {
  throw NotCompiled("kernel count_correct on CUDA");
}

MultilabelCounts count_multilabel(ConstDenseView, const std::uint8_t*, const std::uint8_t*) {
  throw NotCompiled("kernel count_multilabel on CUDA");
}

void adam_step(std::int64_t, float*, const float*, float*, float*, const AdamParams&,
               std::int64_t) {
  throw NotCompiled("kernel adam_step on CUDA");
}

void sgd_step(std::int64_t, float*, const float*, float*, float, float, float) {
  throw NotCompiled("kernel sgd_step on CUDA");
}

void head_dot(ConstDenseView, const float*, std::int32_t, float*) {
  throw NotCompiled("kernel head_dot on CUDA");
}

void head_dot_backward(ConstDenseView, const float*, std::int32_t, const float*, DenseView,
                       float*) {
  throw NotCompiled("kernel head_dot_backward on CUDA");
}

void head_mean(ConstDenseView, std::int32_t, DenseView) {
  throw NotCompiled("kernel head_mean on CUDA");
}

void head_mean_backward(ConstDenseView, std::int32_t, DenseView) {
  throw NotCompiled("kernel head_mean_backward on CUDA");
}

void gat_aggregate(CsrView, ConstDenseView, const float*, const float*, std::int32_t, float, float*,
                   DenseView) {
  throw NotCompiled("kernel gat_aggregate on CUDA");
}

void gat_aggregate_backward(CsrView, CsrView, const std::int32_t*, ConstDenseView, const float*,
                            const float*, std::int32_t, float, const float*, ConstDenseView, float*,
                            float*, float*, DenseView) {
  throw NotCompiled("kernel gat_aggregate_backward on CUDA");
}

}  // namespace halognn::kernels::cuda
