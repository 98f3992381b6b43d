// GCN (Kipf & Welling): y = Â x W + b with Â = D̃^-1/2 (A + I) D̃^-1/2 over GLOBAL degrees.
#include <cmath>
#include <optional>
#include <vector>

#include "models/layer_common.hpp"

namespace halognn::detail {
namespace {

class GcnLayer final : public SplitLayer {
 public:
  GcnLayer(const LayerConfig& cfg, std::uint64_t seed, std::int32_t layer)
      : SplitLayer("gcn"),
        cfg_(cfg),
        weight_(make_parameter("layer" + std::to_string(layer) + ".weight", cfg.in_dim, cfg.out_dim,
                               cfg.in_dim, cfg.out_dim, seed, layer, 0, false)),
        bias_(make_parameter("layer" + std::to_string(layer) + ".bias", 1, cfg.out_dim, 0, 0, seed,
                             layer, 1, true)),
        // Aggregating first moves in_dim-wide rows through the SpMM and multiplies only owned
        // rows; transforming first multiplies all local rows but aggregates out_dim-wide rows.
        // Both are exact (Â (x W) = (Â x) W); pick the narrower SpMM.
        aggregate_first_(cfg.in_dim <= cfg.out_dim) {}

  std::int64_t in_dim() const override { return cfg_.in_dim; }
  std::int64_t out_dim() const override { return cfg_.out_dim; }
  std::vector<Parameter*> parameters() override {
    if (cfg_.bias) return {&weight_, &bias_};
    return {&weight_};
  }

  void prepare(const LocalGraph& g) override {
    dev_ = g.dev;
    place_parameter(weight_, dev_);
    place_parameter(bias_, dev_);
    op_ = gcn_operator(g);
  }

  void forward_sparse(const LocalGraph& g, const SparseInput& x, DenseView y) override {
    // y = Â (x W) + b, the bias added as the aggregation is stored.
    Matrix& t = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
    x_csr_ = x;
    input_matmul(*dev_, x_csr_, weight_.value.view(), t.view());
    aggregate(*dev_, *op_, t.view(), 0.0f, bias(), y);
  }

  void forward_owned(const LocalGraph& g, ConstDenseView x_own, DenseView y, const ForwardContext&,
                     const std::function<void()>& progress) override {
    const Device& dev = *dev_;
    used_sparse_ = false;
    if (aggregate_first_) {
      // y = (Â x) W + b: the owned columns of Â x now.
      Matrix& h = ensure(saved_h_, g.num_owned, cfg_.in_dim, dev_);  // Â x, kept for dW
      aggregate_owned(dev, *op_, x_own, 0.0f, h.view());
    } else {
      // y = Â (x W) + b: the owned rows of x W and their part of the aggregation now.
      x_own_ = x_own;  // kept for dW with the halo rows (the caller keeps them until backward)
      Matrix& t = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
      kernels::linear(dev, x_own, weight_.value.view(), {}, {}, nullptr,
                      t.view().rows_range(0, g.num_owned));
      progress_exchange(progress);
      aggregate_owned(dev, *op_, t.view(), 0.0f, y);
    }
  }

  void forward_halo(const LocalGraph& g, ConstDenseView x_halo, DenseView y,
                    const ForwardContext&) override {
    const Device& dev = *dev_;
    if (aggregate_first_) {
      aggregate_halo(dev, *op_, x_halo, nullptr, saved_h_.view());
      kernels::linear(dev, saved_h_.view(), weight_.value.view(), {}, {}, bias(), y);
    } else {
      x_halo_ = x_halo;  // the backward reads it with the owned rows (dW)
      const DenseView t_halo = scratch_.view().rows_range(g.num_owned, g.num_local());
      kernels::linear(dev, x_halo, weight_.value.view(), {}, {}, nullptr, t_halo);
      aggregate_halo(dev, *op_, t_halo, bias(), y);
    }
  }

  bool keeps_input_halo() const override { return !aggregate_first_; }

