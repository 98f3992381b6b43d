// A layer applied per partition, with halo rows filled from the owners, equals the layer on the
// whole graph; its backward, with halo gradients summed into their owners, equals the whole-graph
// backward (DESIGN.md "The halo exchange as one operator").
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "models/layer.hpp"
#include "models/local_graph.hpp"
#include "test/kernels/kernel_test_util.hpp"
#include "test/models/model_test_util.hpp"

namespace halognn {
namespace {

struct Result {
  Matrix y;   ///< per global vertex
  Matrix gx;  ///< per global vertex, halo contributions summed into owners
  std::vector<std::vector<float>> grads;  ///< parameter gradients, summed over parts
};

Result run_parts(const LayerConfig& cfg, const test::SmallGraph& graph,
                 const std::vector<std::vector<GlobalId>>& parts, const Matrix& x_global,
                 const Matrix& r_global) {
  Result res{Matrix(graph.size(), 0), Matrix(graph.size(), x_global.cols()), {}};
  for (const auto& owned : parts) {
    const LocalPartition part = test::make_partition(graph, owned);
    const LocalGraph g = LocalGraph::build(part, cpu_device());
    auto layer = make_layer(cfg, 11, 0);  // same seed on every "rank": identical weights
    layer->prepare(g);
    if (res.y.cols() == 0) res.y = Matrix(graph.size(), layer->out_dim());
    Matrix x(g.num_local(), x_global.cols()), r(g.num_owned, layer->out_dim());
    for (LocalId i = 0; i < g.num_local(); ++i) {
      for (std::int64_t j = 0; j < x.cols(); ++j) x(i, j) = x_global(part.global_ids[i], j);
    }
    for (LocalId i = 0; i < g.num_owned; ++i) {
      for (std::int64_t j = 0; j < r.cols(); ++j) r(i, j) = r_global(part.global_ids[i], j);
    }
    Matrix y(g.num_owned, layer->out_dim()), gx(g.num_local(), x.cols());
    layer->forward(g, x.view(), y.view(), ForwardContext{});
    layer->backward(g, r.view(), gx.view());
    for (LocalId i = 0; i < g.num_owned; ++i) {
      for (std::int64_t j = 0; j < y.cols(); ++j) res.y(part.global_ids[i], j) = y(i, j);
    }
    for (LocalId i = 0; i < g.num_local(); ++i) {
      for (std::int64_t j = 0; j < gx.cols(); ++j) res.gx(part.global_ids[i], j) += gx(i, j);
    }
    const auto params = layer->parameters();
    res.grads.resize(params.size());
    for (std::size_t p = 0; p < params.size(); ++p) {
      const auto gp = params[p]->grad.to_host();
      res.grads[p].resize(gp.size(), 0.0f);
      for (std::size_t k = 0; k < gp.size(); ++k) res.grads[p][k] += gp[k];
    }
  }
  return res;
}

class PartitionedLayer : public ::testing::TestWithParam<LayerConfig> {};

TEST_P(PartitionedLayer, EqualsTheWholeGraphForwardAndBackward) {
  const test::SmallGraph graph = test::random_graph(40, 0.12, 3, /*isolated=*/7);
  const Matrix x = test::random_matrix(40, GetParam().in_dim, 1);
  const Matrix r = test::random_matrix(40, 12, 2);  // sliced to the layer's width below
  auto width = make_layer(GetParam(), 11, 0)->out_dim();
  Matrix rr(40, width);
  for (int i = 0; i < 40; ++i) {
    for (int j = 0; j < width; ++j) rr(i, j) = r(i, j);
  }
  std::vector<GlobalId> all, p0, p1, p2;
  for (GlobalId v = 0; v < 40; ++v) {
    all.push_back(v);
    (v % 3 == 0 ? p0 : v % 3 == 1 ? p1 : p2).push_back(v);
  }
  const Result whole = run_parts(GetParam(), graph, {all}, x, rr);
  const Result split = run_parts(GetParam(), graph, {p0, p1, p2}, x, rr);
  // Same float operations up to summation order: a few ulps of O(1) values.
  const auto near = [](std::span<const float> a, std::span<const float> b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5 * (1 + std::abs(b[i])));
  };
  near(split.y.host(), whole.y.host());
  near(split.gx.host(), whole.gx.host());
  for (std::size_t p = 0; p < whole.grads.size(); ++p) near(split.grads[p], whole.grads[p]);
}

LayerConfig config(ModelKind kind, std::int64_t in, std::int64_t out, int heads, bool concat) {
  LayerConfig c;
  c.kind = kind;
  c.in_dim = in;
  c.out_dim = out;
  c.heads = heads;
  c.concat_heads = concat;
  return c;
}

/// GAT with attention-coefficient and value dropout: the forward runs in training mode
/// (ForwardContext{}), so the masks must be keyed by global ids for the parts to agree.
LayerConfig gat_dropout(int heads, bool concat) {
  LayerConfig c = config(ModelKind::gat, 6, 4, heads, concat);
  c.attention_dropout = 0.5f;
  c.value_dropout = 0.4f;
  return c;
}

LayerConfig gin(std::int64_t in, std::int64_t out, float eps, bool train) {
  LayerConfig c = config(ModelKind::gin, in, out, 1, true);
  c.mlp_hidden = 6;
  c.eps = eps;
  c.train_eps = train;
  return c;
}

INSTANTIATE_TEST_SUITE_P(Layers, PartitionedLayer,
                         ::testing::Values(config(ModelKind::gcn, 5, 8, 1, true),
                                           config(ModelKind::gcn, 8, 3, 1, true),
                                           config(ModelKind::sage, 5, 8, 1, true),
                                           config(ModelKind::sage, 8, 3, 1, true),
                                           config(ModelKind::gat, 6, 4, 3, true),
                                           config(ModelKind::gat, 6, 4, 2, false),
                                           gat_dropout(3, true), gat_dropout(2, false),
                                           gin(5, 8, 0.0f, false), gin(8, 3, 0.5f, true)));

}  // namespace
}  // namespace halognn
