// One residual block of Platonov et al.'s architecture (docs/models.md "The residual
// architecture"): with h the block's input rows (all local rows, owned then halo),
//   n = LayerNorm(h)                                  all local rows
//   a = Â n (GCN: D^-1/2 (A + I) D^-1/2)  or  a = [n_own, M n] (SAGE: M the neighbour mean)
//     or (GAT) z = n W_att + b_att on all local rows, per head k the scores
//     e_vu = LeakyReLU_0.2(s_dst[v,k] + s_src[u,k]) with s_src = z W_src + b_src and
//     s_dst = z_own W_dst over u in N(v) + {v}, softmax over u, a_v = sum_u alpha_vu z_u per
//     head block of hidden/heads columns
//   out = h_own + drop(GELU(drop(a W1 + b1)) W2 + b2)  owned rows
// The first block computes h itself from the features, h = GELU(drop(x W_in + b_in)), on every
// local row (the features of halo rows crossed once; a halo row's dropout mask is its owner's,
// keyed by global id), so no exchange of h is needed. The last block ends in a head,
// y = LayerNorm(out) W_out + b_out. Linear layers start as PyTorch's do (weights and biases
// uniform in +-1/sqrt(fan_in)), layer norms at scale 1 and bias 0.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "models/layer_common.hpp"

namespace halognn::detail {
namespace {

constexpr float kNormEps = 1e-5f;  // PyTorch's LayerNorm default
constexpr float kAttentionSlope = 0.2f;  // the scores' LeakyReLU (Platonov et al.'s GAT module)

/// The dropout sites of a block, the last coordinate of their RNG key (with the layer).
enum Site : std::uint64_t { kInputSite = 0, kFirstSite = 1, kSecondSite = 2 };

class ResidualBlock final : public Layer {
 public:
  ResidualBlock(const LayerConfig& cfg, std::uint64_t seed, std::int32_t layer)
      : cfg_(cfg),
        sage_(cfg.kind == ModelKind::sage),
        gat_(cfg.kind == ModelKind::gat),
        heads_(gat_ ? cfg.heads : 1),
        d_(cfg.hidden) {
    const std::string p = "layer" + std::to_string(layer) + ".";
    std::uint64_t index = 0;
    auto linear_weight = [&](const std::string& name, std::int64_t in, std::int64_t out,
                             std::int64_t fan_in) {
      return uniform_parameter(p + name, in, out, 1.0 / std::sqrt(static_cast<double>(fan_in)), seed,
                               layer, index++);
    };
    auto ones = [&](const std::string& name, std::int64_t n) {
      Parameter q = uniform_parameter(p + name, 1, n, 0.0, seed, layer, index++);
      for (float& v : q.value.host()) v = 1.0f;
      return q;
    };
    if (cfg.input_linear) {
      w_in_ = linear_weight("input.weight", cfg.in_dim, d_, cfg.in_dim);
      b_in_ = linear_weight("input.bias", 1, d_, cfg.in_dim);
    }
    norm_scale_ = ones("norm.scale", d_);
    norm_bias_ = uniform_parameter(p + "norm.bias", 1, d_, 0.0, seed, layer, index++);
    if (gat_) {
      w_att_ = linear_weight("attention.weight", d_, d_, d_);
      b_att_ = linear_weight("attention.bias", 1, d_, d_);
      w_src_ = linear_weight("attention.source.weight", d_, heads_, d_);
      b_src_ = linear_weight("attention.source.bias", 1, heads_, d_);
      w_dst_ = linear_weight("attention.target.weight", d_, heads_, d_);
    }
    const std::int64_t ff_in = sage_ ? 2 * d_ : d_;  // SAGE: [n_own, M n]
    w1_ = linear_weight(sage_ ? "ff1.weight_self" : "ff1.weight", d_, d_, ff_in);
    if (sage_) w1_neigh_ = linear_weight("ff1.weight_neigh", d_, d_, ff_in);
    b1_ = linear_weight("ff1.bias", 1, d_, ff_in);
    w2_ = linear_weight("ff2.weight", d_, d_, d_);
    b2_ = linear_weight("ff2.bias", 1, d_, d_);
    if (cfg.output_head) {
      out_scale_ = ones("output_norm.scale", d_);
      out_bias_ = uniform_parameter(p + "output_norm.bias", 1, d_, 0.0, seed, layer, index++);
      w_out_ = linear_weight("output.weight", d_, cfg.out_dim, d_);
      b_out_ = linear_weight("output.bias", 1, cfg.out_dim, d_);
    }
  }

