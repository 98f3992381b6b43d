// The stochastic b-bit codecs: bit packing, the wire layout, exactness where promised, the
// one-step error bound, unbiasedness and variance (Sylvie section 3.5), reproducibility and
// independence from how rows are grouped into blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compress/codec_plan.hpp"
#include "compress/float16.hpp"
#include "compress/quant_math.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "test/compress/codec_test_util.hpp"

namespace halognn {
namespace {

using test::decode;
using test::encode;
using test::iota_ids;
using test::make_ctx;

std::vector<std::string> quant_names() {
  std::vector<std::string> v;
  for (const auto& n : codec_names())
    if (n[0] == 'q') v.push_back(n);
  return v;
}

int bits_of(const std::string& name) { return name[1] - '0'; }
bool meta16(const std::string& name) { return name.find("meta") != std::string::npos; }

Matrix random_block(std::int64_t rows, std::int64_t cols, std::uint64_t salt) {
  Matrix m(rows, cols);
  const CounterRng rng({salt, RngPurpose::test, 2, 0});
  for (std::int64_t i = 0; i < rows; ++i) {
    // Rows of different scale and offset, so the per-row metadata matters.
    const float mag = std::ldexp(1.0f, static_cast<int>(i % 9) - 4), off = (i % 3 == 0) ? mag : 0.0f;
    for (std::int64_t j = 0; j < cols; ++j)
      m(i, j) = off + mag * (2.0f * rng.uniform(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j)) - 1.0f);
  }
  return m;
}

/// The (lo, scale) pair the metadata stores for row i (docs/codecs.md: metadata first, pairs).
std::pair<float, float> grid_of(const std::string& name, const std::vector<std::byte>& enc, std::int64_t i) {
  if (!meta16(name)) {
    float lo, scale;
    std::memcpy(&lo, enc.data() + 8 * i, 4);
    std::memcpy(&scale, enc.data() + 8 * i + 4, 4);
    return {lo, scale};
  }
  std::uint16_t lo, scale;
  std::memcpy(&lo, enc.data() + 4 * i, 2);
  std::memcpy(&scale, enc.data() + 4 * i + 2, 2);
  const bool half = name.find("fp16meta") != std::string::npos;
  return {half ? f16::half_to_float(lo) : f16::bf16_to_float(lo),
          half ? f16::half_to_float(scale) : f16::bf16_to_float(scale)};
}

/// Element k's b-bit integer, read from the payload by the documented rule (LSB-first).
std::uint32_t payload_value(const std::byte* payload, std::int64_t k, int bits) {
  std::uint32_t q = 0;
  for (int t = 0; t < bits; ++t) {
    const std::int64_t bit = k * bits + t;
    q |= ((std::to_integer<std::uint32_t>(payload[bit / 8]) >> (bit % 8)) & 1u) << t;
  }
  return q;
}

class QuantCodec : public ::testing::TestWithParam<std::string> {};

// Rows holding integers 0..B (each row containing both 0 and B) have lo = 0 and scale = 1
// exactly, so every value sits on the grid and quantization is deterministic: what comes back
// is exactly what went in, and the payload holds those integers at the documented bits.
TEST_P(QuantCodec, PacksAndUnpacksEveryWidthForOddShapes) {
  const std::string name = GetParam();
  const auto codec = make_codec(name);
  const int bits = bits_of(name);
  const std::uint32_t levels = (1u << bits) - 1;
  const CounterRng rng({3, RngPurpose::test, 0, 0});
  // On every instruction set the CPU has (the encode and decode loops are compiled per set).
  test::on_every_cpu_isa([&](kernels::CpuIsa isa) {
    for (std::int64_t rows : {1, 3, 7, 37})
      for (std::int64_t cols : {2, 5, 13, 33, 1111}) {
        Matrix x(rows, cols);
        for (std::int64_t i = 0; i < rows; ++i) {
          for (std::int64_t j = 0; j < cols; ++j)
            x(i, j) = static_cast<float>(rng.word(static_cast<std::uint64_t>(i * cols + j), 0) % (levels + 1));
          x(i, (i * 7) % cols) = 0.0f;
          x(i, (i * 7 + 1) % cols) = static_cast<float>(levels);
        }
        const auto ids = iota_ids(rows, 40);
        const auto ctx = make_ctx(ids, 3);
        const auto enc = encode(*codec, x.view(), ctx);
        const std::byte* payload = enc.data() + codec->encoded_size(rows, cols).metadata;
        for (std::int64_t i = 0; i < rows; ++i) {
          const auto [lo, scale] = grid_of(name, enc, i);
          ASSERT_EQ(lo, 0.0f);
          ASSERT_EQ(scale, 1.0f);
        }
        for (std::int64_t k = 0; k < rows * cols; ++k)
          ASSERT_EQ(payload_value(payload, k, bits), static_cast<std::uint32_t>(x.host()[k]))
              << kernels::to_string(isa) << " " << rows << " x " << cols << " element " << k;
        // Padding bits of the last byte are zero.
        const std::int64_t used_bits = rows * cols * bits;
        if (used_bits % 8) {
          EXPECT_EQ(std::to_integer<int>(enc.back()) >> (used_bits % 8), 0);
        }
        const Matrix y = decode(*codec, enc, rows, cols, ctx);
        for (std::int64_t k = 0; k < rows * cols; ++k)
          ASSERT_EQ(y.host()[k], x.host()[k]) << kernels::to_string(isa) << " " << rows << " x " << cols << " element " << k;
      }
  });
}

// Decoding is q * scale + lo (a multiply, then an add) for every stored value: checked against
// the payload and metadata read by the documented layout, for row widths that leave no tail, a
// vector tail and a row start inside a byte, on every instruction set the CPU has.
TEST_P(QuantCodec, DecodesByTheDocumentedFormulaOnEveryInstructionSet) {
  const std::string name = GetParam();
  const auto codec = make_codec(name);
  const int bits = bits_of(name);
  for (const std::int64_t cols : {5, 16, 64, 131}) {
    const std::int64_t rows = 41;
    const Matrix x = random_block(rows, cols, 17);
    const auto ids = iota_ids(rows, 3);
    const auto ctx = make_ctx(ids, 2);
    const auto enc = encode(*codec, x.view(), ctx);
    const std::byte* payload = enc.data() + codec->encoded_size(rows, cols).metadata;
    test::on_every_cpu_isa([&](kernels::CpuIsa isa) {
      const Matrix y = decode(*codec, enc, rows, cols, ctx);
      for (std::int64_t i = 0; i < rows; ++i) {
        const auto [lo, scale] = grid_of(name, enc, i);
        for (std::int64_t j = 0; j < cols; ++j) {
          const float product = static_cast<float>(payload_value(payload, i * cols + j, bits)) * scale;
          ASSERT_EQ(f16::float_bits(y(i, j)), f16::float_bits(product + lo))
              << kernels::to_string(isa) << " width " << cols << " row " << i << " column " << j;
        }
      }
    });
  }
}

// Every stored integer follows the documented rule (docs/codecs.md, "Encoding one row"), checked
// against the metadata the encoder wrote: x = (h - lo) * inv with inv = 1 / scale rounded to
// float32, or (h - lo) / scale where that reciprocal is not finite; xc = x clamped into [0, B];
// q = floor(xc) + (u < frac), u the element's 16 random bits times 2^-16 (half j % 2 of word
// j / 2 of the row's stream). Widths with tails, narrow rows drawn in batches of rows, and 600
// values (more than one batch of words); the last row's range, 1e-39, gives a scale whose
// reciprocal overflows (for fp32 and bf16 metadata), so it takes the division. On every
// instruction set the CPU has.
TEST_P(QuantCodec, QuantizesEveryValueByTheDocumentedRuleOnEveryInstructionSet) {
  const std::string name = GetParam();
  const auto codec = make_codec(name);
  const int bits = bits_of(name);
  const float levels = static_cast<float>((1u << bits) - 1u);
  bool divided = false;
  for (const std::int64_t cols : {5, 16, 61, 131, 600}) {
    const std::int64_t rows = 37;
    Matrix x = random_block(rows, cols, 23);
    for (std::int64_t j = 0; j < cols; ++j) x(rows - 1, j) = 1e-39f * static_cast<float>(j % 7) / 6.0f;
    const auto ids = iota_ids(rows, 11);
    const auto ctx = make_ctx(ids, 3, 77, 1, Direction::backward);
    const CounterRng rng({77, RngPurpose::quantize, 3, 3});
    test::on_every_cpu_isa([&](kernels::CpuIsa isa) {
      const auto enc = encode(*codec, x.view(), ctx);
      const std::byte* payload = enc.data() + codec->encoded_size(rows, cols).metadata;
      for (std::int64_t i = 0; i < rows; ++i) {
        const auto [lo, scale] = grid_of(name, enc, i);
        if (scale == 0.0f) continue;
        const float inv = 1.0f / scale;
        divided |= !std::isfinite(inv);
        for (std::int64_t j = 0; j < cols; ++j) {
          const float diff = x(i, j) - lo;
          const float pos = std::isfinite(inv) ? diff * inv : diff / scale;
          const float xc = std::min(std::max(pos, 0.0f), levels);
          const float f = std::floor(xc);
          const std::uint32_t w = rng.word(static_cast<std::uint64_t>(ids[i]), static_cast<std::uint64_t>(j / 2));
          const float u = static_cast<float>((w >> (16 * (j % 2))) & 0xFFFFu) / 65536.0f;
          const auto q = static_cast<std::uint32_t>(f) + (u < xc - f ? 1u : 0u);
          ASSERT_EQ(payload_value(payload, i * cols + j, bits), q)
              << kernels::to_string(isa) << " width " << cols << " row " << i << " column " << j;
        }
      }
    });
  }
  if (name.find("fp16meta") == std::string::npos) {
    EXPECT_TRUE(divided) << "no row took the division";
  }
}

// Every row's stored (lo, scale) is quant::make_grid of its minimum and maximum, bit for bit, on
// every instruction set: narrow rows (at most 64 values) compute their grids a vector of rows at
// a time (batch_grids; 16-bit metadata by its common cases, make_grid for the others), wider rows
// one by one. Ranges from subnormal (2^-140) to 2^120 (fp16: 2^12), so fp16 scales and minima are
// normal, subnormal and zero; both signs, constant rows, rows of signed zeros, rows whose
// minimum is 0; 300 rows, so narrow widths take several batches.
TEST_P(QuantCodec, StoresMakeGridsGridForEveryRowOnEveryInstructionSet) {
  const std::string name = GetParam();
  const auto codec = make_codec(name);
  const std::uint32_t levels = (1u << bits_of(name)) - 1u;
  const auto meta = name.find("fp16meta") != std::string::npos   ? quant::MetaFormat::f16
                    : name.find("bf16meta") != std::string::npos ? quant::MetaFormat::bf16
                                                                 : quant::MetaFormat::f32;
  for (const std::int64_t cols : {5, 16, 48, 61, 64, 131}) {
    const std::int64_t rows = 300;
    Matrix x(rows, cols);
    const CounterRng draw({static_cast<std::uint64_t>(cols), RngPurpose::test, 5, 0});
    for (std::int64_t i = 0; i < rows; ++i) {
      const auto u = [&](std::int64_t j) {
        return draw.uniform(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j));
      };
      // 16-bit metadata holds a smaller range (fp16: up to 65504), so its rows stay within it.
      const int top = meta == quant::MetaFormat::f16 ? 12 : 120;
      const int e = -140 + static_cast<int>(u(cols) * static_cast<float>(top + 140));
      const float mag = std::ldexp(1.0f, e), off = i % 4 == 0 ? mag * (u(cols + 1) - 0.5f) : 0.0f;
      for (std::int64_t j = 0; j < cols; ++j) x(i, j) = off + mag * (2.0f * u(j) - 1.0f);
      if (i % 29 == 5) std::fill(&x(i, 0), &x(i, 0) + cols, mag);
      if (i % 31 == 7)
        for (std::int64_t j = 0; j < cols; ++j) x(i, j) = j % 2 == 0 ? -0.0f : 0.0f;
      if (i % 37 == 11) {  // a ReLU output: lo exactly 0
        for (std::int64_t j = 0; j < cols; ++j) x(i, j) = std::fabs(x(i, j));
        x(i, cols / 2) = 0.0f;
      }
    }
    const auto ids = iota_ids(rows, 3);
    test::on_every_cpu_isa([&](kernels::CpuIsa isa) {
      const auto enc = encode(*codec, x.view(), make_ctx(ids));
      for (std::int64_t i = 0; i < rows; ++i) {
        const float* row = &x(i, 0);
        quant::RowGrid want;
        std::uint16_t lo_bits, scale_bits;
        ASSERT_EQ(quant::make_grid(*std::min_element(row, row + cols), *std::max_element(row, row + cols), levels,
                                   meta, want, lo_bits, scale_bits),
                  quant::GridStatus::ok);
        const auto [lo, scale] = grid_of(name, enc, i);
        ASSERT_EQ(f16::float_bits(lo), f16::float_bits(want.lo))
            << kernels::to_string(isa) << " width " << cols << " row " << i;
        ASSERT_EQ(f16::float_bits(scale), f16::float_bits(want.scale))
            << kernels::to_string(isa) << " width " << cols << " row " << i;
      }
    });
  }
}

