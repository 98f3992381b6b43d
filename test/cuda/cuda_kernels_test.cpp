// Every CUDA kernel against the CPU reference on fresh random inputs (skipped without a GPU).
// Bounds are per kernel: |gpu - cpu| <= tol * (1 + |cpu|). Row movement, ReLU and dropout are
// exact (the same float operations in the same order); sums differ only in summation order and
// fused multiply-adds, so they get a few float32 ulps of the operands' magnitude.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/data/feature_sparsify.hpp"
#include "core/kernels/cuda/cuda_kernels.hpp"
#include "core/kernels/kernels.hpp"
#include "test/cuda/cuda_test_util.hpp"

namespace halognn {
namespace {

using test::expect_close;
using test::expect_equal;
using test::random_csr;
using test::random_matrix;

class CudaKernels : public test::CudaTest {};

// Products of k terms in [-1, 1]: float32 error ~ k * 6e-8 of the magnitude; k <= 64 here.
constexpr double kDotTol = 1e-5;

TEST_F(CudaKernels, GemmMatchesReferenceForEveryTransposeAndShape) {
  struct Shape { std::int64_t m, k, n; };
  for (const Shape s : {Shape{37, 19, 23}, Shape{1, 1, 1}, Shape{0, 5, 7}, Shape{5, 0, 7},
                        Shape{64, 33, 1}}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const Matrix a = random_matrix(ta ? s.k : s.m, ta ? s.m : s.k, 1 + t);
      const Matrix b = random_matrix(tb ? s.n : s.k, tb ? s.k : s.n, 2 + t);
      for (const float beta : {0.0f, 0.5f}) {
        Matrix y = random_matrix(s.m, s.n, 3 + t);
        Matrix yg = up(y);
        if (beta == 0.0f && y.size() > 0) {  // beta == 0 must ignore NaN in y
          std::vector<float> nan(static_cast<std::size_t>(y.size()), std::nanf(""));
          gpu->copy_from_host(yg.data(), nan.data(), nan.size() * sizeof(float));
        }
        const Matrix ag = up(a), bg = up(b);
        kernels::gemm(*cpu, ta, tb, 0.7f, a.view(), b.view(), beta, y.view());
        kernels::gemm(*gpu, ta, tb, 0.7f, ag.view(), bg.view(), beta, yg.view());
        expect_close(yg.to_host(), y.to_host(), kDotTol, "gemm");
      }
    }
  }
}

TEST_F(CudaKernels, SpmmAndTransposeMatchReferenceWithAndWithoutValues) {
  struct Case { std::int64_t rows, cols; int per_row; std::int64_t f; };
  for (const Case c : {Case{53, 41, 7, 17}, Case{53, 41, 7, 1}, Case{200, 150, 30, 64},
                       Case{0, 9, 3, 5}, Case{9, 0, 3, 5}, Case{12, 12, 0, 8}}) {
    for (const bool values : {true, false}) {
      const test::HostCsr h = random_csr(c.rows, c.cols, c.per_row, values, 10 + c.f);
      const CsrMatrix a = h.to_device(), ag = up(h);
      for (const float beta : {0.0f, 1.0f, 0.5f}) {
        const Matrix x = random_matrix(c.cols, c.f, 11);
        Matrix y = random_matrix(c.rows, c.f, 12);
        const Matrix xg = up(x);
        Matrix yg = up(y);
        kernels::spmm(*cpu, a.view(), x.view(), beta, y.view());
        kernels::spmm(*gpu, ag.view(), xg.view(), beta, yg.view());
        expect_close(yg.to_host(), y.to_host(), kDotTol, "spmm");

        const Matrix xt = random_matrix(c.rows, c.f, 13);
        Matrix yt = random_matrix(c.cols, c.f, 14);
        const Matrix xtg = up(xt);
        Matrix ytg = up(yt);
        kernels::spmm_transpose(*cpu, a.view(), xt.view(), beta, yt.view());
        kernels::spmm_transpose(*gpu, ag.view(), xtg.view(), beta, ytg.view());
        expect_close(ytg.to_host(), yt.to_host(), kDotTol, "spmm_transpose");
      }
    }
  }
}

/// m with every entry replaced by its absolute value (on m's device, which is the host here).
Matrix absolute(const Matrix& m) {
  Matrix a = m.clone(m.device_ptr());
  for (std::int64_t i = 0; i < a.size(); ++i) a.data()[i] = std::fabs(a.data()[i]);
  return a;
}

// Sparsified features of 300 columns (a 44-wide tail chunk), k = 5: 70 rows (one expanded block)
// and two blocks and 7 rows more (the GPU expands kCompactExpandBytes of rows at a time), so the
// blocks' offsets, beta on the first block only and a short last block are all compared. The
// transposed product sums over every row, about 3,500 terms an entry at the second size, which
// cuBLAS adds in another order than the reference's ascending rows: the two differ by a few
// float32 units of the sum of the terms' magnitudes (seen on an H200: up to 0.4 of one, 2.4e-5 to
// 3.8e-5 on entries of 0.5 to 0.8 whose terms' magnitudes sum to about 1,600), so each entry is
// bounded by kDotTol (1 + |cpu|) + 8 * 2^-24 * (beta |out| + sum of |x| |in|), that sum computed
// by the CPU kernel on the absolute values (dropout keeps the same entries: its masks are keyed
// by node and column, not by value). A block lost or a wrong mask or scale moves an entry by a
// whole term.
TEST_F(CudaKernels, CompactProductsMatchReferenceWithAndWithoutDropout) {
  const std::int64_t cols = 300;
  const std::int64_t block = kernels::cuda::kCompactExpandBytes / (cols * static_cast<std::int64_t>(sizeof(float)));
  for (const std::int64_t rows : {std::int64_t{70}, 2 * block + 7}) {
    const Matrix raw = random_matrix(rows, cols, 31);
    const SparseFeatures sf = sparsify_features(raw.data(), rows, cols, 5, 3, 1.0);
    std::vector<float> cb_abs(sf.codebook.size());
    std::transform(sf.codebook.begin(), sf.codebook.end(), cb_abs.begin(), [](float v) { return std::fabs(v); });
    std::vector<GlobalId> ids(static_cast<std::size_t>(rows));
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<GlobalId>(3 * i + 1);
    const auto pos = up(sf.positions);
    const auto cb = up(sf.codebook);
    const auto base = up(sf.layout.slot_base);
    const auto ids_g = up(ids);
    for (const float p : {0.0f, 0.4f}) {
      const RngKey key{7, RngPurpose::dropout, 1, 0};
      const CompactView xc{rows, cols, sf.layout.slots(), sf.positions.data(), sf.codebook.data(),
                           sf.layout.slot_base.data(), p, key, ids.data()};
      const CompactView xa{rows, cols, sf.layout.slots(), sf.positions.data(), cb_abs.data(),
                           sf.layout.slot_base.data(), p, key, ids.data()};
      const CompactView xg{rows, cols, sf.layout.slots(), pos.data(), cb.data(), base.data(), p, key,
                           ids_g.data()};
      // kernel(x, in, beta, out) on the CPU and on the GPU from the same random in and out.
      const auto compare = [&](auto kernel, std::int64_t in_rows, std::int64_t out_rows, std::uint64_t seed,
                               float beta, const char* what) {
        const Matrix in = random_matrix(in_rows, 19, seed);
        Matrix out = random_matrix(out_rows, 19, seed + 1);
        Matrix magnitude = absolute(out);
        const Matrix in_g = up(in);
        Matrix out_g = up(out);
        kernel(*cpu, xc, in.view(), beta, out.view());
        kernel(*cpu, xa, absolute(in).view(), beta, magnitude.view());
        kernel(*gpu, xg, in_g.view(), beta, out_g.view());
        const std::vector<float> got = out_g.to_host(), want = out.to_host(), sum = magnitude.to_host();
        for (std::size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], want[i], kDotTol * (1.0 + std::fabs(want[i])) + 8 * 0x1p-24 * sum[i])
              << what << ", " << rows << " rows, dropout " << p << ", beta " << beta << ": flat index " << i;
      };
      for (const float beta : {0.0f, 0.5f}) {
        compare([](auto&&... a) { kernels::compact_matmul(a...); }, cols, rows, 32, beta, "compact_matmul");
        compare([](auto&&... a) { kernels::compact_matmul_transpose(a...); }, rows, cols, 34, beta,
                "compact_matmul_transpose");
      }
    }
  }
}

