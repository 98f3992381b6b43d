// The fused layer kernels (linear, linear_grad, spmm_bias) against naive double-precision loops,
// the GEMM's deep (weight-gradient) schedule, SpMM feature blocks, and the numerics contract of
// the multi-versioned kernels (core/kernels/cpu_isa.hpp): every instruction set gives the same
// bits in portable mode, FMA sets agree in fast mode, and the thread count changes nothing
// (except spmm_transpose, whose per-thread partials are documented to depend on it).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/kernels.hpp"
#include "core/rng.hpp"
#include "test/kernels/kernel_test_util.hpp"

namespace halognn {
namespace {

using kernels::CpuIsa;
using kernels::CpuNumerics;
using test::expect_near_all;
using test::random_csr;
using test::random_matrix;

// Sums of up to ~10^4 products of magnitude <= 1 in float32: relative error well under 1e-4 of
// the sum of magnitudes (which the tolerance's 1 + |want| bounds from above for these inputs).
constexpr double kTol = 2e-4;

const Device& cpu() { return *cpu_device(); }

/// Restores the ISA limit, numerics mode and thread count a test changes.
class KernelModes : public ::testing::Test {
 protected:
  void TearDown() override {
    kernels::set_cpu_isa_limit(CpuIsa::avx512);
    kernels::set_cpu_numerics(CpuNumerics::fast);
    omp_set_num_threads(threads_);
  }
  int threads_ = omp_get_max_threads();
};

std::vector<double> naive_product(const Matrix& a, bool ta, const Matrix& b, bool tb,
                                  std::int64_t m, std::int64_t k, std::int64_t n) {
  std::vector<double> out(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t t = 0; t < k; ++t) {
      const double x = ta ? a(t, i) : a(i, t);
      for (std::int64_t j = 0; j < n; ++j) out[i * n + j] += x * (tb ? b(j, t) : b(t, j));
    }
  return out;
}

TEST_F(KernelModes, GemmDeepScheduleMatchesNaiveLoop) {
  // Depth 9000 x 70 columns is beyond the packed-B size: the per-thread rectangle schedule, over
  // 36 depth blocks, with partial tiles on both sides: on every instruction set, full panels of
  // A (transposed) and of B are read in place and the partial ones packed.
  const std::int64_t m = 37, k = 9000, n = 70;
  const Matrix a = random_matrix(k, m, 1), b = random_matrix(k, n, 2);
  const Matrix y0 = random_matrix(m, n, 3);
  std::vector<double> want = naive_product(a, true, b, false, m, k, n);
  for (std::int64_t i = 0; i < m * n; ++i) want[i] = 0.5 * want[i] + y0.host()[i];
  for (const CpuIsa isa : {CpuIsa::sse2, CpuIsa::avx2, CpuIsa::avx512}) {
    kernels::set_cpu_isa_limit(isa);
    Matrix y = y0.clone();
    kernels::gemm(cpu(), true, false, 0.5f, a.view(), b.view(), 1.0f, y.view());
    SCOPED_TRACE(kernels::to_string(kernels::cpu_isa()));
    expect_near_all(y.host(), want, kTol);
  }
}

TEST_F(KernelModes, LinearAddsTwoProductsAndTheBias) {
  for (const bool second : {false, true}) {
    for (const bool with_bias : {false, true}) {
      // 300 deep: two depth blocks in the first product; 200 rows: many row panels.
      const std::int64_t rows = 200, k1 = 300, k2 = 45, cols = 37;
      const Matrix a1 = random_matrix(rows, k1, 4), w1 = random_matrix(k1, cols, 5);
      const Matrix a2 = random_matrix(rows, k2, 6), w2 = random_matrix(k2, cols, 7);
      const Matrix b = random_matrix(1, cols, 8);
      Matrix y(rows, cols);
      for (float& v : y.host()) v = std::numeric_limits<float>::quiet_NaN();  // overwritten
      kernels::linear(cpu(), a1.view(), w1.view(), second ? a2.view() : ConstDenseView{},
                      w2.view(), with_bias ? b.data() : nullptr, y.view());
      std::vector<double> want = naive_product(a1, false, w1, false, rows, k1, cols);
      const std::vector<double> p2 = naive_product(a2, false, w2, false, rows, k2, cols);
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j)
          want[i * cols + j] += (second ? p2[i * cols + j] : 0.0) + (with_bias ? b(0, j) : 0.0);
      SCOPED_TRACE("second product " + std::to_string(second) + ", bias " +
                   std::to_string(with_bias));
      expect_near_all(y.host(), want, kTol);
    }
  }
}

TEST_F(KernelModes, LinearGradAccumulatesWeightAndBiasGradients) {
  // Both schedules: a short depth (packed B) and a long one (per-thread rectangles), where 128
  // output columns are full panels of gy on every instruction set, read in place, their bias
  // gradient summed apart from the packing.
  struct Shape { std::int64_t rows, out; CpuIsa isa; };
  for (const Shape sh : {Shape{50, 21, CpuIsa::avx512}, Shape{20000, 21, CpuIsa::avx512},
                         Shape{20000, 128, CpuIsa::sse2}, Shape{20000, 128, CpuIsa::avx2},
                         Shape{20000, 128, CpuIsa::avx512}}) {
    kernels::set_cpu_isa_limit(sh.isa);
    const std::int64_t rows = sh.rows, in = 33, out = sh.out;
    const Matrix x = random_matrix(rows, in, 9), gy = random_matrix(rows, out, 10);
    Matrix gw = random_matrix(in, out, 11), gb = random_matrix(1, out, 12);
    const Matrix gw0 = gw.clone(), gb0 = gb.clone();
    kernels::linear_grad(cpu(), x.view(), gy.view(), gw.view(), gb.data());
    std::vector<double> want = naive_product(x, true, gy, false, in, rows, out);
    for (std::int64_t i = 0; i < in * out; ++i) want[i] += gw0.host()[i];
    std::vector<double> want_b(static_cast<std::size_t>(out));
    for (std::int64_t j = 0; j < out; ++j) {
      want_b[j] = gb0(0, j);
      for (std::int64_t i = 0; i < rows; ++i) want_b[j] += gy(i, j);
    }
    SCOPED_TRACE("rows " + std::to_string(rows) + ", columns " + std::to_string(out) + ", " +
                 kernels::to_string(kernels::cpu_isa()));
    expect_near_all(gw.host(), want, kTol);
    expect_near_all(gb.host(), want_b, 1e-6);  // summed in double: one rounding
    // Without a bias gradient only gw changes.
    Matrix gw2 = gw0.clone();
    kernels::linear_grad(cpu(), x.view(), gy.view(), gw2.view(), nullptr);
    EXPECT_EQ(gw2.to_host(), gw.to_host());
  }
}

TEST_F(KernelModes, SpmmBiasIsTheAggregationPlusTheBias) {
  const test::HostCsr h = random_csr(90, 70, 12, true, 13);
  const CsrMatrix a = h.to_device();
  for (const std::int64_t f : {1, 16, 37, 300}) {
    const Matrix x = random_matrix(70, f, 14), b = random_matrix(1, f, 15);
    Matrix y(90, f);
    for (float& v : y.host()) v = std::numeric_limits<float>::quiet_NaN();
    kernels::spmm_bias(cpu(), a.view(), x.view(), 0.0f, b.data(), y.view());
    std::vector<double> want(static_cast<std::size_t>(90 * f));
    for (std::int64_t i = 0; i < 90; ++i)
      for (std::int64_t j = 0; j < f; ++j) {
        double s = b(0, j);
        for (std::int32_t k = h.row_ptr[i]; k < h.row_ptr[i + 1]; ++k) s += h.val[k] * x(h.col[k], j);
        want[i * f + j] = s;
      }
    SCOPED_TRACE("F = " + std::to_string(f));
    expect_near_all(y.host(), want, kTol);
  }
}

/// A large rows x cols CSR with up to `per_row` random entries per row (sorted, distinct columns).
test::HostCsr large_random_csr(std::int64_t rows, std::int64_t cols, int per_row,
                               std::uint64_t stream) {
  test::HostCsr a;
  a.rows = rows;
  a.cols = cols;
  const std::int64_t n = cols;
  a.row_ptr.push_back(0);
  const CounterRng rng(RngKey{7, RngPurpose::test, stream, 2});
  std::vector<std::int32_t> row;
  for (std::int64_t i = 0; i < rows; ++i) {
    row.clear();
    const auto count = rng.word(static_cast<std::uint64_t>(i), 0) % (per_row + 1);
    for (std::uint32_t t = 0; t < count; ++t)
      row.push_back(static_cast<std::int32_t>(rng.word(static_cast<std::uint64_t>(i), t + 1) % n));
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    for (const std::int32_t c : row) {
      a.col.push_back(c);
      a.val.push_back(0.5f + rng.uniform(static_cast<std::uint64_t>(i), 100 + c));
    }
    a.row_ptr.push_back(static_cast<std::int32_t>(a.col.size()));
  }
  return a;
}

/// Sets the SpMM cache budget for one scope (the rule of spmm_cache_budget() again after it).
class ScopedSpmmBudget {
 public:
  explicit ScopedSpmmBudget(double mib) { kernels::set_spmm_cache_budget(mib * (1 << 20)); }
  ~ScopedSpmmBudget() { kernels::set_spmm_cache_budget(0.0); }
  ScopedSpmmBudget(const ScopedSpmmBudget&) = delete;
  ScopedSpmmBudget& operator=(const ScopedSpmmBudget&) = delete;
};

TEST(SpmmCacheBudget, IsAQuarterOfTheL3Within16And64MiBAndCanBeSet) {
  const double mib = 1 << 20, l3 = kernels::detected_l3_bytes();
  EXPECT_EQ(kernels::spmm_cache_budget(), std::clamp(l3 / 4.0, 16.0 * mib, 64.0 * mib))
      << "L3 " << l3;
  {
    const ScopedSpmmBudget budget(3.0);
    EXPECT_EQ(kernels::spmm_cache_budget(), 3.0 * mib);
  }
  EXPECT_EQ(kernels::spmm_cache_budget(), std::clamp(l3 / 4.0, 16.0 * mib, 64.0 * mib));
}

TEST(SpmmCacheBudget, AFeatureBlockIsEveryColumnOrWholeRegisterGroupsThatFit) {
  const ScopedSpmmBudget budget(1.0);  // 1 MiB: 262,144 floats
  EXPECT_EQ(kernels::spmm_feature_block(1000, 100), 100);  // 400 KB: every column
  EXPECT_EQ(kernels::spmm_feature_block(1000, 1000), 256);  // 262 columns fit: two groups of 128
  EXPECT_EQ(kernels::spmm_feature_block(870, 512), 256);  // 301 fit
  EXPECT_EQ(kernels::spmm_feature_block(1600, 256), 128);  // 163 fit: 128 + 128, not 160 + 96
  EXPECT_EQ(kernels::spmm_feature_block(2600, 256), 64);  // 100 fit: groups of 64, not 96 + 96 + 64
  EXPECT_EQ(kernels::spmm_feature_block(6553, 100), 32);  // 40 fit
  EXPECT_EQ(kernels::spmm_feature_block(4096, 70), 64);  // 64 fit, of 70
  EXPECT_EQ(kernels::spmm_feature_block(100000, 64), 16);  // not even 16 fit: 16 at least
  EXPECT_EQ(kernels::spmm_feature_block(100000, 8), 8);  // never more than f
}

TEST_F(KernelModes, SpmmFeatureBlocksAndTransposePartialsMatchNaiveLoops) {
  // With a 16 MiB budget, 70000 x 64 floats of x exceed it: spmm runs in feature blocks, and
  // spmm_transpose's partials (one per thread) in blocks too.
  const ScopedSpmmBudget budget(16.0);
  const std::int64_t n = 70000, f = 64;
  const test::HostCsr h = large_random_csr(n, n, 6, 16);
  const CsrMatrix a = h.to_device();
  const Matrix x = random_matrix(n, f, 17);
  Matrix y(n, f), yt(n, f);
  kernels::spmm(cpu(), a.view(), x.view(), 0.0f, y.view());
  kernels::spmm_transpose(cpu(), a.view(), x.view(), 0.0f, yt.view());
  std::vector<double> want(static_cast<std::size_t>(n * f), 0.0), want_t(want.size(), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int32_t k = h.row_ptr[i]; k < h.row_ptr[i + 1]; ++k)
      for (std::int64_t j = 0; j < f; ++j) {
        want[i * f + j] += h.val[k] * x(h.col[k], j);
        want_t[h.col[k] * f + j] += h.val[k] * x(i, j);
      }
  expect_near_all(y.host(), want, kTol);
  expect_near_all(yt.host(), want_t, kTol);
}

TEST_F(KernelModes, SpmmBiasWithBetaInFeatureBlocksCopiedOrGatheredInPlace) {
  // x (70000 x 64 floats) exceeds a 16 MiB cache budget, so spmm runs in feature blocks of 48
  // and 16 columns. 70000 rows gather each x row about 3 times: each block of x is copied into a
  // contiguous array first; 2000 rows gather it about 0.1 times: the blocks are read in place.
  const ScopedSpmmBudget budget(16.0);
  const std::int64_t cols = 70000, f = 64;
  const Matrix x = random_matrix(cols, f, 18), b = random_matrix(1, f, 19);
  for (const std::int64_t rows : {cols, std::int64_t{2000}}) {
    const test::HostCsr h = large_random_csr(rows, cols, 6, 20);
    const CsrMatrix a = h.to_device();
    Matrix y = random_matrix(rows, f, 21);
    const std::vector<float> y0 = y.to_host();
    kernels::spmm_bias(cpu(), a.view(), x.view(), 0.5f, b.data(), y.view());
    std::vector<double> want(static_cast<std::size_t>(rows * f));
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < f; ++j) {
        double s = 0.5 * y0[static_cast<std::size_t>(i * f + j)] + b(0, j);
        for (std::int32_t k = h.row_ptr[i]; k < h.row_ptr[i + 1]; ++k) s += h.val[k] * x(h.col[k], j);
        want[static_cast<std::size_t>(i * f + j)] = s;
      }
    SCOPED_TRACE("rows = " + std::to_string(rows));
    expect_near_all(y.host(), want, kTol);
  }
}

