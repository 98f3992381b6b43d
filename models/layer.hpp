#pragma once
/// @file layer.hpp
/// GNN layers with hand-written backward passes: GCN, GraphSAGE-mean, GAT and GIN. A layer maps the
/// rank's local input rows (owned, then halo rows filled by the exchange) to its owned output rows;
/// its backward returns gradients for owned AND halo input rows, so the caller can send the halo
/// part back to the owners (DESIGN.md "The halo exchange as one operator"). Normalisations use
/// global degrees, so a layer on a partition computes exactly what it computes on the whole graph.
/// Dropout and activations are not part of a layer (the trainer applies them).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/buffer.hpp"
#include "models/local_graph.hpp"

namespace halognn {

enum class ModelKind { gcn, sage, gat, gin };

/// "gcn" | "sage" | "gat" | "gin"; throws ConfigError listing the choices otherwise.
ModelKind parse_model_kind(std::string_view);

/// β_u of the factorisation a_vu = α_v β_u of a layer's aggregation weight: the part that depends
/// on the neighbour u only, from its global degree (self-loops excluded). Grouped halo exchanges
/// send Σ_u w_u β_u h_u and hand every member u the row m_g / β_u (docs/semantic_groups.md).
/// GCN: 1 / sqrt(d_u + 1); SAGE (mean: α_v = 1 / d_v), GIN (sum: α_v = 1) and GAT (a group acts
/// as D_g(v) identical neighbours under attention): 1.
float neighbour_scale(ModelKind kind, std::int64_t global_degree);

/// A trainable tensor and its gradient (same shape, same device).
struct Parameter {
  std::string name;
  Matrix value;
  Matrix grad;
};

/// A layer input held sparse (Layer::set_sparse_input): a CSR matrix (bag-of-words features) or
/// sparsified features (CompactView: positions and a codebook, core/data/feature_sparsify.hpp).
struct SparseInput {
  std::variant<CsrView, CompactView> x;
  SparseInput() = default;
  SparseInput(CsrView csr) : x(csr) {}          // NOLINT: implicit, either form is an input
  SparseInput(CompactView compact) : x(compact) {}  // NOLINT
  bool compact() const { return std::holds_alternative<CompactView>(x); }
  std::int64_t rows() const {
    return compact() ? std::get<CompactView>(x).rows : std::get<CsrView>(x).rows;
  }
  std::int64_t cols() const {
    return compact() ? std::get<CompactView>(x).cols : std::get<CsrView>(x).cols;
  }
};

struct LayerConfig {
  ModelKind kind = ModelKind::gcn;
  std::int64_t in_dim = 0, out_dim = 0;
  int heads = 1;
  bool concat_heads = true;  ///< GAT: hidden layers concat (out = heads*out_dim), last averages
  float negative_slope = 0.2f;
  /// GAT: dropout probability of each attention coefficient (per edge and head) in training.
  float attention_dropout = 0.0f;
  /// GAT: dropout probability of each entry of z = x W where it is aggregated (the values; the
  /// attention scores see z undropped), as in Velickovic et al.'s reference implementation.
  float value_dropout = 0.0f;
  /// GIN: width of the MLP's hidden layer (0: out_dim).
  std::int64_t mlp_hidden = 0;
  /// GIN: the weight of a node's own row is 1 + eps; a trainable parameter when train_eps.
  float eps = 0.0f;
  bool train_eps = false;
  bool bias = true;
  /// Platonov et al.'s residual architecture (TrainConfig::architecture, docs/models.md): the
  /// layer is one residual block, x + FF(Agg(LayerNorm(x))), with `kind`'s aggregation (GCN or
  /// SAGE) and a feed-forward of two linear layers with GELU and dropout (models/residual_block.cpp).
  bool residual = false;
  /// Residual, the first block: the input (in_dim wide) enters through a linear layer to
  /// `hidden`, dropout and GELU; later blocks take `hidden`-wide rows (in_dim == hidden).
  bool input_linear = false;
  /// Residual, the last block: a layer norm and a linear layer to out_dim follow the block;
  /// otherwise out_dim == hidden.
  bool output_head = false;
  std::int64_t hidden = 0;   ///< residual: the blocks' width
  float dropout = 0.0f;      ///< residual: after the input linear layer and each feed-forward linear layer
};

struct ForwardContext {
  bool training = true;
  std::uint64_t seed = 0;
  std::int64_t epoch = 0;
  std::int32_t layer = 0;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::int64_t in_dim() const = 0;
  /// Width of y (GAT concat: heads*out_dim).
  virtual std::int64_t out_dim() const = 0;
  virtual std::vector<Parameter*> parameters() = 0;
  /// Builds normalised operators for this graph once (e.g. GCN edge weights
  /// 1/sqrt((d_v+1)(d_u+1)), SAGE 1/d_v) and moves the parameters to g.dev; called before the
  /// first forward (and before parameters() is used for an optimiser).
  virtual void prepare(const LocalGraph& g) = 0;
  /// x: num_local x in_dim (owned rows, then halo rows already filled by the exchange);
  /// y: num_owned x out_dim (overwritten). The layer keeps a VIEW of x, not a copy: x must stay
  /// valid and hold the same values when the matching backward runs (the Trainer guarantees it:
  /// a layer input is rewritten only by the next epoch's forward or by an evaluation pass that
  /// follows the backward, except layer 0's dropped-out features when they share memory with a
  /// deeper layer's input gradient: drawn again from their keyed mask before layer 0's backward,
  /// Trainer::layer0_dropout_shared). In sparse-input mode (set_sparse_input) only x's shape is used and
  /// x.data may be null.
  virtual void forward(const LocalGraph& g, ConstDenseView x, DenseView y,
                       const ForwardContext& ctx) = 0;
  /// Sparse-input mode, for inputs such as bag-of-words features (a fraction of a percent
  /// non-zero). With a CSR x_csr (num_local x in_dim, values = the current input, e.g. after
  /// dropout_csr), every following forward reads its input from x_csr instead of its dense x:
  /// products with the input become sparse ones (x W by spmm, xᵀ G by spmm_transpose) and a
  /// layer that would aggregate first (Â x, an in_dim-wide dense matrix) transforms first instead.
  /// The results equal the dense path's up to float summation order. Like a dense x, the arrays
  /// x_csr points at must stay valid and unchanged until the matching backward; the caller may
  /// point at other values (same structure or not) by calling this again before a forward.
  /// Sparsified features (a CompactView) work the same way, through compact_matmul and
  /// compact_matmul_transpose; their dropout is part of the view. std::nullopt returns to dense
  /// mode.
  virtual void set_sparse_input(std::optional<SparseInput> x_csr) = 0;
  /// gy: num_owned x out_dim; gx: num_local x in_dim, overwritten with dL/dx for owned AND halo
  /// rows (the caller sends the halo part back to its owners); an empty gx (data == nullptr)
  /// skips the input gradient. Accumulates (+=) into parameter grads.
  virtual void backward(const LocalGraph& g, ConstDenseView gy, DenseView gx) = 0;