TEST_F(CudaKernels, GatherScatterAndScatterAddAreExactIncludingRepeatedIndices) {
  const Matrix src = random_matrix(31, 13, 20);
  const std::vector<LocalId> idx = {5, 0, 30, 5, 5, 17, 2, 30, 0, 9, 11};  // repeats, unsorted
  Matrix dst(static_cast<std::int64_t>(idx.size()), 13);
  Matrix dstg(dst.rows(), 13, gpu);
  const Matrix srcg = up(src);
  const Buffer<LocalId> idxg = up(idx);
  kernels::gather_rows(*cpu, src.view(), idx.data(), dst.view());
  kernels::gather_rows(*gpu, srcg.view(), idxg.data(), dstg.view());
  expect_equal(dstg.to_host(), dst.to_host(), "gather_rows");

  // Scatter-add back into 31 rows: same contributions in the same order, so bit-identical.
  Matrix acc = random_matrix(31, 13, 21);
  Matrix accg = up(acc);
  kernels::scatter_add_rows(*cpu, dst.view(), idx.data(), acc.view());
  kernels::scatter_add_rows(*gpu, dstg.view(), idxg.data(), accg.view());
  expect_equal(accg.to_host(), acc.to_host(), "scatter_add_rows (repeated)");

  const std::vector<LocalId> inc = {1, 4, 7, 8, 30};  // the plans' usual ascending case
  const Matrix part = random_matrix(5, 13, 22);
  const Matrix partg = up(part);
  const Buffer<LocalId> incg = up(inc);
  kernels::scatter_add_rows(*cpu, part.view(), inc.data(), acc.view());
  kernels::scatter_add_rows(*gpu, partg.view(), incg.data(), accg.view());
  expect_equal(accg.to_host(), acc.to_host(), "scatter_add_rows (ascending)");

  // Scatter (assign) to distinct rows.
  kernels::scatter_rows(*cpu, part.view(), inc.data(), acc.view());
  kernels::scatter_rows(*gpu, partg.view(), incg.data(), accg.view());
  expect_equal(accg.to_host(), acc.to_host(), "scatter_rows");

  Matrix empty(0, 13), emptyg(0, 13, gpu);  // zero rows: nothing happens
  kernels::scatter_add_rows(*gpu, emptyg.view(), incg.data(), accg.view());
  kernels::gather_rows(*gpu, srcg.view(), idxg.data(), emptyg.view());
  expect_equal(accg.to_host(), acc.to_host(), "scatter_add_rows (empty)");
}