TEST_P(QuantCodec, DecodesConstantRowsExactly) {
  const std::string name = GetParam();
  const auto codec = make_codec(name);
  // With fp32 metadata any constant decodes exactly. With 16-bit metadata lo is stored rounded
  // down, so exactness holds for values the metadata format represents (0 matters most: zero
  // rows from ReLU or unused gradients).
  const std::vector<float> values = meta16(name) ? std::vector<float>{0.0f, -0.0f, 0.5f, -2.5f, 96.0f}
                                                 : std::vector<float>{0.0f, 3.14159274f, -2.5e-3f, 1e30f, -7e-42f};
  Matrix x(static_cast<std::int64_t>(values.size()), 19);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    for (std::int64_t j = 0; j < 19; ++j) x(i, j) = values[static_cast<std::size_t>(i)];
  const auto ids = iota_ids(x.rows(), 9);
  for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
    const auto ctx = make_ctx(ids, epoch);
    const auto enc = encode(*codec, x.view(), ctx);
    const Matrix y = decode(*codec, enc, x.rows(), 19, ctx);
    for (std::int64_t i = 0; i < x.rows(); ++i) {
      EXPECT_EQ(grid_of(name, enc, i).second, 0.0f) << name << " row " << i;
      for (std::int64_t j = 0; j < 19; ++j) ASSERT_EQ(y(i, j), x(i, j)) << name << " row " << i;
    }
  }
}

