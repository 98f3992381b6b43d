// GraphSAGE with the mean aggregator: y_v = x_v W_self + (1/d_v Σ_{u∈N(v)} x_u) W_neigh + b,
// d_v the GLOBAL degree (an isolated vertex gets a zero neighbour term).
#include <optional>
#include <vector>

#include "models/layer_common.hpp"

namespace halognn::detail {
namespace {

class SageLayer final : public SplitLayer {
 public:
  SageLayer(const LayerConfig& cfg, std::uint64_t seed, std::int32_t layer)
      : SplitLayer("sage"),
        cfg_(cfg),
        weight_self_(make_parameter("layer" + std::to_string(layer) + ".weight_self", cfg.in_dim,
                                    cfg.out_dim, cfg.in_dim, cfg.out_dim, seed, layer, 0, false)),
        weight_neigh_(make_parameter("layer" + std::to_string(layer) + ".weight_neigh", cfg.in_dim,
                                     cfg.out_dim, cfg.in_dim, cfg.out_dim, seed, layer, 1, false)),
        bias_(make_parameter("layer" + std::to_string(layer) + ".bias", 1, cfg.out_dim, 0, 0, seed,
                             layer, 2, true)),
        aggregate_first_(cfg.in_dim <= cfg.out_dim) {}  // the narrower SpMM, as in GCN

  std::int64_t in_dim() const override { return cfg_.in_dim; }
  std::int64_t out_dim() const override { return cfg_.out_dim; }
  std::vector<Parameter*> parameters() override {
    if (cfg_.bias) return {&weight_self_, &weight_neigh_, &bias_};
    return {&weight_self_, &weight_neigh_};
  }

  void prepare(const LocalGraph& g) override {
    dev_ = g.dev;
    place_parameter(weight_self_, dev_);
    place_parameter(weight_neigh_, dev_);
    place_parameter(bias_, dev_);
    op_ = mean_operator(g);
  }

  void forward_sparse(const LocalGraph& g, const SparseInput& x, DenseView y) override {
    // y = x_own W_self + b, then y += A (x W_neigh).
    const Device& dev = *dev_;
    x_csr_ = x;
    Matrix& t = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
    input_matmul(dev, x_csr_, weight_neigh_.value.view(), t.view());
    x_own_csr_ = input_top_rows(dev, x_csr_, g.num_owned);
    input_matmul_bias(dev, x_own_csr_, weight_self_.value.view(), bias(), y);
    aggregate(dev, *op_, t.view(), 1.0f, nullptr, y);
  }

  void forward_owned(const LocalGraph& g, ConstDenseView x_own, DenseView y, const ForwardContext&,
                     const std::function<void()>& progress) override {
    const Device& dev = *dev_;
    used_sparse_ = false;
    x_own_ = x_own;  // kept for dW_self (the caller keeps it unchanged until backward)
    if (aggregate_first_) {
      // y = x_own W_self + b + h W_neigh (h = mean of neighbours): h's owned columns and the
      // self term now. (The GEMM's first depth block folds in beta * y, later ones add to it:
      // the self term then h W_neigh gives the bits of the two products in one linear.)
      Matrix& h = ensure(saved_h_, g.num_owned, cfg_.in_dim, dev_);
      aggregate_owned(dev, *op_, x_own, 0.0f, h.view());
      progress_exchange(progress);
      kernels::linear(dev, x_own, weight_self_.value.view(), {}, {}, bias(), y);
    } else {
      // y = x_own W_self + b, then y += A (x W_neigh): the owned rows' part now.
      Matrix& t = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
      kernels::linear(dev, x_own, weight_neigh_.value.view(), {}, {}, nullptr,
                      t.view().rows_range(0, g.num_owned));
      progress_exchange(progress);
      kernels::linear(dev, x_own, weight_self_.value.view(), {}, {}, bias(), y);
      progress_exchange(progress);
      aggregate_owned(dev, *op_, t.view(), 1.0f, y);
    }
  }

  void forward_halo(const LocalGraph& g, ConstDenseView x_halo, DenseView y,
                    const ForwardContext&) override {
    const Device& dev = *dev_;
    if (aggregate_first_) {
      aggregate_halo(dev, *op_, x_halo, nullptr, saved_h_.view());
      kernels::gemm(dev, false, false, 1.0f, saved_h_.view(), weight_neigh_.value.view(), 1.0f, y);
    } else {
      x_halo_ = x_halo;  // the backward reads it with the owned rows (dW)
      const DenseView t_halo = scratch_.view().rows_range(g.num_owned, g.num_local());
      kernels::linear(dev, x_halo, weight_neigh_.value.view(), {}, {}, nullptr, t_halo);
      aggregate_halo(dev, *op_, t_halo, nullptr, y);
    }
  }

  bool keeps_input_halo() const override { return !aggregate_first_; }