TEST_F(CudaKernels, ElementwiseKernelsMatchReference) {
  const std::int64_t r = 29, c = 7;
  const Matrix x = random_matrix(r, c, 30), y0 = random_matrix(r, c, 31);
  const Matrix s = random_matrix(r, 1, 32), b = random_matrix(1, c, 33);
  const Matrix xg = up(x), sg = up(s), bg = up(b);
  auto both = [&](const char* what, double tol, auto&& f) {
    Matrix y = y0.clone(), yg = up(y0);
    f(*cpu, x.view(), y.view(), s.data(), b.data());
    f(*gpu, xg.view(), yg.view(), sg.data(), bg.data());
    if (tol == 0)
      expect_equal(yg.to_host(), y.to_host(), what);
    else
      expect_close(yg.to_host(), y.to_host(), tol, what);
  };
  both("copy", 0, [](const Device& d, ConstDenseView in, DenseView out, const float*, const float*) {
    kernels::copy(d, in, out);
  });
  both("fill", 0, [](const Device& d, ConstDenseView, DenseView out, const float*, const float*) {
    kernels::fill(d, out, -2.5f);
  });
  both("axpy", 1e-6, [](const Device& d, ConstDenseView in, DenseView out, const float*, const float*) {
    kernels::axpy(d, 0.3f, in, out);
  });
  both("axpby", 1e-6, [](const Device& d, ConstDenseView in, DenseView out, const float*, const float*) {
    kernels::axpby(d, in.rows * in.cols, 0.3f, in.data, -1.5f, out.data);
  });
  both("scale_rows", 0, [](const Device& d, ConstDenseView, DenseView out, const float* sv, const float*) {
    kernels::scale_rows(d, sv, out);
  });
  both("add_row_vector", 0, [](const Device& d, ConstDenseView, DenseView out, const float*, const float* bv) {
    kernels::add_row_vector(d, bv, out);
  });
  both("relu_forward", 0, [](const Device& d, ConstDenseView in, DenseView out, const float*, const float*) {
    kernels::relu_forward(d, in, out);
  });
  both("relu_backward", 0, [](const Device& d, ConstDenseView in, DenseView out, const float*, const float*) {
    kernels::relu_backward(d, in, out, out);  // gx aliases gy
  });
  // expm1f and std::expm1 may differ in the last bit.
  both("elu_forward", 1e-6, [](const Device& d, ConstDenseView in, DenseView out, const float*, const float*) {
    kernels::elu_forward(d, in, out);
  });
  both("elu_backward", 1e-6, [](const Device& d, ConstDenseView in, DenseView out, const float*, const float*) {
    kernels::elu_backward(d, in, out, out);  // gx aliases gy
  });
  // axpby with beta == 0 ignores NaN in y.
  std::vector<float> nan(static_cast<std::size_t>(r * c), std::nanf(""));
  Matrix yg(r, c, gpu);
  gpu->copy_from_host(yg.data(), nan.data(), nan.size() * sizeof(float));
  kernels::axpby(*gpu, r * c, 2.0f, xg.data(), 0.0f, yg.data());
  Matrix y(r, c);
  kernels::axpby(*cpu, r * c, 2.0f, x.data(), 0.0f, y.data());
  expect_equal(yg.to_host(), y.to_host(), "axpby beta 0");
}

