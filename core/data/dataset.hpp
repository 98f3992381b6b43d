#pragma once
/// @file dataset.hpp
/// The in-memory dataset and the one on-disk dataset format (a directory of .npy arrays plus a
/// JSON manifest; see docs/datasets.md). Readers validate everything they read and throw
/// InputError naming the file and the problem.
#include <cstdint>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/json.hpp"
#include "core/types.hpp"

namespace halognn {

/// Symmetric adjacency in CSR with 64-bit offsets and global ids: no self-loops, no duplicate
/// entries, columns sorted ascending within each row.
struct GlobalGraph {
  GlobalId num_nodes = 0;
  std::vector<EdgeOffset> row_ptr;  ///< num_nodes + 1 entries
  std::vector<GlobalId> col;
  std::int64_t num_directed_edges() const { return static_cast<std::int64_t>(col.size()); }
  std::int64_t degree(GlobalId v) const { return row_ptr[v + 1] - row_ptr[v]; }
};

/// What building the symmetric graph removed.
struct GraphBuildStats {
  std::int64_t input_edges = 0;
  std::int64_t self_loops_dropped = 0;
  std::int64_t duplicates_dropped = 0;  ///< directed duplicates after symmetrising
};

/// Symmetrises the edge list, drops self-loops and duplicates, sorts each row.
GlobalGraph build_symmetric_graph(GlobalId num_nodes, const std::vector<GlobalId>& src,
                                  const std::vector<GlobalId>& dst, GraphBuildStats* stats = nullptr);

/// A node-classification dataset held in memory.
struct Dataset {
  std::string name;
  GlobalId num_nodes = 0;
  /// Edges as stored (one or both directions; may contain self-loops/duplicates, which
  /// build_symmetric_graph removes). Ids in [0, num_nodes).
  std::vector<GlobalId> edge_src, edge_dst;
  Matrix features;  ///< num_nodes x num_features, host, finite
  std::int32_t num_classes = 0;
  bool multilabel = false;
  /// Single-label: one class per node in [0, num_classes), or -1 for an unlabelled node.
  std::vector<std::int32_t> labels;
  /// Multi-label: num_nodes x num_classes row-major 0/1 (empty for single-label data).
  std::vector<std::uint8_t> label_matrix;
  /// Disjoint, sorted, in range. A labelled split node must have a label (>= 0).
  std::vector<GlobalId> train_idx, val_idx, test_idx;
  /// Free-form provenance: source files, converter, notes (e.g. "features missing for ...").
  Json meta = Json::object();

  std::int64_t num_features() const { return features.cols(); }
};

/// Reads a dataset directory (manifest.json + .npy arrays). Validates dtypes, shapes, id and label
/// ranges, finiteness of features and disjointness of the splits.
Dataset read_dataset(const std::string& dir);

/// Writes a dataset directory atomically (to a temporary sibling, then renamed into place).
/// @param removed_leftovers  when not null, receives the "<dir>.tmp.<pid>" leftovers of killed
///                           runs that were removed first (for the tool to report)
void write_dataset(const Dataset& ds, const std::string& dir,
                   std::vector<std::string>* removed_leftovers = nullptr);

/// Checks the invariants read_dataset enforces; throws InputError(origin, ...) on violation.
void validate_dataset(const Dataset& ds, const std::string& origin);

}  // namespace halognn
