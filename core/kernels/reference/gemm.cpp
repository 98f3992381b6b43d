// Dense products on the CPU: gemm, linear (y = a1 w1 + a2 w2 + b) and linear_grad, all through
// one packed, register-blocked GEMM compiled per instruction set (simd.hpp, cpu_isa.hpp).
//
// Scheme (Goto/BLIS): op(B) is packed into kc x NR column panels and op(A) into MR x kc row
// panels (k-major, zero-padded), and an MR x NR micro-kernel (gemm_tile.inc) accumulates a C tile
// in registers over one depth block of kc <= kKc, then folds it into C:
//   first block of the first term:  c = alpha*acc (+ beta*c when beta != 0) (+ bias[j])
//   every later block:              c = c + alpha*acc
// kKc is the same constant for every instruction set, MR/NR only decide which elements share a
// register, and the blocks are visited in order, so each output element gets the same operations
// in the same order on every CPU and for every thread count; only the fused multiply-add of the
// fast numerics mode differs from the portable one (cpu_isa.hpp). A full panel that already
// lies in memory with a constant stride is read in place instead of packed (the same values in
// the same order): a full MR-row panel of op(A), transposed (k-major) or not (row by row), and,
// in the deep schedule, a full NR-column panel of an untransposed B.
//
// Two schedules, chosen by the size of op(B):
// - op(B) small (the layers' x W, gy Wᵀ with W at most a few thousand rows): op(B) is packed
//   once, and the threads take MR-row panels of C (dynamic chunks: robust on a loaded machine);
// - depth large (weight gradients xᵀ gy summed over 10^5 rows): C is cut into one rectangle per
//   thread, and each thread walks the depth blocks in order, packing what it cannot read in
//   place of its slices of A and B.
#include <omp.h>

#include <algorithm>
#include <cstdlib>

#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/reference/reference_kernels.hpp"
#include "core/kernels/reference/scratch.hpp"
#include "core/kernels/reference/simd.hpp"

namespace halognn::kernels::reference {
namespace {

/// Depth block of every instruction set (part of the numerics: see the file comment).
constexpr std::int64_t kKc = 256;
/// op(B) is packed whole when it takes at most this many floats (4 MiB).
constexpr std::int64_t kMaxPackedB = std::int64_t{1} << 20;
/// Depths ahead whose in-place operand rows a tile requests (gemm_tile.inc).
constexpr std::int64_t kTilePrefetch = 8;
/// Products under this many multiply-adds run on the calling thread.
constexpr double kMinParallelWork = 1 << 20;

/// A row-major matrix used as op(X) = X or Xᵀ.
struct Operand {
  const float* data = nullptr;
  std::int64_t rows = 0, cols = 0;  ///< of the stored matrix
  bool trans = false;
  /// Element (i, k) of op(X).
  float at(std::int64_t i, std::int64_t k) const {
    return trans ? data[k * cols + i] : data[i * cols + k];
  }
};

/// One product op(A) op(B) of depth k.
struct Term {
  Operand a, b;
  std::int64_t k = 0;
};

/// C (m x n, leading dimension ldc) = alpha * sum_t op(A_t) op(B_t) + beta * C + 1 biasᵀ, and,
/// when b_colsum is set, b_colsum[j] += sum_k op(B_0)[k][j] (in double, ascending k).
struct Problem {
  std::int64_t m = 0, n = 0;
  Term terms[2];
  int num_terms = 1;
  float alpha = 1.0f, beta = 0.0f;
  const float* bias = nullptr;
  double* b_colsum = nullptr;
  float* c = nullptr;
  std::int64_t ldc = 0;
};

/// How a C tile is folded in (see the file comment).
struct TileUpdate {
  float alpha = 1.0f, beta = 0.0f;
  bool first = true;
  const float* bias = nullptr;  ///< at the tile's first column, or null
};

/// The scalar fold of a partial tile (same operations as the vector fold in gemm_tile.inc).
void update_edge_tile(const float* tile, int nr, const TileUpdate& up, float* c, std::int64_t ldc,
                      int rows, int cols) {
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      float* cp = c + i * ldc + j;
      float t = up.alpha * tile[i * nr + j];
      if (up.first) {
        if (up.beta != 0.0f) t = t + up.beta * *cp;
        if (up.bias) t = t + up.bias[j];
      } else {
        t = *cp + t;
      }
      *cp = t;
    }
  }
}

using TileFn = void (*)(std::int64_t kc, const float* ap, std::int64_t lda, const float* bp,
                        std::int64_t ldb, const TileUpdate& up, float* c, std::int64_t ldc,
                        int rows, int cols);
