// Products with sparsified features (CompactView): a row of x is `slots` (column, value) pairs
// whose values are shared by every row (the codebook), so x w adds `slots` rows of w per output
// row, and xᵀ g scatters each row of g into `slots` rows of the result.
//
// Entries whose value is zero (a zero codebook value: on bag-of-words data most of a chunk's
// "largest" are zeros; or a dropped entry) are skipped: they add nothing. A row's kept entries
// are gathered first (values after dropout, columns), then multiplied without a branch.
//
// compact_matmul: rows in parallel; a row's values (after its dropout mask) are built once.
// compact_matmul_transpose: rows in batches; the threads build a batch's values (each row's
// masks drawn once), then the output columns are cut into blocks, one per thread, and every thread
// walks the batch's rows in ascending order, so each output element receives its contributions in
// ascending row order whatever the thread count (deterministic, and race-free without partials).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/reference/reference_kernels.hpp"
#include "core/kernels/reference/simd.hpp"

namespace halognn::kernels::reference {
namespace {

#define HALOGNN_ISA_BODY "core/kernels/reference/compact_rows.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY

using GatherFn = void (*)(const float*, const std::uint64_t*, std::int64_t, const float*,
                          std::int64_t, std::int64_t, float*);
using ScatterFn = void (*)(const float*, const std::uint64_t*, std::int64_t, const float*,
                           std::int64_t, std::int64_t, float*, std::int64_t);

GatherFn gather_fn() {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::gather_rows;
    case CpuIsa::avx2: return isa_avx2::gather_rows;
    case CpuIsa::sse2: break;
  }
  return isa_sse2::gather_rows;
}

ScatterFn scatter_fn() {
  switch (cpu_isa()) {
    case CpuIsa::avx512: return isa_avx512::scatter_row;
    case CpuIsa::avx2: return isa_avx2::scatter_row;
    case CpuIsa::sse2: break;
  }
  return isa_sse2::scatter_row;
}

void check_compact(const char* what, const CompactView& x) {
  GNN_ASSERT(x.slots == 0 || (x.pos != nullptr && x.codebook != nullptr && x.slot_base != nullptr),
             what, ": null arrays");
  GNN_ASSERT(x.drop_p == 0.0f || x.row_ids != nullptr, what, ": dropout without row ids");
  GNN_CHECK_CONFIG(x.drop_p >= 0.0f && x.drop_p <= 1.0f,
                   "dropout probability must be in [0, 1], got ", x.drop_p);
}

/// The slots with a non-zero codebook value, as runs of consecutive slots: the same for every row
/// (a zero value stays zero whatever its row or mask, so its entry is neither multiplied nor
/// drawn). In a chunk the values fall with the rank of the entry, so on non-negative data each
/// chunk's non-zero slots are one run, its first ones.
struct NonZeroSlots {
  explicit NonZeroSlots(const CompactView& x) {
    for (std::int64_t s = 0; s < x.slots; ++s) {
      if (x.codebook[s] == 0.0f) continue;
      if (!begin.empty() && begin.back() + len.back() == s) ++len.back();
      else begin.push_back(s), len.push_back(1);
      ++count;
    }
  }
  std::vector<std::int64_t> begin, len;
  std::int64_t count = 0;
};

/// The kept entries of row i in the slots nz: their values (after dropout) into val and their
/// columns into col, in slot order; returns how many (nz.count without dropout). The masks come
/// from one batched draw (CounterRng::words_at), the same words as drawing them one by one with
/// uniform(row id, column); the draws are keyed by (row, column), so skipping the zero slots moves
/// no other draw.
std::int64_t row_entries(const CompactView& x, const NonZeroSlots& nz, std::int64_t i, float* val,
                         std::uint64_t* col, std::uint32_t* words) {
  const std::uint8_t* pos = x.pos + i * x.slots;
  std::int64_t t = 0;
  for (std::size_t r = 0; r < nz.begin.size(); ++r) {
    const std::int64_t s0 = nz.begin[r], n = nz.len[r];
    for (std::int64_t j = 0; j < n; ++j) {
      col[t + j] = static_cast<std::uint64_t>(x.slot_base[s0 + j]) + pos[s0 + j];
      val[t + j] = x.codebook[s0 + j];
    }
    t += n;
  }
  if (x.drop_p == 0.0f || t == 0) return t;
  const float p = x.drop_p, keep_scale = CounterRng::keep_scale(p);
  CounterRng(x.drop_key).words_at(static_cast<std::uint64_t>(x.row_ids[i]), col, t, words);
  // Kept iff uniform(row id, column) >= p, tested as dropout_forward does, in integers
  // (CounterRng::keep_threshold). The kept entries are moved to the front without a branch (a
  // branch on random bits mispredicts every other entry): every entry is written, the count
  // advances by its mask bit.
  const std::int32_t threshold = CounterRng::keep_threshold(p);
  std::int64_t kept = 0;
  for (std::int64_t e = 0; e < t; ++e) {
    val[kept] = val[e] * keep_scale;
    col[kept] = col[e];
    kept += static_cast<std::int32_t>(words[e] >> 8) >= threshold;
  }
  return kept;
}

}  // namespace

