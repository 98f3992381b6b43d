#pragma once
/// @file generator.hpp
/// The built-in default graph: a degree-corrected stochastic block model with power-law degrees,
/// class-dependent noisy features, a homophily knob and a seed. Deterministic for a given config
/// (counter RNG), independent of thread count.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/dataset.hpp"

namespace halognn {

/// The defaults are the built-in default graph, chosen to be hard enough that the accuracy cost
/// of a codec or schedule shows (docs/datasets.md "The built-in default graph" has the measured
/// accuracies): 30% of the nodes carry another class's features (class_overlap 0.3), and half
/// of the edges leave the class (homophily 0.5), so the neighbourhood, i.e. the halo, is what
/// tells those nodes apart.
struct SbmConfig {
  GlobalId num_nodes = 100000;
  /// Target number of undirected edges (before dropping duplicates/self-loops).
  std::int64_t num_edges = 2000000;
  std::int32_t num_classes = 16;
  std::int32_t num_features = 128;
  /// Probability that an edge endpoint is drawn from the same class as the other endpoint.
  double homophily = 0.5;
  /// Exponent of the power-law degree propensities (P(theta) ~ theta^-gamma).
  double power_law_exponent = 2.5;
  /// Cap on a node's expected degree, as a fraction of num_nodes (propensities are clipped so
  /// that no hub dominates; real graphs have hubs, not stars).
  double max_degree_fraction = 0.05;
  /// Standard deviation of the Gaussian noise added to the class-mean features.
  double feature_noise = 1.0;
  /// Probability that a node's features are drawn around another class's mean (uniform over the
  /// other classes) instead of its own: the classes' feature distributions overlap, and only the
  /// neighbourhood can tell such a node's class.
  double class_overlap = 0.3;
  /// Fractions of nodes in the train / validation splits; the rest is test.
  double train_fraction = 0.1;
  double val_fraction = 0.1;
  std::uint64_t seed = 1;
};

/// The names `sbm_preset` knows: "default" (the built-in default graph), "products"
/// (ogbn-products' shape) and "reddit" (Reddit's shape); docs/datasets.md "Presets".
std::vector<std::string> sbm_preset_names();

/// The generator configured for a named graph shape: node, edge, feature and class counts, split
/// fractions and degree cap of the graph it stands for, and a homophily chosen by this project
/// (the classes are what the generated graph's communities follow). Throws ConfigError naming
/// `--preset` and the known names for any other name.
SbmConfig sbm_preset(std::string_view name);

/// Generates the dataset; `meta` records the full config.
Dataset generate_sbm(const SbmConfig& cfg);

}  // namespace halognn
