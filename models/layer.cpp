#include "models/layer.hpp"

#include <cmath>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "models/layer_common.hpp"

namespace halognn {

ModelKind parse_model_kind(std::string_view s) {
  if (s == "gcn") return ModelKind::gcn;
  if (s == "sage") return ModelKind::sage;
  if (s == "gat") return ModelKind::gat;
  if (s == "gin") return ModelKind::gin;
  throw ConfigError("unknown model '" + std::string(s) + "' (choices: gcn, sage, gat, gin)");
}

float neighbour_scale(ModelKind kind, std::int64_t global_degree) {
  switch (kind) {
    case ModelKind::gcn:
      // The same float expression as gcn_operator's edge weights.
      return 1.0f / std::sqrt(static_cast<float>(global_degree) + 1.0f);
    case ModelKind::sage:
    case ModelKind::gat:
    // GIN sums its neighbours' rows unweighted: a group row m_g handed to each of v's D_g(v)
    // members adds D_g(v) m_g, exactly the members' sum on a complete block.
    case ModelKind::gin:
      return 1.0f;
  }
  throw Error("neighbour_scale: unknown model kind");
}

namespace detail {

std::shared_ptr<const GraphOperator> gcn_operator(const LocalGraph& g) {
  const std::vector<float> degree = g.degree.to_host();
  std::vector<float> inv_sqrt(degree.size());
  for (std::size_t i = 0; i < degree.size(); ++i) inv_sqrt[i] = 1.0f / std::sqrt(degree[i] + 1.0f);
  return shared_graph_operator(g, "gcn: D^-1/2 (A + I) D^-1/2", OperatorForm::split,
                               /*self_loops=*/true,
                               [&](LocalId v, LocalId u) {
                                 // Â_vu = 1/sqrt((d_v+1)(d_u+1)); on the diagonal 1/(d_v+1).
                                 return v == u ? 1.0f / (degree[v] + 1.0f)
                                               : inv_sqrt[v] * inv_sqrt[u];
                               });
}

std::shared_ptr<const GraphOperator> attention_operator(const LocalGraph& g) {
  return shared_graph_operator(g, "structure: A + I", OperatorForm::whole, /*self_loops=*/true,
                               nullptr);
}

std::shared_ptr<const GraphOperator> mean_operator(const LocalGraph& g) {
  const std::vector<float> degree = g.degree.to_host();
  return shared_graph_operator(g, "mean: D^-1 A", OperatorForm::split, /*self_loops=*/false,
                               [&](LocalId v, LocalId) { return 1.0f / degree[v]; });
}

}  // namespace detail

void Layer::forward_owned(const LocalGraph&, ConstDenseView, DenseView, const ForwardContext&,
                          const std::function<void()>&) {
  throw Error("forward_owned: this layer does not split around the exchange");
}
void Layer::forward_halo(const LocalGraph&, ConstDenseView, DenseView, const ForwardContext&) {
  throw Error("forward_halo: this layer does not split around the exchange");
}
void Layer::backward_halo(const LocalGraph&, ConstDenseView, DenseView) {
  throw Error("backward_halo: this layer does not split around the exchange");
}
void Layer::backward_owned(const LocalGraph&, ConstDenseView, DenseView,
                           const std::function<void()>&) {
  throw Error("backward_owned: this layer does not split around the exchange");
}

std::unique_ptr<Layer> make_layer(const LayerConfig& cfg, std::uint64_t seed,
                                  std::int32_t layer_index) {
  GNN_CHECK_CONFIG(cfg.in_dim > 0 && cfg.out_dim > 0, "layer ", layer_index,
                   ": dimensions must be positive (in ", cfg.in_dim, ", out ", cfg.out_dim, ")");
  GNN_CHECK_CONFIG(cfg.heads >= 1, "layer ", layer_index, ": heads must be at least 1");
  GNN_CHECK_CONFIG(cfg.attention_dropout >= 0 && cfg.attention_dropout < 1, "layer ", layer_index,
                   ": attention dropout must be in [0, 1)");
  GNN_CHECK_CONFIG(cfg.value_dropout >= 0 && cfg.value_dropout < 1, "layer ", layer_index,
                   ": value dropout must be in [0, 1)");
  GNN_CHECK_CONFIG(cfg.mlp_hidden >= 0, "layer ", layer_index, ": MLP width must be non-negative");
  if (cfg.residual) return detail::make_residual_block(cfg, seed, layer_index);
  switch (cfg.kind) {
    case ModelKind::gcn:
      return detail::make_gcn_layer(cfg, seed, layer_index);
    case ModelKind::sage:
      return detail::make_sage_layer(cfg, seed, layer_index);
    case ModelKind::gat:
      return detail::make_gat_layer(cfg, seed, layer_index);
    case ModelKind::gin:
      return detail::make_gin_layer(cfg, seed, layer_index);
  }
  throw ConfigError("unknown model kind");
}

}  // namespace halognn
