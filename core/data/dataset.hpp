#pragma once
/// @file dataset.hpp
/// The in-memory dataset and the one on-disk dataset format (a directory of .npy arrays plus a
/// JSON manifest; see docs/datasets.md). Readers validate everything they read and throw
/// InputError naming the file and the problem. The features are stored dense (features.npy) or
/// sparsified (feature_positions.npy + feature_codebook.npy, core/data/feature_sparsify.hpp).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/data/feature_sparsify.hpp"
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
  Matrix features;  ///< num_nodes x num_features, host, finite; num_nodes x 0 when sparsified
  /// Sparsified features (sparsified()): every node's positions in global id order and the one
  /// codebook, with how its sample was drawn (codebook_sample, codebook_seed, codebook_rows).
  SparseFeatures sparse_features;
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

  bool sparsified() const { return sparse_features.layout.k > 0; }
  /// Feature columns (of the dense matrix, also when sparsified).
  std::int64_t num_features() const {
    return sparsified() ? sparse_features.layout.cols : features.cols();
  }
};

/// How a dataset directory stores its features, as its manifest says.
struct StoredFeatures {
  std::int64_t num_features = 0;    ///< columns of the dense matrix
  std::int32_t k = 0;               ///< 0: dense (features.npy); else sparsified with this k
  std::int64_t codebook_sample = 0, codebook_rows = 0;  ///< sparsified: see SparseFeatures
  std::uint64_t codebook_seed = 0;
};

/// Reads and checks only the manifest of the dataset `dir` (no array): what the tools need to
/// check their options against the stored form before reading gigabytes. Errors as read_dataset.
StoredFeatures read_stored_features(const std::string& dir);

/// Sparsifying the dense features while they are read (halognn-data sparsify): features.npy is
/// streamed in blocks of rows through FeatureSparsifier and never held whole.
struct SparsifyOnRead {
  std::int32_t k = 0;             ///< 0: read the features as stored; [1, 128]: sparsify
  std::int64_t sample = 100000;   ///< about this many nodes make the codebook
  std::uint64_t seed = 1;         ///< keys the sample (as halognn-partition --seed)
  std::int64_t batch_bytes = std::int64_t{64} << 20;  ///< input per block (at least one row)
  /// Option names for the errors about k and the sample (the tool's spelling).
  std::string k_option = "--sparsify-features", sample_option = "--sparsify-sample";
  /// Called after each block with (rows done, rows in all); may be empty.
  std::function<void(std::int64_t, std::int64_t)> progress;
};

/// Reads a dataset directory (manifest.json + .npy arrays). Validates dtypes, shapes, id and label
/// ranges, finiteness of features (dense) or the sparsified form's invariants
/// (validate_sparse_features), and disjointness of the splits.
/// @param sparsify  k > 0: sparsify the dense features while reading them (a dataset that is
///                  sparsified already is an InputError)
Dataset read_dataset(const std::string& dir, const SparsifyOnRead& sparsify = {});

/// Replaces `ds`'s dense features by their sparsified form (k, a codebook from about `sample`
/// nodes keyed by `seed`), the same as read_dataset with SparsifyOnRead gives for the written
/// dataset. ConfigError (naming the option) for a k outside [1, 128], fewer than 2 columns, a
/// sample below 1, or a `ds` that is sparsified already.
void sparsify_dataset(Dataset& ds, std::int32_t k, std::int64_t sample, std::uint64_t seed);

/// Writes a dataset directory atomically (to a temporary sibling, then renamed into place).
/// @param removed_leftovers  when not null, receives the "<dir>.tmp.<pid>" leftovers of killed
///                           runs that were removed first (for the tool to report)
void write_dataset(const Dataset& ds, const std::string& dir,
                   std::vector<std::string>* removed_leftovers = nullptr);

/// Checks the invariants read_dataset enforces; throws InputError(origin, ...) on violation.
void validate_dataset(const Dataset& ds, const std::string& origin);

}  // namespace halognn
