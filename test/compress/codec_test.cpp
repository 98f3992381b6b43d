// Properties every codec must have: exact sizes, determinism, non-finite input rejected, and the
// fp16/bf16 error bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "compress/codec_plan.hpp"
#include "compress/float16.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "test/compress/codec_test_util.hpp"

namespace halognn {
namespace {

using test::decode;
using test::encode;
using test::iota_ids;
using test::make_ctx;

/// A rows x cols block of values of varied magnitude and sign, seeded by `salt`.
Matrix random_block(std::int64_t rows, std::int64_t cols, std::uint64_t salt, float magnitude = 1.0f) {
  Matrix m(rows, cols);
  const CounterRng rng({salt, RngPurpose::test, 1, 0});
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      m(i, j) = magnitude * (2.0f * rng.uniform(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j)) - 1.0f);
  return m;
}

class EveryCodec : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryCodec, WritesExactlyEncodedSizeBytesAndNothingBeyond) {
  const auto codec = make_codec(GetParam());
  const std::int64_t shapes[][2] = {{0, 5}, {3, 0}, {1, 1}, {7, 13}, {10, 33}, {33, 7}, {5, 3}, {41, 1111}};
  constexpr std::size_t guard = 64;
  for (const auto& s : shapes) {
    const Matrix x = random_block(s[0], s[1], 11);
    const auto ids = iota_ids(s[0], 500);
    const auto ctx = make_ctx(ids);
    const std::size_t n = codec->encoded_size(s[0], s[1]).total();
    // Encode twice into buffers poisoned differently: a byte that encode skipped would keep its
    // poison and differ between the two; the guard after the block must keep its poison.
    std::vector<std::byte> a(n + guard, std::byte{0xA5}), b(n + guard, std::byte{0x5A});
    codec->encode(*cpu_device(), x.view(), ctx, std::span(a).first(n));
    codec->encode(*cpu_device(), x.view(), ctx, std::span(b).first(n));
    for (std::size_t k = 0; k < n; ++k) ASSERT_EQ(a[k], b[k]) << "byte " << k << " of " << s[0] << "x" << s[1];
    for (std::size_t k = n; k < n + guard; ++k) {
      ASSERT_EQ(a[k], std::byte{0xA5}) << "overrun at " << k;
      ASSERT_EQ(b[k], std::byte{0x5A}) << "overrun at " << k;
    }
    // Decoding writes every element and only them.
    std::vector<float> out(static_cast<std::size_t>(s[0] * s[1]) + guard, -777.0f);
    codec->decode(*cpu_device(), std::span(a).first(n), ctx, DenseView{out.data(), s[0], s[1]});
    for (std::int64_t k = 0; k < s[0] * s[1]; ++k) ASSERT_NE(out[k], -777.0f);
    for (std::size_t k = static_cast<std::size_t>(s[0] * s[1]); k < out.size(); ++k) ASSERT_EQ(out[k], -777.0f);
  }
}

TEST_P(EveryCodec, ReportsPayloadAndMetadataByTheDocumentedFormula) {
  const auto codec = make_codec(GetParam());
  const std::string name = GetParam();
  for (std::int64_t rows : {0, 1, 7, 1000})
    for (std::int64_t cols : {0, 1, 3, 16, 129}) {
      const auto size = codec->encoded_size(rows, cols);
      const auto n = static_cast<std::size_t>(rows * cols);
      std::size_t payload = 0, meta = 0;
      if (name == "fp32") payload = 4 * n;
      else if (name == "fp16" || name == "bf16") payload = 2 * n;
      else {
        const std::size_t bits = static_cast<std::size_t>(name[1] - '0');
        payload = (n * bits + 7) / 8;
        meta = static_cast<std::size_t>(rows) * (name.find("meta") == std::string::npos ? 8 : 4);
      }
      EXPECT_EQ(size.payload, payload) << name << " " << rows << "x" << cols;
      EXPECT_EQ(size.metadata, meta) << name << " " << rows << "x" << cols;
      EXPECT_EQ(size.total(), payload + meta);
    }
}

TEST_P(EveryCodec, GivesIdenticalBytesForTheSameContext) {
  const auto codec = make_codec(GetParam());
  const Matrix x = random_block(9, 37, 3);
  const auto ids = iota_ids(9, 100);
  EXPECT_EQ(encode(*codec, x.view(), make_ctx(ids, 4)), encode(*codec, x.view(), make_ctx(ids, 4)));
}

TEST_P(EveryCodec, RejectsAWrongBufferSize) {
  const auto codec = make_codec(GetParam());
  const Matrix x = random_block(4, 5, 3);
  const auto ids = iota_ids(4);
  std::vector<std::byte> out(codec->encoded_size(4, 5).total() + 1);
  EXPECT_THROW(codec->encode(*cpu_device(), x.view(), make_ctx(ids), out), Error);
  Matrix y(4, 5);
  EXPECT_THROW(codec->decode(*cpu_device(), out, make_ctx(ids), y.view()), Error);
}