TEST(QuantCodecMetadata, DecodesEverySixteenBitPatternAsTheScalarConversionOnEveryInstructionSet) {
  // Hand-made blocks: one row per 16-bit pattern p as lo and a permutation of the patterns as
  // scale (zeros, subnormals, normals, infinities, NaNs of both signs), the row's two values
  // q = 0 and q = B. Decoding must widen both halves as quant::meta16_value does (the decoders
  // widen a batch of rows' metadata at once, without branches) and apply decode_value.
  constexpr std::int64_t rows = 65536, cols = 2;
  for (const auto& name : quant_names()) {
    if (!meta16(name)) continue;
    const auto codec = make_codec(name);
    const int bits = bits_of(name);
    const std::uint32_t levels = (1u << bits) - 1u;
    const auto m = name.find("fp16meta") != std::string::npos ? quant::MetaFormat::f16 : quant::MetaFormat::bf16;
    const EncodedSize size = codec->encoded_size(rows, cols);
    std::vector<std::byte> enc(size.total(), std::byte{0});
    const auto scale_bits = [](std::int64_t i) { return static_cast<std::uint16_t>((i * 40503 + 7) & 0xFFFF); };
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::uint16_t lo = static_cast<std::uint16_t>(i), scale = scale_bits(i);
      std::memcpy(enc.data() + 4 * i, &lo, 2);
      std::memcpy(enc.data() + 4 * i + 2, &scale, 2);
      for (int b = 0; b < bits; ++b) {  // element 2i + 1 holds B (LSB-first), element 2i holds 0
        const std::int64_t bit = (2 * i + 1) * bits + b;
        const auto at = size.metadata + static_cast<std::size_t>(bit / 8);
        enc[at] |= std::byte{static_cast<unsigned char>(1u << (bit % 8))};
      }
    }
    const auto ids = iota_ids(rows);
    test::on_every_cpu_isa([&](kernels::CpuIsa isa) {
      const Matrix y = decode(*codec, enc, rows, cols, make_ctx(ids));
      for (std::int64_t i = 0; i < rows; ++i) {
        const quant::RowGrid g{quant::meta16_value(static_cast<std::uint16_t>(i), m),
                               quant::meta16_value(scale_bits(i), m)};
        for (std::int64_t j = 0; j < cols; ++j) {
          const float want = quant::decode_value(j == 0 ? 0u : levels, g), got = y(i, j);
          ASSERT_TRUE(f16::float_bits(got) == f16::float_bits(want) || (std::isnan(got) && std::isnan(want)))
              << name << " " << kernels::to_string(isa) << " lo bits " << i << " scale bits " << scale_bits(i)
              << " value " << j << ": " << got << " != " << want;
        }
      }
    });
  }
}

