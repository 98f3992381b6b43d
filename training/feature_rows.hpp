#pragma once
/// Layer-0 feature rows on the wire of the one-time feature exchange (docs/training.md
/// "The one-time feature exchange"). A message of n rows of width F holds n int32 non-zero
/// counts, then each row: its c non-zeros as c int32 columns and c float values when 2c < F
/// (a sparse row), otherwise its F values. Values are exact fp32: decoding gives back the rows.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/types.hpp"

namespace halognn {

/// Whether a row of width `cols` with `nnz` non-zeros crosses as (column, value) pairs.
constexpr bool feature_row_is_sparse(std::int64_t nnz, std::int64_t cols) { return 2 * nnz < cols; }

/// Appends the non-zeros of a dense row of `cols` values to `col` and `val`, columns ascending.
void append_nonzeros(const float* row, std::int64_t cols, std::vector<LocalId>& col,
                     std::vector<float>& val);

/// Rows in CSR form on the host, built row by row; columns ascending within a row.
struct HostCsr {
  std::int64_t cols = 0;
  std::vector<std::int32_t> row_ptr{0};
  std::vector<LocalId> col;
  std::vector<float> val;

  explicit HostCsr(std::int64_t width) : cols(width) {}
  std::int64_t rows() const { return static_cast<std::int64_t>(row_ptr.size()) - 1; }
  std::span<const LocalId> row_col(std::int64_t i) const;
  std::span<const float> row_val(std::int64_t i) const;
  /// Appends the non-zeros of a dense row of `cols` values.
  void append_dense(const float* row);
  /// Appends a row given by its non-zeros.
  void append(std::span<const LocalId> c, std::span<const float> v);
  std::size_t bytes() const;
  CsrMatrix to_device(const DevicePtr& dev) const;
};

/// One row's non-zeros, as the encoder reads them.
struct FeatureRowView {
  std::span<const LocalId> col;
  std::span<const float> val;
};

/// Bytes of a message, split as the traffic counter reports them.
struct FeatureRowBytes {
  std::size_t payload = 0;   ///< columns and values
  std::size_t metadata = 0;  ///< the per-row counts
};

/// Appends `n` rows of width `cols` to `out`; `row(i)` gives row i's non-zeros (valid until the
/// next call). Returns the bytes appended.
FeatureRowBytes encode_feature_rows(std::int64_t n, std::int64_t cols,
                                    const std::function<FeatureRowView(std::int64_t)>& row,
                                    std::vector<std::byte>& out);

/// Decodes a message of `n` rows of width `cols`, each row into `dst` (n x cols, row-major,
/// host, overwritten) or, with `dst` null, appended to `csr`. Throws Error naming `origin` when
/// the message is not exactly such rows.
void decode_feature_rows(std::span<const std::byte> msg, std::int64_t n, std::int64_t cols,
                         float* dst, HostCsr* csr, const std::string& origin);

}  // namespace halognn
