// The halves a layer splits into around the halo exchange (Layer::splits, docs/training.md
// "Overlap"): forward_owned must not read a halo row (they are in flight: here they hold NaN
// until forward_halo), backward_halo must leave the halo rows of gx final (they are sent at once:
// here they are checked before backward_owned runs), backward_owned must write every owned row,
// and the halves together give the whole forward's and backward's bits. A layer that keeps no
// input halo (Layer::keeps_input_halo) must not read its input's halo rows after forward_halo;
// one that keeps them must not read them once backward_halo writes gx's halo rows into them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "models/layer.hpp"
#include "models/local_graph.hpp"
#include "test/kernels/kernel_test_util.hpp"
#include "test/models/model_test_util.hpp"

namespace halognn {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Bit-for-bit equality of two float arrays (NaN included).
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::uint32_t a = 0, b = 0;
    std::memcpy(&a, &got[i], sizeof a);
    std::memcpy(&b, &want[i], sizeof b);
    ASSERT_EQ(a, b) << what << ": element " << i << " is " << got[i] << ", expected " << want[i];
  }
}

void fill_rows(Matrix& m, std::int64_t r0, std::int64_t r1, float v) {
  for (std::int64_t i = r0; i < r1; ++i)
    for (std::int64_t j = 0; j < m.cols(); ++j) m(i, j) = v;
}

LayerConfig config(ModelKind kind, std::int64_t in, std::int64_t out) {
  LayerConfig c;
  c.kind = kind;
  c.in_dim = in;
  c.out_dim = out;
  if (kind == ModelKind::gin) {
    c.eps = 0.3f;
    c.train_eps = true;
  }
  return c;
}

class SplitLayer : public ::testing::TestWithParam<LayerConfig> {};