  /// Overlap of the halo exchange with computation (docs/training.md "Overlap"). A layer whose
  /// splits() is true computes forward() as forward_owned() then forward_halo(), and backward()
  /// (with a gx) as backward_halo() then backward_owned(), the same bits either way, so that the
  /// trainer can run the halves around a synchronous exchange:
  /// - forward_owned reads only x's owned rows (the halo rows are in flight) and does every part
  ///   of the forward that needs nothing else; forward_halo reads the halo rows and completes y;
  /// - backward_halo writes gx's halo rows (the trainer sends them at once) and backward_owned
  ///   then writes gx's owned rows and accumulates the parameter gradients. A layer that keeps
  ///   its input halo reads those rows for the last time in backward_halo, before it writes gx's
  ///   halo rows, which may be the same memory (docs/training.md "Halo rows shared by layers").
  /// The halves take the owned and the halo rows as separate views (num_owned and num_halo rows),
  /// which need not be one matrix: see keeps_input_halo(). `progress` (may be empty) is called
  /// between the kernels of forward_owned and backward_owned, to progress the exchange in flight.
  /// A dense input only (the trainer never splits layer 0, whose input is never exchanged).
  /// Layers that do not split (GAT: its attention normalises over a row's owned and halo entries
  /// at once; residual blocks) run whole after the exchange.
  virtual bool splits() const { return false; }
  virtual void forward_owned(const LocalGraph& g, ConstDenseView x_own, DenseView y,
                             const ForwardContext& ctx, const std::function<void()>& progress);
  virtual void forward_halo(const LocalGraph& g, ConstDenseView x_halo, DenseView y,
                            const ForwardContext& ctx);
  virtual void backward_halo(const LocalGraph& g, ConstDenseView gy, DenseView gx_halo);
  virtual void backward_owned(const LocalGraph& g, ConstDenseView gy, DenseView gx_own,
                              const std::function<void()>& progress);
  /// Whether the backward of a dense forward reads the input's halo rows (a split layer that
  /// transforms first: dW = xᵀ (Âᵀ gy) over every local row). A split layer that does not reads
  /// its halo rows in forward_halo only, so the trainer may hand the same halo rows to the next
  /// layer once forward_halo returns (docs/training.md "Halo rows shared by layers"); a layer that does keeps a view
  /// of them and needs them to follow its owned rows in memory (one matrix). Layers that do not
  /// split: always true.
  virtual bool keeps_input_halo() const { return true; }
};

/// Glorot-uniform weights and zero biases, from CounterRng(seed, init_weights, layer_index,
/// param#), so every rank builds identical weights. Parameters start on the host; prepare()
/// moves them to the graph's device.
std::unique_ptr<Layer> make_layer(const LayerConfig& cfg, std::uint64_t seed,
                                  std::int32_t layer_index);

}  // namespace halognn
