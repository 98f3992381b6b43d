#pragma once
// Internal helpers shared by the layer implementations (not part of the public interface).
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/kernels/kernels.hpp"
#include "core/rng.hpp"
#include "models/layer.hpp"

namespace halognn::detail {

/// A rows x cols host parameter uniform in +-limit, element (i, j) drawn from
/// CounterRng(seed, init_weights, layer, param_index).uniform(i, j) (limit 0: zeros).
inline Parameter uniform_parameter(std::string name, std::int64_t rows, std::int64_t cols,
                                   double limit, std::uint64_t seed, std::int32_t layer,
                                   std::uint64_t param_index) {
  Parameter p{std::move(name), Matrix(rows, cols), Matrix(rows, cols)};
  if (limit == 0) return p;
  const CounterRng rng(
      RngKey{seed, RngPurpose::init_weights, static_cast<std::uint64_t>(layer), param_index});
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      const double u =
          rng.uniform_double(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j));
      p.value(i, j) = static_cast<float>((2.0 * u - 1.0) * limit);
    }
  }
  return p;
}

/// Glorot-uniform: uniform_parameter with limit sqrt(6 / (fan_in + fan_out)), or zeros when `zero`.
inline Parameter make_parameter(std::string name, std::int64_t rows, std::int64_t cols,
                                std::int64_t fan_in, std::int64_t fan_out, std::uint64_t seed,
                                std::int32_t layer, std::uint64_t param_index, bool zero) {
  const double limit = zero ? 0.0 : std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return uniform_parameter(std::move(name), rows, cols, limit, seed, layer, param_index);
}

/// Moves a parameter's value to `dev` (a no-op when it is there) and gives it a zero gradient.
inline void place_parameter(Parameter& p, const DevicePtr& dev) {
  if (p.value.device_ptr().get() != dev.get()) p.value = p.value.clone(dev);
  p.grad = Matrix(p.value.rows(), p.value.cols(), dev);
}

/// Makes `m` a rows x cols matrix on `dev`, reallocating only when the shape or device differs.
inline Matrix& ensure(Matrix& m, std::int64_t rows, std::int64_t cols, const DevicePtr& dev) {
  if (m.rows() != rows || m.cols() != cols || m.device_ptr().get() != dev.get()) {
    m = Matrix(rows, cols, dev);
  }
  return m;
}

/// Checks the shapes a layer's forward receives.
inline void check_forward_shapes(const char* layer, const LocalGraph& g, ConstDenseView x,
                                 DenseView y, std::int64_t in_dim, std::int64_t out_dim) {
  GNN_ASSERT(x.rows == g.num_local() && x.cols == in_dim, layer, ": x is ", x.rows, "x", x.cols,
             ", expected ", g.num_local(), "x", in_dim);
  GNN_ASSERT(y.rows == g.num_owned && y.cols == out_dim, layer, ": y is ", y.rows, "x", y.cols,
             ", expected ", g.num_owned, "x", out_dim);
}

/// Checks a sparse layer input (set_sparse_input) against the graph and the layer width.
inline void check_sparse_input(const char* layer, const LocalGraph& g, const SparseInput& x,
                               std::int64_t in_dim) {
  GNN_ASSERT(x.rows() == g.num_local() && x.cols() == in_dim, layer, ": sparse x is ", x.rows(),
             "x", x.cols(), ", expected ", g.num_local(), "x", in_dim);
}

/// The first `rows` rows of a sparse input on `dev` (shares its arrays; a CSR reads one offset
/// back).
inline SparseInput input_top_rows(const Device& dev, const SparseInput& in, std::int64_t rows) {
  if (in.compact()) return std::get<CompactView>(in.x).top_rows(rows);
  const CsrView& x = std::get<CsrView>(in.x);
  std::int32_t nnz = 0;
  dev.copy_to_host(&nnz, x.row_ptr + rows, sizeof nnz);
  return CsrView{rows, x.cols, nnz, x.row_ptr, x.col, x.val};
}

/// y = x w (overwritten) for a sparse input x.
inline void input_matmul(const Device& dev, const SparseInput& x, ConstDenseView w, DenseView y) {
  if (x.compact()) kernels::compact_matmul(dev, std::get<CompactView>(x.x), w, 0.0f, y);
  else kernels::spmm(dev, std::get<CsrView>(x.x), w, 0.0f, y);
}

/// y = x w + 1 biasᵀ (overwritten; bias == nullptr: none) for a sparse input x.
inline void input_matmul_bias(const Device& dev, const SparseInput& x, ConstDenseView w,
                              const float* bias, DenseView y) {
  if (!x.compact()) return kernels::spmm_bias(dev, std::get<CsrView>(x.x), w, 0.0f, bias, y);
  kernels::compact_matmul(dev, std::get<CompactView>(x.x), w, 0.0f, y);
  if (bias) kernels::add_row_vector(dev, bias, y);
}

