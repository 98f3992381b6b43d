#pragma once
/// @file sparse_rows.hpp
/// The SpMM of sparse.cpp with its arguments exposed (per-entry weight strides, column offsets),
/// for the other CPU kernels that aggregate rows with per-entry weights (the GAT kernels).
/// Internal to core/kernels/reference.
#include <cstdint>
#include <vector>

#include "core/buffer.hpp"

namespace halognn::kernels::reference::detail {

/// y[i, f] = beta*y[i, f] (or 0) + sum over entries k of row i of w_k * x[a.col[k], f], then
/// + bias[f]: one multiply and one add per entry, entries in order. w_k = a.val[k * val_stride]
/// (1 when a.val is null). x and y are row-major with leading dimensions ldx and ldy; the feature
/// range is given per call. x's column f is at x[row * ldx + f - x_col0] (x_col0 > 0: x holds a
/// block of columns starting at x_col0).
struct SpmmArgs {
  CsrView a;
  const float* x = nullptr;
  std::int64_t ldx = 0;
  float beta = 0.0f;
  const float* bias = nullptr;
  float* y = nullptr;
  std::int64_t ldy = 0;
  std::int64_t val_stride = 1;
  std::int64_t x_col0 = 0;
};

/// y[:, 0:f] (+ beta y) (+ bias) = a x[:, 0:f] over all rows of a, threaded over row chunks, in
/// feature blocks when x's gathered columns exceed the cache budget, each block copied first when
/// gathers_from_copy says so. The same operations per element as the row kernel.
void spmm_columns(const SpmmArgs& s, std::int64_t f);

/// Whether gathering `width` of x's `ld` columns through `a` is better done from a dense copy of
/// them: when they are a strict part of x's rows and a has at least as many entries as x rows.
bool gathers_from_copy(const CsrView& a, std::int64_t width, std::int64_t ld);

/// `width` columns of the `rows` x `ld` array at x, copied into a dense rows x width array
/// (scratch::shared_floats of the calling thread: valid until its next use).
const float* copy_columns(const float* x, std::int64_t ld, std::int64_t rows, std::int64_t width);

/// Row boundaries of chunks of about `entries` stored entries (rows are never split): the unit of
/// dynamic scheduling over power-law rows.
std::vector<std::int64_t> row_chunks(const CsrView& a, std::int64_t entries);

}  // namespace halognn::kernels::reference::detail