  std::int64_t in_dim() const override { return cfg_.in_dim; }
  std::int64_t out_dim() const override { return cfg_.out_dim; }
  std::vector<Parameter*> parameters() override {
    std::vector<Parameter*> ps;
    for (Parameter* p : {&w_in_, &b_in_, &norm_scale_, &norm_bias_, &w_att_, &b_att_, &w_src_,
                         &b_src_, &w_dst_, &w1_, &w1_neigh_, &b1_, &w2_, &b2_, &out_scale_,
                         &out_bias_, &w_out_, &b_out_})
      if (p->value.size() > 0) ps.push_back(p);  // the parameters this block declares
    return ps;
  }

  void prepare(const LocalGraph& g) override {
    dev_ = g.dev;
    for (Parameter* p : parameters()) place_parameter(*p, dev_);
    // The GCN, SAGE and GAT layers' own operators.
    op_ = gat_ ? attention_operator(g) : sage_ ? mean_operator(g) : gcn_operator(g);
    if (gat_) {
      alpha_ = Buffer<float>(static_cast<std::size_t>(op_->a.nnz() * heads_), dev_);
      edge_grad_ = Buffer<float>(alpha_.size(), dev_);
    }
  }

  void set_sparse_input(std::optional<SparseInput> x) override {
    GNN_ASSERT(!x || cfg_.input_linear, "residual block: only the first block reads features");
    sparse_x_ = x;
  }

  void forward(const LocalGraph& g, ConstDenseView x, DenseView y,
               const ForwardContext& ctx) override {
    check_forward_shapes("residual block", g, x, y, cfg_.in_dim, cfg_.out_dim);
    GNN_ASSERT(dev_, "residual block: forward before prepare");
    const Device& dev = *dev_;
    const LocalId nl = g.num_local(), no = g.num_owned;
    drop_ = ctx.training ? cfg_.dropout : 0.0f;
    seed_ = ctx.seed;
    epoch_ = ctx.epoch;
    layer_ = ctx.layer;
    const GlobalId* ids = g.global_ids.data();

    // h: the block's input rows.
    if (cfg_.input_linear) {
      used_sparse_ = sparse_x_.has_value();
      Matrix& z0 = ensure(z0_, nl, d_, dev_);
      if (used_sparse_) {
        check_sparse_input("residual block", g, *sparse_x_, cfg_.in_dim);
        x_sparse_ = *sparse_x_;
        input_matmul_bias(dev, x_sparse_, w_in_.value.view(), b_in_.value.data(), z0.view());
      } else {
        x_ = x;  // kept for dW_in (the caller keeps it unchanged until backward)
        kernels::linear(dev, x, w_in_.value.view(), {}, {}, b_in_.value.data(), z0.view());
      }
      dropout(dev, kInputSite, ids, z0.view());
      Matrix& h = ensure(h_, nl, d_, dev_);
      kernels::gelu_forward(dev, z0.view(), h.view());
      h_view_ = h.view();
    } else {
      h_view_ = x;  // kept for the layer norm's backward
    }

    // n = LayerNorm(h) over every local row, then the aggregation of the owned rows.
    Matrix& n = ensure(n_, nl, d_, dev_);
    kernels::layer_norm_forward(dev, h_view_, norm_scale_.value.data(), norm_bias_.value.data(),
                                kNormEps, n.view(), ensure(stats_, nl, 2, dev_).data());
    Matrix& a = ensure(a_, no, d_, dev_);
    if (gat_) {
      attend(dev, nl, no, a.view());
    } else {
      aggregate(dev, *op_, n.view(), 0.0f, nullptr, a.view());
    }

    // The feed-forward: z1 = a W1 + b1 (SAGE: n_own W1_self + (M n) W1_neigh + b1), dropped in
    // place and kept (GELU's backward reads it); g1 = GELU(z1) kept for dW2.
    Matrix& z1 = ensure(z1_, no, d_, dev_);
    if (sage_) {
      kernels::linear(dev, n.view().rows_range(0, no), w1_.value.view(), a.view(),
                      w1_neigh_.value.view(), b1_.value.data(), z1.view());
    } else {
      kernels::linear(dev, a.view(), w1_.value.view(), {}, {}, b1_.value.data(), z1.view());
    }
    dropout(dev, kFirstSite, ids, z1.view());
    Matrix& g1 = ensure(g1_, no, d_, dev_);
    kernels::gelu_forward(dev, z1.view(), g1.view());

    // out = h_own + drop(g1 W2 + b2): into y, or into out_ when the head follows.
    const DenseView out = cfg_.output_head ? ensure(out_, no, d_, dev_).view() : y;
    kernels::linear(dev, g1.view(), w2_.value.view(), {}, {}, b2_.value.data(), out);
    dropout(dev, kSecondSite, ids, out);
    kernels::axpy(dev, 1.0f, h_view_.rows_range(0, no), out);

    if (cfg_.output_head) {
      Matrix& o = ensure(o_, no, d_, dev_);
      kernels::layer_norm_forward(dev, out_.view(), out_scale_.value.data(),
                                  out_bias_.value.data(), kNormEps, o.view(),
                                  ensure(out_stats_, no, 2, dev_).data());
      kernels::linear(dev, o.view(), w_out_.value.view(), {}, {}, b_out_.value.data(), y);
    }
  }

