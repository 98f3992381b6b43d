// Finite-difference checks of every layer's backward pass, w.r.t. the input (owned AND halo
// rows) and every parameter, on a hand-built partition with halo rows and an isolated vertex.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/kernels/kernels.hpp"
#include "models/layer.hpp"
#include "models/local_graph.hpp"
#include "test/kernels/kernel_test_util.hpp"
#include "test/models/model_test_util.hpp"

namespace halognn {
namespace {

struct GradCase {
  std::string name;
  LayerConfig cfg;
  double step;       ///< finite-difference step
  double tolerance;  ///< absolute, scaled by (1 + |gradient|)
  bool sparse_input = false;  ///< the input as CSR (set_sparse_input), about a third non-zero
};

std::string case_name(const ::testing::TestParamInfo<GradCase>& info) { return info.param.name; }

class LayerGradient : public ::testing::TestWithParam<GradCase> {};

/// The smallest |pre(v, u, h)| over the entries (v, u) of A + I in the owned rows and the heads:
/// a central difference is only valid when no LeakyReLU input lies within (step x its
/// sensitivity) of the kink at 0.
double min_over_attention_entries(const LocalPartition& part, int heads,
                                  const std::function<double(LocalId, LocalId, int)>& pre) {
  double best = 1e30;
  for (LocalId v = 0; v < part.num_owned; ++v) {
    std::vector<LocalId> cols(part.col.begin() + part.row_ptr[v],
                              part.col.begin() + part.row_ptr[v + 1]);
    cols.push_back(v);
    for (LocalId u : cols)
      for (int h = 0; h < heads; ++h) best = std::min(best, std::abs(pre(v, u, h)));
  }
  return best;
}

/// GAT only: the scores' pre-activations a_dst·z_v + a_src·z_u, recomputed on the host from the
/// layer's parameters.
double min_attention_preactivation(Layer& layer, const LocalPartition& part, const Matrix& x,
                                   const LayerConfig& cfg) {
  const auto params = layer.parameters();
  const Matrix& w = params[0]->value;
  const Matrix &a_src = params[1]->value, &a_dst = params[2]->value;
  const std::int64_t f = cfg.out_dim;
  auto score = [&](LocalId v, const Matrix& a, int h) {
    double s = 0.0;
    for (std::int64_t j = 0; j < f; ++j) {
      double z = 0.0;
      for (std::int64_t k = 0; k < x.cols(); ++k) z += double(x(v, k)) * w(k, h * f + j);
      s += z * a(h, j);
    }
    return s;
  };
  return min_over_attention_entries(part, cfg.heads, [&](LocalId v, LocalId u, int h) {
    return score(v, a_dst, h) + score(u, a_src, h);
  });
}

/// Residual GAT blocks without input dropout: the smallest |s_dst[v,k] + s_src[u,k]| over the
/// entries of A + I, recomputed on the host from the block's parameters (found by name): h is x,
/// or GELU(x W_in + b_in) for the first block; n = LayerNorm(h); z = n W_att + b_att;
/// s_src = z W_src + b_src, s_dst = z W_dst.
double min_residual_attention_preactivation(Layer& layer, const LocalPartition& part,
                                            const Matrix& x, const LayerConfig& cfg) {
  std::map<std::string, const Matrix*> w;
  for (Parameter* p : layer.parameters()) w[p->name.substr(p->name.find('.') + 1)] = &p->value;
  const std::int64_t d = cfg.hidden;
  auto scores = [&](LocalId v) {
    std::vector<double> h(static_cast<std::size_t>(d));
    for (std::int64_t j = 0; j < d; ++j) {
      if (!cfg.input_linear) {
        h[j] = x(v, j);
        continue;
      }
      double z = (*w.at("input.bias"))(0, j);
      for (std::int64_t k = 0; k < x.cols(); ++k) z += double(x(v, k)) * (*w.at("input.weight"))(k, j);
      h[j] = 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0)));
    }
    double mean = 0, var = 0;
    for (double e : h) mean += e / double(d);
    for (double e : h) var += (e - mean) * (e - mean) / double(d);
    std::vector<double> n(h.size()), z(h.size());
    for (std::int64_t j = 0; j < d; ++j)
      n[j] = (h[j] - mean) / std::sqrt(var + 1e-5) * (*w.at("norm.scale"))(0, j) +
             (*w.at("norm.bias"))(0, j);
    for (std::int64_t j = 0; j < d; ++j) {
      z[j] = (*w.at("attention.bias"))(0, j);
      for (std::int64_t k = 0; k < d; ++k) z[j] += n[k] * (*w.at("attention.weight"))(k, j);
    }
    std::vector<std::array<double, 2>> s(static_cast<std::size_t>(cfg.heads));  // {dst, src}
    for (int k = 0; k < cfg.heads; ++k) {
      s[k] = {0.0, (*w.at("attention.source.bias"))(0, k)};
      for (std::int64_t j = 0; j < d; ++j) {
        s[k][0] += z[j] * (*w.at("attention.target.weight"))(j, k);
        s[k][1] += z[j] * (*w.at("attention.source.weight"))(j, k);
      }
    }
    return s;
  };
  std::vector<std::vector<std::array<double, 2>>> all;
  for (LocalId v = 0; v < part.num_local(); ++v) all.push_back(scores(v));
  return min_over_attention_entries(part, cfg.heads, [&](LocalId v, LocalId u, int h) {
    return all[v][h][0] + all[u][h][1];
  });
}