TEST(QuantCodecMetadata, DecodesNonRepresentableConstantsWithinOneStepUsingSixteenBitMetadata) {
  for (const auto& name : quant_names()) {
    if (!meta16(name)) continue;
    const auto codec = make_codec(name);
    Matrix x(1, 40);
    for (std::int64_t j = 0; j < 40; ++j) x(0, j) = 3.14159274f;
    const auto ids = iota_ids(1);
    const auto enc = encode(*codec, x.view(), make_ctx(ids));
    const auto [lo, scale] = grid_of(name, enc, 0);
    EXPECT_LT(lo, x(0, 0)) << name;
    EXPECT_GT(scale, 0.0f) << name;
    EXPECT_GE(lo + (std::pow(2.0f, bits_of(name)) - 1) * scale, x(0, 0)) << name;
    const Matrix y = decode(*codec, enc, 1, 40, make_ctx(ids));
    for (std::int64_t j = 0; j < 40; ++j) EXPECT_LE(std::fabs(y(0, j) - x(0, j)), scale) << name;
  }
}

// The bytes must not depend on the order in which a min/max reduction meets -0 and +0 (a CUDA
// reduction meets them in another order than the CPU loop).
TEST_P(QuantCodec, StoresSignedZeroBoundsAsPositiveZero) {
  const auto codec = make_codec(GetParam());
  Matrix x(4, 3);
  const float rows[4][3] = {{-0.0f, 0.0f, -0.0f}, {0.0f, -0.0f, 0.0f}, {-0.0f, 1.0f, 2.0f}, {-2.0f, -1.0f, -0.0f}};
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < 3; ++j) x(i, j) = rows[i][j];
  const auto ids = iota_ids(4);
  const auto enc = encode(*codec, x.view(), make_ctx(ids));
  const std::size_t meta_bytes = codec->encoded_size(4, 3).metadata / 4;
  for (std::int64_t i = 0; i < 3; ++i)  // rows 0-2 have lo = 0, rows 0-1 also scale = 0
    for (std::size_t b = 0; b < meta_bytes / 2; ++b)
      ASSERT_EQ(enc[i * meta_bytes + b], std::byte{0}) << GetParam() << " row " << i << " byte " << b;
  for (std::size_t b = 0; b < meta_bytes; ++b) ASSERT_EQ(enc[b], enc[meta_bytes + b]);
}