/// Every multi-versioned kernel on fixed inputs, its outputs concatenated.
std::vector<float> run_all_kernels() {
  std::vector<float> out;
  auto keep = [&](const Matrix& m) {
    const std::vector<float> v = m.to_host();
    out.insert(out.end(), v.begin(), v.end());
  };
  // GEMM shapes: wide and narrow outputs (both tile shapes), edges, two depth blocks, the deep
  // schedule.
  struct Shape { std::int64_t m, k, n; };
  for (const Shape s : {Shape{45, 300, 70}, Shape{130, 20, 9}, Shape{29, 9000, 17}}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const Matrix a = ta ? random_matrix(s.k, s.m, 20) : random_matrix(s.m, s.k, 20);
      const Matrix b = tb ? random_matrix(s.n, s.k, 21) : random_matrix(s.k, s.n, 21);
      Matrix y = random_matrix(s.m, s.n, 22);
      kernels::gemm(cpu(), ta, tb, 0.75f, a.view(), b.view(), t == 3 ? 0.0f : 0.5f, y.view());
      keep(y);
    }
  }
  {
    const Matrix a1 = random_matrix(77, 260, 23), w1 = random_matrix(260, 40, 24);
    const Matrix a2 = random_matrix(77, 30, 25), w2 = random_matrix(30, 40, 26);
    const Matrix b = random_matrix(1, 40, 27);
    Matrix y(77, 40);
    kernels::linear(cpu(), a1.view(), w1.view(), a2.view(), w2.view(), b.data(), y.view());
    keep(y);
    Matrix gw = random_matrix(260, 40, 28), gb = random_matrix(1, 40, 29);
    kernels::linear_grad(cpu(), a1.view(), y.view(), gw.view(), gb.data());
    keep(gw);
    keep(gb);
  }
  // ELU and its backward, in place as the layers call them: 1000 + 37 values (a scalar tail on
  // every width), spread over [-40, 8] (the clamp at -30, both signs of zero).
  {
    Matrix x = random_matrix(1, 1037, 43);
    for (float& v : x.host()) v = v * 24.0f - 16.0f;
    x.host()[0] = 0.0f;
    x.host()[1] = -0.0f;
    kernels::elu_forward(cpu(), x.view(), x.view());
    keep(x);
    Matrix g = random_matrix(1, 1037, 44);
    kernels::elu_backward(cpu(), x.view(), g.view(), g.view());
    keep(g);
  }
  // ReLU, its backward and its backward after dropout in place, on the same kind of values.
  {
    Matrix x = random_matrix(1, 1037, 45);
    for (float& v : x.host()) v = v * 2.0f - 1.0f;
    x.host()[0] = 0.0f;
    x.host()[1] = -0.0f;
    kernels::relu_forward(cpu(), x.view(), x.view());
    keep(x);
    Matrix g = random_matrix(1, 1037, 46);
    kernels::relu_backward(cpu(), x.view(), g.view(), g.view());
    keep(g);
    kernels::relu_dropout_backward(cpu(), 0.3f, x.view(), g.view(), g.view());
    keep(g);
  }
  // Dropout's mask applied per instruction set, with and without the ReLU in its pass, on rows
  // drawn one at a time (100 columns) and in batches (37 columns).
  for (const std::int64_t f : {37, 100}) {
    std::vector<GlobalId> ids(31);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<GlobalId>(3 * i + 1);
    const RngKey key{3, RngPurpose::dropout, 1, 2};
    Matrix x = random_matrix(31, f, 47);
    for (float& v : x.host()) v = v * 2.0f - 1.0f;
    Matrix y(31, f);
    kernels::dropout_forward(cpu(), key, ids.data(), 0.4f, x.view(), y.view());
    keep(y);
    kernels::relu_dropout_forward(cpu(), key, ids.data(), 0.4f, x.view(), x.view());
    keep(x);
  }
  // SpMM widths: every vector group (8, 4, 2, 1 vectors of every width) and scalar tails.
  const test::HostCsr h = random_csr(300, 250, 20, true, 30);
  const CsrMatrix a = h.to_device();
  CsrView structure = a.view();
  structure.val = nullptr;
  for (const std::int64_t f : {1, 3, 16, 37, 100, 200, 513}) {
    const Matrix x = random_matrix(250, f, 31), xt = random_matrix(300, f, 32);
    const Matrix b = random_matrix(1, f, 33);
    for (const CsrView& av : {a.view(), structure}) {
      Matrix y = random_matrix(300, f, 34);
      kernels::spmm(cpu(), av, x.view(), 0.5f, y.view());
      keep(y);
      kernels::spmm_bias(cpu(), av, x.view(), 0.0f, b.data(), y.view());
      keep(y);
      Matrix yt = random_matrix(250, f, 35);
      kernels::spmm_transpose(cpu(), av, xt.view(), 0.5f, yt.view());
      keep(yt);
    }
  }
  // Attention: scores (dot products), the weighted aggregation and its backward, 1 and 3 heads
  // of widths with and without scalar tails.
  for (const std::int32_t heads : {1, 3}) {
    for (const std::int64_t f : {8, 37, 64}) {
      const std::int64_t w = heads * f;
      const test::HostCsr g = random_csr(120, 120, 25, false, 36);
      const CsrMatrix ga = g.to_device();
      std::vector<std::int32_t> t_ptr(121, 0), t_col(g.col.size()), t_to_a(g.col.size());
      for (const std::int32_t c : g.col) ++t_ptr[c + 1];
      for (int c = 0; c < 120; ++c) t_ptr[c + 1] += t_ptr[c];
      std::vector<std::int32_t> pos(t_ptr.begin(), t_ptr.end() - 1);
      for (std::int32_t v = 0; v < 120; ++v)
        for (std::int32_t k = g.row_ptr[v]; k < g.row_ptr[v + 1]; ++k) {
          t_col[pos[g.col[k]]] = v;
          t_to_a[pos[g.col[k]]++] = k;
        }
      const CsrView at{120, 120, ga.nnz(), t_ptr.data(), t_col.data(), nullptr};
      const Matrix z = random_matrix(120, w, 37), att = random_matrix(heads, f, 38);
      const Matrix gy = random_matrix(120, w, 39);
      Matrix s_dst(120, heads), s_src(120, heads), y(120, w), gz(120, w), gs_dst(120, heads),
          gs_src(120, heads), alpha(1, ga.nnz() * heads), edge(1, ga.nnz() * heads);
      // Scores from z (source) and from gy (destination): two calls, each leaving the other's
      // scores (n_dst 0: none of the first call's destination rows; the second's source scores
      // land in a scratch).
      Matrix unused(120, heads);
      kernels::head_scores(cpu(), z.view(), 0, att.data(), att.data(), heads, s_dst.data(),
                           s_src.data());
      kernels::head_scores(cpu(), gy.view(), 120, att.data(), att.data(), heads, s_dst.data(),
                           unused.data());
      // Without and with attention dropout (its own path through the SpMM row kernel).
      std::vector<GlobalId> ids(120);
      for (int i = 0; i < 120; ++i) ids[static_cast<std::size_t>(i)] = 7 + 2 * i;
      std::vector<float> mask(static_cast<std::size_t>(ga.nnz() * heads));
      kernels::edge_dropout_mask(cpu(), RngKey{5, RngPurpose::attention_dropout, 0, 0},
                                 ids.data(), 0.4f, ga.view(), heads, mask.data());
      const float* masked = mask.data();
      for (const float* drop : {static_cast<const float*>(nullptr), masked}) {
        kernels::gat_aggregate(cpu(), ga.view(), z.view(), s_dst.data(), s_src.data(), heads,
                               0.2f, alpha.data(), drop, y.view());
        kernels::gat_aggregate_backward(cpu(), ga.view(), at, t_to_a.data(), z.view(),
                                        s_dst.data(), s_src.data(), heads, 0.2f, alpha.data(),
                                        drop, gy.view(), edge.data(), gs_dst.data(),
                                        gs_src.data(), gz.view());
        for (const Matrix* m : {&s_dst, &s_src, &y, &alpha, &gz, &gs_dst, &gs_src}) keep(*m);
      }
    }
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_F(KernelModes, PortableNumericsGiveTheSameBitsOnEveryInstructionSet) {
  kernels::set_cpu_numerics(CpuNumerics::portable);
  kernels::set_cpu_isa_limit(CpuIsa::sse2);
  const std::vector<float> base = run_all_kernels();
  const int widest = static_cast<int>(kernels::detected_cpu_isa());
  if (widest == 0) GTEST_SKIP() << "this CPU has only the baseline instruction set";
  for (int isa = 1; isa <= widest; ++isa) {
    kernels::set_cpu_isa_limit(static_cast<CpuIsa>(isa));
    ASSERT_EQ(kernels::cpu_isa(), static_cast<CpuIsa>(isa));
    EXPECT_TRUE(same_bits(run_all_kernels(), base))
        << kernels::to_string(static_cast<CpuIsa>(isa)) << " differs from sse2";
  }
}

TEST_F(KernelModes, FastNumericsAgreeAcrossFmaInstructionSetsAndFuse) {
  if (kernels::detected_cpu_isa() < CpuIsa::avx512)
    GTEST_SKIP() << "needs AVX-512 to compare two FMA instruction sets";
  kernels::set_cpu_numerics(CpuNumerics::fast);
  kernels::set_cpu_isa_limit(CpuIsa::avx2);
  const std::vector<float> avx2 = run_all_kernels();
  kernels::set_cpu_isa_limit(CpuIsa::avx512);
  EXPECT_TRUE(same_bits(run_all_kernels(), avx2));
  // And the fast mode does fuse (it differs from portable somewhere), while on the baseline,
  // which has no FMA, it is the portable mode.
  kernels::set_cpu_numerics(CpuNumerics::portable);
  EXPECT_FALSE(same_bits(run_all_kernels(), avx2));
  kernels::set_cpu_isa_limit(CpuIsa::sse2);
  const std::vector<float> portable = run_all_kernels();
  kernels::set_cpu_numerics(CpuNumerics::fast);
  EXPECT_TRUE(same_bits(run_all_kernels(), portable));
}

TEST_F(KernelModes, ResultsDoNotDependOnTheThreadCount) {
  // spmm_transpose is excluded: its per-thread partials are summed in thread order.
  auto run = [] {
    std::vector<float> out;
    // 20000 rows: linear_grad takes the deep schedule (threads own rectangles of gw).
    const Matrix a = random_matrix(20000, 300, 40), w = random_matrix(300, 70, 41);
    Matrix y(20000, 70);
    kernels::linear(cpu(), a.view(), w.view(), {}, {}, nullptr, y.view());
    Matrix gw(300, 70), gb(1, 70);
    kernels::linear_grad(cpu(), a.view(), y.view(), gw.view(), gb.data());
    const test::HostCsr h = random_csr(3000, 20000, 30, true, 42);
    const CsrMatrix s = h.to_device();
    Matrix z(3000, 70);
    kernels::spmm(cpu(), s.view(), y.view(), 0.0f, z.view());
    for (const Matrix* m : {&y, &gw, &gb, &z}) {
      const std::vector<float> v = m->to_host();
      out.insert(out.end(), v.begin(), v.end());
    }
    return out;
  };
  omp_set_num_threads(1);
  const std::vector<float> one = run();
  for (const int t : {2, 3, 5}) {
    omp_set_num_threads(t);
    EXPECT_TRUE(same_bits(run(), one)) << t << " threads";
  }
}

// The split aggregation (models/local_graph.hpp, OperatorForm::split): spmm over the first
// columns of every row, then spmm_bias with beta = 1 over the rest, gives the bits of one
// spmm_bias over the whole matrix, on every instruction set, in both numerics modes, for every
// vector group and scalar tails, and for any thread count.
TEST_F(KernelModes, ASplitAggregationGivesTheBitsOfTheWhole) {
  const test::HostCsr h = random_csr(300, 250, 20, true, 40);
  const std::int32_t split = 170;  // columns [0, 170) then [170, 250)
  test::HostCsr lo, hi;
  lo.rows = hi.rows = h.rows;
  lo.cols = split;
  hi.cols = h.cols - split;
  lo.row_ptr = hi.row_ptr = {0};
  for (std::int64_t i = 0; i < h.rows; ++i) {
    // Columns ascending within a row, so the first part's entries come first.
    for (std::int32_t k = h.row_ptr[i]; k < h.row_ptr[i + 1]; ++k) {
      ASSERT_TRUE(k == h.row_ptr[i] || h.col[k - 1] < h.col[k]);
      test::HostCsr& part = h.col[k] < split ? lo : hi;
      part.col.push_back(h.col[k] < split ? h.col[k] : h.col[k] - split);
      part.val.push_back(h.val[k]);
    }
    lo.row_ptr.push_back(static_cast<std::int32_t>(lo.col.size()));
    hi.row_ptr.push_back(static_cast<std::int32_t>(hi.col.size()));
  }
  const CsrMatrix a = h.to_device(), a_lo = lo.to_device(), a_hi = hi.to_device();
  for (const CpuNumerics numerics : {CpuNumerics::portable, CpuNumerics::fast}) {
    kernels::set_cpu_numerics(numerics);
    for (int isa = 0; isa <= static_cast<int>(kernels::detected_cpu_isa()); ++isa) {
      kernels::set_cpu_isa_limit(static_cast<CpuIsa>(isa));
      for (const int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        for (const std::int64_t f : {1, 3, 16, 37, 200}) {
          const Matrix x = random_matrix(250, f, 41), b = random_matrix(1, f, 42);
          const Matrix y0 = random_matrix(300, f, 43);
          for (const float beta : {0.0f, 0.5f}) {
            Matrix whole = y0.clone(), parts = y0.clone();
            kernels::spmm_bias(cpu(), a.view(), x.view(), beta, b.data(), whole.view());
            kernels::spmm(cpu(), a_lo.view(), x.view().rows_range(0, split), beta, parts.view());
            kernels::spmm_bias(cpu(), a_hi.view(), x.view().rows_range(split, 250), 1.0f, b.data(),
                               parts.view());
            EXPECT_TRUE(same_bits(parts.to_host(), whole.to_host()))
                << kernels::to_string(static_cast<CpuIsa>(isa)) << ", " << threads
                << " threads, F = " << f << ", beta " << beta;
          }
        }
      }
    }
  }
}

TEST(CpuIsa, NamesRoundTripAndTheLimitClampsToTheCpu) {
  for (const CpuIsa isa : {CpuIsa::sse2, CpuIsa::avx2, CpuIsa::avx512})
    EXPECT_EQ(kernels::parse_cpu_isa(kernels::to_string(isa)), isa);
  EXPECT_THROW(kernels::parse_cpu_isa("avx1024"), ConfigError);
  EXPECT_EQ(kernels::parse_cpu_numerics("portable"), CpuNumerics::portable);
  EXPECT_EQ(kernels::parse_cpu_numerics("fast"), CpuNumerics::fast);
  EXPECT_THROW(kernels::parse_cpu_numerics("exact"), ConfigError);
  kernels::set_cpu_isa_limit(CpuIsa::avx512);
  EXPECT_EQ(kernels::cpu_isa(), kernels::detected_cpu_isa());
  kernels::set_cpu_isa_limit(CpuIsa::sse2);
  EXPECT_EQ(kernels::cpu_isa(), CpuIsa::sse2);
  kernels::set_cpu_isa_limit(CpuIsa::avx512);
}

// The batched draw the compact (sparsified-feature) kernels take their dropout masks from gives
// CounterRng::word's words at scattered, unsorted, repeated positions, including positions whose
// block index fills the counter's high word, on every instruction set the CPU has.
TEST_F(KernelModes, PhiloxWordsAtScatteredPositionsEqualSingleWords) {
  const CounterRng rng({7, RngPurpose::dropout, 2, 0});
  std::vector<std::uint64_t> at = {0, 1, 2, 3, 4, 8415, 5, 5, 1ull << 34, (1ull << 34) + 3, ~0ull};
  for (std::uint64_t j = 0; at.size() < 200; ++j) at.push_back((j * 2654435761ull) % 100000);
  for (const CpuIsa isa : {CpuIsa::sse2, CpuIsa::avx2, CpuIsa::avx512}) {
    if (isa > kernels::detected_cpu_isa()) continue;
    kernels::set_cpu_isa_limit(isa);
    for (const std::uint64_t item : {0ull, 34492ull, (1ull << 40) + 9})
      for (const std::int64_t count : {1, 63, 64, 65, 200}) {
        std::vector<std::uint32_t> got(static_cast<std::size_t>(count));
        rng.words_at(item, at.data(), count, got.data());
        for (std::int64_t s = 0; s < count; ++s)
          ASSERT_EQ(got[static_cast<std::size_t>(s)], rng.word(item, at[static_cast<std::size_t>(s)]))
              << kernels::to_string(isa) << " item " << item << " position " << at[static_cast<std::size_t>(s)];
      }
  }
}

}  // namespace
}  // namespace halognn
