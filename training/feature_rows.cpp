#include "training/feature_rows.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.hpp"

namespace halognn {

std::span<const LocalId> HostCsr::row_col(std::int64_t i) const {
  const auto b = static_cast<std::size_t>(row_ptr[static_cast<std::size_t>(i)]);
  const auto e = static_cast<std::size_t>(row_ptr[static_cast<std::size_t>(i) + 1]);
  return std::span<const LocalId>(col).subspan(b, e - b);
}

std::span<const float> HostCsr::row_val(std::int64_t i) const {
  const auto b = static_cast<std::size_t>(row_ptr[static_cast<std::size_t>(i)]);
  const auto e = static_cast<std::size_t>(row_ptr[static_cast<std::size_t>(i) + 1]);
  return std::span<const float>(val).subspan(b, e - b);
}

namespace {
void close_row(HostCsr& m) {
  GNN_CHECK_CONFIG(m.col.size() <= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()),
                   "layer-0 features: 2^31 or more non-zeros do not fit 32-bit CSR offsets");
  m.row_ptr.push_back(static_cast<std::int32_t>(m.col.size()));
}
}  // namespace

void append_nonzeros(const float* row, std::int64_t cols, std::vector<LocalId>& col,
                     std::vector<float>& val) {
  for (std::int64_t j = 0; j < cols; ++j)
    if (row[j] != 0.0f) {
      col.push_back(static_cast<LocalId>(j));
      val.push_back(row[j]);
    }
}

void HostCsr::append_dense(const float* row) {
  append_nonzeros(row, cols, col, val);
  close_row(*this);
}

void HostCsr::append(std::span<const LocalId> c, std::span<const float> v) {
  col.insert(col.end(), c.begin(), c.end());
  val.insert(val.end(), v.begin(), v.end());
  close_row(*this);
}

std::size_t HostCsr::bytes() const {
  return row_ptr.size() * sizeof(std::int32_t) + col.size() * sizeof(LocalId) +
         val.size() * sizeof(float);
}

CsrMatrix HostCsr::to_device(const DevicePtr& dev) const {
  return CsrMatrix(rows(), cols, row_ptr, col, val, dev);
}

FeatureRowBytes encode_feature_rows(std::int64_t n, std::int64_t cols,
                                    const std::function<FeatureRowView(std::int64_t)>& row,
                                    std::vector<std::byte>& out) {
  const std::size_t start = out.size();
  out.resize(start + static_cast<std::size_t>(n) * sizeof(std::int32_t));
  for (std::int64_t i = 0; i < n; ++i) {
    const FeatureRowView r = row(i);
    const auto c = static_cast<std::int32_t>(r.col.size());
    std::memcpy(out.data() + start + static_cast<std::size_t>(i) * sizeof c, &c, sizeof c);
    const std::size_t at = out.size();
    if (feature_row_is_sparse(c, cols)) {
      out.resize(at + r.col.size() * (sizeof(std::int32_t) + sizeof(float)));
      std::memcpy(out.data() + at, r.col.data(), r.col.size() * sizeof(std::int32_t));
      std::memcpy(out.data() + at + r.col.size() * sizeof(std::int32_t), r.val.data(),
                  r.val.size() * sizeof(float));
    } else {
      // A dense row: all its values (the new bytes are zero: 0.0f), the non-zeros set.
      out.resize(at + static_cast<std::size_t>(cols) * sizeof(float));
      for (std::size_t k = 0; k < r.col.size(); ++k)
        std::memcpy(out.data() + at + static_cast<std::size_t>(r.col[k]) * sizeof(float), &r.val[k],
                    sizeof(float));
    }
  }
  FeatureRowBytes b;
  b.metadata = static_cast<std::size_t>(n) * sizeof(std::int32_t);
  b.payload = out.size() - start - b.metadata;
  return b;
}

void decode_feature_rows(std::span<const std::byte> msg, std::int64_t n, std::int64_t cols,
                         float* dst, HostCsr* csr, const std::string& origin) {
  auto bad = [&](const std::string& why) { return Error(origin + ": malformed feature rows: " + why); };
  const std::size_t head = static_cast<std::size_t>(n) * sizeof(std::int32_t);
  if (msg.size() < head)
    throw bad(std::to_string(msg.size()) + " bytes, fewer than the counts of " + std::to_string(n) +
              " rows");
  const auto width = static_cast<std::size_t>(cols);
  std::vector<LocalId> c_buf;
  std::vector<float> v_buf, dense;
  std::size_t at = head;
  for (std::int64_t i = 0; i < n; ++i) {
    std::int32_t c = 0;
    std::memcpy(&c, msg.data() + static_cast<std::size_t>(i) * sizeof c, sizeof c);
    if (c < 0 || c > cols)
      throw bad("row " + std::to_string(i) + " has " + std::to_string(c) + " non-zeros of " +
                std::to_string(cols));
    const bool sparse = feature_row_is_sparse(c, cols);
    const std::size_t bytes = sparse ? static_cast<std::size_t>(c) * (sizeof(std::int32_t) + sizeof(float))
                                     : width * sizeof(float);
    if (msg.size() - at < bytes) throw bad("row " + std::to_string(i) + " is cut short");
    const std::byte* p = msg.data() + at;
    at += bytes;
    if (sparse) {
      c_buf.resize(static_cast<std::size_t>(c));
      v_buf.resize(static_cast<std::size_t>(c));
      std::memcpy(c_buf.data(), p, c_buf.size() * sizeof(LocalId));
      std::memcpy(v_buf.data(), p + c_buf.size() * sizeof(LocalId), v_buf.size() * sizeof(float));
      for (std::size_t k = 0; k < c_buf.size(); ++k)
        if (c_buf[k] < 0 || c_buf[k] >= cols || (k > 0 && c_buf[k] <= c_buf[k - 1]))
          throw bad("row " + std::to_string(i) + " names column " + std::to_string(c_buf[k]) +
                    " out of order or range");
      if (csr) {
        csr->append(c_buf, v_buf);
      } else {
        float* d = dst + i * cols;
        std::fill(d, d + width, 0.0f);
        for (std::size_t k = 0; k < c_buf.size(); ++k) d[c_buf[k]] = v_buf[k];
      }
    } else if (csr) {
      dense.resize(width);
      std::memcpy(dense.data(), p, width * sizeof(float));
      csr->append_dense(dense.data());
    } else {
      std::memcpy(dst + i * cols, p, width * sizeof(float));
    }
  }
  if (at != msg.size()) throw bad(std::to_string(msg.size() - at) + " bytes after the last row");
}

}  // namespace halognn
