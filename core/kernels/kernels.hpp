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

/// Counts for accuracy: rows with mask[i] != 0 and labels[i] >= 0 (total), and among them the
/// rows whose arg-max logit (first on ties) equals the label (correct). Integer counts, so ranks
/// can sum them exactly. mask == nullptr selects every row.
struct AccuracyCounts {
  std::int64_t correct = 0, total = 0;
};

/// Micro-F1 counts for multi-label prediction (logit > 0 means "predicted positive") over the
/// rows with mask[i] != 0 (mask == nullptr: every row) and all columns.
struct MultilabelCounts {
  std::int64_t true_pos = 0, false_pos = 0, false_neg = 0;
};

struct AdamParams {
  float lr = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
  bool decoupled = false;  ///< AdamW-style decay when true, L2 added to the gradient otherwise
};

/// Splices a parenthesised parameter list into another one: GNN_KERNEL_PARAMS (int a, int b) is
/// "int a, int b".
#define GNN_KERNEL_PARAMS(...) __VA_ARGS__

#define GNN_KERNEL(R, name, params, args) R name(const Device& dev, GNN_KERNEL_PARAMS params);
#include "core/kernels/kernel_list.inc"
#undef GNN_KERNEL

/// The CSR (on `dev`, where x lives) of the non-zero entries of the dense x, columns ascending in
/// each row. Not a dispatched kernel: it runs once at start-up, on the host, staging row blocks of
/// about 64 MiB from a GPU, so it needs no dense host copy of x. Throws ConfigError when x has
/// 2^31 or more non-zeros (CSR offsets are 32-bit).
CsrMatrix dense_to_csr(const DevicePtr& dev, ConstDenseView x);

}  // namespace halognn::kernels