TEST_F(CudaKernels, GeluAndLayerNormMatchTheReference) {
  const std::int64_t rows = 700, f = 37;
  Matrix x = random_matrix(rows, f, 50);
  for (float& v : x.host()) v *= 4.0f;
  const Matrix gy = random_matrix(rows, f, 51);
  const Matrix gamma = random_matrix(1, f, 52), beta = random_matrix(1, f, 53);
  const Matrix xg = up(x), gyg = up(gy), gammag = up(gamma), betag = up(beta);
  // GELU: erff/expf against std::erf/std::exp, a few ulps apart.
  Matrix y(rows, f), yg(rows, f, gpu);
  kernels::gelu_forward(*cpu, x.view(), y.view());
  kernels::gelu_forward(*gpu, xg.view(), yg.view());
  expect_close(yg.to_host(), y.to_host(), 1e-6, "gelu_forward");
  Matrix gx = gy.clone(), gxg = up(gy);
  kernels::gelu_backward(*cpu, x.view(), gx.view(), gx.view());
  kernels::gelu_backward(*gpu, xg.view(), gxg.view(), gxg.view());
  expect_close(gxg.to_host(), gx.to_host(), 1e-6, "gelu_backward");
  // Layer norm: the same per-row sums in double; the parameter gradients summed in another
  // order (double partial sums, rounded once).
  Matrix n(rows, f), ng(rows, f, gpu), st(rows, 2), stg(rows, 2, gpu);
  kernels::layer_norm_forward(*cpu, x.view(), gamma.data(), beta.data(), 1e-5f, n.view(), st.data());
  kernels::layer_norm_forward(*gpu, xg.view(), gammag.data(), betag.data(), 1e-5f, ng.view(),
                              stg.data());
  expect_close(stg.to_host(), st.to_host(), 1e-6, "layer_norm stats");  // nvcc may fuse into FMAs
  expect_close(ng.to_host(), n.to_host(), 1e-6, "layer_norm_forward");
  Matrix lx = random_matrix(rows, f, 54), lxg = up(lx);
  Matrix gg = random_matrix(1, f, 55), ggg = up(gg), gb = random_matrix(1, f, 56), gbg = up(gb);
  kernels::layer_norm_backward(*cpu, x.view(), st.data(), gamma.data(), gy.view(), 1.5f, lx.view(),
                               gg.data(), gb.data());
  kernels::layer_norm_backward(*gpu, xg.view(), stg.data(), gammag.data(), gyg.view(), 1.5f,
                               lxg.view(), ggg.data(), gbg.data());
  expect_close(lxg.to_host(), lx.to_host(), 1e-5, "layer_norm_backward gx");
  expect_close(ggg.to_host(), gg.to_host(), 1e-5, "layer_norm_backward ggamma");
  expect_close(gbg.to_host(), gb.to_host(), 1e-5, "layer_norm_backward gbeta");
}

