#pragma once
// Test helper: a lossless host-only codec that also ships, as metadata, a header with
// (epoch, layer, direction) and the global id of every row, and checks on decode that both match
// the receiver's CodecContext. It proves that sender and receiver agree on which global rows a
// block holds, and exercises the payload/metadata split of the byte accounting.
#include <cstring>
#include <string>

#include "compress/codec.hpp"
#include "core/error.hpp"

namespace halognn::test {

class CheckingCodec final : public Codec {
 public:
  std::string name() const override { return "checking"; }
  bool lossless() const override { return true; }
  EncodedSize encoded_size(std::int64_t rows, std::int64_t cols) const override {
    return {static_cast<std::size_t>(rows * cols) * sizeof(float),
            kHeader + static_cast<std::size_t>(rows) * sizeof(GlobalId)};
  }
  void encode(const Device& dev, ConstDenseView rows, const CodecContext& ctx,
              std::span<std::byte> out) const override {
    GNN_ASSERT(dev.is_host(), "checking codec is host-only");
    GNN_ASSERT(out.size() == encoded_size(rows.rows, rows.cols).total(), "encode size");
    const std::int64_t header[2] = {ctx.epoch, ctx.layer * 2 + static_cast<int>(ctx.direction)};
    std::memcpy(out.data(), header, kHeader);
    std::memcpy(out.data() + kHeader, ctx.row_ids, static_cast<std::size_t>(rows.rows) * 8);
    std::memcpy(out.data() + kHeader + static_cast<std::size_t>(rows.rows) * 8, rows.data,
                static_cast<std::size_t>(rows.rows * rows.cols) * sizeof(float));
  }
  void decode(const Device& dev, std::span<const std::byte> in, const CodecContext& ctx,
              DenseView rows) const override {
    GNN_ASSERT(dev.is_host(), "checking codec is host-only");
    GNN_ASSERT(in.size() == encoded_size(rows.rows, rows.cols).total(), "decode size");
    std::int64_t header[2];
    std::memcpy(header, in.data(), kHeader);
    if (header[0] != ctx.epoch || header[1] != ctx.layer * 2 + static_cast<int>(ctx.direction))
      throw Error("checking codec: block header does not match the receiver's context");
    for (std::int64_t i = 0; i < rows.rows; ++i) {
      GlobalId id;
      std::memcpy(&id, in.data() + kHeader + static_cast<std::size_t>(i) * 8, 8);
      if (id != ctx.row_ids[i])
        throw Error("checking codec: row " + std::to_string(i) + " was sent as global id " +
                    std::to_string(id) + " but is received as " + std::to_string(ctx.row_ids[i]));
    }
    std::memcpy(rows.data, in.data() + kHeader + static_cast<std::size_t>(rows.rows) * 8,
                static_cast<std::size_t>(rows.rows * rows.cols) * sizeof(float));
  }

 private:
  static constexpr std::size_t kHeader = 16;
};

}  // namespace halognn::test