/// GIN only: the MLP's hidden pre-activations p = h W1 + b1 with
/// h_v = (1 + eps) x_v + sum over v's neighbours of x_u, recomputed on the host from the current
/// input (`input(i, j)`) and parameters. The layer is piecewise linear; a central difference is
/// exact unless one of its two points flips the sign of one (the ReLU's kink): the seed is chosen
/// to keep them away from 0, and entries whose difference would still flip one are skipped.
std::vector<double> gin_preactivations(Layer& layer, const LocalPartition& part,
                                       const LayerConfig& cfg,
                                       const std::function<double(LocalId, std::int64_t)>& input) {
  const auto params = layer.parameters();
  const Matrix& w1 = params[0]->value;
  const Matrix& b1 = params[1]->value;
  const double eps = cfg.train_eps ? params.back()->value(0, 0) : cfg.eps;
  std::vector<double> pre;
  for (LocalId v = 0; v < part.num_owned; ++v) {
    std::vector<double> h(static_cast<std::size_t>(cfg.in_dim));
    for (std::int64_t k = 0; k < cfg.in_dim; ++k) {
      h[k] = (1.0 + eps) * input(v, k);
      for (std::int32_t e = part.row_ptr[v]; e < part.row_ptr[v + 1]; ++e) h[k] += input(part.col[e], k);
    }
    for (std::int64_t j = 0; j < w1.cols(); ++j) {
      double p = b1(0, j);
      for (std::int64_t k = 0; k < cfg.in_dim; ++k) p += h[k] * w1(k, j);
      pre.push_back(p);
    }
  }
  return pre;
}

std::vector<bool> signs(const std::vector<double>& v) {
  std::vector<bool> out;
  for (double x : v) out.push_back(x > 0);
  return out;
}

double inner(ConstDenseView y, const Matrix& r) {
  double s = 0.0;
  for (std::int64_t i = 0; i < y.rows * y.cols; ++i) s += double(y.data[i]) * r.host()[i];
  return s;
}

