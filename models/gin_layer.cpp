// GIN (Xu et al., "How Powerful are Graph Neural Networks?"): a sum over the neighbours plus the
// node's own row weighted 1 + eps, then a two-layer MLP:
//   h_v = (1 + eps) x_v + Σ_{u∈N(v)} x_u,   y_v = ReLU(h_v W1 + b1) W2 + b2.
// eps is a constant, or a trainable parameter (GIN-eps). The sum uses no degree normalisation, so
// the layer needs nothing global but the neighbour rows (the halo), and a partition computes
// exactly the whole-graph rows.
#include <optional>
#include <vector>

#include "models/layer_common.hpp"

namespace halognn::detail {
namespace {

class GinLayer final : public SplitLayer {
 public:
  GinLayer(const LayerConfig& cfg, std::uint64_t seed, std::int32_t layer)
      : SplitLayer("gin"),
        cfg_(cfg),
        mlp_(cfg.mlp_hidden > 0 ? cfg.mlp_hidden : cfg.out_dim),
        weight1_(make_parameter(name(layer, "mlp1.weight"), cfg.in_dim, mlp_, cfg.in_dim, mlp_,
                                seed, layer, 0, false)),
        bias1_(make_parameter(name(layer, "mlp1.bias"), 1, mlp_, 0, 0, seed, layer, 1, true)),
        weight2_(make_parameter(name(layer, "mlp2.weight"), mlp_, cfg.out_dim, mlp_, cfg.out_dim,
                                seed, layer, 2, false)),
        bias2_(make_parameter(name(layer, "mlp2.bias"), 1, cfg.out_dim, 0, 0, seed, layer, 3,
                              true)),
        eps_(make_parameter(name(layer, "eps"), 1, 1, 0, 0, seed, layer, 4, true)),
        // The first MLP layer is linear, so (A + (1+eps) I) x W1 = (A + (1+eps) I)(x W1): move
        // the narrower of in_dim and the MLP width through the SpMM, as GCN does.
        aggregate_first_(cfg.in_dim <= mlp_) {
    eps_.value(0, 0) = cfg.eps;
  }

  std::int64_t in_dim() const override { return cfg_.in_dim; }
  std::int64_t out_dim() const override { return cfg_.out_dim; }
  std::vector<Parameter*> parameters() override {
    std::vector<Parameter*> p{&weight1_};
    if (cfg_.bias) p.push_back(&bias1_);
    p.push_back(&weight2_);
    if (cfg_.bias) p.push_back(&bias2_);
    if (cfg_.train_eps) p.push_back(&eps_);
    return p;
  }

  void prepare(const LocalGraph& g) override {
    dev_ = g.dev;
    for (Parameter* p : {&weight1_, &bias1_, &weight2_, &bias2_, &eps_}) place_parameter(*p, dev_);
    // A structure-only operator: every neighbour weighs 1 (the sum aggregator), no self-loops
    // (the own row enters through the separate (1 + eps) term).
    op_ = shared_graph_operator(g, "sum: A", OperatorForm::split, /*self_loops=*/false, nullptr);
  }

  void forward_sparse(const LocalGraph& g, const SparseInput& x, DenseView y) override {
    // A sparse input always transforms first: h would be a dense in_dim-wide matrix.
    self_weight_ = 1.0f + current_eps();
    Matrix& t = ensure(saved_t_, g.num_local(), mlp_, dev_);
    x_csr_ = x;
    input_matmul(*dev_, x_csr_, weight1_.value.view(), t.view());
    Matrix& p = ensure(pre_, g.num_owned, mlp_, dev_);
    aggregate(*dev_, *op_, t.view(), 0.0f, nullptr, p.view());
    finish_forward(g, y);
  }

  void forward_owned(const LocalGraph& g, ConstDenseView x_own, DenseView, const ForwardContext&,
                     const std::function<void()>& progress) override {
    const Device& dev = *dev_;
    used_sparse_ = false;
    self_weight_ = 1.0f + current_eps();
    x_own_ = x_own;  // needed for d(eps) (the caller keeps it unchanged until backward)
    if (aggregate_first_) {
      // h = A x + (1+eps) x_own: the owned columns of A x now.
      Matrix& h = ensure(saved_h_, g.num_owned, cfg_.in_dim, dev_);
      aggregate_owned(dev, *op_, x_own, 0.0f, h.view());
    } else {
      // p = A t + (1+eps) t_own, t = x W1: the owned rows of t and their part of A t now.
      Matrix& t = ensure(saved_t_, g.num_local(), mlp_, dev_);
      kernels::gemm(dev, false, false, 1.0f, x_own, weight1_.value.view(), 0.0f,
                    t.view().rows_range(0, g.num_owned));
      progress_exchange(progress);
      Matrix& p = ensure(pre_, g.num_owned, mlp_, dev_);
      aggregate_owned(dev, *op_, t.view(), 0.0f, p.view());
    }
  }

