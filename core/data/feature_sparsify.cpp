#include "core/data/feature_sparsify.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace halognn {

double SparsifyLayout::ratio() const {
  return slot_base.empty() ? 0.0
                           : static_cast<double>(cols) * sizeof(float) /
                                 static_cast<double>(slot_base.size());
}

SparsifyLayout make_sparsify_layout(std::int64_t cols, std::int32_t k, const std::string& option) {
  GNN_CHECK_CONFIG(k >= 1 && k <= kSparsifyMaxK, option, " must be in [1, ", kSparsifyMaxK,
                   "] (2k positions per 256-wide chunk), got ", k);
  GNN_CHECK_CONFIG(cols >= 2, option, ": the features have ", cols,
                   " column(s); sparsification needs at least 2");
  SparsifyLayout l;
  l.cols = cols;
  l.k = k;
  for (std::int64_t c0 = 0; c0 < cols; c0 += kSparsifyChunk) {
    const std::int64_t width = std::min(kSparsifyChunk, cols - c0);
    const auto kc = static_cast<std::int32_t>(std::min<std::int64_t>(k, width / 2));
    l.chunk_k.push_back(kc);
    for (std::int32_t s = 0; s < 2 * kc; ++s) l.slot_base.push_back(static_cast<std::int32_t>(c0));
  }
  return l;
}

FeatureSparsifier::FeatureSparsifier(SparsifyLayout layout, std::uint64_t seed,
                                     double sample_fraction)
    : layout_(std::move(layout)), seed_(seed), fraction_(sample_fraction),
      sums_(static_cast<std::size_t>(layout_.slots()), 0.0) {}

void FeatureSparsifier::encode_rows(GlobalId first_id, const float* rows, std::int64_t n,
                                    std::uint8_t* positions) {
  const std::int64_t cols = layout_.cols, slots = layout_.slots();
  const CounterRng rng(RngKey{seed_, RngPurpose::sparsify, 0, 0});
  // Sorted values of the sampled rows of this batch, summed in ascending row order after the
  // parallel loop (the sums must not depend on the thread count).
  std::vector<std::uint8_t> sampled(static_cast<std::size_t>(n), 0);
  std::vector<float> values(static_cast<std::size_t>(n * slots));
#pragma omp parallel
  {
    std::vector<std::int32_t> order(static_cast<std::size_t>(kSparsifyChunk));
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float* row = rows + i * cols;
      std::uint8_t* pos = positions + i * slots;
      float* val = values.data() + i * slots;
      const auto id = static_cast<std::uint64_t>(first_id + i);
      sampled[static_cast<std::size_t>(i)] = fraction_ >= 1.0 || rng.uniform_double(id, 0) < fraction_;
      std::int64_t s = 0;
      for (std::int64_t c = 0; c < layout_.chunks(); ++c) {
        const std::int32_t kc = layout_.chunk_k[static_cast<std::size_t>(c)];
        if (kc == 0) continue;
        const std::int64_t c0 = c * kSparsifyChunk;
        const auto width = static_cast<std::int32_t>(std::min(kSparsifyChunk, cols - c0));
        const float* x = row + c0;
        order.resize(static_cast<std::size_t>(width));
        std::iota(order.begin(), order.end(), 0);
        // The k_c largest: value descending, column ascending on ties.
        std::partial_sort(order.begin(), order.begin() + kc, order.end(),
                          [x](std::int32_t a, std::int32_t b) {
                            return x[a] > x[b] || (x[a] == x[b] && a < b);
                          });
        // The k_c smallest of the rest: value ascending, column ascending on ties.
        std::partial_sort(order.begin() + kc, order.begin() + 2 * kc, order.end(),
                          [x](std::int32_t a, std::int32_t b) {
                            return x[a] < x[b] || (x[a] == x[b] && a < b);
                          });
        for (std::int32_t j = 0; j < 2 * kc; ++j, ++s) {
          pos[s] = static_cast<std::uint8_t>(order[static_cast<std::size_t>(j)]);
          val[s] = x[order[static_cast<std::size_t>(j)]];
        }
      }
    }
  }
  for (std::int64_t i = 0; i < n; ++i) {
    if (!sampled[static_cast<std::size_t>(i)]) continue;
    ++sampled_;
    const float* val = values.data() + i * slots;
    for (std::int64_t s = 0; s < slots; ++s) sums_[static_cast<std::size_t>(s)] += val[s];
  }
}

