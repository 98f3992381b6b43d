// Products with sparsified features (CompactView): a row of x is `slots` (column, value) pairs
// whose values are shared by every row (the codebook), so x w adds `slots` rows of w per output
// row, and xᵀ g scatters each row of g into `slots` rows of the result.
//
// Entries whose value is zero (a zero codebook value: on bag-of-words data most of a chunk's
// "largest" are zeros; or a dropped entry) are skipped: they add nothing.
//
// compact_matmul: rows in parallel; a row's values (after its dropout mask) are built once.
// compact_matmul_transpose: rows in batches; the threads build a batch's values (each row's
// masks drawn once), then the output columns are cut into blocks, one per thread, and every thread
// walks the batch's rows in ascending order, so each output element receives its contributions in
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

/// The slots with a non-zero codebook value: the same for every row (a zero value stays zero
/// whatever its row or mask, so its entry is neither multiplied nor drawn).
std::vector<std::int32_t> nonzero_slots(const CompactView& x) {
  std::vector<std::int32_t> nz;
  for (std::int64_t s = 0; s < x.slots; ++s)
    if (x.codebook[s] != 0.0f) nz.push_back(static_cast<std::int32_t>(s));
  return nz;
}

/// One thread's buffers for the mask draws of a row.
struct DrawScratch {
  explicit DrawScratch(std::size_t n) : at(n), words(n) {}
  std::vector<std::uint64_t> at;  // the entries' columns: their positions in the row's stream
  std::vector<std::uint32_t> words;
};

/// The (dropped) values and columns of row i's entries in the slots nz, into val[t] and col[t]
/// for t < nz.size(). The masks come from one batched draw (CounterRng::words_at), the same words
/// as drawing them one by one with uniform(row id, column); the draws are keyed by (row, column),
/// so skipping the zero slots moves no other draw.
void row_entries(const CompactView& x, const std::vector<std::int32_t>& nz, std::int64_t i,
                 float* val, std::int64_t* col, DrawScratch& d) {
  const std::uint8_t* pos = x.pos + i * x.slots;
  const std::int64_t n = static_cast<std::int64_t>(nz.size());
  for (std::int64_t t = 0; t < n; ++t) {
    const std::int32_t s = nz[static_cast<std::size_t>(t)];
    col[t] = static_cast<std::int64_t>(x.slot_base[s]) + pos[s];
    val[t] = x.codebook[s];
  }
  if (x.drop_p == 0.0f || n == 0) return;
  const float keep_scale = x.drop_p < 1.0f ? 1.0f / (1.0f - x.drop_p) : 0.0f;
  for (std::int64_t t = 0; t < n; ++t) d.at[static_cast<std::size_t>(t)] = static_cast<std::uint64_t>(col[t]);
  CounterRng(x.drop_key).words_at(static_cast<std::uint64_t>(x.row_ids[i]), d.at.data(), n, d.words.data());
  for (std::int64_t t = 0; t < n; ++t)
    val[t] = CounterRng::to_uniform(d.words[static_cast<std::size_t>(t)]) >= x.drop_p ? val[t] * keep_scale : 0.0f;
}

}  // namespace

void compact_matmul(CompactView x, ConstDenseView w, float beta, DenseView y) {
  check_compact("compact_matmul", x);
  GNN_ASSERT(w.rows == x.cols && y.rows == x.rows && y.cols == w.cols,
             "compact_matmul: shapes do not match (x ", x.rows, "x", x.cols, ", w ", w.rows, "x",
             w.cols, ", y ", y.rows, "x", y.cols, ")");
  const std::int64_t f_dim = w.cols;
  const std::vector<std::int32_t> nz = nonzero_slots(x);
  const std::int64_t n = static_cast<std::int64_t>(nz.size());
#pragma omp parallel
  {
    std::vector<float> val(nz.size());
    std::vector<std::int64_t> col(nz.size());
    DrawScratch d(nz.size());
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < x.rows; ++i) {
      row_entries(x, nz, i, val.data(), col.data(), d);
      float* out = y.data + i * f_dim;
      if (beta == 0.0f) std::fill(out, out + f_dim, 0.0f);
      else for (std::int64_t f = 0; f < f_dim; ++f) out[f] = beta * out[f];
      for (std::int64_t t = 0; t < n; ++t) {
        const float v = val[static_cast<std::size_t>(t)];
        if (v == 0.0f) continue;  // a dropped entry
        const float* wr = w.data + col[static_cast<std::size_t>(t)] * f_dim;
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
  const std::vector<std::int32_t> nz = nonzero_slots(x);
  const std::int64_t n = static_cast<std::int64_t>(nz.size());
  const int threads = omp_get_max_threads();
  // Column blocks of at least 16 floats (one cache line of y per entry and block).
  const std::int64_t block = std::max<std::int64_t>(16, (f_dim + threads - 1) / threads);
  const std::int64_t blocks = (f_dim + block - 1) / block;
  // Rows in batches: the threads build a batch's entries (masks drawn once per row), then each
  // scatters them into its column block.
  constexpr std::int64_t kBatch = 128;
  std::vector<float> val(static_cast<std::size_t>(kBatch * n));
  std::vector<std::int64_t> col(static_cast<std::size_t>(kBatch * n));
#pragma omp parallel
  {
    DrawScratch d(nz.size());
    for (std::int64_t r0 = 0; r0 < x.rows; r0 += kBatch) {
      const std::int64_t r1 = std::min(x.rows, r0 + kBatch);
#pragma omp for schedule(static)
      for (std::int64_t i = r0; i < r1; ++i)
        row_entries(x, nz, i, val.data() + (i - r0) * n, col.data() + (i - r0) * n, d);
#pragma omp for schedule(static, 1)
      for (std::int64_t b = 0; b < blocks; ++b) {
        const std::int64_t f0 = b * block, f1 = std::min(f_dim, f0 + block);
        for (std::int64_t i = r0; i < r1; ++i) {
          const float* gr = g.data + i * f_dim;
          const float* vi = val.data() + (i - r0) * n;
          const std::int64_t* ci = col.data() + (i - r0) * n;
          for (std::int64_t t = 0; t < n; ++t) {
            const float v = vi[t];
            if (v == 0.0f) continue;
            float* out = y.data + ci[t] * f_dim;
#pragma omp simd
            for (std::int64_t f = f0; f < f1; ++f) out[f] = v * gr[f] + out[f];
          }
        }
      }
    }
  }
}

}  // namespace halognn::kernels::reference
