#pragma once
/// @file codec.hpp
/// The codec seam between packing boundary rows and the transport. A codec turns a block of
/// packed rows (the rows one rank sends one peer, for one layer and direction) into bytes and
/// back. Sizes are a pure function of (rows, cols), so the receiver knows how many bytes to
/// expect without a size message, and every byte the transport moves is accounted for as payload
/// or metadata.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/buffer.hpp"
#include "core/types.hpp"

namespace halognn {

enum class Direction : std::uint8_t { forward = 0, backward = 1 };

inline const char* to_string(Direction d) { return d == Direction::forward ? "fwd" : "bwd"; }

/// Bytes of one encoded block.
struct EncodedSize {
  std::size_t payload = 0;   ///< the values themselves
  std::size_t metadata = 0;  ///< per-row scales/offsets, indices, headers
  std::size_t total() const { return payload + metadata; }
};

/// Identifies the random stream of one block: stochastic codecs key their rounding on
/// (seed, epoch, layer, direction, global id of the row), so the encoding of a row does not
/// depend on the rank count or on which peer it is sent to.
struct CodecContext {
  std::uint64_t seed = 0;
  std::int64_t epoch = 0;
  std::int32_t layer = 0;
  Direction direction = Direction::forward;
  /// Global id of each row of the block, on the same device as the rows.
  const GlobalId* row_ids = nullptr;
};

class Codec {
 public:
  virtual ~Codec() = default;
  /// Short name as given on the command line ("fp32", "q1", ...).
  virtual std::string name() const = 0;
  /// True when decode(encode(x)) == x bit for bit.
  virtual bool lossless() const = 0;
  /// True when the encoded block of a rows x cols view is exactly its rows as float32, row after
  /// row, with no metadata: the halo exchange then gathers into and scatters from the message
  /// bytes themselves, with no row buffer beside them (comm/halo_exchange.cpp).
  virtual bool raw_rows() const { return false; }
  /// Exact encoded size of a rows x cols block.
  virtual EncodedSize encoded_size(std::int64_t rows, std::int64_t cols) const = 0;
  /// Encodes `rows` into `out`, which holds exactly encoded_size(rows.rows, rows.cols).total()
  /// bytes on the same device. Throws Error on non-finite input.
  virtual void encode(const Device& dev, ConstDenseView rows, const CodecContext& ctx,
                      std::span<std::byte> out) const = 0;
  /// Whether encode_gathered reads a block's rows from their matrix through an index on `dev`,
  /// so that the halo exchange gathers nothing into a row buffer first (packing fused with
  /// encoding): the CPU paths of the q and fp16/bf16 codecs.
  virtual bool gathers(const Device& dev) const {
    (void)dev;
    return false;
  }
  /// encode() of the block whose row i is src.row(index[i]), 0 <= i < count: the same bytes as
  /// encoding those rows gathered into a matrix of their own (gathers(dev) only).
  virtual void encode_gathered(const Device& dev, ConstDenseView src, const LocalId* index,
                               std::int64_t count, const CodecContext& ctx,
                               std::span<std::byte> out) const;
  /// Decodes `in` (as written by encode for the same shape) into `rows`.
  virtual void decode(const Device& dev, std::span<const std::byte> in, const CodecContext& ctx,
                      DenseView rows) const = 0;
  /// Whether decode_scattered adds a block's decoded rows into their matrix through an index on
  /// `dev`, so that the halo exchange decodes into no row buffer first (unpacking fused with
  /// decoding): the CPU paths of the q and fp16/bf16 codecs.
  virtual bool scatters(const Device& dev) const {
    (void)dev;
    return false;
  }
  /// dst.row(index[i]) += row i of the decoded block of `count` rows x dst.cols, the indices
  /// distinct: the bits of decode() into a matrix of its own, then adding it row by row
  /// (scatters(dev) only).
  virtual void decode_scattered(const Device& dev, std::span<const std::byte> in,
                                const CodecContext& ctx, DenseView dst, const LocalId* index,
                                std::int64_t count) const;
};

/// Builds a codec from its command-line name. Throws ConfigError naming the valid choices.
std::unique_ptr<Codec> make_codec(std::string_view name);

}  // namespace halognn
