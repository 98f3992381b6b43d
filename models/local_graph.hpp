#pragma once
/// @file local_graph.hpp
/// One rank's graph on its device, and the normalised operators layers build from it.
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/buffer.hpp"
#include "core/device.hpp"
#include "core/types.hpp"
#include "partition/local_partition.hpp"

namespace halognn {

struct GraphOperator;

/// Device-resident graph of one rank, built once from its LocalPartition.
struct LocalGraph {
  DevicePtr dev;
  LocalId num_owned = 0, num_halo = 0;
  CsrMatrix adj;         ///< num_owned x num_local, structure only (no values), no self-loops
  CsrMatrix adj_t;       ///< its transpose (num_local x num_owned), for backward passes
  Buffer<float> degree;  ///< num_local: global degree (self-loops excluded)
  Buffer<GlobalId> global_ids;  ///< num_local
  /// The operators layers derived from this graph, by kind (shared_graph_operator): the layers
  /// of a model share one copy on the device instead of holding one each.
  mutable std::map<std::string, std::shared_ptr<const GraphOperator>> operators;
  LocalId num_local() const { return num_owned + num_halo; }
  /// Validates the partition's adjacency (sizes, column range) and copies it to `dev`.
  static LocalGraph build(const LocalPartition& part, DevicePtr dev);
};

/// A weighted num_owned x num_local operator derived from a LocalGraph's adjacency, with its
/// transpose and, for entry k of the transpose, the index of the same entry in `a`.
struct GraphOperator {
  CsrMatrix a;                  ///< num_owned x num_local
  CsrMatrix a_t;                ///< num_local x num_owned, same values
  Buffer<std::int32_t> t_to_a;  ///< a_t.nnz() entries
};

/// Builds an operator on g.dev from g.adj, optionally adding the diagonal entry (v, v) for every
/// owned row v (owned rows are the first local ids, so local column v is v itself). `weight`
/// gives the value of entry (v, u); an empty function makes a structure-only operator (values all
/// one, val empty). Host work, once per layer at prepare time.
GraphOperator build_graph_operator(const LocalGraph& g, bool self_loops,
                                   const std::function<float(LocalId v, LocalId u)>& weight);

/// The operator of g named `kind`: built with build_graph_operator(g, self_loops, weight) by the
/// first caller, the same object for every later caller asking for that kind (every layer of a
/// model asks for the same one). `kind` must name the self_loops and weight it stands for.
std::shared_ptr<const GraphOperator> shared_graph_operator(
    const LocalGraph& g, const std::string& kind, bool self_loops,
    const std::function<float(LocalId v, LocalId u)>& weight);

}  // namespace halognn
