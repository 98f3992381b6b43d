// A layer fed sparsified features (set_sparse_input with a CompactView: positions + codebook,
// core/data/feature_sparsify.hpp) computes what it computes on the decoded dense matrix: forward
// outputs, input gradients and parameter gradients, with dropout drawn inside the compact kernels
// on one side and by dropout_forward on the decoded matrix on the other. Every model's layer 0
// shares this path (models/layer_common.hpp: input_matmul, input_matmul_transpose).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "core/data/feature_sparsify.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/kernels.hpp"
#include "models/layer.hpp"
#include "models/local_graph.hpp"
#include "test/kernels/kernel_test_util.hpp"
#include "test/models/model_test_util.hpp"

namespace halognn {
namespace {

struct LayerRun {
  Matrix y, gx;
  std::vector<std::vector<float>> grads;
};

template <typename Forward>
LayerRun run_layer(const LayerConfig& cfg, const LocalGraph& g, const Matrix& r, Forward&& forward) {
  auto layer = make_layer(cfg, 11, 0);
  layer->prepare(g);
  LayerRun out{Matrix(g.num_owned, layer->out_dim()), Matrix(g.num_local(), cfg.in_dim), {}};
  forward(*layer, out.y.view());
  layer->backward(g, r.view(), out.gx.view());
  for (Parameter* p : layer->parameters()) out.grads.push_back(p->grad.to_host());
  return out;
}

// Why 1e-6 relative (to 1 + |value|, the bound): both sides multiply the same non-zero
// entries (the decoded matrix is zero elsewhere, and zeros add exactly) and differ only in the
// order of their float sums, ~20 O(1) terms per output: a few ulp. A wrong column, a missing row,
// or another dropout mask moves values by O(0.1).
void expect_near(std::span<const float> got, std::span<const float> want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-6 * (1.0 + std::abs(want[i]))) << what << " at " << i;
}

class CompactLayerInput : public ::testing::TestWithParam<LayerConfig> {};

TEST_P(CompactLayerInput, EqualsTheDecodedDenseLayerWithAndWithoutDropout) {
  const LayerConfig cfg = GetParam();
  const test::SmallGraph graph = test::random_graph(40, 0.12, 3, /*isolated=*/7);
  std::vector<GlobalId> owned;
  for (GlobalId v = 0; v < 40; v += 3) owned.push_back(v);
  const LocalPartition part = test::make_partition(graph, owned);
  ASSERT_GT(part.num_halo, 5);
  const LocalGraph g = LocalGraph::build(part, cpu_device());
  const Device& dev = *g.dev;

  // Two chunks, the second one a 44-wide tail.
  const Matrix raw = test::random_matrix(g.num_local(), cfg.in_dim, 1);
  const SparseFeatures sf = sparsify_features(raw.data(), raw.rows(), raw.cols(), 3, 4, 1.0);
  Matrix x(g.num_local(), cfg.in_dim);
  desparsify_features(sf, x.data());
  const auto pos = Buffer<std::uint8_t>::from_host(sf.positions, g.dev);
  const auto codebook = Buffer<float>::from_host(sf.codebook, g.dev);
  const auto base = Buffer<std::int32_t>::from_host(sf.layout.slot_base, g.dev);
  const std::int64_t out = make_layer(cfg, 11, 0)->out_dim();
  const Matrix r = test::random_matrix(g.num_owned, out, 2);

  for (const float p : {0.0f, 0.5f}) {
    SCOPED_TRACE(p);
    const RngKey key{5, RngPurpose::dropout, 2, 0};
    Matrix xd(x.rows(), x.cols());
    kernels::dropout_forward(dev, key, g.global_ids.data(), p, x.view(), xd.view());
    const LayerRun dense = run_layer(cfg, g, r, [&](Layer& layer, DenseView y) {
      layer.forward(g, xd.view(), y, ForwardContext{});
    });
    const LayerRun compact = run_layer(cfg, g, r, [&](Layer& layer, DenseView y) {
      CompactView v{g.num_local(), cfg.in_dim, sf.layout.slots(), pos.data(), codebook.data(),
                    base.data(), p, key, g.global_ids.data()};
      layer.set_sparse_input(v);
      layer.forward(g, ConstDenseView(nullptr, g.num_local(), cfg.in_dim), y, ForwardContext{});
    });
    expect_near(compact.y.host(), dense.y.host(), "y");
    expect_near(compact.gx.host(), dense.gx.host(), "gx");
    ASSERT_EQ(compact.grads.size(), dense.grads.size());
    for (std::size_t k = 0; k < dense.grads.size(); ++k)
      expect_near(compact.grads[k], dense.grads[k], "parameter gradient");
  }
}

// The two compact kernels on their own, on inputs that reach every branch of their loops: rows
// that are mostly zero (most slots of the codebook are zero, so they are skipped), 300 rows (the
// transpose works in batches of 128: two full and a partial one), dropout, beta != 0. Against the
// decoded matrix after dropout_forward (double sums), and bit for bit the same at 1, 2, 3 and 5
// threads and on every instruction set the CPU has (core/kernels/cpu_isa.hpp).
TEST(CompactKernels, MatchTheDecodedProductAndDoNotDependOnTheThreadCount) {
  const Device& dev = *cpu_device();
  const std::int64_t rows = 300, cols = 600, f = 37;
  Matrix raw = test::random_matrix(rows, cols, 3);
  std::vector<float> sparse = raw.to_host();
  for (std::size_t e = 0; e < sparse.size(); ++e)  // about 3 non-zeros per 256-wide chunk, all positive
    sparse[e] = (e * 2654435761u) % 90 == 0 ? 1.0f + std::abs(sparse[e]) : 0.0f;
  const SparseFeatures sf = sparsify_features(sparse.data(), rows, cols, 8, 4, 1.0);
  std::int64_t zero_slots = 0;
  for (const float c : sf.codebook) zero_slots += c == 0.0f;
  ASSERT_GT(zero_slots, sf.layout.slots() / 2);
  ASSERT_LT(zero_slots, sf.layout.slots());
  Matrix x(rows, cols);
  desparsify_features(sf, x.data());
  std::vector<GlobalId> ids(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) ids[static_cast<std::size_t>(i)] = 1000 + 7 * i;
  const auto pos = Buffer<std::uint8_t>::from_host(sf.positions, cpu_device());
  const auto codebook = Buffer<float>::from_host(sf.codebook, cpu_device());
  const auto base = Buffer<std::int32_t>::from_host(sf.layout.slot_base, cpu_device());
  const Matrix w = test::random_matrix(cols, f, 4), g = test::random_matrix(rows, f, 5);
  const Matrix y0 = test::random_matrix(rows, f, 6), gw0 = test::random_matrix(cols, f, 7);
  const float p = 0.5f, beta = 0.5f;
  const RngKey key{9, RngPurpose::dropout, 1, 0};
  Matrix xd(rows, cols);
  kernels::dropout_forward(dev, key, ids.data(), p, x.view(), xd.view());
  const std::vector<float> xh = xd.to_host(), wh = w.to_host(), gh = g.to_host();
  const std::vector<float> y0h = y0.to_host(), gw0h = gw0.to_host();
  // Each reference value with the sum of its terms' magnitudes: the float sums of up to 300 terms
  // may differ from the double ones by a few 1e-6 of it (a wrong mask or column moves a value by
  // O(0.1) of it).
  std::vector<double> want_y(static_cast<std::size_t>(rows * f)), mag_y(want_y.size());
  std::vector<double> want_gw(static_cast<std::size_t>(cols * f)), mag_gw(want_gw.size());
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t c = 0; c < cols; ++c)
      for (std::int64_t o = 0; o < f; ++o) {
        const double xv = xh[static_cast<std::size_t>(i * cols + c)];
        const double ty = xv * wh[static_cast<std::size_t>(c * f + o)], tg = xv * gh[static_cast<std::size_t>(i * f + o)];
        want_y[static_cast<std::size_t>(i * f + o)] += ty;
        mag_y[static_cast<std::size_t>(i * f + o)] += std::abs(ty);
        want_gw[static_cast<std::size_t>(c * f + o)] += tg;
        mag_gw[static_cast<std::size_t>(c * f + o)] += std::abs(tg);
      }
  for (std::size_t e = 0; e < want_y.size(); ++e) {
    want_y[e] += beta * y0h[e];
    mag_y[e] += std::abs(beta * y0h[e]);
  }
  for (std::size_t e = 0; e < want_gw.size(); ++e) {
    want_gw[e] += beta * gw0h[e];
    mag_gw[e] += std::abs(beta * gw0h[e]);
  }
  auto expect_sums = [](const std::vector<float>& got, const std::vector<double>& want,
                        const std::vector<double>& mag, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t e = 0; e < got.size(); ++e)
      ASSERT_NEAR(got[e], want[e], 4e-6 * (1.0 + mag[e])) << what << " at " << e;
  };
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    const CompactView v{rows, cols, sf.layout.slots(), pos.data(), codebook.data(), base.data(), p, key, ids.data()};
    Matrix y = y0.clone(), gw = gw0.clone();
    kernels::compact_matmul(dev, v, w.view(), beta, y.view());
    kernels::compact_matmul_transpose(dev, v, g.view(), beta, gw.view());
    return std::pair{y.to_host(), gw.to_host()};
  };
  const int threads_before = omp_get_max_threads();
  const auto one = run(1);
  expect_sums(one.first, want_y, mag_y, "x w");
  expect_sums(one.second, want_gw, mag_gw, "x^T g");
  const kernels::CpuIsa detected = kernels::detected_cpu_isa();
  for (const kernels::CpuIsa isa : {kernels::CpuIsa::sse2, kernels::CpuIsa::avx2, kernels::CpuIsa::avx512}) {
    if (isa > detected) continue;
    kernels::set_cpu_isa_limit(isa);
    for (const int t : {1, 2, 3, 5}) {
      const auto got = run(t);
      EXPECT_EQ(std::memcmp(got.first.data(), one.first.data(), one.first.size() * sizeof(float)), 0)
          << kernels::to_string(isa) << ", " << t << " threads";
      EXPECT_EQ(std::memcmp(got.second.data(), one.second.data(), one.second.size() * sizeof(float)), 0)
          << kernels::to_string(isa) << ", " << t << " threads";
    }
  }
  kernels::set_cpu_isa_limit(detected);
  omp_set_num_threads(threads_before);
}

LayerConfig config(ModelKind kind, std::int64_t in, std::int64_t out, int heads = 1,
                   bool concat = true) {
  LayerConfig c;
  c.kind = kind;
  c.in_dim = in;
  c.out_dim = out;
  c.heads = heads;
  c.concat_heads = concat;
  return c;
}

INSTANTIATE_TEST_SUITE_P(Layers, CompactLayerInput,
                         ::testing::Values(config(ModelKind::gcn, 300, 8),
                                           config(ModelKind::sage, 300, 8),
                                           config(ModelKind::gat, 300, 4, 3, true),
                                           config(ModelKind::gin, 300, 6)));

}  // namespace
}  // namespace halognn
