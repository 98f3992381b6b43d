// Pins the exact bytes every codec writes for fixed inputs and contexts. The CPU codecs are
// specified operation by operation (docs/codecs.md, quant_math.hpp) and the CUDA codecs must
// reproduce them, so a faster CPU encoder must not change a single byte. fp32/fp16/bf16 were
// recorded from the scalar reference implementation before it was vectorised; the q codecs were
// re-recorded on 2026-11-29, when the format moved to 16-bit draws and reciprocal grid positions
// (QuantCodec.QuantizesEveryValueByTheDocumentedRuleOnEveryInstructionSet checks those bytes
// value by value against the documented rule).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "compress/codec_plan.hpp"
#include "compress/float16.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "core/rng.hpp"
#include "test/compress/codec_test_util.hpp"

namespace halognn {
namespace {

using test::encode;
using test::make_ctx;

/// FNV-1a over bytes, continuing from `h`.
std::uint64_t fnv1a(const std::vector<std::byte>& bytes, std::uint64_t h) {
  for (const std::byte b : bytes) {
    h ^= std::to_integer<std::uint64_t>(b);
    h *= 0x100000001B3ull;
  }
  return h;
}

/// A block whose rows exercise the codecs' cases, by row index modulo 7: plain values of a
/// per-row magnitude and offset, ReLU-like rows (zeros, negative zeros), tiny values (fp16
/// subnormals and values below them), constant rows, huge values (beyond fp16 when `huge`),
/// values that sit exactly on a 1/4 grid, and a single spike in a row of zeros.
Matrix pinned_block(std::int64_t rows, std::int64_t cols, std::uint64_t salt, bool huge) {
  Matrix m(rows, cols);
  const CounterRng rng({salt, RngPurpose::test, 9, 1});
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const float u = 2.0f * rng.uniform(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j)) - 1.0f;
      const float mag = std::ldexp(1.0f, static_cast<int>(i % 11) - 5);
      float v = 0.0f;
      switch (i % 7) {
        case 0: v = (i % 3 == 0 ? mag : 0.0f) + mag * u; break;
        case 1: v = u > 0.0f ? u : (j % 5 == 0 ? -0.0f : 0.0f); break;
        case 2: v = u * (j % 2 == 0 ? 1e-6f : 3e-9f); break;
        case 3: v = 0.3f; break;
        case 4: v = u * (huge ? 9e4f : 3e4f); break;
        case 5: v = std::floor(u * 16.0f) * 0.25f; break;
        default: v = (j == i % cols) ? 5.0f : 0.0f; break;
      }
      m(i, j) = v;
    }
  return m;
}

/// Hash of the codec's bytes for several shapes and contexts: a single element, odd shapes, a
/// width-16 block, and a block large enough for the parallel path, whose chunk boundaries fall
/// mid-row and mid-Philox-block. Row ids are sparse and some need more than 32 bits.
std::uint64_t codec_hash(const std::string& name) {
  const auto codec = make_codec(name);
  const bool quant = name[0] == 'q';
  const std::int64_t shapes[][2] = {{1, 1}, {5, 3}, {37, 131}, {64, 16}, {23, 1501}, {9, 257}};
  std::uint64_t h = 0xCBF29CE484222325ull;
  std::uint64_t salt = 1;
  for (const auto& s : shapes) {
    const Matrix x = pinned_block(s[0], s[1], salt, !quant);
    std::vector<GlobalId> ids(static_cast<std::size_t>(s[0]));
    for (std::int64_t i = 0; i < s[0]; ++i)
      ids[i] = i * 7919 + 13 + (i % 2 == 1 ? (GlobalId{1} << 40) : 0);
    const auto fwd = make_ctx(ids, static_cast<std::int64_t>(salt), 7, 1, Direction::forward);
    const auto bwd = make_ctx(ids, 3, 1234567, 2, Direction::backward);
    h = fnv1a(encode(*codec, x.view(), fwd), h);
    h = fnv1a(encode(*codec, x.view(), bwd), h);
    ++salt;
  }
  return h;
}