// In exact arithmetic h~ is one of the two grid points around h, so |h~ - h| <= scale. The float
// evaluation adds at most: the rounding of x = (h - lo) / scale (two roundings, relative 2^-24
// each, i.e. <= 2^-22 * B * scale after multiplying back) and the two roundings of the decode
// (each <= 2^-24 * (|lo| + B * scale)). The slack below, 2^-20 * (|lo| + B * scale), covers both.
TEST_P(QuantCodec, DecodesWithinOneQuantizationStep) {
  const std::string name = GetParam();
  const auto codec = make_codec(name);
  const double levels = std::pow(2.0, bits_of(name)) - 1;
  const Matrix x = random_block(45, 77, 21);
  const auto ids = iota_ids(45, 7);
  for (std::int64_t epoch = 0; epoch < 4; ++epoch) {
    const auto ctx = make_ctx(ids, epoch);
    const auto enc = encode(*codec, x.view(), ctx);
    const Matrix y = decode(*codec, enc, 45, 77, ctx);
    for (std::int64_t i = 0; i < 45; ++i) {
      const auto [lo, scale] = grid_of(name, enc, i);
      double mn = x(i, 0), mx = x(i, 0);
      for (std::int64_t j = 0; j < 77; ++j) mn = std::min<double>(mn, x(i, j)), mx = std::max<double>(mx, x(i, j));
      // The stored grid covers the row (directed rounding), and is not much coarser than needed.
      ASSERT_LE(lo, mn);
      ASSERT_GE(lo + levels * scale, mx);
      const double tight = (mx - mn) / levels;
      const double coarsen = meta16(name) ? (name.find("fp16") != std::string::npos ? 2.0 / 1024 : 2.0 / 128) : 1e-6;
      ASSERT_LE(scale, (tight + (mn - lo) / levels) * (1 + coarsen) + 1e-30);
      const double slack = std::ldexp(std::fabs(lo) + levels * scale, -20);
      for (std::int64_t j = 0; j < 77; ++j)
        ASSERT_LE(std::fabs(static_cast<double>(y(i, j)) - x(i, j)), scale + slack)
            << name << " row " << i << " col " << j;
    }
  }
}