  void forward_halo(const LocalGraph& g, ConstDenseView x_halo, DenseView y,
                    const ForwardContext&) override {
    const Device& dev = *dev_;
    const std::int64_t n_own = g.num_owned;
    Matrix& p = ensure(pre_, n_own, mlp_, dev_);  // h W1, then ReLU'd in place: q
    if (aggregate_first_) {
      aggregate_halo(dev, *op_, x_halo, nullptr, saved_h_.view());
      kernels::axpy(dev, self_weight_, x_own_, saved_h_.view());
      kernels::gemm(dev, false, false, 1.0f, saved_h_.view(), weight1_.value.view(), 0.0f,
                    p.view());
    } else {
      x_halo_ = x_halo;  // the backward reads it with the owned rows (dW)
      const DenseView t_halo = saved_t_.view().rows_range(n_own, g.num_local());
      kernels::gemm(dev, false, false, 1.0f, x_halo, weight1_.value.view(), 0.0f, t_halo);
      aggregate_halo(dev, *op_, t_halo, nullptr, p.view());
    }
    finish_forward(g, y);
  }

  bool keeps_input_halo() const override { return !aggregate_first_; }

  void backward_whole(const LocalGraph& g, ConstDenseView gy, DenseView gx) override {
    const Device& dev = *dev_;
    mlp_backward(g, gy);
    mlp_grads(gy);
    if (aggregate_first_ && !used_sparse_) {  // no input gradient: the parameter gradients only
      Matrix& gh = ensure(scratch_, g.num_owned, cfg_.in_dim, dev_);
      kernels::gemm(dev, false, true, 1.0f, gpre_.view(), weight1_.value.view(), 0.0f, gh.view());
      aggregate_first_grads();
      return;
    }
    // Transform first (a sparse input, or no input gradient): gt = Aᵀ gp + (1+eps) gp on owned
    // rows; gx = gt W1ᵀ.
    Matrix& gt = ensure(scratch_, g.num_local(), mlp_, dev_);
    aggregate_transpose(dev, *op_, gpre_.view(), gt.view());
    transform_first_grads(g);
    if (gx.data != nullptr)
      kernels::gemm(dev, false, true, 1.0f, gt.view(), weight1_.value.view(), 0.0f, gx);
  }

  void backward_halo(const LocalGraph& g, ConstDenseView gy, DenseView gx_halo) override {
    const Device& dev = *dev_;
    const std::int64_t n_own = g.num_owned, n_local = g.num_local();
    mlp_backward(g, gy);
    if (aggregate_first_) {
      // h = A x + (1+eps) x_own, p = h W1: gh = gp W1ᵀ; gx = Aᵀ gh (+ (1+eps) gh on owned rows):
      // the halo rows now.
      Matrix& gh = ensure(scratch_, n_own, cfg_.in_dim, dev_);
      kernels::gemm(dev, false, true, 1.0f, gpre_.view(), weight1_.value.view(), 0.0f, gh.view());
      aggregate_transpose_halo(dev, *op_, gh.view(), gx_halo);
    } else {
      // p = A t + (1+eps) t_own, t = x W1: gt = Aᵀ gp (+ (1+eps) gp on owned rows); d(eps) and
      // dW1 += xᵀ gt, the last read of x's halo rows (gx's halo rows may be their memory:
      // Layer::backward_halo); gx = gt W1ᵀ: the halo rows now.
      Matrix& gt = ensure(scratch_, n_local, mlp_, dev_);
      aggregate_transpose(dev, *op_, gpre_.view(), gt.view());
      transform_first_grads(g);
      kernels::gemm(dev, false, true, 1.0f, gt.view().rows_range(n_own, n_local),
                    weight1_.value.view(), 0.0f, gx_halo);
    }
  }

  void backward_owned(const LocalGraph& g, ConstDenseView gy, DenseView gx_own,
                      const std::function<void()>& progress) override {
    const Device& dev = *dev_;
    const std::int64_t n_own = g.num_owned;
    mlp_grads(gy);
    progress_exchange(progress);
    if (aggregate_first_) {
      aggregate_first_grads();
      progress_exchange(progress);
      aggregate_transpose_owned(dev, *op_, scratch_.view(), gx_own);
      kernels::axpy(dev, self_weight_, scratch_.view(), gx_own);
    } else {
      // gx's owned rows = gt W1ᵀ (gt, d(eps) and dW1 came in backward_halo).
      kernels::gemm(dev, false, true, 1.0f, scratch_.view().rows_range(0, n_own),
                    weight1_.value.view(), 0.0f, gx_own);
    }
  }

 private:
  /// All local rows of the last dense forward's x (transform first: dW reads them).
  ConstDenseView input() const { return joined_rows("gin", x_own_, x_halo_); }
  /// After the aggregation into pre_ (p = h W1, or A t + (1+eps) t_own before its self term):
  /// the rest of the forward, y = ReLU(p + b1) W2 + b2.
  void finish_forward(const LocalGraph& g, DenseView y) {
    const Device& dev = *dev_;
    Matrix& p = pre_;
    if (!aggregate_first_ || used_sparse_)
      kernels::axpy(dev, self_weight_, saved_t_.view().rows_range(0, g.num_owned), p.view());
    if (cfg_.bias) kernels::add_row_vector(dev, bias1_.value.data(), p.view());
    kernels::relu_forward(dev, p.view(), p.view());
    kernels::gemm(dev, false, false, 1.0f, p.view(), weight2_.value.view(), 0.0f, y);
    if (cfg_.bias) kernels::add_row_vector(dev, bias2_.value.data(), y);
  }