TEST_P(LayerGradient, BackwardMatchesCentralDifferencesForInputAndParameters) {
  const GradCase& tc = GetParam();
  // 18 vertices; this rank owns 0..8 (vertex 4 isolated), the rest that touch it are halo rows.
  const test::SmallGraph graph = test::random_graph(18, 0.25, 5, /*isolated=*/4);
  const LocalPartition part = test::make_partition(graph, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  ASSERT_GT(part.num_halo, 3);
  const LocalGraph g = LocalGraph::build(part, cpu_device());

  Matrix x = test::random_matrix(g.num_local(), tc.cfg.in_dim, 31);
  // Sparse input: keep about a third of the entries and hand the layer their CSR; the finite
  // differences then perturb the stored values, which are the layer's only inputs.
  CsrMatrix x_csr;
  std::vector<float> x_val;
  if (tc.sparse_input) {
    const CounterRng keep(RngKey{5, RngPurpose::test, 9, 0});
    for (std::int64_t i = 0; i < x.rows(); ++i) {
      for (std::int64_t j = 0; j < x.cols(); ++j) {
        // One entry per row always stays: an all-zero row would put GAT scores exactly on the
        // LeakyReLU kink (harmless, but the seed search below would reject every seed).
        if (j != i % x.cols() &&
            keep.uniform(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j)) > 0.35f)
          x(i, j) = 0.0f;
      }
    }
    x_csr = kernels::dense_to_csr(cpu_device(), x.view());
    x_val = x_csr.val().to_host();
    ASSERT_GT(x_csr.nnz(), x.size() / 5);
    ASSERT_LT(x_csr.nnz(), x.size() * 3 / 5);
  }
  // A central difference is wrong when it straddles a LeakyReLU kink. Inputs and weights are
  // O(1) (Glorot bound ~0.8), so a pre-activation moves by at most ~3 h per step in any single
  // input or parameter entry: take the first weight seed whose pre-activations all clear that
  // margin (deterministic; GCN and SAGE take the first seed).
  std::unique_ptr<Layer> layer;
  for (std::uint64_t seed = 9; seed < 509 && !layer; ++seed) {
    layer = make_layer(tc.cfg, seed, /*layer_index=*/1);
    layer->prepare(g);
    if (tc.cfg.kind == ModelKind::gat && !tc.cfg.residual &&
        min_attention_preactivation(*layer, part, x, tc.cfg) < 4 * tc.step) {
      layer.reset();
    } else if (tc.cfg.kind == ModelKind::gat && tc.cfg.residual &&
               min_residual_attention_preactivation(*layer, part, x, tc.cfg) < 4 * tc.step) {
      layer.reset();
    } else if (tc.cfg.kind == ModelKind::gin) {
      // x still holds the values here (sparse mode zeroed the dropped entries in x as well).
      const auto pre = gin_preactivations(*layer, part, tc.cfg,
                                          [&](LocalId i, std::int64_t j) -> double { return x(i, j); });
      double closest = 1e30;
      for (double p : pre) closest = std::min(closest, std::abs(p));
      if (closest < 3 * tc.step) layer.reset();
    }
  }
  ASSERT_TRUE(layer) << "no seed keeps the pre-activations away from the kink";
  const Matrix r = test::random_matrix(g.num_owned, layer->out_dim(), 32);
  Matrix y(g.num_owned, layer->out_dim());
  const ForwardContext ctx{};
  if (tc.sparse_input) {
    // The dense x is ignored in this mode (only its shape counts): poison it to prove it.
    for (float& v : x.host()) v = std::nanf("");
    CsrView v = x_csr.view();
    v.val = x_val.data();
    layer->set_sparse_input(v);
  }
  // The current input entry (i, j), for the GIN kink check: dense x, or the CSR's stored values.
  std::vector<std::int32_t> csr_ptr, csr_col;
  if (tc.sparse_input) {
    csr_ptr = x_csr.row_ptr().to_host();
    csr_col = x_csr.col().to_host();
  }
  auto input = [&](LocalId i, std::int64_t j) -> double {
    if (!tc.sparse_input) return x(i, j);
    for (std::int32_t k = csr_ptr[i]; k < csr_ptr[i + 1]; ++k)
      if (csr_col[k] == j) return x_val[k];
    return 0.0;
  };
  auto kink_pattern = [&] {
    return tc.cfg.kind == ModelKind::gin ? signs(gin_preactivations(*layer, part, tc.cfg, input))
                                         : std::vector<bool>{};
  };
  std::int64_t checked = 0, skipped = 0;
  auto objective = [&] {
    layer->forward(g, x.view(), y.view(), ctx);
    return inner(y.view(), r);
  };

  // Analytic gradients of L = <y, r>: backward with gy = r.
  objective();
  Matrix gx(g.num_local(), layer->in_dim());
  layer->backward(g, r.view(), gx.view());
  std::vector<std::vector<float>> param_grads;
  for (Parameter* p : layer->parameters()) param_grads.push_back(p->grad.to_host());

  // Tolerance: y is computed in float32 (relative error ~ k * 6e-8 for sums of k ~ 20 terms), so
  // L = <y, r> (accumulated in double) carries an absolute error of about 1e-6 * sum |y r|
  // ~ 1e-5 here. A central difference divides that by 2h, giving ~ 1e-5 / h; the truncation
  // error is h^2/6 * |L'''|, exactly zero for GCN and SAGE (L is linear in every single input
  // and weight entry), so those use a large step (h = 0.25: rounding ~ 4e-5); GAT's softmax is
  // smooth away from the LeakyReLU kink (L''' = O(1) there), so h = 2e-3 balances rounding
  // (worst case ~5e-3, typically far less since both evaluations round alike) against ~1e-6
  // truncation; 3e-3 (x (1 + |g|)) is what that leaves.
  auto check = [&](float* value, float analytic, const std::string& what) {
    const float orig = *value;
    const std::vector<bool> pattern = kink_pattern();
    *value = orig + static_cast<float>(tc.step);
    const double up = double(*value) - orig;
    const double lp = objective();
    const bool same_up = kink_pattern() == pattern;
    *value = orig - static_cast<float>(tc.step);
    const double down = orig - double(*value);
    const double lm = objective();
    const bool same_down = kink_pattern() == pattern;
    *value = orig;
    if (!same_up || !same_down) {
      ++skipped;
      return;
    }
    ++checked;
    const double fd = (lp - lm) / (up + down);
    EXPECT_NEAR(analytic, fd, tc.tolerance * (1.0 + std::abs(fd))) << what;
  };
  if (tc.sparse_input) {
    const auto row_ptr = x_csr.row_ptr().to_host();
    const auto col = x_csr.col().to_host();
    for (std::int64_t i = 0; i < x.rows(); ++i) {
      for (std::int32_t k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
        check(&x_val[k], gx(i, col[k]),
              "x_csr(" + std::to_string(i) + "," + std::to_string(col[k]) + ")" +
                  (i >= g.num_owned ? " halo" : " owned"));
      }
    }
  } else {
    for (std::int64_t i = 0; i < x.rows(); ++i) {
      for (std::int64_t j = 0; j < x.cols(); ++j) {
        check(&x(i, j), gx(i, j),
              "x(" + std::to_string(i) + "," + std::to_string(j) + ")" +
                  (i >= g.num_owned ? " halo" : " owned"));
      }
    }
  }
  const auto params = layer->parameters();
  for (std::size_t p = 0; p < params.size(); ++p) {
    auto values = params[p]->value.host();
    for (std::size_t k = 0; k < values.size(); ++k) {
      check(&values[k], param_grads[p][k], params[p]->name + "[" + std::to_string(k) + "]");
    }
  }

  // Entries next to a GIN kink are skipped; most are checked.
  EXPECT_GT(checked, 4 * skipped) << skipped << " of " << checked + skipped << " entries skipped";

  // Gradients accumulate: a second backward doubles them; an empty gx skips the input gradient.
  // (A fresh forward first: the last central difference left the state of a perturbed point.)
  objective();
  layer->backward(g, r.view(), DenseView{});
  for (std::size_t p = 0; p < params.size(); ++p) {
    const auto twice = params[p]->grad.to_host();
    for (std::size_t k = 0; k < twice.size(); ++k) {
      EXPECT_NEAR(twice[k], 2.0f * param_grads[p][k], 1e-5f * (1.0f + std::abs(twice[k])));
    }
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

/// GAT as published: attention-coefficient and value dropout (training mode, a fixed mask).
LayerConfig gat_dropout(std::int64_t in, std::int64_t out, int heads, bool concat) {
  LayerConfig c = config(ModelKind::gat, in, out, heads, concat);
  c.attention_dropout = 0.5f;
  c.value_dropout = 0.5f;
  return c;
}

/// A residual block (Platonov et al.) of width `hidden` with `kind`'s aggregation: the first
/// block (an input linear layer from `in`), the last (a head to `out`), both, or neither;
/// dropout in training mode with a fixed mask.
LayerConfig residual(ModelKind kind, std::int64_t in, std::int64_t hidden, std::int64_t out,
                     bool first, bool last, float dropout, int heads = 1) {
  LayerConfig c = config(kind, first ? in : hidden, last ? out : hidden, heads);
  c.residual = true;
  c.hidden = hidden;
  c.input_linear = first;
  c.output_head = last;
  c.dropout = dropout;
  return c;
}

/// GIN with an MLP of width `mlp`; eps = `eps`, trained when `train`.
LayerConfig gin(std::int64_t in, std::int64_t out, std::int64_t mlp, float eps, bool train) {
  LayerConfig c = config(ModelKind::gin, in, out);
  c.mlp_hidden = mlp;
  c.eps = eps;
  c.train_eps = train;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Layers, LayerGradient,
    ::testing::Values(
        GradCase{"GcnAggregateFirst", config(ModelKind::gcn, 3, 5), 0.25, 2e-4},
        GradCase{"GcnTransformFirst", config(ModelKind::gcn, 6, 2), 0.25, 2e-4},
        GradCase{"SageAggregateFirst", config(ModelKind::sage, 3, 5), 0.25, 2e-4},
        GradCase{"SageTransformFirst", config(ModelKind::sage, 6, 2), 0.25, 2e-4},
        GradCase{"GatOneHeadConcat", config(ModelKind::gat, 4, 3, 1, true), 2e-3, 3e-3},
        GradCase{"GatThreeHeadsConcat", config(ModelKind::gat, 4, 3, 3, true), 2e-3, 3e-3},
        GradCase{"GatThreeHeadsMean", config(ModelKind::gat, 4, 3, 3, false), 2e-3, 3e-3},
        GradCase{"GatOneHeadMean", config(ModelKind::gat, 5, 2, 1, false), 2e-3, 3e-3},
        // Dropout of attention coefficients and values (the forward runs in training mode with
        // a fixed key, so the masks are the same in every evaluation).
        GradCase{"GatDropoutThreeHeadsConcat", gat_dropout(4, 3, 3, true), 2e-3, 3e-3},
        GradCase{"GatDropoutTwoHeadsMean", gat_dropout(5, 2, 2, false), 2e-3, 3e-3},
        // GIN: piecewise linear, so a central difference is exact unless it crosses the ReLU's
        // kink (such entries are skipped); rounding ~1e-5 / h with h = 0.02.
        GradCase{"GinAggregateFirst", gin(3, 5, 4, 0.0f, false), 0.02, 2e-3},
        GradCase{"GinTransformFirst", gin(6, 2, 4, 0.0f, false), 0.02, 2e-3},
        GradCase{"GinTrainedEpsAggregateFirst", gin(3, 2, 4, 0.3f, true), 0.02, 2e-3},
        GradCase{"GinTrainedEpsTransformFirst", gin(6, 3, 4, -0.2f, true), 0.02, 2e-3},
        // Sparse input: aggregate-first configurations transform first instead.
        GradCase{"GcnSparseInputNarrow", config(ModelKind::gcn, 3, 5), 0.25, 2e-4, true},
        GradCase{"GcnSparseInputWide", config(ModelKind::gcn, 6, 2), 0.25, 2e-4, true},
        GradCase{"SageSparseInputNarrow", config(ModelKind::sage, 3, 5), 0.25, 2e-4, true},
        GradCase{"SageSparseInputWide", config(ModelKind::sage, 6, 2), 0.25, 2e-4, true},
        GradCase{"GatSparseInputThreeHeadsConcat", config(ModelKind::gat, 6, 3, 3, true), 2e-3,
                 3e-3, true},
        GradCase{"GatSparseInputTwoHeadsMean", config(ModelKind::gat, 6, 2, 2, false), 2e-3, 3e-3,
                 true},
        GradCase{"GatSparseInputDropout", gat_dropout(6, 3, 2, true), 2e-3, 3e-3, true},
        GradCase{"GinSparseInputTrainedEps", gin(6, 3, 4, 0.1f, true), 0.02, 2e-3, true},
        // Residual blocks: smooth (GELU, layer norm), so the step balances rounding against
        // truncation as for GAT.
        GradCase{"ResidualGcnFirstAndLast", residual(ModelKind::gcn, 3, 4, 2, true, true, 0.3f),
                 2e-3, 3e-3},
        GradCase{"ResidualGcnMiddle", residual(ModelKind::gcn, 4, 4, 4, false, false, 0.3f), 2e-3,
                 3e-3},
        // A 4-wide row after the input dropout can have a small variance, and the layer norm's
        // curvature grows as its inverse cube: a smaller step (truncation 16x smaller).
        GradCase{"ResidualSageFirst", residual(ModelKind::sage, 5, 4, 4, true, false, 0.3f), 5e-4,
                 3e-3},
        GradCase{"ResidualSageLastNoDropout",
                 residual(ModelKind::sage, 4, 4, 3, false, true, 0.0f), 2e-3, 3e-3},
        GradCase{"ResidualSageFirstSparseInput",
                 residual(ModelKind::sage, 6, 4, 3, true, true, 0.3f), 2e-3, 3e-3, true},
        // GAT blocks (Platonov et al.): attention over A + I from a linear map of the normalised
        // rows, the width split between the heads; dropout only in the feed-forward, after the
        // scores, so the host check of the scores' kink holds for the middle block with it.
        GradCase{"ResidualGatMiddleTwoHeads",
                 residual(ModelKind::gat, 4, 4, 4, false, false, 0.3f, 2), 2e-3, 3e-3},
        GradCase{"ResidualGatFirstAndLastOneHead",
                 residual(ModelKind::gat, 3, 4, 2, true, true, 0.0f, 1), 2e-3, 3e-3},
        GradCase{"ResidualGatFirstSparseInputFourHeads",
                 residual(ModelKind::gat, 6, 8, 3, true, true, 0.0f, 4), 2e-3, 3e-3, true}),
    case_name);

TEST(Layers, ParseModelKindAcceptsTheFourModelsAndListsThemOtherwise) {
  EXPECT_EQ(parse_model_kind("gcn"), ModelKind::gcn);
  EXPECT_EQ(parse_model_kind("sage"), ModelKind::sage);
  EXPECT_EQ(parse_model_kind("gat"), ModelKind::gat);
  EXPECT_EQ(parse_model_kind("gin"), ModelKind::gin);
  try {
    parse_model_kind("gcnii");
    FAIL() << "no exception";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("gcn, sage, gat, gin"), std::string::npos);
  }
}

TEST(Layers, InitialWeightsAreIdenticalForTheSameSeedAndGlorotBounded) {
  const LayerConfig c = config(ModelKind::gcn, 20, 10);
  auto a = make_layer(c, 3, 0), b = make_layer(c, 3, 0), other = make_layer(c, 4, 0);
  const auto wa = a->parameters()[0]->value.to_host();
  EXPECT_EQ(wa, b->parameters()[0]->value.to_host());
  EXPECT_NE(wa, other->parameters()[0]->value.to_host());
  const float limit = std::sqrt(6.0f / 30.0f);
  for (float w : wa) EXPECT_LE(std::abs(w), limit);
  for (float v : a->parameters()[1]->value.to_host()) EXPECT_EQ(v, 0.0f);  // bias
}

TEST(Layers, GatOutputWidthConcatenatesOrAveragesHeads) {
  EXPECT_EQ(make_layer(config(ModelKind::gat, 8, 4, 3, true), 1, 0)->out_dim(), 12);
  EXPECT_EQ(make_layer(config(ModelKind::gat, 8, 4, 3, false), 1, 0)->out_dim(), 4);
}

}  // namespace
}  // namespace halognn