/// colsum[j] += src[k * ld + j] for k < kc (ascending), j < cols (gemm_tile.inc).
using ColumnSumFn = void (*)(const float* src, std::int64_t ld, int cols, std::int64_t kc,
                             double* colsum);

/// A micro-kernel and its tile shape, with the column sums of the same instruction set.
struct TileKernel {
  int mr = 0, nr = 0;
  TileFn fn = nullptr;
  TileFn direct = nullptr;  ///< the same tile reading a full panel of untransposed A in place
  ColumnSumFn sums = nullptr;
};

#define HALOGNN_ISA_BODY "core/kernels/reference/gemm_tile.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY

/// Where a tile reads a panel of op(A) from, and with which micro-kernel.
struct APanel {
  const float* data = nullptr;
  std::int64_t ld = 0;
  TileFn fn = nullptr;
};

/// Wide tiles for n > one vector, tall ones for narrow outputs (the classifier's 16 columns),
/// where a wide tile would spend most of its multiply-adds on padding.
TileKernel select_kernel(std::int64_t n) {
  const bool fma = cpu_numerics() == CpuNumerics::fast;
  switch (cpu_isa()) {
    case CpuIsa::avx512:
      return n <= 16 ? isa_avx512::tile_kernel<24, 1>(fma) : isa_avx512::tile_kernel<6, 4>(fma);
    case CpuIsa::avx2:
      return n <= 8 ? isa_avx2::tile_kernel<12, 1>(fma) : isa_avx2::tile_kernel<6, 2>(fma);
    case CpuIsa::sse2:
      break;
  }
  // No FMA on the baseline: the fast mode gives the portable bits there.
  if (n <= 4)
    return {12, 4, isa_sse2::gemm_tile<12, 1, false>, nullptr, isa_sse2::add_column_sums};
  return {6, 8, isa_sse2::gemm_tile<6, 2, false>, nullptr, isa_sse2::add_column_sums};
}

/// dst[k * N + j] = src[k * ld + j] for j < n, 0 for n <= j < N (k < kc): the k-major copy of
/// a panel whose rows are contiguous in the source. N is a compile-time constant so that a full
/// row is copied inline: a copy of run-time length per k becomes a library call per k, which
/// cost the weight gradients (depth 10^5, a call per 6 or 16 floats) a fifth of their time.
template <int N>
void copy_panel(const float* __restrict src, std::int64_t ld, int n, std::int64_t kc,
                float* __restrict dst) {
  if (n == N) {
    for (std::int64_t k = 0; k < kc; ++k)
      for (int j = 0; j < N; ++j) dst[k * N + j] = src[k * ld + j];
    return;
  }
  for (std::int64_t k = 0; k < kc; ++k)
    for (int j = 0; j < N; ++j) dst[k * N + j] = j < n ? src[k * ld + j] : 0.0f;
}

/// copy_panel for the panel widths of the micro-kernels (tk.mr, tk.nr), and any other width.
void copy_panel(const float* __restrict src, std::int64_t ld, int n, std::int64_t kc, int width,
                float* __restrict dst) {
  switch (width) {
    case 4: return copy_panel<4>(src, ld, n, kc, dst);
    case 6: return copy_panel<6>(src, ld, n, kc, dst);
    case 8: return copy_panel<8>(src, ld, n, kc, dst);
    case 12: return copy_panel<12>(src, ld, n, kc, dst);
    case 16: return copy_panel<16>(src, ld, n, kc, dst);
    case 24: return copy_panel<24>(src, ld, n, kc, dst);
    case 64: return copy_panel<64>(src, ld, n, kc, dst);
    default: break;
  }
  for (std::int64_t k = 0; k < kc; ++k)
    for (int j = 0; j < width; ++j) dst[k * width + j] = j < n ? src[k * ld + j] : 0.0f;
}

/// dst[k * mr + i] = op(A)[m0 + i][k0 + k] for i < rows, 0 for rows <= i < mr.
void pack_a(const Operand& a, std::int64_t m0, int rows, std::int64_t k0, std::int64_t kc, int mr,
            float* __restrict dst) {
  if (a.trans) {  // op(A)[m][k] = A[k][m]: each k reads `rows` consecutive floats
    copy_panel(a.data + k0 * a.cols + m0, a.cols, rows, kc, mr, dst);
    return;
  }
  for (int i = 0; i < rows; ++i) {
    const float* src = a.data + (m0 + i) * a.cols + k0;
    for (std::int64_t k = 0; k < kc; ++k) dst[k * mr + i] = src[k];
  }
  for (int i = rows; i < mr; ++i)
    for (std::int64_t k = 0; k < kc; ++k) dst[k * mr + i] = 0.0f;
}