TEST_F(CudaKernels, ColumnSumMatchesReferenceForTallOddAndEmptyMatrices) {
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{1000, 37}, {3, 5}, {0, 4}};
  for (const auto& [rows, cols] : shapes) {
    const Matrix x = random_matrix(rows, cols, 40);
    const Matrix xg = up(x);
    for (const float beta : {0.0f, 2.0f}) {
      Matrix out = random_matrix(1, cols, 41), outg = up(out);
      kernels::column_sum(*cpu, x.view(), beta, out.data());
      kernels::column_sum(*gpu, xg.view(), beta, outg.data());
      expect_close(outg.to_host(), out.to_host(), 1e-6, "column_sum");  // both sum in double
    }
  }
}

TEST_F(CudaKernels, DropoutMasksAndValuesAreIdenticalToTheCpu) {
  const Matrix x = random_matrix(45, 13, 50);  // 13 columns: a partial last Philox block
  std::vector<GlobalId> ids(45);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<GlobalId>(1000 + 7 * i);
  const Buffer<GlobalId> idsg = up(ids);
  const Matrix xg = up(x);
  const RngKey key{9, RngPurpose::dropout, 3, 1};
  for (const float p : {0.0f, 0.3f, 0.5f, 1.0f}) {
    Matrix y(45, 13), yg(45, 13, gpu);
    kernels::dropout_forward(*cpu, key, ids.data(), p, x.view(), y.view());
    kernels::dropout_forward(*gpu, key, idsg.data(), p, xg.view(), yg.view());
    expect_equal(yg.to_host(), y.to_host(), "dropout_forward");
    kernels::dropout_backward(*cpu, key, ids.data(), p, y.view(), y.view());  // in place
    kernels::dropout_backward(*gpu, key, idsg.data(), p, yg.view(), yg.view());
    expect_equal(yg.to_host(), y.to_host(), "dropout_backward");
  }
}

TEST_F(CudaKernels, CsrDropoutIsIdenticalToTheCpuIncludingEmptyRows) {
  for (const bool values : {true, false}) {
    const test::HostCsr h = random_csr(57, 300, 40, values, 55);
    const CsrMatrix a = h.to_device(), ag = up(h);
    std::vector<GlobalId> ids(57);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<GlobalId>(3 * i + 1);
    const Buffer<GlobalId> idsg = up(ids);
    for (const float p : {0.0f, 0.5f, 1.0f}) {
      Matrix out(1, a.nnz()), outg(1, a.nnz(), gpu);
      const RngKey key{4, RngPurpose::dropout, 1, 2};
      kernels::dropout_csr(*cpu, key, ids.data(), p, a.view(), out.data());
      kernels::dropout_csr(*gpu, key, idsg.data(), p, ag.view(), outg.data());
      expect_equal(outg.to_host(), out.to_host(), "dropout_csr");
    }
  }
}

