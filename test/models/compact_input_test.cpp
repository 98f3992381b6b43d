// A layer fed sparsified features (set_sparse_input with a CompactView: positions + codebook,
// core/data/feature_sparsify.hpp) computes what it computes on the decoded dense matrix: forward
// outputs, input gradients and parameter gradients, with dropout drawn inside the compact kernels
// on one side and by dropout_forward on the decoded matrix on the other. Every model's layer 0
// shares this path (models/layer_common.hpp: input_matmul, input_matmul_transpose).
#include <gtest/gtest.h>

#include <cmath>
#include <span>
#include <vector>

#include "core/data/feature_sparsify.hpp"
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