TEST(CodecBytes, EveryCodecWritesExactlyTheRecordedBytes) {
  // A change here is a wire-format change and breaks CPU/GPU equality.
  const std::map<std::string, std::uint64_t> expected = {
      {"fp32", 0x0646AD716364CA31ull},
      {"fp16", 0x7DD928718213B6A5ull},
      {"bf16", 0xBDF284AF4526395Dull},
      {"q8", 0x0943992DD250E99Full},
      {"q4", 0x8BACB93150DE5B61ull},
      {"q2", 0x4B99990BC75A204Cull},
      {"q1", 0xC812728677B92184ull},
      {"q8-fp16meta", 0x88026D609445CDB9ull},
      {"q4-fp16meta", 0x877CAEF64C77F2BCull},
      {"q2-fp16meta", 0xE93269C50C9A089Eull},
      {"q1-fp16meta", 0x0B7890AD294FA6C8ull},
      {"q8-bf16meta", 0xDBEB704F5090F172ull},
      {"q4-bf16meta", 0xA8824F7B92885D4Full},
      {"q2-bf16meta", 0x764DDFCAF0FC7333ull},
      {"q1-bf16meta", 0x9ABABC876B5DA35Dull},
  };
  // On every instruction set the CPU has: the loops differ, the bytes must not.
  test::on_every_cpu_isa([&](kernels::CpuIsa isa) {
    for (const auto& [name, hash] : expected)
      EXPECT_EQ(codec_hash(name), hash) << name << " on " << kernels::to_string(isa)
                                        << " now hashes to 0x" << std::hex << codec_hash(name);
  });
}

// The fp16 encoder converts many values at once without the scalar function's branches; on every
// instruction set it must agree with f16::float_to_half on every exponent, at and around every
// rounding boundary, for normal, subnormal, overflowing and zero results of both signs.
TEST(CodecBytes, Fp16EncodeMatchesTheScalarConversionAcrossEveryExponent) {
  const auto codec = make_codec("fp16");
  const std::uint32_t lows[] = {0x0000u, 0x0001u, 0x0FFFu, 0x1000u, 0x1001u, 0x2000u,
                                0x7FFFu, 0x8000u, 0x8001u, 0xE000u, 0xEFFFu, 0xFFFFu};
  constexpr std::int64_t cols = 12;
  std::vector<float> values;
  for (std::uint32_t hi = 0; hi < 0x10000u; ++hi) {
    if ((hi & 0x7F80u) == 0x7F80u) continue;  // inf and NaN are rejected, not converted
    for (const std::uint32_t lo : lows) values.push_back(f16::bits_float((hi << 16) | lo));
  }
  const auto rows = static_cast<std::int64_t>(values.size()) / cols;
  std::vector<GlobalId> ids(static_cast<std::size_t>(rows), 0);
  test::on_every_cpu_isa([&](kernels::CpuIsa isa) {
    const auto out = encode(*codec, ConstDenseView(values.data(), rows, cols), make_ctx(ids));
    for (std::size_t k = 0; k < values.size(); ++k) {
      const std::uint16_t got = static_cast<std::uint16_t>(std::to_integer<unsigned>(out[2 * k]) |
                                                           (std::to_integer<unsigned>(out[2 * k + 1]) << 8));
      ASSERT_EQ(got, f16::float_to_half(values[k]))
          << kernels::to_string(isa) << " bits 0x" << std::hex << f16::float_bits(values[k]);
    }
  });
}

