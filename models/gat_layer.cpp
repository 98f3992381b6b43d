// GAT (Velickovic et al.): per head h, z = x W_h, e_vu = LeakyReLU(a_dst·z_v + a_src·z_u) over
// u ∈ N(v) ∪ {v}, alpha = softmax_u(e), in training dropped out per (edge, head) with
// probability attention_dropout (inverted: kept coefficients scaled by 1/(1-p)),
// y_v = Σ_u alpha_vu z_u; heads concatenated (hidden layers) or averaged (last layer); plus bias. Every rank computes z for its halo rows itself from
// the exchanged layer input (docs/models.md explains why and what it costs).
#include <optional>
#include <vector>

#include "models/layer_common.hpp"

namespace halognn::detail {
namespace {

class GatLayer final : public Layer {
 public:
  GatLayer(const LayerConfig& cfg, std::uint64_t seed, std::int32_t layer)
      : cfg_(cfg),
        heads_(cfg.heads),
        width_(cfg.heads * cfg.out_dim),
        weight_(make_parameter("layer" + std::to_string(layer) + ".weight", cfg.in_dim, width_,
                               cfg.in_dim, width_, seed, layer, 0, false)),
        att_src_(make_parameter("layer" + std::to_string(layer) + ".att_src", heads_, cfg.out_dim,
                                heads_, cfg.out_dim, seed, layer, 1, false)),
        att_dst_(make_parameter("layer" + std::to_string(layer) + ".att_dst", heads_, cfg.out_dim,
                                heads_, cfg.out_dim, seed, layer, 2, false)),
        bias_(make_parameter("layer" + std::to_string(layer) + ".bias", 1, out_dim(), 0, 0, seed,
                             layer, 3, true)) {}

  std::int64_t in_dim() const override { return cfg_.in_dim; }
  std::int64_t out_dim() const override { return cfg_.concat_heads ? width_ : cfg_.out_dim; }
  std::vector<Parameter*> parameters() override {
    if (cfg_.bias) return {&weight_, &att_src_, &att_dst_, &bias_};
    return {&weight_, &att_src_, &att_dst_};
  }

  void prepare(const LocalGraph& g) override {
    dev_ = g.dev;
    for (Parameter* p : {&weight_, &att_src_, &att_dst_, &bias_}) place_parameter(*p, dev_);
    op_ = attention_operator(g);
    alpha_ = Buffer<float>(static_cast<std::size_t>(op_->a.nnz() * heads_), dev_);
    edge_grad_ = Buffer<float>(alpha_.size(), dev_);
    if (cfg_.attention_dropout > 0) drop_ = Buffer<float>(alpha_.size(), dev_);
    global_ids_ = g.global_ids.data();
  }

  void set_sparse_input(std::optional<SparseInput> x_csr) override { sparse_x_ = x_csr; }

  /// Keys of the layer's dropout masks: b = 2 layer for the coefficients, 2 layer + 1 for the
  /// values, so the two never share random numbers.
  static RngKey dropout_key(const ForwardContext& ctx, std::uint64_t which) {
    return RngKey{ctx.seed, RngPurpose::attention_dropout, static_cast<std::uint64_t>(ctx.epoch),
                  2 * static_cast<std::uint64_t>(ctx.layer) + which};
  }

  void forward(const LocalGraph& g, ConstDenseView x, DenseView y,
               const ForwardContext& ctx) override {
    check_forward_shapes("gat", g, x, y, cfg_.in_dim, out_dim());
    GNN_ASSERT(dev_, "gat: forward before prepare");
    const Device& dev = *dev_;
    const std::int64_t n_own = g.num_owned, n_local = g.num_local();
    Matrix& z = ensure(z_, n_local, width_, dev_);
    used_sparse_ = sparse_x_.has_value();
    if (used_sparse_) {
      check_sparse_input("gat", g, *sparse_x_, cfg_.in_dim);
      x_csr_ = *sparse_x_;
      input_matmul(dev, x_csr_, weight_.value.view(), z.view());
    } else {
      x_ = x;  // kept for dW (the caller keeps it unchanged until backward)
      kernels::gemm(dev, false, false, 1.0f, x, weight_.value.view(), 0.0f, z.view());
    }
    Matrix& s_dst = ensure(s_dst_, n_own, heads_, dev_);
    Matrix& s_src = ensure(s_src_, n_local, heads_, dev_);
    kernels::head_scores(dev, z.view(), n_own, att_dst_.value.data(), att_src_.value.data(), heads_,
                         s_dst.data(), s_src.data());
    // Attention-coefficient dropout (training only): the multiplier of edge (v, u) and head h is
    // keyed by (seed, epoch, layer, global v, global u, h), so every rank draws the same one.
    used_drop_ = ctx.training && cfg_.attention_dropout > 0;
    if (used_drop_) {
      kernels::edge_dropout_mask(dev, dropout_key(ctx, 0), global_ids_, cfg_.attention_dropout,
                                 op_->a.view(), heads_, drop_.data());
    }
    const float* drop = used_drop_ ? drop_.data() : nullptr;
    // Value dropout (training only): the aggregated values are z with each (node, column)
    // dropped, keyed by its global id; the scores above use z itself.
    used_value_drop_ = ctx.training && cfg_.value_dropout > 0;
    ConstDenseView values = z.view();
    if (used_value_drop_) {
      Matrix& zd = ensure(z_dropped_, n_local, width_, dev_);
      value_key_ = dropout_key(ctx, 1);
      kernels::dropout_forward(dev, value_key_, global_ids_, cfg_.value_dropout, z.view(), zd.view());
      values = zd.view();
    }
    if (cfg_.concat_heads) {
      kernels::gat_aggregate(dev, op_->a.view(), values, s_dst.data(), s_src.data(), heads_,
                             cfg_.negative_slope, alpha_.data(), drop, y);
    } else {
      Matrix& out = ensure(out_, n_own, width_, dev_);
      kernels::gat_aggregate(dev, op_->a.view(), values, s_dst.data(), s_src.data(), heads_,
                             cfg_.negative_slope, alpha_.data(), drop, out.view());
      kernels::head_mean(dev, out.view(), heads_, y);
    }
    if (cfg_.bias) kernels::add_row_vector(dev, bias_.value.data(), y);
  }

