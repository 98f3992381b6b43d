#pragma once
/// @file feature_sparsify.hpp
/// Input-feature sparsification (docs/partitioning.md "Sparsified features"): each node's feature
/// row is cut into chunks of 256 columns (the last one shorter); per chunk only the positions
/// (one byte each) of the row's k largest and k smallest values are kept, and one codebook per
/// chunk, shared by all nodes, holds 2k floats: the mean over (a seeded sample of) nodes of their
/// i-th largest and i-th smallest value. Decoding writes zeros, then codebook value i at position
/// i. A full chunk of 256 fp32 values (1024 bytes) becomes 2k bytes: a ratio of 512 / k.
///
/// Definitions the format pins:
/// - Chunk c covers columns [256 c, min(256 (c + 1), cols)). Its k is k_c = min(k, width_c / 2)
///   (so the two sets always fit and never overlap: only a chunk narrower than 2k, necessarily the
///   last, keeps fewer; a 1-wide tail keeps nothing). k must be in [1, 128].
/// - Slots: per row, chunk after chunk, k_c "largest" slots (largest first) then k_c "smallest"
///   slots (smallest first); slots(row) = sum over chunks of 2 k_c, the same for every row.
/// - Ties: the largest are the first k_c columns in the order (value descending, column
///   ascending); the smallest are the first k_c of the remaining columns in the order (value
///   ascending, column ascending). So a constant chunk keeps columns 0..k_c-1 as its largest and
///   k_c..2k_c-1 as its smallest.
/// - The sample: node v (global id) is in it iff CounterRng(seed, sparsify, 0, 0).uniform(v, 0) <
///   sample_fraction; a fraction >= 1 takes every node. Codebook sums are accumulated in double in
///   ascending node order and rounded once; an empty sample gives a zero codebook.
#include <cstdint>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace halognn {

/// Columns per chunk.
inline constexpr std::int64_t kSparsifyChunk = 256;
/// The largest k (2k positions must fit in a full chunk).
inline constexpr std::int32_t kSparsifyMaxK = 128;

/// Where each slot of a sparsified row lives. Built from (cols, k) alone.
struct SparsifyLayout {
  std::int64_t cols = 0;
  std::int32_t k = 0;
  std::vector<std::int32_t> chunk_k;    ///< k_c per chunk
  std::vector<std::int32_t> slot_base;  ///< per slot: first column of its chunk (256 c)
  std::int64_t slots() const { return static_cast<std::int64_t>(slot_base.size()); }
  std::int64_t chunks() const { return static_cast<std::int64_t>(chunk_k.size()); }
  /// Bytes of one dense fp32 row over bytes of one sparsified row (positions only).
  double ratio() const;
};

/// The layout for `cols` features and k; throws ConfigError naming `option` when k is outside
/// [1, 128] or cols < 2 (no chunk could keep anything).
SparsifyLayout make_sparsify_layout(std::int64_t cols, std::int32_t k,
                                    const std::string& option = "--sparsify-features");

/// A sparsified feature matrix on the host: positions (rows x slots bytes, row-major) and the
/// codebook (slots floats).
struct SparseFeatures {
  SparsifyLayout layout;
  std::int64_t rows = 0;
  std::vector<std::uint8_t> positions;
  std::vector<float> codebook;
  std::int64_t codebook_rows = 0;  ///< rows the codebook averaged (0 when read from a rank file)
  /// How the sample was drawn: about `codebook_sample` nodes keyed by `codebook_seed` (recorded
  /// by datasets; 0 when unknown, as in rank files).
  std::int64_t codebook_sample = 0;
  std::uint64_t codebook_seed = 0;
  std::int64_t bytes() const {
    return static_cast<std::int64_t>(positions.size() + codebook.size() * sizeof(float));
  }
};

/// Streaming encoder: rows arrive in batches (any size, ascending global ids, each id once); the
/// positions are written at once and the sampled rows' sorted values are summed for the codebook,
/// so a caller that streams its input needs memory for the positions and one batch only.
class FeatureSparsifier {
 public:
  FeatureSparsifier(SparsifyLayout layout, std::uint64_t seed, double sample_fraction);
  /// Encodes `n` rows (n x cols floats, row-major) whose global ids are first_id .. first_id+n-1
  /// into `positions` (n x slots bytes).
  void encode_rows(GlobalId first_id, const float* rows, std::int64_t n, std::uint8_t* positions);
  /// The codebook of the rows encoded so far (sampled rows only).
  std::vector<float> codebook() const;
  std::int64_t sampled_rows() const { return sampled_; }
  const SparsifyLayout& layout() const { return layout_; }

 private:
  SparsifyLayout layout_;
  std::uint64_t seed_;
  double fraction_;
  std::vector<double> sums_;  ///< per slot
  std::int64_t sampled_ = 0;
};

/// The sample fraction of a codebook drawn from about `sample` of `num_nodes` nodes (1 for an
/// empty graph). halognn-partition and halognn-data both use it, so the same (sample, seed) picks
/// the same nodes.
double sparsify_sample_fraction(std::int64_t sample, std::int64_t num_nodes);

/// Encodes a whole row-major matrix (rows x cols) in batches of about 64 MiB of input.
SparseFeatures sparsify_features(const float* x, std::int64_t rows, std::int64_t cols,
                                 std::int32_t k, std::uint64_t seed, double sample_fraction);

/// Decodes rows [0, rows) of `f` into out (rows x cols floats, overwritten).
void desparsify_features(const SparseFeatures& f, float* out);

/// Checks the invariants of sparsified rows (positions inside their chunk, the 2 k_c positions of
/// a chunk distinct, a finite codebook of the right size); throws InputError(origin, ...).
void validate_sparse_features(const SparseFeatures& f, const std::string& origin);

}  // namespace halognn