TEST_F(CudaKernels, LossesAndCountsMatchReferenceWithMasksAndMissingLabels) {
  const std::int64_t n = 301, c = 7;
  Matrix logits = random_matrix(n, c, 60);
  for (float& v : logits.host()) v *= 8.0f;  // large logits exercise the stable forms
  std::vector<std::int32_t> labels(n);
  std::vector<std::uint8_t> mask(n), targets(static_cast<std::size_t>(n * c));
  const CounterRng rng(RngKey{1, RngPurpose::test, 61, 0});
  for (std::int64_t i = 0; i < n; ++i) {
    labels[i] = static_cast<std::int32_t>(rng.word(i, 0) % (c + 1)) - 1;  // -1: unlabelled
    mask[i] = rng.word(i, 1) % 3 != 0;
    for (std::int64_t j = 0; j < c; ++j) targets[i * c + j] = rng.word(i, 2 + j) % 2;
  }
  const Matrix lg = up(logits);
  const auto labg = up(labels);
  const auto maskg = up(mask);
  const auto tg = up(targets);
  for (const bool masked : {true, false}) {
    const std::uint8_t* m = masked ? mask.data() : nullptr;
    const std::uint8_t* mg = masked ? maskg.data() : nullptr;
    Matrix g(n, c), gg(n, c, gpu);
    const double l = kernels::softmax_cross_entropy(*cpu, logits.view(), labels.data(), m, 0.5f, g.view());
    const double lgpu = kernels::softmax_cross_entropy(*gpu, lg.view(), labg.data(), mg, 0.5f, gg.view());
    EXPECT_NEAR(lgpu, l, 1e-9 * std::fabs(l)) << "softmax_cross_entropy loss";  // double sums
    expect_close(gg.to_host(), g.to_host(), 1e-6, "softmax_cross_entropy grad");

    const double b = kernels::sigmoid_bce(*cpu, logits.view(), targets.data(), m, 0.25f, g.view());
    const double bgpu = kernels::sigmoid_bce(*gpu, lg.view(), tg.data(), mg, 0.25f, gg.view());
    EXPECT_NEAR(bgpu, b, 1e-9 * std::fabs(b)) << "sigmoid_bce loss";
    expect_close(gg.to_host(), g.to_host(), 1e-6, "sigmoid_bce grad");

    const auto acc = kernels::count_correct(*cpu, logits.view(), labels.data(), m);
    const auto accg = kernels::count_correct(*gpu, lg.view(), labg.data(), mg);
    EXPECT_EQ(accg.correct, acc.correct);
    EXPECT_EQ(accg.total, acc.total);
    const auto ml = kernels::count_multilabel(*cpu, logits.view(), targets.data(), m);
    const auto mlg = kernels::count_multilabel(*gpu, lg.view(), tg.data(), mg);
    EXPECT_EQ(mlg.true_pos, ml.true_pos);
    EXPECT_EQ(mlg.false_pos, ml.false_pos);
    EXPECT_EQ(mlg.false_neg, ml.false_neg);
  }
  // Zero rows: zero loss, zero counts.
  Matrix none(0, c, gpu);
  EXPECT_EQ(kernels::softmax_cross_entropy(*gpu, none.view(), labg.data(), nullptr, 1.0f, none.view()), 0.0);
  EXPECT_EQ(kernels::count_correct(*gpu, none.view(), labg.data(), nullptr).total, 0);
  // A label beyond the classes is an error on the GPU too.
  std::vector<std::int32_t> bad(labels);
  bad[17] = static_cast<std::int32_t>(c);
  const auto badg = up(bad);
  Matrix gg(n, c, gpu);
  EXPECT_THROW(kernels::softmax_cross_entropy(*gpu, lg.view(), badg.data(), nullptr, 1.0f, gg.view()),
               Error);
}

