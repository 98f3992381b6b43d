#pragma once
// A small planted-partition dataset, identical on every rank, and helpers to partition and train.
#include <vector>

#include "core/data/dataset.hpp"
#include "core/data/generator.hpp"
#include "training/trainer.hpp"
#include "partition/partition.hpp"

namespace halognn::testing {

inline Dataset small_dataset(std::uint64_t seed = 3, std::int32_t classes = 4,
                             std::int64_t features = 12) {
  SbmConfig c;
  c.num_nodes = 600;
  c.num_edges = 3000;
  c.num_classes = classes;
  c.num_features = features;
  c.homophily = 0.8;
  // Explicit, not the generator's defaults: the pinned loss hashes depend on this graph.
  c.feature_noise = 1.0;
  c.class_overlap = 0.0;
  c.power_law_exponent = 2.5;
  c.max_degree_fraction = 0.05;
  c.train_fraction = 0.3;
  c.val_fraction = 0.2;
  c.seed = seed;
  return generate_sbm(c);
}

/// Partitions `ds` into `parts` parts (METIS) and returns part `which`. Owned rows are numbered
/// in METIS blocks of 48 rows (a locality order, as halognn-partition does with 1024-row blocks),
/// so the tests train on local numberings that are not ascending global ids.
inline LocalPartition partition_of(const Dataset& ds, Rank parts, Rank which) {
  const GlobalGraph g = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst);
  PartitionConfig pc;
  pc.parts = parts;
  pc.seed = 7;
  const std::vector<Rank> owner = assign_parts(g, pc);
  std::vector<LocalPartition> all = build_local_partitions(
      ds, g, owner, parts, nullptr, LocalOrder{LocalOrder::Kind::blocks, 48, pc.seed});
  return std::move(all[which]);
}

inline TrainConfig small_config(ModelKind kind) {
  TrainConfig c;
  c.model = kind;
  c.layers = 2;
  c.hidden = 8;
  c.heads = kind == ModelKind::gat ? 2 : 1;
  c.epochs = 20;
  c.lr = 0.01f;
  c.weight_decay = 5e-4f;
  c.dropout = 0.5f;
  c.seed = 11;
  c.quiet = true;
  return c;
}

}  // namespace halognn::testing