// Statistics over n = 4096 independent epochs (each epoch is an independent Philox stream).
// Per element the decoded value is lo + scale * (f + Bernoulli(p)), p = frac((h - lo) / scale):
//  * mean: its sample mean has sd = scale * sqrt(p(1-p) / n) <= scale / (2 sqrt n); we require
//    |mean - h| <= 6 * scale / (2 sqrt n) (+ float slack). With the normal approximation a
//    correct codec fails one element with probability <= 2e-9, so all 12 codecs x 192 elements
//    with probability <= 5e-6.
//  * variance: the sample variance of a Bernoulli over n draws has sd
//    sqrt(p(1-p)(1 - 4p(1-p)) / n) <= 1 / (4 sqrt n) (in units of scale^2); we require
//    |var / scale^2 - p(1-p)| <= 6 / (4 sqrt n) per element, same false-failure bound.
//  * aggregate: the mean over all m = 192 elements of var / scale^2 - p(1-p) has sd
//    <= 1 / (4 sqrt(n m)); required within 6 of those: detects a systematic variance error of
//    about 0.0017 scale^2.
// The seeds are fixed, so the outcome is reproducible; the bounds say how unlikely a failure of
// a correct implementation would have been for a random seed.
TEST_P(QuantCodec, IsUnbiasedWithTheVarianceOfSylviesAnalysis) {
  const std::string name = GetParam();
  const auto codec = make_codec(name);
  constexpr std::int64_t rows = 3, cols = 64, n = 4096, m = rows * cols;
  const Matrix x = random_block(rows, cols, 33);
  const auto ids = iota_ids(rows, 12345);
  std::vector<double> sum(m, 0.0), sum2(m, 0.0);
  std::vector<float> lo(rows), scale(rows);
  for (std::int64_t epoch = 0; epoch < n; ++epoch) {
    const auto ctx = make_ctx(ids, epoch, 99, 2, Direction::backward);
    const auto enc = encode(*codec, x.view(), ctx);
    const Matrix y = decode(*codec, enc, rows, cols, ctx);
    for (std::int64_t k = 0; k < m; ++k) {
      sum[k] += y.host()[k];
      sum2[k] += static_cast<double>(y.host()[k]) * y.host()[k];
    }
    if (epoch == 0)
      for (std::int64_t i = 0; i < rows; ++i) std::tie(lo[i], scale[i]) = grid_of(name, enc, i);
  }
  const double levels = std::pow(2.0, bits_of(name)) - 1;
  double agg = 0.0;
  for (std::int64_t k = 0; k < m; ++k) {
    const std::int64_t i = k / cols;
    const double s = scale[i], h = x.host()[k];
    const double mean = sum[k] / n;
    const double var = (sum2[k] - n * mean * mean) / (n - 1);
    const double t = (h - lo[i]) / s, p = t - std::floor(t);
    const double slack = std::ldexp(std::fabs(lo[i]) + levels * s, -20);
    ASSERT_LE(std::fabs(mean - h), 6 * s / (2 * std::sqrt(double(n))) + slack) << name << " element " << k;
    ASSERT_LE(std::fabs(var / (s * s) - p * (1 - p)), 6 / (4 * std::sqrt(double(n))) + 1e-4) << name << " element " << k;
    agg += var / (s * s) - p * (1 - p);
  }
  EXPECT_LE(std::fabs(agg / m), 6 / (4 * std::sqrt(double(n * m))) + 1e-5) << name;
}

// Sylvie's Theorem 1: when the fractional positions are uniform, the row's total variance is
// D * (max - min)^2 / (6 B^2) = D scale^2 / 6. A row whose values sit at evenly spread fractions
// has sum_j p_j (1 - p_j) = D/6 up to O(1/D); the empirical total over n = 2048 epochs must
// match D/6 within 0.5% + a statistical margin (sd of the total <= sqrt(D / 16 / n)).
TEST(QuantCodecVariance, MatchesSylviesTotalRowVarianceForUniformFractions) {
  constexpr std::int64_t d = 256, n = 2048;
  for (const char* name : {"q1", "q2", "q4", "q8"}) {
    const auto codec = make_codec(name);
    const double levels = std::pow(2.0, bits_of(name)) - 1;
    // d values at levels * (j + 0.5) / d (fractions evenly spread over (0, 1)), then the two
    // end points 0 and levels, which make lo = 0 and scale = 1 and add no variance.
    Matrix x(1, d + 2);
    for (std::int64_t j = 0; j < d; ++j) x(0, j) = static_cast<float>(levels * (j + 0.5) / d);
    x(0, d) = 0.0f;
    x(0, d + 1) = static_cast<float>(levels);
    const auto ids = iota_ids(1, 77);
    std::vector<double> sum(d + 2, 0.0), sum2(d + 2, 0.0);
    for (std::int64_t e = 0; e < n; ++e) {
      const auto ctx = make_ctx(ids, e);
      const Matrix y = decode(*codec, encode(*codec, x.view(), ctx), 1, d + 2, ctx);
      for (std::int64_t j = 0; j < d + 2; ++j) sum[j] += y(0, j), sum2[j] += double(y(0, j)) * y(0, j);
    }
    double total = 0.0;
    for (std::int64_t j = 0; j < d + 2; ++j) total += (sum2[j] - sum[j] * sum[j] / n) / (n - 1);
    const double theorem = d / 6.0;  // D (max - min)^2 / (6 B^2) with scale = 1
    EXPECT_NEAR(total, theorem, 0.005 * theorem + 6 * std::sqrt(d / 16.0 / n)) << name;
  }
}

