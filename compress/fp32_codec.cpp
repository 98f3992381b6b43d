#include <cstring>

#include "compress/codec.hpp"
#include "core/error.hpp"

namespace halognn {
namespace {

/// The identity: rows cross as raw float32.
class Fp32Codec final : public Codec {
 public:
  std::string name() const override { return "fp32"; }
  bool lossless() const override { return true; }
  bool raw_rows() const override { return true; }
  EncodedSize encoded_size(std::int64_t rows, std::int64_t cols) const override {
    return {static_cast<std::size_t>(rows * cols) * sizeof(float), 0};
  }
  void encode(const Device& dev, ConstDenseView rows, const CodecContext&,
              std::span<std::byte> out) const override {
    GNN_ASSERT(out.size() == encoded_size(rows.rows, rows.cols).total(), "encode buffer size");
    dev.copy(out.data(), rows.data, out.size());
  }
  void decode(const Device& dev, std::span<const std::byte> in, const CodecContext&,
              DenseView rows) const override {
    GNN_ASSERT(in.size() == encoded_size(rows.rows, rows.cols).total(), "decode buffer size");
    dev.copy(rows.data, in.data(), in.size());
  }
};

}  // namespace

std::unique_ptr<Codec> make_fp32_codec() { return std::make_unique<Fp32Codec>(); }

}  // namespace halognn
