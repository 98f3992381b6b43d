// Row movement: gather, scatter, race-free scatter-add, copy.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/kernels/reference/reference_kernels.hpp"

namespace halognn::kernels::reference {

void gather_rows(ConstDenseView src, const LocalId* idx, DenseView dst) {
  GNN_ASSERT(src.cols == dst.cols, "gather_rows: widths differ (", src.cols, " vs ", dst.cols, ")");
  if (dst.rows == 0 || dst.cols == 0) return;
  const std::size_t row_bytes = static_cast<std::size_t>(dst.cols) * sizeof(float);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < dst.rows; ++i) {
    std::memcpy(dst.row(i), src.row(idx[i]), row_bytes);
  }
}

void scatter_rows(ConstDenseView src, const LocalId* idx, DenseView dst) {
  GNN_ASSERT(src.cols == dst.cols, "scatter_rows: widths differ (", src.cols, " vs ", dst.cols, ")");
  if (src.rows == 0 || src.cols == 0) return;
  const std::size_t row_bytes = static_cast<std::size_t>(src.cols) * sizeof(float);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < src.rows; ++i) {
    std::memcpy(dst.row(idx[i]), src.row(i), row_bytes);
  }
}

namespace {

void add_row(const float* __restrict src, float* __restrict dst, std::int64_t n) {
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) dst[j] += src[j];
}

}  // namespace

void scatter_add_rows(ConstDenseView src, const LocalId* idx, DenseView dst) {
  GNN_ASSERT(src.cols == dst.cols, "scatter_add_rows: widths differ (", src.cols, " vs ", dst.cols,
             ")");
  const std::int64_t n = src.rows, f = src.cols;
  if (n == 0 || f == 0) return;
  // Plans usually list their rows in ascending order; then every destination is distinct and
  // rows can be added in parallel directly.
  bool increasing = true;
#pragma omp parallel for schedule(static) reduction(&& : increasing)
  for (std::int64_t i = 1; i < n; ++i) increasing = increasing && idx[i - 1] < idx[i];
  if (increasing) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) add_row(src.row(i), dst.row(idx[i]), f);
    return;
  }
  // General case: sort the source rows by destination (stable, so every destination receives
  // its contributions in source order and the result is deterministic), then one thread owns
  // each run of equal destinations.
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [idx](std::int64_t x, std::int64_t y) { return idx[x] < idx[y]; });
  std::vector<std::int64_t> run_start;
  run_start.reserve(static_cast<std::size_t>(n) + 1);
  for (std::int64_t k = 0; k < n; ++k) {
    if (k == 0 || idx[order[k]] != idx[order[k - 1]]) run_start.push_back(k);
  }
  run_start.push_back(n);
  const auto runs = static_cast<std::int64_t>(run_start.size()) - 1;
#pragma omp parallel for schedule(dynamic, 64)
  for (std::int64_t r = 0; r < runs; ++r) {
    float* out = dst.row(idx[order[run_start[r]]]);
    for (std::int64_t k = run_start[r]; k < run_start[r + 1]; ++k)
      add_row(src.row(order[k]), out, f);
  }
}

void copy(ConstDenseView src, DenseView dst) {
  GNN_ASSERT(src.rows == dst.rows && src.cols == dst.cols, "copy: shapes differ");
  const std::int64_t n = src.rows * src.cols;
  if (n == 0) return;
  const float* __restrict s = src.data;
  float* __restrict d = dst.data;
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < n; ++i) d[i] = s[i];
}

}  // namespace halognn::kernels::reference