// The rounding draw of element (row id r, column j) is 16 bits of the stream CounterRng(RngKey{
// seed, quantize, epoch, layer*2+direction}): half j % 2 (the low half for even j) of word(r,
// j / 2), times 2^-16. With one bit, lo = 0, hi = 1 and h in (0, 1), q = 1 exactly when that
// draw is below h.
// Shapes: a few rows of 50; 600 rows of 16 and 300 of 61, whose words the encoder draws many
// rows at a time (rows of at most 64 values), over several such batches and work items.
TEST(QuantCodecRng, DrawsFromTheDocumentedCounterRngStream) {
  const auto codec = make_codec("q1");
  for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{4, 50}, {600, 16}, {300, 61}}) {
    Matrix x(rows, cols);
    const CounterRng vals({5, RngPurpose::test, 0, 0});
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) x(i, j) = vals.uniform(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j));
      x(i, 0) = 0.0f;
      x(i, 1) = 1.0f;
    }
    std::vector<GlobalId> ids = {5, 1LL << 40, 17, 3};
    for (std::int64_t i = 4; i < rows; ++i) ids.push_back(i % 5 == 0 ? (i << 33) + 1 : 11 * i);
    test::on_every_cpu_isa([&](kernels::CpuIsa isa) {
      for (auto [layer, dir] : {std::pair{0, Direction::forward}, std::pair{2, Direction::backward}}) {
        const auto ctx = make_ctx(ids, 11, 1234, layer, dir);
        const Matrix y = decode(*codec, encode(*codec, x.view(), ctx), rows, cols, ctx);
        const CounterRng rng({1234, RngPurpose::quantize, 11, static_cast<std::uint64_t>(layer * 2 + static_cast<int>(dir))});
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t j = 2; j < cols; ++j) {
            const std::uint32_t w = rng.word(static_cast<std::uint64_t>(ids[i]), static_cast<std::uint64_t>(j / 2));
            const float u = static_cast<float>((w >> (16 * (j % 2))) & 0xFFFFu) / 65536.0f;
            ASSERT_EQ(y(i, j), u < x(i, j) ? 1.0f : 0.0f)
                << kernels::to_string(isa) << ", " << rows << " x " << cols << " at " << i << "," << j;
          }
      }
    });
  }
}

TEST_P(QuantCodec, ChangesItsBytesWithEpochSeedLayerAndDirection) {
  const auto codec = make_codec(GetParam());
  const Matrix x = random_block(6, 40, 8);
  const auto ids = iota_ids(6, 300);
  const auto base = encode(*codec, x.view(), make_ctx(ids, 5, 7, 1, Direction::forward));
  EXPECT_EQ(base, encode(*codec, x.view(), make_ctx(ids, 5, 7, 1, Direction::forward)));
  EXPECT_NE(base, encode(*codec, x.view(), make_ctx(ids, 6, 7, 1, Direction::forward)));
  EXPECT_NE(base, encode(*codec, x.view(), make_ctx(ids, 5, 8, 1, Direction::forward)));
  EXPECT_NE(base, encode(*codec, x.view(), make_ctx(ids, 5, 7, 2, Direction::forward)));
  EXPECT_NE(base, encode(*codec, x.view(), make_ctx(ids, 5, 7, 1, Direction::backward)));
  const auto other_ids = iota_ids(6, 301);
  EXPECT_NE(base, encode(*codec, x.view(), make_ctx(other_ids, 5, 7, 1, Direction::forward)));
}