/// Rows [m0, m0 + rows) of op(A) over depths [k0, k0 + kc) for the tile kernel tk: a full panel
/// is read in place (transposed A: k-major with A's row length as stride; untransposed A: row by
/// row, when tk has a direct kernel); any other panel is packed into apack.
APanel a_panel(const Operand& a, const TileKernel& tk, std::int64_t m0, int rows, std::int64_t k0,
               std::int64_t kc, float* apack) {
  if (rows == tk.mr && a.trans) return {a.data + k0 * a.cols + m0, a.cols, tk.fn};
  if (rows == tk.mr && tk.direct) return {a.data + m0 * a.cols + k0, a.cols, tk.direct};
  pack_a(a, m0, rows, k0, kc, tk.mr, apack);
  return {apack, tk.mr, tk.fn};
}

/// dst[k * nr + j] = op(B)[k0 + k][n0 + j] for j < cols, 0 for cols <= j < nr; adds the values
/// to colsum[j] (ascending k, with `sums`) when colsum is set.
void pack_b(const Operand& b, std::int64_t k0, std::int64_t kc, std::int64_t n0, int cols, int nr,
            float* __restrict dst, double* colsum, ColumnSumFn sums) {
  if (!b.trans) {  // op(B)[k][n] = B[k][n]: each k copies `cols` consecutive floats
    const float* src = b.data + k0 * b.cols + n0;
    copy_panel(src, b.cols, cols, kc, nr, dst);
    if (colsum) sums(src, b.cols, cols, kc, colsum);
    return;
  }
  for (int j = 0; j < cols; ++j) {
    const float* src = b.data + (n0 + j) * b.cols + k0;
    for (std::int64_t k = 0; k < kc; ++k) dst[k * nr + j] = src[k];
    if (colsum)
      for (std::int64_t k = 0; k < kc; ++k) colsum[j] += src[k];
  }
  for (std::int64_t k = 0; k < kc; ++k)
    for (int j = cols; j < nr; ++j) dst[k * nr + j] = 0.0f;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// Depth blocks of a term: [k0, k0 + kc) for k0 = 0, kKc, 2 kKc, ...
std::int64_t num_blocks(const Term& t) { return ceil_div(t.k, kKc); }

int team_size(const Problem& p) {
  double work = 0;
  for (int t = 0; t < p.num_terms; ++t)
    work += static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.terms[t].k);
  return work < kMinParallelWork ? 1 : omp_get_max_threads();
}

/// Schedule 1: op(B) packed whole, threads over MR-row panels of C.
void run_packed_b(const Problem& p, const TileKernel& tk) {
  const int mr = tk.mr, nr = tk.nr;
  const std::int64_t panels_n = ceil_div(p.n, nr);
  // Offsets of (term, block) in the packed B: each holds panels_n panels of kc x nr.
  std::int64_t total = 0;
  std::int64_t offset[2][kMaxPackedB / kKc + 1];
  for (int t = 0; t < p.num_terms; ++t)
    for (std::int64_t blk = 0; blk < num_blocks(p.terms[t]); ++blk) {
      offset[t][blk] = total;
      total += std::min(kKc, p.terms[t].k - blk * kKc) * panels_n * nr;
    }
  float* bpack = scratch::shared_floats(static_cast<std::size_t>(total));
  const int team = team_size(p);
  // Pack B, panel by panel (a panel's depth blocks in order, for the column sums).
#pragma omp parallel for schedule(static) num_threads(team)
  for (std::int64_t pn = 0; pn < panels_n; ++pn) {
    const std::int64_t n0 = pn * nr;
    const int cols = static_cast<int>(std::min<std::int64_t>(nr, p.n - n0));
    for (int t = 0; t < p.num_terms; ++t) {
      const Term& term = p.terms[t];
      for (std::int64_t blk = 0; blk < num_blocks(term); ++blk) {
        const std::int64_t k0 = blk * kKc, kc = std::min(kKc, term.k - k0);
        pack_b(term.b, k0, kc, n0, cols, nr, bpack + offset[t][blk] + pn * kc * nr,
               t == 0 && p.b_colsum ? p.b_colsum + n0 : nullptr, tk.sums);
      }
    }
  }
  const std::int64_t panels_m = ceil_div(p.m, mr);
#pragma omp parallel num_threads(team)
  {
    float* apack = scratch::thread_floats(static_cast<std::size_t>(mr * kKc));
#pragma omp for schedule(dynamic, 16)
    for (std::int64_t pm = 0; pm < panels_m; ++pm) {
      const std::int64_t m0 = pm * mr;
      const int rows = static_cast<int>(std::min<std::int64_t>(mr, p.m - m0));
      for (int t = 0; t < p.num_terms; ++t) {
        const Term& term = p.terms[t];
        for (std::int64_t blk = 0; blk < num_blocks(term); ++blk) {
          const std::int64_t k0 = blk * kKc, kc = std::min(kKc, term.k - k0);
          const APanel ap = a_panel(term.a, tk, m0, rows, k0, kc, apack);
          TileUpdate up{p.alpha, p.beta, t == 0 && blk == 0, nullptr};
          for (std::int64_t pn = 0; pn < panels_n; ++pn) {
            const std::int64_t n0 = pn * nr;
            up.bias = p.bias ? p.bias + n0 : nullptr;
            ap.fn(kc, ap.data, ap.ld, bpack + offset[t][blk] + pn * kc * nr, nr, up,
                  p.c + m0 * p.ldc + n0, p.ldc, rows,
                  static_cast<int>(std::min<std::int64_t>(nr, p.n - n0)));
          }
        }
      }
    }
  }
}