  /// gp = dL/dp through the second MLP layer and the ReLU (q > 0 where p > 0), into gpre_.
  void mlp_backward(const LocalGraph& g, ConstDenseView gy) {
    const Device& dev = *dev_;
    Matrix& gp = ensure(gpre_, g.num_owned, mlp_, dev_);
    kernels::gemm(dev, false, true, 1.0f, gy, weight2_.value.view(), 0.0f, gp.view());
    kernels::relu_backward(dev, pre_.view(), gp.view(), gp.view());
  }

  /// The MLP's parameter gradients: db2 += Σ gy, dW2 += qᵀ gy, db1 += Σ gp.
  void mlp_grads(ConstDenseView gy) {
    const Device& dev = *dev_;
    if (cfg_.bias) kernels::column_sum(dev, gy, 1.0f, bias2_.grad.data());
    kernels::gemm(dev, true, false, 1.0f, pre_.view(), gy, 1.0f, weight2_.grad.view());
    if (cfg_.bias) kernels::column_sum(dev, gpre_.view(), 1.0f, bias1_.grad.data());
  }

  /// Aggregate first, with gh = gp W1ᵀ in scratch_: dW1 += hᵀ gp and d(eps) += <gh, x_own>.
  void aggregate_first_grads() {
    const Device& dev = *dev_;
    kernels::gemm(dev, true, false, 1.0f, saved_h_.view(), gpre_.view(), 1.0f, weight1_.grad.view());
    if (cfg_.train_eps) accumulate_dot(dev, scratch_.view(), x_own_, eps_.grad);
  }

  /// Transform first, with the owned and halo rows of Aᵀ gp in scratch_: adds the self term
  /// (1+eps) gp to its owned rows (gt), then d(eps) += <gp, t_own> and dW1 += xᵀ gt.
  void transform_first_grads(const LocalGraph& g) {
    const Device& dev = *dev_;
    const std::int64_t n_own = g.num_owned;
    kernels::axpy(dev, self_weight_, gpre_.view(), scratch_.view().rows_range(0, n_own));
    if (cfg_.train_eps)
      accumulate_dot(dev, gpre_.view(), saved_t_.view().rows_range(0, n_own), eps_.grad);
    if (used_sparse_) input_matmul_transpose(dev, x_csr_, scratch_.view(), weight1_.grad.view());
    else kernels::gemm(dev, true, false, 1.0f, input(), scratch_.view(), 1.0f, weight1_.grad.view());
  }

  static std::string name(std::int32_t layer, const char* what) {
    return "layer" + std::to_string(layer) + "." + what;
  }

  /// eps as the forward uses it: the parameter's current value when trained, else the constant.
  float current_eps() const {
    if (!cfg_.train_eps) return cfg_.eps;
    float e = 0.0f;
    dev_->copy_to_host(&e, eps_.value.data(), sizeof e);
    return e;
  }

  /// out(0, 0) += <a, b>, both contiguous row blocks of the same shape: the product of a as one
  /// 1 x n row and b as one n x 1 column.
  static void accumulate_dot(const Device& dev, ConstDenseView a, ConstDenseView b, Matrix& out) {
    GNN_ASSERT(a.rows == b.rows && a.cols == b.cols, "gin: eps gradient shapes differ");
    const std::int64_t n = a.rows * a.cols;
    kernels::gemm(dev, false, false, 1.0f, ConstDenseView{a.data, 1, n}, ConstDenseView{b.data, n, 1},
                  1.0f, out.view());
  }

  LayerConfig cfg_;
  std::int64_t mlp_;  ///< MLP hidden width
  Parameter weight1_, bias1_, weight2_, bias2_, eps_;
  bool aggregate_first_;
  std::shared_ptr<const GraphOperator> op_;  ///< the adjacency, structure only; shared by the layers
  float self_weight_ = 1.0f;         ///< 1 + eps of the last forward
  ConstDenseView x_own_, x_halo_;    ///< the last forward's dense x: owned and halo rows
  SparseInput x_csr_;                  ///< the last forward's sparse x
  Matrix saved_h_;                   ///< aggregate first: h = A x + (1+eps) x_own
  Matrix saved_t_;                   ///< transform first: t = x W1 (all local rows)
  Matrix pre_;                       ///< q = ReLU(h W1 + b1)
  Matrix gpre_, scratch_;
};

}  // namespace

std::unique_ptr<Layer> make_gin_layer(const LayerConfig& cfg, std::uint64_t seed,
                                      std::int32_t layer_index) {
  return std::make_unique<GinLayer>(cfg, seed, layer_index);
}

}  // namespace halognn::detail