// Keys are per global row id, so a row decodes the same whether it travels in one block or
// another, in any order: the encoding does not depend on the rank count or the peer.
TEST_P(QuantCodec, DecodesARowTheSameWhicheverBlockCarriesIt) {
  const auto codec = make_codec(GetParam());
  const Matrix x = random_block(10, 29, 4);
  const auto ids = iota_ids(10, 1000);
  const auto whole_ctx = make_ctx(ids, 2);
  const Matrix whole = decode(*codec, encode(*codec, x.view(), whole_ctx), 10, 29, whole_ctx);
  for (std::int64_t split : {1, 4, 9}) {
    const std::vector<GlobalId> ids_a(ids.begin(), ids.begin() + split), ids_b(ids.begin() + split, ids.end());
    const auto ca = make_ctx(ids_a, 2), cb = make_ctx(ids_b, 2);
    const Matrix a = decode(*codec, encode(*codec, x.view().rows_range(0, split), ca), split, 29, ca);
    const Matrix b = decode(*codec, encode(*codec, x.view().rows_range(split, 10), cb), 10 - split, 29, cb);
    for (std::int64_t j = 0; j < 29; ++j) {
      for (std::int64_t i = 0; i < split; ++i) ASSERT_EQ(a(i, j), whole(i, j));
      for (std::int64_t i = split; i < 10; ++i) ASSERT_EQ(b(i - split, j), whole(i, j));
    }
  }
  // Reversed row order.
  Matrix rev(10, 29);
  std::vector<GlobalId> rev_ids(10);
  for (std::int64_t i = 0; i < 10; ++i) {
    rev_ids[i] = ids[9 - i];
    for (std::int64_t j = 0; j < 29; ++j) rev(i, j) = x(9 - i, j);
  }
  const auto rc = make_ctx(rev_ids, 2);
  const Matrix r = decode(*codec, encode(*codec, rev.view(), rc), 10, 29, rc);
  for (std::int64_t i = 0; i < 10; ++i)
    for (std::int64_t j = 0; j < 29; ++j) ASSERT_EQ(r(i, j), whole(9 - i, j));
}

// A block large enough to be encoded by several threads in byte-aligned chunks decodes exactly
// like its rows encoded one at a time (small blocks run on one thread).
TEST_P(QuantCodec, DecodesALargeParallelBlockLikeItsRowsEncodedAlone) {
  const auto codec = make_codec(GetParam());
  constexpr std::int64_t rows = 40, cols = 1501;
  const Matrix x = random_block(rows, cols, 6);
  const auto ids = iota_ids(rows, 70);
  const auto ctx = make_ctx(ids, 1);
  const Matrix whole = decode(*codec, encode(*codec, x.view(), ctx), rows, cols, ctx);
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::vector<GlobalId> one = {ids[i]};
    const auto c1 = make_ctx(one, 1);
    const Matrix r = decode(*codec, encode(*codec, x.view().rows_range(i, i + 1), c1), 1, cols, c1);
    for (std::int64_t j = 0; j < cols; ++j) ASSERT_EQ(r(0, j), whole(i, j)) << i << "," << j;
  }
}

TEST_P(QuantCodec, NeedsGlobalRowIds) {
  const auto codec = make_codec(GetParam());
  const Matrix x = random_block(2, 3, 1);
  CodecContext ctx;
  std::vector<std::byte> out(codec->encoded_size(2, 3).total());
  EXPECT_THROW(codec->encode(*cpu_device(), x.view(), ctx, out), Error);
}

INSTANTIATE_TEST_SUITE_P(Codecs, QuantCodec, ::testing::ValuesIn(quant_names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

std::string encode_error(const std::string& name, std::vector<float> row) {
  const auto codec = make_codec(name);
  Matrix x(1, static_cast<std::int64_t>(row.size()));
  for (std::size_t j = 0; j < row.size(); ++j) x(0, static_cast<std::int64_t>(j)) = row[j];
  const std::vector<GlobalId> ids = {42};
  try {
    encode(*codec, x.view(), make_ctx(ids));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(QuantCodecRange, RejectsRowsWhoseGridOverflowsNamingTheRow) {
  // max - min overflows float32 as a one-bit scale.
  auto msg = encode_error("q1", {-3e38f, 3e38f});
  EXPECT_NE(msg.find("codec q1: cannot quantize row with global id 42"), std::string::npos) << msg;
  // fp16 metadata cannot hold a minimum below -65504 ...
  msg = encode_error("q4-fp16meta", {-1e5f, 0.0f});
  EXPECT_NE(msg.find("below the fp16 metadata range"), std::string::npos) << msg;
  // ... nor a one-bit scale above 65504, though eight bits divide the range enough.
  msg = encode_error("q1-fp16meta", {1e5f, 2e5f});
  EXPECT_NE(msg.find("fp16"), std::string::npos) << msg;
  EXPECT_EQ(encode_error("q8-fp16meta", {1e5f, 2e5f}), "");
  // bf16 metadata shares float32's range.
  EXPECT_EQ(encode_error("q1-bf16meta", {-1e30f, 1e30f}), "");
  // A range beyond FLT_MAX cannot be dequantized (q * scale overflows) at any width.
  msg = encode_error("q8", {-3e38f, 3e38f});
  EXPECT_NE(msg.find("overflows float32"), std::string::npos) << msg;
  EXPECT_EQ(encode_error("q8", {-1e38f, 1e38f}), "");
}

}  // namespace
}  // namespace halognn