  void backward(const LocalGraph& g, ConstDenseView gy, DenseView gx) override {
    check_backward_shapes("residual block", g, gy, gx, cfg_.in_dim, cfg_.out_dim);
    const Device& dev = *dev_;
    const LocalId nl = g.num_local(), no = g.num_owned;
    const GlobalId* ids = g.global_ids.data();

    // g_out: the gradient of the block's output rows (through the head when there is one).
    ConstDenseView g_out = gy;
    if (cfg_.output_head) {
      kernels::linear_grad(dev, o_.view(), gy, w_out_.grad.view(), b_out_.grad.data());
      Matrix& go = ensure(go_, no, d_, dev_);
      kernels::gemm(dev, false, true, 1.0f, gy, w_out_.value.view(), 0.0f, go.view());
      kernels::layer_norm_backward(dev, out_.view(), out_stats_.data(), out_scale_.value.data(),
                                   go.view(), 0.0f, go.view(), out_scale_.grad.data(),
                                   out_bias_.grad.data());
      g_out = go.view();
    }

    // Back through the feed-forward: gz2 = drop'(g_out); dW2, db2; gz1 = drop'(GELU'(z1) gz2 W2ᵀ).
    Matrix& gz2 = ensure(gz2_, no, d_, dev_);
    dropout_backward(dev, kSecondSite, ids, g_out, gz2.view());
    kernels::linear_grad(dev, g1_.view(), gz2.view(), w2_.grad.view(), b2_.grad.data());
    Matrix& gz1 = ensure(gz1_, no, d_, dev_);
    kernels::gemm(dev, false, true, 1.0f, gz2.view(), w2_.value.view(), 0.0f, gz1.view());
    kernels::gelu_backward(dev, z1_.view(), gz1.view(), gz1.view());
    dropout_backward(dev, kFirstSite, ids, gz1.view(), gz1.view());

    // Back through the aggregation into gn (every local row). n_ and a_ hold it and the
    // aggregation's gradient: both are dead once the weight gradients have read them.
    Matrix& gn = n_;
    if (sage_) {
      kernels::linear_grad(dev, n_.view().rows_range(0, no), gz1.view(), w1_.grad.view(),
                           b1_.grad.data());
      kernels::linear_grad(dev, a_.view(), gz1.view(), w1_neigh_.grad.view(), nullptr);
      const DenseView ga = a_.view();
      kernels::gemm(dev, false, true, 1.0f, gz1.view(), w1_neigh_.value.view(), 0.0f, ga);
      aggregate_transpose(dev, *op_, ga, gn.view());
      kernels::gemm(dev, false, true, 1.0f, gz1.view(), w1_.value.view(), 1.0f,
                    gn.view().rows_range(0, no));
    } else {
      kernels::linear_grad(dev, a_.view(), gz1.view(), w1_.grad.view(), b1_.grad.data());
      const DenseView ga = a_.view();
      kernels::gemm(dev, false, true, 1.0f, gz1.view(), w1_.value.view(), 0.0f, ga);
      if (gat_) {
        attend_backward(dev, nl, no, ga, gn.view());
      } else {
        aggregate_transpose(dev, *op_, ga, gn.view());
      }
    }

    // gh = LayerNorm'(gn) on every local row, plus g_out on the owned rows (the skip connection).
    // Later blocks write it into gx (the caller's input gradient); the first block, or a caller
    // asking for no input gradient, into gh_.
    const bool into_gx = !cfg_.input_linear && gx.data != nullptr;
    const DenseView gh = into_gx ? gx : ensure(gh_, nl, d_, dev_).view();
    kernels::layer_norm_backward(dev, h_view_, stats_.data(), norm_scale_.value.data(), gn.view(),
                                 0.0f, gh, norm_scale_.grad.data(), norm_bias_.grad.data());
    kernels::axpy(dev, 1.0f, g_out, gh.rows_range(0, no));
    if (!cfg_.input_linear) return;

    // The first block: back through GELU and the input dropout to z0 = x W_in + b_in.
    kernels::gelu_backward(dev, z0_.view(), gh, gh);
    dropout_backward(dev, kInputSite, ids, gh, gh);
    if (used_sparse_) {
      input_matmul_transpose(dev, x_sparse_, gh, w_in_.grad.view());
      kernels::column_sum(dev, gh, 1.0f, b_in_.grad.data());
    } else {
      kernels::linear_grad(dev, x_, gh, w_in_.grad.view(), b_in_.grad.data());
    }
    if (gx.data == nullptr) return;
    kernels::gemm(dev, false, true, 1.0f, gh, w_in_.value.view(), 0.0f, gx);
  }