// The fp16 decoder widens many values at once (F16C where the set has it); on every instruction
// set each finite half pattern, and inf, must come back as f16::half_to_float gives it, in a
// block whose length is no multiple of any vector width.
TEST(CodecBytes, Fp16DecodeMatchesTheScalarConversionForEveryPattern) {
  const auto codec = make_codec("fp16");
  std::vector<std::uint16_t> halves;
  for (std::uint32_t h = 0; h < 0x10000u; ++h)
    if ((h & 0x7FFFu) <= 0x7C00u) halves.push_back(static_cast<std::uint16_t>(h));  // not NaN
  const std::int64_t cols = 7;  // 63,490 patterns: 9,070 rows, the last 2048-value step 34 long
  ASSERT_EQ(halves.size() % cols, 0u);
  const auto rows = static_cast<std::int64_t>(halves.size()) / cols;
  std::vector<std::byte> wire(halves.size() * 2);
  std::memcpy(wire.data(), halves.data(), wire.size());
  std::vector<GlobalId> ids(static_cast<std::size_t>(rows), 0);
  test::on_every_cpu_isa([&](kernels::CpuIsa isa) {
    const Matrix y = test::decode(*codec, wire, rows, cols, make_ctx(ids));
    for (std::size_t k = 0; k < halves.size(); ++k)
      ASSERT_EQ(f16::float_bits(y.host()[k]), f16::float_bits(f16::half_to_float(halves[k])))
          << kernels::to_string(isa) << " half 0x" << std::hex << halves[k];
  });
}

// The batched Philox helper the quantizing encoder uses returns exactly CounterRng::block's words,
// also when the 64-bit block index carries from its low into its high word.
// On every instruction set the CPU has (the vector code differs, the words must not).
TEST(CodecBytes, BatchedPhiloxBlocksEqualSingleBlocks) {
  const CounterRng rng({99, RngPurpose::quantize, 4, 3});
  const std::uint64_t items[] = {0, 17, (1ull << 40) + 5, ~0ull};
  const std::uint64_t starts[] = {0, 1, 1000, 0xFFFFFFF0ull, (7ull << 32) + 3};
  test::on_every_cpu_isa([&](kernels::CpuIsa isa) {
    for (const std::uint64_t item : items)
      for (const std::uint64_t start : starts)
        for (const std::int64_t count : {1, 3, 64, 65, 200}) {
          std::vector<std::uint32_t> got(static_cast<std::size_t>(4 * count));
          rng.blocks(item, start, count, got.data());
          for (std::int64_t b = 0; b < count; ++b) {
            std::uint32_t w[4];
            rng.block(item, start + static_cast<std::uint64_t>(b), w);
            for (int t = 0; t < 4; ++t)
              ASSERT_EQ(got[4 * b + t], w[t]) << kernels::to_string(isa) << " " << item << " " << start << " " << b;
          }
        }
  });
}

// The rows-at-once form (CounterRng::item_blocks, the narrow rows' encoder and dropout) returns
// block(item, b) for each item's first blocks, item after item: lane counts that end mid-vector
// and mid-group, a block count of a vector and more, items above 2^32 and negative ids.
TEST(CodecBytes, ItemBlocksEqualSingleBlocks) {
  const CounterRng rng({99, RngPurpose::quantize, 4, 3});
  std::vector<std::int64_t> items;
  for (std::int64_t r = 0; r < 37; ++r) items.push_back(r % 3 == 0 ? (r << 35) + 7 : 5 * r + 1);
  items.push_back(-1);
  test::on_every_cpu_isa([&](kernels::CpuIsa isa) {
    for (const std::int64_t n : {std::int64_t{1}, std::int64_t{5}, static_cast<std::int64_t>(items.size())})
      for (const std::int64_t per_item : {1, 3, 4, 8, 16, 17, 32, 70}) {
        std::vector<std::uint32_t> got(static_cast<std::size_t>(4 * n * per_item));
        rng.item_blocks(items.data(), n, per_item, got.data());
        for (std::int64_t r = 0; r < n; ++r)
          for (std::int64_t b = 0; b < per_item; ++b) {
            std::uint32_t w[4];
            rng.block(static_cast<std::uint64_t>(items[r]), static_cast<std::uint64_t>(b), w);
            for (int t = 0; t < 4; ++t)
              ASSERT_EQ(got[4 * (r * per_item + b) + t], w[t])
                  << kernels::to_string(isa) << " n " << n << " per item " << per_item << " row " << r << " block " << b;
          }
      }
  });
}

}  // namespace
}  // namespace halognn