TEST_P(EveryCodec, EncodesGatheredRowsAsTheGatheredBlockWhereItGathers) {
  // Packing fused with encoding (Codec::gathers): a block read through an index into a larger
  // matrix (rows out of order, one twice) must give the bytes of those rows gathered first, for
  // shapes whose rows do and do not start on a byte boundary, and the error naming a bad row
  // must name it by its block row's global id.
  const auto codec = make_codec(GetParam());
  if (!codec->gathers(*cpu_device())) {
    EXPECT_TRUE(codec->raw_rows()) << GetParam() << ": only a raw-rows codec needs no gather";
    return;
  }
  for (const std::int64_t cols : {1, 7, 37, 256, 300}) {
    const Matrix src = random_block(50, cols, 11);
    const std::vector<LocalId> index = {49, 3, 17, 3, 0, 48, 22, 31, 5,
                                        6,  40, 12, 13, 44, 2, 9, 27};
    const auto count = static_cast<std::int64_t>(index.size());
    Matrix gathered(count, cols);
    for (std::int64_t i = 0; i < count; ++i)
      for (std::int64_t j = 0; j < cols; ++j)
        gathered(i, j) = src(index[static_cast<std::size_t>(i)], j);
    const auto ids = iota_ids(count, 500);
    const CodecContext ctx = make_ctx(ids, 2);
    std::vector<std::byte> out(codec->encoded_size(count, cols).total());
    codec->encode_gathered(*cpu_device(), src.view(), index.data(), count, ctx, out);
    EXPECT_EQ(out, encode(*codec, gathered.view(), ctx))
        << GetParam() << ", " << cols << " columns";
  }
  Matrix src = random_block(20, 9, 12);
  src(7, 4) = std::numeric_limits<float>::quiet_NaN();
  const std::vector<LocalId> index = {1, 2, 7, 8};
  const auto ids = iota_ids(4, 900);
  std::vector<std::byte> out(codec->encoded_size(4, 9).total());
  try {
    codec->encode_gathered(*cpu_device(), src.view(), index.data(), 4, make_ctx(ids), out);
    ADD_FAILURE() << GetParam() << " accepted a NaN";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("global id 902"), std::string::npos) << e.what();
  }
}

