// Input-feature sparsification (core/data/feature_sparsify.hpp): layout, tie rules, codebooks,
// batches, the sample, decoding and validation, on hand-made rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "core/data/feature_sparsify.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"

namespace halognn {
namespace {

std::vector<float> random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  const CounterRng rng(RngKey{seed, RngPurpose::test, 0, 0});
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      x[static_cast<std::size_t>(i * cols + j)] = rng.uniform(static_cast<std::uint64_t>(i),
                                                              static_cast<std::uint64_t>(j)) - 0.5f;
  return x;
}

std::vector<int> row_positions(const SparseFeatures& f, std::int64_t row) {
  const std::int64_t s = f.layout.slots();
  return {f.positions.begin() + row * s, f.positions.begin() + (row + 1) * s};
}

TEST(FeatureSparsify, LayoutClampsNarrowChunksAndRefusesBadK) {
  const SparsifyLayout a = make_sparsify_layout(600, 16);  // widths 256, 256, 88
  EXPECT_EQ(a.chunk_k, (std::vector<std::int32_t>{16, 16, 16}));
  EXPECT_EQ(a.slots(), 96);
  EXPECT_DOUBLE_EQ(a.ratio(), 600.0 * 4 / 96);
  EXPECT_EQ(a.slot_base[31], 0);
  EXPECT_EQ(a.slot_base[32], 256);
  EXPECT_EQ(a.slot_base[95], 512);
  const SparsifyLayout b = make_sparsify_layout(300, 64);  // widths 256, 44: the tail keeps 22
  EXPECT_EQ(b.chunk_k, (std::vector<std::int32_t>{64, 22}));
  const SparsifyLayout c = make_sparsify_layout(257, 16);  // a 1-wide tail keeps nothing
  EXPECT_EQ(c.chunk_k, (std::vector<std::int32_t>{16, 0}));
  EXPECT_EQ(c.slots(), 32);
  const SparsifyLayout d = make_sparsify_layout(256, kSparsifyMaxK);  // every column kept
  EXPECT_EQ(d.slots(), 256);
  EXPECT_THROW(make_sparsify_layout(256, 0), ConfigError);
  EXPECT_THROW(make_sparsify_layout(256, kSparsifyMaxK + 1), ConfigError);
  EXPECT_THROW(make_sparsify_layout(1, 1), ConfigError);
  try {
    make_sparsify_layout(256, 200, "--sparsify-features");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--sparsify-features"), std::string::npos);
  }
}

TEST(FeatureSparsify, TiesTakeTheLowerColumnFirstAndTheSetsAreDisjoint) {
  // One 6-wide row, k = 2: the largest are 3 (col 2, then col 3 on the tie), the smallest of the
  // rest are -1 (col 1, then col 5 on the tie).
  const std::vector<float> row = {0.0f, -1.0f, 3.0f, 3.0f, 1.0f, -1.0f};
  const SparseFeatures f = sparsify_features(row.data(), 1, 6, 2, 7, 1.0);
  EXPECT_EQ(row_positions(f, 0), (std::vector<int>{2, 3, 1, 5}));
  EXPECT_EQ(f.codebook, (std::vector<float>{3.0f, 3.0f, -1.0f, -1.0f}));
  // A constant row keeps columns 0..k-1 as largest and k..2k-1 as smallest.
  const std::vector<float> flat(10, 0.25f);
  const SparseFeatures g = sparsify_features(flat.data(), 1, 10, 3, 7, 1.0);
  EXPECT_EQ(row_positions(g, 0), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  // k at its upper limit for the width: every column is kept, and decoding is exact.
  const std::vector<float> r4 = {2.0f, -3.0f, 0.5f, 7.0f};
  const SparseFeatures h = sparsify_features(r4.data(), 1, 4, 2, 7, 1.0);
  EXPECT_EQ(row_positions(h, 0), (std::vector<int>{3, 0, 1, 2}));
  std::vector<float> back(4);
  desparsify_features(h, back.data());
  EXPECT_EQ(back, r4);
}

TEST(FeatureSparsify, ChunkTailsUseTheirOwnColumns) {
  // 260 columns: chunk 0 is 256 wide, chunk 1 is 4 wide (k_c = 2 for k = 5).
  std::vector<float> row(260, 0.0f);
  row[7] = 9.0f;      // chunk 0's largest
  row[200] = -9.0f;   // chunk 0's smallest
  row[258] = 4.0f;    // chunk 1 (local column 2) largest
  row[259] = -4.0f;   // chunk 1 (local column 3) smallest
  const SparseFeatures f = sparsify_features(row.data(), 1, 260, 5, 1, 1.0);
  ASSERT_EQ(f.layout.chunk_k, (std::vector<std::int32_t>{5, 2}));
  const std::vector<int> p = row_positions(f, 0);
  ASSERT_EQ(p.size(), 14u);
  EXPECT_EQ(p[0], 7);
  EXPECT_EQ(p[5], 200);
  EXPECT_EQ(p[10], 2);  // chunk 1: largest 4.0 at local 2, then 0.0 at local 0
  EXPECT_EQ(p[11], 0);
  EXPECT_EQ(p[12], 3);  // smallest -4.0 at local 3, then 0.0 at local 1
  EXPECT_EQ(p[13], 1);
  std::vector<float> back(260);
  desparsify_features(f, back.data());
  EXPECT_EQ(back[258], 4.0f);
  EXPECT_EQ(back[259], -4.0f);
  EXPECT_EQ(back[7], 9.0f);
  EXPECT_EQ(back[200], -9.0f);
}

TEST(FeatureSparsify, FullSampleCodebookIsTheMeanOfSortedValues) {
  const std::int64_t rows = 37, cols = 300;
  const std::int32_t k = 8;
  const std::vector<float> x = random_matrix(rows, cols, 3);
  const SparseFeatures f = sparsify_features(x.data(), rows, cols, k, 11, 1.0);
  // Brute force: sort each chunk of each row, average the i-th largest / smallest.
  std::vector<double> sum(static_cast<std::size_t>(f.layout.slots()), 0.0);
  for (std::int64_t i = 0; i < rows; ++i) {
    std::size_t s = 0;
    for (std::int64_t c0 = 0; c0 < cols; c0 += 256) {
      std::vector<float> v(x.begin() + i * cols + c0,
                           x.begin() + i * cols + std::min(cols, c0 + 256));
      std::sort(v.begin(), v.end(), std::greater<>());
      const auto kc = static_cast<std::size_t>(std::min<std::int64_t>(k, v.size() / 2));
      for (std::size_t j = 0; j < kc; ++j) sum[s++] += v[j];
      for (std::size_t j = 0; j < kc; ++j) sum[s++] += v[v.size() - 1 - j];
    }
  }
  for (std::size_t s = 0; s < sum.size(); ++s)
    EXPECT_EQ(f.codebook[s], static_cast<float>(sum[s] / rows)) << "slot " << s;
  // decode(encode) keeps exactly the kept positions: the right columns are non-zero, with the
  // codebook values, and each kept column held a value of the right rank.
  std::vector<float> back(static_cast<std::size_t>(rows * cols));
  desparsify_features(f, back.data());
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::vector<int> p = row_positions(f, i);
    std::int64_t nonzero = 0;
    for (std::int64_t j = 0; j < cols; ++j) nonzero += back[static_cast<std::size_t>(i * cols + j)] != 0;
    EXPECT_EQ(nonzero, f.layout.slots());
    for (std::size_t s = 0; s < p.size(); ++s) {
      const std::int64_t col = f.layout.slot_base[s] + p[s];
      EXPECT_EQ(back[static_cast<std::size_t>(i * cols + col)], f.codebook[s]);
    }
    // The first slot of chunk 0 is the row's maximum there.
    EXPECT_EQ(x[static_cast<std::size_t>(i * cols + p[0])],
              *std::max_element(x.begin() + i * cols, x.begin() + i * cols + 256));
  }
}

TEST(FeatureSparsify, BatchesAndThreadsDoNotChangeTheResult) {
  const std::int64_t rows = 50, cols = 100;
  const std::vector<float> x = random_matrix(rows, cols, 5);
  const SparseFeatures all = sparsify_features(x.data(), rows, cols, 4, 9, 0.5);
  FeatureSparsifier enc(make_sparsify_layout(cols, 4), 9, 0.5);
  std::vector<std::uint8_t> pos(static_cast<std::size_t>(rows * enc.layout().slots()));
  for (std::int64_t r0 = 0; r0 < rows; r0 += 7) {
    const std::int64_t n = std::min<std::int64_t>(7, rows - r0);
    enc.encode_rows(r0, x.data() + r0 * cols, n, pos.data() + r0 * enc.layout().slots());
  }
  EXPECT_EQ(pos, all.positions);
  EXPECT_EQ(enc.codebook(), all.codebook);
}

TEST(FeatureSparsify, TheSampleIsSeededByNodeId) {
  const std::int64_t rows = 400, cols = 64;
  const std::vector<float> x = random_matrix(rows, cols, 8);
  const SparseFeatures f = sparsify_features(x.data(), rows, cols, 4, 21, 0.25);
  // The codebook over the sample equals the full-sample codebook of the sampled rows alone.
  const CounterRng rng(RngKey{21, RngPurpose::sparsify, 0, 0});
  std::vector<float> picked;
  std::int64_t n = 0;
  for (std::int64_t v = 0; v < rows; ++v) {
    if (rng.uniform_double(static_cast<std::uint64_t>(v), 0) >= 0.25) continue;
    picked.insert(picked.end(), x.begin() + v * cols, x.begin() + (v + 1) * cols);
    ++n;
  }
  ASSERT_GT(n, 50);
  ASSERT_LT(n, 150);
  const SparseFeatures sub = sparsify_features(picked.data(), n, cols, 4, 21, 1.0);
  EXPECT_EQ(f.codebook, sub.codebook);
  const SparseFeatures other = sparsify_features(x.data(), rows, cols, 4, 22, 0.25);
  EXPECT_NE(f.codebook, other.codebook);
  EXPECT_EQ(f.positions, other.positions);  // positions never depend on the sample
}

TEST(FeatureSparsify, ValidationRefusesBadPositions) {
  const std::vector<float> x = random_matrix(3, 300, 2);
  SparseFeatures f = sparsify_features(x.data(), 3, 300, 4, 1, 1.0);
  EXPECT_NO_THROW(validate_sparse_features(f, "f"));
  SparseFeatures dup = f;
  dup.positions[1] = dup.positions[0];
  EXPECT_THROW(validate_sparse_features(dup, "f"), InputError);
  SparseFeatures out = f;
  out.positions[out.layout.slots() - 1] = 44;  // chunk 1 is 44 wide: 0..43
  EXPECT_THROW(validate_sparse_features(out, "f"), InputError);
  SparseFeatures cb = f;
  cb.codebook.pop_back();
  EXPECT_THROW(validate_sparse_features(cb, "f"), InputError);
}

}  // namespace
}  // namespace halognn