  void backward_whole(const LocalGraph& g, ConstDenseView gy, DenseView gx) override {
    const Device& dev = *dev_;
    self_grads(dev, gy);
    if (aggregate_first_ && !used_sparse_) {  // no input gradient: the parameter gradients only
      kernels::linear_grad(dev, saved_h_.view(), gy, weight_neigh_.grad.view(), nullptr);
      return;
    }
    // Transform first (a sparse input, or no input gradient): gt = Aᵀ gy; gx = gt W_neighᵀ, plus
    // the self term on owned rows.
    Matrix& gt = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
    aggregate_transpose(dev, *op_, gy, gt.view());
    if (used_sparse_) input_matmul_transpose(dev, x_csr_, gt.view(), weight_neigh_.grad.view());
    else kernels::linear_grad(dev, input(), gt.view(), weight_neigh_.grad.view(), nullptr);
    if (gx.data == nullptr) return;
    kernels::gemm(dev, false, true, 1.0f, gt.view(), weight_neigh_.value.view(), 0.0f, gx);
    kernels::gemm(dev, false, true, 1.0f, gy, weight_self_.value.view(), 1.0f,
                  gx.rows_range(0, g.num_owned));
  }

  void backward_halo(const LocalGraph& g, ConstDenseView gy, DenseView gx_halo) override {
    const Device& dev = *dev_;
    if (aggregate_first_) {
      // gh = gy W_neighᵀ; gx = Aᵀ gh (+ the self term on owned rows): the halo rows now.
      Matrix& gh = ensure(scratch_, g.num_owned, cfg_.in_dim, dev_);
      kernels::gemm(dev, false, true, 1.0f, gy, weight_neigh_.value.view(), 0.0f, gh.view());
      aggregate_transpose_halo(dev, *op_, gh.view(), gx_halo);
    } else {
      // gt = Aᵀ gy; dW_neigh += xᵀ gt, the last read of x's halo rows (gx's halo rows may be
      // their memory: Layer::backward_halo); gx = gt W_neighᵀ (+ the self term on owned rows):
      // the halo rows now.
      Matrix& gt = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
      aggregate_transpose(dev, *op_, gy, gt.view());
      kernels::linear_grad(dev, input(), gt.view(), weight_neigh_.grad.view(), nullptr);
      kernels::gemm(dev, false, true, 1.0f, gt.view().rows_range(g.num_owned, g.num_local()),
                    weight_neigh_.value.view(), 0.0f, gx_halo);
    }
  }

  void backward_owned(const LocalGraph& g, ConstDenseView gy, DenseView gx_own,
                      const std::function<void()>& progress) override {
    const Device& dev = *dev_;
    self_grads(dev, gy);
    progress_exchange(progress);
    if (aggregate_first_) {
      kernels::linear_grad(dev, saved_h_.view(), gy, weight_neigh_.grad.view(), nullptr);
      progress_exchange(progress);
      aggregate_transpose_owned(dev, *op_, scratch_.view(), gx_own);
    } else {
      // gx's owned rows = gt W_neighᵀ (gt and dW_neigh came in backward_halo).
      kernels::gemm(dev, false, true, 1.0f, scratch_.view().rows_range(0, g.num_owned),
                    weight_neigh_.value.view(), 0.0f, gx_own);
    }
    // The self term reaches owned rows only.
    kernels::gemm(dev, false, true, 1.0f, gy, weight_self_.value.view(), 1.0f, gx_own);
  }

 private:
  /// All local rows of the last dense forward's x (transform first: dW reads them).
  ConstDenseView input() const { return joined_rows("sage", x_own_, x_halo_); }
  const float* bias() const { return cfg_.bias ? bias_.value.data() : nullptr; }

  /// dW_self += x_ownᵀ gy and db += Σ gy (in one pass over gy for a dense x).
  void self_grads(const Device& dev, ConstDenseView gy) {
    float* gb = cfg_.bias ? bias_.grad.data() : nullptr;
    if (used_sparse_) {
      input_matmul_transpose(dev, x_own_csr_, gy, weight_self_.grad.view());
      if (gb) kernels::column_sum(dev, gy, 1.0f, gb);
    } else {
      kernels::linear_grad(dev, x_own_, gy, weight_self_.grad.view(), gb);
    }
  }

  LayerConfig cfg_;
  Parameter weight_self_, weight_neigh_, bias_;
  bool aggregate_first_;
  std::shared_ptr<const GraphOperator> op_;  ///< shared by the model's layers
  ConstDenseView x_own_, x_halo_;    ///< the last forward's dense x: owned and halo rows
  SparseInput x_csr_;                  ///< the last forward's sparse x
  SparseInput x_own_csr_;              ///< its owned rows
  Matrix saved_h_;                   ///< neighbour means (aggregate first, dense)
  Matrix scratch_;
};

}  // namespace

std::unique_ptr<Layer> make_sage_layer(const LayerConfig& cfg, std::uint64_t seed,
                                       std::int32_t layer_index) {
  return std::make_unique<SageLayer>(cfg, seed, layer_index);
}

}  // namespace halognn::detail
