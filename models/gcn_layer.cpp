// GCN (Kipf & Welling): y = Â x W + b with Â = D̃^-1/2 (A + I) D̃^-1/2 over GLOBAL degrees.
#include <cmath>
#include <optional>
#include <vector>

#include "models/layer_common.hpp"

namespace halognn::detail {
namespace {

class GcnLayer final : public Layer {
 public:
  GcnLayer(const LayerConfig& cfg, std::uint64_t seed, std::int32_t layer)
      : cfg_(cfg),
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

  void set_sparse_input(std::optional<SparseInput> x_csr) override { sparse_x_ = x_csr; }

  void forward(const LocalGraph& g, ConstDenseView x, DenseView y, const ForwardContext&) override {
    check_forward_shapes("gcn", g, x, y, cfg_.in_dim, cfg_.out_dim);
    GNN_ASSERT(dev_, "gcn: forward before prepare");
    const Device& dev = *dev_;
    // A sparse input always transforms first: Â x would be a dense in_dim-wide matrix.
    used_sparse_ = sparse_x_.has_value();
    if (used_sparse_) check_sparse_input("gcn", g, *sparse_x_, cfg_.in_dim);
    const float* bias = cfg_.bias ? bias_.value.data() : nullptr;
    if (aggregate_first_ && !used_sparse_) {
      // y = (Â x) W + b, the bias added as the product is stored.
      Matrix& h = ensure(saved_h_, g.num_owned, cfg_.in_dim, dev_);  // Â x, kept for dW
      kernels::spmm(dev, op_->a.view(), x, 0.0f, h.view());
      kernels::linear(dev, h.view(), weight_.value.view(), {}, {}, bias, y);
    } else {
      // y = Â (x W) + b, the bias added as the aggregation is stored.
      Matrix& t = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
      if (used_sparse_) {
        x_csr_ = *sparse_x_;
        input_matmul(dev, x_csr_, weight_.value.view(), t.view());
      } else {
        x_ = x;  // kept for dW (the caller keeps it unchanged until backward)
        kernels::linear(dev, x, weight_.value.view(), {}, {}, nullptr, t.view());
      }
      kernels::spmm_bias(dev, op_->a.view(), t.view(), bias, y);
    }
  }

  void backward(const LocalGraph& g, ConstDenseView gy, DenseView gx) override {
    check_backward_shapes("gcn", g, gy, gx, cfg_.in_dim, cfg_.out_dim);
    const Device& dev = *dev_;
    float* gb = cfg_.bias ? bias_.grad.data() : nullptr;
    if (aggregate_first_ && !used_sparse_) {
      // y = H W + b: dW += Hᵀ gy and db += Σ gy in one pass over gy; dH = gy Wᵀ; dx = Âᵀ dH.
      kernels::linear_grad(dev, saved_h_.view(), gy, weight_.grad.view(), gb);
      if (gx.data == nullptr) return;
      Matrix& gh = ensure(scratch_, g.num_owned, cfg_.in_dim, dev_);
      kernels::gemm(dev, false, true, 1.0f, gy, weight_.value.view(), 0.0f, gh.view());
      kernels::spmm(dev, op_->a_t.view(), gh.view(), 0.0f, gx);
      return;
    }
    // y = Â T + b, T = x W: db += Σ gy; dT = Âᵀ gy; dW += xᵀ dT; dx = dT Wᵀ.
    if (gb) kernels::column_sum(dev, gy, 1.0f, gb);
    Matrix& gt = ensure(scratch_, g.num_local(), cfg_.out_dim, dev_);
    kernels::spmm(dev, op_->a_t.view(), gy, 0.0f, gt.view());
    if (used_sparse_) {
      input_matmul_transpose(dev, x_csr_, gt.view(), weight_.grad.view());
    } else {
      kernels::linear_grad(dev, x_, gt.view(), weight_.grad.view(), nullptr);
    }
    if (gx.data == nullptr) return;
    kernels::gemm(dev, false, true, 1.0f, gt.view(), weight_.value.view(), 0.0f, gx);
  }

 private:
  LayerConfig cfg_;
  Parameter weight_, bias_;
  bool aggregate_first_;
  DevicePtr dev_;
  std::shared_ptr<const GraphOperator> op_;  ///< shared by the model's layers
  std::optional<SparseInput> sparse_x_;  ///< set_sparse_input
  bool used_sparse_ = false;         ///< the last forward read sparse_x_
  ConstDenseView x_;                 ///< the last forward's dense x (transform first)
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