/// gw += xᵀ g for a sparse input x (a weight gradient).
inline void input_matmul_transpose(const Device& dev, const SparseInput& x, ConstDenseView g,
                                   DenseView gw) {
  if (x.compact()) kernels::compact_matmul_transpose(dev, std::get<CompactView>(x.x), g, 1.0f, gw);
  else kernels::spmm_transpose(dev, std::get<CsrView>(x.x), g, 1.0f, gw);
}

inline void check_backward_shapes(const char* layer, const LocalGraph& g, ConstDenseView gy,
                                  DenseView gx, std::int64_t in_dim, std::int64_t out_dim) {
  GNN_ASSERT(gy.rows == g.num_owned && gy.cols == out_dim, layer, ": gy is ", gy.rows, "x", gy.cols,
             ", expected ", g.num_owned, "x", out_dim);
  GNN_ASSERT(gx.data == nullptr || (gx.rows == g.num_local() && gx.cols == in_dim), layer,
             ": gx is ", gx.rows, "x", gx.cols, ", expected ", g.num_local(), "x", in_dim);
}

// ---- aggregation with a split operator (models/local_graph.hpp, OperatorForm::split) --------

/// y = A_owned x_owned + beta y: the owned columns' part of an aggregation. x: the owned rows, or
/// the local rows (only the first num_owned are read: the halo rows may still be in flight).
inline void aggregate_owned(const Device& dev, const GraphOperator& op, ConstDenseView x,
                            float beta, DenseView y) {
  GNN_ASSERT(op.form == OperatorForm::split, "aggregate_owned: needs a split operator");
  kernels::spmm(dev, op.a_owned.view(), x.rows_range(0, op.a_owned.cols()), beta, y);
}

/// y += A_halo x_halo + 1 biasᵀ (bias == nullptr: none): completes aggregate_owned. x_halo: the
/// halo rows.
inline void aggregate_halo(const Device& dev, const GraphOperator& op, ConstDenseView x_halo,
                           const float* bias, DenseView y) {
  GNN_ASSERT(x_halo.rows == op.a_halo.cols(), "aggregate_halo: ", x_halo.rows,
             " halo rows, the operator has ", op.a_halo.cols());
  kernels::spmm_bias(dev, op.a_halo.view(), x_halo, 1.0f, bias, y);
}

/// The halo rows of local rows x (the rows after the operator's owned columns).
inline ConstDenseView halo_rows(const GraphOperator& op, ConstDenseView x) {
  const std::int64_t own = op.a_owned.cols();
  return x.rows_range(own, own + op.a_halo.cols());
}

/// y = A x + beta y + 1 biasᵀ over all local rows of x, in one go.
inline void aggregate(const Device& dev, const GraphOperator& op, ConstDenseView x, float beta,
                      const float* bias, DenseView y) {
  aggregate_owned(dev, op, x, beta, y);
  aggregate_halo(dev, op, halo_rows(op, x), bias, y);
}

/// The halo rows of gx = Aᵀ g (g: num_owned rows; gx_halo: the halo rows).
inline void aggregate_transpose_halo(const Device& dev, const GraphOperator& op, ConstDenseView g,
                                     DenseView gx_halo) {
  GNN_ASSERT(op.form == OperatorForm::split, "aggregate_transpose_halo: needs a split operator");
  GNN_ASSERT(gx_halo.rows == op.t_halo.rows(), "aggregate_transpose_halo: ", gx_halo.rows,
             " halo rows, the operator has ", op.t_halo.rows());
  kernels::spmm(dev, op.t_halo.view(), g, 0.0f, gx_halo);
}

/// The owned rows of gx = Aᵀ g. gx: the owned rows, or the local rows (the halo rows untouched).
inline void aggregate_transpose_owned(const Device& dev, const GraphOperator& op, ConstDenseView g,
                                      DenseView gx) {
  kernels::spmm(dev, op.t_owned.view(), g, 0.0f, gx.rows_range(0, op.t_owned.rows()));
}

/// gx = Aᵀ g over all local rows.
inline void aggregate_transpose(const Device& dev, const GraphOperator& op, ConstDenseView g,
                                DenseView gx) {
  const std::int64_t own = op.t_owned.rows();
  aggregate_transpose_halo(dev, op, g, gx.rows_range(own, own + op.t_halo.rows()));
  aggregate_transpose_owned(dev, op, g, gx);
}

