// GraphSAGE with the mean aggregator: y_v = x_v W_self + (1/d_v Σ_{u∈N(v)} x_u) W_neigh + b,
// d_v the GLOBAL degree (an isolated vertex gets a zero neighbour term).
#include <optional>
#include <vector>

#include "models/layer_common.hpp"

namespace halognn::detail {
namespace {

class SageLayer final : public Layer {
 public:
  SageLayer(const LayerConfig& cfg, std::uint64_t seed, std::int32_t layer)
      : cfg_(cfg),
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

  void set_sparse_input(std::optional<SparseInput> x_csr) override { sparse_x_ = x_csr; }

  void forward(const LocalGraph& g, ConstDenseView x, DenseView y, const ForwardContext&) override {
    check_forward_shapes("sage", g, x, y, cfg_.in_dim, cfg_.out_dim);
    GNN_ASSERT(dev_, "sage: forward before prepare");
    const Device& dev = *dev_;
    // A sparse input always transforms first: the neighbour mean of x would be dense, in_dim wide.
    used_sparse_ = sparse_x_.has_value();
    const float* bias = cfg_.bias ? bias_.value.data() : nullptr;
    if (used_sparse_) {
      // y = x_own W_self + b, then y += A (x W_neigh).
      check_sparse_input("sage", g, *sparse_x_, cfg_.in_dim);
      x_csr_ = *sparse_x_;
      Matrix& t = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
      input_matmul(dev, x_csr_, weight_neigh_.value.view(), t.view());
      x_own_csr_ = input_top_rows(dev, x_csr_, g.num_owned);
      input_matmul_bias(dev, x_own_csr_, weight_self_.value.view(), bias, y);
      kernels::spmm(dev, op_->a.view(), t.view(), 1.0f, y);
    } else {
      x_ = x;  // kept for both dWs (the caller keeps it unchanged until backward)
      const ConstDenseView x_own = x.rows_range(0, g.num_owned);
      if (aggregate_first_) {
        // y = x_own W_self + h W_neigh + b in one pass over y (h = mean of neighbours).
        Matrix& h = ensure(saved_h_, g.num_owned, cfg_.in_dim, dev_);
        kernels::spmm(dev, op_->a.view(), x, 0.0f, h.view());
        kernels::linear(dev, x_own, weight_self_.value.view(), h.view(),
                        weight_neigh_.value.view(), bias, y);
      } else {
        // y = x_own W_self + b, then y += A (x W_neigh).
        Matrix& t = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
        kernels::linear(dev, x, weight_neigh_.value.view(), {}, {}, nullptr, t.view());
        kernels::linear(dev, x_own, weight_self_.value.view(), {}, {}, bias, y);
        kernels::spmm(dev, op_->a.view(), t.view(), 1.0f, y);
      }
    }
  }

  void backward(const LocalGraph& g, ConstDenseView gy, DenseView gx) override {
    check_backward_shapes("sage", g, gy, gx, cfg_.in_dim, cfg_.out_dim);
    const Device& dev = *dev_;
    float* gb = cfg_.bias ? bias_.grad.data() : nullptr;
    if (used_sparse_) {
      input_matmul_transpose(dev, x_own_csr_, gy, weight_self_.grad.view());
      if (gb) kernels::column_sum(dev, gy, 1.0f, gb);
    } else {
      // dW_self += x_ownᵀ gy and db += Σ gy in one pass over gy.
      kernels::linear_grad(dev, x_.rows_range(0, g.num_owned), gy, weight_self_.grad.view(), gb);
    }
    if (aggregate_first_ && !used_sparse_) {
      kernels::linear_grad(dev, saved_h_.view(), gy, weight_neigh_.grad.view(), nullptr);
      if (gx.data == nullptr) return;
      Matrix& gh = ensure(scratch_, g.num_owned, cfg_.in_dim, dev_);
      kernels::gemm(dev, false, true, 1.0f, gy, weight_neigh_.value.view(), 0.0f, gh.view());
      kernels::spmm(dev, op_->a_t.view(), gh.view(), 0.0f, gx);
    } else {
      Matrix& gt = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
      kernels::spmm(dev, op_->a_t.view(), gy, 0.0f, gt.view());
      if (used_sparse_) {
        input_matmul_transpose(dev, x_csr_, gt.view(), weight_neigh_.grad.view());
      } else {
        kernels::linear_grad(dev, x_, gt.view(), weight_neigh_.grad.view(), nullptr);
      }
      if (gx.data == nullptr) return;
      kernels::gemm(dev, false, true, 1.0f, gt.view(), weight_neigh_.value.view(), 0.0f, gx);
    }
    // The self term reaches owned rows only.
    kernels::gemm(dev, false, true, 1.0f, gy, weight_self_.value.view(), 1.0f,
                  gx.rows_range(0, g.num_owned));
  }

 private:
  LayerConfig cfg_;
  Parameter weight_self_, weight_neigh_, bias_;
  bool aggregate_first_;
  DevicePtr dev_;
  std::shared_ptr<const GraphOperator> op_;  ///< shared by the model's layers
  std::optional<SparseInput> sparse_x_;  ///< set_sparse_input
  bool used_sparse_ = false;         ///< the last forward read sparse_x_
  ConstDenseView x_;                 ///< the last forward's dense x
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