TEST_P(SplitLayer, HalvesReadOnlyTheirRowsAndGiveTheWholeBits) {
  const LayerConfig cfg = GetParam();
  const test::SmallGraph graph = test::random_graph(60, 0.1, 5, /*isolated=*/9);
  std::vector<GlobalId> owned;
  for (GlobalId v = 0; v < 60; v += 3) owned.push_back(v);
  const LocalGraph g = LocalGraph::build(test::make_partition(graph, owned), cpu_device());
  ASSERT_GT(g.num_halo, 0);
  const std::int64_t own = g.num_owned, local = g.num_local();

  auto whole = make_layer(cfg, 7, 1), split = make_layer(cfg, 7, 1);
  ASSERT_TRUE(split->splits());
  whole->prepare(g);
  split->prepare(g);
  const Matrix x = test::random_matrix(local, cfg.in_dim, 21);
  const Matrix gy = test::random_matrix(own, whole->out_dim(), 22);

  Matrix y_whole(own, whole->out_dim()), gx_whole(local, cfg.in_dim);
  whole->forward(g, x.view(), y_whole.view(), ForwardContext{});
  whole->backward(g, gy.view(), gx_whole.view());

  // Forward: the halo rows are NaN while forward_owned runs. A layer that keeps no input halo
  // (keeps_input_halo) gets them as a matrix of their own, overwritten with NaN once
  // forward_halo has returned (the trainer hands them to the next layer): its backward must
  // not read them. One that keeps them gets one matrix, its halo rows after its owned rows.
  const bool keeps = split->keeps_input_halo();
  Matrix xs = x.clone(cpu_device());
  fill_rows(xs, own, local, kNaN);
  Matrix xh(local - own, cfg.in_dim);
  fill_rows(xh, 0, local - own, kNaN);
  Matrix y(own, split->out_dim());
  fill_rows(y, 0, own, kNaN);
  int progress_calls = 0;
  split->forward_owned(g, xs.view().rows_range(0, own), y.view(), ForwardContext{},
                       [&] { ++progress_calls; });
  for (std::int64_t i = own; i < local; ++i)
    for (std::int64_t j = 0; j < x.cols(); ++j) (keeps ? xs(i, j) : xh(i - own, j)) = x(i, j);
  split->forward_halo(g, keeps ? xs.view().rows_range(own, local) : xh.view(), y.view(),
                      ForwardContext{});
  expect_same_bits(y.to_host(), y_whole.to_host(), "y");
  if (!keeps) fill_rows(xh, 0, local - own, kNaN);

  // Backward: the halo rows of gx are final after backward_halo; backward_owned writes every
  // owned row (NaN before). They are a matrix of their own, or, for a layer that keeps its
  // input halo, that input's halo rows (the trainer's plan may put them there).
  Matrix gx_own(own, cfg.in_dim), gx_halo(local - own, cfg.in_dim);
  fill_rows(gx_own, 0, own, kNaN);
  fill_rows(gx_halo, 0, local - own, kNaN);
  const DenseView gx_halo_rows = keeps ? xs.view().rows_range(own, local) : gx_halo.view();
  split->backward_halo(g, gy.view(), gx_halo_rows);
  const std::vector<float> want = gx_whole.to_host();
  const std::vector<float> halo_rows_got(gx_halo_rows.data,
                                         gx_halo_rows.data + (local - own) * cfg.in_dim);
  expect_same_bits(halo_rows_got, std::vector<float>(want.begin() + own * cfg.in_dim, want.end()),
                   "gx's halo rows after backward_halo");
  // Sent: the owned half must not read them (nor, then, the input's halo rows).
  fill_rows(gx_halo, 0, local - own, kNaN);
  if (keeps) fill_rows(xs, own, local, kNaN);
  split->backward_owned(g, gy.view(), gx_own.view(), [&] { ++progress_calls; });
  expect_same_bits(gx_own.to_host(),
                   std::vector<float>(want.begin(), want.begin() + own * cfg.in_dim), "gx");
  const auto pw = whole->parameters(), ps = split->parameters();
  ASSERT_EQ(pw.size(), ps.size());
  for (std::size_t p = 0; p < pw.size(); ++p)
    expect_same_bits(ps[p]->grad.to_host(), pw[p]->grad.to_host(), pw[p]->name.c_str());
  EXPECT_GT(progress_calls, 0) << "the halves progress the exchange in flight";
}

// Each model with in <= out (aggregate first) and in > out (transform first).
INSTANTIATE_TEST_SUITE_P(Layers, SplitLayer,
                         ::testing::Values(config(ModelKind::gcn, 5, 8), config(ModelKind::gcn, 8, 3),
                                           config(ModelKind::sage, 5, 8),
                                           config(ModelKind::sage, 8, 3),
                                           config(ModelKind::gin, 5, 8),
                                           config(ModelKind::gin, 8, 3)));

TEST(SplitLayer, OnlyLayersThatTransformFirstKeepTheirInputHalo) {
  for (const ModelKind kind : {ModelKind::gcn, ModelKind::sage, ModelKind::gin}) {
    EXPECT_FALSE(make_layer(config(kind, 5, 8), 1, 1)->keeps_input_halo());
    EXPECT_FALSE(make_layer(config(kind, 8, 8), 1, 1)->keeps_input_halo());
    EXPECT_TRUE(make_layer(config(kind, 8, 3), 1, 1)->keeps_input_halo());
  }
  EXPECT_TRUE(make_layer(config(ModelKind::gat, 4, 4), 1, 1)->keeps_input_halo());
}

TEST(SplitLayer, GatAndResidualBlocksDoNotSplit) {
  EXPECT_FALSE(make_layer(config(ModelKind::gat, 4, 4), 1, 1)->splits());
  LayerConfig r = config(ModelKind::gcn, 4, 4);
  r.residual = true;
  r.hidden = 4;
  EXPECT_FALSE(make_layer(r, 1, 1)->splits());
}

}  // namespace
}  // namespace halognn