/// One view of a layer input's owned rows and its halo rows, which must be one matrix (a layer
/// that keeps its input halo: Layer::keeps_input_halo).
inline ConstDenseView joined_rows(const char* layer, ConstDenseView own, ConstDenseView halo) {
  GNN_ASSERT(halo.rows == 0 || halo.data == own.data + own.rows * own.cols, layer,
             ": its input's halo rows must follow the owned rows in memory (keeps_input_halo)");
  return {own.data, own.rows + halo.rows, own.cols};
}

/// Calls `progress` when it is set (Layer::forward_owned, backward_owned).
inline void progress_exchange(const std::function<void()>& progress) {
  if (progress) progress();
}

/// A layer that splits around the halo exchange (GCN, SAGE, GIN; Layer::splits): forward and
/// backward with a dense input run its halves in sequence, so a split run and a whole one compute
/// the same bits by construction. A sparse input (layer 0, never exchanged) goes to
/// forward_sparse, and a backward that does not split (a sparse input, or no input gradient
/// wanted) to backward_whole.
class SplitLayer : public Layer {
 public:
  bool splits() const final { return true; }
  void set_sparse_input(std::optional<SparseInput> x) final { sparse_x_ = x; }

  void forward(const LocalGraph& g, ConstDenseView x, DenseView y,
               const ForwardContext& ctx) final {
    check_forward_shapes(name_, g, x, y, in_dim(), out_dim());
    GNN_ASSERT(dev_, name_, ": forward before prepare");
    used_sparse_ = sparse_x_.has_value();
    if (!used_sparse_) {
      forward_owned(g, x.rows_range(0, g.num_owned), y, ctx, {});
      forward_halo(g, x.rows_range(g.num_owned, g.num_local()), y, ctx);
      return;
    }
    check_sparse_input(name_, g, *sparse_x_, in_dim());
    forward_sparse(g, *sparse_x_, y);
  }

  void backward(const LocalGraph& g, ConstDenseView gy, DenseView gx) final {
    check_backward_shapes(name_, g, gy, gx, in_dim(), out_dim());
    if (gx.data != nullptr && !used_sparse_) {
      backward_halo(g, gy, gx.rows_range(g.num_owned, g.num_local()));
      backward_owned(g, gy, gx.rows_range(0, g.num_owned), {});
      return;
    }
    backward_whole(g, gy, gx);
  }

 protected:
  explicit SplitLayer(const char* name) : name_(name) {}
  /// Forward with the sparse input x (all local rows), which always transforms first.
  virtual void forward_sparse(const LocalGraph& g, const SparseInput& x, DenseView y) = 0;
  /// Backward in one piece: after a sparse forward (gx may be wanted), or without gx.
  virtual void backward_whole(const LocalGraph& g, ConstDenseView gy, DenseView gx) = 0;

  DevicePtr dev_;
  std::optional<SparseInput> sparse_x_;  ///< set_sparse_input
  bool used_sparse_ = false;             ///< the last forward read sparse_x_

 private:
  const char* name_;
};

/// GCN's normalised operator Â = D̃^-1/2 (A + I) D̃^-1/2 over global degrees, one copy per graph
/// (shared_graph_operator): GCN layers and GCN residual blocks aggregate with it.
std::shared_ptr<const GraphOperator> gcn_operator(const LocalGraph& g);
/// The neighbour mean D^-1 A over global degrees (an isolated vertex has no entries: its mean is
/// 0), one copy per graph: SAGE layers and SAGE residual blocks aggregate with it.
std::shared_ptr<const GraphOperator> mean_operator(const LocalGraph& g);
/// The structure of A + I, whole, with its transpose and entry map, one copy per graph: GAT
/// layers and GAT residual blocks compute their attention coefficients over its entries.
std::shared_ptr<const GraphOperator> attention_operator(const LocalGraph& g);

std::unique_ptr<Layer> make_gcn_layer(const LayerConfig& cfg, std::uint64_t seed,
                                      std::int32_t layer_index);
std::unique_ptr<Layer> make_sage_layer(const LayerConfig& cfg, std::uint64_t seed,
                                       std::int32_t layer_index);
std::unique_ptr<Layer> make_gat_layer(const LayerConfig& cfg, std::uint64_t seed,
                                      std::int32_t layer_index);
std::unique_ptr<Layer> make_gin_layer(const LayerConfig& cfg, std::uint64_t seed,
                                      std::int32_t layer_index);
std::unique_ptr<Layer> make_residual_block(const LayerConfig& cfg, std::uint64_t seed,
                                           std::int32_t layer_index);

}  // namespace halognn::detail