/// Schedule 2: one C rectangle per thread, depth blocks walked in order by each thread.
void run_deep(const Problem& p, const TileKernel& tk) {
  const int mr = tk.mr, nr = tk.nr;
  const std::int64_t panels_m = ceil_div(p.m, mr), panels_n = ceil_div(p.n, nr);
  const int team = team_size(p);
  // Cut the panels of the longer side among the threads.
  const bool split_m = panels_m >= team || panels_m >= panels_n;
  const std::int64_t parts = std::min<std::int64_t>(team, split_m ? panels_m : panels_n);
#pragma omp parallel num_threads(static_cast<int>(parts))
  {
    const std::int64_t r = omp_get_thread_num();
    const std::int64_t n_panels = split_m ? panels_m : panels_n;
    const std::int64_t lo = n_panels * r / parts, hi = n_panels * (r + 1) / parts;
    const std::int64_t pm0 = split_m ? lo : 0, pm1 = split_m ? hi : panels_m;
    const std::int64_t pn0 = split_m ? 0 : lo, pn1 = split_m ? panels_n : hi;
    float* apack = scratch::thread_floats(static_cast<std::size_t>(mr * kKc),
                                          static_cast<std::size_t>((pn1 - pn0) * kKc * nr));
    float* bpack = apack + mr * kKc;
    for (int t = 0; t < p.num_terms; ++t) {
      const Term& term = p.terms[t];
      for (std::int64_t blk = 0; blk < num_blocks(term); ++blk) {
        const std::int64_t k0 = blk * kKc, kc = std::min(kKc, term.k - k0);
        // A full panel of an untransposed B is read in place (each depth row's nr columns are
        // contiguous); the others are packed.
        const auto in_place = [&](std::int64_t pn) { return !term.b.trans && (pn + 1) * nr <= p.n; };
        for (std::int64_t pn = pn0; pn < pn1; ++pn) {
          const std::int64_t n0 = pn * nr;
          const int cols = static_cast<int>(std::min<std::int64_t>(nr, p.n - n0));
          // Each column panel's sums belong to one thread: with the rows of C cut, the panels
          // are dealt out in ranges (one thread summing them all kept the others waiting);
          // with the columns cut, each thread sums its own.
          const bool sums_here = split_m ? pn * parts / panels_n == r : true;
          double* colsum = t == 0 && p.b_colsum && sums_here ? p.b_colsum + n0 : nullptr;
          if (!in_place(pn))
            pack_b(term.b, k0, kc, n0, cols, nr, bpack + (pn - pn0) * kc * nr, colsum, tk.sums);
          else if (colsum)
            tk.sums(term.b.data + k0 * term.b.cols + n0, term.b.cols, cols, kc, colsum);
        }
        TileUpdate up{p.alpha, p.beta, t == 0 && blk == 0, nullptr};
        for (std::int64_t pm = pm0; pm < pm1; ++pm) {
          const std::int64_t m0 = pm * mr;
          const int rows = static_cast<int>(std::min<std::int64_t>(mr, p.m - m0));
          const APanel ap = a_panel(term.a, tk, m0, rows, k0, kc, apack);
          for (std::int64_t pn = pn0; pn < pn1; ++pn) {
            const std::int64_t n0 = pn * nr;
            up.bias = p.bias ? p.bias + n0 : nullptr;
            const bool b_direct = in_place(pn);
            ap.fn(kc, ap.data, ap.ld,
                  b_direct ? term.b.data + k0 * term.b.cols + n0 : bpack + (pn - pn0) * kc * nr,
                  b_direct ? term.b.cols : nr, up, p.c + m0 * p.ldc + n0, p.ldc, rows,
                  static_cast<int>(std::min<std::int64_t>(nr, p.n - n0)));
          }
        }
      }
    }
  }
}

