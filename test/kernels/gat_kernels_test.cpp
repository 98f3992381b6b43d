// Graph-attention kernels against a naive double-precision implementation; their backward
// against central differences of that double implementation.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/kernels.hpp"
#include "core/kernels/reference/exp_math.hpp"
#include "test/kernels/kernel_test_util.hpp"

namespace halognn {
namespace {

using kernels::CpuIsa;
using test::expect_near_all;
using test::random_csr;
using test::random_matrix;

const Device& cpu() { return *cpu_device(); }

TEST(HeadKernels, ScoresMeanAndTheirBackwardMatchNaiveLoopsOnEveryInstructionSet) {
  // Small and parallel sizes (rows x width >= 2^16 runs on the threads), the destination rows
  // ending inside a block of 64 rows, on a block boundary, at 0 and at the last row.
  struct Shape {
    int rows, heads, f, n_dst;
  };
  for (const Shape sh : {Shape{23, 3, 5, 23}, Shape{150, 3, 5, 100}, Shape{150, 1, 7, 0},
                         Shape{3000, 2, 24, 2000}, Shape{3000, 2, 24, 1984}}) {
    const int heads = sh.heads, f = sh.f, rows = sh.rows, n_dst = sh.n_dst;
    const std::string where = "rows " + std::to_string(rows) + ", heads " + std::to_string(heads) +
                              ", n_dst " + std::to_string(n_dst);
    const Matrix z = random_matrix(rows, heads * f, 1);
    const Matrix a_dst = random_matrix(heads, f, 2), a_src = random_matrix(heads, f, 5);
    // Beyond n_dst rows s_dst must stay as it was.
    std::vector<float> s_dst(rows * heads, -7.0f), s_src(rows * heads);
    kernels::head_scores(cpu(), z.view(), n_dst, a_dst.data(), a_src.data(), heads, s_dst.data(),
                         s_src.data());
    for (int v = 0; v < rows; ++v) {
      for (int h = 0; h < heads; ++h) {
        double want_dst = 0.0, want_src = 0.0;
        for (int j = 0; j < f; ++j) {
          want_dst += double(a_dst(h, j)) * z(v, h * f + j);
          want_src += double(a_src(h, j)) * z(v, h * f + j);
        }
        if (v < n_dst) {
          EXPECT_NEAR(s_dst[v * heads + h], want_dst, 1e-5) << where << ", row " << v;
        } else {
          EXPECT_EQ(s_dst[v * heads + h], -7.0f) << where << ", row " << v;
        }
        EXPECT_NEAR(s_src[v * heads + h], want_src, 1e-5) << where << ", row " << v;
      }
    }
    // The same vector for both: the destination scores are the source scores' bits.
    std::vector<float> same_dst(rows * heads), same_src(rows * heads);
    kernels::head_scores(cpu(), z.view(), n_dst, a_src.data(), a_src.data(), heads,
                         same_dst.data(), same_src.data());
    for (int e = 0; e < n_dst * heads; ++e) ASSERT_EQ(same_dst[e], same_src[e]) << where;
    const Matrix gs_dst = random_matrix(rows, heads, 3), gs_src = random_matrix(rows, heads, 6);
    const Matrix gz0 = random_matrix(rows, heads * f, 4);
    const CpuIsa widest = kernels::detected_cpu_isa();
    for (int isa = 0; isa <= static_cast<int>(widest); ++isa) {
      kernels::set_cpu_isa_limit(static_cast<CpuIsa>(isa));
      const std::string at = where + ", " + kernels::to_string(static_cast<CpuIsa>(isa));
      Matrix gz = gz0.clone();
      std::vector<float> ga_dst(heads * f, 1.0f), ga_src(heads * f, 2.0f);
      kernels::head_scores_backward(cpu(), z.view(), n_dst, a_dst.data(), a_src.data(), heads,
                                    gs_dst.data(), gs_src.data(), gz.view(), ga_dst.data(),
                                    ga_src.data());
      for (int h = 0; h < heads; ++h) {
        for (int j = 0; j < f; ++j) {
          double want_dst = 1.0, want_src = 2.0;
          for (int v = 0; v < rows; ++v) {
            if (v < n_dst) want_dst += double(gs_dst(v, h)) * z(v, h * f + j);
            want_src += double(gs_src(v, h)) * z(v, h * f + j);
          }
          EXPECT_NEAR(ga_dst[h * f + j], want_dst, 1e-3) << at;
          EXPECT_NEAR(ga_src[h * f + j], want_src, 1e-3) << at;
          for (int v = 0; v < rows; ++v) {
            // The destination term first, then the source term, each a multiply then an add.
            float want = gz0(v, h * f + j);
            if (v < n_dst) want = gs_dst(v, h) * a_dst(h, j) + want;
            want = gs_src(v, h) * a_src(h, j) + want;
            ASSERT_EQ(gz(v, h * f + j), want) << at << ", row " << v << ", column " << h * f + j;
          }
        }
      }
    }
    kernels::set_cpu_isa_limit(widest);
  }
  const int heads = 3, f = 5, rows = 23;
  const Matrix z = random_matrix(rows, heads * f, 1);
  Matrix mean(rows, f), back(rows, heads * f);
  kernels::head_mean(cpu(), z.view(), heads, mean.view());
  kernels::head_mean_backward(cpu(), mean.view(), heads, back.view());
  for (int v = 0; v < rows; ++v) {
    for (int j = 0; j < f; ++j) {
      double want = 0.0;
      for (int h = 0; h < heads; ++h) want += z(v, h * f + j);
      EXPECT_NEAR(mean(v, j), want / heads, 1e-6);
      for (int h = 0; h < heads; ++h) EXPECT_NEAR(back(v, h * f + j), want / heads / heads, 1e-6);
    }
  }
}

/// The aggregation in double: returns y (rows x heads*f). `drop` (nnz x heads, empty: none)
/// multiplies each coefficient after the softmax (attention dropout).
std::vector<double> naive_gat(const test::HostCsr& a, const std::vector<double>& z,
                              const std::vector<double>& s_dst, const std::vector<double>& s_src,
                              int heads, int f, double slope, const std::vector<float>& drop = {}) {
  const int width = heads * f;
  std::vector<double> y(static_cast<std::size_t>(a.rows * width), 0.0);
  for (std::int64_t v = 0; v < a.rows; ++v) {
    for (int h = 0; h < heads; ++h) {
      std::vector<double> w;
      double sum = 0.0;
      for (std::int32_t k = a.row_ptr[v]; k < a.row_ptr[v + 1]; ++k) {
        const double pre = s_dst[v * heads + h] + s_src[a.col[k] * heads + h];
        const double e = pre > 0 ? pre : slope * pre;
        w.push_back(std::exp(e) * (a.val.empty() ? 1.0 : a.val[k]));
        sum += w.back();
      }
      for (std::int32_t k = a.row_ptr[v]; k < a.row_ptr[v + 1]; ++k) {
        const double c = w[k - a.row_ptr[v]] / sum * (drop.empty() ? 1.0 : drop[k * heads + h]);
        for (int j = 0; j < f; ++j) y[v * width + h * f + j] += c * z[a.col[k] * width + h * f + j];
      }
    }
  }
  return y;
}

struct Transposed {
  std::vector<std::int32_t> row_ptr, col, to_a;
};

Transposed transpose(const test::HostCsr& a) {
  Transposed t;
  t.row_ptr.assign(static_cast<std::size_t>(a.cols + 1), 0);
  for (auto c : a.col) ++t.row_ptr[c + 1];
  for (std::int64_t c = 0; c < a.cols; ++c) t.row_ptr[c + 1] += t.row_ptr[c];
  std::vector<std::int32_t> pos(t.row_ptr.begin(), t.row_ptr.end() - 1);
  t.col.resize(a.col.size());
  t.to_a.resize(a.col.size());
  for (std::int64_t v = 0; v < a.rows; ++v) {
    for (std::int32_t k = a.row_ptr[v]; k < a.row_ptr[v + 1]; ++k) {
      const auto p = pos[a.col[k]]++;
      t.col[p] = static_cast<std::int32_t>(v);
      t.to_a[p] = k;
    }
  }
  return t;
}

std::vector<double> to_double(const Matrix& m) { return {m.host().begin(), m.host().end()}; }

class GatAggregate : public ::testing::TestWithParam<std::tuple<int, bool, bool>> {};

TEST_P(GatAggregate, ForwardMatchesNaiveAndBackwardMatchesFiniteDifferences) {
  const auto [heads, multiplicity, dropped] = GetParam();
  const int f = 3, rows = 12, cols = 17;
  const double slope = 0.2;
  const auto host = random_csr(rows, cols, 5, multiplicity, 21);  // row 0..: some are empty
  const CsrMatrix a = host.to_device();
  const Matrix z = random_matrix(cols, heads * f, 5);
  const Matrix s_dst = random_matrix(rows, heads, 6), s_src = random_matrix(cols, heads, 7);
  Matrix y(rows, heads * f);
  std::vector<float> alpha(static_cast<std::size_t>(a.nnz() * heads));
  // Attention dropout: a fixed mask (multipliers 0 or 1/(1-p)), so the function stays smooth.
  std::vector<float> drop;
  if (dropped) {
    std::vector<GlobalId> ids(static_cast<std::size_t>(cols));
    for (int i = 0; i < cols; ++i) ids[i] = 40 + 3 * i;
    drop.resize(alpha.size());
    kernels::edge_dropout_mask(cpu(), RngKey{3, RngPurpose::attention_dropout, 1, 0}, ids.data(),
                               0.4f, a.view(), heads, drop.data());
    ASSERT_NE(std::count(drop.begin(), drop.end(), 0.0f), 0) << "no coefficient dropped";
  }
  const float* dp = dropped ? drop.data() : nullptr;
  kernels::gat_aggregate(cpu(), a.view(), z.view(), s_dst.data(), s_src.data(), heads,
                         static_cast<float>(slope), alpha.data(), dp, y.view());
  auto zd = to_double(z), sdd = to_double(s_dst), ssd = to_double(s_src);
  expect_near_all(y.host(), naive_gat(host, zd, sdd, ssd, heads, f, slope, drop), 1e-5);

  // Backward of L = <y, r>. FD in double on the naive function with h = 1e-6: truncation
  // O(h^2) and rounding ~1e-16/1e-6 are both far below the float32 error of the kernel
  // (relative ~1e-6 on O(1) sums), so 1e-4 absolute is a safe bound.
  const Matrix r = random_matrix(rows, heads * f, 8);
  const auto rd = to_double(r);
  const Transposed t = transpose(host);
  const CsrView at{cols, rows, a.nnz(), t.row_ptr.data(), t.col.data(), nullptr};
  std::vector<float> edge(alpha.size()), gs_dst(rows * heads), gs_src(cols * heads);
  Matrix gz(cols, heads * f);
  kernels::gat_aggregate_backward(cpu(), a.view(), at, t.to_a.data(), z.view(), s_dst.data(),
                                  s_src.data(), heads, static_cast<float>(slope), alpha.data(), dp,
                                  r.view(), edge.data(), gs_dst.data(), gs_src.data(), gz.view());
  auto objective = [&](const std::vector<double>& zz, const std::vector<double>& sd,
                       const std::vector<double>& ss) {
    const auto yy = naive_gat(host, zz, sd, ss, heads, f, slope, drop);
    double l = 0.0;
    for (std::size_t i = 0; i < yy.size(); ++i) l += yy[i] * rd[i];
    return l;
  };
  const double h = 1e-6;
  auto fd = [&](std::vector<double>& target, std::size_t i) {
    const double orig = target[i];
    target[i] = orig + h;
    const double lp = objective(zd, sdd, ssd);
    target[i] = orig - h;
    const double lm = objective(zd, sdd, ssd);
    target[i] = orig;
    return (lp - lm) / (2 * h);
  };
  // fd() perturbs zd / sdd / ssd in place, which objective() reads.
  for (std::size_t i = 0; i < zd.size(); ++i) EXPECT_NEAR(gz.host()[i], fd(zd, i), 1e-4) << i;
  for (std::size_t i = 0; i < sdd.size(); ++i) EXPECT_NEAR(gs_dst[i], fd(sdd, i), 1e-4) << i;
  for (std::size_t i = 0; i < ssd.size(); ++i) EXPECT_NEAR(gs_src[i], fd(ssd, i), 1e-4) << i;
}

INSTANTIATE_TEST_SUITE_P(Kernels, GatAggregate,
                         ::testing::Values(std::make_tuple(1, false, false),
                                           std::make_tuple(3, false, false),
                                           std::make_tuple(2, true, false),
                                           std::make_tuple(3, false, true),
                                           std::make_tuple(2, true, true)));

/// The sum of 16 lanes added as halves, quarters, eighths, pairs (the kernels' fixed tree; l is a
/// copy).
float lane_tree(const float (&in)[16]) {
  float l[16];
  std::copy(std::begin(in), std::end(in), l);
  for (int width = 8; width >= 1; width /= 2)
    for (int i = 0; i < width; ++i) l[i] = l[i] + l[i + width];
  return l[0];
}

/// exp_nonpositive (the edge softmax's exp) against the double-precision exp, rounded: every
/// 211th float from -0 down to -87 within 1 ulp, then the values with their own rules.
TEST(ExpNonpositive, IsExpWithinOneUlpDownToMinus87AndZeroBelow) {
  std::int64_t worst = 0, swept = 0;
  for (std::uint32_t bits = 0x80000000u; bits <= std::bit_cast<std::uint32_t>(-87.0f); bits += 211, ++swept) {
    const float x = std::bit_cast<float>(bits);
    const float got = kernels::reference::exp_nonpositive(x);
    const auto want = static_cast<float>(std::exp(static_cast<double>(x)));
    const std::int64_t ulps =
        std::abs(static_cast<std::int64_t>(std::bit_cast<std::int32_t>(got)) - std::bit_cast<std::int32_t>(want));
    ASSERT_LE(ulps, 1) << "x = " << x << ": " << got << " against " << want;
    worst = std::max(worst, ulps);
  }
  EXPECT_GT(swept, 5'000'000);
  using kernels::reference::exp_nonpositive;
  EXPECT_EQ(exp_nonpositive(0.0f), 1.0f);
  EXPECT_EQ(exp_nonpositive(-0.0f), 1.0f);
  EXPECT_EQ(exp_nonpositive(-1e-40f), 1.0f);  // a subnormal
  EXPECT_EQ(exp_nonpositive(std::nextafter(-87.0f, -100.0f)), 0.0f);
  EXPECT_EQ(exp_nonpositive(-1e30f), 0.0f);
  EXPECT_EQ(exp_nonpositive(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(exp_nonpositive(std::numeric_limits<float>::quiet_NaN())));
  std::printf("worst error over %lld floats: %lld ulp\n", static_cast<long long>(swept),
              static_cast<long long>(worst));
}

/// The coefficients gat_aggregate stores, computed the way gat_softmax_rows.inc documents them:
/// per destination row and head the scores LeakyReLU(s_dst + s_src), their maximum, exp of each
/// score minus it (times the entry's value), the sum with lane (k mod 16) taking the row's entries
/// k in order and the lanes added by lane_tree, each term times the sum's reciprocal. Degrees 0 to
/// about 50 (a 16-lane group and a remainder, several groups), scores spread so that some
/// exponentials are below exp(-87) (+0), with and without values, one, three and eight heads
/// (softmax_rows runs every head of a row at once, lane l of head h at l * heads + h), bit for bit
/// on every instruction set.
TEST(GatAggregate, SoftmaxGivesTheDocumentedOperationsBitsOnEveryInstructionSet) {
  const int rows = 300, cols = 80, f = 2;
  const float slope = 0.2f;
  const CpuIsa widest = kernels::detected_cpu_isa();
  for (const bool values : {false, true}) {
    const auto host = random_csr(rows, cols, 60, values, 61);
    const CsrMatrix a = host.to_device();
    for (const int heads : {1, 3, 8}) {
      const Matrix z = random_matrix(cols, heads * f, 62);
      Matrix sd = random_matrix(rows, heads, 63), ss = random_matrix(cols, heads, 64);
      for (float& x : ss.host()) x *= 80.0f;  // differences beyond 87 within a row
      std::vector<float> want(static_cast<std::size_t>(a.nnz() * heads));
      for (std::int64_t v = 0; v < rows; ++v) {
        const std::int32_t begin = host.row_ptr[v], end = host.row_ptr[v + 1];
        for (int h = 0; h < heads; ++h) {
          std::vector<float> e;
          float m = -std::numeric_limits<float>::infinity();
          for (std::int32_t k = begin; k < end; ++k) {
            const float x = sd(v, h) + ss(host.col[k], h);
            e.push_back(x > 0.0f ? x : slope * x);
            m = std::max(m, e.back());
          }
          float lanes[16] = {};
          for (std::int32_t k = begin; k < end; ++k) {
            float& w = e[k - begin];
            w = kernels::reference::exp_nonpositive(w - m);
            if (values) w = w * host.val[k];
            lanes[(k - begin) % 16] += w;
          }
          const float inv = 1.0f / lane_tree(lanes);
          for (std::int32_t k = begin; k < end; ++k) want[k * heads + h] = e[k - begin] * inv;
        }
      }
      EXPECT_GT(std::count(want.begin(), want.end(), 0.0f), 0) << "no exponential below exp(-87)";
      for (int isa = 0; isa <= static_cast<int>(widest); ++isa) {
        kernels::set_cpu_isa_limit(static_cast<CpuIsa>(isa));
        std::vector<float> alpha(want.size());
        Matrix y(rows, heads * f);
        kernels::gat_aggregate(cpu(), a.view(), z.view(), sd.data(), ss.data(), heads, slope, alpha.data(),
                               nullptr, y.view());
        EXPECT_EQ(alpha, want) << kernels::to_string(static_cast<CpuIsa>(isa)) << ", heads " << heads
                               << (values ? ", values" : "");
      }
      kernels::set_cpu_isa_limit(widest);
    }
  }
}

/// gat_aggregate_backward's outputs computed the way gat.cpp documents them, in float, one
/// operation at a time: the dot product gy_v . z_u of every entry with lane (j mod 16) taking the
/// products of columns j in ascending order (a multiply, then an add) and the 16 lanes added as
/// a fixed tree (lane_tree); gz as the SpMM adds (entries of the transposed structure in order, a
/// multiply, then an add, from 0); the softmax and LeakyReLU backward per destination row, its
/// two sums (alpha d, then the entries' gradients) with lane (k mod 16) taking the row's entries
/// k in order and the lanes added by lane_tree.
struct BackwardBits {
  std::vector<float> edge, gs_dst, gs_src, gz;
};

BackwardBits documented_backward(const test::HostCsr& a, const Transposed& t, const Matrix& z,
                                 const std::vector<float>& s_dst, const std::vector<float>& s_src,
                                 int heads, int f, float slope, const std::vector<float>& alpha,
                                 const float* drop, const Matrix& gy) {
  const std::int64_t w = heads * f, nnz = static_cast<std::int64_t>(a.col.size());
  BackwardBits b;
  b.edge.assign(static_cast<std::size_t>(nnz * heads), 0.0f);
  b.gs_dst.assign(static_cast<std::size_t>(a.rows * heads), 0.0f);
  b.gs_src.assign(static_cast<std::size_t>(a.cols * heads), 0.0f);
  b.gz.assign(static_cast<std::size_t>(a.cols * w), 0.0f);
  for (int h = 0; h < heads; ++h) {
    for (std::int64_t v = 0; v < a.rows; ++v) {
      const std::int32_t begin = a.row_ptr[v], end = a.row_ptr[v + 1];
      std::vector<float> d;
      for (std::int32_t k = begin; k < end; ++k) {
        float lanes[16] = {};
        for (int j = 0; j < f; ++j) {
          const float p = gy(v, h * f + j) * z(a.col[k], h * f + j);
          lanes[j % 16] = p + lanes[j % 16];
        }
        const float dot = lane_tree(lanes);
        d.push_back(drop ? dot * drop[k * heads + h] : dot);
      }
      float weighted[16] = {}, row_sum[16] = {};
      for (std::int32_t k = begin; k < end; ++k) {
        float& lane = weighted[(k - begin) % 16];
        lane = alpha[k * heads + h] * d[k - begin] + lane;
      }
      const float weighted_sum = lane_tree(weighted);
      for (std::int32_t k = begin; k < end; ++k) {
        const float de = alpha[k * heads + h] * (d[k - begin] - weighted_sum);
        const float pre = s_dst[v * heads + h] + s_src[a.col[k] * heads + h];
        const float dpre = pre > 0.0f ? de : slope * de;
        b.edge[k * heads + h] = dpre;
        row_sum[(k - begin) % 16] += dpre;
      }
      b.gs_dst[v * heads + h] = lane_tree(row_sum);
    }
    for (std::int64_t u = 0; u < a.cols; ++u) {
      float src_sum = 0.0f;
      for (std::int32_t k = t.row_ptr[u]; k < t.row_ptr[u + 1]; ++k) {
        const std::int64_t e = t.to_a[k];
        src_sum += b.edge[e * heads + h];
        const float c = alpha[e * heads + h] * (drop ? drop[e * heads + h] : 1.0f);
        for (int j = 0; j < f; ++j) {
          float& out = b.gz[u * w + h * f + j];
          const float p = c * gy(t.col[k], h * f + j);
          out = p + out;
        }
      }
      b.gs_src[u * heads + h] = src_sum;
    }
  }
  return b;
}

TEST(GatAggregateBackward, GivesTheDocumentedOperationsBitsOnEveryInstructionSet) {
  // 50 source rows of about 180 entries each in the transposed structure (its rows are hubs:
  // the gathered rows are requested ahead), widths with and without whole vector groups and
  // scalar tails (300: AVX-512's 16-vector group, then 2 vectors, then 12 columns), and two and
  // eight heads (the head's columns copied out of gy's rows first; the softmax's backward runs
  // every head of a row at once, lane l of head h at l * heads + h).
  const int rows = 600, cols = 50;
  const float slope = 0.2f;
  const auto host = random_csr(rows, cols, 30, false, 51);
  const CsrMatrix a = host.to_device();
  const Transposed t = transpose(host);
  const CsrView at{cols, rows, a.nnz(), t.row_ptr.data(), t.col.data(), nullptr};
  const CpuIsa widest = kernels::detected_cpu_isa();
  for (const int heads : {1, 2, 8}) {
    for (const int f : {5, 16, 37, 300}) {
      const Matrix z = random_matrix(cols, heads * f, 52), gy = random_matrix(rows, heads * f, 53);
      const Matrix sd = random_matrix(rows, heads, 54), ss = random_matrix(cols, heads, 55);
      const std::vector<float> s_dst(sd.host().begin(), sd.host().end());
      const std::vector<float> s_src(ss.host().begin(), ss.host().end());
      std::vector<float> alpha(static_cast<std::size_t>(a.nnz() * heads)), mask(alpha.size());
      std::vector<GlobalId> ids(static_cast<std::size_t>(cols));
      for (int i = 0; i < cols; ++i) ids[static_cast<std::size_t>(i)] = 9 + 5 * i;
      kernels::edge_dropout_mask(cpu(), RngKey{6, RngPurpose::attention_dropout, 2, 0},
                                 ids.data(), 0.3f, a.view(), heads, mask.data());
      for (const float* drop : {static_cast<const float*>(nullptr),
                                static_cast<const float*>(mask.data())}) {
        Matrix y(rows, heads * f);
        kernels::gat_aggregate(cpu(), a.view(), z.view(), s_dst.data(), s_src.data(), heads,
                               slope, alpha.data(), drop, y.view());
        const BackwardBits want =
            documented_backward(host, t, z, s_dst, s_src, heads, f, slope, alpha, drop, gy);
        for (int isa = 0; isa <= static_cast<int>(widest); ++isa) {
          kernels::set_cpu_isa_limit(static_cast<CpuIsa>(isa));
          std::vector<float> edge(alpha.size()), gs_dst(s_dst.size()), gs_src(s_src.size());
          Matrix gz(cols, heads * f);
          kernels::gat_aggregate_backward(cpu(), a.view(), at, t.to_a.data(), z.view(),
                                          s_dst.data(), s_src.data(), heads, slope, alpha.data(),
                                          drop, gy.view(), edge.data(), gs_dst.data(),
                                          gs_src.data(), gz.view());
          const std::vector<float> gzv(gz.host().begin(), gz.host().end());
          const std::string where = std::string(kernels::to_string(static_cast<CpuIsa>(isa))) +
                                    ", heads " + std::to_string(heads) + ", f " +
                                    std::to_string(f) + (drop ? ", dropout" : "");
          EXPECT_EQ(edge, want.edge) << where;
          EXPECT_EQ(gs_dst, want.gs_dst) << where;
          EXPECT_EQ(gs_src, want.gs_src) << where;
          EXPECT_EQ(gzv, want.gz) << where;
        }
        kernels::set_cpu_isa_limit(widest);
      }
    }
  }
}

TEST(EdgeDropoutMask, IsTheDocumentedDrawPerGlobalEdgeAndHead) {
  const int heads = 3, rows = 30, cols = 45;
  const float p = 0.3f;
  const auto host = random_csr(rows, cols, 8, false, 33);
  const CsrMatrix a = host.to_device();
  std::vector<GlobalId> ids(static_cast<std::size_t>(cols));
  for (int i = 0; i < cols; ++i) ids[i] = 5000 + 11 * i;
  const RngKey key{7, RngPurpose::attention_dropout, 4, 2};
  std::vector<float> mask(static_cast<std::size_t>(a.nnz() * heads));
  kernels::edge_dropout_mask(cpu(), key, ids.data(), p, a.view(), heads, mask.data());
  const CounterRng rng(key);
  std::int64_t kept = 0;
  for (std::int64_t v = 0; v < rows; ++v) {
    for (std::int32_t k = host.row_ptr[v]; k < host.row_ptr[v + 1]; ++k) {
      for (int h = 0; h < heads; ++h) {
        const float u = rng.uniform(static_cast<std::uint64_t>(ids[v]),
                                    static_cast<std::uint64_t>(ids[host.col[k]]) * heads + h);
        const float want = u >= p ? 1.0f / (1.0f - p) : 0.0f;
        EXPECT_EQ(mask[k * heads + h], want) << v << " " << k << " " << h;
        kept += want != 0.0f;
      }
    }
  }
  // About 1 - p of the coefficients survive.
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(mask.size()), 1.0 - p, 0.08);
  // p = 0 keeps everything at scale 1; p outside [0, 1) is refused.
  kernels::edge_dropout_mask(cpu(), key, ids.data(), 0.0f, a.view(), heads, mask.data());
  for (float m : mask) EXPECT_EQ(m, 1.0f);
  EXPECT_THROW(kernels::edge_dropout_mask(cpu(), key, ids.data(), 1.0f, a.view(), heads, mask.data()),
               ConfigError);
}

}  // namespace
}  // namespace halognn
