// Products with sparsified features (CompactView): a row of x is `slots` (column, value) pairs
// whose values are shared by every row (the codebook), so x w adds `slots` rows of w per output
// row, and xᵀ g scatters each row of g into `slots` rows of the result.
//
// Entries whose value is zero (a zero codebook value: on bag-of-words data most of a chunk's
// "largest" are zeros; or a dropped entry) are skipped: they add nothing.
//
// compact_matmul: rows in parallel; a row's values (after its dropout mask) are built once.
// compact_matmul_transpose: the output columns are cut into blocks, one per thread, and every
// thread walks all rows in ascending order, so each output element receives its contributions in
// ascending row order whatever the thread count (deterministic, and race-free without partials).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/kernels/reference/reference_kernels.hpp"

namespace halognn::kernels::reference {
namespace {

void check_compact(const char* what, const CompactView& x) {
  GNN_ASSERT(x.slots == 0 || (x.pos != nullptr && x.codebook != nullptr && x.slot_base != nullptr),
             what, ": null arrays");
  GNN_ASSERT(x.drop_p == 0.0f || x.row_ids != nullptr, what, ": dropout without row ids");
  GNN_CHECK_CONFIG(x.drop_p >= 0.0f && x.drop_p <= 1.0f,
                   "dropout probability must be in [0, 1], got ", x.drop_p);
}

/// The (dropped) values and columns of row i.
void row_entries(const CompactView& x, std::int64_t i, float* val, std::int64_t* col) {
  const std::uint8_t* pos = x.pos + i * x.slots;
  const float keep_scale = x.drop_p < 1.0f ? 1.0f / (1.0f - x.drop_p) : 0.0f;
  const CounterRng rng(x.drop_key);
  for (std::int64_t s = 0; s < x.slots; ++s) {
    col[s] = static_cast<std::int64_t>(x.slot_base[s]) + pos[s];
    float v = x.codebook[s];
    // A zero value stays zero whatever its mask, so its draw is skipped (the draws are keyed by
    // (row, column): skipping one moves no other).
    if (x.drop_p > 0.0f && v != 0.0f)
      v = rng.uniform(static_cast<std::uint64_t>(x.row_ids[i]), static_cast<std::uint64_t>(col[s])) >= x.drop_p
              ? v * keep_scale
              : 0.0f;
    val[s] = v;
  }
}

}  // namespace

void compact_matmul(CompactView x, ConstDenseView w, float beta, DenseView y) {
  check_compact("compact_matmul", x);
  GNN_ASSERT(w.rows == x.cols && y.rows == x.rows && y.cols == w.cols,
             "compact_matmul: shapes do not match (x ", x.rows, "x", x.cols, ", w ", w.rows, "x",
             w.cols, ", y ", y.rows, "x", y.cols, ")");
  const std::int64_t f_dim = w.cols;
#pragma omp parallel
  {
    std::vector<float> val(static_cast<std::size_t>(x.slots));
    std::vector<std::int64_t> col(static_cast<std::size_t>(x.slots));
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < x.rows; ++i) {
      row_entries(x, i, val.data(), col.data());
      float* out = y.data + i * f_dim;
      if (beta == 0.0f) std::fill(out, out + f_dim, 0.0f);
      else for (std::int64_t f = 0; f < f_dim; ++f) out[f] = beta * out[f];
      for (std::int64_t s = 0; s < x.slots; ++s) {
        const float v = val[static_cast<std::size_t>(s)];
        if (v == 0.0f) continue;  // zero codebook values (sparse data) and dropped entries
        const float* wr = w.data + col[static_cast<std::size_t>(s)] * f_dim;
#pragma omp simd
        for (std::int64_t f = 0; f < f_dim; ++f) out[f] = v * wr[f] + out[f];
      }
    }
  }
}

void compact_matmul_transpose(CompactView x, ConstDenseView g, float beta, DenseView y) {
  check_compact("compact_matmul_transpose", x);
  GNN_ASSERT(g.rows == x.rows && y.rows == x.cols && y.cols == g.cols,
             "compact_matmul_transpose: shapes do not match (x ", x.rows, "x", x.cols, ", g ",
             g.rows, "x", g.cols, ", y ", y.rows, "x", y.cols, ")");
  const std::int64_t f_dim = g.cols;
  if (beta == 0.0f) std::fill(y.data, y.data + y.rows * f_dim, 0.0f);
  else for (std::int64_t e = 0; e < y.rows * f_dim; ++e) y.data[e] = beta * y.data[e];
  if (f_dim == 0 || x.rows == 0) return;
  const int threads = omp_get_max_threads();
  // Column blocks of at least 16 floats (one cache line of y per entry and block).
  const std::int64_t block = std::max<std::int64_t>(16, (f_dim + threads - 1) / threads);
  const std::int64_t blocks = (f_dim + block - 1) / block;
#pragma omp parallel for schedule(static, 1)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t f0 = b * block, f1 = std::min(f_dim, f0 + block);
    std::vector<float> val(static_cast<std::size_t>(x.slots));
    std::vector<std::int64_t> col(static_cast<std::size_t>(x.slots));
    for (std::int64_t i = 0; i < x.rows; ++i) {
      row_entries(x, i, val.data(), col.data());
      const float* gr = g.data + i * f_dim;
      for (std::int64_t s = 0; s < x.slots; ++s) {
        const float v = val[static_cast<std::size_t>(s)];
        if (v == 0.0f) continue;
        float* out = y.data + col[static_cast<std::size_t>(s)] * f_dim;
#pragma omp simd
        for (std::int64_t f = f0; f < f1; ++f) out[f] = v * gr[f] + out[f];
      }
    }
  }
}

}  // namespace halognn::kernels::reference