void compact_matmul(CompactView x, ConstDenseView w, float beta, DenseView y) {
  check_compact("compact_matmul", x);
  GNN_ASSERT(w.rows == x.cols && y.rows == x.rows && y.cols == w.cols,
             "compact_matmul: shapes do not match (x ", x.rows, "x", x.cols, ", w ", w.rows, "x",
             w.cols, ", y ", y.rows, "x", y.cols, ")");
  const std::int64_t f_dim = w.cols;
  const NonZeroSlots nz(x);
  const std::int64_t n = nz.count;
  const GatherFn gather = gather_fn();
#pragma omp parallel
  {
    std::vector<float> val(static_cast<std::size_t>(n));
    std::vector<std::uint64_t> col(static_cast<std::size_t>(n));
    std::vector<std::uint32_t> words(static_cast<std::size_t>(n));
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < x.rows; ++i) {
      const std::int64_t kept = row_entries(x, nz, i, val.data(), col.data(), words.data());
      float* out = y.data + i * f_dim;
      if (beta == 0.0f) std::fill(out, out + f_dim, 0.0f);
      else for (std::int64_t f = 0; f < f_dim; ++f) out[f] = beta * out[f];
      gather(val.data(), col.data(), kept, w.data, f_dim, f_dim, out);
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
  const NonZeroSlots nz(x);
  const std::int64_t n = nz.count;
  const int threads = omp_get_max_threads();
  // Column blocks of at least 16 floats (one cache line of y per entry and block).
  const std::int64_t block = std::max<std::int64_t>(16, (f_dim + threads - 1) / threads);
  const std::int64_t blocks = (f_dim + block - 1) / block;
  // Rows in batches: the threads build a batch's entries (masks drawn once per row), then each
  // scatters them into its column block.
  constexpr std::int64_t kBatch = 128;
  const ScatterFn scatter = scatter_fn();
  std::vector<float> val(static_cast<std::size_t>(kBatch * n));
  std::vector<std::uint64_t> col(static_cast<std::size_t>(kBatch * n));
  std::vector<std::int64_t> kept(static_cast<std::size_t>(kBatch));
#pragma omp parallel
  {
    std::vector<std::uint32_t> words(static_cast<std::size_t>(n));
    for (std::int64_t r0 = 0; r0 < x.rows; r0 += kBatch) {
      const std::int64_t r1 = std::min(x.rows, r0 + kBatch);
#pragma omp for schedule(static)
      for (std::int64_t i = r0; i < r1; ++i)
        kept[static_cast<std::size_t>(i - r0)] =
            row_entries(x, nz, i, val.data() + (i - r0) * n, col.data() + (i - r0) * n, words.data());
#pragma omp for schedule(static, 1)
      for (std::int64_t b = 0; b < blocks; ++b) {
        const std::int64_t f0 = b * block, f1 = std::min(f_dim, f0 + block);
        for (std::int64_t i = r0; i < r1; ++i)
          scatter(val.data() + (i - r0) * n, col.data() + (i - r0) * n,
                  kept[static_cast<std::size_t>(i - r0)], g.data + i * f_dim, f0, f1, y.data, f_dim);
      }
    }
  }
}

}  // namespace halognn::kernels::reference