  void backward(const LocalGraph& g, ConstDenseView gy, DenseView gx) override {
    check_backward_shapes("gat", g, gy, gx, cfg_.in_dim, out_dim());
    const Device& dev = *dev_;
    const std::int64_t n_own = g.num_owned, n_local = g.num_local();
    if (cfg_.bias) kernels::column_sum(dev, gy, 1.0f, bias_.grad.data());
    ConstDenseView gout = gy;
    if (!cfg_.concat_heads) {
      Matrix& g_out = ensure(out_, n_own, width_, dev_);  // the forward's per-head output is dead
      kernels::head_mean_backward(dev, gy, heads_, g_out.view());
      gout = g_out.view();
    }
    Matrix& gz = ensure(gz_, n_local, width_, dev_);
    Matrix& gs_dst = ensure(gs_dst_, n_own, heads_, dev_);
    Matrix& gs_src = ensure(gs_src_, n_local, heads_, dev_);
    const ConstDenseView values = used_value_drop_ ? z_dropped_.cview() : z_.cview();
    kernels::gat_aggregate_backward(dev, op_->a.view(), op_->a_t.view(), op_->t_to_a.data(), values,
                                    s_dst_.data(), s_src_.data(), heads_, cfg_.negative_slope,
                                    alpha_.data(), used_drop_ ? drop_.data() : nullptr, gout,
                                    edge_grad_.data(), gs_dst.data(), gs_src.data(), gz.view());
    // gz is dL/d(values); through the value dropout (same mask) to dL/dz.
    if (used_value_drop_)
      kernels::dropout_backward(dev, value_key_, global_ids_, cfg_.value_dropout, gz.view(), gz.view());
    // Scores are linear in z: route their gradients into z and the attention vectors.
    kernels::head_scores_backward(dev, z_.view(), n_own, att_dst_.value.data(), att_src_.value.data(),
                                  heads_, gs_dst.data(), gs_src.data(), gz.view(),
                                  att_dst_.grad.data(), att_src_.grad.data());
    if (used_sparse_) {
      input_matmul_transpose(dev, x_csr_, gz.view(), weight_.grad.view());
    } else {
      kernels::gemm(dev, true, false, 1.0f, x_, gz.view(), 1.0f, weight_.grad.view());
    }
    if (gx.data == nullptr) return;
    kernels::gemm(dev, false, true, 1.0f, gz.view(), weight_.value.view(), 0.0f, gx);
  }

 private:
  LayerConfig cfg_;
  std::int32_t heads_;
  std::int64_t width_;  ///< heads * out_dim
  Parameter weight_, att_src_, att_dst_, bias_;
  DevicePtr dev_;
  std::shared_ptr<const GraphOperator> op_;  ///< A + I, structure only; shared by the layers
  Buffer<float> alpha_, edge_grad_;
  Buffer<float> drop_;                 ///< attention-dropout multipliers (nnz x heads)
  const GlobalId* global_ids_ = nullptr;  ///< the graph's global ids (device), keys of the masks
  bool used_drop_ = false;             ///< the last forward dropped coefficients
  bool used_value_drop_ = false;       ///< the last forward dropped values
  RngKey value_key_;                   ///< its value-dropout key
  Matrix z_dropped_;                   ///< z after value dropout (training)
  std::optional<SparseInput> sparse_x_;  ///< set_sparse_input
  bool used_sparse_ = false;         ///< the last forward read sparse_x_
  ConstDenseView x_;                 ///< the last forward's dense x
  SparseInput x_csr_;                  ///< the last forward's sparse x
  Matrix z_, s_dst_, s_src_, out_, gz_, gs_dst_, gs_src_;
};

}  // namespace

std::unique_ptr<Layer> make_gat_layer(const LayerConfig& cfg, std::uint64_t seed,
                                      std::int32_t layer_index) {
  return std::make_unique<GatLayer>(cfg, seed, layer_index);
}

}  // namespace halognn::detail