std::vector<float> FeatureSparsifier::codebook() const {
  std::vector<float> cb(sums_.size(), 0.0f);
  if (sampled_ == 0) return cb;
  for (std::size_t s = 0; s < sums_.size(); ++s)
    cb[s] = static_cast<float>(sums_[s] / static_cast<double>(sampled_));
  return cb;
}

double sparsify_sample_fraction(std::int64_t sample, std::int64_t num_nodes) {
  return num_nodes > 0 ? static_cast<double>(sample) / static_cast<double>(num_nodes) : 1.0;
}

SparseFeatures sparsify_features(const float* x, std::int64_t rows, std::int64_t cols,
                                 std::int32_t k, std::uint64_t seed, double sample_fraction) {
  SparseFeatures f;
  f.layout = make_sparsify_layout(cols, k);
  f.rows = rows;
  const std::int64_t slots = f.layout.slots();
  f.positions.resize(static_cast<std::size_t>(rows * slots));
  FeatureSparsifier enc(f.layout, seed, sample_fraction);
  const std::int64_t batch = std::max<std::int64_t>(1, (std::int64_t{64} << 20) / (cols * 4));
  for (std::int64_t r0 = 0; r0 < rows; r0 += batch) {
    const std::int64_t n = std::min(batch, rows - r0);
    enc.encode_rows(r0, x + r0 * cols, n, f.positions.data() + r0 * slots);
  }
  f.codebook = enc.codebook();
  f.codebook_rows = enc.sampled_rows();
  return f;
}

void desparsify_features(const SparseFeatures& f, float* out) {
  const std::int64_t cols = f.layout.cols, slots = f.layout.slots();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < f.rows; ++i) {
    float* row = out + i * cols;
    std::fill(row, row + cols, 0.0f);
    const std::uint8_t* pos = f.positions.data() + i * slots;
    for (std::int64_t s = 0; s < slots; ++s)
      row[f.layout.slot_base[static_cast<std::size_t>(s)] + pos[s]] =
          f.codebook[static_cast<std::size_t>(s)];
  }
}

void validate_sparse_features(const SparseFeatures& f, const std::string& origin) {
  const SparsifyLayout& l = f.layout;
  const std::int64_t slots = l.slots();
  GNN_CHECK_INPUT(static_cast<std::int64_t>(f.codebook.size()) == slots, origin,
                  "sparsified features: codebook has ", f.codebook.size(), " values, expected ",
                  slots);
  GNN_CHECK_INPUT(static_cast<std::int64_t>(f.positions.size()) == f.rows * slots, origin,
                  "sparsified features: ", f.positions.size(), " positions, expected ",
                  f.rows * slots);
  for (const float v : f.codebook)
    GNN_CHECK_INPUT(std::isfinite(v), origin, "sparsified features: non-finite codebook value");
  bool ok = true;
  std::int64_t bad_row = -1;
#pragma omp parallel for schedule(static) reduction(&& : ok)
  for (std::int64_t i = 0; i < f.rows; ++i) {
    const std::uint8_t* pos = f.positions.data() + i * slots;
    std::int64_t s = 0;
    for (std::int64_t c = 0; c < l.chunks(); ++c) {
      const std::int64_t width = std::min(kSparsifyChunk, l.cols - c * kSparsifyChunk);
      std::uint64_t seen[4] = {0, 0, 0, 0};
      for (std::int32_t j = 0; j < 2 * l.chunk_k[static_cast<std::size_t>(c)]; ++j, ++s) {
        const std::uint8_t p = pos[s];
        const bool fine = p < width && !(seen[p >> 6] >> (p & 63) & 1);
        seen[p >> 6] |= std::uint64_t{1} << (p & 63);
        if (!fine) {
          ok = false;
#pragma omp critical
          if (bad_row < 0 || i < bad_row) bad_row = i;
        }
      }
    }
  }
  GNN_CHECK_INPUT(ok, origin, "sparsified features: row ", bad_row,
                  " has a position outside its chunk or twice in one chunk");
}

}  // namespace halognn