 private:
  /// GAT: a = the attention-weighted aggregation of z = n W_att + b_att (n_ holds n).
  void attend(const Device& dev, LocalId nl, LocalId no, DenseView a) {
    Matrix& z = ensure(z_att_, nl, d_, dev_);
    kernels::linear(dev, n_.view(), w_att_.value.view(), {}, {}, b_att_.value.data(), z.view());
    Matrix& s_src = ensure(s_src_, nl, heads_, dev_);
    Matrix& s_dst = ensure(s_dst_, no, heads_, dev_);
    kernels::linear(dev, z.view(), w_src_.value.view(), {}, {}, b_src_.value.data(), s_src.view());
    kernels::linear(dev, z.view().rows_range(0, no), w_dst_.value.view(), {}, {}, nullptr,
                    s_dst.view());
    kernels::gat_aggregate(dev, op_->a.view(), z.view(), s_dst.data(), s_src.data(), heads_,
                           kAttentionSlope, alpha_.data(), nullptr, a);
  }
  /// GAT: from ga = dL/da to gn = dL/dn (every local row; n_ still holds n when called, and gn
  /// may be n_ itself: n is read before gn is written).
  void attend_backward(const Device& dev, LocalId nl, LocalId no, ConstDenseView ga, DenseView gn) {
    Matrix& gz = ensure(gz_att_, nl, d_, dev_);
    Matrix& gs_src = ensure(gs_src_, nl, heads_, dev_);
    Matrix& gs_dst = ensure(gs_dst_, no, heads_, dev_);
    kernels::gat_aggregate_backward(dev, op_->a.view(), op_->a_t.view(), op_->t_to_a.data(),
                                    z_att_.view(), s_dst_.data(), s_src_.data(), heads_,
                                    kAttentionSlope, alpha_.data(), nullptr, ga, edge_grad_.data(),
                                    gs_dst.data(), gs_src.data(), gz.view());
    // The scores are linear in z: their gradients reach z and the score weights.
    kernels::linear_grad(dev, z_att_.view(), gs_src.view(), w_src_.grad.view(), b_src_.grad.data());
    kernels::gemm(dev, false, true, 1.0f, gs_src.view(), w_src_.value.view(), 1.0f, gz.view());
    kernels::linear_grad(dev, z_att_.view().rows_range(0, no), gs_dst.view(), w_dst_.grad.view(),
                         nullptr);
    kernels::gemm(dev, false, true, 1.0f, gs_dst.view(), w_dst_.value.view(), 1.0f,
                  gz.view().rows_range(0, no));
    kernels::linear_grad(dev, n_.view(), gz.view(), w_att_.grad.view(), b_att_.grad.data());
    kernels::gemm(dev, false, true, 1.0f, gz.view(), w_att_.value.view(), 0.0f, gn);
  }

