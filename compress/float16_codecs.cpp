// The fp16 and bf16 codecs: every value rounded to nearest even into a 16-bit float.
#include <algorithm>
#include <cstring>
#include <vector>

#include "compress/codec_cuda.hpp"
#include "compress/codec_util.hpp"
#include "compress/float16.hpp"

namespace halognn {
namespace {

enum class Half : std::uint8_t { fp16, bf16 };

/// Rows cross as 16-bit floats, row-major, two little-endian bytes per value; no metadata.
/// Finite values too large for fp16 (|x| >= 65520) become +-inf, as IEEE rounding prescribes.
template <Half kind>
class HalfCodec final : public Codec {
 public:
  std::string name() const override { return kind == Half::fp16 ? "fp16" : "bf16"; }
  bool lossless() const override { return false; }
  EncodedSize encoded_size(std::int64_t rows, std::int64_t cols) const override {
    return {static_cast<std::size_t>(rows * cols) * sizeof(std::uint16_t), 0};
  }

  void encode(const Device& dev, ConstDenseView rows, const CodecContext& ctx,
              std::span<std::byte> out) const override {
    if (dev.kind() == DeviceKind::cuda) return encode_on_gpu(dev, rows, ctx, out);
    codec_detail::check_call(*this, dev, out.size(), rows.rows, rows.cols, "encode");
    const std::int64_t n_rows = rows.rows, cols = rows.cols;
    std::byte* dst = out.data();
    std::vector<std::uint8_t> bad(static_cast<std::size_t>(n_rows), 0);
    bool any_bad = false;
#pragma omp parallel for schedule(static) reduction(|| : any_bad) \
    if (n_rows * cols >= codec_detail::kParallelMinElements)
    for (std::int64_t i = 0; i < n_rows; ++i) {
      const float* src = rows.row(i);
      std::uint16_t buf[256];
      for (std::int64_t j0 = 0; j0 < cols; j0 += 256) {
        const std::int64_t len = std::min<std::int64_t>(256, cols - j0);
        bool finite = true;
        for (std::int64_t j = 0; j < len; ++j) {
          finite = finite && f16::is_finite(src[j0 + j]);
          buf[j] = kind == Half::fp16 ? f16::float_to_half(src[j0 + j]) : f16::float_to_bf16(src[j0 + j]);
        }
        if (!finite) bad[i] = 1;
        std::memcpy(dst + (i * cols + j0) * 2, buf, static_cast<std::size_t>(len) * 2);
      }
      any_bad = any_bad || bad[i];
    }
    if (any_bad) codec_detail::throw_first_non_finite(*this, rows, ctx, bad);
  }

  void decode(const Device& dev, std::span<const std::byte> in, const CodecContext&,
              DenseView rows) const override {
    if (dev.kind() == DeviceKind::cuda) {
      GNN_ASSERT(in.size() == encoded_size(rows.rows, rows.cols).total(), "codec ", name(),
                 ": decode buffer has ", in.size(), " bytes");
      return codec_cuda::half_decode(kind == Half::bf16, in, rows);
    }
    codec_detail::check_call(*this, dev, in.size(), rows.rows, rows.cols, "decode");
    const std::int64_t n = rows.rows * rows.cols;
    const std::byte* src = in.data();
    float* dst = rows.data;
#pragma omp parallel for schedule(static) if (n >= codec_detail::kParallelMinElements)
    for (std::int64_t k = 0; k < n; ++k) {
      std::uint16_t h;
      std::memcpy(&h, src + 2 * k, 2);
      dst[k] = kind == Half::fp16 ? f16::half_to_float(h) : f16::bf16_to_float(h);
    }
  }

 private:
  /// The GPU path (compress/codecs_cuda.cu), byte-identical to the CPU path; a non-finite value
  /// is reported by encoding a host copy, which throws the CPU path's message.
  void encode_on_gpu(const Device& dev, ConstDenseView rows, const CodecContext& ctx,
                     std::span<std::byte> out) const {
    GNN_ASSERT(out.size() == encoded_size(rows.rows, rows.cols).total(), "codec ", name(),
               ": encode buffer has ", out.size(), " bytes");
    if (codec_cuda::half_encode(kind == Half::bf16, rows, out)) return;
    std::vector<float> host(static_cast<std::size_t>(rows.rows * rows.cols));
    dev.copy_to_host(host.data(), rows.data, host.size() * sizeof(float));
    std::vector<GlobalId> ids;
    CodecContext host_ctx = ctx;
    if (ctx.row_ids) {
      ids.resize(static_cast<std::size_t>(rows.rows));
      dev.copy_to_host(ids.data(), ctx.row_ids, ids.size() * sizeof(GlobalId));
      host_ctx.row_ids = ids.data();
    }
    std::vector<std::byte> host_out(out.size());
    encode(*cpu_device(), ConstDenseView(host.data(), rows.rows, rows.cols), host_ctx, host_out);
    GNN_ASSERT(false, "codec ", name(), ": the GPU found a non-finite value the CPU codec did not");
  }
};

}  // namespace

std::unique_ptr<Codec> make_fp16_codec() { return std::make_unique<HalfCodec<Half::fp16>>(); }
std::unique_ptr<Codec> make_bf16_codec() { return std::make_unique<HalfCodec<Half::bf16>>(); }

}  // namespace halognn
