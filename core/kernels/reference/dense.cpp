// Dense GEMM through Eigen maps of the row-major views. The threads are ours, not Eigen's: the
// output is cut into row (and, when it has few rows, column) tiles, one sequential Eigen product
// per tile, so no thread ever waits for another. Eigen's own OpenMP product synchronises its
// threads with spin-waits once per depth block; on weight gradients (a 256 x 256 output summed
// over 100k rows) that cost seconds per call on a loaded 2-core machine (2.6-4.1 s, against
// 0.09-0.8 s for the tiles), and 1 thread beat 2.
// This is the only translation unit that instantiates Eigen products, so switching Eigen's own
// threading off here switches it off everywhere.
#define EIGEN_DONT_PARALLELIZE
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>

#include "core/kernels/reference/reference_kernels.hpp"

namespace halognn::kernels::reference {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMajor>;
using Map = Eigen::Map<RowMajor>;

/// Tiles are at least this many rows tall (one GEBP panel is 8 to 24 rows) and columns wide ...
constexpr std::int64_t kMinTileRows = 64;
constexpr std::int64_t kMinTileCols = 64;
/// ... and products under this many multiply-adds run on the calling thread alone.
constexpr double kMinParallelWork = 1 << 20;

template <typename A, typename B, typename Y>
void product(float alpha, const A& a, const B& b, float beta, Y&& y) {
  if (beta == 0.0f) {
    y.noalias() = alpha * (a * b);
  } else {
    if (beta != 1.0f) y *= beta;
    y.noalias() += alpha * (a * b);
  }
}

/// y = alpha op(a) op(b) + beta y, op(a) and op(b) Eigen expressions over the whole operands.
template <typename OpA, typename OpB>
void tiled_product(float alpha, const OpA& op_a, const OpB& op_b, float beta, Map& y) {
  const std::int64_t m = y.rows(), n = y.cols(), k = op_a.cols();
  const int threads = omp_get_max_threads();
  std::int64_t tile_rows = threads, tile_cols = 1;
  if (m < threads * kMinTileRows) {
    // Few output rows (a weight gradient aᵀ b): cut the columns too.
    tile_rows = std::max<std::int64_t>(1, m / kMinTileRows);
    tile_cols = std::clamp<std::int64_t>(threads / tile_rows, 1,
                                         std::max<std::int64_t>(1, n / kMinTileCols));
  }
  const std::int64_t tiles = tile_rows * tile_cols;
  const bool parallel =
      tiles > 1 && static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) >=
                       kMinParallelWork;
  if (!parallel) {
    product(alpha, op_a, op_b, beta, y);
    return;
  }
  const int team = static_cast<int>(std::min<std::int64_t>(tiles, threads));
#pragma omp parallel for schedule(static) num_threads(team)
  for (std::int64_t t = 0; t < tiles; ++t) {
    const std::int64_t tr = t / tile_cols, tc = t % tile_cols;
    const std::int64_t r0 = m * tr / tile_rows, r1 = m * (tr + 1) / tile_rows;
    const std::int64_t c0 = n * tc / tile_cols, c1 = n * (tc + 1) / tile_cols;
    if (r0 == r1 || c0 == c1) continue;
    product(alpha, op_a.middleRows(r0, r1 - r0), op_b.middleCols(c0, c1 - c0), beta,
            y.block(r0, c0, r1 - r0, c1 - c0));
  }
}

}  // namespace

void gemm(bool trans_a, bool trans_b, float alpha, ConstDenseView a, ConstDenseView b, float beta,
          DenseView y) {
  const std::int64_t m = trans_a ? a.cols : a.rows, k = trans_a ? a.rows : a.cols;
  const std::int64_t kb = trans_b ? b.cols : b.rows, n = trans_b ? b.rows : b.cols;
  GNN_ASSERT(k == kb && y.rows == m && y.cols == n, "gemm: shapes do not match (op(a) ", m, "x", k,
             ", op(b) ", kb, "x", n, ", y ", y.rows, "x", y.cols, ")");
  if (m == 0 || n == 0) return;
  Map ym(y.data, m, n);
  if (k == 0) {  // an empty sum: only the beta term remains
    if (beta == 0.0f)
      ym.setZero();
    else
      ym *= beta;
    return;
  }
  const ConstMap am(a.data, a.rows, a.cols), bm(b.data, b.rows, b.cols);
  if (!trans_a && !trans_b)
    tiled_product(alpha, am, bm, beta, ym);
  else if (!trans_a)
    tiled_product(alpha, am, bm.transpose(), beta, ym);
  else if (!trans_b)
    tiled_product(alpha, am.transpose(), bm, beta, ym);
  else
    tiled_product(alpha, am.transpose(), bm.transpose(), beta, ym);
}

}  // namespace halognn::kernels::reference
