// A layer fed its input as CSR (set_sparse_input) computes what it computes on the dense input:
// forward outputs, input gradients and parameter gradients, with dropout applied on each side by
// its own kernel (dropout_forward on the dense matrix, dropout_csr on the CSR values).
#include <gtest/gtest.h>

#include <cmath>
#include <span>
#include <vector>

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

/// One forward and backward of a fresh layer (seed 11) with upstream gradient r.
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

// Why 1e-5 (relative to 1 + |value|): both sides form the same products and differ only in the
// order of float32 sums (Eigen's blocked GEMM against a row-by-row SpMM; a CSR transpose-product
// against a dense GEMM for the weight gradients). Each output is a sum of at most
// in_dim + max degree ~ 30 terms of O(1) magnitude, so each side is within ~30 * 6e-8 = 2e-6 of
// the exact value (GAT's softmax adds a factor of order one). A wrong product (a missing row, the
// wrong mask, halo rows left out) changes values by O(0.1).
void expect_near(std::span<const float> got, std::span<const float> want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * (1.0 + std::abs(want[i]))) << what << " at " << i;
}

class SparseLayerInput : public ::testing::TestWithParam<LayerConfig> {};

TEST_P(SparseLayerInput, EqualsTheDenseLayerWithAndWithoutDropout) {
  const LayerConfig cfg = GetParam();
  // 40 vertices, this rank owns a third of them: halo rows exist and must be used.
  const test::SmallGraph graph = test::random_graph(40, 0.12, 3, /*isolated=*/7);
  std::vector<GlobalId> owned;
  for (GlobalId v = 0; v < 40; v += 3) owned.push_back(v);
  const LocalPartition part = test::make_partition(graph, owned);
  ASSERT_GT(part.num_halo, 5);
  const LocalGraph g = LocalGraph::build(part, cpu_device());
  const Device& dev = *g.dev;

  // About 15% non-zero, some rows empty.
  Matrix x = test::random_matrix(g.num_local(), cfg.in_dim, 1);
  const CounterRng keep(RngKey{3, RngPurpose::test, 1, 1});
  for (std::int64_t i = 0; i < x.rows(); ++i) {
    for (std::int64_t j = 0; j < x.cols(); ++j) {
      if (i % 7 == 3 || keep.uniform(static_cast<std::uint64_t>(i), j) > 0.15f) x(i, j) = 0.0f;
    }
  }
  const CsrMatrix x_csr = kernels::dense_to_csr(g.dev, x.view());
  ASSERT_GT(x_csr.nnz(), 0);
  const std::int64_t out = make_layer(cfg, 11, 0)->out_dim();
  const Matrix r = test::random_matrix(g.num_owned, out, 2);

  for (const float p : {0.0f, 0.5f}) {
    SCOPED_TRACE(p);
    const RngKey key{5, RngPurpose::dropout, 2, 0};
    Matrix xd(x.rows(), x.cols());
    kernels::dropout_forward(dev, key, g.global_ids.data(), p, x.view(), xd.view());
    Buffer<float> val(static_cast<std::size_t>(x_csr.nnz()), g.dev);
    kernels::dropout_csr(dev, key, g.global_ids.data(), p, x_csr.view(), val.data());

    const LayerRun dense = run_layer(cfg, g, r, [&](Layer& layer, DenseView y) {
      layer.forward(g, xd.view(), y, ForwardContext{});
    });
    const LayerRun sparse = run_layer(cfg, g, r, [&](Layer& layer, DenseView y) {
      CsrView v = x_csr.view();
      v.val = val.data();
      layer.set_sparse_input(v);
      // Only the shape of the dense argument counts in sparse mode.
      layer.forward(g, ConstDenseView(nullptr, g.num_local(), cfg.in_dim), y, ForwardContext{});
    });
    expect_near(sparse.y.host(), dense.y.host(), "y");
    expect_near(sparse.gx.host(), dense.gx.host(), "gx");
    ASSERT_EQ(sparse.grads.size(), dense.grads.size());
    for (std::size_t k = 0; k < dense.grads.size(); ++k)
      expect_near(sparse.grads[k], dense.grads[k], "parameter gradient");
  }
}

TEST_P(SparseLayerInput, ReturnsToTheDenseInputWhenCleared) {
  const LayerConfig cfg = GetParam();
  const test::SmallGraph graph = test::random_graph(30, 0.15, 4);
  const LocalPartition part = test::whole_graph(graph);
  const LocalGraph g = LocalGraph::build(part, cpu_device());
  const Matrix x = test::random_matrix(g.num_local(), cfg.in_dim, 3);
  Matrix zeros(g.num_local(), cfg.in_dim);
  const CsrMatrix empty = kernels::dense_to_csr(g.dev, zeros.view());
  auto layer = make_layer(cfg, 11, 0);
  layer->prepare(g);
  Matrix y_dense(g.num_owned, layer->out_dim()), y(g.num_owned, layer->out_dim());
  layer->forward(g, x.view(), y_dense.view(), ForwardContext{});
  // An all-zero sparse input gives the bias (zero at initialisation) everywhere.
  layer->set_sparse_input(empty.view());
  layer->forward(g, x.view(), y.view(), ForwardContext{});
  for (float v : y.host()) ASSERT_EQ(v, 0.0f);
  layer->set_sparse_input(std::nullopt);
  layer->forward(g, x.view(), y.view(), ForwardContext{});
  EXPECT_EQ(y.to_host(), y_dense.to_host());
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

// Narrow inputs (in_dim <= out_dim) aggregate first on the dense path and transform first on the
// sparse one; wide inputs transform first on both.
INSTANTIATE_TEST_SUITE_P(Layers, SparseLayerInput,
                         ::testing::Values(config(ModelKind::gcn, 6, 8), config(ModelKind::gcn, 24, 4),
                                           config(ModelKind::sage, 6, 8),
                                           config(ModelKind::sage, 24, 4),
                                           config(ModelKind::gat, 24, 4, 3, true),
                                           config(ModelKind::gat, 24, 3, 2, false)));

}  // namespace
}  // namespace halognn
