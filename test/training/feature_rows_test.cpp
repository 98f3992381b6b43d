// The wire format of the one-time feature exchange (training/feature_rows.hpp): rows come back
// exactly, as dense rows and as CSR, sparse rows cost their non-zeros, and every malformed
// message is refused naming its origin.
#include "training/feature_rows.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "core/error.hpp"

namespace halognn {
namespace {

constexpr std::int64_t kCols = 10;

/// Rows of 10 columns: empty, one non-zero, 4 (sparse: 8 < 10), 5 (dense: 10 is not < 10),
/// full, and a negative zero and a subnormal among the values.
std::vector<std::vector<float>> sample_rows() {
  std::vector<std::vector<float>> r(6, std::vector<float>(kCols, 0.0f));
  r[1][9] = 2.5f;
  r[2][0] = 1.0f; r[2][3] = -3.0f; r[2][4] = 1e-40f; r[2][8] = 7.0f;
  for (int j = 0; j < 5; ++j) r[3][2 * j] = static_cast<float>(j + 1);
  for (int j = 0; j < kCols; ++j) r[4][j] = 0.5f * static_cast<float>(j - 4);  // one zero
  r[5][1] = -0.0f;  // compares equal to zero: not stored
  r[5][2] = 4.0f;
  return r;
}

std::vector<std::byte> encode(const std::vector<std::vector<float>>& rows, FeatureRowBytes* bytes) {
  HostCsr csr(kCols);
  for (const auto& r : rows) csr.append_dense(r.data());
  std::vector<std::byte> out;
  *bytes = encode_feature_rows(static_cast<std::int64_t>(rows.size()), kCols,
                               [&](std::int64_t i) { return FeatureRowView{csr.row_col(i), csr.row_val(i)}; },
                               out);
  return out;
}

TEST(FeatureRows, RoundTripDenseAndCsrAndSparseRowsCostTheirNonZeros) {
  const auto rows = sample_rows();
  FeatureRowBytes b;
  const std::vector<std::byte> msg = encode(rows, &b);
  // counts; rows: 0, 1 pair, 4 pairs, 10 values (5 non-zeros), 10 values (9), 1 pair.
  EXPECT_EQ(b.metadata, 6 * 4u);
  EXPECT_EQ(b.payload, (0 + 1 + 4 + 1) * 8u + 2 * kCols * 4u);
  EXPECT_EQ(msg.size(), b.metadata + b.payload);

  std::vector<float> dense(rows.size() * kCols, 99.0f);
  decode_feature_rows(msg, static_cast<std::int64_t>(rows.size()), kCols, dense.data(), nullptr, "t");
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::int64_t j = 0; j < kCols; ++j)
      EXPECT_EQ(dense[i * kCols + j], rows[i][j]) << "row " << i << " column " << j;  // -0 == 0

  HostCsr csr(kCols);
  decode_feature_rows(msg, static_cast<std::int64_t>(rows.size()), kCols, nullptr, &csr, "t");
  HostCsr want(kCols);
  for (const auto& r : rows) want.append_dense(r.data());
  EXPECT_EQ(csr.row_ptr, want.row_ptr);
  EXPECT_EQ(csr.col, want.col);
  EXPECT_EQ(csr.val, want.val);
  EXPECT_EQ(csr.row_col(1).size(), 1u);
  EXPECT_EQ(csr.row_col(5).size(), 1u) << "a negative zero is not a non-zero";
}

TEST(FeatureRows, MalformedMessagesAreRefusedNamingTheirOrigin) {
  const auto rows = sample_rows();
  FeatureRowBytes b;
  const std::vector<std::byte> msg = encode(rows, &b);
  const auto n = static_cast<std::int64_t>(rows.size());
  std::vector<float> dst(rows.size() * kCols);
  auto refused = [&](std::vector<std::byte> m, std::int64_t rows_n, const char* what) {
    try {
      decode_feature_rows(m, rows_n, kCols, dst.data(), nullptr, "message from rank 3");
      ADD_FAILURE() << what << ": accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("message from rank 3: malformed feature rows"),
                std::string::npos) << e.what();
    }
  };
  refused(std::vector<std::byte>(msg.begin(), msg.end() - 1), n, "cut short");
  auto longer = msg;
  longer.push_back(std::byte{0});
  refused(longer, n, "trailing byte");
  refused(msg, n + 1, "fewer rows than said");
  refused(std::vector<std::byte>(msg.begin(), msg.begin() + 8), n, "counts cut short");
  auto set_i32 = [](std::vector<std::byte> m, std::size_t at, std::int32_t v) {
    std::memcpy(m.data() + at, &v, sizeof v);
    return m;
  };
  refused(set_i32(msg, 0, -1), n, "negative count");
  refused(set_i32(msg, 4, kCols + 1), n, "count above the width");
  // Row 1's one pair sits right after the 6 counts (row 0 is empty): its column, then its value.
  refused(set_i32(msg, 24, kCols), n, "column out of range");
  // Row 2's columns (0, 3, 4, 8) follow: make the second equal the first.
  refused(set_i32(msg, 32 + 4, 0), n, "columns out of order");
}

}  // namespace
}  // namespace halognn
