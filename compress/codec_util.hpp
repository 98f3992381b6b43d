#pragma once
/// @file codec_util.hpp
/// Internal helpers shared by the CPU codec implementations (not part of the public API).
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "compress/codec.hpp"
#include "compress/float16.hpp"
#include "core/error.hpp"

namespace halognn::codec_detail {

// The wire formats are defined little-endian; the CPU codecs memcpy host values.
static_assert(std::endian::native == std::endian::little, "halognn codecs assume a little-endian host");

/// Blocks with fewer elements than this run on the calling thread: a halo block for one peer
/// can be a few rows, and waking the OpenMP team would cost more than the work.
constexpr std::int64_t kParallelMinElements = 1 << 15;

/// The rows of a block being encoded: a matrix's rows in order, or, gathered, row i is
/// src.row(index[i]) (Codec::encode_gathered).
struct BlockRows {
  ConstDenseView src;
  const LocalId* index = nullptr;
  std::int64_t rows = 0, cols = 0;
  BlockRows(ConstDenseView m) : src(m), rows(m.rows), cols(m.cols) {}  // NOLINT: a plain block
  BlockRows(ConstDenseView m, const LocalId* idx, std::int64_t count)
      : src(m), index(idx), rows(count), cols(m.cols) {}
  const float* row(std::int64_t i) const { return src.row(index ? index[i] : i); }
};

/// dst[j] += src[j] for j < n: one IEEE add a value, so a decoded row added in place gives the
/// bits of decoding it and then adding it (Codec::decode_scattered).
inline void add_row(const float* src, float* dst, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) dst[j] += src[j];
}

/// Throws unless the codec can run on `dev` and the buffer has exactly the expected size.
inline void check_call(const Codec& codec, const Device& dev, std::size_t buffer_bytes,
                       std::int64_t rows, std::int64_t cols, const char* what) {
  if (!dev.is_host())
    throw Error("codec " + codec.name() + ": " + what + " on " + dev.name() +
                " is not implemented (the codecs run on the CPU only)");
  GNN_ASSERT(rows >= 0 && cols >= 0, "codec ", codec.name(), ": negative shape");
  const std::size_t expect = codec.encoded_size(rows, cols).total();
  GNN_ASSERT(buffer_bytes == expect, "codec ", codec.name(), ": ", what, " buffer has ",
             buffer_bytes, " bytes, the ", rows, " x ", cols, " block needs ", expect);
}

/// Text naming a row in error messages: its global id when the context has ids.
inline std::string row_label(const CodecContext& ctx, std::int64_t i) {
  if (ctx.row_ids) return "row with global id " + std::to_string(ctx.row_ids[i]);
  return "a row without global id";
}

/// Index of the first non-finite value of a row, or -1.
inline std::int64_t first_non_finite(const float* row, std::int64_t cols) {
  for (std::int64_t j = 0; j < cols; ++j)
    if (!f16::is_finite(row[j])) return j;
  return -1;
}

/// Throws the error for the first row with a non-finite value, if any (rows were checked in
/// parallel; `bad[i]` != 0 marks them). The smallest block row is reported, so the message does
/// not depend on thread timing.
inline void throw_first_non_finite(const Codec& codec, const BlockRows& rows,
                                   const CodecContext& ctx,
                                   const std::vector<std::uint8_t>& bad) {
  for (std::int64_t i = 0; i < rows.rows; ++i) {
    if (!bad[i]) continue;
    const std::int64_t j = first_non_finite(rows.row(i), rows.cols);
    const float v = rows.row(i)[j];
    const std::string value = v != v ? "nan" : (v > 0 ? "inf" : "-inf");
    throw Error("codec " + codec.name() + ": non-finite value in " + row_label(ctx, i) +
                " (block row " + std::to_string(i) + ", column " + std::to_string(j) + ": " +
                value + "); the model diverged or its input holds NaN/Inf");
  }
}

}  // namespace halognn::codec_detail