TEST_F(CudaKernels, OptimiserStepsMatchReference) {
  const std::int64_t n = 1001;
  for (const bool decoupled : {false, true}) {
    Matrix w = random_matrix(1, n, 70), m = random_matrix(1, n, 71), v = random_matrix(1, n, 72);
    for (float& e : v.host()) e = std::fabs(e);
    const Matrix g = random_matrix(1, n, 73);
    Matrix wg = up(w), mg = up(m), vg = up(v);
    const Matrix gg = up(g);
    kernels::AdamParams p;
    p.weight_decay = 5e-4f;
    p.decoupled = decoupled;
    for (int step = 1; step <= 3; ++step) {
      kernels::adam_step(*cpu, n, w.data(), g.data(), m.data(), v.data(), p, step);
      kernels::adam_step(*gpu, n, wg.data(), gg.data(), mg.data(), vg.data(), p, step);
    }
    expect_close(wg.to_host(), w.to_host(), 1e-5, "adam w");
    expect_close(mg.to_host(), m.to_host(), 1e-6, "adam m");
    expect_close(vg.to_host(), v.to_host(), 1e-6, "adam v");
  }
  for (const bool momentum : {false, true}) {
    Matrix w = random_matrix(1, n, 74), mom(1, n);
    const Matrix g = random_matrix(1, n, 75);
    Matrix wg = up(w), momg = up(mom);
    const Matrix gg = up(g);
    for (int step = 0; step < 3; ++step) {
      kernels::sgd_step(*cpu, n, w.data(), g.data(), momentum ? mom.data() : nullptr, 0.1f, 0.9f, 1e-3f);
      kernels::sgd_step(*gpu, n, wg.data(), gg.data(), momentum ? momg.data() : nullptr, 0.1f, 0.9f, 1e-3f);
    }
    expect_close(wg.to_host(), w.to_host(), 1e-6, "sgd w");
  }
}

TEST_F(CudaKernels, HeadKernelsMatchReference) {
  const std::int32_t heads = 3;
  const std::int64_t rows = 41, f = 5;
  const std::int64_t n_dst = 29;  // destination rows: a prefix, as a rank's owned rows
  const Matrix z = random_matrix(rows, heads * f, 80), a = random_matrix(heads, f, 81);
  const Matrix b = random_matrix(heads, f, 85);
  const Matrix zg = up(z), ag = up(a), bg = up(b);
  Matrix s_dst(n_dst, heads), s_src(rows, heads), sg_dst(n_dst, heads, gpu), sg_src(rows, heads, gpu);
  kernels::head_scores(*cpu, z.view(), n_dst, a.data(), b.data(), heads, s_dst.data(), s_src.data());
  kernels::head_scores(*gpu, zg.view(), n_dst, ag.data(), bg.data(), heads, sg_dst.data(), sg_src.data());
  expect_close(sg_dst.to_host(), s_dst.to_host(), kDotTol, "head_scores dst");
  expect_close(sg_src.to_host(), s_src.to_host(), kDotTol, "head_scores src");

  const Matrix gs_dst = random_matrix(n_dst, heads, 82), gs_src = random_matrix(rows, heads, 86);
  const Matrix gsg_dst = up(gs_dst), gsg_src = up(gs_src);
  Matrix gz = random_matrix(rows, heads * f, 83), ga_dst = random_matrix(heads, f, 84);
  Matrix ga_src = random_matrix(heads, f, 87);
  Matrix gzg = up(gz), gag_dst = up(ga_dst), gag_src = up(ga_src);
  kernels::head_scores_backward(*cpu, z.view(), n_dst, a.data(), b.data(), heads, gs_dst.data(),
                                gs_src.data(), gz.view(), ga_dst.data(), ga_src.data());
  kernels::head_scores_backward(*gpu, zg.view(), n_dst, ag.data(), bg.data(), heads, gsg_dst.data(),
                                gsg_src.data(), gzg.view(), gag_dst.data(), gag_src.data());
  expect_close(gzg.to_host(), gz.to_host(), kDotTol, "head_scores_backward gz");
  expect_close(gag_dst.to_host(), ga_dst.to_host(), kDotTol, "head_scores_backward ga_dst");
  expect_close(gag_src.to_host(), ga_src.to_host(), kDotTol, "head_scores_backward ga_src");

  Matrix y(rows, f), yg(rows, f, gpu);
  kernels::head_mean(*cpu, z.view(), heads, y.view());
  kernels::head_mean(*gpu, zg.view(), heads, yg.view());
  expect_close(yg.to_host(), y.to_host(), 1e-6, "head_mean");
  Matrix gx(rows, heads * f), gxg(rows, heads * f, gpu);
  kernels::head_mean_backward(*cpu, y.view(), heads, gx.view());
  kernels::head_mean_backward(*gpu, yg.view(), heads, gxg.view());
  expect_close(gxg.to_host(), gx.to_host(), 1e-6, "head_mean_backward");
}