  RngKey key(Site site) const {
    return RngKey{seed_, RngPurpose::block_dropout, static_cast<std::uint64_t>(epoch_),
                  static_cast<std::uint64_t>(layer_) * 3 + site};
  }
  /// In-place dropout of rows whose global ids start at `ids` (the first rows are the owned ones).
  void dropout(const Device& dev, Site site, const GlobalId* ids, DenseView v) const {
    if (drop_ > 0) kernels::dropout_forward(dev, key(site), ids, drop_, v, v);
  }
  void dropout_backward(const Device& dev, Site site, const GlobalId* ids, ConstDenseView g,
                        DenseView out) const {
    if (drop_ > 0) kernels::dropout_backward(dev, key(site), ids, drop_, g, out);
    else if (g.data != out.data) kernels::copy(dev, g, out);
  }

  LayerConfig cfg_;
  bool sage_, gat_;
  std::int32_t heads_;
  std::int64_t d_;
  Parameter w_in_, b_in_, norm_scale_, norm_bias_, w1_, w1_neigh_, b1_, w2_, b2_;
  Parameter w_att_, b_att_, w_src_, b_src_, w_dst_;  ///< GAT: the attention's linear layers
  Parameter out_scale_, out_bias_, w_out_, b_out_;
  DevicePtr dev_;
  std::shared_ptr<const GraphOperator> op_;  ///< shared with the model's other layers
  std::optional<SparseInput> sparse_x_;
  // What the last forward keeps for the backward.
  float drop_ = 0.0f;
  std::uint64_t seed_ = 0;
  std::int64_t epoch_ = 0;
  std::int32_t layer_ = 0;
  bool used_sparse_ = false;
  ConstDenseView x_;       ///< first block, dense input: the features
  SparseInput x_sparse_;   ///< first block, sparse input
  ConstDenseView h_view_;  ///< the block's input rows h (x, or h_ for the first block)
  Matrix z0_;        ///< first block: x W_in + b_in after dropout (GELU's input), nl x d
  Matrix h_;         ///< first block: GELU(z0), nl x d
  Matrix n_, stats_;  ///< LayerNorm(h) (its gradient in the backward) and (mean, rstd) per row
  Matrix a_;         ///< the aggregation (GCN: Â n; SAGE: M n), then its gradient, no x d
  Matrix z1_, g1_;   ///< the first feed-forward layer after dropout, and its GELU, no x d
  Matrix out_, o_, out_stats_;  ///< head: the block's output rows, their LayerNorm and stats
  Matrix z_att_, s_src_, s_dst_;  ///< GAT: z (nl x d) and the scores (nl, no x heads)
  Buffer<float> alpha_, edge_grad_;  ///< GAT: coefficients and their scratch gradient (nnz x heads)
  // Backward scratch.
  Matrix go_, gz2_, gz1_, gh_, gz_att_, gs_src_, gs_dst_;
};

}  // namespace

std::unique_ptr<Layer> make_residual_block(const LayerConfig& cfg, std::uint64_t seed,
                                           std::int32_t layer_index) {
  GNN_CHECK_CONFIG(cfg.kind == ModelKind::gcn || cfg.kind == ModelKind::sage ||
                       cfg.kind == ModelKind::gat,
                   "the residual architecture has GCN, SAGE and GAT blocks (--model gcn, sage or gat)");
  GNN_CHECK_CONFIG(cfg.hidden > 0, "layer ", layer_index, ": the block width must be positive");
  GNN_CHECK_CONFIG(cfg.kind != ModelKind::gat || (cfg.heads >= 1 && cfg.hidden % cfg.heads == 0),
                   "layer ", layer_index, ": a GAT block's width ", cfg.hidden,
                   " must be a multiple of its heads ", cfg.heads);
  GNN_CHECK_CONFIG(cfg.attention_dropout == 0 && cfg.value_dropout == 0, "layer ", layer_index,
                   ": residual GAT blocks have no attention or value dropout");
  GNN_CHECK_CONFIG(cfg.bias, "layer ", layer_index, ": residual blocks' linear layers have biases");
  GNN_CHECK_CONFIG(cfg.input_linear || cfg.in_dim == cfg.hidden, "layer ", layer_index,
                   ": a block after the first takes rows as wide as the blocks");
  GNN_CHECK_CONFIG(cfg.output_head || cfg.out_dim == cfg.hidden, "layer ", layer_index,
                   ": a block before the last gives rows as wide as the blocks");
  GNN_CHECK_CONFIG(cfg.dropout >= 0 && cfg.dropout < 1, "layer ", layer_index,
                   ": dropout must be in [0, 1)");
  return std::make_unique<ResidualBlock>(cfg, seed, layer_index);
}

}  // namespace halognn::detail
