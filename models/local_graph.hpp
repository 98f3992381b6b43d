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
  /// num_owned x num_local, structure only (no values), no self-loops: what the operators are
  /// built from (backward passes use their transposes).
  CsrMatrix adj;
  Buffer<float> degree;  ///< num_local: global degree (self-loops excluded)
  Buffer<GlobalId> global_ids;  ///< num_local
  /// The operators layers derived from this graph, by kind (shared_graph_operator): the layers
  /// of a model share one copy on the device instead of holding one each.
  mutable std::map<std::string, std::shared_ptr<const GraphOperator>> operators;
  LocalId num_local() const { return num_owned + num_halo; }
  /// Validates the partition's adjacency (sizes, column range) and copies it to `dev`.
  static LocalGraph build(const LocalPartition& part, DevicePtr dev);
};

/// How a GraphOperator holds A (num_owned x num_local); see GraphOperator.
enum class OperatorForm { split, whole };

/// A weighted num_owned x num_local operator A derived from a LocalGraph's adjacency, in the form
/// its users need:
/// - split (GCN, SAGE, GIN, residual blocks): A = [a_owned | a_halo] by column, the owned columns
///   (num_owned x num_owned) and the halo columns (num_owned x num_halo, numbered from 0), and its
///   transpose by row, t_owned (num_owned x num_owned: the owned rows of Aᵀ) over t_halo
///   (num_halo x num_owned). Owned columns come first in every row of A (local ids put owned rows
///   first and columns are sorted), so aggregating a_owned, then a_halo into the same output gives
///   the bits of one pass over A (spmm_bias's contract): a layer aggregates the owned columns
///   while the halo rows are in flight and the halo columns once they arrive, and its backward
///   computes the halo rows of its input gradient first, to send them while it computes the rest
///   (docs/training.md "Overlap").
/// - whole (GAT, whose attention normalises over every entry of a row at once): a, its transpose
///   a_t (num_local x num_owned, same values) and, for entry k of a_t, the index t_to_a[k] of the
///   same entry in a.
struct GraphOperator {
  OperatorForm form = OperatorForm::split;
  CsrMatrix a_owned, a_halo, t_owned, t_halo;  ///< split
  CsrMatrix a, a_t;                            ///< whole
  Buffer<std::int32_t> t_to_a;                 ///< whole: a_t.nnz() entries
};

/// Builds an operator on g.dev from g.adj, optionally adding the diagonal entry (v, v) for every
/// owned row v (owned rows are the first local ids, so local column v is v itself). `weight`
/// gives the value of entry (v, u); an empty function makes a structure-only operator (values all
/// one, val empty). Host work, once per layer at prepare time.
GraphOperator build_graph_operator(const LocalGraph& g, OperatorForm form, bool self_loops,
                                   const std::function<float(LocalId v, LocalId u)>& weight);

/// The operator of g named `kind`: built with build_graph_operator(g, form, self_loops, weight)
/// by the first caller, the same object for every later caller asking for that kind (every layer
/// of a model asks for the same one). `kind` must name the form, self_loops and weight it stands
/// for.
std::shared_ptr<const GraphOperator> shared_graph_operator(
    const LocalGraph& g, const std::string& kind, OperatorForm form, bool self_loops,
    const std::function<float(LocalId v, LocalId u)>& weight);

}  // namespace halognn