namespace halognn {
namespace {

// The layers of one model share one graph operator on the device (one copy, not one per layer;
// docs/training.md "Memory estimate"), and a model of another kind gets its own.
TEST(GraphOperator, TheLayersOfAModelShareOneCopy) {
  const test::SmallGraph graph = test::random_graph(40, 0.12, 3, /*isolated=*/7);
  std::vector<GlobalId> owned;
  for (GlobalId v = 0; v < 40; v += 2) owned.push_back(v);
  const LocalGraph g = LocalGraph::build(test::make_partition(graph, owned), cpu_device());
  for (const ModelKind kind : {ModelKind::gcn, ModelKind::sage, ModelKind::gat, ModelKind::gin}) {
    LayerConfig c;
    c.kind = kind;
    c.in_dim = 4;
    c.out_dim = 4;
    const std::size_t before = g.operators.size();
    auto first = make_layer(c, 1, 0), second = make_layer(c, 1, 1);
    first->prepare(g);
    second->prepare(g);
    EXPECT_EQ(g.operators.size(), before + 1) << static_cast<int>(kind);
    int shared = 0;  // held by the cache and both layers
    for (const auto& entry : g.operators) shared += entry.second.use_count() == 3 ? 1 : 0;
    EXPECT_EQ(shared, 1) << static_cast<int>(kind);
  }
}

}  // namespace
}  // namespace halognn