TEST_P(EveryCodec, DecodesScatteredRowsAsAddingTheDecodedBlockWhereItScatters) {
  // Unpacking fused with decoding (Codec::scatters): a block added through an index into a
  // larger matrix (rows out of order, some rows untouched) must leave the bits of decoding the
  // block into a matrix of its own and then adding each row, for shapes whose rows do and do not
  // start on a byte boundary, and enough rows to run on several threads.
  const auto codec = make_codec(GetParam());
  if (!codec->scatters(*cpu_device())) {
    EXPECT_TRUE(codec->raw_rows()) << GetParam() << ": only a raw-rows codec needs no scatter";
    return;
  }
  for (const std::int64_t cols : {1, 7, 37, 256, 300}) {
    for (const std::int64_t count : {17, 3000}) {
      const std::int64_t n = count + 40;
      std::vector<LocalId> index(static_cast<std::size_t>(n));
      std::iota(index.begin(), index.end(), LocalId{0});
      std::mt19937 shuffle(static_cast<std::uint32_t>(cols + count));
      std::shuffle(index.begin(), index.end(), shuffle);
      index.resize(static_cast<std::size_t>(count));
      const Matrix block = random_block(count, cols, 13);
      const auto ids = iota_ids(count, 700);
      const CodecContext ctx = make_ctx(ids, 3);
      const std::vector<std::byte> bytes = encode(*codec, block.view(), ctx);
      Matrix decoded(count, cols);
      codec->decode(*cpu_device(), bytes, ctx, decoded.view());
      Matrix want = random_block(n, cols, 14), got = want.clone(cpu_device());
      for (std::int64_t i = 0; i < count; ++i)
        for (std::int64_t j = 0; j < cols; ++j)
          want(index[static_cast<std::size_t>(i)], j) += decoded(i, j);
      codec->decode_scattered(*cpu_device(), bytes, ctx, got.view(), index.data(), count);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * n * cols), 0)
          << GetParam() << ", " << count << " x " << cols;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, EveryCodec, ::testing::ValuesIn(codec_names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

class LossyCodec : public ::testing::TestWithParam<std::string> {};

TEST_P(LossyCodec, ThrowsOnNonFiniteInputNamingTheGlobalRowId) {
  const auto codec = make_codec(GetParam());
  // NaNs of both signs: the q codecs find them by where their bits order (below -inf, above +inf).
  const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                              INFINITY, -INFINITY};
  // A narrow odd width, and a width of whole vectors with more rows than a vector has lanes (the
  // q codecs' ranges of such rows come from batch_ranges), on every instruction set.
  struct Shape {
    std::int64_t rows, cols, bad_row;
  };
  for (const Shape shape : {Shape{6, 11, 3}, Shape{40, 32, 19}}) {
    for (float bad : bad_values) {
      Matrix x = random_block(shape.rows, shape.cols, 5);
      x(shape.bad_row, 7) = bad;
      x(shape.rows - 1, 0) = bad;  // a later bad row: the message names the first one
      const auto ids = iota_ids(shape.rows, 1000);
      test::on_every_cpu_isa([&](kernels::CpuIsa isa) {
        try {
          encode(*codec, x.view(), make_ctx(ids));
          ADD_FAILURE() << GetParam() << " accepted " << bad << " on " << kernels::to_string(isa);
        } catch (const Error& e) {
          const std::string msg = e.what();
          EXPECT_NE(msg.find("codec " + GetParam() + ": non-finite value in row with global id " +
                             std::to_string(1000 + shape.bad_row)),
                    std::string::npos) << msg << " (" << kernels::to_string(isa) << ")";
          EXPECT_NE(msg.find("column 7"), std::string::npos) << msg;
        }
      });
    }
  }
}

TEST_P(LossyCodec, IsNotLossless) { EXPECT_FALSE(make_codec(GetParam())->lossless()); }

std::vector<std::string> lossy_names() {
  std::vector<std::string> v;
  for (const auto& n : codec_names())
    if (n != "fp32") v.push_back(n);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Codecs, LossyCodec, ::testing::ValuesIn(lossy_names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

TEST(Fp16Codec, IsExactOnRepresentableValuesAndWithinHalfAnUlpOtherwise) {
  const auto codec = make_codec("fp16");
  // Every finite binary16 value round-trips exactly.
  Matrix exact(2 * 0x7C00 / 64, 64);
  auto h = exact.host();
  for (std::size_t k = 0; k < 0x7C00; ++k) {
    h[2 * k] = f16::half_to_float(static_cast<std::uint16_t>(k));
    h[2 * k + 1] = -h[2 * k];
  }
  const auto ids = iota_ids(exact.rows());
  const Matrix back = decode(*codec, encode(*codec, exact.view(), make_ctx(ids)), exact.rows(), 64, make_ctx(ids));
  for (std::size_t k = 0; k < h.size(); ++k) ASSERT_EQ(back.host()[k], h[k]) << k;
  // Rounding error: at most half an ulp, 2^-11 relative in the normal range and 2^-25 absolute
  // among subnormals; finite values from 65520 up overflow to inf, as IEEE rounding prescribes.
  Matrix x = random_block(64, 100, 9, 1.0f);
  for (std::int64_t i = 0; i < 64; ++i)
    for (std::int64_t j = 0; j < 100; ++j) x(i, j) = std::ldexp(x(i, j), static_cast<int>(i % 40) - 28);
  x(0, 0) = 65519.0f;
  x(0, 1) = 65520.0f;
  x(0, 2) = -3e38f;
  const auto ids2 = iota_ids(64);
  const Matrix y = decode(*codec, encode(*codec, x.view(), make_ctx(ids2)), 64, 100, make_ctx(ids2));
  EXPECT_EQ(y(0, 0), 65504.0f);
  EXPECT_EQ(y(0, 1), INFINITY);
  EXPECT_EQ(y(0, 2), -INFINITY);
  for (std::int64_t i = 0; i < 64; ++i)
    for (std::int64_t j = (i == 0 ? 3 : 0); j < 100; ++j) {
      const double v = x(i, j), err = std::fabs(static_cast<double>(y(i, j)) - v);
      ASSERT_LE(err, std::max(std::fabs(v) * std::ldexp(1.0, -11), std::ldexp(1.0, -25))) << v;
    }
}

TEST(Bf16Codec, IsExactOnRepresentableValuesAndWithinHalfAnUlpOtherwise) {
  const auto codec = make_codec("bf16");
  Matrix x = random_block(50, 77, 13, 1.0f);
  for (std::int64_t i = 0; i < 50; ++i)
    for (std::int64_t j = 0; j < 77; ++j) x(i, j) = std::ldexp(x(i, j), static_cast<int>(i * 5) - 130);
  const auto ids = iota_ids(50);
  const Matrix y = decode(*codec, encode(*codec, x.view(), make_ctx(ids)), 50, 77, make_ctx(ids));
  for (std::int64_t i = 0; i < 50; ++i)
    for (std::int64_t j = 0; j < 77; ++j) {
      const double v = x(i, j), err = std::fabs(static_cast<double>(y(i, j)) - v);
      // 2^-8 relative in the normal range; float32 subnormals keep 2^-134 absolute resolution.
      ASSERT_LE(err, std::max(std::fabs(v) * std::ldexp(1.0, -8), std::ldexp(1.0, -134))) << v;
      // The decoded value is a bf16 value: its low 16 float32 bits are zero.
      ASSERT_EQ(f16::float_bits(y(i, j)) & 0xFFFFu, 0u);
    }
  // Representable values come back exactly.
  const Matrix z = decode(*codec, encode(*codec, y.view(), make_ctx(ids)), 50, 77, make_ctx(ids));
  for (std::int64_t k = 0; k < 50 * 77; ++k) ASSERT_EQ(z.host()[k], y.host()[k]);
}

}  // namespace
}  // namespace halognn