  void backward_whole(const LocalGraph& g, ConstDenseView gy, DenseView gx) override {
    const Device& dev = *dev_;
    if (aggregate_first_ && !used_sparse_) {  // no input gradient: the parameter gradients only
      kernels::linear_grad(dev, saved_h_.view(), gy, weight_.grad.view(), bias_grad());
      return;
    }
    // Transform first (a sparse input, or no input gradient): dT = Âᵀ gy; dx = dT Wᵀ.
    Matrix& gt = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
    aggregate_transpose(dev, *op_, gy, gt.view());
    transform_grads(dev, gy, gt.view());
    if (gx.data != nullptr)
      kernels::gemm(dev, false, true, 1.0f, gt.view(), weight_.value.view(), 0.0f, gx);
  }

  void backward_halo(const LocalGraph& g, ConstDenseView gy, DenseView gx_halo) override {
    const Device& dev = *dev_;
    if (aggregate_first_) {
      // y = H W + b: dH = gy Wᵀ; dx = Âᵀ dH, its halo rows now.
      Matrix& gh = ensure(scratch_, g.num_owned, cfg_.in_dim, dev_);
      kernels::gemm(dev, false, true, 1.0f, gy, weight_.value.view(), 0.0f, gh.view());
      aggregate_transpose_halo(dev, *op_, gh.view(), gx_halo);
    } else {
      // y = Â T + b, T = x W: dT = Âᵀ gy; db and dW += xᵀ dT, the last read of x's halo rows
      // (gx's halo rows may be their memory: Layer::backward_halo); dx = dT Wᵀ, its halo rows now.
      Matrix& gt = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
      aggregate_transpose(dev, *op_, gy, gt.view());
      transform_grads(dev, gy, gt.view());
      kernels::gemm(dev, false, true, 1.0f, gt.view().rows_range(g.num_owned, g.num_local()),
                    weight_.value.view(), 0.0f, gx_halo);
    }
  }

  void backward_owned(const LocalGraph& g, ConstDenseView gy, DenseView gx_own,
                      const std::function<void()>& progress) override {
    const Device& dev = *dev_;
    if (aggregate_first_) {
      // dW += Hᵀ gy and db += Σ gy in one pass over gy; the owned rows of dx = Âᵀ dH.
      kernels::linear_grad(dev, saved_h_.view(), gy, weight_.grad.view(), bias_grad());
      progress_exchange(progress);
      aggregate_transpose_owned(dev, *op_, scratch_.view(), gx_own);
    } else {
      // dx's owned rows = dT Wᵀ (dT and the parameter gradients came in backward_halo).
      kernels::gemm(dev, false, true, 1.0f, scratch_.view().rows_range(0, g.num_owned),
                    weight_.value.view(), 0.0f, gx_own);
    }
  }

 private:
  /// All local rows of the last dense forward's x (transform first: dW reads them).
  ConstDenseView input() const { return joined_rows("gcn", x_own_, x_halo_); }
  const float* bias() const { return cfg_.bias ? bias_.value.data() : nullptr; }
  float* bias_grad() { return cfg_.bias ? bias_.grad.data() : nullptr; }

  /// Transform first: db += Σ gy and dW += xᵀ dT, with dT = Âᵀ gy over every local row.
  void transform_grads(const Device& dev, ConstDenseView gy, ConstDenseView gt) {
    if (float* gb = bias_grad()) kernels::column_sum(dev, gy, 1.0f, gb);
    if (used_sparse_) input_matmul_transpose(dev, x_csr_, gt, weight_.grad.view());
    else kernels::linear_grad(dev, input(), gt, weight_.grad.view(), nullptr);
  }

  LayerConfig cfg_;
  Parameter weight_, bias_;
  bool aggregate_first_;
  std::shared_ptr<const GraphOperator> op_;  ///< shared by the model's layers
  ConstDenseView x_own_, x_halo_;    ///< the last forward's dense x: owned and halo rows
  SparseInput x_csr_;                  ///< the last forward's sparse x
  Matrix saved_h_;                   ///< Â x (aggregate first)
  Matrix scratch_;
};

}  // namespace

std::unique_ptr<Layer> make_gcn_layer(const LayerConfig& cfg, std::uint64_t seed,
                                      std::int32_t layer_index) {
  return std::make_unique<GcnLayer>(cfg, seed, layer_index);
}

}  // namespace halognn::detail