void run(const Problem& p) {
  if (p.m == 0 || p.n == 0) return;
  std::int64_t depth = 0;
  for (int t = 0; t < p.num_terms; ++t) depth += p.terms[t].k;
  if (depth == 0) {  // an empty sum: C = beta C + bias
    for (std::int64_t i = 0; i < p.m; ++i)
      for (std::int64_t j = 0; j < p.n; ++j) {
        float* cp = p.c + i * p.ldc + j;
        float v = p.beta == 0.0f ? 0.0f : p.beta * *cp;
        if (p.bias) v = v + p.bias[j];
        *cp = v;
      }
    return;
  }
  const TileKernel tk = select_kernel(p.n);
  if (depth * ceil_div(p.n, tk.nr) * tk.nr <= kMaxPackedB)
    run_packed_b(p, tk);
  else
    run_deep(p, tk);
}

Operand operand(ConstDenseView v, bool trans) { return {v.data, v.rows, v.cols, trans}; }

}  // namespace

void gemm(bool trans_a, bool trans_b, float alpha, ConstDenseView a, ConstDenseView b, float beta,
          DenseView y) {
  const std::int64_t m = trans_a ? a.cols : a.rows, k = trans_a ? a.rows : a.cols;
  const std::int64_t kb = trans_b ? b.cols : b.rows, n = trans_b ? b.rows : b.cols;
  GNN_ASSERT(k == kb && y.rows == m && y.cols == n, "gemm: shapes do not match (op(a) ", m, "x", k,
             ", op(b) ", kb, "x", n, ", y ", y.rows, "x", y.cols, ")");
  Problem p;
  p.m = m;
  p.n = n;
  p.terms[0] = {operand(a, trans_a), operand(b, trans_b), k};
  p.alpha = alpha;
  p.beta = beta;
  p.c = y.data;
  p.ldc = n;
  run(p);
}

void linear(ConstDenseView a1, ConstDenseView w1, ConstDenseView a2, ConstDenseView w2,
            const float* bias, DenseView y) {
  GNN_ASSERT(a1.cols == w1.rows && y.rows == a1.rows && y.cols == w1.cols,
             "linear: shapes do not match (a1 ", a1.rows, "x", a1.cols, ", w1 ", w1.rows, "x",
             w1.cols, ", y ", y.rows, "x", y.cols, ")");
  Problem p;
  p.m = y.rows;
  p.n = y.cols;
  p.terms[0] = {operand(a1, false), operand(w1, false), a1.cols};
  if (a2.data != nullptr) {
    GNN_ASSERT(a2.rows == a1.rows && a2.cols == w2.rows && w2.cols == w1.cols,
               "linear: the second product does not match (a2 ", a2.rows, "x", a2.cols, ", w2 ",
               w2.rows, "x", w2.cols, ")");
    p.terms[1] = {operand(a2, false), operand(w2, false), a2.cols};
    p.num_terms = 2;
  }
  p.bias = bias;
  p.c = y.data;
  p.ldc = y.cols;
  run(p);
}

void linear_grad(ConstDenseView x, ConstDenseView gy, DenseView gw, float* gb) {
  GNN_ASSERT(x.rows == gy.rows && gw.rows == x.cols && gw.cols == gy.cols,
             "linear_grad: shapes do not match (x ", x.rows, "x", x.cols, ", gy ", gy.rows, "x",
             gy.cols, ", gw ", gw.rows, "x", gw.cols, ")");
  Problem p;
  p.m = gw.rows;
  p.n = gw.cols;
  p.terms[0] = {operand(x, true), operand(gy, false), x.rows};
  p.beta = 1.0f;
  p.c = gw.data;
  p.ldc = gw.cols;
  std::vector<double> colsum;
  if (gb) {
    colsum.assign(static_cast<std::size_t>(gy.cols), 0.0);
    p.b_colsum = colsum.data();
  }
  if (p.m > 0) {
    run(p);
  } else if (gb) {  // no weight rows: the column sums alone
    for (std::int64_t i = 0; i < gy.rows; ++i)
      for (std::int64_t j = 0; j < gy.cols; ++j) colsum[j] += gy.data[i * gy.cols + j];
  }
  if (gb)
    for (std::int64_t j = 0; j < gy.cols; ++j)
      gb[j] = static_cast<float>(static_cast<double>(gb[j]) + colsum[j]);
}

}  // namespace halognn::kernels::reference