TEST_F(CudaKernels, GatAggregateAndBackwardMatchReferenceIncludingEmptyRows) {
  for (const std::int32_t heads : {1, 4}) {
    for (const bool multiplicity : {false, true}) {
     for (const bool dropped : {false, true}) {
      const std::int64_t rows = 67, cols = 80, f = 6;  // some rows empty (per_row hash can be 0)
      const test::HostCsr h = random_csr(rows, cols, 45, multiplicity, 90 + heads);
      const test::HostTranspose ht = test::transpose(h);
      const CsrMatrix a = h.to_device(), ag = up(h);
      const CsrMatrix at = ht.t.to_device(), atg = up(ht.t);
      const auto t2a = up(ht.t_to_a);
      const Matrix z = random_matrix(cols, heads * f, 91), sd = random_matrix(rows, heads, 92),
                   ss = random_matrix(cols, heads, 93), gy = random_matrix(rows, heads * f, 94);
      const Matrix zg = up(z), sdg = up(sd), ssg = up(ss), gyg = up(gy);
      const auto nnz = static_cast<std::int64_t>(h.col.size());
      Matrix alpha(nnz, heads), alphag(nnz, heads, gpu), y(rows, heads * f), yg(rows, heads * f, gpu);
      // Attention dropout: the masks must be identical bit for bit (ids as global node ids).
      Matrix mask(nnz, heads), maskg(nnz, heads, gpu);
      std::vector<GlobalId> ids(static_cast<std::size_t>(cols));
      for (std::int64_t i = 0; i < cols; ++i) ids[i] = 1000 + 7 * i;
      const auto idsg = up(ids);
      const RngKey key{5, RngPurpose::attention_dropout, 2, 1};
      kernels::edge_dropout_mask(*cpu, key, ids.data(), 0.4f, a.view(), heads, mask.data());
      kernels::edge_dropout_mask(*gpu, key, idsg.data(), 0.4f, ag.view(), heads, maskg.data());
      expect_equal(maskg.to_host(), mask.to_host(), "edge_dropout_mask");
      const float* drop = dropped ? mask.data() : nullptr;
      const float* dropg = dropped ? maskg.data() : nullptr;
      kernels::gat_aggregate(*cpu, a.view(), z.view(), sd.data(), ss.data(), heads, 0.2f,
                             alpha.data(), drop, y.view());
      kernels::gat_aggregate(*gpu, ag.view(), zg.view(), sdg.data(), ssg.data(), heads, 0.2f,
                             alphag.data(), dropg, yg.view());
      expect_close(alphag.to_host(), alpha.to_host(), 1e-5, "gat alpha");
      expect_close(yg.to_host(), y.to_host(), 1e-5, "gat y");

      Matrix eg(nnz, heads), egg(nnz, heads, gpu), gsd(rows, heads), gsdg(rows, heads, gpu),
          gss(cols, heads), gssg(cols, heads, gpu), gz(cols, heads * f), gzg(cols, heads * f, gpu);
      kernels::gat_aggregate_backward(*cpu, a.view(), at.view(), ht.t_to_a.data(), z.view(),
                                      sd.data(), ss.data(), heads, 0.2f, alpha.data(), drop,
                                      gy.view(), eg.data(), gsd.data(), gss.data(), gz.view());
      kernels::gat_aggregate_backward(*gpu, ag.view(), atg.view(), t2a.data(), zg.view(),
                                      sdg.data(), ssg.data(), heads, 0.2f, alphag.data(), dropg,
                                      gyg.view(), egg.data(), gsdg.data(), gssg.data(), gzg.view());
      expect_close(gsdg.to_host(), gsd.to_host(), 1e-5, "gat gs_dst");
      expect_close(gssg.to_host(), gss.to_host(), 1e-5, "gat gs_src");
      expect_close(gzg.to_host(), gz.to_host(), 1e-5, "gat gz");
     }
    }
  }
}

}  // namespace
}  // namespace halognn
